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

/// The context object, as JSON.
pub(crate) fn context(
    input: &Value,
    results: Map<String, Value>,
    steps: BTreeMap<String, StepState>,
    iteration: u32,
) -> Value {
    let context = CodeContext {
        input: input.clone(),
        results: results.into_iter().collect(),
        steps,
        iteration,
    };
    serde_json::to_value(context).unwrap_or(Value::Null)
}
