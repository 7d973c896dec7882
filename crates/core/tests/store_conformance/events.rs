//! The conformance tests of completions, cancels, compare-and-set
//! transitions and the event log: atomic with their events, in seq order
//! under concurrent writers, never `busy`. Run on both backends by
//! `on_both_stores!` (their names are listed there).

use super::{all_events, claim_request, TTL};
use crate::common::*;
use coderig::arena::Lane;
use coderig::store::*;
use coderig::task::TaskState;
use coderig::ErrorKind;
use serde_json::json;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

// (1, 5) A completion changes the task, its owner, queues follow-ups and
// appends its event in one transaction — or does none of it.
pub async fn completion_is_atomic_with_its_owner_event_and_follow_ups(h: &Harness) {
    let store = &*h.store;
    store.create_work(run("r", 3)).await.unwrap();
    store
        .enqueue(vec![step_task("r-t0", "r-s0", Lane::Cloud)], None)
        .await
        .unwrap();
    let claim = store.claim(&claim_request("w")).await.unwrap().remove(0);
    let events_before = all_events(store).await.len();

    // A follow-up that collides with an existing id: the whole completion fails.
    let mut bad = Completion::completed(json!("plan"))
        .with_owner(OwnerUpdate {
            status: Some("done".into()),
            data: None,
        })
        .with_event(NewEvent::new(
            EventType::StepUpdated,
            json!({"status": "done"}),
        ));
    bad.enqueue = vec![
        step_task("r-t1", "r-s1", Lane::Cloud),
        step_task("r-t0", "r-s2", Lane::Cloud),
    ];
    let e = store
        .complete(&claim.fence(), bad.clone())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    let snapshot = store.work("r").await.unwrap();
    assert_eq!(snapshot.tasks.len(), 1);
    assert_eq!(snapshot.tasks[0].state, TaskState::Running);
    assert_eq!(snapshot.owners[0].status, "pending");
    assert_eq!(all_events(store).await.len(), events_before);

    bad.enqueue = vec![
        step_task("r-t1", "r-s1", Lane::Cloud),
        step_task("r-t2", "r-s2", Lane::Cloud),
    ];
    bad.owner = Some(OwnerUpdate {
        status: Some("done".into()),
        data: Some(json!({"step": "s0", "ms": 5})),
    });
    let done = store.complete(&claim.fence(), bad).await.unwrap();
    assert_eq!(done.state, TaskState::Completed);
    let snapshot = store.work("r").await.unwrap();
    assert_eq!(snapshot.tasks.len(), 3);
    assert_eq!(snapshot.owners[0].status, "done");
    assert_eq!(snapshot.owners[0].data, json!({"step": "s0", "ms": 5}));
    let events = all_events(store).await;
    assert_eq!(events.len(), events_before + 1);
    let event = events.last().unwrap();
    assert_eq!(
        (event.kind, event.task_id.as_deref()),
        (EventType::StepUpdated, Some("r-t0"))
    );
    assert_eq!(
        store
            .claim(&claim_request("w").limit(5))
            .await
            .unwrap()
            .len(),
        2
    );
}

// (2) Cancelling a running task takes the lease away from its holder.
pub async fn cancel_fences_the_holder(h: &Harness) {
    let store = &*h.store;
    store
        .create_work(battle("b", 2, Lane::Cloud))
        .await
        .unwrap();
    let claim = store.claim(&claim_request("w")).await.unwrap().remove(0);
    let update = Update {
        owner: Some(OwnerUpdate {
            status: Some("cancelled".into()),
            data: None,
        }),
        event: Some(contestant_event(&claim.task, "cancelled")),
    };
    let cancelled = store
        .cancel(&claim.task.id, "battle stopped", update.clone())
        .await
        .unwrap();
    assert_eq!(cancelled.state, TaskState::Cancelled);
    assert_eq!(cancelled.error.as_deref(), Some("battle stopped"));
    assert_eq!(
        store
            .heartbeat(&claim.fence(), TTL)
            .await
            .unwrap_err()
            .kind(),
        ErrorKind::Conflict
    );
    let e = store
        .cancel(&claim.task.id, "again", update.clone())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict);
    assert_eq!(
        store
            .cancel("nope", "x", Update::default())
            .await
            .unwrap_err()
            .kind(),
        ErrorKind::NotFoundId
    );
    // A pending task can be cancelled too, and is then never claimed.
    store
        .cancel("b-t1", "battle stopped", Update::default())
        .await
        .unwrap();
    assert!(store.claim(&claim_request("w")).await.unwrap().is_empty());
    assert_eq!(store.work("b").await.unwrap().owners[0].status, "cancelled");
}

// (5) Status changes of works and owners are compare-and-sets with their
// event ("stopping a finished battle" is a conflict).
pub async fn transition_is_a_compare_and_set(h: &Harness) {
    let store = &*h.store;
    store
        .create_work(battle("b", 1, Lane::Cloud))
        .await
        .unwrap();
    let stop = Transition {
        target: Target::Work("b".into()),
        from: vec!["running".into(), "judging".into()],
        to: "cancelled".into(),
        data: None,
        event: Some(NewEvent::new(
            EventType::BattleUpdated,
            json!({"battle_id": "b", "status": "cancelled"}),
        )),
    };
    let event = store.transition(stop.clone()).await.unwrap().unwrap();
    assert_eq!(
        (event.kind, event.work_id.as_str()),
        (EventType::BattleUpdated, "b")
    );
    assert_eq!(store.work("b").await.unwrap().work.status, "cancelled");
    let e = store.transition(stop.clone()).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    assert_eq!(e.details()["status"], "cancelled");
    assert_eq!(
        all_events(store).await.len(),
        2,
        "a refused transition appends nothing"
    );
    let owner = Transition {
        target: Target::Owner("b-c0".into()),
        from: vec![],
        to: "error".into(),
        data: Some(json!({"error": "boom"})),
        event: None,
    };
    assert!(store.transition(owner).await.unwrap().is_none());
    let snapshot = store.work("b").await.unwrap();
    assert_eq!(
        (snapshot.owners[0].status.as_str(), &snapshot.owners[0].data),
        ("error", &json!({"error": "boom"}))
    );
    let missing = Transition {
        target: Target::Work("nope".into()),
        ..stop
    };
    assert_eq!(
        store.transition(missing).await.unwrap_err().kind(),
        ErrorKind::NotFoundId
    );
}

// (5) Events from four concurrent writers (separate handles) come back in
// seq order with no gaps, and a reader tailing meanwhile never finds an
// event below one it has already seen.
pub async fn events_come_in_seq_order_with_concurrent_writers_and_a_tailing_reader(h: &Harness) {
    const WRITERS: usize = 4;
    const WRITES: usize = 40;
    h.store
        .create_work(battle("b", WRITERS, Lane::Cloud))
        .await
        .unwrap();
    let claims = h
        .store
        .claim(&claim_request("w").limit(WRITERS as u32))
        .await
        .unwrap();
    assert_eq!(claims.len(), WRITERS);
    let stop = Arc::new(AtomicBool::new(false));
    let tail = {
        let store = h.another().await;
        let stop = stop.clone();
        tokio::spawn(async move {
            let mut seen: Vec<EventRecord> = Vec::new();
            let mut last = 0;
            loop {
                let finished = stop.load(Ordering::SeqCst);
                let batch = store.events_after(last, 7).await.unwrap();
                for event in &batch {
                    assert!(event.seq > last, "seq {} after {last}", event.seq);
                    last = event.seq;
                }
                seen.extend(batch.iter().cloned());
                if batch.is_empty() {
                    if finished {
                        break seen;
                    }
                    tokio::task::yield_now().await;
                }
            }
        })
    };
    let mut writers = Vec::new();
    for (i, claim) in claims.into_iter().enumerate() {
        let store = h.another().await;
        writers.push(tokio::spawn(async move {
            for n in 0..WRITES {
                let event = NewEvent::new(
                    EventType::ContestantUpdated,
                    json!({"writer": i, "n": n, "contestant_id": claim.task.owner.id}),
                );
                let update = Update {
                    owner: Some(OwnerUpdate {
                        status: Some(format!("n{n}")),
                        data: None,
                    }),
                    event: Some(event),
                };
                store.record(&claim.fence(), update).await.unwrap();
            }
        }));
    }
    for writer in writers {
        writer.await.unwrap();
    }
    stop.store(true, Ordering::SeqCst);
    let tailed = tail.await.unwrap();
    let stored = all_events(&*h.store).await;
    assert_eq!(stored.len(), 1 + WRITERS * WRITES);
    for pair in stored.windows(2) {
        assert_eq!(pair[1].seq, pair[0].seq + 1, "a gap in the log");
    }
    assert_eq!(
        tailed, stored,
        "the tailing reader saw the log as it is, in order"
    );
    // Each writer's events are in its own order too.
    let mut per_writer: HashMap<i64, Vec<i64>> = HashMap::new();
    for event in &stored[1..] {
        per_writer
            .entry(event.payload["writer"].as_i64().unwrap())
            .or_default()
            .push(event.payload["n"].as_i64().unwrap());
    }
    for ns in per_writer.values() {
        assert_eq!(*ns, (0..WRITES as i64).collect::<Vec<_>>());
    }
}

// A busy database never surfaces: four handles (four servers, as far as
// the file lock is concerned) writing at once all succeed.
pub async fn four_concurrent_writers_never_see_busy(h: &Harness) {
    const ROUNDS: usize = 25;
    let mut writers = Vec::new();
    for i in 0..4 {
        let store = h.another().await;
        writers.push(tokio::spawn(async move {
            for n in 0..ROUNDS {
                let id = format!("w{i}-{n}");
                store.create_work(battle(&id, 2, Lane::Cloud)).await?;
                for claim in store.claim(&claim_request(&id).limit(2)).await? {
                    store
                        .record(
                            &claim.fence(),
                            Update {
                                owner: None,
                                event: Some(contestant_event(&claim.task, "running")),
                            },
                        )
                        .await?;
                    store.heartbeat(&claim.fence(), TTL).await?;
                    store
                        .complete(&claim.fence(), Completion::completed(json!(n)))
                        .await?;
                }
                store.rescue_expired(5).await?;
            }
            Ok::<_, coderig::Error>(())
        }));
    }
    for writer in writers {
        writer
            .await
            .unwrap()
            .expect("no write may fail, busy or not");
    }
    let mut claimed = 0;
    while let Some(claim) = h.store.claim(&claim_request("sweep")).await.unwrap().pop() {
        h.store
            .complete(&claim.fence(), Completion::completed(json!(0)))
            .await
            .unwrap();
        claimed += 1;
    }
    let events = all_events(&*h.store).await;
    assert_eq!(
        events.len() + claimed,
        4 * ROUNDS * 3,
        "every write landed once"
    );
}

// The baseline the benchmark compares with, and why it is not the store's
// claim: SELECT the oldest pending task, then UPDATE it by id. Two workers
// that interleave between the two statements both "claim" it.
pub async fn naive_select_then_update_double_claims(h: &Harness) {
    h.store
        .create_work(battle("b", 4, Lane::Cloud))
        .await
        .unwrap();
    let raw = h.raw().await;
    let (a, b) = (
        naive_pick(&raw).await.unwrap(),
        naive_pick(&raw).await.unwrap(),
    );
    naive_take(&raw, &a.0, "worker-a").await;
    naive_take(&raw, &b.0, "worker-b").await;
    assert_eq!(a, b, "both naive workers took the same (task, attempt)");
    let task = h.store.task(&a.0).await.unwrap();
    assert_eq!(
        task.attempt, 2,
        "one attempt, run twice (the counter says 2)"
    );

    // Under real concurrency (no staging), too: 8 naive workers over the
    // remaining tasks claim more often than there are tasks.
    let raw = Arc::new(raw);
    h.store
        .create_work(battle("c", 40, Lane::Cloud))
        .await
        .unwrap();
    let claims = Arc::new(Mutex::new(Vec::new()));
    let mut workers = Vec::new();
    for i in 0..8 {
        let (raw, claims) = (raw.clone(), claims.clone());
        workers.push(tokio::spawn(async move {
            while let Some(claim) = naive_claim(&raw, &format!("w{i}")).await {
                claims.lock().unwrap().push(claim);
            }
        }));
    }
    for worker in workers {
        worker.await.unwrap();
    }
    let claims = claims.lock().unwrap();
    let unique: HashSet<_> = claims.iter().collect();
    eprintln!(
        "naive claim: {} claims of {} distinct (task, attempt) pairs",
        claims.len(),
        unique.len()
    );
    // The store's own claim over the same kind of load is exactly-once
    // (see concurrent_claimers_claim_each_attempt_exactly_once).
}

// (5) The log holds the typed events of `coderig::event` (never a live-only
// `agent_output`), and its window feeds the SSE replay decision.
pub async fn events_are_the_typed_events_of_the_event_module(h: &Harness) {
    use coderig::event::{
        decide_replay, AgentOutput, Event, OutputKind, OutputSource, ReplayDecision, RunStatus,
        RunUpdated, SseId,
    };
    let store = &*h.store;
    let empty = store.event_window().await.unwrap();
    assert_eq!(
        (empty.epoch.as_str(), empty.newest, empty.oldest()),
        (store.epoch(), 0, 1)
    );
    let started = Event::RunUpdated(RunUpdated {
        run_id: "r".into(),
        status: RunStatus::Running,
        error: None,
    });
    let mut work = run("r", 1);
    work.event = NewEvent::from_event(&started).unwrap();
    store.create_work(work).await.unwrap();
    let live_only = Event::AgentOutput(AgentOutput {
        source: OutputSource::Step {
            run_id: "r".into(),
            step_id: "s0".into(),
        },
        kind: OutputKind::Text,
        text: "hi".into(),
    });
    assert_eq!(
        NewEvent::from_event(&live_only).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    let sneaky = Transition {
        target: Target::Work("r".into()),
        from: vec![],
        to: "cancelled".into(),
        data: None,
        event: Some(NewEvent::new(EventType::AgentOutput, json!({"text": "hi"}))),
    };
    assert_eq!(
        store.transition(sneaky).await.unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    assert_eq!(
        store.work("r").await.unwrap().work.status,
        "running",
        "nothing changed"
    );

    let events = all_events(store).await;
    assert_eq!(events.len(), 1);
    let stored = events[0].to_stored(Some(store.epoch())).unwrap();
    assert_eq!(stored.event, started);
    let id = stored.sse_id().unwrap();
    let window = store.event_window().await.unwrap();
    assert_eq!((window.newest, window.oldest()), (stored.seq, stored.seq));
    assert_eq!(
        decide_replay(Some(&SseId::new(store.epoch(), 0).unwrap()), &window),
        ReplayDecision::Replay { after: 0 }
    );
    assert_eq!(
        decide_replay(Some(&id), &window),
        ReplayDecision::Replay { after: stored.seq }
    );
    let foreign = SseId::new("other-epoch", 1).unwrap();
    assert_eq!(
        decide_replay(Some(&foreign), &window),
        ReplayDecision::Reset
    );
}
