//! `POST /api/flows/validate`.

use super::Route;
use crate::ApiJson;
use coderig::flow::{validate, Flow, ValidationError};
use serde_json::{json, Value};

pub(super) fn routes() -> Vec<Route> {
    vec![Route::post("/api/flows/validate", validate_flow)]
}

/// The body is the serde form of [`Flow`]. Conditions (`cases[].condition`,
/// `loop_condition`, `when`) are closures in the core and have no JSON form:
/// validation checks structure only and ignores them.
///
/// A flow with problems is still a 200: `valid: false` and every problem as
/// `{"code", "message", ...fields}`, in the core's stable order.
async fn validate_flow(ApiJson(flow): ApiJson<Flow>) -> ApiJson<Value> {
    let errors: Vec<Value> = validate(&flow).iter().map(error_json).collect();
    ApiJson(json!({ "ok": true, "valid": errors.is_empty(), "errors": errors }))
}

fn error_json(e: &ValidationError) -> Value {
    let mut value = serde_json::to_value(e).unwrap_or_else(|_| json!({ "code": e.code() }));
    if let Value::Object(fields) = &mut value {
        fields.insert("message".into(), json!(e.to_string()));
    }
    value
}
