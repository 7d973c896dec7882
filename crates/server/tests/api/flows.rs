//! `POST /api/flows/validate`: a sound flow accepted, every problem listed with its path, decoding problems, conditions and templates compiled.

use super::*;

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
