//! The JSON Schemas of what the runtime gives a face (feature `openapi`):
//! the views of battles and runs, their pages, the leaderboard, a turn's
//! outcome and events, the agents' infos, the events of battles and runs,
//! and the context a code step's callable is given — every value a `Rig`,
//! `Battle`, `Run` or `Turn` of Python and Node returns, streams or passes,
//! and the bodies the server answers with.
//!
//! Two of them are no Rust type: `BattleEvent` and `RunEvent`, what a
//! battle's and a run's event streams yield — a union on `type` of the
//! stored events of each (the payload with its `seq`, and the store's
//! `epoch` when known: a [`crate::event::StoredEvent`]) and the live
//! `agent_output` of its contestants or steps (no `seq`).
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

use crate::agent::{AgentErrorDetails, AgentEvent, AgentInfo, TurnOutcome};
use crate::arena::runner::{Applied, BattlePage, BattleView, Leaderboard};
use crate::event::{
    AgentOutput, BattleStarted, BattleUpdated, ContestantUpdated, EventType, OutputKind,
    OutputSource, RunUpdated, StepUpdated, TaskRescued,
};
use crate::flow::engine::{CodeContext, RunPage, RunView};
use serde_json::{json, Map, Value};
use utoipa::openapi::schema::Schema;
use utoipa::openapi::RefOr;
use utoipa::{PartialSchema, ToSchema};

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
    root::<CodeContext>(&mut found);
    root::<AgentErrorDetails>(&mut found);
    for (name, types) in [
        ("BattleEvent", &BATTLE_EVENTS[..]),
        ("RunEvent", &RUN_EVENTS[..]),
    ] {
        let mut variants = Vec::new();
        for (event_type, payload) in types {
            let (schema, mut refers) = payload();
            found.append(&mut refers);
            variants.push(event_variant(*event_type, schema));
        }
        let description = match name {
            "BattleEvent" => "One event of a battle, as its stream yields it: a stored event (`seq`, the store's `epoch` when known) or a contestant's live `agent_output` (no `seq`).",
            _ => "One event of a run, as its stream yields it: a stored event (`seq`, the store's `epoch` when known) or a step's live `agent_output` (no `seq`).",
        };
        let union = json!({"description": description, "oneOf": variants});
        found.push((
            name.to_owned(),
            serde_json::from_value(union).unwrap_or_else(|_| RefOr::T(Schema::default())),
        ));
    }
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
pub(super) fn root<T: ToSchema>(found: &mut Vec<(String, RefOr<Schema>)>) {
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

/// A payload's schema and the schemas it refers to.
type Payload = fn() -> (Value, Vec<(String, RefOr<Schema>)>);

/// The event types of a battle's stream, each with its payload.
const BATTLE_EVENTS: [(EventType, Payload); 5] = [
    (EventType::BattleStarted, referred::<BattleStarted>),
    (EventType::ContestantUpdated, referred::<ContestantUpdated>),
    (EventType::BattleUpdated, referred::<BattleUpdated>),
    (EventType::AgentOutput, || output_of(0)),
    (EventType::TaskRescued, referred::<TaskRescued>),
];

/// The event types of a run's stream, each with its payload.
const RUN_EVENTS: [(EventType, Payload); 4] = [
    (EventType::RunUpdated, referred::<RunUpdated>),
    (EventType::StepUpdated, referred::<StepUpdated>),
    (EventType::AgentOutput, || output_of(1)),
    (EventType::TaskRescued, referred::<TaskRescued>),
];

/// A reference to `T`'s schema, with it and the schemas it refers to.
fn referred<T: ToSchema>() -> (Value, Vec<(String, RefOr<Schema>)>) {
    let mut found = Vec::new();
    root::<T>(&mut found);
    let reference = json!({"$ref": format!("#/components/schemas/{}", T::name())});
    (reference, found)
}

/// An `agent_output` of one source (`0`: a battle's contestant, `1`: a
/// run's step, in [`OutputSource`]'s order): that source's ids and the
/// output's own fields.
fn output_of(source: usize) -> (Value, Vec<(String, RefOr<Schema>)>) {
    let mut found = Vec::new();
    root::<OutputKind>(&mut found);
    let ids = serde_json::to_value(OutputSource::schema()).unwrap_or(Value::Null)["oneOf"][source]
        .clone();
    let output = serde_json::to_value(AgentOutput::schema()).unwrap_or(Value::Null);
    // AgentOutput's own fields: the part of its schema beside the
    // flattened source.
    let own = output["allOf"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|part| part["properties"].get("kind").is_some())
        .cloned()
        .unwrap_or(Value::Null);
    (json!({"allOf": [ids, own]}), found)
}

/// One variant of an event union: the payload, its `type`, and for a
/// stored event its `seq` and the store's `epoch`.
fn event_variant(event_type: EventType, payload: Value) -> Value {
    let mut added = json!({"type": "object", "required": ["type"], "properties": {
        "type": {"type": "string", "enum": [event_type.as_str()]}}});
    if event_type.is_stored() {
        added["required"] = json!(["type", "seq"]);
        added["properties"]["seq"] = json!({"type": "integer", "format": "int64", "minimum": 1,
            "description": "The event's place in the store's log (increasing; there may be gaps)."});
        added["properties"]["epoch"] = json!({"type": "string",
            "description": "The store's instance id, when known."});
    }
    json!({"allOf": [payload, added]})
}
