//! End-to-end tests of the capability routes over real HTTP on 127.0.0.1:
//! edit, locate, hashline, flow validation and the OpenAPI document.

mod common;

use coderig::hashline::line_hash;
use coderig_server::Config;
use common::{assert_error, json_of, spawn_server};
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::collections::BTreeSet;

/// POSTs `body` as JSON to `base` + `path`; returns status and JSON body.
async fn post(base: &str, path: &str, body: &Value) -> (StatusCode, Value) {
    let response = reqwest::Client::new()
        .post(format!("{base}{path}"))
        .json(body)
        .send()
        .await
        .unwrap();
    json_of(response).await
}

/// `LINE#HH` ref of line `n` (1-based) holding `text`.
fn fresh_ref(n: usize, text: &str) -> String {
    format!("{n}#{}", line_hash(n, text))
}

/// A well-formed ref of line `n` whose hash is not the line's.
fn stale_ref(n: usize, text: &str) -> String {
    let real = line_hash(n, text);
    let other = if real == "ZZ" { "PP" } else { "ZZ" };
    format!("{n}#{other}")
}

#[tokio::test]
async fn edit_applies_one_edit_and_reports_tier_and_count() {
    let base = spawn_server(Config::default()).await;
    let cases = [
        (
            json!({"content": "fn a() {}\nfn b() {}\n", "old": "fn b() {}", "new": "fn c() {}"}),
            "fn a() {}\nfn c() {}\n",
            "exact",
            1,
        ),
        (
            json!({"content": "x = 1\nx = 1\n", "old": "x = 1", "new": "y = $1", "replace_all": true}),
            "y = $1\ny = $1\n",
            "exact",
            2,
        ),
        (
            json!({"content": "if a:\n    go()\n", "old": "if a:\n  go()", "new": "if a:\n  stop()"}),
            "if a:\n    stop()\n",
            "whitespace",
            1,
        ),
    ];
    for (request, content, tier, replacements) in cases {
        let (status, body) = post(&base, "/api/edit", &request).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(
            body,
            json!({"ok": true, "content": content, "tier": tier, "replacements": replacements}),
            "{request}"
        );
    }
}

#[tokio::test]
async fn edit_applies_a_batch_atomically() {
    let base = spawn_server(Config::default()).await;
    let ok = json!({"content": "a\nb\nc\n", "edits": [{"old": "a", "new": "A"}, {"old": "c", "new": "C"}]});
    let (status, body) = post(&base, "/api/edit", &ok).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["content"], "A\nb\nC\n");
    assert_eq!(body["replacements"], 2);
    // the second edit is not found: nothing is applied, the refusal says so
    let refused = json!({"content": "a\nb\nc\n", "edits": [{"old": "a", "new": "A"}, {"old": "zzz", "new": "C"}]});
    let (status, body) = post(&base, "/api/edit", &refused).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_error(&body, "not_found");
}

#[tokio::test]
async fn every_edit_refusal_kind_has_its_status_and_details() {
    let base = spawn_server(Config::default()).await;
    let python = "import os\nimport sys\n\nprint(os.name, sys.path)\n";
    let cases = [
        (
            "/api/edit",
            json!({"content": "alpha\nbeta\n", "old": "gamma delta epsilon", "new": "x"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "not_found",
            "nearest",
        ),
        (
            "/api/edit",
            json!({"content": "x = 1\ny = 2\nx = 1\n", "old": "x = 1", "new": "x = 3"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "ambiguous",
            "lines",
        ),
        (
            "/api/edit",
            json!({"content": python, "old": "import os\nimport sys\n", "new": "", "path": "main.py"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "guard",
            "violations",
        ),
        (
            "/api/edit",
            json!({"content": "a\n", "old": "a", "new": "a"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "no_op",
            "message",
        ),
        (
            "/api/hashline/apply",
            json!({"content": "a\nb\n", "edits": [{"op": "replace", "pos": stale_ref(2, "b"), "lines": ["B"]}]}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "hashline_mismatch",
            "remaps",
        ),
        (
            "/api/edit",
            json!({"content": "a\n", "old": "", "new": "b"}),
            StatusCode::BAD_REQUEST,
            "invalid_input",
            "message",
        ),
        (
            "/api/edit",
            json!({"content": "a\n", "old": "a", "new": "b", "edits": [{"old": "a", "new": "b"}]}),
            StatusCode::BAD_REQUEST,
            "invalid_input",
            "message",
        ),
        (
            "/api/edit",
            json!({"content": "a\n"}),
            StatusCode::BAD_REQUEST,
            "invalid_input",
            "message",
        ),
    ];
    for (path, request, expected, kind, detail) in cases {
        let (status, body) = post(&base, path, &request).await;
        assert_eq!(status, expected, "{request}: {body}");
        assert_error(&body, kind);
        assert!(
            body["error"].get(detail).is_some(),
            "{kind} lacks {detail}: {body}"
        );
    }
}

#[tokio::test]
async fn refusal_details_carry_what_a_model_needs() {
    let base = spawn_server(Config::default()).await;
    let (_, body) = post(
        &base,
        "/api/edit",
        &json!({"content": "x = 1\ny = 2\nx = 1\n", "old": "x = 1", "new": "x = 3"}),
    )
    .await;
    assert_eq!(body["error"]["count"], 2);
    assert_eq!(body["error"]["lines"], json!([[1, 1], [3, 3]]));
    let stale = stale_ref(2, "b");
    let (_, body) = post(
        &base,
        "/api/hashline/apply",
        &json!({"content": "a\nb\n", "edits": [{"op": "replace", "pos": stale, "lines": ["B"]}]}),
    )
    .await;
    assert_eq!(body["error"]["remaps"][&stale], fresh_ref(2, "b"));
}

#[tokio::test]
async fn locate_reports_byte_offsets_and_lines() {
    let base = spawn_server(Config::default()).await;
    let content = "é = 1\nfoo()\nbar()\n";
    let (status, body) = post(
        &base,
        "/api/locate",
        &json!({"content": content, "needle": "foo()\nbar()"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // `é` is two UTF-8 bytes, so "foo()" starts at byte 7, not char 6
    assert_eq!(
        body,
        json!({"ok": true, "kind": "exact", "start": 7, "end": 18, "start_line": 2,
               "end_line": 3, "score": 1.0, "count": 1, "candidates": [], "nearest": null})
    );
    assert_eq!(&content.as_bytes()[7..18], b"foo()\nbar()");

    let (status, body) = post(
        &base,
        "/api/locate",
        &json!({"content": "a()\nb()\na()\n", "needle": "a()"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["kind"], "ambiguous");
    assert_eq!(body["count"], 2);
    assert_eq!(body["candidates"], json!([[1, 1], [3, 3]]));
    assert_eq!(body["start"], Value::Null);

    let content = "def handler(request):\n    return respond(request)\n";
    let (status, body) = post(
        &base,
        "/api/locate",
        &json!({"content": content, "needle": "def handler(reqest):\n    return respnd(request)\n\n\nzzz"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["kind"], "not_found");
    assert_eq!(body["count"], 0);
    assert!(body.get("nearest").is_some(), "{body}");
}

#[tokio::test]
async fn hashline_format_apply_and_validate_round_trip() {
    let base = spawn_server(Config::default()).await;
    let content = "a\nb\nc\n";
    let (status, body) = post(&base, "/api/hashline/format", &json!({"content": content})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({"ok": true, "formatted": coderig::hashline::format(content)})
    );
    assert!(body["formatted"]
        .as_str()
        .unwrap()
        .starts_with(&format!("{}|a\n", fresh_ref(1, "a"))));

    let edits = json!([
        {"op": "replace", "pos": fresh_ref(2, "b"), "lines": ["B1", "B2"]},
        {"op": "append", "lines": "end"}
    ]);
    let (status, body) = post(
        &base,
        "/api/hashline/apply",
        &json!({"content": content, "edits": edits}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let expected = coderig::hashline::apply(
        content,
        &serde_json::from_value::<Vec<coderig::hashline::HashlineEdit>>(edits).unwrap(),
    )
    .unwrap();
    assert_eq!(body, json!({"ok": true, "content": expected}));
    assert!(expected.contains("a\nB1\nB2\nc\n"), "{expected:?}");

    let refs = [fresh_ref(1, "a"), fresh_ref(3, "c")];
    let (status, body) = post(
        &base,
        "/api/hashline/validate",
        &json!({"content": content, "refs": refs}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body, json!({"ok": true}));
}

#[tokio::test]
async fn hashline_validate_refuses_stale_and_out_of_range_refs() {
    let base = spawn_server(Config::default()).await;
    let cases = [
        (
            json!({"content": "a\nb\n", "refs": [stale_ref(1, "a")]}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "hashline_mismatch",
        ),
        (
            json!({"content": "a\nb\n", "refs": ["99#ZZ"]}),
            StatusCode::BAD_REQUEST,
            "invalid_input",
        ),
        (
            json!({"content": "a\nb\n", "refs": ["not a ref"]}),
            StatusCode::BAD_REQUEST,
            "invalid_input",
        ),
    ];
    for (request, expected, kind) in cases {
        let (status, body) = post(&base, "/api/hashline/validate", &request).await;
        assert_eq!(status, expected, "{request}: {body}");
        assert_error(&body, kind);
    }
}

#[tokio::test]
async fn wrong_types_and_unknown_fields_are_4xx_json_on_every_route() {
    let base = spawn_server(Config::default()).await;
    let cases = [
        ("/api/edit", json!({"content": 1, "old": "a", "new": "b"})),
        (
            "/api/edit",
            json!({"content": "a", "old": "a", "new": "b", "extra": 1}),
        ),
        (
            "/api/edit",
            json!({"content": "a", "edits": [{"old": "a"}]}),
        ),
        (
            "/api/edit",
            json!({"content": "a", "old": "a", "new": "b", "guards": "yes"}),
        ),
        ("/api/edit", json!("not an object")),
        ("/api/edit", json!([1, 2, 3])),
        ("/api/locate", json!({"content": "a"})),
        ("/api/hashline/format", json!({"content": null})),
        (
            "/api/hashline/apply",
            json!({"content": "a", "edits": [{"op": "delete", "pos": "1#ZZ"}]}),
        ),
        (
            "/api/hashline/validate",
            json!({"content": "a", "refs": "1#ZZ"}),
        ),
        // A flow spec that is no object (an object gets the verdict: 200).
        (
            "/api/flows/validate",
            json!([[{"id": "a", "kind": "code"}]]),
        ),
        ("/api/flows/validate", json!("steps")),
    ];
    for (path, request) in cases {
        let (status, body) = post(&base, path, &request).await;
        assert!(
            status.is_client_error(),
            "{path} {request}: {status} {body}"
        );
        assert_eq!(body["error"]["kind"], "invalid_input", "{path} {request}");
        assert_error(&body, "invalid_input");
    }
    // malformed JSON on a capability route
    let response = reqwest::Client::new()
        .post(format!("{base}/api/edit"))
        .header("content-type", "application/json")
        .body("{\"content\": ")
        .send()
        .await
        .unwrap();
    let (status, body) = json_of(response).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_error(&body, "invalid_input");
}

#[tokio::test]
async fn oversize_edit_is_a_json_413() {
    let base = spawn_server(Config {
        max_body_bytes: 4096,
        ..Config::default()
    })
    .await;
    let small = json!({"content": "a\n".repeat(500), "old": "a", "new": "b", "replace_all": true});
    let (status, body) = post(&base, "/api/edit", &small).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let big = json!({"content": "a\n".repeat(4096), "old": "a", "new": "b", "replace_all": true});
    let (status, body) = post(&base, "/api/edit", &big).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_error(&body, "payload_too_large");
}

#[tokio::test]
async fn flow_validate_accepts_a_sound_flow() {
    let base = spawn_server(Config::default()).await;
    let flow = json!({
        "name": "review-it",
        "steps": [
            {"id": "plan", "kind": "agent", "agent": "claude", "prompt": "Plan {{ input.issue }}"},
            {"id": "route", "kind": "switch", "deps": ["plan"],
             "cases": [{"label": "small", "steps": ["quick"], "condition": "results.plan.contains(\"small\")"}],
             "default": ["thorough"]},
            {"id": "quick", "kind": "command", "deps": ["route"], "argv": ["echo", "{{ results[\"plan\"] }}"]},
            {"id": "thorough", "kind": "agent", "deps": ["route"], "agent": "claude", "prompt": "go",
             "retry": {"max_attempts": 3}, "timeout": "60s"},
            {"id": "join-all", "kind": "approval", "deps": ["quick", "thorough"], "trigger_rule": "none_failed_min_one_success"}
        ],
        "batch_config": {"max_concurrent": 2}
    });
    let (status, body) = post(&base, "/api/flows/validate", &flow).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({"ok": true, "valid": true, "errors": [], "name": "review-it", "steps": 5})
    );
}

#[tokio::test]
async fn flow_validate_lists_every_problem_with_its_path() {
    let base = spawn_server(Config::default()).await;
    let flow = json!({
        "steps": [
            {"id": "a", "kind": "code", "deps": ["c"]},
            {"id": "b", "kind": "code", "deps": ["a", "ghost"]},
            {"id": "c", "kind": "code", "deps": ["b"]},
            {"id": "s", "kind": "switch", "cases": [{"label": "x", "condition": "true", "steps": ["nowhere"]}]}
        ]
    });
    let (status, body) = post(&base, "/api/flows/validate", &flow).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["ok"], true);
    assert_eq!(body["valid"], false);
    assert_eq!(body["name"], Value::Null);
    assert_eq!(body["steps"], 4);
    let errors = body["errors"].as_array().unwrap();
    let paths: Vec<&str> = errors.iter().map(|e| e["path"].as_str().unwrap()).collect();
    assert_eq!(
        paths,
        ["steps[1].deps[1]", "steps[3].cases[0].steps[0]", "steps"],
        "{body}"
    );
    assert!(errors[0]["message"].as_str().unwrap().contains("ghost"));
    let cycle = errors[2]["message"].as_str().unwrap();
    assert!(cycle.starts_with("dependency cycle: "), "{cycle}");
    for id in ["a", "b", "c"] {
        assert!(cycle.contains(id), "{cycle}");
    }
    // The same list the core's compile gives every face.
    let core = coderig::flow::FlowSpec::from_json(&flow)
        .unwrap()
        .compile()
        .unwrap_err();
    let core_paths: Vec<&str> = core.details()["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["path"].as_str().unwrap())
        .collect();
    assert_eq!(core_paths, paths);
}

/// Decoding problems are the decoder's 400 (what the spec's schema refuses
/// is refused), with every problem and its path: unknown keys, keys of
/// another kind, wrong types, bad names.
#[tokio::test]
async fn flow_validate_refuses_decoding_problems_with_their_paths() {
    let base = spawn_server(Config::default()).await;
    let cases = [
        (
            json!({"steps": [{"id": "a", "kind": "robot"}]}),
            "steps[0].kind",
            "unknown step kind",
        ),
        (
            json!({"steps": [{"id": "a", "kind": "code", "trigger_rule": "sometimes"}]}),
            "steps[0].trigger_rule",
            "unknown trigger rule",
        ),
        (json!({"steps": "a"}), "steps", "expected an array"),
        (
            json!({"steps": [{"id": "a", "kind": "code", "dependencies": ["b"]}]}),
            "steps[0].dependencies",
            "unknown field `dependencies`",
        ),
        (
            json!({"steps": [["a", "code"]]}),
            "steps[0]",
            "expected an object",
        ),
        (
            json!({"steps": [{"id": "a", "kind": "agent", "agent": "x", "prompt": "p", "shell": "ls"}]}),
            "steps[0].shell",
            "only a command step has `shell`",
        ),
        (json!({"name": 3, "steps": []}), "name", "expected a string"),
    ];
    for (spec, path, message) in cases {
        let (status, body) = post(&base, "/api/flows/validate", &spec).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{spec}: {body}");
        assert_eq!(body["error"]["kind"], "invalid_input", "{spec}");
        assert_eq!(body["error"]["path"], path, "{spec}: {body}");
        let first = &body["error"]["problems"][0];
        assert_eq!(first["path"], path, "{spec}: {body}");
        assert!(
            first["message"].as_str().unwrap().contains(message),
            "{spec}: {body}"
        );
    }
}

/// Conditions and templates are compiled now: a bad one is a problem at its path.
#[tokio::test]
async fn flow_validate_compiles_conditions_and_templates() {
    let base = spawn_server(Config::default()).await;
    let spec = json!({"steps": [
        {"id": "a", "kind": "code", "when": "input.x =="},
        {"id": "l", "kind": "do_while", "deps": ["a"], "body": ["b"], "condition": "iteration < 3"},
        {"id": "b", "kind": "agent", "agent": "x", "prompt": "{{ results.a "},
        {"id": "s", "kind": "switch", "cases": [{"label": "x", "steps": ["a"], "condition": "results["}]}
    ], "report": "{% if %}"});
    let (status, body) = post(&base, "/api/flows/validate", &spec).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let paths: Vec<&str> = body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        [
            "steps[0].when",
            "steps[2].prompt",
            "steps[3].cases[0].condition",
            "report"
        ],
        "{body}"
    );
    assert!(body["errors"][0]["message"]
        .as_str()
        .unwrap()
        .starts_with("bad CEL expression"));
    assert!(body["errors"][1]["message"]
        .as_str()
        .unwrap()
        .starts_with("bad template"));
}

#[tokio::test]
async fn openapi_lists_exactly_the_served_routes() {
    let base = spawn_server(Config::default()).await;
    let (status, doc) = json_of(
        reqwest::get(format!("{base}/api/openapi.json"))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(doc["openapi"], "3.1.0");
    let documented: BTreeSet<(String, String)> = doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, item)| {
            item.as_object()
                .unwrap()
                .keys()
                .map(move |method| (method.to_ascii_uppercase(), path.clone()))
        })
        .collect();
    let served: BTreeSet<(String, String)> = coderig_server::route_list()
        .into_iter()
        .map(|(method, path)| (method.to_string(), path.to_owned()))
        .collect();
    assert_eq!(documented, served);

    // every listed route really is served (neither the 404 nor the 405 fallback)
    let client = reqwest::Client::new();
    for (method, path) in &served {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let response = client
            .request(method.clone(), format!("{base}{path}"))
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        // A routed 404 is an unknown id (`{id}` taken literally), the
        // fallback's is `route_not_found`.
        let status = response.status();
        let fallback = match status {
            StatusCode::METHOD_NOT_ALLOWED => true,
            StatusCode::NOT_FOUND => response
                .json::<Value>()
                .await
                .map_or(true, |body| body["error"]["kind"] == "route_not_found"),
            _ => false,
        };
        assert!(!fallback, "{method} {path} answered {status}");
    }

    // every $ref resolves
    let text = doc.to_string();
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    for reference in text.split("\"#/components/schemas/").skip(1) {
        let name = &reference[..reference.find('"').unwrap()];
        assert!(schemas.contains_key(name), "dangling $ref {name}");
    }

    // every route documents each answer it can give, errors with an error
    // body whose kinds are the ones that status carries
    let refusals: BTreeSet<&str> =
        ["/api/edit", "/api/hashline/apply", "/api/hashline/validate"].into();
    let schema_of = |response: &Value| -> Value {
        let reference = response["content"]["application/json"]["schema"]["$ref"]
            .as_str()
            .unwrap_or_else(|| panic!("no schema $ref in {response}"));
        schemas[reference.trim_start_matches("#/components/schemas/")].clone()
    };
    for (method, path) in &served {
        let responses = &doc["paths"][path][method.to_ascii_lowercase()]["responses"];
        let mut statuses: Vec<&str> = responses
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        statuses.sort_unstable();
        // 500 everywhere (io, internal); no 401 without --token (below).
        let battle = path.starts_with("/api/battles") || path == "/api/leaderboard";
        let run = path.starts_with("/api/runs") || path == "/api/flows";
        let expected: Vec<&str> = match (method.as_str(), refusals.contains(path.as_str())) {
            // The battle routes: 404 unknown ids, 409 a battle in the wrong
            // state, 503 a server without an arena.
            _ if battle => battle_statuses(method, path),
            _ if run => run_statuses(method, path),
            ("GET", _) if path == "/api/health" => vec!["200", "500"],
            ("GET", _) if path == "/api/events" => vec!["200", "400", "500"],
            ("GET", _) => vec!["200", "500"],
            (_, false) => vec!["200", "400", "413", "500"],
            (_, true) => vec!["200", "400", "413", "422", "500"],
        };
        assert_eq!(statuses, expected, "{method} {path}");
        for status in &statuses[1..] {
            let schema = schema_of(&responses[*status]);
            let kinds = &schema["properties"]["error"]["properties"]["kind"]["enum"];
            let kinds: Vec<&str> = kinds
                .as_array()
                .unwrap_or_else(|| panic!("{method} {path} {status}: not an error body"))
                .iter()
                .map(|k| k.as_str().unwrap())
                .collect();
            for kind in kinds {
                let status_of = match kind {
                    "payload_too_large" => 413,
                    "unauthorized" => 401,
                    k => k.parse::<coderig::ErrorKind>().unwrap().http_status(),
                };
                assert_eq!(status_of.to_string(), *status, "{method} {path}: {kind}");
            }
        }
    }
}

/// The documented statuses of each flow and run route, sorted: 404 unknown
/// ids, 409 a run or step in the wrong state, 503 a server without a flow
/// engine.
fn run_statuses(method: &str, path: &str) -> Vec<&'static str> {
    match (method, path) {
        ("GET", "/api/flows") => vec!["200", "500", "503"],
        ("POST", "/api/runs") => vec!["201", "400", "413", "500", "503"],
        ("GET", "/api/runs") => vec!["200", "400", "500", "503"],
        ("GET", _) => vec!["200", "404", "500", "503"],
        ("POST", "/api/runs/{id}/cancel") => vec!["200", "404", "409", "500", "503"],
        _ => vec!["200", "400", "404", "409", "413", "500", "503"],
    }
}

/// The documented statuses of each battle route, sorted.
fn battle_statuses(method: &str, path: &str) -> Vec<&'static str> {
    match (method, path) {
        ("POST", "/api/battles") => vec!["201", "400", "413", "500", "503"],
        ("GET", "/api/battles") | ("GET", "/api/leaderboard") => vec!["200", "400", "500", "503"],
        ("GET", _) => vec!["200", "404", "500", "503"],
        ("POST", "/api/battles/{id}/stop") => vec!["200", "404", "409", "500", "503"],
        ("POST", "/api/battles/{id}/analyze") | ("POST", "/api/battles/{id}/cross-examine") => {
            vec!["202", "400", "404", "409", "413", "500", "503"]
        }
        _ => vec!["200", "400", "404", "409", "413", "500", "503"],
    }
}

#[tokio::test]
async fn locate_refuses_an_empty_needle() {
    let base = spawn_server(Config::default()).await;
    let (status, body) = post(
        &base,
        "/api/locate",
        &json!({"content": "abc", "needle": ""}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let expected = coderig::Error::from(coderig::try_locate("abc", "").unwrap_err());
    assert_eq!(body, expected.body());
}

#[tokio::test]
async fn guards_check_lists_every_violation_in_order() {
    let base = spawn_server(Config::default()).await;
    let python = "import os\nimport sys\n\nprint(os.name, sys.path)\n";
    let cases = [
        (json!({"original": "a\nb\n", "updated": "a\nc\n"}), vec![]),
        (
            json!({"original": python, "updated": "print(os.name, sys.path)\n", "path": "m.py"}),
            vec!["dropped_imports"],
        ),
        (
            json!({"original": "a\n", "updated": "<<<<<<< HEAD\na\n=======\nb\n>>>>>>> x\n"}),
            vec!["conflict_marker"],
        ),
        (
            json!({"original": "", "updated": "x", "path": null}),
            vec![],
        ),
    ];
    for (request, kinds) in cases {
        let (status, body) = post(&base, "/api/guards/check", &request).await;
        assert_eq!(status, StatusCode::OK, "{request}: {body}");
        assert_eq!(body["ok"], true);
        let got: Vec<&str> = body["violations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["kind"].as_str().unwrap())
            .collect();
        assert_eq!(got, kinds, "{request}: {body}");
        let original = request["original"].as_str().unwrap();
        let updated = request["updated"].as_str().unwrap();
        let path = request.get("path").and_then(Value::as_str);
        assert_eq!(
            body["violations"],
            serde_json::to_value(coderig::check_guards(original, updated, path)).unwrap()
        );
    }
    let (status, body) = post(&base, "/api/guards/check", &json!({"original": "a"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error"]["message"], "missing field `updated`");
}

/// The same mistake gets the same answer as the core's decoder gives every
/// face: kind, code, message and `path`, byte for byte.
#[tokio::test]
async fn bad_bodies_get_the_core_decoders_error() {
    use coderig::json::{decode_object, EditRequest, HashlineApplyRequest, LocateRequest};
    let base = spawn_server(Config::default()).await;
    let edit = |v: &Value| decode_object::<EditRequest>(v.clone()).map(|_| ());
    let hashline = |v: &Value| decode_object::<HashlineApplyRequest>(v.clone()).map(|_| ());
    let locate = |v: &Value| decode_object::<LocateRequest>(v.clone()).map(|_| ());
    let flow = |v: &Value| coderig::flow::FlowSpec::from_json(v).map(|_| ());
    type Decoder<'a> = &'a dyn Fn(&Value) -> Result<(), coderig::Error>;
    let cases: Vec<(&str, Value, Decoder, &str)> = vec![
        (
            "/api/edit",
            json!({"content": "a", "edits": [{"old": 1, "new": "b"}]}),
            &edit,
            "edits[0].old",
        ),
        (
            "/api/edit",
            json!({"content": "a", "edits": [["a"]]}),
            &edit,
            "edits[0]",
        ),
        (
            "/api/edit",
            json!({"content": "a", "old": "a", "new": "b", "bogus": 1}),
            &edit,
            "bogus",
        ),
        (
            "/api/locate",
            json!({"content": "a", "needle": 2}),
            &locate,
            "needle",
        ),
        (
            "/api/hashline/apply",
            json!({"content": "a", "edits": [{"op": "delete", "lines": []}]}),
            &hashline,
            "edits[0].op",
        ),
        ("/api/flows/validate", json!([]), &flow, "."),
        ("/api/flows/validate", json!(7), &flow, "."),
    ];
    for (route, request, decoder, path) in cases {
        let (status, body) = post(&base, route, &request).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{route} {request}: {body}");
        let expected = decoder(&request).unwrap_err();
        assert_eq!(body, expected.body(), "{route} {request}");
        assert_eq!(body["error"]["path"], path, "{route} {request}");
    }
    // The one-edit and batch forms mixed: the core's refusal, not a decoder's.
    let mixed = json!({"content": "a", "old": "a", "new": "b", "edits": [["a", "b"]]});
    let (status, body) = post(&base, "/api/edit", &mixed).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let expected = decode_object::<EditRequest>(mixed)
        .unwrap()
        .apply()
        .unwrap_err();
    assert_eq!(body, expected.body());
}

/// The document's pattern for a hashline ref is `parse_ref`'s grammar: for
/// every short string over the characters that matter, the pattern matches
/// exactly when the core parses it (the fuzz stage relies on it both ways).
#[tokio::test]
async fn the_documented_ref_pattern_is_what_parse_ref_accepts() {
    let base = spawn_server(Config::default()).await;
    let (_, doc) = json_of(
        reqwest::get(format!("{base}/api/openapi.json"))
            .await
            .unwrap(),
    )
    .await;
    let pattern = doc["components"]["schemas"]["HashlineValidateRequest"]["properties"]["refs"]
        ["items"]["pattern"]
        .as_str()
        .unwrap()
        .to_owned();
    let regex = regex::Regex::new(&pattern).unwrap();
    let alphabet = [
        "1", "0", "9", "#", "Z", "k", "A", " ", "\u{a0}", "\u{1c}", ">", "+", "-", "|", "x", "\n",
    ];
    let mut strings = vec![String::new()];
    let mut checked = 0;
    for _ in 0..5 {
        let mut longer = Vec::new();
        for s in &strings {
            for c in alphabet {
                longer.push(format!("{s}{c}"));
            }
        }
        for s in &longer {
            let parsed = coderig::hashline::parse_ref(s).is_ok();
            assert_eq!(regex.is_match(s), parsed, "{s:?}");
            checked += 1;
        }
        strings = longer;
    }
    assert!(checked > 1_000_000, "{checked}");
    for s in [
        "12#VK",
        ">>> 12 # vk|text",
        "0012#ZZ \n",
        "9999999999999999999#ZZ",
    ] {
        assert!(regex.is_match(s), "{s:?}");
        assert!(coderig::hashline::parse_ref(s).is_ok(), "{s:?}");
    }
    // The one difference: a line number of 20 digits parses (up to
    // usize::MAX) but names a line no content has, so every route refuses
    // it anyway (invalid_input); the pattern stops at 19 digits.
    let huge = "18446744073709551615#ZZ";
    assert!(!regex.is_match(huge));
    assert!(coderig::hashline::parse_ref(huge).is_ok());
    let refused = coderig::hashline::validate_strs("a\n", &[huge]).unwrap_err();
    assert_eq!(refused.kind(), "invalid_input");
}
