//! Events: the serde form of every type, SSE ids, and the replay decision
//! and merge as tables.

use coderig::arena::{BattleType, ContestantStatus, Lane};
use coderig::event::{
    decide_replay, merge_replay, AgentOutput, BattleStarted, BattleStatus, BattleUpdated,
    ContestantInfo, ContestantUpdated, Event, EventType, OutputKind, OutputSource, ReplayDecision,
    RunStatus, RunUpdated, SseId, SseIdErrorReason, StepUpdated, StoreWindow, StoredEvent,
    TaskRescued, WinnerSource,
};
use coderig::flow::{SkipReason, StepStatus};
use serde_json::json;

fn one_of_each() -> Vec<(Event, serde_json::Value)> {
    vec![
        (
            BattleStarted {
                battle_id: "b1".into(),
                battle_type: BattleType::Coding,
                prompt: "Fix it".into(),
                contestants: vec![ContestantInfo {
                    id: "c1".into(),
                    identity: "claude".into(),
                    model: "sonnet".into(),
                    lane: Lane::Cloud,
                }],
            }
            .into(),
            json!({"type": "battle_started", "battle_id": "b1", "battle_type": "coding", "prompt": "Fix it",
                   "contestants": [{"id": "c1", "identity": "claude", "model": "sonnet", "lane": "cloud"}]}),
        ),
        (
            ContestantUpdated {
                battle_id: "b1".into(),
                contestant_id: "c1".into(),
                status: ContestantStatus::Done,
                duration_ms: Some(1200),
                ttft_ms: None,
                usage: Some(json!({"input": 10, "output": 5})),
                tokens_per_sec: Some(42.5),
                evidence: None,
                error: None,
            }
            .into(),
            json!({"type": "contestant_updated", "battle_id": "b1", "contestant_id": "c1", "status": "done",
                   "duration_ms": 1200, "usage": {"input": 10, "output": 5}, "tokens_per_sec": 42.5}),
        ),
        (
            BattleUpdated {
                battle_id: "b1".into(),
                status: BattleStatus::Completed,
                winner_contestant_id: Some("c1".into()),
                winner_source: Some(WinnerSource::Oracle),
                analysis_ready: Some(true),
                cross_exam_id: None,
                error: None,
            }
            .into(),
            json!({"type": "battle_updated", "battle_id": "b1", "status": "completed",
                   "winner_contestant_id": "c1", "winner_source": "oracle", "analysis_ready": true}),
        ),
        (
            RunUpdated {
                run_id: "r1".into(),
                status: RunStatus::Failed,
                error: Some(json!({"kind": "agent", "code": "AGENT", "message": "boom"})),
            }
            .into(),
            json!({"type": "run_updated", "run_id": "r1", "status": "failed",
                   "error": {"kind": "agent", "code": "AGENT", "message": "boom"}}),
        ),
        (
            StepUpdated {
                run_id: "r1".into(),
                step_id: "angle-web".into(),
                status: StepStatus::Skipped,
                attempt: 1,
                skip_reason: Some(SkipReason::BranchNotTaken),
                error: None,
                sandbox: None,
            }
            .into(),
            json!({"type": "step_updated", "run_id": "r1", "step_id": "angle-web", "status": "skipped",
                   "attempt": 1, "skip_reason": "branch_not_taken"}),
        ),
        (
            AgentOutput {
                source: OutputSource::Contestant {
                    battle_id: "b1".into(),
                    contestant_id: "c1".into(),
                },
                kind: OutputKind::ToolCall,
                text: "Edit calc.py".into(),
            }
            .into(),
            json!({"type": "agent_output", "battle_id": "b1", "contestant_id": "c1",
                   "kind": "tool_call", "text": "Edit calc.py"}),
        ),
        (
            AgentOutput {
                source: OutputSource::Step {
                    run_id: "r1".into(),
                    step_id: "plan".into(),
                },
                kind: OutputKind::Text,
                text: "Plan:".into(),
            }
            .into(),
            json!({"type": "agent_output", "run_id": "r1", "step_id": "plan", "kind": "text", "text": "Plan:"}),
        ),
        (
            TaskRescued {
                battle_id: None,
                run_id: Some("r1".into()),
                owner_kind: "step".into(),
                owner_id: "r1:driver".into(),
                task_id: "r1:drive".into(),
                worker: Some("host-1".into()),
                rescues: 1,
                requeued: true,
            }
            .into(),
            json!({"type": "task_rescued", "run_id": "r1", "owner_kind": "step",
                   "owner_id": "r1:driver", "task_id": "r1:drive", "worker": "host-1",
                   "rescues": 1, "requeued": true}),
        ),
    ]
}

#[test]
fn every_event_type_has_its_json_form() {
    let events = one_of_each();
    let mut seen: Vec<EventType> = Vec::new();
    for (event, expected) in &events {
        let value = serde_json::to_value(event).unwrap();
        assert_eq!(&value, expected);
        assert_eq!(value["type"], event.event_type().as_str());
        let back: Event = serde_json::from_value(value).unwrap();
        assert_eq!(&back, event);
        seen.push(event.event_type());
    }
    seen.dedup();
    assert_eq!(
        seen,
        EventType::ALL,
        "one case per type, in declaration order"
    );
    assert_eq!(
        EventType::NAMES,
        [
            "battle_started",
            "contestant_updated",
            "battle_updated",
            "run_updated",
            "step_updated",
            "agent_output",
            "task_rescued"
        ]
    );
    for (event, _) in &events {
        assert_eq!(
            event.is_stored(),
            event.event_type() != EventType::AgentOutput
        );
    }
}

#[test]
fn reading_events() {
    // null is absent; unknown fields are ignored (an older reader, a newer store).
    let e: Event = serde_json::from_value(
        json!({"type": "run_updated", "run_id": "r", "status": "running",
                                                  "error": null, "added_later": 1}),
    )
    .unwrap();
    assert_eq!(
        e,
        Event::RunUpdated(RunUpdated {
            run_id: "r".into(),
            status: RunStatus::Running,
            error: None
        })
    );
    for bad in [
        json!({"type": "run_started", "run_id": "r"}),
        json!({"run_id": "r", "status": "running"}),
        json!({"type": "run_updated", "run_id": "r", "status": "paused"}),
        json!({"type": "step_updated", "run_id": "r", "step_id": "s", "status": "done"}), // no attempt
        json!({"type": "agent_output", "battle_id": "b", "step_id": "s", "kind": "text", "text": ""}),
        json!({"type": "agent_output", "run_id": "r", "step_id": "s", "kind": "thought", "text": ""}),
    ] {
        assert!(
            serde_json::from_value::<Event>(bad.clone()).is_err(),
            "{bad}"
        );
    }
    // The seed's synonyms of the status names are read too.
    let e: Event = serde_json::from_value(
        json!({"type": "step_updated", "run_id": "r", "step_id": "s",
                                                  "status": "completed", "attempt": 2}),
    )
    .unwrap();
    assert!(matches!(
        e,
        Event::StepUpdated(StepUpdated {
            status: StepStatus::Done,
            ..
        })
    ));
}

#[test]
fn filters_by_battle_and_run() {
    let events = one_of_each();
    let battles: Vec<Option<&str>> = events.iter().map(|(e, _)| e.battle_id()).collect();
    let runs: Vec<Option<&str>> = events.iter().map(|(e, _)| e.run_id()).collect();
    assert_eq!(
        battles,
        [
            Some("b1"),
            Some("b1"),
            Some("b1"),
            None,
            None,
            Some("b1"),
            None,
            None
        ]
    );
    assert_eq!(
        runs,
        [
            None,
            None,
            None,
            Some("r1"),
            Some("r1"),
            None,
            Some("r1"),
            Some("r1")
        ]
    );
}

#[test]
fn stored_events_carry_seq_and_epoch_beside_the_fields() {
    let event: Event = RunUpdated {
        run_id: "r".into(),
        status: RunStatus::Completed,
        error: None,
    }
    .into();
    let stored = StoredEvent {
        seq: 7,
        epoch: Some("st-1".into()),
        event: event.clone(),
    };
    let value = serde_json::to_value(&stored).unwrap();
    assert_eq!(
        value,
        json!({"seq": 7, "epoch": "st-1", "type": "run_updated", "run_id": "r", "status": "completed"})
    );
    assert_eq!(
        serde_json::from_value::<StoredEvent>(value).unwrap(),
        stored
    );
    assert_eq!(stored.sse_id().unwrap().to_string(), "st-1:7");
    let bare = StoredEvent {
        seq: 7,
        epoch: None,
        event,
    };
    assert_eq!(
        serde_json::to_value(&bare).unwrap(),
        json!({"seq": 7, "type": "run_updated", "run_id": "r", "status": "completed"})
    );
    assert_eq!(bare.sse_id(), None);
}

#[test]
fn sse_ids() {
    for ok in [
        "st-1:0",
        "st-1:7",
        "a:18446744073709551615",
        "9f8e.x_Y-z:12",
        " st:3 ",
    ] {
        let id = SseId::parse(ok).unwrap();
        assert_eq!(id.to_string(), ok.trim(), "one canonical spelling");
        assert_eq!(SseId::parse(&id.to_string()).unwrap(), id);
    }
    let id: SseId = "st-1:42".parse().unwrap();
    assert_eq!((id.epoch(), id.seq()), ("st-1", 42));
    let bad: &[(&str, SseIdErrorReason)] = &[
        ("", SseIdErrorReason::Empty),
        ("   ", SseIdErrorReason::Empty),
        ("42", SseIdErrorReason::MissingSeparator),
        (":42", SseIdErrorReason::BadEpoch),
        ("a b:42", SseIdErrorReason::BadEpoch),
        ("a:b:42", SseIdErrorReason::BadSeq),
        ("é:42", SseIdErrorReason::BadEpoch),
        ("a:", SseIdErrorReason::BadSeq),
        ("a:-1", SseIdErrorReason::BadSeq),
        ("a:+1", SseIdErrorReason::BadSeq),
        ("a:007", SseIdErrorReason::BadSeq),
        ("a:1.5", SseIdErrorReason::BadSeq),
        ("a:18446744073709551616", SseIdErrorReason::BadSeq),
    ];
    for &(text, reason) in bad {
        let err = SseId::parse(text).unwrap_err();
        assert_eq!(err.reason, reason, "{text:?}");
        assert_eq!(err.given, text);
    }
    let long = format!("{}:1", "e".repeat(129));
    assert_eq!(
        SseId::parse(&long).unwrap_err().reason,
        SseIdErrorReason::BadEpoch
    );
    assert!(SseId::new("bad:epoch", 1).is_err());
    let e = coderig::Error::from(SseId::parse("a:x").unwrap_err());
    assert_eq!(e.code(), "INVALID_INPUT");
    assert_eq!(e.details()["reason"], "bad_seq");
    // A bare seq as a cursor is a seq of the store's own epoch.
    assert_eq!(
        SseId::parse_cursor("120", "st-1").unwrap().to_string(),
        "st-1:120"
    );
    assert_eq!(
        SseId::parse_cursor("old:3", "st-1").unwrap().to_string(),
        "old:3"
    );
    assert_eq!(
        SseId::parse_cursor("x1", "st-1").unwrap_err().reason,
        SseIdErrorReason::BadSeq
    );
}

fn window(oldest_retained: u64, newest: u64) -> StoreWindow {
    StoreWindow {
        epoch: "st".into(),
        oldest_retained,
        newest,
    }
}

/// (cursor, oldest retained, newest, decision, replay after, delivered after)
type ReplayRow = (
    Option<&'static str>,
    u64,
    u64,
    ReplayDecision,
    Option<u64>,
    Option<u64>,
);

#[test]
fn the_replay_table() {
    use ReplayDecision::*;
    let id = |s: &str| SseId::parse(s).unwrap();
    let rows: &[ReplayRow] = &[
        (None, 1, 10, Live, None, None),
        (Some("other:5"), 1, 10, Reset, Some(0), None),
        (Some("other:5"), 4, 10, Reset, Some(3), None),
        (Some("st:11"), 1, 10, Reset, Some(0), None), // from the future
        (
            Some("st:10"),
            1,
            10,
            Replay { after: 10 },
            Some(10),
            Some(10),
        ), // up to date
        (Some("st:5"), 1, 10, Replay { after: 5 }, Some(5), Some(5)),
        (Some("st:0"), 1, 10, Replay { after: 0 }, Some(0), Some(0)),
        (Some("st:3"), 4, 10, Replay { after: 3 }, Some(3), Some(3)), // just contiguous
        (
            Some("st:2"),
            4,
            10,
            Gap {
                after: 2,
                oldest: 4,
            },
            Some(3),
            Some(2),
        ),
        (
            Some("st:0"),
            4,
            10,
            Gap {
                after: 0,
                oldest: 4,
            },
            Some(3),
            Some(0),
        ),
        (Some("st:0"), 1, 0, Replay { after: 0 }, Some(0), Some(0)), // empty store
        (Some("st:1"), 1, 0, Reset, Some(0), None),
        (
            Some("st:5"),
            11,
            10,
            Gap {
                after: 5,
                oldest: 11,
            },
            Some(10),
            Some(5),
        ), // all compacted
        (
            Some("st:10"),
            11,
            10,
            Replay { after: 10 },
            Some(10),
            Some(10),
        ),
        (
            Some("st:10"),
            50,
            10,
            Replay { after: 10 },
            Some(10),
            Some(10),
        ), // oldest read as newest + 1
        (Some("st:3"), 0, 10, Replay { after: 3 }, Some(3), Some(3)), // oldest read as at least 1
    ];
    for &(cursor, oldest, newest, decision, replay_after, delivered) in rows {
        let w = window(oldest, newest);
        let cursor = cursor.map(id);
        let got = decide_replay(cursor.as_ref(), &w);
        assert_eq!(got, decision, "{cursor:?} in {oldest}..={newest}");
        assert_eq!(got.replay_after(&w), replay_after, "{cursor:?}");
        assert_eq!(got.delivered_after(), delivered, "{cursor:?}");
    }
    assert_eq!(
        serde_json::to_value(Gap {
            after: 2,
            oldest: 4
        })
        .unwrap(),
        json!({"decision": "gap", "after": 2, "oldest": 4})
    );
}

fn ev(seq: u64, tag: &str) -> StoredEvent {
    StoredEvent {
        seq,
        epoch: None,
        event: RunUpdated {
            run_id: tag.into(),
            status: RunStatus::Running,
            error: None,
        }
        .into(),
    }
}

#[test]
fn merging_replay_and_live() {
    let seqs = |events: &[StoredEvent]| events.iter().map(|e| e.seq).collect::<Vec<_>>();
    // The client has up to 10; live started at 9 (so it saw 10 again), the
    // replay read 11..=13 while live buffered 10..=14.
    let live: Vec<StoredEvent> = (10..=14).map(|s| ev(s, "live")).collect();
    let replayed: Vec<StoredEvent> = (11..=13).map(|s| ev(s, "store")).collect();
    let merged = merge_replay(Some(10), live.clone(), replayed);
    assert_eq!(seqs(&merged), [11, 12, 13, 14]);
    assert!(merged[..3]
        .iter()
        .all(|e| e.event.run_id() == Some("store")));
    assert_eq!(merged[3].event.run_id(), Some("live"));
    // Without the cursor, 10 would be sent twice.
    assert_eq!(
        seqs(&merge_replay(None, live, vec![])),
        [10, 11, 12, 13, 14]
    );
    // Out-of-order input comes out in order.
    let shuffled = vec![ev(3, "a"), ev(1, "a"), ev(2, "a"), ev(1, "b")];
    assert_eq!(seqs(&merge_replay(Some(0), shuffled, vec![])), [1, 2, 3]);
}
