//! The conformance tests of `Store::compact`: what is final and old goes
//! with everything of it, what is live or young stays, the log's newest
//! event is never deleted. Run on both backends by `on_both_stores!`.
//!
//! "Old" is made by moving rows' timestamps back two hours with raw SQL
//! (compaction measures age by the database's clock), so nothing waits.

use crate::common::*;
use coderig::arena::Lane;
use coderig::store::*;
use coderig::task::TaskState;
use coderig::ErrorKind;
use serde_json::json;
use std::time::Duration;

const HOUR: Duration = Duration::from_secs(3600);

/// Moves `work`'s row, and every event of it, two hours back.
async fn age(h: &Harness, work: &str) {
    let (works, events) = match h.raw().await {
        Raw::Sqlite(pool) => (
            sqlx::query("UPDATE works SET updated_at = updated_at - 7200000 WHERE id = ?1")
                .bind(work)
                .execute(&pool)
                .await
                .unwrap()
                .rows_affected(),
            sqlx::query("UPDATE events SET created_at = created_at - 7200000 WHERE work_id = ?1")
                .bind(work)
                .execute(&pool)
                .await
                .unwrap()
                .rows_affected(),
        ),
        Raw::Postgres(pool) => (
            sqlx::query(
                "UPDATE works SET updated_at = updated_at - interval '2 hours' WHERE id = $1",
            )
            .bind(work)
            .execute(&pool)
            .await
            .unwrap()
            .rows_affected(),
            sqlx::query(
                "UPDATE events SET created_at = created_at - interval '2 hours' \
                 WHERE work_id = $1",
            )
            .bind(work)
            .execute(&pool)
            .await
            .unwrap()
            .rows_affected(),
        ),
    };
    assert_eq!(works, 1, "{work} exists");
    assert!(events >= 1, "{work} has events");
}

/// Ends battle `id` as `completed`, cancelling its tasks when `cancel`.
async fn complete(store: &dyn Store, id: &str, cancel: bool) {
    let mut finish = Finish::new(WorkChange::new().status("completed")).event(
        ChangeEvent::of_work(NewEvent::new(
            EventType::BattleUpdated,
            json!({"battle_id": id, "status": "completed"}),
        )),
    );
    if cancel {
        finish = finish.cancel_tasks("done");
    }
    store.finish_work(id, finish).await.unwrap();
}

async fn seqs(store: &dyn Store) -> Vec<(i64, String)> {
    store
        .events_after(0, 1_000_000)
        .await
        .unwrap()
        .into_iter()
        .map(|e| (e.seq, e.work_id))
        .collect()
}

// A final battle untouched for longer than `retain` goes with its
// contestants, tasks and events; a final one with a task still to do, a
// live one and a young final one stay; old events of the live ones go;
// the counts say what went; a second pass finds nothing.
pub async fn compact_deletes_old_final_works_with_everything_of_them(h: &Harness) {
    let store = &*h.store;
    for id in ["old", "busy", "live", "young"] {
        store.create_work(battle(id, 2, Lane::Cloud)).await.unwrap();
    }
    complete(store, "old", true).await;
    complete(store, "busy", false).await; // its tasks stay pending
    complete(store, "young", true).await;
    for id in ["old", "busy", "live"] {
        age(h, id).await;
    }
    // A young event of the live battle, newest of the log.
    store
        .transition(Transition {
            target: Target::Work("live".into()),
            from: vec![],
            to: "running".into(),
            data: None,
            event: Some(NewEvent::new(
                EventType::BattleUpdated,
                json!({"battle_id": "live", "status": "running"}),
            )),
        })
        .await
        .unwrap();
    let before = seqs(store).await;
    let old_events = before
        .iter()
        .filter(|(_, w)| ["old", "busy"].contains(&w.as_str()))
        .count()
        + 1; // live's battle_started, aged
    let done = store.compact(HOUR).await.unwrap();
    assert_eq!(
        done,
        Compacted {
            works: 1,
            tasks: 2,
            events: old_events as u64
        }
    );
    assert_eq!(
        store.work("old").await.unwrap_err().kind(),
        ErrorKind::NotFoundId
    );
    assert_eq!(
        store.task("old-t0").await.unwrap_err().kind(),
        ErrorKind::NotFoundId
    );
    assert_eq!(
        store.owner("old-c0").await.unwrap_err().kind(),
        ErrorKind::NotFoundId
    );
    let busy = store.work("busy").await.unwrap();
    assert_eq!(busy.tasks.len(), 2);
    assert!(busy.tasks.iter().all(|t| t.state == TaskState::Pending));
    assert_eq!(store.work("live").await.unwrap().owners.len(), 2);
    assert_eq!(store.work("young").await.unwrap().tasks.len(), 2);

    let after = seqs(store).await;
    let newest = before.last().unwrap().0;
    let kept: Vec<_> = before
        .iter()
        .filter(|(seq, w)| w == "young" || *seq == newest)
        .cloned()
        .collect();
    assert_eq!(after, kept, "only the young events stay, in order");
    let window = store.event_window().await.unwrap();
    assert_eq!(window.oldest_retained as i64, after[0].0);
    assert_eq!(window.newest as i64, newest);

    assert_eq!(store.compact(HOUR).await.unwrap(), Compacted::default());
}

// The newest event stays even when it is old: seqs never go back, and a
// client's cursor stays within the log.
pub async fn compact_keeps_the_newest_event(h: &Harness) {
    let store = &*h.store;
    store
        .create_work(battle("b", 1, Lane::Cloud))
        .await
        .unwrap();
    complete(store, "b", true).await;
    age(h, "b").await;
    let newest = store.event_window().await.unwrap().newest;
    let done = store.compact(HOUR).await.unwrap();
    assert_eq!((done.works, done.tasks), (1, 1));
    let left = seqs(store).await;
    assert_eq!(left, vec![(newest as i64, "b".to_string())]);
    assert_eq!(store.event_window().await.unwrap().newest, newest);
    // The next event continues after it.
    store
        .create_work(battle("c", 1, Lane::Cloud))
        .await
        .unwrap();
    assert!(store.event_window().await.unwrap().newest > newest);
}

// A retention under a minute is a unit mistake, refused before anything
// is read.
pub async fn compact_refuses_a_retention_under_a_minute(h: &Harness) {
    let e = h.store.compact(Duration::from_secs(30)).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert!(e.message().contains("30d"), "{e}");
}
