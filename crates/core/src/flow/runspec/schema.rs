//! The JSON Schema of the flow spec's wire format (feature `openapi`), so
//! the server can name [`FlowSpec`] as a request body.
//!
//! Written as JSON, as `crate::json::schema` writes its hand schemas: one
//! `oneOf` branch per step kind with that kind's keys only and
//! `additionalProperties: false`, as strict as the decoder. What no schema
//! can say — unique ids, known dependencies, no cycle, `retry.max` at least
//! `initial`, the syntax of conditions and templates — is checked by
//! [`FlowSpec::compile`] and answered as problems, not as a 4xx.

use super::decode::KIND_KEYS;
use super::*;
use crate::json::schema::{duration_of, from_json, network_pattern, WS};
use serde_json::{json, Map, Value};
use std::borrow::Cow;
use utoipa::openapi::schema::Schema;
use utoipa::openapi::RefOr;
use utoipa::{PartialSchema, ToSchema};

fn text(description: &str) -> Value {
    json!({"type": "string", "pattern": format!("[^{WS}]"), "description": description})
}

fn opt_text(description: &str) -> Value {
    json!({"type": ["string", "null"], "pattern": format!("[^{WS}]"), "description": description})
}

/// Text that reaches the operating system (a path, a command): not blank
/// and without NUL, which the decoder refuses (`Problems::os_text`).
fn os_text_pattern() -> String {
    format!("^[^\\x00]*[^{WS}\\x00][^\\x00]*$")
}

fn os_text(description: &str) -> Value {
    json!({"type": "string", "pattern": os_text_pattern(), "description": description})
}

fn opt_os_text(description: &str) -> Value {
    json!({"type": ["string", "null"], "pattern": os_text_pattern(), "description": description})
}

/// Any text without NUL (a program's argument, an environment value).
const NO_NUL: &str = "^[^\\x00]*$";

fn id_pattern() -> &'static str {
    "^[A-Za-z0-9_-]{1,100}$"
}

fn ids(description: &str) -> Value {
    json!({"type": ["array", "null"], "items": {"type": "string", "pattern": format!("[^{WS}]")}, "description": description})
}

fn names(list: &[&str], description: &str) -> Value {
    let mut values: Vec<Value> = list.iter().map(|n| json!(n)).collect();
    values.push(Value::Null);
    json!({"type": ["string", "null"], "enum": values, "description": description})
}

/// A duration that must be more than zero.
fn duration(description: &str) -> Value {
    duration_of(description, false)
}

fn retry_schema() -> Value {
    json!({
        "type": ["object", "null"],
        "additionalProperties": false,
        "description": "When a failed or timed-out attempt is retried. `max` must be at least `initial`.",
        "properties": {
            "max_attempts": {"type": ["integer", "null"], "minimum": 1, "maximum": MAX_RETRY_ATTEMPTS, "description": "Attempts in all (default 1: no retry)."},
            // Zero is a valid first wait (retry at once), as the decoder reads it.
            "initial": duration_of("The first wait (default 1s; 0: at once).", true),
            // No maximum: the decoder takes any finite multiplier from 1, and
            // the waits are capped at `max`.
            "multiplier": {"type": ["number", "null"], "minimum": 1, "description": "Each next wait is the last times this (default 2)."},
            "max": duration("The longest wait (default 5m)."),
            "on": {"type": ["array", "null"], "items": {"type": "string", "enum": RetryOn::NAMES}, "minItems": 1, "maxItems": 2, "uniqueItems": true,
                   "description": "Which endings are retried (default both)."},
        }
    })
}

/// A command step's `sandbox:` as the decoder reads it (`decode::sandbox`).
fn sandbox_schema() -> Value {
    let paths = |description: &str| json!({"type": ["array", "null"], "items": {"type": "string", "pattern": "^/[^\\x00]*$"}, "description": description});
    let limit = |description: &str| json!({"type": ["integer", "null"], "minimum": 1, "maximum": MAX_SANDBOX_LIMIT, "description": description});
    json!({
        "type": ["object", "null"],
        "additionalProperties": false,
        "description": "What the step states about its sandbox (default: write only its cwd and a private TMPDIR, no network but its own loopback, credential stores under $HOME unreadable). Paths must exist when a run starts, writable ones under a project root.",
        "properties": {
            "mode": names(&["enforce", "auto", "off"], "enforce: refuse what the kernel cannot confine; auto: run with what it can, and say so; off: unconfined (default: the server's [sandbox] mode)."),
            "network": {"type": ["string", "null"], "pattern": network_pattern(),
                        "description": "allow, deny (default: its own loopback only) or loopback:PORT[,PORT...] (TCP to those ports only)."},
            "writable": paths("Extra writable paths (absolute, existing, under a project root)."),
            "readable": paths("Credential stores made readable (absolute, existing)."),
            "limits": {
                "type": ["object", "null"],
                "additionalProperties": false,
                "description": "Resource limits of each process of the tree.",
                "properties": {
                    "open_files": limit("Open file descriptors (RLIMIT_NOFILE)."),
                    "processes": limit("Processes of the tree's user (RLIMIT_NPROC)."),
                    "file_size": limit("Largest file written, in bytes (RLIMIT_FSIZE)."),
                    "address_space": limit("Address space, in bytes (RLIMIT_AS)."),
                    "tmp_size": limit("Size of the private TMPDIR, in bytes (a tmpfs of its own)."),
                }
            },
        }
    })
}

/// The keys of every step kind, and each kind's own. `command` has two
/// forms, `argv` and `shell` (exactly one of them).
fn kind_properties(kind: &str, form: Option<&str>) -> Map<String, Value> {
    let mut p = Map::new();
    let mut put = |k: &str, v: Value| {
        p.insert(k.to_owned(), v);
    };
    put(
        "id",
        json!({"type": "string", "pattern": id_pattern(), "description": "Unique id (hyphens allowed)."}),
    );
    put("kind", json!({"type": "string", "enum": [kind]}));
    put("deps", ids("The steps this one waits for."));
    put(
        "trigger_rule",
        names(
            crate::flow::TriggerRule::NAMES,
            "How the dependencies decide (default all_success).",
        ),
    );
    put("batch", opt_text("The batch group."));
    put(
        "timeout",
        duration("Time limit per attempt: seconds, or \"90s\", \"20m\", \"500ms\"."),
    );
    put("retry", retry_schema());
    put(
        "when",
        opt_text("A CEL launch guard over {input, results, steps, iteration}."),
    );
    match kind {
        "agent" => {
            put("agent", text("The configured agent's identity."));
            put("model", opt_text("The model (default: the agent's)."));
            put("prompt", text("The prompt, a minijinja template."));
            put(
                "access",
                names(
                    crate::agent::Access::NAMES,
                    "What the agent may do (default read_only).",
                ),
            );
            put("workdir", opt_os_text("The work dir, a template."));
        }
        "command" => {
            if form == Some("argv") {
                put(
                    "argv",
                    json!({"type": "array", "minItems": 1, "items": {"type": "string", "pattern": NO_NUL},
                           "description": "The program and its arguments, each a template (no NUL)."}),
                );
            } else {
                put("shell", os_text("A sh command line, a template."));
            }
            put("cwd", opt_os_text("The working directory, a template."));
            put(
                "env",
                json!({"type": ["object", "null"], "additionalProperties": {"type": "string", "pattern": NO_NUL},
                              "description": "Extra environment variables (a name has no `=` or NUL); values are templates."}),
            );
            put("sandbox", sandbox_schema());
        }
        "approval" => put(
            "message",
            opt_text("What the approver is asked, a template."),
        ),
        "switch" => {
            put(
                "cases",
                json!({"type": ["array", "null"], "items": {
                "type": "object", "additionalProperties": false, "required": ["label", "condition"],
                "properties": {
                    "label": text("The case's name."),
                    "condition": text("A CEL condition."),
                    "steps": ids("Every step of its branch."),
                }
            }, "description": "Tried in order; the first true case is taken."}),
            );
            put("default", ids("The steps run when no case is true."));
        }
        "do_while" => {
            put(
                "body",
                json!({"type": "array", "minItems": 1, "items": {"type": "string", "pattern": format!("[^{WS}]")},
                               "description": "The steps of each iteration."}),
            );
            put("condition", text("CEL: iterate again while it is true."));
            put(
                "max_iterations",
                json!({"type": ["integer", "null"], "minimum": 1, "maximum": MAX_LOOP_ITERATIONS,
                                         "description": "The iteration cap (default 100)."}),
            );
        }
        _ => {}
    }
    p
}

fn step_schema() -> Value {
    let forms = KIND_KEYS.iter().flat_map(|(kind, _)| match *kind {
        "command" => vec![(*kind, Some("argv")), (*kind, Some("shell"))],
        _ => vec![(*kind, None)],
    });
    let variants: Vec<Value> = forms
        .map(|(kind, form)| {
            let mut required = vec!["id", "kind"];
            required.extend(match (kind, form) {
                ("agent", _) => &["agent", "prompt"][..],
                ("command", Some("argv")) => &["argv"][..],
                ("command", _) => &["shell"][..],
                ("do_while", _) => &["body", "condition"][..],
                _ => &[][..],
            });
            let title = match form {
                Some(f) => format!("{kind} ({f})"),
                None => kind.to_owned(),
            };
            json!({
                "type": "object",
                "title": title,
                "additionalProperties": false,
                "required": required,
                "properties": kind_properties(kind, form),
            })
        })
        .collect();
    json!({"description": "One step: `kind` decides which keys it has.", "oneOf": variants})
}

fn flow_spec_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["steps"],
        "description": "A runtime flow spec (YAML or JSON): steps with CEL conditions and minijinja templates.",
        "properties": {
            "name": {"type": ["string", "null"], "pattern": "^[A-Za-z0-9_.-]{1,100}$"},
            "description": opt_text("What the flow is for."),
            "steps": {"type": "array", "minItems": 1, "maxItems": MAX_FLOW_STEPS, "items": step_schema()},
            "report": opt_text("The run's report, a minijinja template."),
            "batch_config": {
                "type": ["object", "null"],
                "additionalProperties": false,
                "properties": {
                    "max_concurrent": {"type": ["integer", "null"], "minimum": 0, "maximum": u32::MAX},
                    "join_rule": names(crate::flow::TriggerRule::NAMES, "How a batch group as a whole has succeeded."),
                }
            },
        }
    })
}

impl PartialSchema for FlowSpec {
    fn schema() -> RefOr<Schema> {
        from_json(flow_spec_schema())
    }
}

impl ToSchema for FlowSpec {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("FlowSpec")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_converts_back_to_the_json_it_was_written_as() {
        let written = flow_spec_schema();
        assert_eq!(serde_json::to_value(FlowSpec::schema()).unwrap(), written);
    }

    #[test]
    fn every_key_the_schema_lists_decodes() {
        // A spec using every key of every kind, values of the schema's types.
        let steps = json!([
            {"id": "a", "kind": "agent", "agent": "x", "prompt": "p", "model": "m", "access": "edit", "workdir": "w",
             "deps": [], "trigger_rule": "always", "batch": "b", "timeout": "5m", "when": "true",
             "retry": {"max_attempts": 2, "initial": 1, "multiplier": 1.5, "max": "10s", "on": ["failure"]}},
            {"id": "b", "kind": "command", "argv": ["ls"], "cwd": "/", "env": {"K": "v"},
             "sandbox": {"mode": "auto", "network": "loopback:8080", "writable": ["/tmp"], "readable": ["/"],
                         "limits": {"open_files": 64, "processes": 32, "file_size": 1024, "address_space": 1073741824, "tmp_size": 65536}}, "deps": [], "trigger_rule": "always", "batch": "b", "timeout": 1, "when": "true", "retry": {}},
            {"id": "c", "kind": "command", "shell": "ls", "cwd": "/", "env": {"K": "v"}, "sandbox": {}, "deps": [], "trigger_rule": "always", "batch": "b", "timeout": 1, "when": "true", "retry": {}},
            {"id": "d", "kind": "code", "deps": [], "trigger_rule": "always", "batch": "b", "timeout": 1, "when": "true", "retry": {}},
            {"id": "e", "kind": "approval", "message": "ok?", "deps": [], "trigger_rule": "always", "batch": "b", "timeout": 1, "when": "true", "retry": {}},
            {"id": "f", "kind": "switch", "cases": [{"label": "l", "condition": "true", "steps": ["d"]}], "default": ["e"], "deps": [], "trigger_rule": "always", "batch": "b", "timeout": 1, "when": "true", "retry": {}},
            {"id": "g", "kind": "do_while", "body": ["d"], "condition": "false", "max_iterations": 3, "deps": [], "trigger_rule": "always", "batch": "b", "timeout": 1, "when": "true", "retry": {}},
        ]);
        let spec = json!({"name": "n", "description": "d", "report": "r", "steps": steps,
                          "batch_config": {"max_concurrent": 2, "join_rule": "all_done"}});
        FlowSpec::from_json(&spec).unwrap();
        let schema = flow_spec_schema();
        let variants = schema["properties"]["steps"]["items"]["oneOf"]
            .as_array()
            .unwrap();
        let mut used = std::collections::BTreeSet::new();
        for step in spec["steps"].as_array().unwrap() {
            let kind = match step["kind"].as_str().unwrap() {
                "command" if step.get("argv").is_some() => "command (argv)",
                "command" => "command (shell)",
                other => other,
            };
            let variant = variants.iter().find(|v| v["title"] == kind).unwrap();
            let props = variant["properties"].as_object().unwrap();
            for key in step.as_object().unwrap().keys() {
                assert!(props.contains_key(key), "{key} of {step}");
                used.insert((kind, key.clone()));
            }
        }
        // And the schema lists no key the decoder would refuse.
        for variant in variants {
            let kind = variant["title"].as_str().unwrap();
            for key in variant["properties"].as_object().unwrap().keys() {
                assert!(used.contains(&(kind, key.clone())), "{kind}.{key} untested");
            }
        }
        // A command's `sandbox` and its `limits`: the decoder's keys, all
        // of them used above.
        let sandbox = &variants
            .iter()
            .find(|v| v["title"] == "command (argv)")
            .unwrap()["properties"]["sandbox"];
        let keys = |v: &Value| {
            let mut keys: Vec<String> = v["properties"]
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect();
            keys.sort();
            keys
        };
        let mut want: Vec<String> = super::super::decode::SANDBOX_KEYS
            .iter()
            .map(|k| k.to_string())
            .collect();
        want.sort();
        assert_eq!(keys(sandbox), want);
        let mut want: Vec<String> = super::super::decode::LIMIT_KEYS
            .iter()
            .map(|k| k.to_string())
            .collect();
        want.sort();
        assert_eq!(keys(&sandbox["properties"]["limits"]), want);
        let given = &spec["steps"][1]["sandbox"];
        assert_eq!(keys(sandbox).len(), given.as_object().unwrap().len());
        assert_eq!(
            keys(&sandbox["properties"]["limits"]).len(),
            given["limits"].as_object().unwrap().len()
        );
    }
}
