//! `POST /api/xxhash32`.

use super::Route;
use crate::schema::{InvalidInput, PayloadTooLarge};
use crate::{ApiJson, Body};
use coderig::json::XxhashRequest;
use serde::Serialize;

pub(super) fn routes() -> Vec<Route> {
    vec![Route::post("/api/xxhash32", xxhash32)]
}

/// The hash.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct XxhashResponse {
    /// Always `true`.
    ok: bool,
    /// xxHash32 of the UTF-8 bytes of `data`.
    hash: u32,
}

/// xxHash32 of a string's UTF-8 bytes.
#[utoipa::path(post, tag = "hash", path = "/api/xxhash32", request_body = XxhashRequest, responses(
    (status = 200, description = "The hash.", body = XxhashResponse),
    (status = 400, description = "invalid_input: malformed, or a seed outside 0..=4294967295.", body = InvalidInput),
    (status = 413, description = "payload_too_large.", body = PayloadTooLarge),
))]
pub(crate) async fn xxhash32(Body(request): Body<XxhashRequest>) -> ApiJson<XxhashResponse> {
    ApiJson(XxhashResponse {
        ok: true,
        hash: coderig::xxhash32(request.data.as_bytes(), request.seed.unwrap_or(0)),
    })
}
