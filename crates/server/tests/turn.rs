//! `coderig agents` and `coderig turn` run as processes on a temporary rig
//! (a `coderig.toml` of scripted agents, a real work dir): the JSON lines
//! and exit codes of every ending — finished, failed, hung, unknown
//! identity, bad usage, interrupted by SIGINT.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};

const RIG: &str = r#"
[agents.alice]
kind = "scripted"
script = [
    { tool_call = { name = "write_file", input = { path = "fix.py" } } },
    { write = { path = "fix.py", content = "x = 1\n" } },
    { tool_result = { ok = true, output = "wrote fix.py" } },
    { text = "done" },
    { usage = { input = 10, output = 3 } },
]
scripts = { broken = [ { text = "trying" }, { fail = { message = "model not found: nope" } } ], hang = [ { text = "waiting" }, { hang = true } ] }
[agents.bob]
kind = "scripted"
lane = "local"
script = [ { text = "hi" } ]
[agents.ghost]
kind = "cli"
preset = "custom"
command = "/nonexistent/coderig-ghost"
args = ["{prompt}"]
format = "text"
"#;

/// A temporary rig: `coderig.toml` and a work dir `w`.
fn rig() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("coderig.toml"), RIG).unwrap();
    std::fs::create_dir(dir.path().join("w")).unwrap();
    dir
}

/// `coderig ARGS` in `dir`, untouched by the caller's rig settings.
fn command(dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_coderig"));
    command
        .args(args)
        .current_dir(dir)
        .env_remove("CODERIG_CONFIG")
        .env_remove("CODERIG_DATA_DIR")
        .env_remove("DATABASE_URL")
        .env_remove("NO_COLOR")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

fn coderig(dir: &Path, args: &[&str]) -> Output {
    command(dir, args).output().unwrap()
}

fn lines(output: &Output) -> Vec<Value> {
    String::from_utf8(output.stdout.clone())
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line:?}")))
        .collect()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

#[test]
fn agents_json_lists_the_configured_agents() {
    let dir = rig();
    let output = coderig(dir.path(), &["agents", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let agents: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        agents,
        json!([
            {"identity": "alice", "kind": "scripted", "lane": "cloud", "installed": true,
             "reachable": true, "models": ["broken", "hang"], "sandbox": "none"},
            {"identity": "bob", "kind": "scripted", "lane": "local", "installed": true,
             "reachable": true, "models": [], "sandbox": "none"},
            {"identity": "ghost", "kind": "cli", "preset": "custom", "lane": "cloud",
             "installed": false, "reachable": null, "models": [],
             "error": "/nonexistent/coderig-ghost not found on PATH or not executable",
             "sandbox": "enforce"},
        ])
    );
}

#[test]
fn agents_prints_a_table_and_takes_config_anywhere() {
    let dir = rig();
    let elsewhere = tempfile::tempdir().unwrap();
    let config = dir.path().join("coderig.toml");
    let config = config.to_str().unwrap();
    for args in [
        vec!["agents", "--config", config],
        vec!["--config", config, "agents"],
    ] {
        let output = coderig(elsewhere.path(), &args);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let text = String::from_utf8(output.stdout).unwrap();
        let rows: Vec<&str> = text.lines().collect();
        assert_eq!(rows.len(), 4, "{text}");
        assert!(rows[0].starts_with("IDENTITY  KIND"), "{text}");
        assert!(rows[1].starts_with("alice "), "{text}");
        assert!(rows[1].contains("broken,hang"), "{text}");
        assert!(rows[2].contains(" local "), "{text}");
        // Not installed, and why.
        assert!(
            rows[3].starts_with("ghost     cli/custom  cloud  no "),
            "{text}"
        );
        assert!(
            rows[3].ends_with("/nonexistent/coderig-ghost not found on PATH or not executable"),
            "{text}"
        );
    }
    // Without a config: no agents, said on stderr.
    let output = coderig(elsewhere.path(), &["agents"]);
    assert_eq!(output.status.code(), Some(0));
    assert!(output.stdout.is_empty());
    assert!(stderr(&output).contains("no agents configured"));
    let output = coderig(elsewhere.path(), &["agents", "--json"]);
    assert_eq!(String::from_utf8(output.stdout).unwrap(), "[]\n");
}

#[test]
fn a_given_config_must_exist_and_be_valid() {
    let dir = rig();
    let output = coderig(dir.path(), &["agents", "--config", "missing.toml"]);
    assert_eq!(output.status.code(), Some(3), "io");
    assert!(
        stderr(&output).contains("cannot read missing.toml"),
        "{}",
        stderr(&output)
    );
    std::fs::write(
        dir.path().join("bad.toml"),
        "[agents.a]\nkind = \"robot\"\n",
    )
    .unwrap();
    let output = coderig(dir.path(), &["agents", "--config", "bad.toml"]);
    assert_eq!(output.status.code(), Some(2), "invalid_input");
    assert!(
        stderr(&output).contains("agents.a.kind"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn turn_json_streams_the_events_then_the_outcome() {
    let dir = rig();
    let output = coderig(
        dir.path(),
        &[
            "turn",
            "alice:default",
            "--prompt",
            "hi",
            "--workdir",
            "w",
            "--access",
            "edit",
            "--json",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let mut lines = lines(&output);
    let mut outcome = lines.pop().unwrap();
    assert_eq!(
        lines,
        vec![
            json!({"type": "session_started", "session_id": "scripted-1", "model": "default"}),
            json!({"type": "tool_call", "id": "call_1_0", "name": "write_file", "input": {"path": "fix.py"}}),
            json!({"type": "tool_call", "id": "call_1_1", "name": "write", "input": {"path": "fix.py", "content": "x = 1\n"}}),
            json!({"type": "tool_result", "id": "call_1_1", "ok": true, "output": "write fix.py: ok"}),
            json!({"type": "tool_result", "id": "call_1_0", "ok": true, "output": "wrote fix.py"}),
            json!({"type": "text_delta", "text": "done"}),
            json!({"type": "usage", "input": 10, "output": 3, "cache_read": 0, "cache_write": 0, "reasoning": 0}),
            json!({"type": "finished", "stop_reason": "end_turn", "num_turns": 1}),
        ]
    );
    // Timings vary; the rest is exact.
    let object = outcome.as_object_mut().unwrap();
    assert!(object.remove("duration_ms").unwrap().is_u64());
    assert!(object.remove("ttft_ms").unwrap().is_u64());
    assert_eq!(
        outcome,
        json!({"type": "outcome", "ok": true, "final_text": "done",
               "usage": {"input": 10, "output": 3, "cache_read": 0, "cache_write": 0, "reasoning": 0},
               "session_id": "scripted-1", "model": "default", "num_turns": 1, "stop_reason": "end_turn"})
    );
    assert!(String::from_utf8(output.stdout)
        .unwrap()
        .starts_with("{\"type\":\"session_started\""));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("w/fix.py")).unwrap(),
        "x = 1\n"
    );
}

#[test]
fn turn_human_streams_text_to_stdout_and_notes_to_stderr() {
    let dir = rig();
    let prompt = dir.path().join("prompt.txt");
    std::fs::write(&prompt, "hi").unwrap();
    let output = coderig(
        dir.path(),
        &[
            "turn",
            "alice",
            "--prompt-file",
            prompt.to_str().unwrap(),
            "--workdir",
            "w",
            "--access",
            "edit",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(String::from_utf8(output.stdout.clone()).unwrap(), "done\n");
    let notes = stderr(&output);
    // Not a terminal: no escape codes.
    assert!(!notes.contains('\x1b'), "{notes:?}");
    let notes: Vec<&str> = notes.lines().collect();
    assert_eq!(
        notes[..5],
        [
            "· session scripted-1",
            "→ write_file {\"path\":\"fix.py\"}",
            "→ write {\"content\":\"x = 1\\n\",\"path\":\"fix.py\"}",
            "← ok write fix.py: ok",
            "← ok wrote fix.py",
        ]
    );
    assert!(notes[5].starts_with("done: "), "{notes:?}");
    assert!(
        notes[5].contains("10 in / 3 out tokens · stop end_turn"),
        "{notes:?}"
    );
}

#[test]
fn a_failing_turn_ends_ok_false_and_exits_1() {
    let dir = rig();
    let output = coderig(
        dir.path(),
        &["turn", "alice:broken", "--prompt", "hi", "--json"],
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let lines = lines(&output);
    assert_eq!(lines[1], json!({"type": "text_delta", "text": "trying"}));
    assert_eq!(
        lines.last().unwrap(),
        &json!({"type": "outcome", "ok": false, "error": {
            "kind": "agent", "code": "AGENT", "message": "model not found: nope",
            "agent_error": "provider", "class": "fallback"}})
    );
    let output = coderig(dir.path(), &["turn", "alice:broken", "--prompt", "hi"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8(output.stdout.clone()).unwrap(),
        "trying\n"
    );
    assert!(
        stderr(&output).contains("failed (provider, fallback): model not found: nope"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn an_agent_that_cannot_start_fails_the_turn() {
    let dir = rig();
    let output = coderig(
        dir.path(),
        &[
            "turn", "ghost", "--prompt", "hi", "--access", "edit", "--json",
        ],
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let outcome = lines(&output).pop().unwrap();
    assert_eq!(outcome["ok"], false);
    assert_eq!(outcome["error"]["agent_error"], "spawn", "{outcome}");
}

#[test]
fn a_hung_turn_is_killed_by_the_idle_timeout() {
    let dir = rig();
    let started = std::time::Instant::now();
    let output = coderig(
        dir.path(),
        &[
            "turn",
            "alice:hang",
            "--prompt",
            "hi",
            "--idle-timeout",
            "200ms",
            "--json",
        ],
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    let outcome = lines(&output).pop().unwrap();
    assert_eq!(outcome["ok"], false);
    assert_eq!(outcome["error"]["kind"], "agent");
    assert_eq!(outcome["error"]["agent_error"], "idle", "{outcome}");
}

#[test]
fn an_unknown_identity_is_not_found_id_on_stderr_or_as_json() {
    let dir = rig();
    let expected = coderig::ErrorKind::NotFoundId.exit_code();
    let message = "no agent \"carol\"; configured: alice, bob, ghost";
    let output = coderig(dir.path(), &["turn", "carol:m", "--prompt", "hi"]);
    assert_eq!(output.status.code(), Some(expected), "{}", stderr(&output));
    assert!(output.stdout.is_empty());
    assert_eq!(
        stderr(&output),
        format!("coderig turn: not_found_id: {message}\n")
    );
    // --json: the error body on stdout, as every error with --json.
    let output = coderig(dir.path(), &["turn", "carol:m", "--prompt", "hi", "--json"]);
    assert_eq!(output.status.code(), Some(expected), "{}", stderr(&output));
    assert_eq!(stderr(&output), "");
    let body = lines(&output).pop().unwrap();
    assert_eq!(body["ok"], false);
    assert_eq!(body["error"]["kind"], "not_found_id");
    assert_eq!(body["error"]["message"], message);
}

#[test]
fn bad_usage_exits_2() {
    let dir = rig();
    for args in [
        &["turn", "alice", "--prompt", "hi", "--access", "write"][..],
        &["turn", "alice", "--prompt", "hi", "--timeout", "soon"][..],
        &["turn", "alice"][..],
        &["turn", "alice", "--prompt", "a", "--prompt-file", "f"][..],
        &["turn", "alice:", "--prompt", "hi"][..],
    ] {
        let output = coderig(dir.path(), args);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            stderr(&output)
        );
    }
    let output = coderig(
        dir.path(),
        &["turn", "alice", "--prompt", "hi", "--access", "write"],
    );
    assert!(
        stderr(&output)
            .contains("unknown access level \"write\"; expected one of: read_only, edit, full"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn sigint_cancels_the_turn_and_exits_130() {
    let dir = rig();
    let mut child = command(
        dir.path(),
        &["turn", "alice:hang", "--prompt", "hi", "--json"],
    )
    .spawn()
    .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut seen = vec![];
    // The agent is hanging once its text came.
    while !seen.iter().any(|l: &Value| l["type"] == "text_delta") {
        let mut line = String::new();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "stdout ended early"
        );
        seen.push(serde_json::from_str(&line).unwrap());
    }
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let outcome: Value = serde_json::from_str(rest.trim()).unwrap();
    assert_eq!(outcome["ok"], false);
    assert_eq!(outcome["error"]["agent_error"], "cancelled", "{outcome}");
}
