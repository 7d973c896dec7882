//! Bad requests and specs on the run routes (400s with every problem, nothing created) and the bearer token on every run route.

use super::*;

/// `(first path, [(path, message fragment)] every problem must include)`.
type Expect = (&'static str, Vec<(&'static str, &'static str)>);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bad_requests_and_specs_are_400s_with_every_problem_and_create_nothing() {
    let w = world().await;
    let cmd = |id: &str| json!({"id": id, "kind": "command", "argv": ["true"]});
    let specs: Vec<(&str, Value, Expect)> = vec![
        (
            "an unknown field",
            json!({"steps": [{"id": "a", "kind": "command", "argv": ["true"], "colour": "red"}]}),
            ("steps[0].colour", vec![("steps[0].colour", "colour")]),
        ),
        (
            "a cycle",
            json!({"steps": [
                {"id": "a", "kind": "command", "argv": ["true"], "deps": ["b"]},
                {"id": "b", "kind": "command", "argv": ["true"], "deps": ["a"]},
            ]}),
            ("steps", vec![("steps", "cycle")]),
        ),
        (
            "an unknown dependency",
            json!({"steps": [cmd("a"), {"id": "b", "kind": "command", "argv": ["true"], "deps": ["a", "ghost"]}]}),
            ("steps[1].deps[1]", vec![("steps[1].deps[1]", "ghost")]),
        ),
        (
            "a bad CEL condition",
            json!({"steps": [{"id": "a", "kind": "command", "argv": ["true"], "when": "results[ == "}]}),
            ("steps[0].when", vec![("steps[0].when", "")]),
        ),
        (
            "a bad template",
            json!({"steps": [{"id": "a", "kind": "agent", "agent": "planner", "prompt": "{{ input.x "}]}),
            ("steps[0].prompt", vec![("steps[0].prompt", "")]),
        ),
        (
            "a duplicate id",
            json!({"steps": [cmd("a"), cmd("a")]}),
            ("steps[1].id", vec![("steps[1].id", "duplicate")]),
        ),
        (
            "several problems at once",
            json!({"steps": [
                {"id": "a", "kind": "command", "argv": ["true"], "deps": ["ghost"]},
                {"id": "b", "kind": "command", "shell": "echo {{ nope", "when": "&&"},
            ]}),
            (
                // The compiler's order: each step's conditions and
                // templates, then the cross-step rules.
                "steps[1].when",
                vec![
                    ("steps[0].deps[0]", "ghost"),
                    ("steps[1].when", ""),
                    ("steps[1].shell", ""),
                ],
            ),
        ),
        (
            "an unknown agent",
            json!({"steps": [{"id": "a", "kind": "agent", "agent": "ghost", "prompt": "p"}]}),
            ("steps[0].agent", vec![("steps[0].agent", "ghost")]),
        ),
        (
            "a code step (no callable over HTTP)",
            json!({"steps": [{"id": "a", "kind": "code"}]}),
            ("steps[0]", vec![("steps[0]", "callable")]),
        ),
        (
            "no steps",
            json!({"steps": []}),
            ("steps", vec![("steps", "")]),
        ),
        ("a spec that is not an object", json!([1]), (".", vec![])),
        // No path, command or argument holds a NUL: refused with its
        // path, not a failed spawn (or a 500) later.
        (
            "a cwd with a NUL",
            json!({"steps": [{"id": "a", "kind": "command", "argv": ["true"], "cwd": "/tmp/a\u{0}b"}]}),
            ("steps[0].cwd", vec![("steps[0].cwd", "NUL")]),
        ),
        (
            "an argument with a NUL",
            json!({"steps": [{"id": "a", "kind": "command", "argv": ["true", "x\u{0}"]}]}),
            ("steps[0].argv[1]", vec![("steps[0].argv[1]", "NUL")]),
        ),
    ];
    for (what, spec, (path, expected)) in specs {
        let (status, body) = w
            .post("/api/runs", json!({"spec": spec, "input": {}}))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{what}: {body}");
        assert_error(&body, "invalid_input");
        assert_eq!(body["error"]["path"], path, "{what}: {body}");
        let problems = body["error"]["problems"].as_array();
        for (at, fragment) in expected {
            let found = problems
                .into_iter()
                .flatten()
                .any(|p| p["path"] == at && p["message"].as_str().unwrap().contains(fragment));
            assert!(found, "{what}: no problem at {at} ({fragment}): {body}");
            assert!(
                body["error"]["message"].as_str().unwrap().contains(at),
                "{what}: the message does not name {at}: {body}"
            );
        }
    }
    let ok = json!({"steps": [cmd("a")]});
    let requests: Vec<(&str, Value, &str)> = vec![
        (
            "both flow and spec",
            json!({"flow": "hello", "spec": ok}),
            "spec",
        ),
        ("neither flow nor spec", json!({"input": {}}), "flow"),
        ("an empty body", json!({}), "flow"),
        (
            "null flow and spec",
            json!({"flow": null, "spec": null}),
            "flow",
        ),
        ("an unknown flow", json!({"flow": "nope"}), "flow"),
        ("a flow that is not a name", json!({"flow": 7}), "flow"),
        (
            "an input that is not an object",
            json!({"spec": ok, "input": [1]}),
            "input",
        ),
        (
            "an input that is text",
            json!({"flow": "hello", "input": "x"}),
            "input",
        ),
        (
            "an unknown key",
            json!({"flow": "hello", "colour": "red"}),
            "colour",
        ),
        ("not an object", json!([1, 2]), "."),
    ];
    for (what, request, path) in requests {
        let (status, body) = w.post("/api/runs", request).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{what}: {body}");
        assert_error(&body, "invalid_input");
        assert_eq!(body["error"]["path"], path, "{what}: {body}");
    }
    for (content_type, text) in [("application/json", "{not json"), ("text/plain", "{}")] {
        let response = w
            .client
            .post(format!("{}/api/runs", w.url))
            .header("content-type", content_type)
            .body(text)
            .send()
            .await
            .unwrap();
        let (status, body) = json_of(response).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{text}: {body}");
        assert_error(&body, "invalid_input");
    }
    for query in [
        "status=sleeping",
        "limit=0",
        "limit=501",
        "limit=many",
        "cursor=bogus",
        "colour=red",
    ] {
        let (status, body) = w.get(&format!("/api/runs?{query}")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {body}");
        assert_error(&body, "invalid_input");
    }

    // Nothing was created: no run, no event, no artifact directory.
    let (_, page) = w.get("/api/runs").await;
    assert_eq!(page, json!({"runs": [], "next_cursor": null}));
    let events = w.state.store().events_after(0, 10_000).await.unwrap();
    assert!(events.is_empty(), "{events:?}");
    let runs_dir = w.root.join("data/runs");
    assert_eq!(std::fs::read_dir(&runs_dir).unwrap().count(), 0);

    // The registered flow by name, with its input.
    let (status, created) = w
        .post(
            "/api/runs",
            json!({"flow": "hello", "input": {"who": "ana"}}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let id = created["run_id"].as_str().unwrap().to_owned();
    let mut sse = w.events(&id).await;
    follow(&mut sse, &id, run_ended).await;
    let run = w.run(&id).await;
    assert_eq!(run["name"], "hello");
    assert_eq!(step(&run, "say")["output"], "hello ana\n");
    let (status, flows) = w.get("/api/flows").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(flows["flows"].as_array().unwrap().len(), 1, "{flows}");
    assert_eq!(flows["flows"][0]["name"], "hello");
    assert_eq!(
        flows["flows"][0]["steps"][0]["argv"],
        json!(["echo", "hello {{ input.who }}"])
    );
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn with_a_token_every_run_route_wants_it() {
    let w = world_with(Config {
        token: Some("tok-r".into()),
        ..Config::default()
    })
    .await;
    let id = "0123456789abcdef0123456789abcdef";
    let routes: Vec<(Method, String)> = coderig_server::route_list()
        .into_iter()
        .filter(|(_, p)| p.starts_with("/api/runs") || *p == "/api/flows")
        .map(|(m, p)| (m, p.replace("{id}", id).replace("{step}", "gate")))
        .collect();
    assert_eq!(routes.len(), 7, "{routes:?}");
    for (method, path) in &routes {
        for auth in [None, Some("Bearer wrong")] {
            let mut request = w
                .client
                .request(method.clone(), format!("{}{path}", w.url))
                .json(&json!({"flow": "hello"}));
            if let Some(auth) = auth {
                request = request.header("authorization", auth);
            }
            let (status, body) = json_of(request.send().await.unwrap()).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{method} {path}: {body}");
            assert_error(&body, "unauthorized");
        }
    }
    // Nothing got through: no run was created.
    let (status, page) = w.get("/api/runs").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(page["runs"], json!([]));
    // With it, the same requests reach the engine.
    let (status, created) = w
        .post("/api/runs", json!({"flow": "hello", "input": {"who": "x"}}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let run = created["run_id"].as_str().unwrap().to_owned();
    let mut sse = w.events(&run).await;
    follow(&mut sse, &run, run_ended).await;
    assert_eq!(w.run(&run).await["status"], "completed");
    w.shutdown().await;
}
