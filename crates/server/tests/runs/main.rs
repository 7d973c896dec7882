//! The flow and run routes over real HTTP on loopback, in front of a real
//! flow engine: a real SQLite store, scripted agents of a `coderig.toml`,
//! real `sh` command steps (their process groups checked with `kill -0`),
//! the SSE stream of `GET /api/events?run_id=`, and `coderig serve --flows
//! DIR` as a process.

#![cfg(unix)]

#[path = "../common/mod.rs"]
mod common;

mod refusals;
mod schema;
mod serve;

use coderig::agent::Registry;
use coderig::rig::RigConfig;
use coderig_server::{AppState, Config};
use common::server::Server;
use common::{assert_error, json_of, SseClient};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const AGENTS: &str = r#"
[agents.planner]
kind = "scripted"
script = [ { text = "no script for this model" } ]
scripts.plan = [ { text = "the plan: add the numbers" } ]
scripts.slow = [ { sleep_ms = 200 }, { text = "slow plan" } ]
"#;

/// A server with a flow engine over a fresh SQLite store; project root
/// `<tmp>/work`.
struct World {
    api: common::Api,
    root: PathBuf,
    state: AppState,
}

async fn world_with(config: Config) -> World {
    common::install_crypto();
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    std::fs::create_dir_all(root.join("work")).unwrap();
    let mut rig = RigConfig::new(root.join("data"));
    rig.agents = Registry::from_toml_str(AGENTS).unwrap();
    rig.project_roots = vec![root.join("work")];
    rig.lease_ttl = Some(Duration::from_secs(3));
    rig.poll = Some(Duration::from_millis(100));
    rig.flows = vec![coderig::flow::FlowSpec::parse(
        "name: hello\nsteps:\n  - {id: say, kind: command, argv: [echo, 'hello {{ input.who }}']}\n",
    )
    .unwrap()];
    let token = config.token.clone();
    let server = common::spawn_rig(config, rig, tmp).await;
    World {
        api: common::Api::new(server.url, token),
        root,
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
    /// `POST /api/runs {spec, input}`; the run's id.
    async fn start(&self, spec: Value, input: Value) -> String {
        let (status, body) = self
            .post("/api/runs", json!({"spec": spec, "input": input}))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        assert_eq!(body.as_object().unwrap().len(), 1, "{body}");
        let id = body["run_id"].as_str().unwrap().to_owned();
        assert!(
            id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()),
            "{id}"
        );
        id
    }

    /// `GET /api/events?run_id=ID&after=0`: every event of the run from
    /// the start of the log, then the live ones.
    async fn events(&self, id: &str) -> SseClient {
        let auth = self.token.as_ref().map(|t| format!("Bearer {t}"));
        let headers: Vec<(&str, &str)> = auth
            .as_deref()
            .map(|a| vec![("authorization", a)])
            .unwrap_or_default();
        SseClient::open(
            &format!("{}/api/events?run_id={id}&after=0", self.url),
            &headers,
        )
        .await
    }

    async fn run(&self, id: &str) -> Value {
        let (status, run) = self.get(&format!("/api/runs/{id}")).await;
        assert_eq!(status, StatusCode::OK, "{run}");
        run
    }

    async fn shutdown(&self) {
        self.state.rig().shutdown(Duration::from_secs(5)).await;
    }
}

/// Reads `sse` until `done` holds for an event (its type and data), every
/// event checked to be the run's; returns them all as `(type, data)`.
async fn follow(
    sse: &mut SseClient,
    id: &str,
    done: impl Fn(&str, &Value) -> bool,
) -> Vec<(String, Value)> {
    let mut seen = Vec::new();
    loop {
        let frame = sse.event().await;
        let kind = frame.event.clone().unwrap_or_default();
        let data = frame.json();
        assert_eq!(data["run_id"], json!(id), "{kind}: {data}");
        let end = done(&kind, &data);
        seen.push((kind, data));
        if end {
            return seen;
        }
    }
}

fn run_ended(kind: &str, data: &Value) -> bool {
    kind == "run_updated"
        && matches!(
            data["status"].as_str(),
            Some("completed" | "failed" | "cancelled")
        )
}

fn step<'a>(run: &'a Value, id: &str) -> &'a Value {
    run["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .unwrap_or_else(|| panic!("no step {id} in {run}"))
}

/// The stored events only (`agent_output` is live), as `(type, step_id,
/// status)`.
fn transitions(events: &[(String, Value)]) -> Vec<(String, String, String)> {
    events
        .iter()
        .filter(|(kind, _)| kind != "agent_output")
        .map(|(kind, data)| {
            (
                kind.clone(),
                data["step_id"].as_str().unwrap_or("").to_owned(),
                data["status"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

fn t(kind: &str, step: &str, status: &str) -> (String, String, String) {
    (kind.to_owned(), step.to_owned(), status.to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_run_over_http_is_followed_on_sse_to_the_end() {
    let w = world().await;
    let spec = json!({
        "name": "plan-and-test",
        "steps": [
            {"id": "plan", "kind": "agent", "agent": "planner", "model": "plan",
             "prompt": "Plan for {{ input.issue }}"},
            {"id": "tests", "kind": "command", "deps": ["plan"],
             "shell": "echo \"ran after: $PLAN\"; echo 3 passed; echo warn >&2",
             "env": {"PLAN": "{{ results.plan }}"}},
        ],
        "report": "plan={{ results.plan }}",
    });
    let id = w.start(spec, json!({"issue": "add"})).await;
    // Another run at the same time: its events must not pass the filter.
    let other = w
        .start(
            json!({"steps": [{"id": "x", "kind": "command", "argv": ["true"]}]}),
            json!({}),
        )
        .await;
    let mut sse = w.events(&id).await;
    let events = follow(&mut sse, &id, run_ended).await;
    assert_eq!(
        transitions(&events),
        vec![
            t("run_updated", "", "running"),
            t("step_updated", "plan", "running"),
            t("step_updated", "plan", "done"),
            t("step_updated", "tests", "running"),
            t("step_updated", "tests", "done"),
            t("run_updated", "", "completed"),
        ],
        "{events:?}"
    );
    for (kind, data) in &events {
        if kind == "step_updated" {
            assert_eq!(data["attempt"], 1, "{data}");
        }
    }

    let run = w.run(&id).await;
    assert_eq!(run["id"], json!(id));
    assert_eq!(run["name"], "plan-and-test");
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["input"], json!({"issue": "add"}));
    assert_eq!(run["error"], Value::Null);
    assert_eq!(run["report"], "plan=the plan: add the numbers", "{run}");
    assert_eq!(run["spec"]["steps"][1]["id"], "tests");
    let plan = step(&run, "plan");
    assert_eq!(plan["kind"], "agent");
    assert_eq!(plan["status"], "done");
    assert_eq!(plan["attempt"], 1);
    assert_eq!(plan["output"], "the plan: add the numbers");
    let tests = step(&run, "tests");
    assert_eq!(tests["kind"], "command");
    assert_eq!(tests["status"], "done");
    assert_eq!(tests["attempt"], 1);
    assert_eq!(tests["exit_code"], 0);
    assert_eq!(
        tests["output"],
        "ran after: the plan: add the numbers\n3 passed\n"
    );
    assert_eq!(tests["error"], Value::Null);
    // Timings: each step ran inside the run's lifetime, in order.
    let ms = |v: &Value| v.as_i64().unwrap_or_else(|| panic!("not a time: {v}"));
    for s in [plan, tests] {
        assert!(ms(&s["started_at"]) <= ms(&s["finished_at"]), "{s}");
        assert!(ms(&s["finished_at"]) <= ms(&run["finished_at"]), "{s}");
        assert_eq!(s["deadline_at"], Value::Null, "{s}");
    }
    assert!(ms(&plan["finished_at"]) <= ms(&tests["started_at"]));
    assert!(ms(&run["created_at"]) <= ms(&run["updated_at"]));
    // The artifacts of the run.
    let dir = w.root.join("data/runs").join(&id);
    assert_eq!(
        std::fs::read_to_string(dir.join("tests/output.txt")).unwrap(),
        "ran after: the plan: add the numbers\n3 passed\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("tests/stderr.txt")).unwrap(),
        "warn\n"
    );

    // The list: both runs, newest first; the status filter and the page.
    let other_run = {
        let mut sse = w.events(&other).await;
        follow(&mut sse, &other, run_ended).await;
        w.run(&other).await
    };
    assert_eq!(other_run["status"], "completed");
    let (status, page) = w.get("/api/runs").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let ids: Vec<&str> = page["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 2, "{page}");
    assert!(ids.contains(&id.as_str()) && ids.contains(&other.as_str()));
    assert_eq!(page["next_cursor"], Value::Null);
    let summary = page["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id)
        .unwrap();
    assert_eq!(summary["name"], "plan-and-test");
    assert_eq!(summary["status"], "completed");
    let (_, first) = w.get("/api/runs?limit=1").await;
    assert_eq!(first["runs"].as_array().unwrap().len(), 1, "{first}");
    let cursor = first["next_cursor"].as_str().unwrap();
    let (status, second) = w.get(&format!("/api/runs?limit=1&cursor={cursor}")).await;
    assert_eq!(status, StatusCode::OK, "{second}");
    assert_eq!(second["runs"].as_array().unwrap().len(), 1, "{second}");
    assert_ne!(first["runs"][0]["id"], second["runs"][0]["id"]);
    let (_, running) = w.get("/api/runs?status=running").await;
    assert_eq!(running["runs"], json!([]), "{running}");
    let (_, completed) = w.get("/api/runs?status=completed").await;
    assert_eq!(completed["runs"].as_array().unwrap().len(), 2);
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_switch_runs_one_branch_and_skips_the_other_branch_not_taken() {
    let w = world().await;
    let spec = json!({
        "steps": [
            {"id": "check", "kind": "command", "argv": ["echo", "green"]},
            {"id": "route", "kind": "switch", "deps": ["check"],
             "cases": [{"label": "green", "condition": "results[\"check\"].contains(\"green\")", "steps": ["ship"]}],
             "default": ["fix-it"]},
            {"id": "ship", "kind": "command", "deps": ["route"], "argv": ["echo", "shipped"]},
            {"id": "fix-it", "kind": "command", "deps": ["route"], "argv": ["echo", "fixing"]},
            {"id": "summary", "kind": "command", "deps": ["ship", "fix-it"],
             "argv": ["echo", "route={{ results.route }}"]},
        ],
    });
    let id = w.start(spec, json!(null)).await;
    let mut sse = w.events(&id).await;
    let events = follow(&mut sse, &id, run_ended).await;
    // The untaken branch is never started: its only event is the skip.
    let fix_events: Vec<&Value> = events
        .iter()
        .filter(|(k, d)| k == "step_updated" && d["step_id"] == "fix-it")
        .map(|(_, d)| d)
        .collect();
    assert_eq!(fix_events.len(), 1, "{events:?}");
    assert_eq!(fix_events[0]["status"], "skipped");
    assert_eq!(fix_events[0]["skip_reason"], "branch_not_taken");

    let run = w.run(&id).await;
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["input"], json!({}));
    let route = step(&run, "route");
    assert_eq!(route["status"], "done");
    assert_eq!(
        route["switch"],
        json!({"chosen": "green", "excluded": ["fix-it"]})
    );
    assert_eq!(step(&run, "ship")["status"], "done");
    assert_eq!(step(&run, "ship")["output"], "shipped\n");
    let fix = step(&run, "fix-it");
    assert_eq!(fix["status"], "skipped");
    assert_eq!(fix["skip_reason"], "branch_not_taken");
    assert_eq!(fix["attempt"], 0);
    assert_eq!(fix["output"], Value::Null);
    assert_eq!(step(&run, "summary")["output"], "route=green\n");
    w.shutdown().await;
}

/// A gate, then an agent (its output streamed as `agent_output` of the
/// run), then a command; `cleanup` runs whatever happened (`all_done`).
fn gated_spec() -> Value {
    json!({
        "name": "gated",
        "steps": [
            {"id": "build", "kind": "command", "argv": ["echo", "v1"]},
            {"id": "gate", "kind": "approval", "deps": ["build"],
             "message": "Ship {{ results.build | trim }} for {{ input.who }}?"},
            {"id": "plan", "kind": "agent", "deps": ["gate"], "agent": "planner", "model": "plan",
             "prompt": "Plan the release"},
            {"id": "ship", "kind": "command", "deps": ["plan"], "argv": ["echo", "shipped"]},
            {"id": "cleanup", "kind": "command", "deps": ["ship"], "trigger_rule": "all_done",
             "argv": ["echo", "cleaned"]},
        ],
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_approval_waits_and_approve_lets_the_run_complete() {
    let w = world().await;
    let id = w.start(gated_spec(), json!({"who": "ana"})).await;
    let mut sse = w.events(&id).await;
    let waiting = follow(&mut sse, &id, |k, d| {
        k == "run_updated" && d["status"] == "waiting"
    })
    .await;
    assert_eq!(
        transitions(&waiting),
        vec![
            t("run_updated", "", "running"),
            t("step_updated", "build", "running"),
            t("step_updated", "build", "done"),
            t("step_updated", "gate", "waiting"),
            t("run_updated", "", "waiting"),
        ]
    );
    let run = w.run(&id).await;
    assert_eq!(run["status"], "waiting", "{run}");
    let gate = step(&run, "gate");
    assert_eq!(gate["status"], "waiting");
    assert_eq!(gate["message"], "Ship v1 for ana?");
    assert_eq!(step(&run, "plan")["status"], "pending");

    // A step that is not an approval, and one that is not waiting: 409.
    for (path, why) in [("build", "done"), ("plan", "not an approval")] {
        let (status, body) = w
            .post(&format!("/api/runs/{id}/steps/{path}/approve"), json!({}))
            .await;
        assert_eq!(status, StatusCode::CONFLICT, "{why}: {body}");
        assert_error(&body, "conflict");
    }

    let (status, gate) = w
        .post(
            &format!("/api/runs/{id}/steps/gate/approve"),
            json!({"by": "ana", "comment": "lgtm"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{gate}");
    assert_eq!(gate["id"], "gate");
    assert_eq!(gate["status"], "done");
    assert_eq!(gate["approval"]["approved"], true);
    assert_eq!(gate["approval"]["by"], "ana");
    assert_eq!(gate["approval"]["comment"], "lgtm");
    assert!(gate["approval"]["at"].is_i64(), "{gate}");
    // Decided once: approving or rejecting again is a 409.
    for verb in ["approve", "reject"] {
        let (status, body) = w
            .post(
                &format!("/api/runs/{id}/steps/gate/{verb}"),
                json!({"by": "bob"}),
            )
            .await;
        assert_eq!(status, StatusCode::CONFLICT, "{verb}: {body}");
        assert_error(&body, "conflict");
        assert_eq!(body["error"]["status"], "done", "{body}");
    }

    let rest = follow(&mut sse, &id, run_ended).await;
    // The agent's text reached the run's stream, live, tagged with its step.
    assert!(
        rest.iter().any(|(k, d)| k == "agent_output"
            && d["step_id"] == "plan"
            && d["kind"] == "text"
            && d["text"].as_str().is_some_and(|t| t.contains("the plan"))),
        "{rest:?}"
    );
    let stored = transitions(&rest);
    assert_eq!(stored.first(), Some(&t("step_updated", "gate", "done")));
    assert_eq!(stored.last(), Some(&t("run_updated", "", "completed")));
    let run = w.run(&id).await;
    assert_eq!(run["status"], "completed", "{run}");
    for s in ["plan", "ship", "cleanup"] {
        assert_eq!(step(&run, s)["status"], "done", "{s}: {run}");
    }
    assert_eq!(step(&run, "gate")["approval"]["by"], "ana");
    // The run ended: its approval cannot be decided again.
    let (status, _) = w
        .post(&format!("/api/runs/{id}/steps/gate/reject"), json!({}))
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rejection_fails_the_gate_and_the_trigger_rules_decide() {
    let w = world().await;
    let id = w.start(gated_spec(), json!({"who": "bob"})).await;
    let mut sse = w.events(&id).await;
    follow(&mut sse, &id, |k, d| {
        k == "step_updated" && d["step_id"] == "gate" && d["status"] == "waiting"
    })
    .await;
    // No body at all: nobody named, no comment.
    let response = w
        .client
        .post(format!("{}/api/runs/{id}/steps/gate/reject", w.url))
        .send()
        .await
        .unwrap();
    let (status, gate) = json_of(response).await;
    assert_eq!(status, StatusCode::OK, "{gate}");
    assert_eq!(gate["status"], "failed");
    assert_eq!(gate["approval"]["approved"], false);
    assert_eq!(gate["approval"]["by"], Value::Null);
    assert_eq!(gate["error"]["rejected"], true, "{gate}");
    let (status, body) = w
        .post(&format!("/api/runs/{id}/steps/gate/approve"), json!({}))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");

    follow(&mut sse, &id, run_ended).await;
    let run = w.run(&id).await;
    // plan and ship need all_success: skipped for the failure upstream;
    // cleanup (all_done) runs, and as the only leaf it settles the run.
    for s in ["plan", "ship"] {
        assert_eq!(step(&run, s)["status"], "skipped", "{s}: {run}");
        assert_eq!(step(&run, s)["skip_reason"], "upstream_failed", "{s}");
    }
    assert_eq!(step(&run, "cleanup")["status"], "done");
    assert_eq!(step(&run, "cleanup")["output"], "cleaned\n");
    assert_eq!(run["status"], "completed", "{run}");
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn unknown_runs_and_steps_are_404_on_every_route_that_takes_them() {
    let w = world().await;
    let missing = "0123456789abcdef0123456789abcdef";
    let routes: Vec<(Method, String)> = vec![
        (Method::GET, format!("/api/runs/{missing}")),
        (Method::POST, format!("/api/runs/{missing}/cancel")),
        (
            Method::POST,
            format!("/api/runs/{missing}/steps/gate/approve"),
        ),
        (
            Method::POST,
            format!("/api/runs/{missing}/steps/gate/reject"),
        ),
        (Method::GET, "/api/runs/not-a-run-id".to_owned()),
    ];
    for (method, path) in routes {
        let (status, body) = w.call(method.clone(), &path, None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {path}: {body}");
        assert_error(&body, "not_found_id");
        assert_eq!(body["error"]["what"], "run", "{body}");
    }
    let id = w.start(gated_spec(), json!({"who": "x"})).await;
    for verb in ["approve", "reject"] {
        let (status, body) = w
            .post(
                &format!("/api/runs/{id}/steps/no-such-step/{verb}"),
                json!({}),
            )
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{verb}: {body}");
        assert_error(&body, "not_found_id");
        assert_eq!(body["error"]["what"], "step", "{body}");
        assert_eq!(body["error"]["run_id"], json!(id), "{body}");
    }
    // Bad bodies of approve/reject are 400s.
    for body in [json!({"who": "me"}), json!({"by": 7}), json!([1])] {
        let (status, answer) = w
            .post(&format!("/api/runs/{id}/steps/gate/approve"), body.clone())
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {answer}");
        assert_error(&answer, "invalid_input");
    }
    let (status, _) = w.post(&format!("/api/runs/{id}/cancel"), json!({})).await;
    assert_eq!(status, StatusCode::OK);
    w.shutdown().await;
}

/// Whether a process of group `pgid` still exists (`kill -0 -PGID`; dash's
/// builtin takes no `--`).
fn group_alive(pgid: i32) -> bool {
    Command::new("sh")
        .args(["-c", &format!("kill -0 -{pgid} 2>/dev/null")])
        .status()
        .unwrap()
        .success()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancel_kills_a_hung_commands_process_group_and_cancels_the_rest() {
    let w = world().await;
    let pids = w.root.join("work/pids");
    // Sandbox `off`: the test reads the host pids of the command's group,
    // which a PID namespace would renumber (a sandboxed tree dies with its
    // namespace: coderig's flow_engine.rs tests that cancel).
    let spec = json!({
        "steps": [
            {"id": "hang", "kind": "command", "sandbox": {"mode": "off"},
             "shell": format!("sleep 600 & echo $$ $! > {}.tmp; mv {}.tmp {}; wait",
                              pids.display(), pids.display(), pids.display())},
            {"id": "after", "kind": "command", "deps": ["hang"], "argv": ["echo", "never"]},
            {"id": "other", "kind": "approval"},
        ],
    });
    let id = w.start(spec, json!({})).await;
    let mut sse = w.events(&id).await;
    follow(&mut sse, &id, |k, d| {
        k == "step_updated" && d["step_id"] == "hang" && d["status"] == "running"
    })
    .await;
    // The shell wrote its pid and its child's once both run.
    let text = loop {
        if let Ok(text) = std::fs::read_to_string(&pids) {
            break text;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let numbers: Vec<i32> = text
        .split_whitespace()
        .map(|n| n.parse().unwrap())
        .collect();
    let (shell, sleeper) = (numbers[0], numbers[1]);
    // The command is its own process group, the shell its leader.
    assert!(group_alive(shell), "group {shell} is not running");

    let (status, run) = w.post(&format!("/api/runs/{id}/cancel"), json!({})).await;
    assert_eq!(status, StatusCode::OK, "{run}");
    assert_eq!(run["status"], "cancelled", "{run}");
    // Terminal everywhere at once: the cancel's answer and the first read
    // after it show every step cancelled — the hung one, the one that never
    // ran and the waiting approval — while the processes may still be
    // dying.
    let read = w.run(&id).await;
    for r in [&run, &read] {
        assert_eq!(r["status"], "cancelled", "{r}");
        for s in ["hang", "after", "other"] {
            assert_eq!(step(r, s)["status"], "cancelled", "{s}: {r}");
        }
    }
    // On the stream the steps' cancellations come before the run's, which
    // ends it: a follower that stops there has seen every step's.
    let tail = follow(&mut sse, &id, run_ended).await;
    let (last_kind, last) = tail.last().unwrap();
    assert_eq!(
        (last_kind.as_str(), &last["status"]),
        ("run_updated", &json!("cancelled"))
    );
    let settled: std::collections::BTreeSet<&str> = tail
        .iter()
        .filter(|(k, d)| k == "step_updated" && d["status"] == "cancelled")
        .map(|(_, d)| d["step_id"].as_str().unwrap())
        .collect();
    assert_eq!(settled, ["after", "hang", "other"].into(), "{tail:#?}");
    let run = w.run(&id).await;
    assert_eq!(step(&run, "hang")["attempt"], 1);
    assert_eq!(step(&run, "after")["attempt"], 0);
    // Nothing of the command's group is left: the shell and its sleep.
    // (Bounded wait: the kill is asynchronous to the events.)
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while group_alive(shell) {
        assert!(
            std::time::Instant::now() < deadline,
            "the process group {shell} survived the cancel"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        !Command::new("kill")
            .args(["-0", &sleeper.to_string()])
            .stderr(Stdio::null())
            .status()
            .unwrap()
            .success(),
        "the sleep {sleeper} survived the cancel"
    );
    // A second cancel: the run already ended.
    let (status, body) = w.post(&format!("/api/runs/{id}/cancel"), json!({})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_error(&body, "conflict");
    w.shutdown().await;
}

/// A cwd whose template renders a NUL (from the input: no schema can see
/// it) fails its step with `invalid_input`, like any cwd outside the
/// roots; the run fails, the server goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cwd_that_renders_a_nul_fails_its_step_not_the_server() {
    let w = world().await;
    let spec = json!({"steps": [
        {"id": "a", "kind": "command", "argv": ["true"], "cwd": "{{ input.dir }}"},
    ]});
    let id = w.start(spec, json!({"dir": "sub\u{0}dir"})).await;
    let mut sse = w.events(&id).await;
    follow(&mut sse, &id, run_ended).await;
    let run = w.run(&id).await;
    assert_eq!(run["status"], "failed", "{run}");
    let a = step(&run, "a");
    assert_eq!(a["status"], "failed", "{a}");
    assert_eq!(a["error"]["kind"], "invalid_input", "{a}");
    assert!(
        a["error"]["message"].as_str().unwrap().contains("NUL"),
        "{a}"
    );
    let (status, _) = w.get("/api/health").await;
    assert_eq!(status, StatusCode::OK);
    w.shutdown().await;
}
