//! End-to-end tests of the capability routes over real HTTP on 127.0.0.1:
//! edit, locate, hashline, flow validation and the OpenAPI document.

#[path = "../common/mod.rs"]
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

// The rest of this test binary, by subject.
mod flows;
mod openapi;
