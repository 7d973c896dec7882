//! `xxhash32`.

use crate::helpers::{arg, js, to_json, Res, U32};
use coderig::json::{self, XxhashRequest};
use napi::bindgen_prelude::{Buffer, FromNapiValue, Unknown};
use napi::{Env, JsValue};
use napi_derive::napi;
use serde_json::json;

/// xxHash32 of `data` (a string is hashed as UTF-8, a Buffer as is) with
/// `seed` (default 0). A string call is the request `{data, seed}` of
/// `POST /api/xxhash32`; a seed that is not an integer in `0..=4294967295`
/// (or data of another type) throws `INVALID_INPUT` with the core's message.
#[napi]
pub fn xxhash32(
    env: Env,
    #[napi(ts_arg_type = "string | Buffer")] data: Unknown,
    #[napi(ts_arg_type = "number | null")] seed: Option<Unknown>,
) -> napi::Result<u32> {
    js(&env, || hash(&env, data, seed))
}

fn hash(env: &Env, data: Unknown, seed: Option<Unknown>) -> Res<u32> {
    if data.is_buffer()? {
        let seed: Option<U32> = arg(env, "seed", seed)?;
        let bytes = Buffer::from_unknown(data)?;
        return Ok(coderig::xxhash32(&bytes, seed.map_or(0, U32::as_u32)));
    }
    let request: XxhashRequest = json::decode_object(json!({
        "data": to_json(env, data, "data")?,
        "seed": to_json(env, seed, "seed")?,
    }))?;
    Ok(coderig::xxhash32(
        request.data.as_bytes(),
        request.seed.unwrap_or(0),
    ))
}
