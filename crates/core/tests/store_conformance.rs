//! The one conformance suite of every `Store`: each test below is a
//! function over a fresh store, run once on a real SQLite file (module
//! `sqlite`) and once on a real PostgreSQL in its own schema (module
//! `postgres`, skipped — and said so — when `DATABASE_URL` is not set).
//!
//! Numbers refer to the guarantees of DESIGN "store" (and of
//! `coderig::store`).

mod common;
// The additions for the arena runner, in their own files (this one is long).
#[path = "store_conformance/arena.rs"]
mod arena;
#[path = "store_conformance/changes.rs"]
mod changes;
#[path = "store_conformance/finish.rs"]
mod finish;
#[path = "store_conformance/migration.rs"]
mod migration;
use arena::*;
use changes::*;
use finish::*;
use migration::*;

use coderig::arena::Lane;
use coderig::store::*;
use coderig::task::TaskState;
use coderig::ErrorKind;
use common::*;
use serde_json::json;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

macro_rules! conformance {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let harness = crate::common::sqlite().await;
                    super::$name(&harness).await;
                    harness.finish().await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let Some(harness) = crate::common::postgres("store_conformance").await else {
                        return;
                    };
                    super::$name(&harness).await;
                    harness.finish().await;
                }
            )*
        }
    };
}

conformance!(
    creation_is_atomic,
    claims_lease_from_the_database_clock,
    fenced_writes_reject_a_stale_lease,
    concurrent_claimers_claim_each_attempt_exactly_once,
    lane_capacity_one_is_never_exceeded,
    lane_capacities_are_global_and_configurable,
    the_driver_lane_is_never_capped,
    expired_lease_is_rescued_and_the_zombie_is_rejected,
    rescues_run_out,
    rescue_and_completion_race_ends_in_one_outcome,
    retries_persist_their_backoff_as_available_at,
    completion_is_atomic_with_its_owner_event_and_follow_ups,
    cancel_fences_the_holder,
    transition_is_a_compare_and_set,
    events_come_in_seq_order_with_concurrent_writers_and_a_tailing_reader,
    four_concurrent_writers_never_see_busy,
    naive_select_then_update_double_claims,
    events_are_the_typed_events_of_the_event_module,
    judge_and_cross_exam_owners_belong_to_battles,
    add_owner_is_atomic,
    claims_filter_by_owner_kind,
    list_works_newest_first_by_status_and_data_field,
    list_works_pages_by_keyset_while_works_are_created,
    migrating_from_0001_keeps_every_row,
    record_changes_is_fenced_like_record,
    record_changes_touch_only_the_fenced_work,
    record_changes_roll_back_on_a_from_mismatch,
    record_changes_apply_in_order,
    record_changes_append_their_events_in_order,
    record_changes_of_a_thousand_rows_in_one_call,
    concurrent_record_changes_lose_no_event,
    finish_work_settles_a_work_its_owners_and_its_tasks_at_once,
    finish_work_without_cancel_tasks_leaves_the_tasks,
    finish_work_rolls_back_on_any_refusal,
    finish_work_races_the_holder_and_wins_once,
);

const TTL: Duration = Duration::from_secs(30);

fn claim_request(worker: &str) -> ClaimRequest {
    ClaimRequest::new(worker).lease_ttl(TTL)
}

async fn all_events(store: &dyn Store) -> Vec<EventRecord> {
    store.events_after(0, 1_000_000).await.unwrap()
}

// (1) A battle with its contestants, tasks and first event is created at
// once; a creation that fails anywhere leaves nothing behind.
async fn creation_is_atomic(h: &Harness) {
    let store = &*h.store;
    let event = store
        .create_work(battle("b1", 3, Lane::Cloud))
        .await
        .unwrap();
    assert_eq!(event.kind, EventType::BattleStarted);
    assert_eq!(event.work_id, "b1");
    let snapshot = store.work("b1").await.unwrap();
    assert_eq!(snapshot.work.kind, WorkKind::Battle);
    assert_eq!(snapshot.work.data["prompt"], "hi");
    assert_eq!(snapshot.owners.len(), 3);
    assert_eq!(snapshot.owners[0].id, "b1-c0");
    assert_eq!(snapshot.owners[2].status, "queued");
    assert_eq!(snapshot.tasks.len(), 3);
    for (i, task) in snapshot.tasks.iter().enumerate() {
        assert_eq!(task.owner.kind, OwnerKind::Contestant);
        assert_eq!(task.owner.id, format!("b1-c{i}"));
        assert_eq!(task.work_id, "b1");
        assert_eq!((task.state, task.attempt), (TaskState::Pending, 0));
        assert_eq!(task.payload["contestant"], task.owner.id);
    }

    // The second battle's last task collides with an existing task id:
    // nothing of it may remain, not even its owners or its event.
    let mut colliding = battle("b2", 2, Lane::Cloud);
    colliding.tasks[1].id = "b1-t0".into();
    let e = store.create_work(colliding).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    assert!(e.message().contains("b1-t0"), "{e}");
    assert_eq!(
        store.work("b2").await.unwrap_err().kind(),
        ErrorKind::NotFoundId
    );
    assert_eq!(all_events(store).await.len(), 1);
    // ... so it can be created now, in full.
    store
        .create_work(battle("b2", 2, Lane::Cloud))
        .await
        .unwrap();
    assert_eq!(store.work("b2").await.unwrap().tasks.len(), 2);

    let e = store
        .create_work(battle("b1", 1, Lane::Cloud))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict);
    let mut stepped = battle("b3", 1, Lane::Cloud);
    stepped.owners[0].kind = OwnerKind::Step;
    assert_eq!(
        store.create_work(stepped).await.unwrap_err().kind(),
        ErrorKind::InvalidInput
    );

    // A run's steps first, their tasks later; a task for an unknown owner
    // (or an owner of the wrong kind) is refused.
    store.create_work(run("r1", 2)).await.unwrap();
    let e = store
        .enqueue(vec![step_task("r1-x", "r1-nope", Lane::Cloud)], None)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFoundId, "{e}");
    let mut wrong_kind = step_task("r1-y", "b1-c0", Lane::Cloud);
    wrong_kind.owner.kind = OwnerKind::Step;
    assert_eq!(
        store
            .enqueue(vec![wrong_kind], None)
            .await
            .unwrap_err()
            .kind(),
        ErrorKind::NotFoundId
    );
    let queued = store
        .enqueue(
            vec![step_task("r1-t0", "r1-s0", Lane::Cloud)],
            Some(NewEvent::new(
                EventType::StepUpdated,
                json!({"status": "queued"}),
            )),
        )
        .await
        .unwrap();
    assert_eq!(queued[0].work_id, "r1");
    let events = all_events(store).await;
    let last = events.last().unwrap();
    assert_eq!(
        (last.kind, last.owner_id.as_deref()),
        (EventType::StepUpdated, Some("r1-s0"))
    );
    // Re-enqueuing after a crash is a conflict, not a second task.
    let e = store
        .enqueue(vec![step_task("r1-t0", "r1-s0", Lane::Cloud)], None)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict);
    assert_eq!(store.work("r1").await.unwrap().tasks.len(), 1);
    // The epoch is the store's, whichever handle reads it.
    assert!(!store.epoch().is_empty());
    assert_eq!(h.another().await.epoch(), store.epoch());
}

// (2) A claim sets a fresh token, the worker and the expiry, computed by
// the database.
async fn claims_lease_from_the_database_clock(h: &Harness) {
    let store = &*h.store;
    store
        .create_work(battle("b", 3, Lane::Cloud))
        .await
        .unwrap();
    let ttl = Duration::from_millis(7_000);
    let claims = store
        .claim(&ClaimRequest::new("w1").limit(2).lease_ttl(ttl))
        .await
        .unwrap();
    assert_eq!(claims.len(), 2);
    assert_ne!(claims[0].lease_token, claims[1].lease_token);
    for claim in &claims {
        let task = &claim.task;
        assert_eq!((task.state, task.attempt), (TaskState::Running, 1));
        assert_eq!(task.worker.as_deref(), Some("w1"));
        let started = task.started_at.unwrap();
        let expiry = claim.lease_expires_at - started;
        assert!((6_990..=7_010).contains(&expiry), "lease of {expiry} ms");
        let stored = store.task(&task.id).await.unwrap();
        assert_eq!(stored.lease_expires_at, Some(claim.lease_expires_at));
        assert!(claim.lease_token.len() >= 16);
    }
    // FIFO: the first two contestants' tasks.
    let mut ids: Vec<_> = claims.iter().map(|c| c.task.id.clone()).collect();
    ids.sort();
    assert_eq!(ids, ["b-t0", "b-t1"]);
    let rest = store.claim(&claim_request("w2").limit(5)).await.unwrap();
    assert_eq!(rest.len(), 1);
    assert!(store.claim(&claim_request("w3")).await.unwrap().is_empty());

    let renewed = store
        .heartbeat(&claims[0].fence(), Duration::from_secs(60))
        .await
        .unwrap();
    assert!(
        renewed >= claims[0].lease_expires_at + 50_000,
        "heartbeat extends the lease"
    );
    let lanes = store.lanes().await.unwrap();
    assert_eq!(
        lanes[1],
        LaneState {
            lane: Lane::Cloud,
            capacity: None,
            running: 3
        }
    );

    for bad in [
        ClaimRequest::new("w").limit(0),
        ClaimRequest::new("w").lease_ttl(Duration::ZERO),
    ] {
        assert_eq!(
            store.claim(&bad).await.unwrap_err().kind(),
            ErrorKind::InvalidInput
        );
    }
}

// (2) Every later write is fenced by the token and state = running.
async fn fenced_writes_reject_a_stale_lease(h: &Harness) {
    let store = &*h.store;
    store
        .create_work(battle("b", 1, Lane::Cloud))
        .await
        .unwrap();
    let claim = store.claim(&claim_request("w")).await.unwrap().remove(0);
    let forged = Fence {
        task_id: claim.task.id.clone(),
        lease_token: "not-the-token".into(),
    };
    let e = store.heartbeat(&forged, TTL).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    assert_eq!(e.details()["state"], "running");
    let update = Update {
        owner: Some(OwnerUpdate {
            status: Some("hacked".into()),
            data: None,
        }),
        event: Some(contestant_event(&claim.task, "hacked")),
    };
    assert_eq!(
        store
            .record(&forged, update.clone())
            .await
            .unwrap_err()
            .kind(),
        ErrorKind::Conflict
    );
    assert_eq!(
        store
            .complete(&forged, Completion::completed(json!(1)))
            .await
            .unwrap_err()
            .kind(),
        ErrorKind::Conflict
    );
    let unknown = Fence {
        task_id: "nope".into(),
        lease_token: claim.lease_token.clone(),
    };
    assert_eq!(
        store.heartbeat(&unknown, TTL).await.unwrap_err().kind(),
        ErrorKind::NotFoundId
    );
    // Nothing the forged writes tried is there.
    assert_eq!(store.work("b").await.unwrap().owners[0].status, "queued");
    assert_eq!(all_events(store).await.len(), 1);

    let fence = claim.fence();
    let event = store
        .record(
            &fence,
            Update {
                owner: Some(OwnerUpdate {
                    status: Some("running".into()),
                    data: None,
                }),
                event: Some(contestant_event(&claim.task, "running")),
            },
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(event.task_id.as_deref(), Some("b-t0"));
    assert_eq!(event.owner_id.as_deref(), Some("b-c0"));
    let done = store
        .complete(&fence, Completion::completed(json!({"text": "42"})))
        .await
        .unwrap();
    assert_eq!(done.state, TaskState::Completed);
    assert_eq!(done.result, Some(json!({"text": "42"})));
    assert!(done.finished_at.is_some() && done.lease_expires_at.is_none());
    // The same holder, once more: its lease ended with the completion.
    let e = store
        .complete(&fence, Completion::completed(json!(2)))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict);
    assert_eq!(e.details()["state"], "completed");
    assert_eq!(
        store.heartbeat(&fence, TTL).await.unwrap_err().kind(),
        ErrorKind::Conflict
    );
    assert_eq!(
        store.task("b-t0").await.unwrap().result,
        Some(json!({"text": "42"}))
    );
}

// (2) N concurrent claimers (several of them separate handles: other
// servers) over M tasks, each failing once and retried: every (task,
// attempt) is claimed exactly once, and every task finishes.
async fn concurrent_claimers_claim_each_attempt_exactly_once(h: &Harness) {
    const CLAIMERS: usize = 8;
    const TASKS: usize = 120;
    let policy = RetryPolicy::exponential(2, 0, 1.0, 0);
    h.store
        .create_work(with_retry(battle("b", TASKS, Lane::Cloud), policy))
        .await
        .unwrap();
    let claimed = Arc::new(Mutex::new(Vec::new()));
    let mut workers = Vec::new();
    for i in 0..CLAIMERS {
        let store = if i % 2 == 0 {
            h.store.clone()
        } else {
            h.another().await
        };
        let claimed = claimed.clone();
        workers.push(tokio::spawn(async move {
            let mut idle = 0;
            while idle < 3 {
                let claims = store
                    .claim(&claim_request(&format!("w{i}")).limit(3))
                    .await
                    .unwrap();
                if claims.is_empty() {
                    idle += 1;
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    continue;
                }
                idle = 0;
                for claim in claims {
                    claimed
                        .lock()
                        .unwrap()
                        .push((claim.task.id.clone(), claim.task.attempt));
                    let completion = if claim.task.attempt == 1 {
                        Completion::failed("flaky", true)
                    } else {
                        Completion::completed(json!(claim.task.attempt))
                    };
                    store.complete(&claim.fence(), completion).await.unwrap();
                }
            }
        }));
    }
    for worker in workers {
        worker.await.unwrap();
    }
    let claimed = claimed.lock().unwrap().clone();
    let unique: HashSet<_> = claimed.iter().cloned().collect();
    assert_eq!(
        unique.len(),
        claimed.len(),
        "a (task, attempt) was claimed twice"
    );
    assert_eq!(claimed.len(), 2 * TASKS);
    let snapshot = h.store.work("b").await.unwrap();
    for task in &snapshot.tasks {
        assert_eq!(
            (task.state, task.attempt, task.failures),
            (TaskState::Completed, 2, 1),
            "{}",
            task.id
        );
    }
}

// (3) The local lane (capacity 1) never runs two tasks at once, however
// many claimers (and servers) compete for it.
async fn lane_capacity_one_is_never_exceeded(h: &Harness) {
    const TASKS: usize = 16;
    h.store
        .create_work(battle("b", TASKS, Lane::Local))
        .await
        .unwrap();
    let running = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::new();
    for i in 0..6 {
        let store = if i % 2 == 0 {
            h.store.clone()
        } else {
            h.another().await
        };
        let (running, peak, done) = (running.clone(), peak.clone(), done.clone());
        workers.push(tokio::spawn(async move {
            while done.load(Ordering::SeqCst) < TASKS {
                let claims = store
                    .claim(
                        &claim_request(&format!("w{i}"))
                            .lanes(&[Lane::Local])
                            .limit(4),
                    )
                    .await
                    .unwrap();
                assert!(claims.len() <= 1, "a claim of {} local tasks", claims.len());
                let Some(claim) = claims.into_iter().next() else {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    continue;
                };
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                let lanes = store.lanes().await.unwrap();
                assert_eq!(lanes[0].running, 1, "{lanes:?}");
                tokio::time::sleep(Duration::from_millis(3)).await;
                running.fetch_sub(1, Ordering::SeqCst);
                store
                    .complete(&claim.fence(), Completion::completed(json!(i)))
                    .await
                    .unwrap();
                done.fetch_add(1, Ordering::SeqCst);
            }
        }));
    }
    for worker in workers {
        worker.await.unwrap();
    }
    assert_eq!(peak.load(Ordering::SeqCst), 1);
    let tasks = h.store.work("b").await.unwrap().tasks;
    assert!(tasks.iter().all(|t| t.state == TaskState::Completed));
}

// (3) Capacities are rows of the store: every handle sees a change; a cap
// on the cloud lane holds too; a full lane does not block another lane.
async fn lane_capacities_are_global_and_configurable(h: &Harness) {
    let store = &*h.store;
    let other = h.another().await;
    store
        .create_work(battle("l", 4, Lane::Local))
        .await
        .unwrap();
    store
        .create_work(battle("c", 6, Lane::Cloud))
        .await
        .unwrap();
    other.set_lane_capacity(Lane::Cloud, Some(2)).await.unwrap();
    other.set_lane_capacity(Lane::Local, Some(0)).await.unwrap();
    assert_eq!(
        store.lanes().await.unwrap(),
        [
            LaneState {
                lane: Lane::Local,
                capacity: Some(0),
                running: 0
            },
            LaneState {
                lane: Lane::Cloud,
                capacity: Some(2),
                running: 0
            },
            LaneState {
                lane: Lane::Driver,
                capacity: None,
                running: 0
            }
        ]
    );
    let claims = store.claim(&claim_request("w").limit(10)).await.unwrap();
    assert_eq!(claims.len(), 2);
    assert!(claims.iter().all(|c| c.task.lane == Lane::Cloud));
    assert!(other
        .claim(&claim_request("w2").limit(10))
        .await
        .unwrap()
        .is_empty());
    store.set_lane_capacity(Lane::Local, Some(1)).await.unwrap();
    let local = other.claim(&claim_request("w2").limit(10)).await.unwrap();
    assert_eq!(local.len(), 1);
    assert_eq!(local[0].task.lane, Lane::Local);
    // Lanes in the requested order: local is full, cloud is full.
    assert!(store
        .claim(&claim_request("w").lanes(&[Lane::Local, Lane::Cloud]))
        .await
        .unwrap()
        .is_empty());
    store
        .complete(&claims[0].fence(), Completion::completed(json!(0)))
        .await
        .unwrap();
    let next = store.claim(&claim_request("w").limit(10)).await.unwrap();
    assert_eq!(next.len(), 1);
    store.set_lane_capacity(Lane::Cloud, None).await.unwrap();
    assert_eq!(
        store
            .claim(&claim_request("w").limit(10))
            .await
            .unwrap()
            .len(),
        3
    );
}

// (3) The run drivers' lane: no capacity can be set on it (the store
// refuses one, changing nothing), and however the arena's lanes are capped
// its tasks are all claimable at once — `[lanes] cloud = 1` does not cap
// how many runs are driven.
async fn the_driver_lane_is_never_capped(h: &Harness) {
    let store = &*h.store;
    let e = store
        .set_lane_capacity(Lane::Driver, Some(1))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert!(e.message().contains("driver"), "{e}");
    store.set_lane_capacity(Lane::Driver, None).await.unwrap();
    store.set_lane_capacity(Lane::Cloud, Some(1)).await.unwrap();
    store.set_lane_capacity(Lane::Local, Some(0)).await.unwrap();
    store.create_work(run("r", 5)).await.unwrap();
    store
        .enqueue(
            (0..5)
                .map(|i| step_task(&format!("r-d{i}"), &format!("r-s{i}"), Lane::Driver))
                .collect(),
            None,
        )
        .await
        .unwrap();
    store
        .create_work(battle("c", 3, Lane::Cloud))
        .await
        .unwrap();
    let drivers = store
        .claim(
            &claim_request("w")
                .limit(10)
                .owner_kinds(&[OwnerKind::Step])
                .lanes(&[Lane::Driver]),
        )
        .await
        .unwrap();
    assert_eq!(drivers.len(), 5, "every driver at once");
    assert!(drivers.iter().all(|c| c.task.lane == Lane::Driver));
    // The cloud cap still holds for the contestants beside them.
    let cloud = store.claim(&claim_request("w").limit(10)).await.unwrap();
    assert_eq!(cloud.len(), 1);
    assert_eq!(cloud[0].task.lane, Lane::Cloud);
    let driver = store
        .lanes()
        .await
        .unwrap()
        .into_iter()
        .find(|l| l.lane == Lane::Driver)
        .unwrap();
    assert_eq!(
        driver,
        LaneState {
            lane: Lane::Driver,
            capacity: None,
            running: 5
        }
    );
}

// (4) A lease that expires is rescued; the old holder (a zombie) is then
// refused; the next claim is a new attempt with a new token.
async fn expired_lease_is_rescued_and_the_zombie_is_rejected(h: &Harness) {
    let store = &*h.store;
    store
        .create_work(battle("b", 2, Lane::Cloud))
        .await
        .unwrap();
    let short = claim_request("zombie").lease_ttl(Duration::from_millis(700));
    let zombie = store.claim(&short).await.unwrap().remove(0);
    let live = store.claim(&claim_request("live")).await.unwrap().remove(0);
    assert!(
        store.rescue_expired(10).await.unwrap().is_empty(),
        "not expired yet"
    );
    tokio::time::sleep(Duration::from_millis(900)).await;
    let rescuer = h.another().await;
    let rescued = rescuer.rescue_expired(10).await.unwrap();
    assert_eq!(rescued.len(), 1, "only the expired lease");
    let task = &rescued[0].task;
    assert_eq!(task.id, zombie.task.id);
    assert_eq!(rescued[0].worker.as_deref(), Some("zombie"));
    assert_eq!(
        (task.state, task.rescues, task.failures),
        (TaskState::Pending, 1, 0)
    );
    assert_eq!(task.error.as_deref(), Some("lease expired"));
    assert!(
        rescuer.rescue_expired(10).await.unwrap().is_empty(),
        "a rescue happens once"
    );

    let fence = zombie.fence();
    let late = store
        .complete(&fence, Completion::completed(json!("late")))
        .await
        .unwrap_err();
    assert_eq!(late.kind(), ErrorKind::Conflict, "{late}");
    assert_eq!(late.details()["state"], "pending");
    assert_eq!(
        store.heartbeat(&fence, TTL).await.unwrap_err().kind(),
        ErrorKind::Conflict
    );
    assert_eq!(
        store
            .record(&fence, Update::default())
            .await
            .unwrap_err()
            .kind(),
        ErrorKind::Conflict
    );

    let again = store.claim(&claim_request("heir")).await.unwrap().remove(0);
    assert_eq!(again.task.id, zombie.task.id);
    assert_eq!(again.task.attempt, 2);
    assert_ne!(again.lease_token, zombie.lease_token);
    // The zombie, once more, now that someone else holds the task.
    let e = store
        .complete(&fence, Completion::completed(json!("late")))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict);
    assert!(e.message().contains("heir"), "{e}");
    let done = store
        .complete(&again.fence(), Completion::completed(json!("ok")))
        .await
        .unwrap();
    assert_eq!(
        (done.state, done.result),
        (TaskState::Completed, Some(json!("ok")))
    );
    store
        .complete(&live.fence(), Completion::completed(json!(1)))
        .await
        .unwrap();
}

// (4) A task whose worker keeps dying fails once its rescues are spent.
async fn rescues_run_out(h: &Harness) {
    let store = &*h.store;
    let mut work = battle("b", 1, Lane::Cloud);
    work.tasks[0].max_rescues = 1;
    store.create_work(work).await.unwrap();
    let short = claim_request("w").lease_ttl(Duration::from_millis(50));
    for expected in [TaskState::Pending, TaskState::Failed] {
        store.claim(&short).await.unwrap().remove(0);
        tokio::time::sleep(Duration::from_millis(120)).await;
        let rescued = store.rescue_expired(10).await.unwrap();
        assert_eq!(rescued[0].task.state, expected);
    }
    let task = store.task("b-t0").await.unwrap();
    assert_eq!((task.rescues, task.attempt), (2, 2));
    assert!(task.finished_at.is_some());
    assert!(store.claim(&short).await.unwrap().is_empty());
}

// (4) A holder completing while a rescuer looks at its expired lease: one
// of the two wins, never both, never neither.
async fn rescue_and_completion_race_ends_in_one_outcome(h: &Harness) {
    const ROUNDS: usize = 24;
    let rescuer_store = h.another().await;
    let store = h.store.clone();
    store
        .create_work(battle("b", ROUNDS, Lane::Cloud))
        .await
        .unwrap();
    let (mut completed, mut rescued) = (0, 0);
    for round in 0..ROUNDS {
        let claim = store
            .claim(&claim_request("holder").lease_ttl(Duration::from_millis(20)))
            .await
            .unwrap()
            .remove(0);
        tokio::time::sleep(Duration::from_millis(30)).await;
        let holder = {
            let store = store.clone();
            let fence = claim.fence();
            tokio::spawn(async move {
                store
                    .complete(&fence, Completion::completed(json!(round)))
                    .await
            })
        };
        let rescuer = {
            let store = rescuer_store.clone();
            tokio::spawn(async move { store.rescue_expired(10).await })
        };
        let completion = holder.await.unwrap();
        let rescue = rescuer.await.unwrap().unwrap();
        let task = store.task(&claim.task.id).await.unwrap();
        match (completion, rescue.is_empty()) {
            (Ok(done), true) => {
                completed += 1;
                assert_eq!(done.state, TaskState::Completed);
                assert_eq!(task.state, TaskState::Completed);
            }
            (Err(e), false) => {
                rescued += 1;
                assert_eq!(e.kind(), ErrorKind::Conflict);
                assert_eq!(rescue[0].task.id, claim.task.id);
                assert_eq!((task.state, task.rescues), (TaskState::Pending, 1));
                // Take it out of the way of the next round.
                store
                    .cancel(&task.id, "round over", Update::default())
                    .await
                    .unwrap();
            }
            (completion, empty) => panic!(
                "round {round}: completion {completion:?} and rescue empty={empty}: not one outcome"
            ),
        }
    }
    eprintln!("rescue/complete race: {completed} completed, {rescued} rescued");
}

// (4) A retryable failure goes back with its backoff persisted as
// available_at; the last allowed failure is final.
async fn retries_persist_their_backoff_as_available_at(h: &Harness) {
    let store = &*h.store;
    let policy = RetryPolicy::exponential(3, 400, 2.0, 10_000);
    store
        .create_work(with_retry(battle("b", 1, Lane::Cloud), policy))
        .await
        .unwrap();
    let first = store.claim(&claim_request("w")).await.unwrap().remove(0);
    let retried = store
        .complete(&first.fence(), Completion::failed("429", true))
        .await
        .unwrap();
    assert_eq!((retried.state, retried.failures), (TaskState::Pending, 1));
    assert_eq!(retried.error.as_deref(), Some("429"));
    assert!(retried.finished_at.is_none());
    let wait = retried.available_at - first.task.started_at.unwrap();
    assert!((400..2_000).contains(&wait), "backoff of {wait} ms");
    // A new handle sees the same backoff: it is in the row.
    let other = h.another().await;
    assert_eq!(
        other.task("b-t0").await.unwrap().available_at,
        retried.available_at
    );
    assert!(
        other.claim(&claim_request("w")).await.unwrap().is_empty(),
        "backing off"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    let second = other.claim(&claim_request("w")).await.unwrap().remove(0);
    assert_eq!(second.task.attempt, 2);
    let fatal = other
        .complete(&second.fence(), Completion::failed("bad request", false))
        .await
        .unwrap();
    assert_eq!((fatal.state, fatal.failures), (TaskState::Failed, 2));
    assert!(fatal.finished_at.is_some());
}

// (1, 5) A completion changes the task, its owner, queues follow-ups and
// appends its event in one transaction — or does none of it.
async fn completion_is_atomic_with_its_owner_event_and_follow_ups(h: &Harness) {
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
async fn cancel_fences_the_holder(h: &Harness) {
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
async fn transition_is_a_compare_and_set(h: &Harness) {
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
async fn events_come_in_seq_order_with_concurrent_writers_and_a_tailing_reader(h: &Harness) {
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
async fn four_concurrent_writers_never_see_busy(h: &Harness) {
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
async fn naive_select_then_update_double_claims(h: &Harness) {
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
async fn events_are_the_typed_events_of_the_event_module(h: &Harness) {
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

/// What only the embedded backend has: the file, its lock, `open`.
mod sqlite_only {
    use super::*;

    // A busy database never surfaces: another connection holds the write
    // lock more than ten times the store's busy_timeout, and the store's
    // writes still succeed once it lets go (the whole transaction is
    // retried) instead of failing with SQLITE_BUSY. (With a busy_deadline
    // below the hold, the same writes fail at once: the retry is what waits.)
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_lock_held_past_the_busy_timeout_is_waited_out() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("coderig.db");
        let options = SqliteOptions {
            busy_timeout: Duration::from_millis(20),
            ..SqliteOptions::default()
        };
        let store = SqliteStore::open_with(&path, options).await.unwrap();
        let Raw::Sqlite(pool) = raw(&Location::Sqlite(path.clone())).await else {
            unreachable!()
        };
        let mut blocker = pool.acquire().await.unwrap();
        sqlx::query("BEGIN IMMEDIATE")
            .execute(&mut *blocker)
            .await
            .unwrap();
        let writes = {
            let store = store.clone();
            tokio::spawn(async move {
                store.create_work(battle("b", 2, Lane::Cloud)).await?;
                store.claim(&claim_request("w")).await
            })
        };
        tokio::time::sleep(Duration::from_millis(250)).await;
        assert!(!writes.is_finished(), "the store waited for the lock");
        sqlx::query("COMMIT").execute(&mut *blocker).await.unwrap();
        let claims = writes.await.unwrap().expect("no SQLITE_BUSY surfaces");
        assert_eq!(claims.len(), 1);
        // Reads are not blocked by a writer at all (WAL).
        sqlx::query("BEGIN IMMEDIATE")
            .execute(&mut *blocker)
            .await
            .unwrap();
        assert_eq!(store.work("b").await.unwrap().tasks.len(), 2);
        sqlx::query("ROLLBACK")
            .execute(&mut *blocker)
            .await
            .unwrap();
    }

    // `store::open` picks SQLite in the data dir by default, or the file a
    // path or `sqlite://` URL names; both run the migrations.
    #[tokio::test]
    async fn open_picks_the_backend_from_the_url() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let store = coderig::store::open(None, &data).await.unwrap();
        assert_eq!(store.backend(), "sqlite");
        assert!(data.join("coderig.db").is_file());
        let epoch = store.epoch().to_string();
        let url = format!("sqlite://{}", data.join("coderig.db").display());
        let again = coderig::store::open(Some(&url), dir.path()).await.unwrap();
        assert_eq!(again.epoch(), epoch, "one file, one epoch");
        let plain = dir.path().join("plain.db");
        let plain_store = coderig::store::open(Some(plain.to_str().unwrap()), dir.path())
            .await
            .unwrap();
        assert!(plain.is_file());
        assert_ne!(plain_store.epoch(), epoch, "another file, another epoch");
    }
}

/// A PostgreSQL that is not there is reported with its cause (connection
/// refused), not as a pool timeout after 30 s; no database needed.
#[tokio::test]
async fn an_unreachable_postgres_is_refused_with_its_cause() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let url = format!("postgres://postgres@127.0.0.1:{port}/postgres");
    let Err(err) = coderig::store::PostgresStore::connect(&url).await else {
        panic!("nothing listens on {url}");
    };
    assert_eq!(err.kind(), coderig::ErrorKind::Io);
    assert!(
        err.message().to_lowercase().contains("refused"),
        "{}",
        err.message()
    );
}
