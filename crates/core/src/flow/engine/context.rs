//! The context templates, conditions and code steps see:
//! `{input, results, steps, iteration}`.

use serde_json::{json, Map, Value};

/// One step's entry under `steps`.
pub(crate) fn step_entry(
    status: &str,
    attempt: u32,
    exit_code: Option<i32>,
    error: Option<&Value>,
) -> Value {
    let mut m = Map::new();
    m.insert("status".into(), json!(status));
    m.insert("attempt".into(), json!(attempt));
    if let Some(c) = exit_code {
        m.insert("exit_code".into(), json!(c));
    }
    if let Some(e) = error {
        m.insert("error".into(), e.clone());
    }
    Value::Object(m)
}

/// The context object.
pub(crate) fn context(
    input: &Value,
    results: Map<String, Value>,
    steps: Map<String, Value>,
    iteration: u32,
) -> Value {
    json!({
        "input": input,
        "results": Value::Object(results),
        "steps": Value::Object(steps),
        "iteration": iteration,
    })
}
