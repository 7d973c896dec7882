//! The native agent in the runtime, through the faces with no
//! face-specific code: a battle of two native contestants (one fixes the
//! exercise, one changes nothing) and a flow whose fixer is native, over
//! HTTP and through the CLI (`battle run --json`, `run FLOW --json`).
//!
//! The model is the project's scripted model server on loopback (tool
//! scripts played by model name); the project is the `bowling` exercise
//! of tests/agentbench in a real git repository; the oracle and the
//! native agent's `run` tool run the real `python3` tests under the real
//! sandbox.

#![cfg(unix)]

mod common;

use coderig::agent::Registry;
use coderig::rig::RigConfig;
use coderig_scripted_model::script::Script;
use coderig_scripted_model::ScriptedModelServer;
use coderig_server::Config;
use common::SseClient;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const TESTS: &str = "python3 -m unittest -q bowling_test";

fn bench() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/agentbench/polyglot-python/bowling")
}

fn answer() -> String {
    std::fs::read_to_string(bench().join(".meta/example.py")).unwrap()
}

/// The bowling stub and its tests as a git repository at `dir`.
fn make_project(dir: &Path) {
    let read = |f: &str| std::fs::read_to_string(bench().join(f)).unwrap();
    let (stub, tests) = (read("bowling.py"), read("bowling_test.py"));
    common::calc::repository(
        dir,
        &[
            ("bowling.py", &stub),
            ("bowling_test.py", &tests),
            (".gitignore", "__pycache__/\n"),
        ],
    );
}

fn tests_pass(dir: &Path) -> bool {
    Command::new("sh")
        .args(["-c", TESTS])
        .current_dir(dir)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap()
        .success()
}

fn call(name: &str, args: Value) -> Value {
    json!({"name": name, "arguments": args})
}

/// The model scripts: `fix` reads, writes the answer, runs the tests and
/// finishes; `idle` looks and answers without changing anything.
fn model_server() -> ScriptedModelServer {
    let server = ScriptedModelServer::start().unwrap();
    let fix = json!({"steps": [
        {"calls": [call("list_files", json!({}))]},
        {"calls": [call("read_file", json!({"path": "bowling.py"}))]},
        {"calls": [call("write_file", json!({"path": "bowling.py", "content": answer()}))]},
        {"calls": [call("run", json!({"command": TESTS}))]},
        {"calls": [call("finish", json!({"summary": "Implemented BowlingGame; the tests pass."}))]}
    ]});
    let idle = json!({"steps": [
        {"calls": [call("list_files", json!({}))]},
        {"say": "I would need more time to do this."}
    ]});
    server.add_script("fix", Script::from_json(&fix.to_string()).unwrap());
    server.add_script("idle", Script::from_json(&idle.to_string()).unwrap());
    server
}

fn rig_toml(server: &ScriptedModelServer) -> String {
    format!(
        r#"
[agents.local]
kind = "native"
base_url = "{}/v1"
max_steps = 12

[agents.judge]
kind = "scripted"
script = [ {{ text = "The judge must not be asked about a lone result." }} ]
"#,
        server.base_url()
    )
}

struct World {
    api: common::Api,
    project: PathBuf,
    _server: ScriptedModelServer,
}

async fn world() -> World {
    common::install_crypto();
    let server = model_server();
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let project = root.join("projects").join("bowling");
    make_project(&project);
    let mut rig = RigConfig::new(root.join("data"));
    rig.agents = Registry::from_toml_str(&rig_toml(&server)).unwrap();
    rig.project_roots = vec![root.join("projects")];
    rig.poll = Some(Duration::from_millis(100));
    let served = common::spawn_rig(Config::default(), rig, tmp).await;
    World {
        api: common::Api::new(served.url, None),
        project,
        _server: server,
    }
}

impl std::ops::Deref for World {
    type Target = common::Api;

    fn deref(&self) -> &common::Api {
        &self.api
    }
}

impl World {
    /// Follows the SSE stream of `filter` until an event of type `kind`
    /// says `status`.
    async fn until(&self, filter: &str, kind: &str, status: &str) -> Vec<Value> {
        let mut sse =
            SseClient::open(&format!("{}/api/events?{filter}&after=0", self.url), &[]).await;
        let mut seen = vec![];
        loop {
            let frame = sse.event().await;
            let data = frame.json();
            let done = frame.event.as_deref() == Some(kind) && data["status"] == status;
            seen.push(data);
            if done {
                return seen;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_battle_of_two_native_contestants_is_won_by_the_one_that_fixes_over_http() {
    let w = world().await;
    let (_, agents) = w.call(Method::GET, "/api/agents", None).await;
    let local = agents
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["identity"] == "local")
        .unwrap_or_else(|| panic!("{agents}"));
    assert_eq!(local["kind"], "native", "{local}");
    assert_eq!(
        local["lane"], "local",
        "a loopback server is the local lane: {local}"
    );
    assert_eq!(local["reachable"], true, "{local}");

    let spec = json!({
        "battle_type": "coding",
        "prompt": "Implement bowling.py so that bowling_test.py passes.",
        "project": w.project.display().to_string(),
        "contestants": [
            {"identity": "local", "model": "fix", "instruction": "Run the tests before you finish."},
            {"identity": "local", "model": "idle"}
        ],
        "judge": {"identity": "judge", "model": "j"},
        "contestant_timeout": "60s",
        "oracle": {"repro": TESTS, "suite": TESTS, "timeout": "60s"}
    });
    let (status, created) = w.call(Method::POST, "/api/battles", Some(spec)).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let id = created["battle_id"].as_str().unwrap().to_owned();
    let events = w
        .until(&format!("battle_id={id}"), "battle_updated", "completed")
        .await;
    // The contestants' tool calls and results came through the bus as output.
    let agent_types: Vec<String> = events
        .iter()
        .filter_map(|e| e["kind"].as_str().map(String::from))
        .collect();
    for ty in ["tool_call", "tool_result"] {
        assert!(
            agent_types.iter().any(|t| t == ty),
            "no {ty}: {agent_types:?}"
        );
    }
    let (_, battle) = w
        .call(Method::GET, &format!("/api/battles/{id}"), None)
        .await;
    assert_eq!(battle["status"], "completed", "{battle:#}");
    let by = |m: &str| {
        battle["contestants"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["model"] == m)
            .unwrap()
            .clone()
    };
    assert_eq!(
        battle["winner_contestant_id"],
        by("fix")["id"],
        "{battle:#}"
    );
    assert_eq!(battle["winner_source"], "oracle", "{battle:#}");
    assert_eq!(by("fix")["instruction"], "Run the tests before you finish.");
    // The native agent's transcript sits in the contestant's results folder.
    let folder =
        Path::new(battle["results_dir"].as_str().unwrap()).join(by("fix")["dir"].as_str().unwrap());
    let transcript = std::fs::read_to_string(folder.join("agent/transcript.jsonl")).unwrap();
    assert!(transcript.lines().count() >= 11, "{transcript}");
    assert!(
        !tests_pass(&w.project),
        "the project itself is untouched until apply"
    );
    let (status, applied) = w
        .call(
            Method::POST,
            &format!("/api/battles/{id}/apply"),
            Some(json!({})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{applied}");
    assert!(
        tests_pass(&w.project),
        "the winner's patch passes the tests"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_flow_whose_fixer_is_native_fixes_and_tests_over_http() {
    let w = world().await;
    let project = w.project.display().to_string();
    let spec = json!({
        "name": "fix-and-test",
        "steps": [
            {"id": "fix", "kind": "agent", "agent": "local", "model": "fix", "access": "edit",
             "workdir": project, "prompt": "Implement bowling.py so that bowling_test.py passes."},
            {"id": "tests", "kind": "command", "deps": ["fix"], "cwd": project, "shell": TESTS}
        ]
    });
    let (status, created) = w
        .call(
            Method::POST,
            "/api/runs",
            Some(json!({"spec": spec, "input": {}})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let id = created["run_id"].as_str().unwrap().to_owned();
    w.until(&format!("run_id={id}"), "run_updated", "completed")
        .await;
    let (_, run) = w.call(Method::GET, &format!("/api/runs/{id}"), None).await;
    let fix = run["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "fix")
        .unwrap();
    assert_eq!(fix["status"], "done", "{run:#}");
    assert!(
        fix["output"]
            .as_str()
            .unwrap_or_default()
            .contains("tests pass"),
        "the step's output is the finish summary: {fix:#}"
    );
    assert!(tests_pass(&w.project));
}

/// `coderig` with the rig's config and data dir, in `root`.
fn coderig(root: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_coderig"))
        .arg("--config")
        .arg(root.join("coderig.toml"))
        .arg("--data-dir")
        .arg(root.join("data"))
        .args(args)
        .current_dir(root)
        .env_remove("CODERIG_CONFIG")
        .env_remove("CODERIG_DATA_DIR")
        .env_remove("DATABASE_URL")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn the_cli_runs_a_native_battle_and_a_native_flow() {
    let server = model_server();
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    std::fs::write(root.join("coderig.toml"), rig_toml(&server)).unwrap();
    let project = root.join("bowling");
    make_project(&project);
    let p = project.display().to_string();
    let out = coderig(
        &root,
        &[
            "battle",
            "run",
            "--json",
            "--prompt",
            "Implement bowling.py so that bowling_test.py passes.",
            "--project",
            &p,
            "--judge",
            "judge:j",
            "--repro",
            TESTS,
            "--suite",
            TESTS,
            "--timeout",
            "60s",
            "--oracle-timeout",
            "60s",
            "-c",
            "local:fix",
            "-c",
            "local:idle",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (_, battle) = common::json_stream(&out.stdout, "battle");
    assert_eq!(battle["status"], "completed", "{battle:#}");
    assert_eq!(battle["winner_source"], "oracle", "{battle:#}");
    let winner = battle["winner_contestant_id"].clone();
    let fix = battle["contestants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["model"] == "fix")
        .unwrap();
    assert_eq!(fix["id"], winner, "{battle:#}");

    let flow = root.join("fix.yaml");
    std::fs::write(
        &flow,
        format!(
            "name: fix\nsteps:\n  - {{id: fix, kind: agent, agent: local, model: fix, access: edit, workdir: {p:?}, prompt: 'Implement bowling.py'}}\n  - {{id: tests, kind: command, deps: [fix], cwd: {p:?}, shell: {TESTS:?}}}\n"
        ),
    )
    .unwrap();
    let flow = flow.display().to_string();
    let root_s = root.display().to_string();
    let out = coderig(&root, &["run", &flow, "--json", "--project-root", &root_s]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(run["status"], "completed", "{run:#}");
    assert!(tests_pass(&project));
}
