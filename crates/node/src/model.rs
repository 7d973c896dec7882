//! `model.*`: model-name matching and error classification of
//! [`coderig::model`].

use crate::helpers::{arg, decode_named, js, options, Res};
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

fn failed_call(env: &Env, error: Unknown) -> Res<FailedCall> {
    decode_named("error", Value::Object(options(env, error, "error")?))
}

/// What a failed model call means for the next one: `'retry'` the same
/// model later (rate limit, overload, 5xx, timeout), `'fallback'` to the
/// next model (not found, context too long), `'stop'` the chain (quota,
/// billing) or `'fatal'` (the request is wrong). Keys may be camelCase or
/// snake_case (`httpStatus`, `http_status`); a status that is not an
/// integer from 0 to 65535 throws `INVALID_INPUT`.
#[napi(namespace = "model", ts_return_type = "ErrorClass")]
pub fn classify_error(
    env: Env,
    #[napi(ts_arg_type = "model.ModelError")] error: Unknown,
) -> napi::Result<&'static str> {
    js(&env, || {
        let call = failed_call(&env, error)?;
        Ok(model::classify_error(
            call.name.as_deref(),
            call.message.as_deref(),
            call.http_status,
        )
        .as_str())
    })
}

/// `classifyError` with what decided it: `{class, evidence, rule}`, where
/// `evidence` is `'name'`, `'message'`, `'status'` or `'none'` and `rule`
/// the phrase, name or status group that matched (`'default'` for none).
#[napi(
    namespace = "model",
    ts_return_type = "{ class: ErrorClass, evidence: ErrorEvidence, rule: string }"
)]
pub fn explain_error(
    env: Env,
    #[napi(ts_arg_type = "model.ModelError")] error: Unknown,
) -> napi::Result<Value> {
    js(&env, || {
        let call = failed_call(&env, error)?;
        let found = model::explain_error(
            call.name.as_deref(),
            call.message.as_deref(),
            call.http_status,
        );
        Ok(serde_json::to_value(found).unwrap_or(Value::Null))
    })
}

/// The form model names are compared in: trimmed, lower-cased, the Claude
/// family's minor version written with a dot (`claude-sonnet-4-5` →
/// `claude-sonnet-4.5`; a date is never taken for one).
#[napi(namespace = "model")]
pub fn normalize_model(
    env: Env,
    #[napi(ts_arg_type = "string")] name: Unknown,
) -> napi::Result<String> {
    js(&env, || {
        Ok(model::normalize_model(&arg::<String>(&env, "name", name)?))
    })
}
