//! SQLite's one writer (`store::sqlite::writer`): writes queued while a
//! batch commits share the next commit, each in its own savepoint.
//!
//! The tests make a batch form for certain: another connection holds the
//! file's write lock while the writes queue behind the writer's first,
//! busy-retried, batch; when it lets go, everything queued meanwhile is
//! one batch.

use super::*;
use coderig::store::SqliteStore;
use std::sync::Arc;

/// A store and another connection holding (or not) its file's write lock.
pub(crate) struct Blocked {
    pub(crate) store: SqliteStore,
    blocker: sqlx::pool::PoolConnection<sqlx::Sqlite>,
    _dir: tempfile::TempDir,
}

/// A fresh store (a short busy timeout: the retries, not the statement's
/// wait, must ride out the lock) whose file another connection holds
/// locked after `prepare`.
pub(crate) async fn blocked_store(prepare: impl AsyncFnOnce(&SqliteStore)) -> Blocked {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("coderig.db");
    let options = SqliteOptions {
        busy_timeout: Duration::from_millis(10),
        ..SqliteOptions::default()
    };
    let store = SqliteStore::open_with(&path, options).await.unwrap();
    prepare(&store).await;
    let Raw::Sqlite(pool) = raw(&Location::Sqlite(path.clone())).await else {
        unreachable!()
    };
    let mut blocked = Blocked {
        store,
        blocker: pool.acquire().await.unwrap(),
        _dir: dir,
    };
    blocked.hold().await;
    blocked
}

impl Blocked {
    /// Takes the write lock (again).
    pub(crate) async fn hold(&mut self) {
        sqlx::query("BEGIN IMMEDIATE")
            .execute(&mut *self.blocker)
            .await
            .unwrap();
    }

    /// Lets go of it.
    pub(crate) async fn release(&mut self) {
        sqlx::query("COMMIT")
            .execute(&mut *self.blocker)
            .await
            .unwrap();
    }
}

// Twenty creations, five duplicates, three enqueues refused halfway and a
// heartbeat under a lost lease, queued together: at most two commits for
// all of them (the writer's
// first batch and everything queued behind it), every good write kept
// whole, every bad one refused with its own error — a refusal does not
// fail its neighbours.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn queued_writes_share_a_commit_and_fail_alone() {
    let mut b = blocked_store(async |store| {
        store
            .create_work(battle("dup", 1, Lane::Cloud))
            .await
            .unwrap();
    })
    .await;
    let store = b.store.clone();
    let before = store.commits();
    let mut creations = Vec::new();
    for i in 0..20 {
        let store = store.clone();
        creations.push(tokio::spawn(async move {
            store
                .create_work(battle(&format!("b{i}"), 2, Lane::Cloud))
                .await
        }));
    }
    let mut duplicates = Vec::new();
    for _ in 0..5 {
        let store = store.clone();
        duplicates.push(tokio::spawn(async move {
            store.create_work(battle("dup", 3, Lane::Cloud)).await
        }));
    }
    let stale = {
        let store = store.clone();
        tokio::spawn(async move {
            let fence = Fence {
                task_id: "dup-t0".into(),
                lease_token: "not-the-lease".into(),
            };
            store.heartbeat(&fence, TTL).await
        })
    };
    // Writes refused after writing something: a task enqueued, then one
    // whose owner does not exist. The first must not survive.
    let mut partial = Vec::new();
    for k in 0..3 {
        let store = store.clone();
        let task = |id: String, owner: &str| {
            TaskSpec::new(
                id,
                OwnerRef {
                    kind: OwnerKind::Contestant,
                    id: owner.into(),
                },
                Lane::Cloud,
            )
        };
        let tasks = vec![
            task(format!("partial-{k}"), "dup-c0"),
            task(format!("orphan-{k}"), "no-such-owner"),
        ];
        partial.push(tokio::spawn(
            async move { store.enqueue(tasks, None).await },
        ));
    }
    // Let every write queue (they wait for the lock, not for this sleep).
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        creations.iter().all(|c| !c.is_finished()),
        "held by the lock"
    );
    b.release().await;
    for (i, creation) in creations.into_iter().enumerate() {
        let event = creation.await.unwrap().expect("a good write commits");
        assert_eq!(event.work_id, format!("b{i}"));
        let work = store.work(&format!("b{i}")).await.unwrap();
        assert_eq!((work.owners.len(), work.tasks.len()), (2, 2), "kept whole");
    }
    for duplicate in duplicates {
        let err = duplicate.await.unwrap().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    }
    for (k, enqueue) in partial.into_iter().enumerate() {
        let err = enqueue.await.unwrap().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NotFoundId, "{err}");
        let gone = store.task(&format!("partial-{k}")).await.unwrap_err();
        assert!(
            matches!(gone.kind(), ErrorKind::NotFound | ErrorKind::NotFoundId),
            "rolled back with its write: {gone}"
        );
    }
    let err = stale.await.unwrap().unwrap_err();
    assert_ne!(
        err.kind(),
        ErrorKind::Io,
        "a lost lease is refused, not an io error: {err}"
    );
    let dup = store.work("dup").await.unwrap();
    assert_eq!(dup.owners.len(), 1, "the refused duplicates left nothing");
    let commits = store.commits() - before;
    assert!(
        (1..=2).contains(&commits),
        "29 queued writes in {commits} commits"
    );
    // One event per created battle, in one gapless sequence.
    let events = all_events(&store).await;
    assert_eq!(events.len(), 21);
    assert!(events.windows(2).all(|w| w[1].seq == w[0].seq + 1));
}

// A caller that stops waiting (its future dropped by a timeout) leaves
// either its whole write or nothing, and the writer goes on serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_that_stops_waiting_leaves_no_half_write() {
    let mut b = blocked_store(async |_| {}).await;
    let store = Arc::new(b.store.clone());
    let gave_up = tokio::time::timeout(
        Duration::from_millis(50),
        store.create_work(battle("gone", 3, Lane::Cloud)),
    )
    .await;
    assert!(
        gave_up.is_err(),
        "the lock holds the write past the timeout"
    );
    b.release().await;
    store
        .create_work(battle("after", 1, Lane::Cloud))
        .await
        .unwrap();
    let events = all_events(store.as_ref()).await;
    let gone_events = events.iter().filter(|e| e.work_id == "gone").count();
    match store.work("gone").await {
        Ok(work) => {
            assert_eq!((work.owners.len(), work.tasks.len()), (3, 3));
            assert_eq!(gone_events, 1, "with its event");
        }
        Err(e) => {
            assert!(
                matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotFoundId),
                "{e}"
            );
            assert_eq!(gone_events, 0, "nor its event");
        }
    }
}

// After `close`, every clone's writes answer `io` naming the cause
// instead of hanging or panicking.
#[tokio::test]
async fn a_closed_store_refuses_writes_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open_file(&dir.path().join("c.db"))
        .await
        .unwrap();
    let clone = store.clone();
    store
        .create_work(battle("before", 1, Lane::Cloud))
        .await
        .unwrap();
    store.close().await;
    let err = clone
        .create_work(battle("late", 1, Lane::Cloud))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Io);
    assert!(err.message().contains("closed"), "{}", err.message());
}

// A refused write commits nothing: a lone one rolls back and is not
// counted as a durable commit.
#[tokio::test]
async fn a_lone_refused_write_is_no_commit() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open_file(&dir.path().join("r.db"))
        .await
        .unwrap();
    store
        .create_work(battle("one", 1, Lane::Cloud))
        .await
        .unwrap();
    let before = store.commits();
    let err = store
        .create_work(battle("one", 1, Lane::Cloud))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict);
    assert_eq!(store.commits(), before);
    store
        .create_work(battle("two", 1, Lane::Cloud))
        .await
        .unwrap();
    assert_eq!(store.commits(), before + 1);
}
