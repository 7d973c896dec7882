//! The flow spec and scheduler state shapes of the contract.

use super::{decode, int, require_objects};
use crate::error::Error;
use crate::flow::{Flow, SchedulerState, SkipReason, Step, SwitchResult};
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// A flow decoded from JSON, and where its conditions were.
///
/// Conditions (`steps[i].when`, `steps[i].loop_condition`,
/// `steps[i].cases[k].condition`) are closures in the core and callables in
/// the bindings: they have no JSON form, so the decoder accepts any value
/// there, leaves the condition unset (a case without a condition never
/// matches, a do-while without one runs once) and lists the paths here.
#[derive(Debug, Clone)]
pub struct DecodedFlow {
    /// The flow, conditions unset.
    pub flow: Flow,
    /// The JSON paths of the condition fields that were given, in document order.
    pub conditions: Vec<String>,
}

fn take_condition(
    object: &mut serde_json::Map<String, Value>,
    key: &str,
    at: String,
    found: &mut Vec<String>,
) {
    if object.remove(key).is_some() {
        found.push(at);
    }
}

/// Decodes a flow spec `{"steps": [...], "batch_config"?}` strictly (the
/// serde form of [`Flow`], unknown fields refused with their path); the
/// conditions are set aside as [`DecodedFlow`] says. The flow is not
/// validated: [`crate::flow::validate()`] lists its problems.
pub fn flow(mut value: Value) -> Result<DecodedFlow, Error> {
    require_objects(
        &value,
        "a flow spec",
        &["", "steps[]", "steps[].cases[]", "batch_config"],
    )?;
    let mut conditions = Vec::new();
    if let Some(steps) = value.get_mut("steps").and_then(Value::as_array_mut) {
        for (i, step) in steps.iter_mut().enumerate() {
            let Some(step) = step.as_object_mut() else {
                continue;
            };
            // Document order: a step's own conditions, then its cases'.
            let mut own = Vec::new();
            for key in ["loop_condition", "when"] {
                take_condition(step, key, format!("steps[{i}].{key}"), &mut own);
            }
            let mut in_cases = Vec::new();
            if let Some(cases) = step.get_mut("cases").and_then(Value::as_array_mut) {
                for (k, case) in cases.iter_mut().enumerate() {
                    if let Some(case) = case.as_object_mut() {
                        take_condition(
                            case,
                            "condition",
                            format!("steps[{i}].cases[{k}].condition"),
                            &mut in_cases,
                        );
                    }
                }
            }
            conditions.extend(in_cases);
            conditions.extend(own);
        }
    }
    let flow: Flow = decode(value)?;
    Ok(DecodedFlow { flow, conditions })
}

/// Decodes one step (the serde form of [`Step`], conditions excluded:
/// a `when`, `loop_condition` or case `condition` field is refused as
/// unknown — the bindings attach their callables themselves).
pub fn step(value: Value) -> Result<Step, Error> {
    require_objects(&value, "a step", &["", "cases[]"])?;
    decode(value)
}

/// `skipped`: a list of ids (each skipped with reason `condition_false`, the
/// reason of a step a runtime guard said not to run) or an object mapping
/// ids to reasons.
struct SkippedInput(BTreeMap<String, SkipReason>);

impl<'de> Deserialize<'de> for SkippedInput {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct SkippedVisitor;
        impl<'de> Visitor<'de> for SkippedVisitor {
            type Value = SkippedInput;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of step ids or an object of step id to skip reason")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<SkippedInput, A::Error> {
                let mut skipped = BTreeMap::new();
                while let Some(id) = seq.next_element::<String>()? {
                    skipped.insert(id, SkipReason::ConditionFalse);
                }
                Ok(SkippedInput(skipped))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<SkippedInput, A::Error> {
                BTreeMap::deserialize(de::value::MapAccessDeserializer::new(map)).map(SkippedInput)
            }
        }
        d.deserialize_any(SkippedVisitor)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SwitchObject {
    #[serde(default)]
    chosen: Option<String>,
    #[serde(default)]
    excluded: BTreeSet<String>,
}

/// A switch decision: `[chosen or null, [excluded ids]]` or
/// `{"chosen", "excluded"}`.
struct SwitchInput(SwitchResult);

impl<'de> Deserialize<'de> for SwitchInput {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct SwitchVisitor;
        impl<'de> Visitor<'de> for SwitchVisitor {
            type Value = SwitchInput;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a switch result: [chosen label or null, [excluded step ids]] or {\"chosen\", \"excluded\"}")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<SwitchInput, A::Error> {
                let wrong = || {
                    de::Error::custom("a switch result given as a list is [chosen label or null, [excluded step ids]]")
                };
                let chosen: Option<String> = seq.next_element()?.ok_or_else(wrong)?;
                let excluded: BTreeSet<String> = seq.next_element()?.ok_or_else(wrong)?;
                if seq.next_element::<de::IgnoredAny>()?.is_some() {
                    return Err(wrong());
                }
                Ok(SwitchInput(SwitchResult { chosen, excluded }))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<SwitchInput, A::Error> {
                let o = SwitchObject::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(SwitchInput(SwitchResult {
                    chosen: o.chosen,
                    excluded: o.excluded,
                }))
            }
        }
        d.deserialize_any(SwitchVisitor)
    }
}

struct Iterations(u32);

impl<'de> Deserialize<'de> for Iterations {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        int::u32(d).map(Iterations)
    }
}

/// The JSON form of a [`SchedulerState`] as every face accepts it: every
/// field optional, sets as lists of ids, `skipped` as [`state`] says,
/// `switch_results` as `{switch_id: [chosen or null, [excluded ids]]}` (or
/// `{chosen, excluded}` objects), `loop_iterations` as `{loop_id: n}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateInput {
    #[serde(default)]
    done: BTreeSet<String>,
    #[serde(default)]
    skipped: Option<SkippedInput>,
    #[serde(default)]
    failed: BTreeSet<String>,
    #[serde(default)]
    in_flight: BTreeSet<String>,
    #[serde(default)]
    excluded: BTreeSet<String>,
    #[serde(default)]
    timed_out: BTreeSet<String>,
    #[serde(default)]
    switch_results: BTreeMap<String, SwitchInput>,
    #[serde(default)]
    loop_iterations: BTreeMap<String, Iterations>,
}

impl From<StateInput> for SchedulerState {
    fn from(s: StateInput) -> Self {
        SchedulerState {
            done: s.done,
            skipped: s.skipped.map(|s| s.0).unwrap_or_default(),
            failed: s.failed,
            in_flight: s.in_flight,
            excluded: s.excluded,
            timed_out: s.timed_out,
            switch_results: s
                .switch_results
                .into_iter()
                .map(|(k, v)| (k, v.0))
                .collect(),
            loop_iterations: s
                .loop_iterations
                .into_iter()
                .map(|(k, v)| (k, v.0))
                .collect(),
        }
    }
}

/// Decodes a scheduler state (the form of [`StateInput`]). `skipped` given
/// as a list of ids means reason `condition_false` for each — the one rule
/// every face used to re-implement.
pub fn state(value: Value) -> Result<SchedulerState, Error> {
    require_objects(&value, "a scheduler state", &[""])?;
    decode::<StateInput>(value).map(SchedulerState::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn flows_decode_strictly_and_set_conditions_aside() {
        let spec = json!({
            "steps": [
                {"id": "a", "kind": "code", "when": "input.x"},
                {"id": "s", "kind": "switch", "deps": ["a"], "cases": [{"label": "l", "steps": ["b"], "condition": "true"}]},
                {"id": "b", "kind": "agent", "deps": ["s"], "timeout": 30.0, "max_retries": 2},
            ],
            "batch_config": {"max_concurrent": 2}
        });
        let d = flow(spec).unwrap();
        assert_eq!(
            d.conditions,
            ["steps[0].when", "steps[1].cases[0].condition"]
        );
        assert_eq!(d.flow.steps[2].timeout, Some(30));
        assert_eq!(d.flow.batch_config.max_concurrent, Some(2));
        // null is "not given" for every optional field, defaults included.
        let d = flow(
            json!({"steps": [{"id": "a", "kind": "do_while", "max_retries": null,
            "loop_max_iterations": null, "timeout": null, "batch": null}]}),
        )
        .unwrap();
        assert_eq!(
            (
                d.flow.steps[0].max_retries,
                d.flow.steps[0].loop_max_iterations
            ),
            (0, 100)
        );
        for (spec, path) in [
            (
                json!({"steps": [{"id": "a", "kind": "code", "dependencies": ["b"]}]}),
                "steps[0].dependencies",
            ),
            (
                json!({"steps": [{"id": "a", "kind": "cod"}]}),
                "steps[0].kind",
            ),
            (
                json!({"steps": [{"id": "a", "kind": "code", "trigger_rule": "all"}]}),
                "steps[0].trigger_rule",
            ),
            (
                json!({"steps": [{"id": "a", "kind": "code", "timeout": 1.5}]}),
                "steps[0].timeout",
            ),
            (
                json!({"steps": [], "batch_config": {"max_concurent": 1}}),
                "batch_config.max_concurent",
            ),
            (json!({"steps": [], "extra": 1}), "extra"),
            (json!({"steps": [["a", "code"]]}), "steps[0]"),
        ] {
            let e = flow(spec.clone()).unwrap_err();
            assert_eq!(e.details()["path"], path, "{spec}: {}", e.message());
        }
    }

    #[test]
    fn states_take_lists_or_maps() {
        let s = state(json!({
            "done": ["a"],
            "skipped": ["b"],
            "switch_results": {"s": [null, ["x"]], "t": {"chosen": "l", "excluded": []}},
            "loop_iterations": {"l": 2.0},
        }))
        .unwrap();
        assert_eq!(s.skipped["b"], SkipReason::ConditionFalse);
        assert_eq!(s.switch_results["s"].chosen, None);
        assert!(s.switch_results["s"].excluded.contains("x"));
        assert_eq!(s.switch_results["t"].chosen.as_deref(), Some("l"));
        assert_eq!(s.loop_iterations["l"], 2);
        let s = state(json!({"skipped": {"b": "branch_not_taken"}})).unwrap();
        assert_eq!(s.skipped["b"], SkipReason::BranchNotTaken);
        for (value, path) in [
            (json!({"skipped": {"b": "nope"}}), "skipped.b"),
            (json!({"don": []}), "don"),
            (json!({"done": "a"}), "done"),
            (json!({"switch_results": {"s": ["a"]}}), "switch_results.s"),
            (json!({"loop_iterations": {"l": -1}}), "loop_iterations.l"),
        ] {
            let e = state(value.clone()).unwrap_err();
            assert_eq!(e.details()["path"], path, "{value}: {}", e.message());
        }
    }

    #[test]
    fn a_root_that_is_not_an_object_is_named() {
        let e = flow(json!([{"id": "a", "kind": "code"}])).unwrap_err();
        assert_eq!(e.message(), "a flow spec must be an object, got an array");
        let e = state(json!(["a"])).unwrap_err();
        assert_eq!(
            e.message(),
            "a scheduler state must be an object, got an array"
        );
        let e = step(json!("a")).unwrap_err();
        assert_eq!(e.message(), "a step must be an object, got a string");
        assert_eq!(e.details()["path"], ".");
    }
}
