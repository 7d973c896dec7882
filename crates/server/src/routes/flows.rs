//! `POST /api/flows/validate`.

use super::Route;
use crate::{ApiError, ApiJson};
use axum::http::StatusCode;
use coderig::flow::{validate, BatchConfig, Case, Flow, Step, StepKind, ValidationError};
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;

pub(super) fn routes() -> Vec<Route> {
    vec![Route::post("/api/flows/validate", validate_flow)]
}

/// The body is the serde form of [`Flow`]. A flow with problems is still a
/// 200: `valid: false` and every problem as `{"code", "message",
/// ...fields}`, in the core's stable order.
///
/// Conditions (`cases[].condition`, `loop_condition`, `when`) are closures in
/// the core and have no JSON form: they are accepted, not evaluated, and
/// their paths are listed in `ignored`. Any other field the core does not
/// know is refused (422), because the core's serde form would silently drop
/// it — a misspelt `deps` must not validate as a step without dependencies.
async fn validate_flow(ApiJson(body): ApiJson<Value>) -> Result<ApiJson<Value>, ApiError> {
    let FieldCheck { ignored, problems } = check_fields(&body);
    if !problems.is_empty() {
        let sets = FieldSets::get();
        return Err(shape_error(format!(
            "the body is not a flow spec: {}. A flow has {}; a step has {}; a case has {}; \
             a batch_config has {}",
            problems.join("; "),
            list(&sets.flow),
            list(&sets.step),
            list(&sets.case),
            list(&sets.batch),
        )));
    }
    let flow: Flow = serde_path_to_error::deserialize(body)
        .map_err(|e| shape_error(format!("the body is not a flow spec: {e}")))?;
    let errors: Vec<Value> = validate(&flow).iter().map(error_json).collect();
    Ok(ApiJson(json!({
        "ok": true,
        "valid": errors.is_empty(),
        "errors": errors,
        "ignored": ignored,
    })))
}

fn shape_error(message: String) -> ApiError {
    ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_input", message)
}

fn list(names: &BTreeSet<String>) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn error_json(e: &ValidationError) -> Value {
    let mut value = serde_json::to_value(e).unwrap_or_else(|_| json!({ "code": e.code() }));
    if let Value::Object(fields) = &mut value {
        fields.insert("message".into(), json!(e.to_string()));
    }
    value
}

/// Field names of each object of the serde form, read from the core's own
/// serialization so they cannot drift from it, plus the condition fields
/// that serde skips.
struct FieldSets {
    flow: BTreeSet<String>,
    step: BTreeSet<String>,
    case: BTreeSet<String>,
    batch: BTreeSet<String>,
}

const CONDITION_FIELDS: [&str; 3] = ["condition", "loop_condition", "when"];

fn keys_of(value: impl serde::Serialize) -> BTreeSet<String> {
    match serde_json::to_value(value) {
        Ok(Value::Object(map)) => map.keys().cloned().collect(),
        _ => BTreeSet::new(),
    }
}

impl FieldSets {
    fn get() -> &'static FieldSets {
        static SETS: std::sync::OnceLock<FieldSets> = std::sync::OnceLock::new();
        SETS.get_or_init(|| {
            let with_conditions = |mut keys: BTreeSet<String>, conditions: &[&str]| {
                keys.extend(conditions.iter().map(|c| (*c).to_owned()));
                keys
            };
            FieldSets {
                flow: keys_of(Flow::default()),
                step: with_conditions(
                    keys_of(Step::new("x", StepKind::Agent)),
                    &["loop_condition", "when"],
                ),
                case: with_conditions(keys_of(Case::default()), &["condition"]),
                batch: keys_of(BatchConfig::default()),
            }
        })
    }
}

/// The two lists [`check_fields`] builds.
#[derive(Default)]
struct FieldCheck {
    ignored: Vec<String>,
    problems: Vec<String>,
}

impl FieldCheck {
    /// `value` as an object, or a problem: serde would read an array as a
    /// positional struct, so only objects are accepted.
    fn object<'v>(&mut self, value: &'v Value, path: &str) -> Option<&'v Map<String, Value>> {
        let object = value.as_object();
        if object.is_none() {
            let at = if path.is_empty() {
                "the body".to_owned()
            } else {
                format!("`{path}`")
            };
            self.problems.push(format!("{at} is not an object"));
        }
        object
    }

    fn fields(&mut self, object: &Map<String, Value>, known: &BTreeSet<String>, path: &str) {
        for key in object.keys() {
            let field = if path.is_empty() {
                key.clone()
            } else {
                format!("{path}.{key}")
            };
            if !known.contains(key) {
                self.problems.push(format!("unknown field `{field}`"));
            } else if CONDITION_FIELDS.contains(&key.as_str()) {
                self.ignored.push(field);
            }
        }
    }
}

/// Paths of the condition fields of `body` (accepted, not evaluated), and its
/// problems: fields the core does not know, non-objects where an object
/// belongs. Values of other wrong types are left for serde to report.
fn check_fields(body: &Value) -> FieldCheck {
    let sets = FieldSets::get();
    let mut check = FieldCheck::default();
    let Some(flow) = check.object(body, "") else {
        return check;
    };
    check.fields(flow, &sets.flow, "");
    if let Some(batch) = flow.get("batch_config") {
        if let Some(batch) = check.object(batch, "batch_config") {
            check.fields(batch, &sets.batch, "batch_config");
        }
    }
    let steps = flow.get("steps").and_then(Value::as_array);
    for (i, step) in steps.into_iter().flatten().enumerate() {
        let step_path = format!("steps[{i}]");
        let Some(step) = check.object(step, &step_path) else {
            continue;
        };
        check.fields(step, &sets.step, &step_path);
        let cases = step.get("cases").and_then(Value::as_array);
        for (k, case) in cases.into_iter().flatten().enumerate() {
            let case_path = format!("{step_path}.cases[{k}]");
            if let Some(case) = check.object(case, &case_path) {
                check.fields(case, &sets.case, &case_path);
            }
        }
    }
    check
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_sets_come_from_the_core_serde_form() {
        let sets = FieldSets::get();
        for (set, expected) in [
            (&sets.flow, &["steps", "batch_config"][..]),
            (
                &sets.step,
                &["id", "kind", "deps", "trigger_rule", "cases", "when"][..],
            ),
            (&sets.case, &["label", "steps", "condition"][..]),
            (&sets.batch, &["max_concurrent", "join_rule"][..]),
        ] {
            for name in expected {
                assert!(set.contains(*name), "{name} missing from {set:?}");
            }
        }
    }

    #[test]
    fn check_fields_reports_unknown_fields_non_objects_and_condition_paths() {
        let body = json!({
            "steps": [
                {"id": "a", "kind": "code", "dependencies": ["b"], "when": "x"},
                {"id": "s", "kind": "switch", "cases": [{"label": "l", "steps": [], "condition": "c", "lable": 1}, ["l", []]]},
                ["c", "code"]
            ],
            "batch_config": {"max_concurent": 2},
            "extra": true
        });
        let check = check_fields(&body);
        assert_eq!(
            check.ignored,
            ["steps[0].when", "steps[1].cases[0].condition"]
        );
        assert_eq!(
            check.problems,
            [
                "unknown field `extra`",
                "unknown field `batch_config.max_concurent`",
                "unknown field `steps[0].dependencies`",
                "unknown field `steps[1].cases[0].lable`",
                "`steps[1].cases[1]` is not an object",
                "`steps[2]` is not an object",
            ]
        );
        let sound = json!({"steps": [{"id": "a", "kind": "code"}]});
        let check = check_fields(&sound);
        assert!(check.ignored.is_empty() && check.problems.is_empty());
        assert_eq!(
            check_fields(&json!([])).problems,
            ["the body is not an object"]
        );
    }
}
