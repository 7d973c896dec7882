//! `model.*`: model-name matching and error classification of
//! [`coderig::model`].

use crate::helpers::{arg, decode_named, js, options};
use coderig::model;
use napi::bindgen_prelude::Unknown;
use napi::Env;
use napi_derive::napi;
use serde::Deserialize;
use serde_json::Value;

/// The element of `available` that names the model `target` (`gpt-4`
/// matches `openai/gpt-4-turbo` but not `gpt-4o`; exact names first, then
/// the model part after the provider, then the shortest), or `null`.
/// `providers` (optional) restricts the candidates to those providers'
/// (`openai/...`). The answer does not depend on the order of `available`.
#[napi(namespace = "model")]
pub fn match_model(
    env: Env,
    #[napi(ts_arg_type = "string")] target: Unknown,
    #[napi(ts_arg_type = "string[]")] available: Unknown,
    #[napi(ts_arg_type = "string[] | null")] providers: Option<Unknown>,
) -> napi::Result<Option<String>> {
    js(&env, || {
        let target: String = arg(&env, "target", target)?;
        let available: Vec<String> = arg(&env, "available", available)?;
        let providers: Option<Vec<String>> = arg(&env, "providers", providers)?;
        let providers: Vec<&str> = providers.iter().flatten().map(String::as_str).collect();
        Ok(model::match_model(&target, &available, &providers))
    })
}

/// A failed model call as `classifyError` reads it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FailedCall {
    name: Option<String>,
    message: Option<String>,
    http_status: Option<u16>,
}

/// The failed call `classifyError` takes; every field may be absent.
#[napi(
    object,
    namespace = "model",
    object_to_js = false,
    object_from_js = false
)]
pub struct ModelError {
    /// The error's name: an SDK class, an API error type or code
    /// (`RateLimitError`, `insufficient_quota`, ...).
    #[napi(ts_type = "string | null")]
    pub name: Option<String>,
    /// The error's message.
    #[napi(ts_type = "string | null")]
    pub message: Option<String>,
    /// The provider's HTTP status (100 to 599 in practice).
    #[napi(ts_type = "number | null")]
    pub http_status: Option<u32>,
}

/// What a failed model call means for the next one: `'retry'` the same
/// model later (rate limit, overload, 5xx, timeout), `'fallback'` to the
/// next model (not found, context too long), `'stop'` the chain (quota,
/// billing) or `'fatal'` (the request is wrong). Keys may be camelCase or
/// snake_case (`httpStatus`, `http_status`).
#[napi(
    namespace = "model",
    ts_return_type = "'retry' | 'fallback' | 'stop' | 'fatal'"
)]
pub fn classify_error(
    env: Env,
    #[napi(ts_arg_type = "model.ModelError")] error: Unknown,
) -> napi::Result<&'static str> {
    js(&env, || {
        let call: FailedCall =
            decode_named("error", Value::Object(options(&env, error, "error")?))?;
        Ok(model::classify_error(
            call.name.as_deref(),
            call.message.as_deref(),
            call.http_status,
        )
        .as_str())
    })
}
