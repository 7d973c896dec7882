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
#[path = "store_conformance/events.rs"]
mod events;
#[path = "store_conformance/finish.rs"]
mod finish;
#[path = "store_conformance/leases.rs"]
mod leases;
#[path = "store_conformance/migration.rs"]
mod migration;
#[path = "store_conformance/retention.rs"]
mod retention;
#[path = "store_conformance/sqlite_writer.rs"]
mod sqlite_writer;
use arena::*;
use changes::*;
use events::*;
use finish::*;
use leases::*;
use migration::*;
use retention::*;

use coderig::arena::Lane;
use coderig::store::*;
use coderig::task::TaskState;
use coderig::ErrorKind;
use common::*;
use serde_json::json;
use std::time::Duration;

common::on_both_stores!(
    "store_conformance";
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
    claims_filter_by_work,
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
    compact_deletes_old_final_works_with_everything_of_them,
    compact_keeps_the_newest_event,
    compact_refuses_a_retention_under_a_minute,
    heartbeat_many_extends_each_lease_on_its_own,
    clock_ms_is_the_clock_of_leases_and_stored_times,
);

pub(crate) const TTL: Duration = Duration::from_secs(30);

pub(crate) fn claim_request(worker: &str) -> ClaimRequest {
    ClaimRequest::new(worker).lease_ttl(TTL)
}

pub(crate) async fn all_events(store: &dyn Store) -> Vec<EventRecord> {
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
        let mut held = crate::sqlite_writer::blocked_store(async |_| {}).await;
        let store = held.store.clone();
        let writes = {
            let store = store.clone();
            tokio::spawn(async move {
                store.create_work(battle("b", 2, Lane::Cloud)).await?;
                store.claim(&claim_request("w")).await
            })
        };
        tokio::time::sleep(Duration::from_millis(250)).await;
        assert!(!writes.is_finished(), "the store waited for the lock");
        held.release().await;
        let claims = writes.await.unwrap().expect("no SQLITE_BUSY surfaces");
        assert_eq!(claims.len(), 1);
        // Reads are not blocked by a writer at all (WAL).
        held.hold().await;
        assert_eq!(store.work("b").await.unwrap().tasks.len(), 2);
        held.release().await;
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
