//! The server's request and response schemas that no Rust type derives:
//! the error bodies of each route (one component per set of kinds and
//! details a route can answer), the run request's body and the messages of
//! the event stream (`GET /api/events`). Routes name these types in their
//! `#[utoipa::path]` attributes; [`crate::openapi`] assembles the document
//! from the routes and puts the schemas written as JSON ([`raw_schemas`])
//! in place of their placeholders.

use coderig::flow::FlowSpec;
use serde::Serialize;
use serde_json::{json, Value};
use std::borrow::Cow;
use utoipa::openapi::schema::Schema;
use utoipa::openapi::RefOr;
use utoipa::{PartialSchema, ToSchema};

/// The JSON Schema of `POST /api/runs`'s body: a registered flow by name
/// or an inline spec (exactly one; the other may be given as `null`, which
/// the route reads as not given), and an optional input object.
fn run_request_schema() -> Value {
    let input = json!({"description": "The run's input: `input` of its templates and conditions (default {}).",
                       "anyOf": [{"type": "object"}, {"type": "null"}]});
    let spec = json!({"$ref": format!("#/components/schemas/{}", FlowSpec::name())});
    json!({
        "description": "A run to start: `flow` (a registered flow's name, GET /api/flows) or `spec` (an inline flow spec, DESIGN \"flow runtime\"), and `input`.",
        "oneOf": [
            {"type": "object", "title": "registered", "additionalProperties": false, "required": ["flow"],
             "properties": {
                 "flow": {"type": "string", "description": "A registered flow's name."},
                 "spec": {"type": "null"},
                 "input": input,
             }},
            {"type": "object", "title": "inline", "additionalProperties": false, "required": ["spec"],
             "properties": {
                 "spec": spec,
                 "flow": {"type": "null"},
                 "input": input,
             }},
        ]
    })
}

fn codes(kinds: &[&str]) -> Vec<String> {
    kinds.iter().map(|k| k.to_ascii_uppercase()).collect()
}

/// `{"ok": false, "error": {kind, code, message, ...details}}` for `kinds`,
/// with exactly the `details` fields those kinds carry.
fn error_schema(description: &str, kinds: &[&str], details: Value) -> RefOr<Schema> {
    let mut properties = json!({
        "kind": {"type": "string", "enum": kinds},
        "code": {"type": "string", "enum": codes(kinds), "description": "The kind in upper case."},
        "message": {"type": "string", "description": "Written for a person or a model to act on."},
    });
    if let (Some(all), Value::Object(details)) = (properties.as_object_mut(), details) {
        all.extend(details);
    }
    let schema = json!({
        "type": "object",
        "description": description,
        "additionalProperties": false,
        "required": ["ok", "error"],
        "properties": {
            "ok": {"type": "boolean", "enum": [false]},
            "error": {
                "type": "object",
                "additionalProperties": false,
                "required": ["kind", "code", "message"],
                "properties": properties,
            }
        }
    });
    serde_json::from_value(schema).unwrap_or_default()
}

/// An error schema with a fixed component name.
macro_rules! error_type {
    ($(#[$doc:meta])* $ty:ident, $body:expr) => {
        $(#[$doc])*
        pub(crate) struct $ty;
        impl PartialSchema for $ty {
            fn schema() -> RefOr<Schema> {
                $body
            }
        }
        impl ToSchema for $ty {
            fn name() -> Cow<'static, str> {
                Cow::Borrowed(stringify!($ty))
            }
        }
    };
}

fn nearest() -> Value {
    let nearest = serde_json::to_value(coderig::Nearest::schema()).unwrap_or(Value::Null);
    json!({"description": "not_found: the closest window, or null.", "anyOf": [nearest, {"type": "null"}]})
}

fn line_ranges() -> Value {
    // Two integers by minItems/maxItems, not a prefixItems tuple:
    // schemathesis 4 mis-converts prefixItems in a response schema.
    json!({"type": "array", "description": "ambiguous: [first_line, last_line] of each location.",
           "items": {"type": "array", "items": {"type": "integer", "minimum": 1}, "minItems": 2, "maxItems": 2}})
}

fn violations() -> Value {
    let violation = serde_json::to_value(coderig::GuardViolation::schema()).unwrap_or(Value::Null);
    json!({"type": "array", "description": "guard: what each guard saw.", "items": violation})
}

fn remaps() -> Value {
    json!({"type": "object", "description": "hashline_mismatch: each stale ref and its fresh LINE#HH.",
           "additionalProperties": {"type": "string"}})
}

error_type!(
    /// Any error of the API (the kinds of every route together).
    ErrorBody,
    {
        let kinds: Vec<&str> = coderig::ErrorKind::NAMES
            .iter()
            .copied()
            .chain([
                "route_not_found",
                "method_not_allowed",
                "payload_too_large",
                "unauthorized",
            ])
            .collect();
        let mut schema = error_schema(
            "Any error: the core's kinds and the three only HTTP has.",
            &kinds,
            json!({}),
        );
        // Details vary by kind: any further field may follow.
        if let RefOr::T(Schema::Object(object)) = &mut schema {
            if let Some(RefOr::T(Schema::Object(error))) = object.properties.get_mut("error") {
                error.additional_properties = None;
            }
        }
        schema
    }
);

error_type!(
    /// 400: the request is malformed.
    InvalidInput,
    error_schema(
        "invalid_input: not JSON, not declared as JSON, of the wrong shape, or a bad value; `path` names the bad field when there is one.",
        &["invalid_input"],
        json!({"path": {"type": "string", "description": "JSON path of the bad field (`edits[1].old`)."}}),
    )
);

/// `schema` with any further detail allowed in its `error` object: the
/// arena's errors name what they can (the fields listed), and a store or
/// workspace error passed through may add its own.
fn open_details(mut schema: RefOr<Schema>) -> RefOr<Schema> {
    if let RefOr::T(Schema::Object(object)) = &mut schema {
        if let Some(RefOr::T(Schema::Object(error))) = object.properties.get_mut("error") {
            error.additional_properties = None;
        }
    }
    schema
}

error_type!(
    /// 400 of the battle routes: a bad spec, body or filter.
    BattleInvalidInput,
    open_details(error_schema(
        "invalid_input: a bad spec (every problem in `problems`, the first one's path in `path`), an unknown identity, a project outside the project roots (`given`, `roots`) or not a git repository, a bad filter or body.",
        &["invalid_input"],
        json!({
            "path": {"type": "string", "description": "JSON path of the (first) bad field."},
            "problems": {"type": "array", "description": "Every problem of a spec.",
                         "items": {"type": "object", "required": ["path", "message"],
                                   "properties": {"path": {"type": "string"}, "message": {"type": "string"}}}},
            "given": {"type": "string", "description": "The project path as given."},
            "roots": {"type": "array", "items": {"type": "string"}, "description": "The server's project roots."},
        }),
    ))
);

error_type!(
    /// 404: no battle, contestant, analysis or patch of that id.
    NotFoundId,
    open_details(error_schema(
        "not_found_id: nothing of that id (or not yet: an analysis or a patch not written); details name what and the battle.",
        &["not_found_id"],
        json!({
            "what": {"type": "string", "description": "What was looked for (battle, contestant, analysis, diff)."},
            "id": {"type": "string", "description": "The id asked for."},
            "battle_id": {"type": "string", "description": "The battle, when the id was one of its parts."},
            "status": {"type": "string", "description": "Where that stands now (why it is not there yet)."},
        }),
    ))
);

error_type!(
    /// 409: the battle is not in a state that allows the request.
    Conflict,
    open_details(error_schema(
        "conflict: the battle's status does not allow it (details `status`), or it changed meanwhile, or a patch does not apply cleanly.",
        &["conflict"],
        json!({"status": {"type": "string", "description": "The battle's status."}}),
    ))
);

error_type!(
    /// The body of `POST /api/runs`. A placeholder here: the document puts
    /// the real schema ([`raw_schemas`]) in the JSON.
    RunRequestBody,
    RefOr::T(Schema::Object(utoipa::openapi::schema::Object::new()))
);

error_type!(
    /// 400 of the run routes: a bad request, spec, filter or body.
    RunInvalidInput,
    open_details(error_schema(
        "invalid_input: a bad body, spec (every problem in `problems`, the first one's path in `path`), input, filter or flow name; nothing was created.",
        &["invalid_input"],
        json!({
            "path": {"type": "string", "description": "JSON path of the (first) bad field: in the body (`flow`, `input`) or, for a spec's problems, in the spec (`steps[1].deps[0]`)."},
            "problems": {"type": "array", "description": "Every problem of a spec.",
                         "items": {"type": "object", "required": ["path", "message"],
                                   "properties": {"path": {"type": "string"}, "message": {"type": "string"}}}},
        }),
    ))
);

error_type!(
    /// 404: no run, or no step of that id in it.
    RunNotFoundId,
    open_details(error_schema(
        "not_found_id: no run of that id, or no step of that id in the run.",
        &["not_found_id"],
        json!({
            "what": {"type": "string", "description": "What was looked for (run, step)."},
            "id": {"type": "string", "description": "The id asked for."},
            "run_id": {"type": "string", "description": "The run, when a step was looked for."},
        }),
    ))
);

error_type!(
    /// 409: the run or step is not in a state that allows the request.
    RunConflict,
    open_details(error_schema(
        "conflict: the run already ended (cancel), or the step is not an approval waiting for a decision (approve, reject; `status` is where it stands).",
        &["conflict"],
        json!({"status": {"type": "string", "description": "The step's status."}}),
    ))
);

error_type!(
    /// 401: the server has a token and the request did not send it.
    Unauthorized,
    error_schema(
        "unauthorized: a missing or wrong `Authorization: Bearer <token>`.",
        &["unauthorized"],
        json!({})
    )
);

error_type!(
    /// 413: the body is over the server's size limit.
    PayloadTooLarge,
    error_schema(
        "payload_too_large: the body is over --max-body.",
        &["payload_too_large"],
        json!({})
    )
);

error_type!(
    /// 422: a well-formed edit the core refuses to apply.
    EditRefusal,
    error_schema(
        "An edit refusal: not_found (with nearest), ambiguous (with count and lines), guard (with violations) or no_op.",
        &["not_found", "ambiguous", "guard", "no_op"],
        json!({
            "nearest": nearest(),
            "count": {"type": "integer", "minimum": 2, "description": "ambiguous: how many locations."},
            "lines": line_ranges(),
            "violations": violations(),
        }),
    )
);

error_type!(
    /// 422: stale hashline refs, or a hashline edit that changes nothing.
    HashlineRefusal,
    error_schema(
        "hashline_mismatch (with remaps) or, for apply, no_op.",
        &["hashline_mismatch", "no_op"],
        json!({"remaps": remaps()}),
    )
);

error_type!(
    /// 400 of `GET /api/events`: a resume cursor that does not parse, or an
    /// unknown query parameter.
    EventsInvalidInput,
    error_schema(
        "invalid_input: a resume cursor that is not `<epoch>:<seq>` (`path`: where it came from; `given`: the text; `reason`: why), a Last-Event-ID that is not text (`path` alone), or an unknown query parameter (no details).",
        &["invalid_input"],
        json!({
            "path": {"type": "string", "enum": ["Last-Event-ID", "after"],
                     "description": "The header or query parameter that carried the cursor."},
            "given": {"type": "string", "description": "The cursor as sent."},
            "reason": {"type": "string", "enum": coderig::event::SseIdErrorReason::NAMES,
                       "description": "Why it is no cursor."},
        }),
    )
);

error_type!(
    /// 500: the server could not do its part — a store, file or repository
    /// that could not be read or written (`io`), or a bug (`internal`, a
    /// caught panic included). Never the request's fault.
    ServerError,
    open_details(error_schema(
        "io or internal; `path` names a file when one is at fault.",
        &["io", "internal"],
        json!({"path": {"type": "string", "description": "The file or directory that could not be read or written."}}),
    ))
);

/// The data of the `gap` message of `GET /api/events`: the events after
/// `after` and before `oldest` were compacted away (re-read the state you
/// show), and the stream goes on from `oldest`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct SseGap {
    /// The cursor the client resumed after.
    pub(crate) after: u64,
    /// The oldest event the store still has: the stream goes on from it.
    pub(crate) oldest: u64,
}

error_type!(
    /// One message of `GET /api/events`. A placeholder here: the document
    /// puts the real schema ([`raw_schemas`]) in the JSON.
    SseMessage,
    RefOr::T(Schema::Object(utoipa::openapi::schema::Object::new()))
);

/// The payload schema of a message of `event_type`: its core type's
/// schema and the fields the stream adds (`type`; a stored event's `seq`
/// and `epoch`).
fn event_data(event_type: coderig::event::EventType) -> Value {
    use coderig::event::{
        AgentOutput, BattleStarted, BattleUpdated, ContestantUpdated, EventType, RunUpdated,
        StepUpdated, TaskRescued,
    };
    let name = match event_type {
        EventType::BattleStarted => BattleStarted::name(),
        EventType::ContestantUpdated => ContestantUpdated::name(),
        EventType::BattleUpdated => BattleUpdated::name(),
        EventType::RunUpdated => RunUpdated::name(),
        EventType::StepUpdated => StepUpdated::name(),
        EventType::AgentOutput => AgentOutput::name(),
        EventType::TaskRescued => TaskRescued::name(),
    };
    let mut added = json!({"type": "object", "required": ["type"], "properties": {
        "type": {"type": "string", "enum": [event_type.as_str()]}}});
    if event_type.is_stored() {
        added["required"] = json!(["type", "seq", "epoch"]);
        added["properties"]["seq"] = json!({"type": "integer", "minimum": 1,
            "description": "The event's place in the store's log (increasing; there may be gaps)."});
        added["properties"]["epoch"] =
            json!({"type": "string", "description": "The store's instance id."});
    }
    json!({"allOf": [{"$ref": format!("#/components/schemas/{name}")}, added]})
}

/// The JSON Schema of one message of the event stream: one variant per
/// `event:` name, its `data` the JSON text of its payload
/// (`contentSchema`). Stored events have an `id`; `agent_output` (live
/// only), `reset` and `gap` have none.
fn sse_message_schema() -> Value {
    use coderig::event::EventType;
    let id = json!({"type": "string", "pattern": "^[A-Za-z0-9_.-]{1,128}:(0|[1-9][0-9]*)$",
        "description": "`<epoch>:<seq>`: send the last one received back as Last-Event-ID (or ?after=) to resume after it."});
    let message = |name: &str, with_id: bool, data: Value, description: &str| {
        let mut properties = json!({
            "event": {"type": "string", "enum": [name]},
            "data": {"type": "string", "contentMediaType": "application/json", "contentSchema": data,
                     "description": "The payload as JSON text."},
        });
        let mut required = vec!["event", "data"];
        if with_id {
            properties["id"] = id.clone();
            required.insert(0, "id");
        }
        json!({"type": "object", "title": name, "description": description,
               "additionalProperties": false, "required": required, "properties": properties})
    };
    let mut variants: Vec<Value> = EventType::ALL
        .iter()
        .map(|&t| {
            let description = if t.is_stored() {
                "A stored event: replayed to a client that resumes before it."
            } else {
                "An agent's output as it comes: live only, never replayed."
            };
            message(t.as_str(), t.is_stored(), event_data(t), description)
        })
        .collect();
    variants.push(message(
        "reset",
        false,
        json!({"type": "object", "maxProperties": 0}),
        "The cursor is from another store (or a history this one does not have): every retained event follows; drop what you had.",
    ));
    variants.push(message(
        "gap",
        false,
        json!({"$ref": format!("#/components/schemas/{}", SseGap::name())}),
        "The events after `after` and before `oldest` were compacted away: re-read the state you show; the retained events follow.",
    ));
    json!({
        "description": "One message of the stream (`text/event-stream`: `id:`, `event:` and `data:` lines, a blank line between messages; `:` keep-alive comments come between them). `event` is the message's name; its `data` is the JSON of the payload.",
        "oneOf": variants,
    })
}

/// The schemas the document carries as written, in place of their
/// placeholders of the same name: what utoipa's typed schema cannot hold
/// (`oneOf` of objects, nullable `anyOf`s, `contentSchema`).
pub(crate) fn raw_schemas() -> Vec<(Cow<'static, str>, Value)> {
    vec![
        (RunRequestBody::name(), run_request_schema()),
        (SseMessage::name(), sse_message_schema()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_schema_keeps_its_fields() {
        for (name, schema) in [
            (ErrorBody::name(), ErrorBody::schema()),
            (InvalidInput::name(), InvalidInput::schema()),
            (PayloadTooLarge::name(), PayloadTooLarge::schema()),
            (Unauthorized::name(), Unauthorized::schema()),
            (EditRefusal::name(), EditRefusal::schema()),
            (HashlineRefusal::name(), HashlineRefusal::schema()),
        ] {
            let value = serde_json::to_value(schema).unwrap();
            assert_eq!(value["required"], json!(["ok", "error"]), "{name}: {value}");
            assert!(
                value["properties"]["error"]["properties"]["kind"]["enum"].is_array(),
                "{name}"
            );
        }
        let refusal = serde_json::to_value(EditRefusal::schema()).unwrap();
        let details = &refusal["properties"]["error"]["properties"];
        for key in ["nearest", "count", "lines", "violations"] {
            assert!(details.get(key).is_some(), "{key}");
        }
    }
}
