//! The JSON Schemas of what the runtime gives a face (feature `openapi`):
//! the views of battles and runs, their pages, the leaderboard, a turn's
//! outcome and events, the agents' infos and the runtime's events — every
//! value a `Rig`, `Battle`, `Run` or `Turn` of Python and Node returns, and
//! the bodies the server answers with.
//!
//! [`schemas`] is the one description the faces' types are held to: it is
//! checked in as `tests/schemas/views.json` (the core's test
//! `face_views` fails when it differs from what the types say now, and
//! rewrites it with `CODERIG_WRITE_SCHEMAS=1`), Node generates its
//! TypeScript interfaces from it and Python's tests compare the stubs'
//! `TypedDict`s with it field by field.
//!
//! What the schemas promise about presence is what serde writes: a field
//! is `required` when it is always serialized — a nullable one (`Option`
//! without `skip_serializing_if`) included, marked `schema(required)` since
//! utoipa would leave it optional — and not required when it is left out
//! unset (`skip_serializing_if`), and then never `null` — so these schemas
//! drop the `null` utoipa allows for such a field (it describes what a
//! decoder accepts; these describe what a face is given). The `face_views`
//! test checks that promise against serde on every view.

use crate::agent::{AgentEvent, AgentInfo, TurnOutcome};
use crate::arena::runner::{Applied, BattlePage, BattleView, Leaderboard};
use crate::flow::engine::{RunPage, RunView};
use serde_json::{Map, Value};
use utoipa::openapi::schema::Schema;
use utoipa::openapi::RefOr;
use utoipa::ToSchema;

/// Every schema the faces' runtime types are made of, by its name: the
/// roots (what the calls return) and every schema they refer to (`$ref`s
/// are `#/components/schemas/<name>`, as in the server's document), in
/// name order.
pub fn schemas() -> Map<String, Value> {
    let mut found: Vec<(String, RefOr<Schema>)> = Vec::new();
    root::<BattleView>(&mut found);
    root::<BattlePage>(&mut found);
    root::<Leaderboard>(&mut found);
    root::<Applied>(&mut found);
    root::<RunView>(&mut found);
    root::<RunPage>(&mut found);
    root::<TurnOutcome>(&mut found);
    root::<AgentEvent>(&mut found);
    root::<AgentInfo>(&mut found);
    let mut out = Map::new();
    for (name, schema) in found {
        let mut value = serde_json::to_value(&schema).unwrap_or(Value::Null);
        absent_not_null(&mut value);
        out.insert(name, value);
    }
    out.sort_keys();
    out
}

/// `T`'s schema and, recursively, every schema it refers to.
fn root<T: ToSchema>(found: &mut Vec<(String, RefOr<Schema>)>) {
    found.push((T::name().into_owned(), T::schema()));
    T::schemas(found);
}

/// In every object schema within `schema`: a property that is not required
/// (serde leaves it out when unset) is not nullable either.
fn absent_not_null(schema: &mut Value) {
    match schema {
        Value::Object(o) => {
            let required: Vec<String> = o
                .get("required")
                .and_then(Value::as_array)
                .map(|r| {
                    r.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            if let Some(Value::Object(props)) = o.get_mut("properties") {
                for (name, prop) in props.iter_mut() {
                    if !required.contains(name) {
                        not_null(prop);
                    }
                }
            }
            o.values_mut().for_each(absent_not_null);
        }
        Value::Array(a) => a.iter_mut().for_each(absent_not_null),
        _ => {}
    }
}

/// `schema` without `null`: out of a `type` list, or out of a `oneOf` (one
/// option left is the schema itself, keeping the description).
fn not_null(schema: &mut Value) {
    let Value::Object(o) = schema else { return };
    if let Some(Value::Array(types)) = o.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            o.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(options)) = o.get_mut("oneOf") {
        options.retain(|option| option.get("type").and_then(Value::as_str) != Some("null"));
        if options.len() == 1 {
            let Value::Object(only) = options.remove(0) else {
                return;
            };
            o.remove("oneOf");
            for (key, value) in only {
                o.entry(key).or_insert(value);
            }
        }
    }
}
