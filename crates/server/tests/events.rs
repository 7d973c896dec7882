//! `GET /api/events` over real HTTP on loopback (a real SSE client reading
//! the byte stream), bearer authentication, and the project roots of the
//! state. Events are written into the very SQLite store the server reads.
//!
//! Timeouts only keep a broken server from hanging the suite; no assertion
//! depends on timing.

mod common;

use coderig::agent::Registry;
use coderig::event::{
    AgentOutput, BattleStarted, BattleStatus, BattleUpdated, Event, OutputKind, OutputSource,
    RunStatus, RunUpdated, TaskRescued,
};
use coderig::rig::RigConfig;
use coderig::store::*;
use coderig_server::{AppState, Config};
use common::{assert_error, json_of, spawn_app, spawn_state, Frame, SseClient, TestServer};
use reqwest::StatusCode;
use serde_json::json;
use std::time::Duration;

async fn server() -> TestServer {
    spawn_app(Config::default(), Registry::new()).await
}

/// Creates battle `id` (its `battle_started`) and tells the bus.
async fn start_battle(state: &AppState, id: &str) -> u64 {
    let event = Event::BattleStarted(BattleStarted {
        battle_id: id.into(),
        battle_type: coderig::arena::BattleType::Qa,
        prompt: "p".into(),
        contestants: vec![],
    });
    let record = state
        .store()
        .create_work(NewWork {
            id: id.into(),
            kind: WorkKind::Battle,
            status: "running".into(),
            data: json!({}),
            owners: vec![],
            tasks: vec![],
            event: NewEvent::from_event(&event).unwrap(),
        })
        .await
        .unwrap();
    state.bus().notify();
    record.seq as u64
}

/// Creates run `id` (its `run_updated`).
async fn start_run(state: &AppState, id: &str) -> u64 {
    let event = Event::RunUpdated(RunUpdated {
        run_id: id.into(),
        status: RunStatus::Running,
        error: None,
    });
    let record = state
        .store()
        .create_work(NewWork {
            id: id.into(),
            kind: WorkKind::Run,
            status: "running".into(),
            data: json!({}),
            owners: vec![],
            tasks: vec![],
            event: NewEvent::from_event(&event).unwrap(),
        })
        .await
        .unwrap();
    state.bus().notify();
    record.seq as u64
}

/// One more `battle_updated` of battle `id`.
async fn update_battle(state: &AppState, id: &str) -> u64 {
    let event = Event::BattleUpdated(BattleUpdated {
        battle_id: id.into(),
        status: BattleStatus::Judging,
        winner_contestant_id: None,
        winner_source: None,
        analysis_ready: None,
        cross_exam_id: None,
        error: None,
    });
    let record = state
        .store()
        .transition(Transition {
            target: Target::Work(id.into()),
            from: vec![],
            to: "judging".into(),
            data: None,
            event: Some(NewEvent::from_event(&event).unwrap()),
        })
        .await
        .unwrap()
        .unwrap();
    state.bus().notify();
    record.seq as u64
}

fn seq_of(frame: &Frame) -> u64 {
    frame.json()["seq"].as_u64().unwrap()
}

/// The next `n` events' seqs, checking each frame's id is `<epoch>:<seq>`.
async fn seqs(client: &mut SseClient, epoch: &str, n: usize) -> Vec<u64> {
    let mut seqs = Vec::new();
    for _ in 0..n {
        let frame = client.event().await;
        let seq = seq_of(&frame);
        assert_eq!(frame.id.as_deref(), Some(format!("{epoch}:{seq}").as_str()));
        seqs.push(seq);
    }
    seqs
}

#[tokio::test]
async fn stored_events_stream_with_their_id_type_and_json() {
    let TestServer { url, state } = server().await;
    let epoch = state.store().epoch().to_owned();
    let mut client = SseClient::open(&format!("{url}/api/events"), &[]).await;
    let first = start_battle(&state, "b1").await;
    let second = update_battle(&state, "b1").await;
    let started = client.event().await;
    assert_eq!(started.event.as_deref(), Some("battle_started"));
    assert_eq!(started.id, Some(format!("{epoch}:{first}")));
    let data = started.json();
    assert_eq!(data["type"], "battle_started");
    assert_eq!(data["battle_id"], "b1");
    assert_eq!(data["seq"], first);
    assert_eq!(data["epoch"], epoch.as_str());
    let updated = client.event().await;
    assert_eq!(updated.event.as_deref(), Some("battle_updated"));
    assert_eq!(updated.json()["status"], "judging");
    assert_eq!(seq_of(&updated), second);
}

#[tokio::test]
async fn last_event_id_resumes_without_gap_or_duplicate() {
    let TestServer { url, state } = server().await;
    let epoch = state.store().epoch().to_owned();
    let mut client = SseClient::open(&format!("{url}/api/events"), &[]).await;
    let first = start_battle(&state, "b").await;
    for _ in 0..4 {
        update_battle(&state, "b").await;
    }
    let got = seqs(&mut client, &epoch, 2).await;
    assert_eq!(got, vec![first, first + 1]);
    drop(client);
    // Written while the client is away.
    let mut last = 0;
    for _ in 0..3 {
        last = update_battle(&state, "b").await;
    }
    let cursor = format!("{epoch}:{}", first + 1);
    let mut client =
        SseClient::open(&format!("{url}/api/events"), &[("Last-Event-ID", &cursor)]).await;
    let after: Vec<u64> = (first + 2..=last).collect();
    assert_eq!(seqs(&mut client, &epoch, after.len()).await, after);
    // And then live, not a replayed one twice.
    let fresh = update_battle(&state, "b").await;
    assert_eq!(seqs(&mut client, &epoch, 1).await, vec![fresh]);
}

#[tokio::test]
async fn after_resumes_like_last_event_id_and_the_header_wins() {
    let TestServer { url, state } = server().await;
    let epoch = state.store().epoch().to_owned();
    let first = start_battle(&state, "b").await;
    let mut last = first;
    for _ in 0..5 {
        last = update_battle(&state, "b").await;
    }
    let mut client = SseClient::open(&format!("{url}/api/events?after={epoch}:{first}"), &[]).await;
    let expected: Vec<u64> = (first + 1..=last).collect();
    assert_eq!(seqs(&mut client, &epoch, expected.len()).await, expected);
    // A bare seq is taken in this store's epoch.
    let mut bare = SseClient::open(&format!("{url}/api/events?after={}", last - 1), &[]).await;
    assert_eq!(seqs(&mut bare, &epoch, 1).await, vec![last]);
    // Last-Event-ID (what a reconnecting EventSource sends) over ?after=.
    let header = format!("{epoch}:{}", last - 2);
    let mut both = SseClient::open(
        &format!("{url}/api/events?after={epoch}:{first}"),
        &[("Last-Event-ID", &header)],
    )
    .await;
    assert_eq!(seqs(&mut both, &epoch, 2).await, vec![last - 1, last]);
}

#[tokio::test]
async fn a_foreign_epoch_gets_reset_then_every_event() {
    let TestServer { url, state } = server().await;
    let epoch = state.store().epoch().to_owned();
    let first = start_battle(&state, "b").await;
    let last = update_battle(&state, "b").await;
    for cursor in ["someone-else:1", &format!("{epoch}:{}", last + 100)] {
        let mut client =
            SseClient::open(&format!("{url}/api/events"), &[("Last-Event-ID", cursor)]).await;
        let reset = client.event().await;
        assert_eq!(reset.event.as_deref(), Some("reset"), "{cursor}");
        assert_eq!(reset.id, None);
        assert_eq!(reset.json(), json!({}));
        assert_eq!(seqs(&mut client, &epoch, 2).await, vec![first, last]);
    }
}

#[tokio::test]
async fn a_malformed_cursor_is_a_400_json_error_naming_the_form() {
    let TestServer { url, .. } = server().await;
    let client = reqwest::Client::new();
    for (query, header, path) in [
        ("?after=nonsense:x", None, "after"),
        ("?after=-3", None, "after"),
        ("", Some("no-separator"), "Last-Event-ID"),
        ("?after=e:1", Some("bad epoch!:1"), "Last-Event-ID"),
    ] {
        let mut request = client.get(format!("{url}/api/events{query}"));
        if let Some(header) = header {
            request = request.header("Last-Event-ID", header);
        }
        let (status, body) = json_of(request.send().await.unwrap()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query} {header:?}");
        assert_error(&body, "invalid_input");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("<epoch>:<seq>"),
            "{body}"
        );
        assert_eq!(body["error"]["path"], path, "{body}");
    }
    let (status, body) = json_of(
        client
            .get(format!("{url}/api/events?bogus=1"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_error(&body, "invalid_input");
}

#[tokio::test]
async fn filters_keep_one_battle_or_one_run() {
    let TestServer { url, state } = server().await;
    let epoch = state.store().epoch().to_owned();
    let mut only_b = SseClient::open(&format!("{url}/api/events?battle_id=b"), &[]).await;
    let mut only_r = SseClient::open(&format!("{url}/api/events?run_id=r"), &[]).await;
    start_battle(&state, "other").await;
    let b = start_battle(&state, "b").await;
    let r = start_run(&state, "r").await;
    update_battle(&state, "other").await;
    let b2 = update_battle(&state, "b").await;
    assert_eq!(seqs(&mut only_b, &epoch, 2).await, vec![b, b2]);
    assert_eq!(seqs(&mut only_r, &epoch, 1).await, vec![r]);
    // The filter holds for a replay too.
    let mut replay = SseClient::open(&format!("{url}/api/events?battle_id=b&after=0"), &[]).await;
    assert_eq!(seqs(&mut replay, &epoch, 2).await, vec![b, b2]);
    // Live output of the battle's agent: no id.
    state.bus().publish_live(Event::AgentOutput(AgentOutput {
        source: OutputSource::Contestant {
            battle_id: "b".into(),
            contestant_id: "c".into(),
        },
        kind: OutputKind::Text,
        text: "hello".into(),
    }));
    let live = only_b.event().await;
    assert_eq!(live.event.as_deref(), Some("agent_output"));
    assert_eq!(live.id, None);
    assert_eq!(live.json()["text"], "hello");
    // The run's stream got neither that nor another run's event: its next
    // event is the run's own.
    start_run(&state, "r2").await;
    let done = {
        let event = Event::RunUpdated(RunUpdated {
            run_id: "r".into(),
            status: RunStatus::Completed,
            error: None,
        });
        let record = state
            .store()
            .transition(Transition {
                target: Target::Work("r".into()),
                from: vec![],
                to: "completed".into(),
                data: None,
                event: Some(NewEvent::from_event(&event).unwrap()),
            })
            .await
            .unwrap()
            .unwrap();
        state.bus().notify();
        record.seq as u64
    };
    assert_eq!(seqs(&mut only_r, &epoch, 1).await, vec![done]);
}

#[tokio::test]
async fn idle_streams_get_keep_alive_comments() {
    let TestServer { url, .. } = spawn_app(
        Config {
            sse_keep_alive: Duration::from_millis(50),
            ..Config::default()
        },
        Registry::new(),
    )
    .await;
    let mut client = SseClient::open(&format!("{url}/api/events"), &[]).await;
    let frame = client.frame().await.unwrap();
    assert!(frame.comment.is_some(), "{frame:?}");
    assert_eq!((frame.id, frame.event, frame.data), (None, None, None));
}

#[tokio::test]
async fn a_token_guards_every_route_but_health() {
    let TestServer { url, .. } = spawn_app(
        Config {
            token: Some("s3cret".into()),
            ..Config::default()
        },
        Registry::new(),
    )
    .await;
    let client = reqwest::Client::new();
    let (status, body) = json_of(
        client
            .get(format!("{url}/api/health"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((status, &body["ok"]), (StatusCode::OK, &json!(true)));
    for (method, path) in [
        ("GET", "/api/agents"),
        ("GET", "/api/events"),
        ("GET", "/api/openapi.json"),
        ("POST", "/api/xxhash32"),
        ("GET", "/api/nowhere"),
    ] {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        for auth in [
            None,
            Some("Bearer wrong"),
            Some("Bearer s3cre"),
            Some("Basic s3cret"),
        ] {
            let mut request = client.request(method.clone(), format!("{url}{path}"));
            if let Some(auth) = auth {
                request = request.header("Authorization", auth);
            }
            let response = request.send().await.unwrap();
            assert_eq!(
                response.headers()["www-authenticate"],
                "Bearer",
                "{method} {path}"
            );
            let (status, body) = json_of(response).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{method} {path} {auth:?}");
            assert_error(&body, "unauthorized");
        }
    }
    let (status, _) = json_of(
        client
            .get(format!("{url}/api/agents"))
            .header("Authorization", "Bearer s3cret")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = json_of(
        client
            .post(format!("{url}/api/xxhash32"))
            .header("Authorization", "bearer s3cret")
            .json(&json!({"data": "abc"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    SseClient::open(
        &format!("{url}/api/events"),
        &[("Authorization", "Bearer s3cret")],
    )
    .await;
    // The document declares the scheme, health as open, 401 elsewhere.
    let (_, doc) = json_of(
        client
            .get(format!("{url}/api/openapi.json"))
            .bearer_auth("s3cret")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        doc["components"]["securitySchemes"]["bearer"],
        json!({"type": "http", "scheme": "bearer",
               "description": "The token of `coderig serve --token` / CODERIG_TOKEN, when the server has one."})
    );
    assert_eq!(doc["security"], json!([{"bearer": []}]));
    assert_eq!(doc["paths"]["/api/health"]["get"]["security"], json!([{}]));
    assert!(doc["paths"]["/api/health"]["get"]["responses"]["401"].is_null());
    assert_eq!(
        doc["paths"]["/api/agents"]["get"]["responses"]["401"]["content"]["application/json"]
            ["schema"]["$ref"],
        "#/components/schemas/Unauthorized"
    );
}

#[tokio::test]
async fn the_events_route_is_documented_as_an_event_stream() {
    let TestServer { url, .. } = server().await;
    let (_, doc) = json_of(
        reqwest::get(format!("{url}/api/openapi.json"))
            .await
            .unwrap(),
    )
    .await;
    let get = &doc["paths"]["/api/events"]["get"];
    assert!(
        get["responses"]["200"]["content"]["text/event-stream"].is_object(),
        "{get}"
    );
    let params: Vec<(&str, &str)> = get["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["name"].as_str().unwrap(), p["in"].as_str().unwrap()))
        .collect();
    for param in [
        ("battle_id", "query"),
        ("run_id", "query"),
        ("after", "query"),
        ("Last-Event-ID", "header"),
    ] {
        assert!(params.contains(&param), "{param:?} in {params:?}");
    }
}

#[tokio::test]
async fn projects_are_confined_to_the_roots() {
    let dir = tempfile::tempdir().unwrap();
    let roots = tempfile::tempdir().unwrap();
    let (a, b) = (roots.path().join("a"), roots.path().join("b"));
    std::fs::create_dir_all(a.join("repo")).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    std::fs::create_dir_all(roots.path().join("elsewhere")).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(roots.path().join("elsewhere"), a.join("escape")).unwrap();
    let mut rig = RigConfig::new(dir.path());
    rig.project_roots = vec![a.clone(), b.clone()];
    rig.run_workers = false;
    let state = AppState::open(rig).await.unwrap();
    let canonical_a = a.canonicalize().unwrap();
    assert_eq!(
        state.project_roots(),
        &[canonical_a.clone(), b.canonicalize().unwrap()]
    );
    assert_eq!(
        state
            .confine_project(a.join("repo").to_str().unwrap())
            .unwrap(),
        canonical_a.join("repo")
    );
    assert_eq!(
        state.confine_project("repo").unwrap(),
        canonical_a.join("repo")
    );
    let outside = roots.path().join("elsewhere");
    for bad in [
        outside.to_str().unwrap().to_owned(),
        "../elsewhere".to_owned(),
        a.join("escape").to_str().unwrap().to_owned(),
    ] {
        #[cfg(not(unix))]
        if bad.ends_with("escape") {
            continue;
        }
        let e = state.confine_project(&bad).unwrap_err();
        assert_eq!(e.kind(), coderig::ErrorKind::InvalidInput, "{bad}");
        assert_eq!(e.details()["path"], "project", "{bad}");
        assert!(e.message().starts_with("`project`: "), "{e}");
    }
    // A root that does not exist is refused, naming it (serve refuses it
    // at start), before anything is opened.
    let mut rig = RigConfig::new(dir.path().join("other"));
    rig.project_roots = vec![roots.path().join("missing")];
    let e = AppState::open(rig).await.unwrap_err();
    assert_eq!(e.kind(), coderig::ErrorKind::InvalidInput);
    assert_eq!(e.details()["path"], "project_roots[0]", "{e}");
    assert!(e.message().contains("missing"), "{e}");
    assert!(!dir.path().join("other").exists());
    // The state serves as usual.
    let server = spawn_state(Config::default(), state, dir).await;
    let (status, _) = json_of(
        reqwest::get(format!("{}/api/health", server.url))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
}

/// Appends `event` to work `id`'s history (a transition to `status`) and
/// tells the bus.
async fn append(state: &AppState, id: &str, status: &str, event: Event) {
    state
        .store()
        .transition(Transition {
            target: Target::Work(id.into()),
            from: vec![],
            to: status.into(),
            data: None,
            event: Some(NewEvent::from_event(&event).unwrap()),
        })
        .await
        .unwrap()
        .unwrap();
    state.bus().notify();
}

/// A frame as the document's `SseMessage` describes it: `{id?, event, data}`.
fn message(frame: &Frame) -> serde_json::Value {
    let mut message = json!({"event": frame.event, "data": frame.data});
    if let Some(id) = &frame.id {
        message["id"] = json!(id);
    }
    message
}

/// The document describes the stream as it is: one `SseMessage` variant per
/// event type plus `reset` and `gap`, and every message the server sends —
/// every event type, each optional field given, both kinds of
/// `agent_output`, a `reset` — is one of them, its data the declared JSON.
#[tokio::test]
async fn every_message_of_the_stream_is_declared_in_the_document() {
    use coderig::event::{ContestantInfo, ContestantUpdated, EventType, StepUpdated, WinnerSource};
    let TestServer { url, state } = server().await;
    let (_, doc) = json_of(
        reqwest::get(format!("{url}/api/openapi.json"))
            .await
            .unwrap(),
    )
    .await;
    let variants: Vec<&str> = doc["components"]["schemas"]["SseMessage"]["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["title"].as_str().unwrap())
        .collect();
    let mut expected: Vec<&str> = EventType::NAMES.to_vec();
    expected.extend(["reset", "gap"]);
    assert_eq!(variants, expected);
    let stream = &doc["paths"]["/api/events"]["get"]["responses"]["200"]["content"]
        ["text/event-stream"]["schema"];
    assert_eq!(
        stream["items"]["$ref"], "#/components/schemas/SseMessage",
        "{stream}"
    );

    let epoch = state.store().epoch().to_owned();
    let error = coderig::Error::io("disk full").to_json();
    let battle = Event::BattleStarted(BattleStarted {
        battle_id: "b".into(),
        battle_type: coderig::arena::BattleType::Coding,
        prompt: "p".into(),
        contestants: vec![ContestantInfo {
            id: "b-c1".into(),
            identity: "alice".into(),
            model: "m".into(),
            lane: coderig::arena::Lane::Local,
        }],
    });
    let record = state
        .store()
        .create_work(NewWork {
            id: "b".into(),
            kind: WorkKind::Battle,
            status: "running".into(),
            data: json!({}),
            owners: vec![],
            tasks: vec![],
            event: NewEvent::from_event(&battle).unwrap(),
        })
        .await
        .unwrap();
    assert!(record.seq > 0);
    append(
        &state,
        "b",
        "running",
        Event::ContestantUpdated(ContestantUpdated {
            battle_id: "b".into(),
            contestant_id: "b-c1".into(),
            status: coderig::arena::ContestantStatus::Error,
            duration_ms: Some(1200),
            ttft_ms: Some(80),
            usage: Some(json!({"input": 10, "output": 3})),
            tokens_per_sec: Some(41.5),
            evidence: Some(json!({"tier": "none"})),
            error: Some(error.clone()),
        }),
    )
    .await;
    append(
        &state,
        "b",
        "completed",
        Event::BattleUpdated(BattleUpdated {
            battle_id: "b".into(),
            status: BattleStatus::Completed,
            winner_contestant_id: Some("b-c1".into()),
            winner_source: Some(WinnerSource::Oracle),
            analysis_ready: Some(true),
            cross_exam_id: Some("x".into()),
            error: Some(error.clone()),
        }),
    )
    .await;
    start_run(&state, "r").await;
    append(
        &state,
        "r",
        "failed",
        Event::StepUpdated(StepUpdated {
            run_id: "r".into(),
            step_id: "s".into(),
            status: coderig::flow::StepStatus::Skipped,
            attempt: 2,
            skip_reason: Some(coderig::flow::SkipReason::UpstreamFailed),
            error: Some(error.clone()),
            sandbox: Some("auto: network unconfined".into()),
        }),
    )
    .await;
    append(
        &state,
        "r",
        "failed",
        Event::RunUpdated(RunUpdated {
            run_id: "r".into(),
            status: RunStatus::Failed,
            error: Some(error),
        }),
    )
    .await;

    append(
        &state,
        "r",
        "failed",
        Event::TaskRescued(TaskRescued {
            battle_id: None,
            run_id: Some("r".into()),
            owner_kind: "step".into(),
            owner_id: "s".into(),
            task_id: "r-t".into(),
            worker: Some("gone".into()),
            rescues: 1,
            requeued: true,
        }),
    )
    .await;

    let mut client = SseClient::open(&format!("{url}/api/events?after={epoch}:0"), &[]).await;
    let mut seen = Vec::new();
    for _ in 0..7 {
        let frame = client.event().await;
        common::schema::assert_conforms(&doc, "SseMessage", &message(&frame));
        seen.push(frame.event.unwrap());
    }
    for source in [
        OutputSource::Contestant {
            battle_id: "b".into(),
            contestant_id: "b-c1".into(),
        },
        OutputSource::Step {
            run_id: "r".into(),
            step_id: "s".into(),
        },
    ] {
        state.bus().publish_live(Event::AgentOutput(AgentOutput {
            source,
            kind: OutputKind::ToolCall,
            text: "read_file".into(),
        }));
        let frame = client.event().await;
        common::schema::assert_conforms(&doc, "SseMessage", &message(&frame));
        seen.push(frame.event.unwrap());
    }
    let mut every: Vec<&str> = seen.iter().map(String::as_str).collect();
    every.sort_unstable();
    every.dedup();
    let mut types = EventType::NAMES.to_vec();
    types.sort_unstable();
    assert_eq!(every, types);

    // A cursor of another store: `reset`, then the replay.
    let mut client = SseClient::open(
        &format!("{url}/api/events"),
        &[("Last-Event-ID", "another-store:3")],
    )
    .await;
    let reset = client.event().await;
    assert_eq!(reset.event.as_deref(), Some("reset"));
    common::schema::assert_conforms(&doc, "SseMessage", &message(&reset));
    common::schema::assert_conforms(&doc, "SseMessage", &message(&client.event().await));
    // What is not a message of the stream is refused by the schema.
    for wrong in [
        json!({"event": "battle_started", "data": "{}"}),
        json!({"event": "reset", "data": "{\"x\": 1}", "id": "e:1"}),
        json!({"event": "party", "data": "{}"}),
    ] {
        let schema = json!({"$ref": "#/components/schemas/SseMessage"});
        assert!(
            !common::schema::violations(&doc, &schema, &wrong).is_empty(),
            "{wrong}"
        );
    }
}

/// Every refusal of `GET /api/events` has the body its 400 declares, the
/// extra details of a cursor that does not parse (`given`, `reason`)
/// included.
#[tokio::test]
async fn the_refusals_of_the_event_stream_are_declared() {
    let TestServer { url, .. } = server().await;
    let client = reqwest::Client::new();
    let (_, doc) = json_of(
        client
            .get(format!("{url}/api/openapi.json"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    let declared = doc["paths"]["/api/events"]["get"]["responses"]["400"]["content"]
        ["application/json"]["schema"]["$ref"]
        .as_str()
        .unwrap()
        .trim_start_matches("#/components/schemas/")
        .to_owned();
    let not_text = reqwest::header::HeaderValue::from_bytes(b"e:\xff1").unwrap();
    let requests = [
        client.get(format!("{url}/api/events?after=nonsense:x")),
        client.get(format!("{url}/api/events?after=")),
        client.get(format!("{url}/api/events?after=007")),
        client
            .get(format!("{url}/api/events"))
            .header("Last-Event-ID", "bad epoch!:1"),
        client
            .get(format!("{url}/api/events"))
            .header("Last-Event-ID", not_text),
        client.get(format!("{url}/api/events?bogus=1")),
    ];
    let mut with_reason = 0;
    for request in requests {
        let (status, body) = json_of(request.send().await.unwrap()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        common::schema::assert_conforms(&doc, &declared, &body);
        if body["error"].get("reason").is_some() {
            assert!(body["error"]["given"].is_string(), "{body}");
            with_reason += 1;
        }
    }
    assert_eq!(with_reason, 4);
}
