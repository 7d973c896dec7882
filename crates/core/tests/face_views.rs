//! The faces' runtime types are held to the core's schemas
//! (`coderig::json::views`): `tests/schemas/views.json` at the top of the
//! repository is exactly what the types say now (Python's and Node's tests
//! read it: Node generates its TypeScript interfaces from it, Python
//! compares its stubs field by field), and what each schema says about a
//! field's presence is what serde writes. Beside it, `inputs.json` is what
//! the runtime calls take (`coderig::json::inputs`: Node generates its
//! input types from it) and `names.json` is `coderig::names::LISTS` (Node
//! types `names()` from it).
//!
//! `CODERIG_WRITE_SCHEMAS=1 cargo test -p coderig --all-features --test
//! face_views` rewrites the three files after a change to a view, an input
//! or a list.

#![cfg(all(feature = "openapi", feature = "runtime", feature = "git", unix))]

use coderig::json::views::schemas;
use serde_json::{json, Map, Value};
use std::path::PathBuf;

fn checked_in(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/schemas")
        .join(name)
}

/// Writes `now` to the checked-in file under `CODERIG_WRITE_SCHEMAS`; else
/// the file as it is.
fn compare(path: &PathBuf, now: &str) -> Option<String> {
    if std::env::var_os("CODERIG_WRITE_SCHEMAS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, now).unwrap();
        return None;
    }
    Some(std::fs::read_to_string(path).unwrap_or_default())
}

/// `names.json`: every list of `coderig::names::LISTS` as `[key, names]`,
/// in the table's order.
#[test]
fn the_checked_in_names_are_the_cores() {
    let lists: Vec<(&str, &[&str])> = coderig::names::LISTS.to_vec();
    let now = serde_json::to_string_pretty(&lists).unwrap() + "\n";
    let path = checked_in("names.json");
    if let Some(file) = compare(&path, &now) {
        assert!(
            file == now,
            "{} is not coderig::names::LISTS; rewrite it with CODERIG_WRITE_SCHEMAS=1 cargo test \
             -p coderig --all-features --test face_views, then regenerate the faces' types \
             (crates/node: npm run types)",
            path.display()
        );
    }
}

#[test]
fn the_checked_in_schemas_are_the_cores() {
    same_as_checked_in(schemas(), "views.json");
}

/// `inputs.json`: what the faces' runtime calls take
/// (`coderig::json::inputs`).
#[test]
fn the_checked_in_inputs_are_the_cores() {
    same_as_checked_in(coderig::json::inputs::schemas(), "inputs.json");
}

fn same_as_checked_in(schemas: Map<String, Value>, file: &str) {
    let now = serde_json::to_string_pretty(&Value::Object(schemas)).unwrap() + "\n";
    let path = checked_in(file);
    let Some(file) = compare(&path, &now) else {
        return;
    };
    if file != now {
        let (old, new): (Value, Value) = (
            serde_json::from_str(&file).unwrap_or(Value::Null),
            serde_json::from_str(&now).unwrap(),
        );
        let mut changed: Vec<String> = Vec::new();
        let (old, new) = (
            old.as_object().cloned().unwrap_or_default(),
            new.as_object().cloned().unwrap_or_default(),
        );
        for name in old.keys().chain(new.keys()) {
            if old.get(name) != new.get(name) && !changed.contains(name) {
                changed.push(name.clone());
            }
        }
        panic!(
            "{} is not what the core's types say now (changed: {}); rewrite it with \
             CODERIG_WRITE_SCHEMAS=1 cargo test -p coderig --all-features --test face_views, \
             then regenerate the faces' types (crates/node: npm run types)",
            path.display(),
            changed.join(", ")
        );
    }
}

/// Every component name is a Rust type the faces see; every `$ref` names
/// one of them (the set is closed).
#[test]
fn every_reference_is_a_component() {
    for all in [schemas(), coderig::json::inputs::schemas()] {
        every_reference_in(all);
    }
}

/// Each filter's least value, every field `null`, is what serde reads; a
/// key its schema does not list is refused. The same of an agent's table.
#[test]
fn the_filters_decode_what_their_schemas_say() {
    let all = coderig::json::inputs::schemas();
    macro_rules! check {
        ($($ty:ty => $name:literal),+ $(,)?) => {$({
            let schema = &all[$name];
            let mut value = least(schema, &all);
            for key in schema["properties"].as_object().unwrap().keys() {
                value[key] = Value::Null;
            }
            serde_json::from_value::<$ty>(value.clone())
                .unwrap_or_else(|e| panic!("{}: {value} does not decode: {e}", $name));
            value["unknown"] = json!(1);
            assert!(serde_json::from_value::<$ty>(value).is_err(), "{}", $name);
        })+};
    }
    // An agent's table: its least value (`kind` alone) decodes; an
    // unknown key is refused.
    let mut agent = least(&all["AgentSpec"], &all);
    serde_json::from_value::<coderig::agent::config::AgentSpec>(agent.clone()).unwrap();
    agent["unknown"] = json!(1);
    assert!(serde_json::from_value::<coderig::agent::config::AgentSpec>(agent).is_err());
    check!(
        coderig::arena::runner::BattleFilter => "BattleFilter",
        coderig::arena::runner::LeaderboardFilter => "LeaderboardFilter",
        coderig::flow::engine::RunFilter => "RunFilter",
    );
}

fn every_reference_in(all: Map<String, Value>) {
    let mut refs = Vec::new();
    collect_refs(&Value::Object(all.clone()), &mut refs);
    for r in refs {
        let name = r.trim_start_matches("#/components/schemas/");
        assert!(all.contains_key(name), "{r} is not among {:?}", all.keys());
    }
}

fn collect_refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(o) => {
            if let Some(Value::String(r)) = o.get("$ref") {
                out.push(r.clone());
            }
            o.values().for_each(|v| collect_refs(v, out));
        }
        Value::Array(a) => a.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

/// The fewest JSON a schema takes: its required properties only, each the
/// least value of its type (the first name of an enumeration, `null` where
/// allowed).
fn least(schema: &Value, all: &Map<String, Value>) -> Value {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let name = r.trim_start_matches("#/components/schemas/");
        return least(&all[name], all);
    }
    if let Some(first) = schema.get("enum").and_then(|e| e.get(0)) {
        return first.clone();
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(Value::Array(options)) = schema.get(key) {
            return least(&options[0], all);
        }
    }
    if let Some(Value::Array(parts)) = schema.get("allOf") {
        let mut out = Map::new();
        for part in parts {
            if let Value::Object(o) = least(part, all) {
                out.extend(o);
            }
        }
        return Value::Object(out);
    }
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => vec![],
    };
    if types.contains(&"null") {
        return Value::Null;
    }
    match types.first().copied() {
        Some("string") => json!(""),
        Some("integer") | Some("number") => json!(0),
        Some("boolean") => json!(false),
        Some("array") => json!([]),
        _ => {
            let mut out = Map::new();
            let props = schema.get("properties").and_then(Value::as_object);
            for name in schema
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                let prop = props.and_then(|p| p.get(name)).cloned().unwrap_or_default();
                out.insert(name.to_owned(), least(&prop, all));
            }
            Value::Object(out)
        }
    }
}

/// For each view the faces see: its least value, read by serde and written
/// back, has exactly the schema's required properties — a property serde
/// writes when unset is required (nullable), one it leaves out is not.
#[test]
fn required_is_what_serde_always_writes() {
    let all = schemas();
    macro_rules! check {
        ($($ty:ty => $name:literal),+ $(,)?) => {$({
            let schema = &all[$name];
            let value = least(schema, &all);
            let read: $ty = serde_json::from_value(value.clone())
                .unwrap_or_else(|e| panic!("{}: {value} does not decode: {e}", $name));
            let written = serde_json::to_value(&read).unwrap();
            let written: Vec<&String> = written.as_object().unwrap().keys().collect();
            let mut required: Vec<&str> = schema["required"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            required.sort();
            let mut written: Vec<&str> = written.iter().map(|k| k.as_str()).collect();
            written.sort();
            assert_eq!(
                written, required,
                "{}: the keys serde writes for its least value against the schema's required \
                 (a nullable field serde always writes needs #[schema(required)])",
                $name
            );
        })+};
    }
    check!(
        coderig::arena::runner::BattleView => "BattleView",
        coderig::arena::runner::ContestantView => "ContestantView",
        coderig::arena::runner::CrossExamView => "CrossExamView",
        coderig::arena::runner::AgentView => "AgentView",
        coderig::arena::runner::BattlePage => "BattlePage",
        coderig::arena::runner::Leaderboard => "Leaderboard",
        coderig::arena::runner::LeaderboardEntry => "LeaderboardEntry",
        coderig::arena::runner::Applied => "Applied",
        coderig::arena::CommandEvidence => "CommandEvidence",
        coderig::arena::Evidence => "Evidence",
        coderig::arena::BaseRun => "BaseRun",
        coderig::flow::engine::RunView => "RunView",
        coderig::flow::engine::RunPage => "RunPage",
        coderig::flow::engine::RunSummary => "RunSummary",
        coderig::flow::engine::StepView => "StepView",
        coderig::flow::engine::data::AttemptRecord => "AttemptRecord",
        coderig::flow::engine::data::ApprovalRecord => "ApprovalRecord",
        coderig::flow::engine::data::SwitchRecord => "SwitchRecord",
        coderig::agent::TurnOutcome => "TurnOutcome",
        coderig::agent::Usage => "Usage",
        coderig::agent::native::CallsRead => "CallsRead",
        coderig::sandbox::SandboxReport => "SandboxReport",
        coderig::sandbox::ResourceLimits => "ResourceLimits",
        coderig::event::ContestantInfo => "ContestantInfo",
        coderig::event::BattleStarted => "BattleStarted",
        coderig::event::ContestantUpdated => "ContestantUpdated",
        coderig::event::BattleUpdated => "BattleUpdated",
        coderig::event::RunUpdated => "RunUpdated",
        coderig::event::StepUpdated => "StepUpdated",
    );
}

/// The keys of an object schema's `required`, `allOf` parts merged.
fn required_keys(schema: &Value, all: &Map<String, Value>) -> Vec<String> {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        return required_keys(&all[r.trim_start_matches("#/components/schemas/")], all);
    }
    let mut out: Vec<String> = schema
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .flat_map(|part| required_keys(part, all))
        .collect();
    out.extend(
        schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|k| k.as_str().map(str::to_owned)),
    );
    out.sort();
    out.dedup();
    out
}

/// Each variant of the event unions, at its least, is an event serde reads
/// (a stored one with its `seq`, or a live `agent_output`) and writes back
/// with exactly the variant's required keys.
#[test]
fn the_event_unions_are_what_serde_writes() {
    let all = schemas();
    for union in ["BattleEvent", "RunEvent"] {
        for variant in all[union]["oneOf"].as_array().unwrap() {
            let value = least(variant, &all);
            let written = if value.get("seq").is_some() {
                let stored: coderig::event::StoredEvent = serde_json::from_value(value.clone())
                    .unwrap_or_else(|e| panic!("{union}: {value} is no stored event: {e}"));
                serde_json::to_value(stored).unwrap()
            } else {
                let live: coderig::event::Event = serde_json::from_value(value.clone())
                    .unwrap_or_else(|e| panic!("{union}: {value} is no event: {e}"));
                serde_json::to_value(live).unwrap()
            };
            let mut keys: Vec<String> = written.as_object().unwrap().keys().cloned().collect();
            keys.sort();
            assert_eq!(keys, required_keys(variant, &all), "{union}: {value}");
        }
    }
}
