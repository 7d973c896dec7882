//! Fenced writes from concurrent callers on SQLite: the one writer's group
//! commit beside one commit per write, in one run.
//!
//! - `group_commit`: 8 callers, each recording events under its own
//!   lease (`Store::record`: fence checked, event appended) as fast as its
//!   answers come back, on a store with the default writer — the writes
//!   queued while a batch commits share the next `BEGIN IMMEDIATE` and its
//!   fsync, a savepoint each.
//! - `commit_each`: the same callers and writes on a store whose writer
//!   takes one write per transaction (`SqliteOptions::max_batch = 1`):
//!   what the store did before the writer batched.
//! - `commit_floor`: one-row autocommit inserts on the same disk, one
//!   connection: the durable commits/s the others are measured against.
//!
//! And completions on PostgreSQL (`DATABASE_URL`; skipped without it):
//!
//! - `batched`: 8 callers completing claimed tasks (`Store::complete`:
//!   the outcome, the owner's status and data, an event) as fast as their
//!   answers come back; the completions queued together are written by one
//!   transaction of one statement each (the handle's completer).
//! - `one_each`: the same on a handle whose completer takes one completion
//!   per transaction (`PostgresOptions::max_completion_batch = 1`): what
//!   the store did before.
//! - `commit_floor`: one-row autocommit inserts on the same database.
//!
//! An iteration is one write (one commit for `commit_floor`); criterion's
//! throughput is writes/s. Each store prints its writes per durable commit
//! after its group. Results: `benches/RESULTS-store.md`.
//!
//! `cargo bench -p coderig --features sqlite,postgres --bench store_write`

#[path = "../tests/common/mod.rs"]
mod common;

use coderig::arena::Lane;
use coderig::store::*;
use common::*;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const CALLERS: usize = 8;

struct Bench {
    name: &'static str,
    store: SqliteStore,
    fences: Vec<(Fence, Task)>,
    _dir: tempfile::TempDir,
}

async fn open(name: &'static str, max_batch: usize) -> Bench {
    let dir = tempfile::tempdir().unwrap();
    let options = SqliteOptions {
        max_batch,
        ..SqliteOptions::default()
    };
    let store = SqliteStore::open_with(&dir.path().join("coderig.db"), options)
        .await
        .unwrap();
    store
        .create_work(battle("w", CALLERS, Lane::Cloud))
        .await
        .unwrap();
    let request = ClaimRequest::new("bench")
        .lease_ttl(Duration::from_secs(3600))
        .limit(CALLERS as u32);
    let fences = store
        .claim(&request)
        .await
        .unwrap()
        .into_iter()
        .map(|c| (c.fence(), c.task))
        .collect::<Vec<_>>();
    assert_eq!(fences.len(), CALLERS);
    Bench {
        name,
        store,
        fences,
        _dir: dir,
    }
}

/// Both groups' sampling: an element is one write.
fn timed(group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    group
        .throughput(Throughput::Elements(1))
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(4));
}

/// `total` writes by the callers, each recording under its own lease.
async fn run(bench: &Bench, total: u64) -> Duration {
    let left = Arc::new(AtomicUsize::new(total as usize));
    let started = Instant::now();
    let mut callers = Vec::new();
    for (fence, task) in bench.fences.clone() {
        let (store, left) = (bench.store.clone(), left.clone());
        callers.push(tokio::spawn(async move {
            while left
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
            {
                let update = Update {
                    owner: None,
                    event: Some(contestant_event(&task, "running")),
                };
                store.record(&fence, update).await.unwrap();
            }
        }));
    }
    for caller in callers {
        caller.await.unwrap();
    }
    started.elapsed()
}

fn writes(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let benches = rt.block_on(async {
        vec![
            open("group_commit", 256).await,
            open("commit_each", 1).await,
        ]
    });
    let raw = rt.block_on(raw(&Location::Sqlite(
        benches[0].store.path().to_path_buf(),
    )));
    let mut group = c.benchmark_group("write/sqlite");
    timed(&mut group);
    let mut counted = Vec::new();
    for bench in &benches {
        let commits = bench.store.commits();
        let done = Arc::new(AtomicUsize::new(0));
        group.bench_function(BenchmarkId::new(bench.name, CALLERS), |b| {
            b.iter_custom(|iters| {
                done.fetch_add(iters as usize, Ordering::SeqCst);
                rt.block_on(run(bench, iters))
            })
        });
        counted.push((
            bench.name,
            done.load(Ordering::SeqCst),
            bench.store.commits() - commits,
        ));
    }
    group.bench_function(BenchmarkId::new("commit_floor", 1), |b| {
        b.iter_custom(|iters| rt.block_on(commit_floor(&raw, iters)))
    });
    group.finish();
    for (name, writes, commits) in counted {
        println!(
            "sqlite {name}: {writes} writes by {CALLERS} callers in {commits} durable commits \
             ({:.1} writes per commit)",
            writes as f64 / commits.max(1) as f64
        );
    }
    rt.block_on(async {
        for bench in benches {
            bench.store.close().await;
        }
    });
}

/// A PostgreSQL handle in a fresh schema whose completer writes at most
/// `max_batch` completions a transaction.
async fn postgres(url: &str, schema: &str, max_batch: usize) -> PostgresStore {
    let mut admin = <sqlx::PgConnection as sqlx::Connection>::connect(url)
        .await
        .unwrap();
    sqlx::query(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .execute(&mut admin)
        .await
        .unwrap();
    let options = PostgresOptions {
        schema: Some(schema.into()),
        max_completion_batch: max_batch,
        ..PostgresOptions::default()
    };
    PostgresStore::connect_with(url, options).await.unwrap()
}

static WORKS: AtomicUsize = AtomicUsize::new(0);

/// `n` claimed tasks of a fresh battle (untimed).
async fn claimed(store: &PostgresStore, n: usize) -> Vec<(Fence, Task)> {
    let id = format!("w{}", WORKS.fetch_add(1, Ordering::SeqCst));
    store
        .create_work(battle(&id, n, Lane::Cloud))
        .await
        .unwrap();
    let request = ClaimRequest::new("bench")
        .lease_ttl(Duration::from_secs(3600))
        .limit(n as u32);
    let claims = store.claim(&request).await.unwrap();
    assert_eq!(claims.len(), n);
    claims.into_iter().map(|c| (c.fence(), c.task)).collect()
}

/// The callers completing every task of `tasks`, each as an agent turn's
/// end is written: outcome, owner status and data, event.
async fn complete_all(store: &PostgresStore, tasks: Vec<(Fence, Task)>) -> Duration {
    let tasks = Arc::new(std::sync::Mutex::new(tasks));
    let started = Instant::now();
    let mut callers = Vec::new();
    for _ in 0..CALLERS {
        let (store, tasks) = (store.clone(), tasks.clone());
        callers.push(tokio::spawn(async move {
            loop {
                let Some((fence, task)) = tasks.lock().unwrap().pop() else {
                    break;
                };
                let completion = Completion::completed(serde_json::json!({"ok": true}))
                    .with_owner(OwnerUpdate {
                        status: Some("done".into()),
                        data: Some(serde_json::json!({"tokens": 1234})),
                    })
                    .with_event(contestant_event(&task, "done"));
                store.complete(&fence, completion).await.unwrap();
            }
        }));
    }
    for caller in callers {
        caller.await.unwrap();
    }
    started.elapsed()
}

fn completions(c: &mut Criterion) {
    let Some(url) = database_url("store_write") else {
        return;
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let stores = rt.block_on(async {
        vec![
            (
                "batched",
                postgres(&url, "bench_complete_batched", 64).await,
            ),
            ("one_each", postgres(&url, "bench_complete_each", 1).await),
        ]
    });
    let raw = rt.block_on(raw(&Location::Postgres {
        url: url.clone(),
        schema: "bench_complete_batched".into(),
    }));
    let mut group = c.benchmark_group("complete/postgres");
    timed(&mut group);
    let mut counted = Vec::new();
    for (name, store) in &stores {
        let commits = Arc::new(AtomicUsize::new(0));
        let done = Arc::new(AtomicUsize::new(0));
        group.bench_function(BenchmarkId::new(*name, CALLERS), |b| {
            b.iter_custom(|iters| {
                let tasks = rt.block_on(claimed(store, iters as usize));
                // The claim's own commit is not the completions'.
                let before = store.commits();
                let took = rt.block_on(complete_all(store, tasks));
                done.fetch_add(iters as usize, Ordering::SeqCst);
                commits.fetch_add((store.commits() - before) as usize, Ordering::SeqCst);
                took
            })
        });
        counted.push((
            name,
            done.load(Ordering::SeqCst),
            commits.load(Ordering::SeqCst),
        ));
    }
    group.bench_function(BenchmarkId::new("commit_floor", 1), |b| {
        b.iter_custom(|iters| rt.block_on(commit_floor(&raw, iters)))
    });
    group.finish();
    for (name, completions, commits) in counted {
        println!(
            "postgres {name}: {completions} completions by {CALLERS} callers in {commits} \
             durable commits ({:.1} completions per commit)",
            completions as f64 / commits.max(1) as f64
        );
    }
    rt.block_on(async {
        for (_, store) in stores {
            store.close().await;
        }
    });
}

criterion_group!(benches, writes, completions);
criterion_main!(benches);
