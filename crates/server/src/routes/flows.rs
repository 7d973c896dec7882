//! `POST /api/flows/validate`.

use super::Route;
use crate::schema::{PayloadTooLarge, RunInvalidInput};
use crate::{ApiError, ApiJson, RawBody};
use coderig::flow::FlowSpec;
use coderig::Error;
use serde::Serialize;
use serde_json::Value;

pub(super) fn routes() -> Vec<Route> {
    vec![Route::post("/api/flows/validate", validate_flow)]
}

/// One problem of a flow spec.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct FlowProblem {
    /// The JSON path of the bad part (`steps[2].retry.multiplier`, `steps`
    /// for a cycle, `.` for the whole spec).
    path: String,
    /// What is wrong there.
    message: String,
}

/// The verdict on a flow spec.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct FlowValidateResponse {
    /// Always `true`: an invalid flow is an answer, not an error.
    ok: bool,
    /// No problem found: the spec decodes and compiles.
    valid: bool,
    /// Every problem with its path, in the core's stable order.
    errors: Vec<FlowProblem>,
    /// The spec's `name`, when it has a string one.
    name: Option<String>,
    /// How many steps the spec lists (0 when `steps` is no list).
    steps: usize,
}

/// Validates a runtime flow spec. The body is decoded strictly (unknown
/// keys, wrong types, keys of another step kind: what the spec's JSON
/// Schema says) — a body that breaks that is a 400 with every problem —
/// then compiled: CEL conditions, minijinja templates and the rules no
/// schema states (duplicate ids, unknown dependencies, cycles, switch and
/// loop targets), whose problems are the 200 verdict `valid: false`.
#[utoipa::path(post, tag = "flow", path = "/api/flows/validate", request_body = FlowSpec, responses(
    (status = 200, description = "The verdict: valid, and every problem of compilation with its path (CEL, templates, ids, dependencies, cycles, switch and loop targets).", body = FlowValidateResponse),
    (status = 400, description = "invalid_input: not JSON, not an object, or a spec the strict decoder refuses (every problem in `problems`) — also a schema-valid one that breaks a decoding rule no schema states.", body = RunInvalidInput),
    (status = 413, description = "payload_too_large.", body = PayloadTooLarge),
))]
pub(crate) async fn validate_flow(
    RawBody(spec): RawBody,
) -> Result<ApiJson<FlowValidateResponse>, ApiError> {
    // Decoding problems are the core decoder's own refusal, as every face
    // gets it.
    let decoded = FlowSpec::from_json(&spec)?;
    let errors = match decoded.compile() {
        Ok(_) => Vec::new(),
        Err(e) => problems(&e),
    };
    Ok(ApiJson(FlowValidateResponse {
        ok: true,
        valid: errors.is_empty(),
        errors,
        name: decoded.name.clone(),
        steps: decoded.steps.len(),
    }))
}

/// The `{path, message}` list of a decoder or compile error.
fn problems(e: &Error) -> Vec<FlowProblem> {
    match e.details().get("problems").and_then(Value::as_array) {
        Some(list) => list
            .iter()
            .map(|p| FlowProblem {
                path: p["path"].as_str().unwrap_or(".").to_owned(),
                message: p["message"].as_str().unwrap_or_default().to_owned(),
            })
            .collect(),
        None => vec![FlowProblem {
            path: e
                .details()
                .get("path")
                .and_then(Value::as_str)
                .unwrap_or(".")
                .to_owned(),
            message: e.message().to_owned(),
        }],
    }
}
