//! The conformance tests of `Store::record_changes`: one transaction fenced
//! by one task's lease over its work, several of its owners and several
//! events. Run on both backends by `on_both_stores!` (their names are listed
//! there).

use crate::common::*;
use coderig::arena::Lane;
use coderig::store::*;
use coderig::ErrorKind;
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

const TTL: Duration = Duration::from_secs(30);

fn step_event(run: &str, step: &str, status: &str) -> ChangeEvent {
    ChangeEvent::about(
        step,
        NewEvent::new(
            EventType::StepUpdated,
            json!({"run_id": run, "step_id": step, "status": status, "attempt": 1}),
        ),
    )
}

fn run_event(run: &str, status: &str) -> ChangeEvent {
    ChangeEvent::of_work(NewEvent::new(
        EventType::RunUpdated,
        json!({"run_id": run, "status": status}),
    ))
}

/// The statuses of the work and its owners, their data and the log: what a
/// refused call must leave exactly as it was.
async fn state_of(store: &dyn Store, work: &str) -> (Vec<(String, serde_json::Value)>, usize) {
    let snapshot = store.work(work).await.unwrap();
    let mut rows = vec![(snapshot.work.status.clone(), snapshot.work.data.clone())];
    rows.extend(
        snapshot
            .owners
            .iter()
            .map(|o| (o.status.clone(), o.data.clone())),
    );
    (rows, store.events_after(0, 1_000_000).await.unwrap().len())
}

/// A change that would touch everything, to show a refusal writes nothing.
fn everything(run: &str) -> Changes {
    Changes::new()
        .work(WorkChange::new().from(&["running"]).status("finishing"))
        .owner(OwnerChange::new(format!("{run}-s0")).status("running"))
        .owner(OwnerChange::new(format!("{run}-s1")).data(json!({"x": 1})))
        .event(step_event(run, &format!("{run}-s0"), "running"))
        .event(run_event(run, "finishing"))
}

// Fenced exactly like `record`: a token that is not the lease's, or the
// lease of a task that is no longer running, is the same `conflict` record
// gives, and nothing is written; empty changes check only the fence.
pub async fn record_changes_is_fenced_like_record(h: &Harness) {
    let store = &*h.store;
    let claim = claimed_run(store, "r", 2).await;
    let before = state_of(store, "r").await;

    let stale = Fence {
        task_id: claim.task.id.clone(),
        lease_token: "not-the-token".into(),
    };
    let e = store
        .record_changes(&stale, everything("r"))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    let by_record = store.record(&stale, Update::default()).await.unwrap_err();
    assert_eq!(
        (e.message(), e.details()),
        (by_record.message(), by_record.details()),
        "the same lease-lost error as record"
    );
    let e = store
        .record_changes(&stale, Changes::new())
        .await
        .unwrap_err();
    assert_eq!(
        e.kind(),
        ErrorKind::Conflict,
        "empty changes still check the fence"
    );
    assert_eq!(state_of(store, "r").await, before);

    // The holder's own empty changes: nothing to do, nothing returned.
    assert!(store
        .record_changes(&claim.fence(), Changes::new())
        .await
        .unwrap()
        .is_empty());
    assert_eq!(state_of(store, "r").await, before);

    // A finished task's lease fences nothing any more.
    store
        .complete(&claim.fence(), Completion::completed(json!({})))
        .await
        .unwrap();
    let e = store
        .record_changes(&claim.fence(), everything("r"))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    assert_eq!(e.details()["state"], "completed");
    let e = store
        .record_changes(&claim.fence(), Changes::new())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    assert_eq!(state_of(store, "r").await, before);
    // An unknown task is not_found_id, as for record.
    let unknown = Fence {
        task_id: "nope".into(),
        lease_token: "x".into(),
    };
    let e = store
        .record_changes(&unknown, Changes::new())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFoundId, "{e}");
}

// Every owner named — in a change or in an event — must be one of the
// fenced task's work: another work's owner is invalid_input, an unknown one
// not_found_id, and nothing of the call is written.
pub async fn record_changes_touch_only_the_fenced_work(h: &Harness) {
    let store = &*h.store;
    let claim = claimed_run(store, "r", 2).await;
    store.create_work(run("other", 1)).await.unwrap();
    store
        .create_work(battle("b", 1, Lane::Cloud))
        .await
        .unwrap();
    let before = (state_of(store, "r").await, state_of(store, "other").await);

    let cases = [
        (
            everything("r").owner(OwnerChange::new("other-s0").status("running")),
            ErrorKind::InvalidInput,
            "other-s0",
        ),
        (
            everything("r").event(step_event("r", "other-s0", "running")),
            ErrorKind::InvalidInput,
            "other-s0",
        ),
        (
            everything("r").owner(OwnerChange::new("b-c0").status("running")),
            ErrorKind::InvalidInput,
            "b-c0",
        ),
        (
            everything("r").owner(OwnerChange::new("r-s9").status("running")),
            ErrorKind::NotFoundId,
            "r-s9",
        ),
        (
            everything("r").event(step_event("r", "r-s9", "running")),
            ErrorKind::NotFoundId,
            "r-s9",
        ),
    ];
    for (changes, kind, id) in cases {
        let e = store
            .record_changes(&claim.fence(), changes)
            .await
            .unwrap_err();
        assert_eq!(e.kind(), kind, "{e}");
        assert_eq!(e.details()["id"], id, "{e}");
        assert!(e.message().contains(id), "{e}");
        assert_eq!(
            (state_of(store, "r").await, state_of(store, "other").await),
            before,
            "a refused call writes nothing: {e}"
        );
    }
    // The lease is still good: the same changes without the stranger pass.
    store
        .record_changes(&claim.fence(), everything("r"))
        .await
        .unwrap();
}

// A `from` that does not hold — of the work, of an owner, or of an owner
// as an earlier change of the same call left it — is a conflict naming the
// row, its status and the allowed ones; the whole call rolls back.
pub async fn record_changes_roll_back_on_a_from_mismatch(h: &Harness) {
    let store = &*h.store;
    let claim = claimed_run(store, "r", 3).await;
    let before = state_of(store, "r").await;

    let work_mismatch = Changes::new()
        .owner(OwnerChange::new("r-s0").status("running"))
        .work(WorkChange::new().from(&["paused", "queued"]).status("done"))
        .event(run_event("r", "done"));
    let e = store
        .record_changes(&claim.fence(), work_mismatch)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    assert_eq!(
        (
            &e.details()["id"],
            &e.details()["status"],
            &e.details()["from"]
        ),
        (&json!("r"), &json!("running"), &json!(["paused", "queued"]))
    );
    assert!(e.message().contains("paused, queued"), "{e}");
    assert_eq!(state_of(store, "r").await, before);

    // The third owner change fails after two that would have succeeded.
    let owner_mismatch = Changes::new()
        .work(WorkChange::new().from(&["running"]).data(json!({"n": 1})))
        .owner(
            OwnerChange::new("r-s0")
                .from(&["pending"])
                .status("running"),
        )
        .owner(
            OwnerChange::new("r-s1")
                .from(&["pending"])
                .status("running"),
        )
        .owner(
            OwnerChange::new("r-s2")
                .from(&["running", "retrying"])
                .status("done"),
        )
        .event(step_event("r", "r-s0", "running"));
    let e = store
        .record_changes(&claim.fence(), owner_mismatch)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    assert_eq!(
        (
            &e.details()["id"],
            &e.details()["status"],
            &e.details()["from"]
        ),
        (
            &json!("r-s2"),
            &json!("pending"),
            &json!(["running", "retrying"])
        )
    );
    assert!(e.message().contains("step"), "{e}");
    assert_eq!(state_of(store, "r").await, before, "nothing written");

    // The second change of one owner compares with the first's result.
    let twice = Changes::new()
        .owner(
            OwnerChange::new("r-s0")
                .from(&["pending"])
                .status("running"),
        )
        .owner(OwnerChange::new("r-s0").from(&["pending"]).status("done"));
    let e = store
        .record_changes(&claim.fence(), twice)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    assert_eq!(e.details()["status"], "running");
    assert_eq!(state_of(store, "r").await, before);

    // A pure check (from, nothing to write) holds or refuses the same way.
    let check = Changes::new().owner(OwnerChange::new("r-s1").from(&["done"]));
    let e = store
        .record_changes(&claim.fence(), check)
        .await
        .unwrap_err();
    assert_eq!(e.details()["status"], "pending");
}

// Changes apply in order: one owner twice (the second sees the first's
// status, its data replaces), the work's status and data, `updated_at`
// moving for what changed and only for that; the events come back as
// stored.
pub async fn record_changes_apply_in_order(h: &Harness) {
    let store = &*h.store;
    let claim = claimed_run(store, "r", 3).await;
    let before = store.work("r").await.unwrap();
    // The database clock moves on (for the updated_at comparisons below).
    tokio::time::sleep(Duration::from_millis(20)).await;
    let changes = Changes::new()
        .work(
            WorkChange::new()
                .from(&["running"])
                .status("finishing")
                .data(json!({"flow": "f", "n": 2})),
        )
        .owner(
            OwnerChange::new("r-s0")
                .from(&["pending"])
                .status("running")
                .data(json!({"a": 1})),
        )
        .owner(
            OwnerChange::new("r-s1")
                .from(&["pending"])
                .data(json!({"b": 1})),
        )
        .owner(
            OwnerChange::new("r-s0")
                .from(&["running"])
                .status("completed")
                .data(json!({"a": 2})),
        )
        // A check only: r-s2 keeps its row as it was.
        .owner(OwnerChange::new("r-s2").from(&["pending"]));
    let events = store.record_changes(&claim.fence(), changes).await.unwrap();
    assert!(events.is_empty());
    let after = store.work("r").await.unwrap();
    assert_eq!(
        (after.work.status.as_str(), &after.work.data),
        ("finishing", &json!({"flow": "f", "n": 2}))
    );
    assert!(after.work.updated_at > before.work.updated_at);
    let owner = |id: &str| after.owners.iter().find(|o| o.id == id).unwrap();
    let was = |id: &str| before.owners.iter().find(|o| o.id == id).unwrap();
    assert_eq!(
        (owner("r-s0").status.as_str(), &owner("r-s0").data),
        ("completed", &json!({"a": 2}))
    );
    assert_eq!(
        (owner("r-s1").status.as_str(), &owner("r-s1").data),
        ("pending", &json!({"b": 1})),
        "data only: the status stays"
    );
    assert!(owner("r-s0").updated_at > was("r-s0").updated_at);
    assert!(owner("r-s1").updated_at > was("r-s1").updated_at);
    assert_eq!(owner("r-s2"), was("r-s2"), "a check writes nothing");
    // The task itself is untouched: still running under the same lease.
    let task = store.task(&claim.task.id).await.unwrap();
    assert_eq!(task.state, coderig::task::TaskState::Running);
    assert_eq!(task.lease_expires_at, claim.task.lease_expires_at);
    store
        .heartbeat(&claim.fence(), TTL)
        .await
        .expect("the lease holds");
}

// Events: appended in order in the same transaction, each with the task's
// work, its own owner (or none, about the work) and the task's id, the ones
// returned being the ones stored; an agent_output is invalid_input and
// nothing is written.
pub async fn record_changes_append_their_events_in_order(h: &Harness) {
    let store = &*h.store;
    let claim = claimed_run(store, "r", 2).await;
    let first_seq = store.event_window().await.unwrap().newest as i64;
    let changes = Changes::new()
        .owner(
            OwnerChange::new("r-s1")
                .from(&["pending"])
                .status("running"),
        )
        .event(step_event("r", "r-s1", "running"))
        .event(run_event("r", "running"))
        .event(step_event("r", "r-s0", "pending"))
        .event(step_event("r", "r-s1", "running"));
    let returned = store.record_changes(&claim.fence(), changes).await.unwrap();
    assert_eq!(
        returned
            .iter()
            .map(|e| (e.kind, e.owner_id.as_deref()))
            .collect::<Vec<_>>(),
        [
            (EventType::StepUpdated, Some("r-s1")),
            (EventType::RunUpdated, None),
            (EventType::StepUpdated, Some("r-s0")),
            (EventType::StepUpdated, Some("r-s1")),
        ]
    );
    for event in &returned {
        assert_eq!(event.work_id, "r");
        assert_eq!(event.task_id.as_deref(), Some(claim.task.id.as_str()));
        event.to_stored(Some(store.epoch())).expect("a typed event");
    }
    assert!(returned[0].seq > first_seq);
    for pair in returned.windows(2) {
        assert!(pair[1].seq > pair[0].seq, "appended in order");
    }
    let stored = store.events_after(first_seq, 100).await.unwrap();
    assert_eq!(stored, returned, "what came back is what is stored");

    let before = state_of(store, "r").await;
    let live = Changes::new()
        .owner(OwnerChange::new("r-s0").status("running"))
        .event(step_event("r", "r-s0", "running"))
        .event(ChangeEvent::about(
            "r-s0",
            NewEvent::new(
                EventType::AgentOutput,
                json!({"run_id": "r", "step_id": "r-s0", "kind": "text", "text": "hi"}),
            ),
        ));
    let e = store
        .record_changes(&claim.fence(), live)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    // ... refused before the database: even a lost lease reports it so.
    let stale = Fence {
        task_id: claim.task.id.clone(),
        lease_token: "stale".into(),
    };
    let live = Changes::new().event(ChangeEvent::of_work(NewEvent::new(
        EventType::AgentOutput,
        json!({}),
    )));
    let e = store.record_changes(&stale, live).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert_eq!(state_of(store, "r").await, before);
}

// One call with a thousand owner changes (each owner twice, the second
// seeing the first) and a thousand events: every one applied, every event
// stored in order. (The planner is one map lookup per change; the time is
// printed, not asserted.)
pub async fn record_changes_of_a_thousand_rows_in_one_call(h: &Harness) {
    const STEPS: usize = 500;
    let store = &*h.store;
    let claim = claimed_run(store, "r", STEPS).await;
    let mut changes = Changes::new();
    for i in 0..STEPS {
        changes = changes.owner(
            OwnerChange::new(format!("r-s{i}"))
                .from(&["pending"])
                .status("running"),
        );
    }
    for i in 0..STEPS {
        changes = changes.owner(
            OwnerChange::new(format!("r-s{i}"))
                .from(&["running"])
                .status("completed")
                .data(json!({"i": i})),
        );
    }
    for i in 0..2 * STEPS {
        changes = changes.event(step_event("r", &format!("r-s{}", i % STEPS), "completed"));
    }
    assert_eq!((changes.owners.len(), changes.events.len()), (1000, 1000));
    let started = std::time::Instant::now();
    let events = store.record_changes(&claim.fence(), changes).await.unwrap();
    eprintln!(
        "{}: record_changes of 1000 owner changes + 1000 events took {:?}",
        store.backend(),
        started.elapsed()
    );
    assert_eq!(events.len(), 1000);
    for (i, event) in events.iter().enumerate() {
        assert_eq!(event.owner_id, Some(format!("r-s{}", i % STEPS)));
    }
    for pair in events.windows(2) {
        assert!(pair[1].seq > pair[0].seq);
    }
    let snapshot = store.work("r").await.unwrap();
    for (i, owner) in snapshot.owners.iter().enumerate() {
        assert_eq!(
            (owner.status.as_str(), &owner.data),
            ("completed", &json!({"i": i}))
        );
    }
    let stored = store.events_after(0, 10_000).await.unwrap();
    assert_eq!(&stored[stored.len() - 1000..], &events[..]);
}

// Two drivers (separate handles: two servers) changing their own runs at
// once, with a reader tailing the log: no event is lost, each driver's come
// in its order, and seqs only ever increase for the reader.
pub async fn concurrent_record_changes_lose_no_event(h: &Harness) {
    const ROUNDS: usize = 30;
    const STEPS: usize = 3;
    let a = claimed_run(&*h.store, "ra", STEPS).await;
    let b = claimed_run(&*h.store, "rb", STEPS).await;
    let start = h.store.event_window().await.unwrap().newest as i64;
    let stop = Arc::new(AtomicBool::new(false));
    let tail = {
        let store = h.another().await;
        let stop = stop.clone();
        tokio::spawn(async move {
            let mut seen: Vec<EventRecord> = Vec::new();
            let mut last = start;
            loop {
                let finished = stop.load(Ordering::SeqCst);
                let batch = store.events_after(last, 5).await.unwrap();
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
    let mut drivers = Vec::new();
    for (run, claim) in [("ra", a), ("rb", b)] {
        let store = h.another().await;
        drivers.push(tokio::spawn(async move {
            for n in 0..ROUNDS {
                let mut changes = Changes::new().work(
                    WorkChange::new()
                        .from(&["running"])
                        .data(json!({"round": n})),
                );
                for s in 0..STEPS {
                    let step = format!("{run}-s{s}");
                    let from = if n == 0 {
                        "pending".to_string()
                    } else {
                        format!("n{}", n - 1)
                    };
                    changes = changes
                        .owner(
                            OwnerChange::new(&step)
                                .from(&[from])
                                .status(format!("n{n}")),
                        )
                        .event(ChangeEvent::about(
                            &step,
                            NewEvent::new(
                                EventType::StepUpdated,
                                json!({"run_id": run, "step_id": step, "status": format!("n{n}"),
                                       "attempt": 1, "n": n}),
                            ),
                        ));
                }
                changes = changes.event(ChangeEvent::of_work(NewEvent::new(
                    EventType::RunUpdated,
                    json!({"run_id": run, "status": "running", "n": n}),
                )));
                let events = store.record_changes(&claim.fence(), changes).await.unwrap();
                assert_eq!(events.len(), STEPS + 1);
            }
        }));
    }
    for driver in drivers {
        driver.await.unwrap();
    }
    stop.store(true, Ordering::SeqCst);
    let tailed = tail.await.unwrap();
    let stored = h.store.events_after(start, 1_000_000).await.unwrap();
    assert_eq!(stored.len(), 2 * ROUNDS * (STEPS + 1), "no event lost");
    assert_eq!(tailed, stored, "the tailing reader saw the log in order");
    for pair in stored.windows(2) {
        assert!(pair[1].seq > pair[0].seq);
    }
    for run in ["ra", "rb"] {
        let mine: Vec<_> = stored.iter().filter(|e| e.work_id == run).collect();
        assert_eq!(mine.len(), ROUNDS * (STEPS + 1));
        // Each call's events are contiguous in its run's order: its steps,
        // then the run; rounds in order.
        for (i, event) in mine.iter().enumerate() {
            let (n, k) = (i / (STEPS + 1), i % (STEPS + 1));
            assert_eq!(event.payload["n"], n, "{run} event {i}");
            if k < STEPS {
                assert_eq!(event.owner_id, Some(format!("{run}-s{k}")));
            } else {
                assert_eq!(
                    (event.kind, event.owner_id.as_deref()),
                    (EventType::RunUpdated, None)
                );
            }
        }
        let snapshot = h.store.work(run).await.unwrap();
        assert_eq!(snapshot.work.data, json!({"round": ROUNDS - 1}));
        for owner in &snapshot.owners {
            assert_eq!(owner.status, format!("n{}", ROUNDS - 1));
        }
    }
}
