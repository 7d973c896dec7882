//! `POST /api/hashline/{format,apply,validate}`.

use super::{off_runtime, Route};
use crate::schema::{HashlineRefusal, InvalidInput, PayloadTooLarge};
use crate::{ApiError, ApiJson, Body};
use coderig::json::{HashlineApplyRequest, HashlineFormatRequest, HashlineValidateRequest};
use serde::Serialize;

pub(super) fn routes() -> Vec<Route> {
    vec![
        Route::post("/api/hashline/format", format),
        Route::post("/api/hashline/apply", apply),
        Route::post("/api/hashline/validate", validate),
    ]
}

/// The content with anchors.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct HashlineFormatResponse {
    /// Always `true`.
    ok: bool,
    /// One `LINE#HH|text` line per line of the content.
    formatted: String,
}

/// The edited content.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct HashlineApplyResponse {
    /// Always `true`.
    ok: bool,
    /// The content with every edit applied.
    content: String,
}

/// The refs are fresh.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct HashlineValidateResponse {
    /// Always `true`.
    ok: bool,
}

/// Shows content as `LINE#HH|text` lines.
#[utoipa::path(post, tag = "hashline", path = "/api/hashline/format", request_body = HashlineFormatRequest, responses(
    (status = 200, description = "The anchored lines.", body = HashlineFormatResponse),
    (status = 400, description = "invalid_input: malformed.", body = InvalidInput),
    (status = 413, description = "payload_too_large.", body = PayloadTooLarge),
))]
pub(crate) async fn format(
    Body(request): Body<HashlineFormatRequest>,
) -> Result<ApiJson<HashlineFormatResponse>, ApiError> {
    let formatted = off_runtime(move || coderig::hashline::format(&request.content)).await?;
    Ok(ApiJson(HashlineFormatResponse {
        ok: true,
        formatted,
    }))
}

/// Applies hashline edits, all against the one content, all or nothing.
#[utoipa::path(post, tag = "hashline", path = "/api/hashline/apply", request_body = HashlineApplyRequest, responses(
    (status = 200, description = "The edited content.", body = HashlineApplyResponse),
    (status = 400, description = "invalid_input: malformed, a malformed or out-of-range ref, an end before its pos, overlapping edits.", body = InvalidInput),
    (status = 413, description = "payload_too_large.", body = PayloadTooLarge),
    (status = 422, description = "hashline_mismatch (stale refs, with remaps to the fresh ones) or no_op.", body = HashlineRefusal),
))]
pub(crate) async fn apply(
    Body(request): Body<HashlineApplyRequest>,
) -> Result<ApiJson<HashlineApplyResponse>, ApiError> {
    let content = off_runtime(move || {
        request.core_edits().and_then(|edits| {
            coderig::hashline::apply(&request.content, &edits).map_err(coderig::Error::from)
        })
    })
    .await??;
    Ok(ApiJson(HashlineApplyResponse { ok: true, content }))
}

/// Checks that `LINE#HH` refs are fresh.
#[utoipa::path(post, tag = "hashline", path = "/api/hashline/validate", request_body = HashlineValidateRequest, responses(
    (status = 200, description = "Every ref is fresh.", body = HashlineValidateResponse),
    (status = 400, description = "invalid_input: malformed, or a malformed or out-of-range ref.", body = InvalidInput),
    (status = 413, description = "payload_too_large.", body = PayloadTooLarge),
    (status = 422, description = "hashline_mismatch: stale refs, with remaps to the fresh ones.", body = HashlineRefusal),
))]
pub(crate) async fn validate(
    Body(request): Body<HashlineValidateRequest>,
) -> Result<ApiJson<HashlineValidateResponse>, ApiError> {
    off_runtime(move || {
        let refs: Vec<&str> = request.refs.iter().map(String::as_str).collect();
        coderig::hashline::validate_strs(&request.content, &refs)
    })
    .await??;
    Ok(ApiJson(HashlineValidateResponse { ok: true }))
}
