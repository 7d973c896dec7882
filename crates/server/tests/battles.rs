//! The battle routes over real HTTP on loopback, in front of a real arena
//! runtime: a real SQLite store, a real git repository with a failing
//! shell test, scripted contestants and judges (in-process agents that
//! write files in their worktrees), the oracle's real `sh` runs.

#![cfg(unix)]

mod common;

use coderig::agent::Registry;
use coderig::rig::RigConfig;
use coderig_server::{AppState, Config};
use common::calc::{calc_project, git, CALC_FIXED, REPRO, SUITE};
use common::{assert_error, json_of, SseClient};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

fn agents_toml() -> String {
    format!(
        r#"
[agents.fixer]
kind = "scripted"
script = [ {{ text = "no script for this model" }} ]
scripts.good = [ {{ write = {{ path = "calc.sh", content = {fixed:?} }} }}, {{ text = "fixed add" }} ]
scripts.wrong = [ {{ write = {{ path = "calc.sh", content = "add() {{ echo 0; }}\n" }} }}, {{ text = "changed it" }} ]
scripts.hang = [ {{ text = "thinking" }}, {{ hang = true }} ]

[agents.judge]
kind = "scripted"
scripts.j = [ {{ sleep_ms = 300 }}, {{ text = "The first is cleaner.\nWINNER: fixer/good" }} ]
scripts.examiner = [ {{ text = "I checked the evidence.\nVERDICT: fixer/good" }} ]
"#,
        fixed = CALC_FIXED
    )
}

fn make_project(root: &Path) -> PathBuf {
    calc_project(&root.join("projects").join("calc"))
}

/// A server with an arena over a fresh SQLite store, project root
/// `<tmp>/projects` holding the `calc` repository.
struct World {
    api: common::Api,
    root: PathBuf,
    project: PathBuf,
    state: AppState,
}

async fn world_with(config: Config) -> World {
    common::install_crypto();
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let project = make_project(&root);
    let mut rig = RigConfig::new(root.join("data"));
    rig.agents = Registry::from_toml_str(&agents_toml()).unwrap();
    rig.project_roots = vec![root.join("projects")];
    rig.lease_ttl = Some(Duration::from_secs(3));
    rig.poll = Some(Duration::from_millis(100));
    let token = config.token.clone();
    let server = common::spawn_rig(config, rig, tmp).await;
    World {
        api: common::Api::new(server.url, token),
        root,
        project,
        state: server.state,
    }
}

async fn world() -> World {
    world_with(Config::default()).await
}

impl std::ops::Deref for World {
    type Target = common::Api;

    fn deref(&self) -> &common::Api {
        &self.api
    }
}

impl World {
    fn spec(&self, contestants: &[&str], judge: &str, oracle: bool) -> Value {
        let contestants: Vec<Value> = contestants
            .iter()
            .map(|c| {
                let (identity, model) = c.split_once('/').unwrap();
                json!({"identity": identity, "model": model})
            })
            .collect();
        let (ji, jm) = judge.split_once('/').unwrap();
        let mut spec = json!({
            "battle_type": "coding",
            "prompt": "Fix add in calc.sh so that tests/test_add.sh passes",
            "project": self.project.display().to_string(),
            "contestants": contestants,
            "judge": {"identity": ji, "model": jm},
            "contestant_timeout": "5s",
        });
        if oracle {
            spec["oracle"] = json!({"repro": REPRO, "suite": SUITE, "timeout": "30s"});
        }
        spec
    }

    /// Follows `GET /api/events?battle_id=` (from the start of the log)
    /// until the battle's `battle_updated` says `status`, `skip` such
    /// events first (earlier rounds of the same battle).
    async fn until_status(&self, id: &str, status: &str, skip: usize) -> Vec<Value> {
        let mut headers = Vec::new();
        let auth = self.token.as_ref().map(|t| format!("Bearer {t}"));
        if let Some(auth) = &auth {
            headers.push(("authorization", auth.as_str()));
        }
        let mut sse = SseClient::open(
            &format!("{}/api/events?battle_id={id}&after=0", self.url),
            &headers,
        )
        .await;
        let mut seen = Vec::new();
        let mut matched = 0;
        loop {
            let frame = sse.event().await;
            let data = frame.json();
            assert_eq!(data["battle_id"], json!(id), "{data}");
            let done = frame.event.as_deref() == Some("battle_updated") && data["status"] == status;
            seen.push(data);
            if done {
                matched += 1;
                if matched > skip {
                    return seen;
                }
            }
        }
    }
}

fn by_model<'a>(battle: &'a Value, model: &str) -> &'a Value {
    battle["contestants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["model"] == model)
        .unwrap_or_else(|| panic!("no {model} in {battle}"))
}

fn coderig_worktrees(project: &Path) -> Vec<String> {
    git(project, &["worktree", "list", "--porcelain"])
        .lines()
        .filter(|l| l.starts_with("worktree "))
        .map(str::to_owned)
        .skip(1)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_coding_battle_end_to_end_over_http() {
    let w = world().await;
    let mut spec = w.spec(&["fixer/good", "fixer/wrong"], "judge/j", true);
    spec["contestants"][0]["instruction"] = json!("Keep the diff to one line.");
    let (status, created) = w.post("/api/battles", spec).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(
        created["battle"]["contestants"][0]["instruction"],
        "Keep the diff to one line."
    );
    let id = created["battle_id"].as_str().unwrap().to_owned();
    assert_eq!(created["battle"]["id"], json!(id));
    assert_eq!(created["battle"]["status"], "running");
    assert_eq!(
        created["battle"]["project"],
        json!(w.project.display().to_string())
    );

    // The event stream of this battle, until it completes.
    let events = w.until_status(&id, "completed", 0).await;
    let types: Vec<&str> = events
        .iter()
        .map(|e| e["type"].as_str().unwrap_or(""))
        .collect();
    assert!(
        events[0]["contestants"].is_array(),
        "battle_started first: {events:?}"
    );
    assert!(
        events
            .iter()
            .filter(|e| e["status"] == "done" && e["contestant_id"].is_string())
            .count()
            == 2,
        "{types:?} {events:?}"
    );

    let (status, battle) = w.get(&format!("/api/battles/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(battle["status"], "completed", "{battle}");
    let good = by_model(&battle, "good")["id"].as_str().unwrap().to_owned();
    let wrong = by_model(&battle, "wrong")["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(battle["winner_contestant_id"], json!(good), "{battle}");
    assert_eq!(battle["winner_source"], "oracle");
    assert_eq!(by_model(&battle, "good")["tier"], "full");
    assert_eq!(
        by_model(&battle, "good")["instruction"],
        "Keep the diff to one line."
    );
    assert_eq!(by_model(&battle, "wrong")["instruction"], Value::Null);
    let manifest: Value = serde_json::from_slice(
        &std::fs::read(Path::new(battle["results_dir"].as_str().unwrap()).join("manifest.json"))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        manifest["contestants"][0]["instruction"],
        "Keep the diff to one line."
    );

    // The diff: the archived patch's bytes, as text/x-diff.
    let response = w
        .client
        .get(format!(
            "{}/api/battles/{id}/contestants/{good}/diff",
            w.url
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/x-diff");
    let patch = response.bytes().await.unwrap();
    let archived = std::fs::read(
        Path::new(battle["results_dir"].as_str().unwrap())
            .join(by_model(&battle, "good")["dir"].as_str().unwrap())
            .join("diff.patch"),
    )
    .unwrap();
    assert_eq!(patch.as_ref(), archived.as_slice());
    assert!(String::from_utf8_lossy(&patch).contains("calc.sh"));

    // The result: the archived result.md, as text/markdown.
    let response = w
        .client
        .get(format!(
            "{}/api/battles/{id}/contestants/{good}/result",
            w.url
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()["content-type"],
        "text/markdown; charset=utf-8"
    );
    let text = response.text().await.unwrap();
    let archived = std::fs::read_to_string(
        Path::new(battle["results_dir"].as_str().unwrap())
            .join(by_model(&battle, "good")["dir"].as_str().unwrap())
            .join("result.md"),
    )
    .unwrap();
    assert_eq!(text, archived);
    assert!(text.contains("fixed add"), "the answer is in it: {text}");

    // The analysis.
    let (status, analysis) = w.get(&format!("/api/battles/{id}/analysis")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        analysis["text"].as_str().unwrap().contains("fixer/good"),
        "{analysis}"
    );

    // A human names the other contestant; re-analysis (202) keeps it, and a
    // second request while judging is a 409.
    let (status, named) = w
        .call(
            Method::PATCH,
            &format!("/api/battles/{id}/winner"),
            Some(json!({"contestant_id": wrong})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{named}");
    assert_eq!(named["winner_contestant_id"], json!(wrong));
    assert_eq!(named["winner_source"], "human");
    let (status, judging) = w
        .post(&format!("/api/battles/{id}/analyze"), json!({}))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{judging}");
    assert_eq!(judging["status"], "judging");
    let (status, busy) = w
        .post(
            &format!("/api/battles/{id}/analyze"),
            json!({"force": true}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{busy}");
    assert_error(&busy, "conflict");
    // Completed: by the judge, by the human, then by this analysis.
    w.until_status(&id, "completed", 2).await;
    let (_, kept) = w.get(&format!("/api/battles/{id}")).await;
    assert_eq!(kept["winner_contestant_id"], json!(wrong), "{kept}");
    assert_eq!(kept["winner_source"], "human");

    // Cross-examination: 202 and its id, then done with its verdict.
    let (status, exam) = w
        .post(
            &format!("/api/battles/{id}/cross-examine"),
            json!({"identity": "judge", "model": "examiner"}),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{exam}");
    let xid = exam["cross_exam_id"].as_str().unwrap().to_owned();
    let mut finished = None;
    for _ in 0..300 {
        let (_, b) = w.get(&format!("/api/battles/{id}")).await;
        if let Some(x) =
            b["cross_exams"].as_array().unwrap().iter().find(|x| {
                x["id"] == json!(xid) && (x["status"] == "done" || x["status"] == "error")
            })
        {
            finished = Some(x.clone());
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let finished = finished.expect("the cross-examination finished");
    assert_eq!(finished["status"], "done", "{finished}");
    assert_eq!(finished["verdict"], "fixer/good");

    // The list, its filters, the leaderboard.
    let project = w.project.display().to_string();
    let (status, page) = w
        .get(&format!(
            "/api/battles?status=completed&project={project}&limit=5"
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(page["battles"].as_array().unwrap().len(), 1, "{page}");
    assert_eq!(page["battles"][0]["id"], json!(id));
    assert_eq!(page["next_cursor"], Value::Null);
    let (_, running) = w.get("/api/battles?status=running").await;
    assert!(running["battles"].as_array().unwrap().is_empty());
    // A relative project is relative to the first root.
    let (status, relative) = w.get("/api/battles?project=calc").await;
    assert_eq!(status, StatusCode::OK, "{relative}");
    assert_eq!(relative["battles"].as_array().unwrap().len(), 1);
    let (status, boards) = w.get("/api/leaderboard?battle_type=coding").await;
    assert_eq!(status, StatusCode::OK, "{boards}");
    assert_eq!(boards[0]["battle_type"], "coding", "{boards}");
    assert_eq!(boards[0]["n_battles"], 1);
    assert_eq!(
        boards[0]["entries"][0]["name"], "fixer/wrong",
        "the human's winner"
    );
    let (_, qa) = w.get("/api/leaderboard?battle_type=qa").await;
    assert!(
        qa.as_array().unwrap().iter().all(|b| b["n_battles"] == 0),
        "{qa}"
    );

    // Apply the good patch to the user's tree; again is a 409 that changes
    // nothing; stopping a finished battle is a 409.
    let (status, applied) = w
        .post(
            &format!("/api/battles/{id}/apply"),
            json!({"contestant_id": good}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{applied}");
    assert_eq!(applied["contestant_id"], json!(good));
    assert_eq!(
        std::fs::read_to_string(w.project.join("calc.sh")).unwrap(),
        CALC_FIXED
    );
    let (status, again) = w
        .post(
            &format!("/api/battles/{id}/apply"),
            json!({"contestant_id": good}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{again}");
    assert_error(&again, "conflict");
    let (status, stop) = w.post(&format!("/api/battles/{id}/stop"), json!({})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{stop}");
    assert_error(&stop, "conflict");
    assert!(coderig_worktrees(&w.project).is_empty());
    w.state.rig().shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn stop_cancels_a_running_battle_and_what_needs_a_completed_one_is_a_409() {
    let w = world().await;
    let mut spec = w.spec(&["fixer/hang", "fixer/good"], "judge/j", false);
    spec["contestant_timeout"] = json!("120s");
    let (status, created) = w.post("/api/battles", spec).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let id = created["battle_id"].as_str().unwrap().to_owned();
    let cid = created["battle"]["contestants"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, body) = w
        .post(&format!("/api/battles/{id}/analyze"), json!({}))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let (status, body) = w.get(&format!("/api/battles/{id}/analysis")).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_error(&body, "not_found_id");
    let (status, body) = w
        .call(
            Method::PATCH,
            &format!("/api/battles/{id}/winner"),
            Some(json!({"contestant_id": cid})),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let (status, body) = w
        .post(
            &format!("/api/battles/{id}/cross-examine"),
            json!({"identity": "judge", "model": "examiner"}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");

    // No body at all is accepted by stop (and by analyze and apply).
    let response = w
        .client
        .post(format!("{}/api/battles/{id}/stop", w.url))
        .send()
        .await
        .unwrap();
    let (status, stopped) = json_of(response).await;
    assert_eq!(status, StatusCode::OK, "{stopped}");
    assert_eq!(stopped["status"], "cancelled");
    // Terminal everywhere at once: the stop's answer and the first read
    // after it show no contestant queued or running (the hanging one
    // cancelled; the quick one cancelled, or done if it finished first),
    // while its agent may still be stopping.
    let (status, read) = w.get(&format!("/api/battles/{id}")).await;
    assert_eq!(status, StatusCode::OK, "{read}");
    for b in [&stopped, &read] {
        assert_eq!(b["status"], "cancelled", "{b}");
        assert_eq!(by_model(b, "hang")["status"], "cancelled", "{b}");
        for c in b["contestants"].as_array().unwrap() {
            assert!(
                matches!(c["status"].as_str(), Some("cancelled" | "done" | "error")),
                "{b}"
            );
        }
    }
    let (status, again) = w.post(&format!("/api/battles/{id}/stop"), json!({})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{again}");
    assert_error(&again, "conflict");
    assert_eq!(again["error"]["status"], "cancelled");
    // On the stream the hanging contestant's cancellation comes before the
    // battle's, which ends it.
    let events = w.until_status(&id, "cancelled", 0).await;
    let hang = by_model(&read, "hang")["id"].clone();
    let settled = events
        .iter()
        .position(|e| e["contestant_id"] == hang && e["status"] == "cancelled");
    assert!(settled.is_some_and(|i| i + 1 < events.len()), "{events:#?}");
    assert!(events.last().unwrap()["contestant_id"].is_null());
    w.state.rig().shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bad_requests_are_4xx_json_errors_and_create_nothing() {
    let w = world().await;
    let not_git = w.root.join("projects").join("plain");
    std::fs::create_dir_all(&not_git).unwrap();
    let outside = w.root.join("elsewhere");
    std::fs::create_dir_all(&outside).unwrap();
    git(&outside, &["init", "-q"]);
    let base = w.spec(&["fixer/good", "fixer/wrong"], "judge/j", false);
    let with = |patch: Value| {
        let mut spec = base.clone();
        for (k, v) in patch.as_object().unwrap() {
            spec[k] = v.clone();
        }
        spec
    };
    let seven: Vec<Value> = (0..7)
        .map(|i| json!({"identity": "fixer", "model": format!("m{i}")}))
        .collect();
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "unknown identity",
            with(
                json!({"contestants": [{"identity": "ghost", "model": "m"}, {"identity": "fixer", "model": "good"}]}),
            ),
            "contestants[0].identity",
        ),
        (
            "unknown judge",
            with(json!({"judge": {"identity": "ghost", "model": "m"}})),
            "judge.identity",
        ),
        (
            "one contestant",
            with(json!({"contestants": [{"identity": "fixer", "model": "good"}]})),
            "contestants",
        ),
        (
            "seven contestants",
            with(json!({"contestants": seven})),
            "contestants",
        ),
        (
            "a duplicate",
            with(
                json!({"contestants": [{"identity": "fixer", "model": "good"}, {"identity": "fixer", "model": "good"}]}),
            ),
            "contestants[1]",
        ),
        (
            "not a git repository",
            with(json!({"project": not_git.display().to_string()})),
            "project",
        ),
        (
            "outside the roots",
            with(json!({"project": outside.display().to_string()})),
            "project",
        ),
        (
            "outside the roots, relative",
            with(json!({"project": "../elsewhere"})),
            "project",
        ),
        (
            "no such path",
            with(json!({"project": "/no/such/dir"})),
            "project",
        ),
        (
            "a base that does not resolve",
            with(json!({"base": "no-such-branch"})),
            "base",
        ),
        ("an unknown field", with(json!({"colour": "red"})), "colour"),
        (
            "an instruction that is no string",
            with(
                json!({"contestants": [{"identity": "fixer", "model": "good", "instruction": 7}, {"identity": "fixer", "model": "wrong"}]}),
            ),
            "contestants[0].instruction",
        ),
        (
            "an over-long instruction",
            with(
                json!({"contestants": [{"identity": "fixer", "model": "good"}, {"identity": "fixer", "model": "wrong", "instruction": "x".repeat(coderig::arena::MAX_INSTRUCTION_CHARS + 1)}]}),
            ),
            "contestants[1].instruction",
        ),
        (
            "a coding battle without a project",
            with(json!({"project": null})),
            "project",
        ),
        ("not an object", json!([1, 2]), "."),
        // A NUL is in no path and no command: the request's mistake, not
        // the file system's (a 500 `io` once).
        (
            "a project with a NUL",
            with(json!({"project": format!("{}\u{0}x", w.project.display())})),
            "project",
        ),
        (
            "an oracle command with a NUL",
            with(json!({"oracle": {"repro": "true\u{0}", "suite": "true"}})),
            "oracle.repro",
        ),
    ];
    for (what, spec, path) in cases {
        let (status, body) = w.post("/api/battles", spec).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{what}: {body}");
        assert_error(&body, "invalid_input");
        assert_eq!(body["error"]["path"], path, "{what}: {body}");
    }
    // Not JSON, and JSON not declared as such.
    for (content_type, text) in [("application/json", "{not json"), ("text/plain", "{}")] {
        let response = w
            .client
            .post(format!("{}/api/battles", w.url))
            .header("content-type", content_type)
            .body(text)
            .send()
            .await
            .unwrap();
        let (status, body) = json_of(response).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{text}: {body}");
        assert_error(&body, "invalid_input");
    }

    // Unknown ids: 404 not_found_id on every route that takes one.
    let missing = "0123456789abcdef0123456789abcdef";
    let routes: Vec<(Method, String, Option<Value>)> = vec![
        (Method::GET, format!("/api/battles/{missing}"), None),
        (Method::POST, format!("/api/battles/{missing}/stop"), None),
        (
            Method::POST,
            format!("/api/battles/{missing}/analyze"),
            Some(json!({})),
        ),
        (
            Method::GET,
            format!("/api/battles/{missing}/analysis"),
            None,
        ),
        (
            Method::PATCH,
            format!("/api/battles/{missing}/winner"),
            Some(json!({"contestant_id": null})),
        ),
        (
            Method::GET,
            format!("/api/battles/{missing}/contestants/{missing}-c1/diff"),
            None,
        ),
        (
            Method::GET,
            format!("/api/battles/{missing}/contestants/{missing}-c1/result"),
            None,
        ),
        (
            Method::POST,
            format!("/api/battles/{missing}/cross-examine"),
            Some(json!({"identity": "judge", "model": "examiner"})),
        ),
        (
            Method::POST,
            format!("/api/battles/{missing}/apply"),
            Some(json!({})),
        ),
    ];
    for (method, path, body) in routes {
        let (status, answer) = w.call(method.clone(), &path, body).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {path}: {answer}");
        assert_error(&answer, "not_found_id");
    }
    // Bad filters and bodies.
    let outside_q = outside.display().to_string();
    for path in [
        "/api/battles?limit=0".to_owned(),
        "/api/battles?limit=501".to_owned(),
        "/api/battles?status=sleeping".to_owned(),
        "/api/battles?colour=red".to_owned(),
        "/api/battles?cursor=bogus".to_owned(),
        format!("/api/battles?project={outside_q}"),
        "/api/leaderboard?battle_type=chess".to_owned(),
        format!("/api/leaderboard?project={outside_q}"),
        "/api/battles?project=%00".to_owned(),
        "/api/leaderboard?project=/tmp/a%00b".to_owned(),
    ] {
        let (status, body) = w.get(&path).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: {body}");
        assert_error(&body, "invalid_input");
    }

    // A real battle: an unknown contestant is a 404, bad bodies 400s.
    let (status, created) = w.post("/api/battles", base.clone()).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let id = created["battle_id"].as_str().unwrap().to_owned();
    let (status, body) = w
        .get(&format!("/api/battles/{id}/contestants/{id}-c9/diff"))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let (status, body) = w
        .get(&format!("/api/battles/{id}/contestants/{id}-c9/result"))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    for (method, path, body) in [
        (Method::PATCH, "winner", json!({})),
        (Method::PATCH, "winner", json!({"contestant_id": 7})),
        (Method::POST, "analyze", json!({"force": "yes"})),
        (
            Method::POST,
            "cross-examine",
            json!({"identity": "ghost", "model": "m"}),
        ),
        (Method::POST, "cross-examine", json!({"identity": "judge"})),
        (Method::POST, "apply", json!({"who": "me"})),
    ] {
        let (status, answer) = w
            .call(
                method.clone(),
                &format!("/api/battles/{id}/{path}"),
                Some(body.clone()),
            )
            .await;
        assert_eq!(
            status,
            StatusCode::BAD_REQUEST,
            "{method} {path} {body}: {answer}"
        );
        assert_error(&answer, "invalid_input");
    }
    let (status, body) = w
        .call(
            Method::PATCH,
            &format!("/api/battles/{id}/winner"),
            Some(json!({"contestant_id": format!("{id}-c9")})),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");

    // Nothing half-created: the one good battle is the only one, and the
    // only events are its own.
    let (_, page) = w.get("/api/battles").await;
    assert_eq!(page["battles"].as_array().unwrap().len(), 1, "{page}");
    let events = w.state.store().events_after(0, 10_000).await.unwrap();
    assert!(events.iter().all(|e| e.work_id == id), "{events:?}");
    w.state.rig().shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn with_a_token_every_battle_route_wants_it() {
    let w = world_with(Config {
        token: Some("tok-b".into()),
        ..Config::default()
    })
    .await;
    let id = "0123456789abcdef0123456789abcdef";
    let routes: Vec<(Method, String)> = coderig_server::route_list()
        .into_iter()
        .filter(|(_, p)| p.starts_with("/api/battles") || *p == "/api/leaderboard")
        .map(|(m, p)| {
            (
                m,
                p.replace("{id}", id).replace("{cid}", &format!("{id}-c1")),
            )
        })
        .collect();
    assert_eq!(routes.len(), 12, "{routes:?}");
    for (method, path) in &routes {
        let response = w
            .client
            .request(method.clone(), format!("{}{path}", w.url))
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        let (status, body) = json_of(response).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{method} {path}: {body}");
        assert_error(&body, "unauthorized");
    }
    // With it, the same requests reach the arena.
    let (status, page) = w.get("/api/battles").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let (status, created) = w
        .post(
            "/api/battles",
            w.spec(&["fixer/good", "fixer/wrong"], "judge/j", false),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let id = created["battle_id"].as_str().unwrap();
    w.until_status(id, "completed", 0).await;
    w.state.rig().shutdown(Duration::from_secs(5)).await;
}
