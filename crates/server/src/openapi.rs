//! The OpenAPI 3.1 document served at `GET /api/openapi.json`.
//!
//! Hand-maintained (no derive crate: the request types wrap core types that
//! carry no schema derives). The end-to-end tests check that its paths are
//! exactly the routes the router serves, so a new route cannot be forgotten.

use serde_json::{json, Value};

fn schema(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

fn body(name: &str) -> Value {
    json!({ "required": true, "content": { "application/json": { "schema": schema(name) } } })
}

fn answer(description: &str, name: &str) -> Value {
    json!({ "description": description, "content": { "application/json": { "schema": schema(name) } } })
}

/// The error responses every JSON-body route can give, plus `extra`.
fn errors(extra: &[(&str, &str)]) -> Vec<(String, Value)> {
    let mut all = vec![
        ("400", "invalid_input: malformed JSON or a bad value"),
        ("413", "payload_too_large: body over the size limit"),
        (
            "415",
            "invalid_input: body not declared as application/json",
        ),
    ];
    all.extend_from_slice(extra);
    all.into_iter()
        .map(|(status, description)| (status.to_owned(), answer(description, "Error")))
        .collect()
}

fn post(summary: &str, request: &str, ok: &str, extra_errors: &[(&str, &str)]) -> Value {
    let mut responses = serde_json::Map::new();
    responses.insert("200".into(), answer("success", ok));
    for (status, value) in errors(extra_errors) {
        responses.insert(status, value);
    }
    json!({ "post": { "summary": summary, "requestBody": body(request), "responses": responses } })
}

const SHAPE_422: (&str, &str) = (
    "422",
    "invalid_input: well-formed JSON of the wrong shape (missing/unknown field, wrong type)",
);
const REFUSAL_422: (&str, &str) = (
    "422",
    "invalid_input (wrong shape) or an edit refusal: not_found, ambiguous, guard, no_op, hashline_mismatch",
);

/// The whole document.
pub fn document() -> Value {
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "coderig",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "The reference HTTP face of coderig. Every response is JSON; errors are {ok: false, error: {kind, code, message, ...details}}. Offsets are UTF-8 byte offsets."
        },
        "paths": {
            "/api/health": { "get": {
                "summary": "Liveness and version",
                "responses": { "200": answer("alive", "Health") }
            } },
            "/api/openapi.json": { "get": {
                "summary": "This document",
                "responses": { "200": { "description": "OpenAPI 3.1 document", "content": { "application/json": { "schema": { "type": "object" } } } } }
            } },
            "/api/xxhash32": post("xxHash32 of a UTF-8 string", "XxHashRequest", "XxHashResponse", &[SHAPE_422]),
            "/api/edit": post(
                "Apply one search/replace edit, or several atomically (`edits`), to the given content",
                "EditRequest", "EditResponse", &[REFUSAL_422]),
            "/api/locate": post(
                "Where a needle is in the content (tiered; refuses to pick between several locations)",
                "LocateRequest", "LocateResponse", &[SHAPE_422]),
            "/api/hashline/format": post("Show content as LINE#HH|text lines",
                "HashlineFormatRequest", "HashlineFormatResponse", &[SHAPE_422]),
            "/api/hashline/apply": post("Apply hashline edits (bottom-up, all or nothing)",
                "HashlineApplyRequest", "ContentResponse", &[REFUSAL_422]),
            "/api/hashline/validate": post(
                "Check LINE#HH refs are fresh (stale refs: 422 hashline_mismatch with remaps; out-of-range: 400)",
                "HashlineValidateRequest", "Ok", &[REFUSAL_422]),
            "/api/flows/validate": post(
                "Validate a flow spec (unknown dependencies, cycles, unknown switch/loop steps, ...); an invalid flow is a 200 with valid: false",
                "Flow", "FlowValidateResponse", &[SHAPE_422]),
        },
        "components": { "schemas": schemas() }
    })
}

fn strings() -> Value {
    json!({ "type": "array", "items": { "type": "string" } })
}

fn line_range() -> Value {
    json!({ "type": "array", "items": { "type": "integer" }, "minItems": 2, "maxItems": 2,
            "description": "[first_line, last_line], 1-based, inclusive" })
}

fn hashline_edit(op: &str, pos_required: bool, with_end: bool) -> Value {
    let mut properties = json!({
        "op": { "const": op },
        "pos": { "type": "string", "description": "LINE#HH ref" },
        "lines": { "oneOf": [strings(), { "type": "string" }],
                   "description": "array of lines, or one string split on \\n" }
    });
    if with_end {
        properties["end"] =
            json!({ "type": "string", "description": "last LINE#HH ref (inclusive)" });
    }
    let required = if pos_required {
        json!(["op", "pos", "lines"])
    } else {
        json!(["op", "lines"])
    };
    json!({ "type": "object", "properties": properties, "required": required })
}

fn schemas() -> Value {
    let tier = json!({ "type": "string", "enum": ["exact", "whitespace", "unicode", "fuzzy"] });
    let trigger_rule = json!({ "type": "string", "enum": coderig::flow::TriggerRule::ALL.iter().map(|r| r.as_str()).collect::<Vec<_>>() });
    let step_kind = json!({ "type": "string", "enum": coderig::flow::StepKind::ALL.iter().map(|k| k.as_str()).collect::<Vec<_>>() });
    json!({
        "Error": { "type": "object", "required": ["ok", "error"], "properties": {
            "ok": { "const": false },
            "error": { "type": "object", "required": ["kind", "code", "message"], "properties": {
                "kind": { "type": "string", "enum": ["invalid_input", "not_found", "ambiguous", "guard", "no_op",
                    "hashline_mismatch", "method_not_allowed", "payload_too_large", "io", "internal"] },
                "code": { "type": "string", "description": "kind in upper case" },
                "message": { "type": "string", "description": "written for a model to act on" },
                "nearest": { "oneOf": [schema("Nearest"), { "type": "null" }], "description": "not_found" },
                "count": { "type": "integer", "description": "ambiguous" },
                "lines": { "type": "array", "items": line_range(), "description": "ambiguous" },
                "violations": { "type": "array", "description": "guard", "items": { "type": "object",
                    "properties": { "kind": { "type": "string" }, "message": { "type": "string" } } } },
                "remaps": { "type": "object", "additionalProperties": { "type": "string" },
                            "description": "hashline_mismatch: stale ref -> fresh ref" }
            }, "additionalProperties": true }
        } },
        "Ok": { "type": "object", "required": ["ok"], "properties": { "ok": { "const": true } } },
        "Health": { "type": "object", "required": ["ok", "version"], "properties": {
            "ok": { "const": true }, "version": { "type": "string" } } },
        "XxHashRequest": { "type": "object", "required": ["data"], "additionalProperties": false, "properties": {
            "data": { "type": "string" }, "seed": { "type": "integer", "minimum": 0, "maximum": 4294967295u64, "default": 0 } } },
        "XxHashResponse": { "type": "object", "required": ["ok", "hash"], "properties": {
            "ok": { "const": true }, "hash": { "type": "integer" } } },
        "Edit": { "type": "object", "required": ["old", "new"], "properties": {
            "old": { "type": "string" }, "new": { "type": "string" },
            "replace_all": { "type": "boolean", "default": false } } },
        "EditRequest": { "type": "object", "required": ["content"], "additionalProperties": false,
            "description": "Either old + new (+ replace_all) or edits, not both.",
            "properties": {
                "content": { "type": "string" },
                "old": { "type": "string" }, "new": { "type": "string" },
                "replace_all": { "type": "boolean", "default": false },
                "edits": { "type": "array", "items": schema("Edit"),
                           "description": "all located against content, applied all or nothing" },
                "path": { "type": "string", "description": "file name, only picks the guards' language" },
                "guards": { "type": "boolean", "default": true } } },
        "EditResponse": { "type": "object", "required": ["ok", "content", "tier", "replacements"], "properties": {
            "ok": { "const": true }, "content": { "type": "string" }, "tier": tier,
            "replacements": { "type": "integer" } } },
        "LocateRequest": { "type": "object", "required": ["content", "needle"], "additionalProperties": false,
            "properties": { "content": { "type": "string" }, "needle": { "type": "string" } } },
        "Nearest": { "type": "object", "required": ["first_line", "last_line", "score"], "properties": {
            "first_line": { "type": "integer" }, "last_line": { "type": "integer" }, "score": { "type": "number" } } },
        "LocateResponse": { "type": "object",
            "required": ["ok", "kind", "start", "end", "start_line", "end_line", "score", "count", "candidates", "nearest"],
            "properties": {
                "ok": { "const": true },
                "kind": { "type": "string", "enum": ["exact", "whitespace", "unicode", "fuzzy", "ambiguous", "not_found"] },
                "start": { "type": ["integer", "null"], "description": "UTF-8 byte offset" },
                "end": { "type": ["integer", "null"], "description": "UTF-8 byte offset, exclusive" },
                "start_line": { "type": ["integer", "null"], "description": "1-based" },
                "end_line": { "type": ["integer", "null"], "description": "1-based, inclusive" },
                "score": { "type": ["number", "null"] },
                "count": { "type": "integer" },
                "candidates": { "type": "array", "items": line_range() },
                "nearest": { "oneOf": [schema("Nearest"), { "type": "null" }] } } },
        "HashlineFormatRequest": { "type": "object", "required": ["content"], "additionalProperties": false,
            "properties": { "content": { "type": "string" } } },
        "HashlineFormatResponse": { "type": "object", "required": ["ok", "formatted"], "properties": {
            "ok": { "const": true }, "formatted": { "type": "string" } } },
        "HashlineEdit": { "oneOf": [
            hashline_edit("replace", true, true),
            hashline_edit("append", false, false),
            hashline_edit("prepend", false, false) ] },
        "HashlineApplyRequest": { "type": "object", "required": ["content", "edits"], "additionalProperties": false,
            "properties": { "content": { "type": "string" },
                            "edits": { "type": "array", "items": schema("HashlineEdit") } } },
        "HashlineValidateRequest": { "type": "object", "required": ["content", "refs"], "additionalProperties": false,
            "properties": { "content": { "type": "string" }, "refs": strings() } },
        "ContentResponse": { "type": "object", "required": ["ok", "content"], "properties": {
            "ok": { "const": true }, "content": { "type": "string" } } },
        "Case": { "type": "object", "required": ["label", "steps"], "additionalProperties": false, "properties": {
            "label": { "type": "string" }, "steps": strings(),
            "condition": { "description": "accepted, not evaluated (conditions are closures in the core)" } } },
        "Step": { "type": "object", "required": ["id", "kind"], "properties": {
            "id": { "type": "string" }, "kind": step_kind,
            "deps": strings(), "trigger_rule": trigger_rule.clone(),
            "batch": { "type": ["string", "null"] },
            "max_retries": { "type": "integer", "minimum": 0, "default": 0 },
            "timeout": { "type": ["integer", "null"], "minimum": 0, "description": "seconds" },
            "cases": { "type": "array", "items": schema("Case") },
            "default_branch": strings(), "loop_body": strings(),
            "loop_max_iterations": { "type": "integer", "minimum": 0, "default": 100 },
            "loop_condition": { "description": "accepted, not evaluated" },
            "when": { "description": "accepted, not evaluated" } },
            "additionalProperties": false },
        "BatchConfig": { "type": "object", "additionalProperties": false, "properties": {
            "max_concurrent": { "type": ["integer", "null"], "minimum": 0 },
            "join_rule": trigger_rule } },
        "Flow": { "type": "object", "required": ["steps"], "additionalProperties": false, "properties": {
            "steps": { "type": "array", "items": schema("Step") },
            "batch_config": schema("BatchConfig") } },
        "FlowValidationError": { "type": "object", "required": ["code", "message"], "properties": {
            "code": { "type": "string", "enum": [
                "empty_id", "duplicate_id", "unknown_dependency", "cycle", "unknown_case_step",
                "unknown_default_branch_step", "duplicate_case_label", "unknown_loop_body_step",
                "cases_on_non_switch", "loop_on_non_do_while", "zero_batch_cap"] },
            "message": { "type": "string" } },
            "additionalProperties": true,
            "description": "plus the fields of the problem: index, id, step, dep, steps, case, target, label" },
        "FlowValidateResponse": { "type": "object", "required": ["ok", "valid", "errors", "ignored"], "properties": {
            "ok": { "const": true }, "valid": { "type": "boolean" },
            "errors": { "type": "array", "items": schema("FlowValidationError") },
            "ignored": { "type": "array", "items": { "type": "string" },
                         "description": "paths of condition fields (condition, loop_condition, when): accepted, not evaluated" } } }
    })
}
