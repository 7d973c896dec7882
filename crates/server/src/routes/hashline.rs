//! `POST /api/hashline/{format,apply,validate}`.

use super::{off_runtime, Route};
use crate::wire::{HashlineApplyRequest, HashlineFormatRequest, HashlineValidateRequest};
use crate::{ApiError, ApiJson};
use serde_json::{json, Value};

pub(super) fn routes() -> Vec<Route> {
    vec![
        Route::post("/api/hashline/format", format),
        Route::post("/api/hashline/apply", apply),
        Route::post("/api/hashline/validate", validate),
    ]
}

async fn format(ApiJson(request): ApiJson<HashlineFormatRequest>) -> ApiJson<Value> {
    let formatted = coderig::hashline::format(&request.content);
    ApiJson(json!({ "ok": true, "formatted": formatted }))
}

async fn apply(
    ApiJson(request): ApiJson<HashlineApplyRequest>,
) -> Result<ApiJson<Value>, ApiError> {
    let content = coderig::hashline::apply(&request.content, &request.edits)?;
    Ok(ApiJson(json!({ "ok": true, "content": content })))
}

/// Fresh refs answer `{"ok": true}`; stale ones are a `hashline_mismatch`
/// refusal (with `remaps`), out-of-range or malformed ones `invalid_input`.
async fn validate(
    ApiJson(request): ApiJson<HashlineValidateRequest>,
) -> Result<ApiJson<Value>, ApiError> {
    off_runtime(move || {
        let refs: Vec<&str> = request.refs.iter().map(String::as_str).collect();
        coderig::hashline::validate_strs(&request.content, &refs)
    })
    .await??;
    Ok(ApiJson(json!({ "ok": true })))
}
