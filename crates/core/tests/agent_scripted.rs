//! The scripted agent on a real work dir: events, files, confinement,
//! failures, timeouts and cancellation.

use coderig::agent::script::decode_script;
use coderig::agent::{Access, Agent, AgentErrorKind, AgentEvent, ScriptedAgent, Turn};
use coderig::model::ErrorClass;
use serde_json::json;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

fn agent(script: serde_json::Value) -> ScriptedAgent {
    ScriptedAgent::new(decode_script(script).unwrap())
}

async fn run(
    agent: &ScriptedAgent,
    turn: Turn,
) -> (
    Vec<AgentEvent>,
    Result<coderig::agent::TurnOutcome, coderig::agent::AgentError>,
) {
    let (tx, mut rx) = mpsc::channel(4);
    let collect = tokio::spawn(async move {
        let mut all = vec![];
        while let Some(e) = rx.recv().await {
            all.push(e);
        }
        all
    });
    let result = agent.run(turn, tx, CancellationToken::new()).await;
    (collect.await.unwrap(), result)
}

fn types(events: &[AgentEvent]) -> Vec<&'static str> {
    events.iter().map(|e| e.type_name()).collect()
}

#[tokio::test]
async fn a_script_plays_its_events_and_writes_its_files() {
    let dir = tempfile::tempdir().unwrap();
    let a = agent(json!([
        {"reasoning": "plan"}, {"write": {"path": "src/fix.py", "content": "x = 1\n"}},
        {"text": "fixed "}, {"text": "it"}, {"usage": {"input": 10, "output": 3}}, {"usage": {"input": 1, "output": 1}}
    ]));
    let turn = Turn::new("fix")
        .workdir(dir.path())
        .access(Access::Edit)
        .model("m1");
    let (events, outcome) = run(&a, turn).await;
    let outcome = outcome.unwrap();
    assert_eq!(
        types(&events),
        [
            "session_started",
            "reasoning_delta",
            "tool_call",
            "tool_result",
            "text_delta",
            "text_delta",
            "usage",
            "usage",
            "finished"
        ]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("src/fix.py")).unwrap(),
        "x = 1\n"
    );
    assert_eq!(outcome.final_text, "fixed it");
    assert_eq!((outcome.usage.input, outcome.usage.output), (11, 4));
    assert_eq!(outcome.session_id.as_deref(), Some("scripted-1"));
    assert_eq!(outcome.model.as_deref(), Some("m1"));
    assert_eq!(outcome.stop_reason.as_deref(), Some("end_turn"));
    assert!(matches!(
        &events[3],
        AgentEvent::ToolResult { ok: true, .. }
    ));
}

#[tokio::test]
async fn read_only_turns_and_escaping_paths_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
    let cases = [
        (Access::ReadOnly, "a.txt", "refused in a read_only turn"),
        (Access::Edit, "../escape.txt", "outside"),
        (Access::Edit, "link/escape.txt", "outside"),
        (Access::Full, "/tmp/coderig-abs.txt", "absolute"),
    ];
    for (access, path, why) in cases {
        let a = agent(json!([{"write": {"path": path, "content": "x"}}, {"text": "ok"}]));
        let (events, outcome) = run(&a, Turn::new("p").workdir(dir.path()).access(access)).await;
        assert!(
            outcome.is_ok(),
            "{path}: a refused write is a failed tool result, not a failed turn"
        );
        match &events[2] {
            AgentEvent::ToolResult {
                ok: false, output, ..
            } => assert!(output.contains(why), "{path}: {output}"),
            other => panic!("{path}: {other:?}"),
        }
    }
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    assert!(!dir.path().join("a.txt").exists());
    assert!(!std::path::Path::new("/tmp/coderig-abs.txt").exists());
}

#[tokio::test]
async fn a_delete_removes_the_file_and_a_missing_one_fails_the_tool_only() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("old.txt"), "x").unwrap();
    let a = agent(json!([{"delete": {"path": "old.txt"}}, {"delete": {"path": "gone.txt"}}]));
    let (events, outcome) = run(&a, Turn::new("p").workdir(dir.path()).access(Access::Edit)).await;
    outcome.unwrap();
    assert!(!dir.path().join("old.txt").exists());
    assert!(matches!(
        &events[2],
        AgentEvent::ToolResult { ok: true, .. }
    ));
    assert!(matches!(
        &events[4],
        AgentEvent::ToolResult { ok: false, .. }
    ));
}

#[tokio::test]
async fn a_failure_ends_the_turn_with_its_class() {
    let cases = [
        (
            json!([{"fail": {"message": "rate limit exceeded"}}]),
            ErrorClass::Retry,
        ),
        (
            json!([{"fail": {"message": "invalid api key", "class": "fatal"}}]),
            ErrorClass::Fatal,
        ),
        (
            json!([{"text": "a"}, {"fail": {"message": "insufficient credits"}}]),
            ErrorClass::Stop,
        ),
    ];
    for (script, class) in cases {
        let (events, outcome) = run(&agent(script.clone()), Turn::new("p")).await;
        let err = outcome.unwrap_err();
        assert_eq!(
            (err.kind, err.class),
            (AgentErrorKind::Provider, class),
            "{script}"
        );
        assert_eq!(events.last().unwrap().type_name(), "error");
    }
}

#[tokio::test]
async fn hangs_end_at_the_timeout_the_idle_timeout_or_the_cancel() {
    let hang = agent(json!([{"text": "thinking"}, {"hang": true}]));
    let t = Turn::new("p").timeout(Duration::from_millis(50));
    assert_eq!(
        run(&hang, t).await.1.unwrap_err().kind,
        AgentErrorKind::Timeout
    );
    let t = Turn::new("p").idle_timeout(Duration::from_millis(50));
    assert_eq!(
        run(&hang, t).await.1.unwrap_err().kind,
        AgentErrorKind::Idle
    );
    let slow = agent(json!([{"sleep_ms": 60000}]));
    let t = Turn::new("p").idle_timeout(Duration::from_millis(50));
    assert_eq!(
        run(&slow, t).await.1.unwrap_err().kind,
        AgentErrorKind::Idle
    );

    let cancel = CancellationToken::new();
    let (tx, _rx) = mpsc::channel(16);
    let c = cancel.clone();
    let turn = tokio::spawn(async move { hang.run(Turn::new("p"), tx, c).await });
    tokio::time::sleep(Duration::from_millis(20)).await;
    cancel.cancel();
    assert_eq!(
        turn.await.unwrap().unwrap_err().kind,
        AgentErrorKind::Cancelled
    );
}

#[tokio::test]
async fn the_model_chooses_the_script_and_a_closed_receiver_does_not_stop_the_turn() {
    let dir = tempfile::tempdir().unwrap();
    let a = agent(json!([{"text": "default"}])).with_model_script(
        "slow",
        decode_script(json!([{"text": "late"}, {"write": {"path": "f", "content": "y"}}])).unwrap(),
    );
    assert_eq!(a.models().await.unwrap(), ["slow"]);
    let (tx, rx) = mpsc::channel(1);
    drop(rx);
    let outcome = a
        .run(
            Turn::new("p")
                .model("slow")
                .workdir(dir.path())
                .access(Access::Edit),
            tx,
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(outcome.final_text, "late");
    assert!(dir.path().join("f").exists());
    assert_eq!(
        run(&a, Turn::new("p").model("other"))
            .await
            .1
            .unwrap()
            .final_text,
        "default"
    );
}
