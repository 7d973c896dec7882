//! The conformance tests of `Store::finish_work`: a work's final status,
//! its owners' and their events in one transaction without a lease, and
//! optionally its live tasks cancelled so their holders are fenced out.
//! Run on both backends by `on_both_stores!` (their names are listed there).

use crate::common::*;
use coderig::store::*;
use coderig::task::TaskState;
use coderig::ErrorKind;
use serde_json::json;
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

/// The cancel of run `r` with `steps` steps, every step from one of
/// `from`: the steps' events first, the run's last.
fn cancel_of(r: &str, steps: usize, from: &[&str]) -> Finish {
    let mut finish = Finish::new(
        WorkChange::new()
            .from(&["running", "waiting"])
            .status("cancelled")
            .data(json!({"flow": "f", "finished": true})),
    );
    for s in 0..steps {
        let step = format!("{r}-s{s}");
        finish = finish
            .owner(OwnerChange::new(&step).from(from).status("cancelled"))
            .event(step_event(r, &step, "cancelled"));
    }
    finish.event(run_event(r, "cancelled"))
}

/// Everything a refused finish must leave as it was: the rows, the tasks
/// and the log.
async fn state_of(store: &dyn Store, work: &str) -> (WorkSnapshot, usize) {
    let mut snapshot = store.work(work).await.unwrap();
    // Timestamps of rows nobody wrote do not move; keep the comparison
    // about what a write would change.
    snapshot.work.updated_at = 0;
    for o in &mut snapshot.owners {
        o.updated_at = 0;
    }
    (
        snapshot,
        store.events_after(0, 1_000_000).await.unwrap().len(),
    )
}

// One transaction: the run, every step and the live task change together;
// the events come in the order given (the steps' before the run's), stored
// with the work, their owner and no task; the holder's next fenced write
// of any kind is a conflict and changes nothing.
pub async fn finish_work_settles_a_work_its_owners_and_its_tasks_at_once(h: &Harness) {
    let store = &*h.store;
    let claim = claimed_run(store, "r", 3).await;
    // The holder moved its first step on.
    store
        .record_changes(
            &claim.fence(),
            Changes::new()
                .owner(OwnerChange::new("r-s0").status("running"))
                .event(step_event("r", "r-s0", "running")),
        )
        .await
        .unwrap();
    let before = store.event_window().await.unwrap().newest as i64;

    let finished = store
        .finish_work(
            "r",
            cancel_of("r", 3, &["pending", "running", "waiting"])
                .cancel_tasks("the run was cancelled"),
        )
        .await
        .unwrap();

    // The events: in order, consecutive in the log, the run's last.
    let kinds: Vec<_> = finished
        .events
        .iter()
        .map(|e| (e.kind, e.owner_id.clone(), e.task_id.clone()))
        .collect();
    assert_eq!(
        kinds,
        [
            (EventType::StepUpdated, Some("r-s0".to_string()), None),
            (EventType::StepUpdated, Some("r-s1".to_string()), None),
            (EventType::StepUpdated, Some("r-s2".to_string()), None),
            (EventType::RunUpdated, None, None),
        ]
    );
    assert!(finished.events.iter().all(|e| e.work_id == "r"));
    let stored = store.events_after(before, 100).await.unwrap();
    assert_eq!(
        stored, finished.events,
        "what was returned is what is stored"
    );
    for pair in stored.windows(2) {
        assert!(pair[1].seq > pair[0].seq);
    }
    assert_eq!(store.work_events("r", before, 100).await.unwrap(), stored);

    // The rows and the task, as one snapshot shows them.
    let snapshot = store.work("r").await.unwrap();
    assert_eq!(snapshot.work.status, "cancelled");
    assert_eq!(snapshot.work.data["finished"], true);
    assert!(
        snapshot.owners.iter().all(|o| o.status == "cancelled"),
        "{snapshot:#?}"
    );
    assert_eq!(finished.cancelled.len(), 1);
    let task = &finished.cancelled[0];
    assert_eq!(task.id, "r-driver");
    assert_eq!(task.state, TaskState::Cancelled);
    assert_eq!(task.error.as_deref(), Some("the run was cancelled"));
    assert!(task.finished_at.is_some() && task.lease_expires_at.is_none());
    assert_eq!(store.task("r-driver").await.unwrap(), *task);

    // The holder is fenced out of every write.
    let ended = state_of(store, "r").await;
    let e = store.heartbeat(&claim.fence(), TTL).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    let e = store
        .record(
            &claim.fence(),
            Update {
                owner: Some(OwnerUpdate {
                    status: Some("done".into()),
                    data: None,
                }),
                event: Some(step_event("r", "r-s0", "done").event),
            },
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    let e = store
        .record_changes(
            &claim.fence(),
            Changes::new().owner(OwnerChange::new("r-s1").status("running")),
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    assert_eq!(e.details()["state"], "cancelled");
    let e = store
        .complete(&claim.fence(), Completion::completed(json!({})))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    assert_eq!(
        state_of(store, "r").await,
        ended,
        "the zombie wrote nothing"
    );
    // Nothing to claim: the cancelled task is not put back.
    assert!(store.rescue_expired(10).await.unwrap().is_empty());
    assert!(store
        .claim(&ClaimRequest::new("another").lease_ttl(TTL))
        .await
        .unwrap()
        .is_empty());

    // A finished work cannot be finished again: the compare-and-set holds.
    let e = store
        .finish_work("r", cancel_of("r", 0, &[]))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    assert_eq!(e.details()["status"], "cancelled");
    assert_eq!(state_of(store, "r").await, ended);
}

// Without `cancel_tasks` the tasks are left alone (a work finished by its
// own holder, or whose tasks ended already), and so is their holder.
pub async fn finish_work_without_cancel_tasks_leaves_the_tasks(h: &Harness) {
    let store = &*h.store;
    let claim = claimed_run(store, "r", 2).await;
    let finished = store
        .finish_work("r", cancel_of("r", 2, &["pending"]))
        .await
        .unwrap();
    assert!(finished.cancelled.is_empty());
    assert_eq!(finished.events.len(), 3);
    let task = store.task("r-driver").await.unwrap();
    assert_eq!(task.state, TaskState::Running);
    store.heartbeat(&claim.fence(), TTL).await.unwrap();
    // A holder that checks the work's status sees the finish.
    let e = store
        .record_changes(
            &claim.fence(),
            Changes::new().work(WorkChange::new().from(&["running", "waiting"])),
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    assert_eq!(e.details()["status"], "cancelled");
    store
        .complete(&claim.fence(), Completion::completed(json!({})))
        .await
        .unwrap();
    // A finish that only changes the work (no owner, no event) is fine too.
    store.create_work(run("bare", 0)).await.unwrap();
    let finished = store
        .finish_work("bare", Finish::new(WorkChange::new().status("failed")))
        .await
        .unwrap();
    assert!(finished.events.is_empty() && finished.cancelled.is_empty());
    assert_eq!(store.work("bare").await.unwrap().work.status, "failed");
}

// Any refusal writes nothing — not the work, not an owner, not a task, not
// an event: a work or owner `from` that does not hold (the last owner's,
// after changes that would have passed), an owner of another work, an
// unknown owner or work, a finish without the work's change, a live-only
// event.
pub async fn finish_work_rolls_back_on_any_refusal(h: &Harness) {
    let store = &*h.store;
    let _claim = claimed_run(store, "r", 3).await;
    store.create_work(run("other", 1)).await.unwrap();
    let before = (state_of(store, "r").await, state_of(store, "other").await);
    let unchanged = || async { (state_of(store, "r").await, state_of(store, "other").await) };

    // The last owner's `from` fails after two that hold.
    let mut last_fails = cancel_of("r", 2, &["pending"]).cancel_tasks("stop");
    last_fails = last_fails.owner(
        OwnerChange::new("r-s2")
            .from(&["running"])
            .status("cancelled"),
    );
    let e = store.finish_work("r", last_fails).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    assert_eq!(
        (
            &e.details()["id"],
            &e.details()["status"],
            &e.details()["from"]
        ),
        (&json!("r-s2"), &json!("pending"), &json!(["running"]))
    );
    assert_eq!(unchanged().await, before, "{e}");

    // The work's `from`.
    let mut wrong_work = cancel_of("r", 3, &["pending"]).cancel_tasks("stop");
    wrong_work.changes.work = Some(WorkChange::new().from(&["waiting"]).status("cancelled"));
    let e = store.finish_work("r", wrong_work).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    assert_eq!(e.details()["id"], "r");
    assert_eq!(unchanged().await, before, "{e}");

    let cases = [
        (
            cancel_of("r", 3, &["pending"])
                .owner(OwnerChange::new("other-s0").status("cancelled"))
                .cancel_tasks("stop"),
            ErrorKind::InvalidInput,
            Some("other-s0"),
        ),
        (
            cancel_of("r", 3, &["pending"])
                .event(step_event("r", "other-s0", "cancelled"))
                .cancel_tasks("stop"),
            ErrorKind::InvalidInput,
            Some("other-s0"),
        ),
        (
            cancel_of("r", 3, &["pending"]).owner(OwnerChange::new("r-s9").status("cancelled")),
            ErrorKind::NotFoundId,
            Some("r-s9"),
        ),
    ];
    for (finish, kind, id) in cases {
        let e = store.finish_work("r", finish).await.unwrap_err();
        assert_eq!(e.kind(), kind, "{e}");
        if let Some(id) = id {
            assert_eq!(e.details()["id"], id, "{e}");
            if kind == ErrorKind::InvalidInput {
                assert!(
                    e.message().contains("a finish touches only its own work"),
                    "{e}"
                );
            }
        }
        assert_eq!(unchanged().await, before, "{e}");
    }
    let e = store
        .finish_work("nope", cancel_of("nope", 0, &[]))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFoundId, "{e}");
    let mut no_work = cancel_of("r", 3, &["pending"]);
    no_work.changes.work = None;
    let e = store.finish_work("r", no_work).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    let live = cancel_of("r", 3, &["pending"]).event(ChangeEvent::of_work(NewEvent::new(
        EventType::AgentOutput,
        json!({}),
    )));
    let e = store.finish_work("r", live).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert_eq!(unchanged().await, before);

    // And the same finish, put right, goes through.
    store
        .finish_work("r", cancel_of("r", 3, &["pending"]).cancel_tasks("stop"))
        .await
        .unwrap();
}

// A finish racing the holder's fenced writes (and a second finish): each
// holder write commits wholly before the finish or is refused after it,
// exactly one finish wins, and the work's final event is the last event
// of the work — after every owner's final one. Concurrency on separate
// connections (PostgreSQL: row locks; SQLite: one writer).
pub async fn finish_work_races_the_holder_and_wins_once(h: &Harness) {
    const STEPS: usize = 4;
    for round in 0..5 {
        let r = format!("race{round}");
        let claim = claimed_run(&*h.store, &r, STEPS).await;
        let holder = {
            let store = h.another().await;
            let r = r.clone();
            tokio::spawn(async move {
                let mut n = 0;
                loop {
                    // Every step flips, as a driver's batch would, with the
                    // work's status checked.
                    let mut changes =
                        Changes::new().work(WorkChange::new().from(&["running", "waiting"]));
                    for s in 0..STEPS {
                        let step = format!("{r}-s{s}");
                        let status = if n % 2 == 0 { "running" } else { "pending" };
                        changes = changes
                            .owner(OwnerChange::new(&step).status(status))
                            .event(step_event(&r, &step, status));
                    }
                    match store.record_changes(&claim.fence(), changes).await {
                        Ok(_) => n += 1,
                        Err(e) => {
                            assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
                            break n;
                        }
                    }
                    tokio::task::yield_now().await;
                }
            })
        };
        tokio::time::sleep(Duration::from_millis(5)).await;
        let stores = [h.another().await, h.another().await];
        let finishers: Vec<_> = stores
            .into_iter()
            .map(|store: Arc<dyn Store>| {
                let r = r.clone();
                tokio::spawn(async move {
                    // Read, then compare-and-set from what was read: a
                    // holder write in between is a conflict, tried again.
                    loop {
                        let snapshot = store.work(&r).await.unwrap();
                        if snapshot.work.status != "running" {
                            return false;
                        }
                        let mut finish =
                            Finish::new(WorkChange::new().from(&["running"]).status("cancelled"))
                                .cancel_tasks("cancelled");
                        for o in &snapshot.owners {
                            finish = finish
                                .owner(
                                    OwnerChange::new(&o.id)
                                        .from(&[&o.status])
                                        .status("cancelled"),
                                )
                                .event(step_event(&r, &o.id, "cancelled"));
                        }
                        match store
                            .finish_work(&r, finish.event(run_event(&r, "cancelled")))
                            .await
                        {
                            Ok(_) => return true,
                            Err(e) => assert_eq!(e.kind(), ErrorKind::Conflict, "{e}"),
                        }
                    }
                })
            })
            .collect();
        let mut wins = 0;
        for f in finishers {
            wins += usize::from(f.await.unwrap());
        }
        holder.await.unwrap();
        assert_eq!(wins, 1, "exactly one finish of {r} wins");
        let snapshot = h.store.work(&r).await.unwrap();
        assert_eq!(snapshot.work.status, "cancelled");
        assert!(snapshot.owners.iter().all(|o| o.status == "cancelled"));
        let events = h.store.work_events(&r, 0, 10_000).await.unwrap();
        let last = events.last().unwrap();
        assert_eq!(
            (last.kind, &last.payload["status"]),
            (EventType::RunUpdated, &json!("cancelled"))
        );
        // The STEPS events before it are the steps' cancellations.
        let tail = &events[events.len() - 1 - STEPS..events.len() - 1];
        assert!(
            tail.iter()
                .all(|e| e.kind == EventType::StepUpdated && e.payload["status"] == "cancelled"),
            "{tail:#?}"
        );
        assert_eq!(
            events
                .iter()
                .filter(|e| e.payload["status"] == "cancelled")
                .count(),
            STEPS + 1,
            "one finish wrote its events"
        );
    }
}
