//! The context templates, conditions and code steps see:
//! `{input, results, steps, iteration}` ([`CodeContext`]).

use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// What a run's templates, conditions and code steps see — a code step's
/// callable gets it in Python and Node (`ctx`): the run's input, the
/// results and states of the steps it may read (a code step: its
/// dependencies; a template or condition: every step), and the loop
/// iteration.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CodeContext {
    /// The run's input.
    pub input: Value,
    /// The steps' results, by step id.
    pub results: BTreeMap<String, Value>,
    /// The steps' states, by step id.
    pub steps: BTreeMap<String, StepState>,
    /// The 1-based iteration of the innermost loop (0 outside loops).
    pub iteration: u32,
}

/// One step's entry under a [`CodeContext`]'s `steps`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StepState {
    /// Where the step stands (a `StepStatus` name, from the step's row).
    #[cfg_attr(feature = "openapi", schema(value_type = crate::flow::StepStatus))]
    pub status: String,
    /// Its attempt (1-based; 0 before its first).
    pub attempt: u32,
    /// A command step's exit code, once it exited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Why its last attempt failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
}

/// One step's entry under `steps`.
pub(crate) fn step_entry(
    status: &str,
    attempt: u32,
    exit_code: Option<i32>,
    error: Option<&Value>,
) -> StepState {
    StepState {
        status: status.to_owned(),
        attempt,
        exit_code,
        error: error.cloned(),
    }
}

/// The context object, as JSON. Built by moving its parts into place: the
/// results can be every step's output, and this runs on each dispatch
/// (serde's `to_value` would copy them all once more). The test below
/// holds it to the [`CodeContext`] serde writes.
pub(crate) fn context(
    input: &Value,
    results: Map<String, Value>,
    steps: BTreeMap<String, StepState>,
    iteration: u32,
) -> Value {
    let steps: Map<String, Value> = steps
        .into_iter()
        .map(|(id, state)| (id, state.into_value()))
        .collect();
    let mut context = Map::new();
    context.insert("input".into(), input.clone());
    context.insert("results".into(), Value::Object(results));
    context.insert("steps".into(), Value::Object(steps));
    context.insert("iteration".into(), Value::from(iteration));
    Value::Object(context)
}

impl StepState {
    /// This entry as JSON, its parts moved (as serde writes it).
    fn into_value(self) -> Value {
        let mut entry = Map::new();
        entry.insert("status".into(), Value::String(self.status));
        entry.insert("attempt".into(), Value::from(self.attempt));
        if let Some(code) = self.exit_code {
            entry.insert("exit_code".into(), Value::from(code));
        }
        if let Some(error) = self.error {
            entry.insert("error".into(), error);
        }
        Value::Object(entry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_context_is_what_serde_writes_of_a_code_context() {
        let cases = [
            (None, None),
            (Some(3), None),
            (None, Some(json!({"message": "boom"}))),
            (Some(0), Some(json!("x"))),
        ];
        for (exit_code, error) in cases {
            let state = StepState {
                status: "failed".into(),
                attempt: 2,
                exit_code,
                error: error.clone(),
            };
            let results: Map<String, Value> = [("a".to_string(), json!({"ok": true}))]
                .into_iter()
                .collect();
            let steps: BTreeMap<String, StepState> = [("a".to_string(), state)].into();
            let typed = CodeContext {
                input: json!({"n": 1}),
                results: results.clone().into_iter().collect(),
                steps: steps.clone(),
                iteration: 4,
            };
            let built = context(&json!({"n": 1}), results, steps, 4);
            assert_eq!(built, serde_json::to_value(typed).unwrap());
        }
    }
}
