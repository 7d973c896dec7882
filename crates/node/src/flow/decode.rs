//! JS specs and states as core values: a spec object (conditions as JS
//! functions, camelCase or snake_case keys) decoded by the core with its
//! conditions attached, and a plain state object.

use super::conditions::condition;
use crate::helpers::{snake_case, snake_keys, to_json, to_json_with_functions, JsFunction, Res};
use coderig::flow as core;
use coderig::json;
use coderig::Error;
use napi::bindgen_prelude::Unknown;
use napi::Env;
use serde_json::Value;
use std::collections::HashMap;

/// The conditions taken out of one step object before the core decodes it.
#[derive(Default)]
struct StepConditions {
    when: Option<core::Condition>,
    loop_condition: Option<core::Condition>,
    cases: Vec<(usize, core::Condition)>,
}

impl StepConditions {
    fn attach(self, step: &mut core::Step) {
        step.when = self.when;
        step.loop_condition = self.loop_condition;
        for (k, c) in self.cases {
            if let Some(case) = step.cases.get_mut(k) {
                case.condition = Some(c);
            }
        }
    }
}

/// The functions of a converted spec, by the (snake_case) path they were at.
pub(super) type Functions = HashMap<String, JsFunction>;

/// The condition at `path`: the function found there, none for `null`,
/// else `INVALID_INPUT`.
fn condition_at(
    path: String,
    value: Value,
    functions: &mut Functions,
) -> Res<Option<core::Condition>> {
    if let Some(f) = functions.remove(&path) {
        return Ok(Some(condition(f)));
    }
    match value {
        Value::Null => Ok(None),
        other => Err(Error::invalid_at(
            &path,
            format!(
                "a condition must be a function (ctx) => boolean, got {}",
                json::describe(&other)
            ),
        )
        .into()),
    }
}

/// Takes `when`, `loop_condition` and each case's `condition` out of the
/// step object `step` (at path `at`), which the core then decodes without
/// them.
fn take_conditions(step: &mut Value, at: &str, functions: &mut Functions) -> Res<StepConditions> {
    let mut out = StepConditions::default();
    let Some(fields) = step.as_object_mut() else {
        return Ok(out);
    };
    let prefix = if at.is_empty() {
        String::new()
    } else {
        format!("{at}.")
    };
    if let Some(v) = fields.remove("when") {
        out.when = condition_at(format!("{prefix}when"), v, functions)?;
    }
    if let Some(v) = fields.remove("loop_condition") {
        out.loop_condition = condition_at(format!("{prefix}loop_condition"), v, functions)?;
    }
    if let Some(Value::Array(cases)) = fields.get_mut("cases") {
        for (k, case) in cases.iter_mut().enumerate() {
            if let Some(v) = case.as_object_mut().and_then(|c| c.remove("condition")) {
                let path = format!("{prefix}cases[{k}].condition");
                if let Some(c) = condition_at(path, v, functions)? {
                    out.cases.push((k, c));
                }
            }
        }
    }
    Ok(out)
}

/// `value` as JSON with snake_case keys throughout, and its functions by
/// path.
fn spec_json(env: &Env, value: Unknown) -> Res<(Value, Functions)> {
    let mut found = Vec::new();
    let mut spec = to_json_with_functions(env, value, "", &mut found)?;
    snake_keys(&mut spec, true);
    // Every key of a spec is a field name, so its paths convert the same way.
    let functions = found
        .into_iter()
        .map(|(path, f)| (snake_case(&path), f))
        .collect();
    Ok((spec, functions))
}

/// A function left over is one outside a condition field.
fn refuse_stray_functions(functions: Functions) -> Res<()> {
    match functions.keys().min() {
        None => Ok(()),
        Some(path) => Err(Error::invalid_at(
            path,
            "invalid type: function; only `when`, `loop_condition` and a case's `condition` take functions",
        )
        .into()),
    }
}

/// A flow spec (JS object, conditions as functions) as a core flow.
pub(super) fn decode_flow(env: &Env, value: Unknown) -> Res<core::Flow> {
    let (mut spec, mut functions) = spec_json(env, value)?;
    let mut conditions = Vec::new();
    if let Some(fields) = spec.as_object_mut() {
        // The flat spelling of `batch_config`'s fields, as Python's
        // `Flow(steps, batch_max_concurrent=..., batch_join_rule=...)`.
        for (flat, field) in [
            ("batch_max_concurrent", "max_concurrent"),
            ("batch_join_rule", "join_rule"),
        ] {
            if let Some(v) = fields.remove(flat) {
                let config = fields
                    .entry("batch_config")
                    .or_insert_with(|| Value::Object(Default::default()));
                match config.as_object_mut() {
                    Some(c) if !c.contains_key(field) => {
                        c.insert(field.to_owned(), v);
                    }
                    _ => {
                        return Err(Error::invalid_at(
                            flat,
                            format!("give `batch_config.{field}` or `{flat}`, not both"),
                        )
                        .into())
                    }
                }
            }
        }
        if let Some(Value::Array(steps)) = fields.get_mut("steps") {
            for (i, step) in steps.iter_mut().enumerate() {
                conditions.push(take_conditions(
                    step,
                    &format!("steps[{i}]"),
                    &mut functions,
                )?);
            }
        }
    }
    refuse_stray_functions(functions)?;
    let mut flow = json::flow(spec)?.flow;
    for (step, c) in flow.steps.iter_mut().zip(conditions) {
        c.attach(step);
    }
    Ok(flow)
}

/// A step spec (JS object) as a core step; paths are relative to the step.
pub(super) fn decode_step(env: &Env, value: Unknown) -> Res<core::Step> {
    let (mut spec, mut functions) = spec_json(env, value)?;
    let conditions = take_conditions(&mut spec, "", &mut functions)?;
    refuse_stray_functions(functions)?;
    let mut step = json::step(spec)?;
    conditions.attach(&mut step);
    Ok(step)
}

pub(super) fn decode_state(env: &Env, value: Option<Unknown>) -> Res<core::SchedulerState> {
    let mut state = to_json(env, value, "")?;
    if state.is_null() {
        return Ok(core::SchedulerState::new());
    }
    // Only the field names: the maps inside are keyed by step ids.
    snake_keys(&mut state, false);
    Ok(json::state(state)?)
}

/// JSON of a core value (the core's own serde form).
pub(super) fn to_value<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::super::conditions::SCOPES;
    use super::*;
    use crate::helpers::Fail;

    #[test]
    fn condition_fields_are_taken_out_of_a_step_and_null_is_none() {
        let mut functions = Functions::new();
        let mut step = serde_json::json!({
            "id": "s", "kind": "switch", "when": null,
            "cases": [{"label": "a", "steps": [], "condition": null}, {"label": "b", "steps": []}],
        });
        let taken = take_conditions(&mut step, "steps[2]", &mut functions).unwrap();
        assert!(taken.when.is_none() && taken.loop_condition.is_none() && taken.cases.is_empty());
        assert_eq!(
            step,
            serde_json::json!({"id": "s", "kind": "switch", "cases": [{"label": "a", "steps": []}, {"label": "b", "steps": []}]})
        );
        let mut bad = serde_json::json!({"id": "s", "kind": "code", "loop_condition": "x > 1"});
        match take_conditions(&mut bad, "steps[0]", &mut functions) {
            Err(Fail::Core(e)) => assert_eq!(
                e.message(),
                "`steps[0].loop_condition`: a condition must be a function (ctx) => boolean, got a string"
            ),
            _ => panic!("a string condition must be refused"),
        }
        // Nothing leaves a scope behind on this thread.
        assert!(SCOPES.with(|s| s.borrow().is_empty()));
    }
}
