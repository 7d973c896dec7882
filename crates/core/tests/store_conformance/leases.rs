//! The conformance tests of claims and leases: the database clock, fencing,
//! exactly-once claims under concurrency, lane capacities, rescue of
//! expired leases and retries' backoff. Run on both backends by
//! `on_both_stores!` (their names are listed there).

use super::{all_events, claim_request, TTL};
use crate::common::*;
use coderig::arena::Lane;
use coderig::store::*;
use coderig::task::TaskState;
use coderig::ErrorKind;
use serde_json::json;
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

// (2) A claim sets a fresh token, the worker and the expiry, computed by
// the database.
/// `clock_ms` is the clock leases and stored times are read from: a lease
/// claimed between two readings of it starts between them, and it never
/// goes back.
pub async fn clock_ms_is_the_clock_of_leases_and_stored_times(h: &Harness) {
    let store = &*h.store;
    store
        .create_work(battle("b", 1, Lane::Cloud))
        .await
        .unwrap();
    let before = store.clock_ms().await.unwrap();
    let claims = store.claim(&claim_request("w1")).await.unwrap();
    let after = store.clock_ms().await.unwrap();
    let started = claims[0].task.started_at.unwrap();
    assert!(
        before <= started && started <= after,
        "claimed at {started}, between clock readings {before} and {after}"
    );
    let mut last = after;
    for _ in 0..20 {
        let now = store.clock_ms().await.unwrap();
        assert!(now >= last, "the clock went back from {last} to {now}");
        last = now;
    }
}

pub async fn claims_lease_from_the_database_clock(h: &Harness) {
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
pub async fn fenced_writes_reject_a_stale_lease(h: &Harness) {
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
pub async fn concurrent_claimers_claim_each_attempt_exactly_once(h: &Harness) {
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
pub async fn lane_capacity_one_is_never_exceeded(h: &Harness) {
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
pub async fn lane_capacities_are_global_and_configurable(h: &Harness) {
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
pub async fn the_driver_lane_is_never_capped(h: &Harness) {
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
pub async fn expired_lease_is_rescued_and_the_zombie_is_rejected(h: &Harness) {
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
    // The rescue wrote its event, once, in its transaction.
    let rescues = rescue_events(store).await;
    assert_eq!(rescues.len(), 1, "{rescues:?}");
    let (record, event) = &rescues[0];
    assert_eq!(
        (record.work_id.as_str(), record.owner_id.as_deref()),
        ("b", Some(task.owner.id.as_str()))
    );
    assert_eq!(record.task_id.as_deref(), Some(task.id.as_str()));
    assert_eq!(
        event,
        &coderig::event::TaskRescued {
            battle_id: Some("b".into()),
            run_id: None,
            owner_kind: "contestant".into(),
            owner_id: task.owner.id.clone(),
            task_id: task.id.clone(),
            worker: Some("zombie".into()),
            rescues: 1,
            requeued: true,
        }
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
pub async fn rescues_run_out(h: &Harness) {
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
    let said: Vec<(u32, bool)> = rescue_events(store)
        .await
        .iter()
        .map(|(_, e)| (e.rescues, e.requeued))
        .collect();
    assert_eq!(said, [(1, true), (2, false)], "requeued, then failed");
}

/// The `task_rescued` events of the log, each with its record.
async fn rescue_events(store: &dyn Store) -> Vec<(EventRecord, coderig::event::TaskRescued)> {
    let mut found = Vec::new();
    for record in store.events_after(0, 10_000).await.unwrap() {
        if record.kind != EventType::TaskRescued {
            continue;
        }
        let event: coderig::event::TaskRescued =
            serde_json::from_value(record.payload.clone()).unwrap();
        found.push((record, event));
    }
    found
}

// (4) A holder completing while a rescuer looks at its expired lease: one
// of the two wins, never both, never neither.
pub async fn rescue_and_completion_race_ends_in_one_outcome(h: &Harness) {
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
pub async fn retries_persist_their_backoff_as_available_at(h: &Harness) {
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

// Many leases extended in one write, each fenced on its own: the held ones
// get their new expiry (the same as one heartbeat would give), a forged
// token and a finished task get `conflict`, an unknown task
// `not_found_id`, in the order asked — and the refusals change nothing.
pub async fn heartbeat_many_extends_each_lease_on_its_own(h: &Harness) {
    let store = &*h.store;
    store
        .create_work(battle("b", 3, Lane::Cloud))
        .await
        .unwrap();
    let claims = store.claim(&claim_request("w").limit(3)).await.unwrap();
    assert_eq!(claims.len(), 3);
    let done = claims[2].fence();
    store
        .complete(&done, Completion::completed(json!(1)))
        .await
        .unwrap();
    let forged = Fence {
        task_id: claims[1].task.id.clone(),
        lease_token: "not-the-token".into(),
    };
    let unknown = Fence {
        task_id: "nope".into(),
        lease_token: claims[0].lease_token.clone(),
    };
    let fences = [claims[0].fence(), forged, done, unknown, claims[1].fence()];
    let answers = store
        .heartbeat_many(&fences, Duration::from_secs(600))
        .await
        .unwrap();
    let kinds: Vec<Option<ErrorKind>> = answers
        .iter()
        .map(|a| a.as_ref().err().map(|e| e.kind()))
        .collect();
    assert_eq!(
        kinds,
        [
            None,
            Some(ErrorKind::Conflict),
            Some(ErrorKind::Conflict),
            Some(ErrorKind::NotFoundId),
            None
        ]
    );
    for (i, claim) in [(0, &claims[0]), (4, &claims[1])] {
        let expiry = *answers[i].as_ref().unwrap();
        assert!(expiry > claim.lease_expires_at, "extended past the claim's");
        let task = store.task(&claim.task.id).await.unwrap();
        assert_eq!(task.lease_expires_at, Some(expiry));
        assert_eq!(task.state, TaskState::Running);
    }
    assert_eq!(
        store.task(&claims[2].task.id).await.unwrap().state,
        TaskState::Completed
    );
    assert!(store.heartbeat_many(&[], TTL).await.unwrap().is_empty());
    assert_eq!(
        store
            .heartbeat_many(&fences, Duration::ZERO)
            .await
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidInput
    );
}
