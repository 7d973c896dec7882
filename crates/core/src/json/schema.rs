//! JSON Schemas of the contract's shapes (feature `openapi`): what the
//! server's OpenAPI document says each request body accepts and each answer
//! holds.
//!
//! The shapes whose decoders accept more than one form (an edit as an object
//! or a list, hashline `lines` as a string or a list, the two forms of an
//! edit request, a flow spec whose conditions may hold any value) have no
//! derive that says that exactly, so their schemas are written here, as JSON,
//! next to nothing else. Every schema here says exactly what the decoder
//! accepts: a body matching it is decoded, a body that does not is refused
//! as `invalid_input` — which the server's schema fuzzing (schemathesis,
//! `scripts/test.sh`) checks in both directions. What a schema cannot say
//! (a line ref beyond the end of the content, two edits that overlap in it)
//! is said in its description.

use super::edit::{EditInput, EditRequest, HashlineEditInput, HashlineValidateRequest, LinesInput};
use crate::edit::guards::{GuardViolation, ViolationKind};
use crate::edit::locate::Nearest;
use crate::flow::{BatchConfig, Case, Flow, Step, StepKind, TriggerRule, ValidationError};
use serde_json::{json, Value};
use std::borrow::Cow;
use utoipa::openapi::schema::{Object, Schema};
use utoipa::openapi::RefOr;
use utoipa::{PartialSchema, ToSchema};

/// The schema written as JSON, as utoipa's value. The schemas here are
/// constants; the tests check each one converts back to exactly the JSON it
/// was written as, so nothing utoipa cannot model is silently dropped.
pub(crate) fn from_json(value: Value) -> RefOr<Schema> {
    serde_json::from_value(value).unwrap_or_else(|_| RefOr::T(Schema::Object(Object::new())))
}

/// The JSON form of another type's schema, to inline it.
fn inline<T: PartialSchema>() -> Value {
    serde_json::to_value(T::schema()).unwrap_or(Value::Null)
}

/// `u32::MAX`, `u64::MAX`, `usize::MAX`: the ranges of the integer fields
/// (integral floats such as `3.0` are integers, as JSON Schema says).
const U32_MAX: u64 = u32::MAX as u64;
const U64_MAX: u64 = u64::MAX;
const USIZE_MAX: u64 = usize::MAX as u64;

/// Whitespace as Rust's `char::is_whitespace` (Unicode `White_Space`)
/// reads it, spelled out: a regex `\s` differs between dialects (Python's
/// also matches U+001C..U+001F).
pub(crate) const WS: &str =
    r"\t\n\x0B\f\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000";

/// The grammar of `agent::duration::parse_duration` (what the decoder reads
/// a duration string with) as a regex: optional whitespace, a number of
/// digits and at most one `.`, optional whitespace, a unit in any case
/// (`ms`, `s`/`sec`/`secs`, `m`/`min`/`mins`, `h`/`hr`/`hrs`; none is
/// seconds), optional whitespace. `zero_ok: false` needs a non-zero digit
/// (the decoder refuses a zero duration there). The range (at most 100
/// years) is the number form's `maximum`; a string past it is refused by
/// the decoder.
fn duration_pattern(zero_ok: bool) -> String {
    let number = if zero_ok {
        r"([0-9]+\.?[0-9]*|\.[0-9]+)"
    } else {
        r"([0-9]*[1-9][0-9]*\.?[0-9]*|[0-9]*\.[0-9]*[1-9][0-9]*)"
    };
    let unit = "([mM][sS]|[sS]([eE][cC][sS]?)?|[mM]([iI][nN][sS]?)?|[hH]([rR][sS]?)?)";
    format!("^[{WS}]*{number}[{WS}]*{unit}?[{WS}]*$")
}

/// A duration the decoder reads with `zero_ok` (`Problems::opt_duration`):
/// seconds as a number, a string of [`duration_pattern`], or `null`.
pub(crate) fn duration_of(description: &str, zero_ok: bool) -> Value {
    let number = if zero_ok {
        json!({"type": "number", "minimum": 0, "maximum": 3_200_000_000u64})
    } else {
        json!({"type": "number", "exclusiveMinimum": 0, "maximum": 3_200_000_000u64})
    };
    json!({
        "description": description,
        "anyOf": [
            number,
            {"type": "string", "pattern": duration_pattern(zero_ok)},
            {"type": "null"},
        ]
    })
}

/// A duration as `agent::duration::deserialize_opt` reads it: seconds as a
/// non-negative number, or a number with a unit (`"90s"`). The
/// `value_type` of the durations of derived schemas (a component named
/// `Duration`).
pub(crate) struct DurationInput;

impl PartialSchema for DurationInput {
    fn schema() -> RefOr<Schema> {
        from_json(json!({
            "description": "Seconds, or a number with a unit: \"500ms\", \"90s\", \"20m\", \"2h\".",
            "anyOf": [
                {"type": "number", "minimum": 0, "maximum": 3_200_000_000u64},
                {"type": "string", "pattern": duration_pattern(true)},
            ]
        }))
    }
}

impl ToSchema for DurationInput {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("Duration")
    }
}

/// A `Rig`'s `sandbox` as `SandboxConfig::from_json` reads it: a mode's
/// name, or the `[sandbox]` table (`{"mode": "auto"}`). The `value_type` of
/// `RigOptions::sandbox` (a component named `SandboxSetting`).
pub(crate) struct SandboxInput;

impl PartialSchema for SandboxInput {
    fn schema() -> RefOr<Schema> {
        let mode = json!({"$ref": "#/components/schemas/SandboxMode"});
        from_json(json!({
            "oneOf": [
                mode,
                {"type": "object", "additionalProperties": false, "properties": {"mode": mode}},
            ]
        }))
    }
}

impl ToSchema for SandboxInput {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("SandboxSetting")
    }

    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        use crate::sandbox::SandboxMode;
        schemas.push((SandboxMode::name().into_owned(), SandboxMode::schema()));
    }
}

/// The grammar of `NetworkPolicy::from_str` (what the decoder reads a
/// command step's `sandbox.network` and an oracle's `network` with) as a regex: `allow`, `deny`, or
/// `loopback:` and a comma-separated list of ports, each with optional
/// whitespace around it (Rust's `trim`), an optional `+` and leading zeros
/// (Rust's `u16` parsing), from 1 to 65535.
pub(crate) fn network_pattern() -> String {
    let port =
        "([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])";
    let item = format!("[{WS}]*\\+?0*{port}[{WS}]*");
    format!("^(allow|deny|loopback:{item}(,{item})*)$")
}

/// The grammar of [`crate::hashline::parse_ref`] as a regex: leading
/// whitespace and `>`, `+`, `-`; a line number from 1 (leading zeros
/// allowed; at most 19 significant digits); `#` with optional whitespace
/// around it; two letters of the hash alphabet in either case; then only
/// whitespace or `|text`.
pub(crate) fn line_ref_pattern() -> String {
    let alphabet = "ZPMQVRWSNKTXJBYH";
    let letters = format!("{alphabet}{}", alphabet.to_ascii_lowercase());
    format!(r"^[{WS}>+\-]*0*[1-9][0-9]{{0,18}}[{WS}]*#[{WS}]*[{letters}]{{2}}[{WS}]*(\|[\s\S]*)?$")
}

fn line_ref(description: &str) -> Value {
    json!({"type": "string", "pattern": line_ref_pattern(), "description": description})
}

fn strings(description: &str) -> Value {
    json!({"type": "array", "items": {"type": "string"}, "description": description})
}

fn absent(description: &str) -> Value {
    json!({"type": "null", "description": description})
}

/// A schema with a fixed component name.
macro_rules! named_schema {
    ($ty:ty, $name:literal, $body:path) => {
        impl PartialSchema for $ty {
            fn schema() -> RefOr<Schema> {
                from_json($body())
            }
        }
        impl ToSchema for $ty {
            fn name() -> Cow<'static, str> {
                Cow::Borrowed($name)
            }
        }
    };
}

fn edit_input_schema() -> Value {
    let object = |flag: &str| {
        json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["old", "new"],
            "properties": {
                "old": {"type": "string", "minLength": 1, "description": "Text to find (not empty)."},
                "new": {"type": "string", "description": "Replacement text (empty deletes)."},
                flag: {"type": ["boolean", "null"], "description": "Replace every occurrence (default false; null is not given)."},
            }
        })
    };
    json!({
        "description": "One edit: {old, new, replace_all?} (replaceAll, the JS spelling, also works, but not both), or a list [old, new] / [old, new, replace_all].",
        "anyOf": [
            object("replace_all"),
            object("replaceAll"),
            {
                "type": "array",
                "prefixItems": [
                    {"type": "string", "minLength": 1},
                    {"type": "string"},
                    {"type": ["boolean", "null"]},
                ],
                "items": false,
                "minItems": 2,
                "maxItems": 3,
            },
        ]
    })
}

named_schema!(EditInput, "Edit", edit_input_schema);

fn edit_request_schema() -> Value {
    let common = |form: Value| {
        let mut properties = json!({
            "content": {"type": "string", "description": "The file content the edit applies to."},
            "path": {"type": ["string", "null"], "description": "File path; only picks the language of the import guard."},
            "guards": {"type": "boolean", "default": true, "description": "Run the guards (default true)."},
        });
        if let (Some(all), Value::Object(form)) = (properties.as_object_mut(), form) {
            all.extend(form);
        }
        properties
    };
    let single = json!({
        "title": "one edit",
        "type": "object",
        "additionalProperties": false,
        "required": ["content", "old", "new"],
        "properties": common(json!({
            "old": {"type": "string", "minLength": 1, "description": "Text to find (not empty)."},
            "new": {"type": "string", "description": "Replacement text (empty deletes)."},
            "replace_all": {"type": ["boolean", "null"], "description": "Replace every occurrence instead of refusing several (default false)."},
            "edits": absent("Only in the batch form."),
        })),
    });
    let batch = json!({
        "title": "an atomic batch",
        "type": "object",
        "additionalProperties": false,
        "required": ["content", "edits"],
        "properties": common(json!({
            "edits": {
                "type": "array",
                "minItems": 1,
                "items": inline::<EditInput>(),
                "description": "Several edits, all located against content, applied all or none; two edits whose text overlaps in content are invalid_input.",
            },
            "old": absent("Only in the one-edit form."),
            "new": absent("Only in the one-edit form."),
            "replace_all": absent("In the batch form it belongs inside each edit."),
        })),
    });
    json!({
        "description": "Either one edit (old + new) or an atomic batch (edits), never both.",
        "oneOf": [single, batch]
    })
}

named_schema!(EditRequest, "EditRequest", edit_request_schema);

fn lines_schema() -> Value {
    json!({
        "description": "The new lines: a list of strings, or one string split on \\n (one trailing \\n ends the last line).",
        "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]
    })
}

named_schema!(LinesInput, "Lines", lines_schema);

fn hashline_edit_schema() -> Value {
    let lines = inline::<LinesInput>();
    let op = |name: &str, pos: Value, end: Value| {
        let properties = json!({
            "op": {"type": "string", "enum": [name]},
            "pos": pos,
            "end": end,
            "lines": lines.clone(),
        });
        let required = if name == "replace" {
            json!(["op", "pos", "lines"])
        } else {
            json!(["op", "lines"])
        };
        json!({"type": "object", "additionalProperties": false, "required": required, "properties": properties})
    };
    let optional_ref = |description: &str| {
        let mut r = line_ref(description);
        r["type"] = json!(["string", "null"]);
        r
    };
    json!({
        "description": "One hashline edit; refs are LINE#HH as hashline format shows them. A ref whose line is beyond the content, or an end before its pos, is invalid_input; a stale hash is hashline_mismatch.",
        "oneOf": [
            op("replace", line_ref("First line replaced."), optional_ref("Last line replaced, inclusive (default pos).")),
            op("append", optional_ref("Insert after this line (default: after the last line)."), absent("Replace edits only.")),
            op("prepend", optional_ref("Insert before this line (default: before the first line)."), absent("Replace edits only.")),
        ]
    })
}

named_schema!(HashlineEditInput, "HashlineEdit", hashline_edit_schema);

fn hashline_validate_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["content", "refs"],
        "properties": {
            "content": {"type": "string", "description": "Content the refs were read from."},
            "refs": {
                "type": "array",
                "items": line_ref("A LINE#HH ref (lenient forms such as `>>> 12 # VK|text` work)."),
                "description": "Refs to check; a ref whose line is beyond the content is invalid_input, a stale one hashline_mismatch.",
            },
        }
    })
}

named_schema!(
    HashlineValidateRequest,
    "HashlineValidateRequest",
    hashline_validate_schema
);

fn nearest_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["first_line", "last_line", "score"],
        "description": "The closest window: 1-based inclusive lines and its similarity.",
        "properties": {
            "first_line": {"type": "integer", "minimum": 1},
            "last_line": {"type": "integer", "minimum": 1},
            "score": {"type": "number", "minimum": 0, "maximum": 1},
        }
    })
}

named_schema!(Nearest, "Nearest", nearest_schema);

fn guard_violation_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["kind", "message"],
        "properties": {
            "kind": inline::<ViolationKind>(),
            "message": {"type": "string", "description": "What the guard saw, written for a model to act on."},
        }
    })
}

named_schema!(GuardViolation, "GuardViolation", guard_violation_schema);

/// A condition: a closure in the core, so any JSON value is accepted there,
/// set aside and listed in the answer's `ignored`. (Every type listed, not
/// an empty schema: utoipa reads a schema without `type` as none of its
/// kinds.)
fn condition() -> Value {
    json!({
        "type": ["null", "boolean", "object", "array", "number", "string"],
        "description": "A condition: accepted (any value), not evaluated; its path is listed in `ignored`."
    })
}

fn case_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["label", "steps"],
        "properties": {
            "label": {"type": "string", "description": "The name reported as the switch's chosen case."},
            "steps": strings("Steps run when this case is chosen."),
            "condition": condition(),
        }
    })
}

fn step_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["id", "kind"],
        "properties": {
            "id": {"type": "string"},
            "kind": inline::<StepKind>(),
            "deps": strings("Ids of the steps this one depends on."),
            "trigger_rule": inline::<TriggerRule>(),
            "batch": {"type": ["string", "null"]},
            "max_retries": {"type": ["integer", "null"], "minimum": 0, "maximum": U32_MAX, "default": 0, "description": "null means not given: 0."},
            "timeout": {"type": ["integer", "null"], "minimum": 0, "maximum": U64_MAX, "description": "Seconds."},
            "cases": {"type": "array", "items": case_schema()},
            "default_branch": strings("Steps run when no case of a switch matches."),
            "loop_body": strings("Steps a do_while repeats."),
            "loop_max_iterations": {"type": ["integer", "null"], "minimum": 0, "maximum": U32_MAX, "default": 100, "description": "null means not given: 100."},
            "loop_condition": condition(),
            "when": condition(),
        }
    })
}

fn batch_config_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "max_concurrent": {"type": ["integer", "null"], "minimum": 0, "maximum": USIZE_MAX},
            "join_rule": inline::<TriggerRule>(),
        }
    })
}

fn flow_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["steps"],
        "description": "A flow spec as crate::json::flow decodes it (trigger rules and kinds also parse in any case and with aliases).",
        "properties": {
            "steps": {"type": "array", "items": step_schema()},
            "batch_config": batch_config_schema(),
        }
    })
}

named_schema!(Flow, "Flow", flow_schema);
named_schema!(Step, "Step", step_schema);
named_schema!(Case, "Case", case_schema);
named_schema!(BatchConfig, "BatchConfig", batch_config_schema);

/// Every code of [`ValidationError`], in declaration order.
const VALIDATION_CODES: &[&str] = &[
    "empty_id",
    "duplicate_id",
    "unknown_dependency",
    "cycle",
    "unknown_case_step",
    "unknown_default_branch_step",
    "duplicate_case_label",
    "unknown_loop_body_step",
    "cases_on_non_switch",
    "loop_on_non_do_while",
    "zero_batch_cap",
];

fn validation_error_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["code", "message"],
        "description": "One problem of a flow: its code, a message, and the fields that code has.",
        "properties": {
            "code": {"type": "string", "enum": VALIDATION_CODES},
            "message": {"type": "string"},
            "index": {"type": "integer", "minimum": 0},
            "id": {"type": "string"},
            "step": {"type": "string"},
            "dep": {"type": "string"},
            "steps": {"type": "array", "items": {"type": "string"}},
            "case": {"type": "string"},
            "target": {"type": "string"},
            "label": {"type": "string"},
        }
    })
}

named_schema!(
    ValidationError,
    "FlowValidationError",
    validation_error_schema
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::{decode_object, flow};

    /// Every schema of this module: its name, the JSON it was written as
    /// and the value utoipa holds.
    fn every() -> Vec<(Cow<'static, str>, Value, RefOr<Schema>)> {
        macro_rules! each {
            ($($ty:ty => $json:path),+ $(,)?) => {
                vec![$((<$ty as ToSchema>::name(), $json(), <$ty as PartialSchema>::schema())),+]
            };
        }
        each![
            EditInput => edit_input_schema,
            EditRequest => edit_request_schema,
            LinesInput => lines_schema,
            HashlineEditInput => hashline_edit_schema,
            HashlineValidateRequest => hashline_validate_schema,
            Nearest => nearest_schema,
            crate::json::edit::LineRange => crate::json::edit::line_range_schema,
            GuardViolation => guard_violation_schema,
            Flow => flow_schema,
            Step => step_schema,
            Case => case_schema,
            BatchConfig => batch_config_schema,
            ValidationError => validation_error_schema,
        ]
    }

    #[test]
    fn every_schema_converts_back_to_the_json_it_was_written_as() {
        for (name, written, schema) in every() {
            assert_eq!(serde_json::to_value(&schema).unwrap(), written, "{name}");
        }
    }

    #[test]
    fn validation_error_fields_are_the_schema_properties() {
        let schema = serde_json::to_value(ValidationError::schema()).unwrap();
        let properties = schema["properties"].as_object().unwrap();
        let every = [
            ValidationError::EmptyId { index: 0 },
            ValidationError::DuplicateId { id: "a".into() },
            ValidationError::UnknownDependency {
                step: "a".into(),
                dep: "b".into(),
            },
            ValidationError::Cycle {
                steps: vec!["a".into()],
            },
            ValidationError::UnknownCaseStep {
                step: "a".into(),
                case: "c".into(),
                target: "t".into(),
            },
            ValidationError::UnknownDefaultBranchStep {
                step: "a".into(),
                target: "t".into(),
            },
            ValidationError::DuplicateCaseLabel {
                step: "a".into(),
                label: "l".into(),
            },
            ValidationError::UnknownLoopBodyStep {
                step: "a".into(),
                target: "t".into(),
            },
            ValidationError::CasesOnNonSwitch { step: "a".into() },
            ValidationError::LoopOnNonDoWhile { step: "a".into() },
            ValidationError::ZeroBatchCap,
        ];
        assert_eq!(every.len(), VALIDATION_CODES.len());
        let json = crate::flow::validation_errors_json(&every);
        for (value, code) in json.iter().zip(VALIDATION_CODES) {
            assert_eq!(value["code"], *code);
            for key in value.as_object().unwrap().keys() {
                assert!(properties.contains_key(key), "{code}: {key}");
            }
        }
    }

    #[test]
    fn schema_fields_are_the_decoders_fields() {
        // A body with every property the schema lists decodes; one more
        // property is refused. (The values are the schema's types.)
        let edit = json!({"content": "a", "old": "a", "new": "b", "replace_all": null,
                          "edits": null, "path": null, "guards": true});
        assert!(decode_object::<EditRequest>(edit).is_ok());
        let batch = json!({"content": "a", "edits": [{"old": "a", "new": "b", "replaceAll": null}, ["a", "b", null]],
                           "old": null, "new": null, "replace_all": null});
        assert!(decode_object::<EditRequest>(batch).is_ok());
        let step = json!({"id": "a", "kind": "do_while", "deps": [], "trigger_rule": "always",
            "batch": null, "max_retries": null, "timeout": 18446744073709551615u64,
            "cases": [{"label": "l", "steps": [], "condition": {"x": 1}}], "default_branch": [],
            "loop_body": [], "loop_max_iterations": 4294967295u64, "loop_condition": null, "when": 3});
        let spec = json!({"steps": [step], "batch_config": {"max_concurrent": null, "join_rule": "all_done"}});
        let decoded = flow(spec).unwrap();
        assert_eq!(decoded.conditions.len(), 3);
        let hashline = json!({"content": "a", "edits": [
            {"op": "replace", "pos": "1#ZZ", "end": null, "lines": "x"},
            {"op": "append", "pos": null, "lines": []},
            {"op": "prepend", "lines": ["y"]}]});
        assert!(decode_object::<crate::json::HashlineApplyRequest>(hashline).is_ok());
    }
}
