//! The shared vectors (`tests/vectors/*.json`) over real HTTP on 127.0.0.1.
//!
//! The HTTP runner of the four (README of `tests/vectors/`, whose reference
//! runner is `crates/core/tests/vectors.rs`): every case whose op has a
//! route is sent as that route's request body (the case's `input`) to the
//! real router served on an ephemeral
//! port, and the answer is compared with `expect` (the listed fields) or
//! `error` (kind, code, message when given, each given detail; the status
//! must be the kind's `http_status`). The ops without a route (the pure
//! flow, arena and model decisions, `hashline_parse_ref`, and
//! `flow_validate`: the route takes the runtime `FlowSpec`) are skipped and counted;
//! an op the table does not know, or an input field its row does not list,
//! fails the vector.

mod common;

use coderig::ErrorKind;
use coderig_server::Config;
use common::spawn_server;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The files of the common format (`hashline.json` keeps its own layout:
/// its xxhash32 cases run in `e2e.rs`, its format cases below).
const FILES: &[&str] = &[
    "edit.json",
    "locate.json",
    "guards.json",
    "hashline_ops.json",
    "flow.json",
    "arena.json",
    "model.json",
    "errors.json",
];

/// Absolute tolerance of every number compared.
const TOLERANCE: f64 = 1e-9;

/// The ops with a route: their route and the input fields their row lists.
const ROUTED: &[(&str, &str, &[&str])] = &[
    (
        "apply_edit",
        "/api/edit",
        &["content", "old", "new", "replace_all", "path", "guards"],
    ),
    (
        "apply_edits",
        "/api/edit",
        &["content", "edits", "path", "guards"],
    ),
    ("locate", "/api/locate", &["content", "needle"]),
    (
        "check_guards",
        "/api/guards/check",
        &["original", "updated", "path"],
    ),
    ("hashline_format", "/api/hashline/format", &["content"]),
    (
        "hashline_apply",
        "/api/hashline/apply",
        &["content", "edits"],
    ),
    (
        "hashline_validate",
        "/api/hashline/validate",
        &["content", "refs"],
    ),
    ("xxhash32", "/api/xxhash32", &["data", "seed"]),
];

/// The ops of the table with no HTTP route.
const UNROUTED: &[&str] = &[
    "hashline_parse_ref",
    // The pure `flow::validate` of a declarative `Flow` (core and Python
    // runners); `POST /api/flows/validate` takes the runtime `FlowSpec`
    // since its CEL conditions are compiled (crates/server/tests/api.rs).
    "flow_validate",
    "match_model",
    "classify_error",
    "flow_ready_steps",
    "flow_evaluate_trigger_rule",
    "flow_is_run_complete",
    "flow_is_stuck",
    "flow_scheduler",
    "flow_should_retry",
    "flow_reconcile_resume_step",
    "arena_classify_lane",
    "arena_dispatch_now",
    "arena_is_battle_complete",
    "arena_compute_benchmark",
    "arena_sanitize_slug",
    "arena_contestant_dir",
    "arena_reconcile_contestant_resume",
    "arena_extract_winner",
    "arena_extract_verdict",
    "arena_should_name_winner",
];

fn vectors_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors")
}

fn load(file: &str) -> Value {
    let path = vectors_dir().join(file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{file} is not JSON: {e}"))
}

fn cases(file: &str) -> Vec<Value> {
    let top = load(file);
    let cases = top["cases"]
        .as_array()
        .unwrap_or_else(|| panic!("{file}: needs a list of `cases`"))
        .clone();
    assert!(!cases.is_empty(), "{file}: has no case");
    cases
}

/// What a route answered: the status and the JSON body.
struct Answer {
    status: u16,
    body: Value,
}

async fn post(client: &reqwest::Client, base: &str, route: &str, body: &Value) -> Answer {
    let response = client
        .post(format!("{base}{route}"))
        .json(body)
        .send()
        .await
        .unwrap_or_else(|e| panic!("POST {route}: {e}"));
    let status = response.status().as_u16();
    let body = response
        .json()
        .await
        .unwrap_or_else(|e| panic!("POST {route}: the answer is not JSON: {e}"));
    Answer { status, body }
}

/// The answer of a successful call, in the fields of the op's row.
fn answer_fields(op: &str, input: &Map<String, Value>, body: &Value) -> Result<Value, String> {
    Ok(match op {
        "apply_edit" | "apply_edits" => body.clone(),
        "locate" => {
            let content = input["content"].as_str().unwrap_or_default();
            // The route's offsets are UTF-8 bytes; the row's `text` is the
            // matched substring.
            let text = match (body["start"].as_u64(), body["end"].as_u64()) {
                (Some(start), Some(end)) => content
                    .get(start as usize..end as usize)
                    .map(|t| json!(t))
                    .ok_or_else(|| format!("offsets {start}..{end} do not cut {content:?}"))?,
                _ => Value::Null,
            };
            let nearest = match &body["nearest"] {
                Value::Null => Value::Null,
                n => json!([n["first_line"], n["last_line"]]),
            };
            json!({
                "kind": body["kind"], "text": text, "count": body["count"],
                "nearest": nearest, "score": body["score"], "start": body["start"],
                "end": body["end"], "candidates": body["candidates"],
            })
        }
        "check_guards" => {
            let kinds: Vec<Value> = body["violations"]
                .as_array()
                .ok_or("no `violations` list")?
                .iter()
                .map(|v| v["kind"].clone())
                .collect();
            json!({ "violations": kinds })
        }
        "hashline_format" => json!({ "formatted": body["formatted"] }),
        "hashline_apply" => json!({ "content": body["content"] }),
        "hashline_validate" => {
            if body != &json!({"ok": true}) {
                return Err(format!("expected {{\"ok\": true}}, got {body}"));
            }
            json!({})
        }
        "xxhash32" => json!({ "hash": body["hash"] }),
        other => return Err(format!("no answer fields for {other}")),
    })
}

/// Compares two JSON values: numbers within [`TOLERANCE`], everything else
/// exactly (objects key by key, both ways). Returns where they differ.
fn differs(expected: &Value, actual: &Value, at: &str) -> Option<String> {
    match (expected, actual) {
        (Value::Number(e), Value::Number(a)) => {
            let (e, a) = (e.as_f64()?, a.as_f64()?);
            ((e - a).abs() > TOLERANCE).then(|| format!("{at}: expected {e}, got {a}"))
        }
        (Value::Array(e), Value::Array(a)) => {
            if e.len() != a.len() {
                return Some(format!("{at}: expected {expected}, got {actual}"));
            }
            e.iter()
                .zip(a)
                .enumerate()
                .find_map(|(i, (e, a))| differs(e, a, &format!("{at}[{i}]")))
        }
        (Value::Object(e), Value::Object(a)) => {
            let keys: BTreeSet<&String> = e.keys().chain(a.keys()).collect();
            keys.into_iter().find_map(|k| match (e.get(k), a.get(k)) {
                (Some(ev), Some(av)) => differs(ev, av, &format!("{at}.{k}")),
                (Some(_), None) => Some(format!("{at}.{k}: expected, but absent")),
                (None, Some(av)) => Some(format!("{at}.{k}: unexpected {av}")),
                (None, None) => None,
            })
        }
        _ => (expected != actual).then(|| format!("{at}: expected {expected}, got {actual}")),
    }
}

fn compare_expect(expect: &Value, answer: &Value) -> Result<(), String> {
    let fields = expect.as_object().ok_or("`expect` must be an object")?;
    for (key, expected) in fields {
        let actual = answer
            .get(key)
            .ok_or_else(|| format!("`expect.{key}` is not a field of this op's answer {answer}"))?;
        if let Some(d) = differs(expected, actual, key) {
            return Err(format!("{d}\n  answer: {answer}"));
        }
    }
    Ok(())
}

/// Compares a case's `error` with an HTTP error answer.
fn compare_error(expected: &Value, answer: &Answer) -> Result<(), String> {
    let fields = expected.as_object().ok_or("`error` must be an object")?;
    if let Some(unknown) = fields
        .keys()
        .find(|k| !["kind", "code", "message", "details"].contains(&k.as_str()))
    {
        return Err(format!("unknown field `error.{unknown}`"));
    }
    let error = &answer.body["error"];
    let shown = || format!("\n  answer: {} {}", answer.status, answer.body);
    if answer.body["ok"] != json!(false) || !error.is_object() {
        return Err(format!("expected an error{}", shown()));
    }
    if fields.get("kind") != error.get("kind") || fields.get("code") != error.get("code") {
        return Err(format!(
            "expected {}/{}{}",
            fields["kind"],
            fields["code"],
            shown()
        ));
    }
    let kind: ErrorKind = error["kind"]
        .as_str()
        .and_then(|k| k.parse().ok())
        .ok_or_else(|| format!("not a core kind{}", shown()))?;
    if answer.status != kind.http_status() {
        return Err(format!(
            "status {} for {kind}, expected {}",
            answer.status,
            kind.http_status()
        ));
    }
    if let Some(message) = fields.get("message") {
        if Some(message) != error.get("message") {
            return Err(format!(
                "message differs:\n  expected {message}\n  got      {}",
                error["message"]
            ));
        }
    }
    if let Some(details) = fields.get("details") {
        let details = details
            .as_object()
            .ok_or("`error.details` must be an object")?;
        for (key, expected) in details {
            let got = error
                .get(key)
                .ok_or_else(|| format!("detail `{key}` is absent{}", shown()))?;
            if let Some(d) = differs(expected, got, &format!("details.{key}")) {
                return Err(format!("{d}{}", shown()));
            }
        }
    }
    Ok(())
}

/// How a case went.
enum Outcome {
    Passed,
    Skipped,
}

async fn run_case(client: &reqwest::Client, base: &str, case: &Value) -> Result<Outcome, String> {
    let fields = case.as_object().ok_or("a case must be an object")?;
    if let Some(unknown) = fields
        .keys()
        .find(|k| !["name", "op", "input", "expect", "error"].contains(&k.as_str()))
    {
        return Err(format!("unknown case field `{unknown}`"));
    }
    let op = case["op"].as_str().ok_or("a case needs a string `op`")?;
    if UNROUTED.contains(&op) {
        return Ok(Outcome::Skipped);
    }
    let (route, allowed) = ROUTED
        .iter()
        .find(|(name, _, _)| *name == op)
        .map(|(_, route, allowed)| (*route, *allowed))
        .ok_or_else(|| format!("unknown op {op:?}"))?;
    let input = case["input"]
        .as_object()
        .ok_or("`input` must be an object")?;
    if let Some(unknown) = input.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(format!(
            "{op}: unknown input field `{unknown}` (the op takes {allowed:?})"
        ));
    }
    // The input is the request body.
    let body = Value::Object(input.clone());
    let answer = post(client, base, route, &body).await;
    match (fields.get("expect"), fields.get("error")) {
        (Some(_), Some(_)) => Err("a case has `expect` or `error`, not both".into()),
        (None, None) => Err("a case needs `expect` or `error`".into()),
        (Some(expect), None) => {
            if answer.status != 200 || answer.body["ok"] != json!(true) {
                return Err(format!(
                    "unexpected error: {} {}",
                    answer.status, answer.body
                ));
            }
            compare_expect(expect, &answer_fields(op, input, &answer.body)?)?;
            Ok(Outcome::Passed)
        }
        (None, Some(error)) => {
            compare_error(error, &answer)?;
            Ok(Outcome::Passed)
        }
    }
}

#[tokio::test]
async fn every_routed_vector_passes_over_http() {
    let base = spawn_server(Config::default()).await;
    let client = reqwest::Client::new();
    let mut failures = Vec::new();
    let mut passed = 0;
    let mut skipped: BTreeMap<String, usize> = BTreeMap::new();
    for file in FILES {
        for (i, case) in cases(file).iter().enumerate() {
            let name = case["name"].as_str().unwrap_or("<unnamed>");
            match run_case(&client, &base, case).await {
                Ok(Outcome::Passed) => passed += 1,
                Ok(Outcome::Skipped) => {
                    *skipped
                        .entry(case["op"].as_str().unwrap_or_default().to_owned())
                        .or_default() += 1;
                }
                Err(why) => {
                    failures.push(format!("{file} case {i} {name:?} ({}): {why}", case["op"]))
                }
            }
        }
    }
    let skipped_total: usize = skipped.values().sum();
    println!("HTTP vectors: {passed} passed, {skipped_total} skipped (no route): {skipped:?}");
    assert!(
        failures.is_empty(),
        "{} failed ({passed} passed):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    assert!(passed >= 100, "only {passed} routed cases ran");
    // Only the ops without a route are ever skipped.
    assert!(skipped.keys().all(|op| UNROUTED.contains(&op.as_str())));
}

#[tokio::test]
async fn the_hashline_format_vectors_pass_over_http() {
    let vectors = load("hashline.json");
    let cases = vectors["format"].as_array().expect("a `format` list");
    assert!(!cases.is_empty());
    let base = spawn_server(Config::default()).await;
    let client = reqwest::Client::new();
    for case in cases {
        let answer = post(
            &client,
            &base,
            "/api/hashline/format",
            &json!({"content": case["content"]}),
        )
        .await;
        assert_eq!(answer.status, 200, "{case}: {}", answer.body);
        assert_eq!(answer.body["formatted"], case["formatted"], "{case}");
    }
}

#[test]
fn the_op_table_is_the_readme_table() {
    // Every op of the README's table is either routed here or skipped,
    // never both: a new op must be placed in one of the two lists.
    let readme = std::fs::read_to_string(vectors_dir().join("README.md")).unwrap();
    let documented: BTreeSet<&str> = readme
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|rest| rest.split('`').next())
        .collect();
    let here: BTreeSet<&str> = ROUTED
        .iter()
        .map(|(op, _, _)| *op)
        .chain(UNROUTED.iter().copied())
        .collect();
    assert_eq!(documented, here);
    for (op, route, _) in ROUTED {
        let row = readme
            .lines()
            .find(|line| line.starts_with(&format!("| `{op}` |")))
            .unwrap();
        assert!(row.contains(&format!("`POST {route}`")), "{op}: {row}");
    }
}
