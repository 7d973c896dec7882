//! `POST /api/guards/check`.

use super::{off_runtime, Route};
use crate::schema::{InvalidInput, PayloadTooLarge};
use crate::{ApiError, ApiJson, Body};
use coderig::json::GuardsCheckRequest;
use coderig::GuardViolation;
use serde::Serialize;

pub(super) fn routes() -> Vec<Route> {
    vec![Route::post("/api/guards/check", check)]
}

/// The guards' verdict on an edit: every violation, in the core's order
/// (none means the edit passes).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct GuardsCheckResponse {
    /// Always `true`: violations are an answer, not an error.
    ok: bool,
    /// Each violation: `kind` (truncation, dropped_imports, marker_leak,
    /// conflict_marker) and a message.
    violations: Vec<GuardViolation>,
}

/// Runs every guard on an edit of `original` into `updated`.
#[utoipa::path(post, tag = "edit", path = "/api/guards/check", request_body = GuardsCheckRequest, responses(
    (status = 200, description = "The violations, possibly none.", body = GuardsCheckResponse),
    (status = 400, description = "invalid_input: malformed.", body = InvalidInput),
    (status = 413, description = "payload_too_large.", body = PayloadTooLarge),
))]
pub(crate) async fn check(
    Body(request): Body<GuardsCheckRequest>,
) -> Result<ApiJson<GuardsCheckResponse>, ApiError> {
    let violations = off_runtime(move || request.check()).await?;
    Ok(ApiJson(GuardsCheckResponse {
        ok: true,
        violations,
    }))
}
