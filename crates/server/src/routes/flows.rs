//! `POST /api/flows/validate`.

use super::Route;
use crate::openapi::{InvalidInput, PayloadTooLarge};
use crate::{ApiError, ApiJson, RawBody};
use coderig::flow::{Flow, ValidationError};
use serde::Serialize;
use serde_json::Value;

pub(super) fn routes() -> Vec<Route> {
    vec![Route::post("/api/flows/validate", validate_flow)]
}

/// The verdict on a flow spec.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct FlowValidateResponse {
    /// Always `true`: an invalid flow is an answer, not an error.
    ok: bool,
    /// No problem found.
    valid: bool,
    /// Every problem, in the core's stable order.
    #[schema(value_type = Vec<ValidationError>)]
    errors: Vec<Value>,
    /// The JSON paths of the conditions (`steps[0].when`, ...): accepted,
    /// not evaluated (conditions are closures in the core).
    ignored: Vec<String>,
}

/// Validates a flow spec: unknown dependencies, cycles, unknown switch and
/// loop steps, ... all at once. The body is decoded by the core
/// (`coderig::json::flow`: unknown fields and wrong types refused with
/// their path), then checked by `coderig::flow::validate`.
#[utoipa::path(post, tag = "flow", path = "/api/flows/validate", request_body = Flow, responses(
    (status = 200, description = "The verdict: valid, every problem, the ignored condition paths.", body = FlowValidateResponse),
    (status = 400, description = "invalid_input: not a flow spec (the path of the bad field is named).", body = InvalidInput),
    (status = 413, description = "payload_too_large.", body = PayloadTooLarge),
))]
pub(crate) async fn validate_flow(
    RawBody(spec): RawBody,
) -> Result<ApiJson<FlowValidateResponse>, ApiError> {
    let decoded = coderig::json::flow(spec)?;
    let errors = coderig::flow::validate(&decoded.flow);
    Ok(ApiJson(FlowValidateResponse {
        ok: true,
        valid: errors.is_empty(),
        errors: coderig::error::validation_errors_json(&errors),
        ignored: decoded.conditions,
    }))
}
