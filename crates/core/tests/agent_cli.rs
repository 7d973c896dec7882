//! `CliAgent` on real processes: a `custom` agent whose command is `sh -c`
//! printing real stream lines, so every ending of a turn (result, exit
//! code, no result, cancel, idle, missing binary, a closed receiver) is
//! driven through the runner, the parser and the end-of-turn table.

#![cfg(unix)]

use coderig::agent::parse::StreamFormat;
use coderig::agent::{
    Access, Agent, AgentError, AgentErrorKind, AgentEvent, CliAgent, CliConfig, CliPreset, Turn,
    TurnOutcome,
};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const INIT: &str = r#"{"type":"system","subtype":"init","session_id":"s1","model":"m"}"#;
const TEXT: &str = r#"{"type":"assistant","message":{"content":[{"type":"text","text":"done"}]}}"#;
const RESULT: &str = r#"{"type":"result","subtype":"success","is_error":false,"result":"done","num_turns":1,"usage":{"input_tokens":3,"output_tokens":2}}"#;

fn agent(script: &str) -> CliAgent {
    let mut c = CliConfig::new(CliPreset::Custom);
    c.command = Some("sh".into());
    c.args = vec!["-c".into(), script.into(), "sh".into(), "{prompt}".into()];
    c.format = Some(StreamFormat::ClaudeStreamJson);
    c.kill_grace = Duration::from_millis(300);
    CliAgent::new(c)
}

/// `echo` of each line, single-quoted for sh.
fn lines(ls: &[&str]) -> String {
    ls.iter()
        .map(|l| format!("echo '{l}'; "))
        .collect::<String>()
}

async fn run(
    agent: &CliAgent,
    turn: Turn,
    cancel: CancellationToken,
) -> (Result<TurnOutcome, AgentError>, Vec<AgentEvent>) {
    let (tx, mut rx) = mpsc::channel(64);
    let result = agent.run(turn, tx, cancel).await;
    let mut events = Vec::new();
    while let Ok(e) = rx.try_recv() {
        events.push(e);
    }
    (result, events)
}

fn edit(prompt: &str) -> Turn {
    Turn::new(prompt).access(Access::Edit)
}

#[tokio::test]
async fn a_result_is_an_outcome_and_a_repeated_session_is_announced_once() {
    let a = agent(&(lines(&[INIT, "not json", INIT, TEXT, RESULT]) + "exit 0"));
    let (r, events) = run(&a, edit("hi"), CancellationToken::new()).await;
    let o = r.unwrap();
    assert_eq!(o.final_text, "done");
    assert_eq!(o.session_id.as_deref(), Some("s1"));
    assert_eq!((o.usage.input, o.usage.output), (3, 2));
    assert_eq!(o.exit_code, Some(0));
    let kinds: Vec<_> = events.iter().map(|e| e.type_name()).collect();
    assert_eq!(
        kinds,
        ["session_started", "text_delta", "usage", "finished"]
    );
}

#[tokio::test]
async fn the_prompt_and_the_work_dir_reach_the_command() {
    let dir = tempfile::tempdir().unwrap();
    // Echo the prompt ($1) and the cwd back as assistant text.
    let a = agent(
        r#"printf '{"type":"assistant","message":{"content":[{"type":"text","text":"%s|%s"}]}}\n' "$1" "$(pwd)""#,
    );
    let turn = edit("fix it").workdir(dir.path());
    let (r, _) = run(&a, turn, CancellationToken::new()).await;
    let cwd = dir.path().canonicalize().unwrap();
    assert_eq!(r.unwrap().final_text, format!("fix it|{}", cwd.display()));
}

#[tokio::test]
async fn a_closed_receiver_does_not_stop_the_turn() {
    let a = agent(&(lines(&[INIT, TEXT, TEXT, TEXT, RESULT]) + "exit 0"));
    let (tx, rx) = mpsc::channel(1);
    drop(rx);
    let o = a
        .run(edit("hi"), tx, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(o.final_text, "done");
}

#[tokio::test]
async fn endings_map_to_error_kinds() {
    let err = |r: Result<TurnOutcome, AgentError>| r.unwrap_err();
    // exit 0 without a result
    let e = err(run(
        &agent("echo noise; exit 0"),
        edit("x"),
        CancellationToken::new(),
    )
    .await
    .0);
    assert_eq!(e.kind, AgentErrorKind::Protocol, "{e:?}");
    assert!(e.message.contains("without a result"), "{e:?}");
    // a non-zero exit with no error event: the stderr tail is the evidence
    let e = err(run(
        &agent("echo 'auth failed: invalid api key' >&2; exit 2"),
        edit("x"),
        CancellationToken::new(),
    )
    .await
    .0);
    assert_eq!(
        (e.kind, e.exit_code),
        (AgentErrorKind::Exit, Some(2)),
        "{e:?}"
    );
    assert!(e.stderr_tail.contains("invalid api key"), "{e:?}");
    // a non-zero exit after the agent's own error result
    let failed = r#"{"type":"result","subtype":"error_during_execution","is_error":true,"result":"API Error: 429 rate limited","api_error_status":429}"#;
    let e = err(run(
        &agent(&(lines(&[INIT, failed]) + "exit 1")),
        edit("x"),
        CancellationToken::new(),
    )
    .await
    .0);
    assert_eq!(e.kind, AgentErrorKind::Provider, "{e:?}");
    assert_eq!(e.class, coderig::model::ErrorClass::Retry, "{e:?}");
    // a missing binary
    let mut c = CliConfig::new(CliPreset::Custom);
    c.command = Some("/nonexistent/coderig-agent".into());
    let e = err(run(&CliAgent::new(c), edit("x"), CancellationToken::new())
        .await
        .0);
    assert_eq!(e.kind, AgentErrorKind::Spawn, "{e:?}");
    // a work dir that is not there
    let turn = edit("x").workdir("/nonexistent/coderig-dir");
    let e = err(run(&agent("exit 0"), turn, CancellationToken::new())
        .await
        .0);
    assert_eq!(e.kind, AgentErrorKind::Spawn, "{e:?}");
    // read_only on a custom agent that does not enforce it
    let e = err(
        run(&agent("exit 0"), Turn::new("x"), CancellationToken::new())
            .await
            .0,
    );
    assert_eq!(e.kind, AgentErrorKind::Unavailable, "{e:?}");
}

#[tokio::test]
async fn cancel_and_idle_end_a_hung_agent() {
    let hung = lines(&[INIT]) + "sleep 300";
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let a = agent(&hung);
    let (tx, mut rx) = mpsc::channel(8);
    let run = a.run(edit("x"), tx, cancel);
    let watcher = async move {
        // Cancel once the agent has said something: it is running.
        if rx.recv().await.is_some() {
            trigger.cancel();
        }
    };
    let (r, ()) = tokio::join!(run, watcher);
    assert_eq!(r.unwrap_err().kind, AgentErrorKind::Cancelled);

    let turn = edit("x").idle_timeout(Duration::from_millis(300));
    let e = run_err(&agent(&hung), turn).await;
    assert_eq!(e.kind, AgentErrorKind::Idle, "{e:?}");

    let ticking = "while :; do echo tick; sleep 0.05; done";
    let turn = edit("x").timeout(Duration::from_millis(500));
    let e = run_err(&agent(ticking), turn).await;
    assert_eq!(e.kind, AgentErrorKind::Timeout, "{e:?}");
}

async fn run_err(a: &CliAgent, turn: Turn) -> AgentError {
    run(a, turn, CancellationToken::new()).await.0.unwrap_err()
}
