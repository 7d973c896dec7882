//! The JSON Schema of the battle spec's wire format (feature `openapi`): what
//! [`BattleSpec::from_json`] accepts, so the server names it as
//! `POST /api/battles`'s body and the faces' input types are made from it
//! (`coderig::json::inputs`).
//!
//! Written as JSON, as `crate::json::schema` writes its hand schemas: one
//! variant per battle type, so what only one type takes is stated, each
//! with `additionalProperties: false`, as strict as the decoder. What no
//! schema can say — unique contestants, a project under the project roots
//! that is a git repository, identities the registry knows — is checked
//! when the battle starts.

use super::spec::{BattleSpec, ContestantSpec, OracleSpec, MAX_INSTRUCTION_CHARS};
use crate::json::schema::{duration_of, from_json, network_pattern, WS};
use serde_json::{json, Value};
use std::borrow::Cow;
use utoipa::openapi::schema::Schema;
use utoipa::openapi::RefOr;
use utoipa::{PartialSchema, ToSchema};

/// Not blank: a character that is not whitespace.
fn text(description: &str) -> Value {
    json!({"type": "string", "pattern": format!("[^{WS}]"), "description": description})
}

/// The decoder reads `null` as "not given": every optional field takes it.
fn optional(schema: Value) -> Value {
    json!({"anyOf": [schema, {"type": "null"}]})
}

/// What reaches the operating system (a path, a shell command): not blank,
/// and no NUL, which no path or command can hold.
fn os_text(description: &str) -> Value {
    json!({"type": "string", "pattern": format!("^[^\\x00]*[^{WS}\\x00][^\\x00]*$"), "description": description})
}

fn reference(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

fn contestant_schema() -> Value {
    json!({
        "type": "object", "additionalProperties": false, "required": ["identity", "model"],
        "description": "A contestant: an agent, its model and optionally its own instruction.",
        "properties": {
            "identity": text("A configured agent's identity."),
            "model": text("The model it runs."),
            "instruction": optional(json!({
                "type": "string", "pattern": format!("[^{WS}]"), "maxLength": MAX_INSTRUCTION_CHARS,
                "description": "This contestant's own instruction: its agent receives the battle's prompt, a blank line, then this text (prompt + \"\\n\\n\" + instruction); the other contestants do not see it."})),
        }
    })
}

fn oracle_schema() -> Value {
    let given = |key: &str| json!({"type": "object", "required": [key], "properties": {key: {"type": "string"}}});
    // allOf: utoipa's object schema has no `anyOf` of its own.
    json!({
        "description": "Commands that test each contestant's patch on a fresh checkout of the base: repro, suite or both.",
        "allOf": [
            {"type": "object", "additionalProperties": false,
             "properties": {
                 "repro": optional(os_text("Fails on the base, passes once the task is done.")),
                 "suite": optional(os_text("The project's test suite.")),
                 "timeout": duration_of("Each command's timeout (default 10 min).", false),
                 "network": {"type": ["string", "null"], "pattern": network_pattern(),
                             "description": "What the commands may reach: \"deny\" (the default: a network namespace of their own, the host's listeners unreachable), \"allow\", or \"loopback:PORT[,PORT...]\" (TCP to those ports only)."}}},
            {"anyOf": [given("repro"), given("suite")]},
        ]
    })
}

fn battle_spec_schema() -> Value {
    let judge = json!({
        "type": "object", "additionalProperties": false, "required": ["identity", "model"],
        "description": "The agent that writes digests and judges.",
        "properties": {"identity": text("A configured agent's identity."), "model": text("The model it runs.")}
    });
    let common = json!({
        "prompt": text("The task every contestant gets."),
        "contestants": {"type": "array", "minItems": 2, "maxItems": 6, "items": reference("ContestantSpec"),
            "description": "2 to 6 unique (identity, model) pairs, each with a distinct results folder, each with an optional instruction of its own."},
        "judge": judge,
        "contestant_timeout": duration_of("Each contestant's wall-clock limit (default 20 min).", false),
        "keep_worktrees": {"type": ["boolean", "null"], "description": "Keep the worktrees after archiving (default false)."},
    });
    let variant = |battle_type: &str, extra: Value, required: &[&str]| {
        let mut properties = common.clone();
        if let (Some(map), Value::Object(extra)) = (properties.as_object_mut(), extra) {
            map.insert(
                "battle_type".into(),
                json!({"type": "string", "enum": [battle_type]}),
            );
            map.extend(extra);
        }
        json!({"type": "object", "title": battle_type, "additionalProperties": false,
               "required": required, "properties": properties})
    };
    let coding = variant(
        "coding",
        json!({
            "project": os_text("The git repository (its top level), under one of the project roots (relative: to the first)."),
            "base": optional(json!({"type": "string", "pattern": "^(?!-)(?!.*\\.\\.)[^\\s\\x00-\\x1f\\x7f-\\x9f]+$",
                     "description": "A revision (default HEAD) or \"snapshot\" (the working tree as it is)."})),
            "oracle": optional(reference("OracleSpec")),
        }),
        &["battle_type", "prompt", "project", "contestants", "judge"],
    );
    let qa = variant(
        "qa",
        json!({"project": optional(os_text("Optional: a project the question is about (under a project root)."))}),
        &["battle_type", "prompt", "contestants", "judge"],
    );
    json!({
        "description": "A battle spec: a coding or a qa battle (DESIGN \"arena runtime\").",
        "oneOf": [coding, qa]
    })
}

impl PartialSchema for BattleSpec {
    fn schema() -> RefOr<Schema> {
        from_json(battle_spec_schema())
    }
}

impl ToSchema for BattleSpec {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("BattleSpec")
    }

    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push((
            ContestantSpec::name().into_owned(),
            ContestantSpec::schema(),
        ));
        schemas.push((OracleSpec::name().into_owned(), OracleSpec::schema()));
    }
}

impl PartialSchema for ContestantSpec {
    fn schema() -> RefOr<Schema> {
        from_json(contestant_schema())
    }
}

impl ToSchema for ContestantSpec {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("ContestantSpec")
    }
}

impl PartialSchema for OracleSpec {
    fn schema() -> RefOr<Schema> {
        from_json(oracle_schema())
    }
}

impl ToSchema for OracleSpec {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("OracleSpec")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn every_schema_converts_back_to_the_json_it_was_written_as() {
        for (written, read) in [
            (battle_spec_schema(), BattleSpec::schema()),
            (contestant_schema(), ContestantSpec::schema()),
            (oracle_schema(), OracleSpec::schema()),
        ] {
            assert_eq!(serde_json::to_value(read).unwrap(), written);
        }
    }

    #[test]
    fn every_key_the_schema_lists_decodes_and_no_other() {
        let contestants = json!([
            {"identity": "a", "model": "m", "instruction": "add a test"},
            {"identity": "b", "model": "m", "instruction": null},
        ]);
        let judge = json!({"identity": "j", "model": "m"});
        let coding = json!({"battle_type": "coding", "prompt": "p", "project": "/tmp/p", "base": "HEAD",
            "contestants": contestants, "judge": judge, "contestant_timeout": "20m", "keep_worktrees": false,
            "oracle": {"repro": "false", "suite": "true", "timeout": 60, "network": "loopback:80"}});
        let qa = json!({"battle_type": "qa", "prompt": "p", "project": "/tmp/p", "contestants": contestants,
            "judge": judge, "contestant_timeout": 5, "keep_worktrees": true});
        let schema = battle_spec_schema();
        for (spec, variant) in [(&coding, 0), (&qa, 1)] {
            BattleSpec::from_json(spec).unwrap();
            let props = schema["oneOf"][variant]["properties"].as_object().unwrap();
            let given: BTreeSet<&String> = spec.as_object().unwrap().keys().collect();
            let listed: BTreeSet<&String> = props.keys().collect();
            assert_eq!(
                given, listed,
                "the {variant}th variant's keys are the decoder's"
            );
            // A key of the other variant only is refused by the decoder.
            for key in schema["oneOf"][1 - variant]["properties"]
                .as_object()
                .unwrap()
                .keys()
            {
                if !props.contains_key(key) {
                    let mut bad = spec.clone();
                    bad[key] = json!("HEAD");
                    assert!(BattleSpec::from_json(&bad).is_err(), "{key}");
                }
            }
        }
        let keys = |v: &Value| {
            v.as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect::<BTreeSet<_>>()
        };
        assert_eq!(
            keys(&contestant_schema()["properties"]),
            keys(&contestants[0])
        );
        assert_eq!(
            keys(&oracle_schema()["allOf"][0]["properties"]),
            keys(&coding["oracle"])
        );
    }
}
