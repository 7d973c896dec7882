//! Claim throughput of the store beside the naive baseline, in one run.
//!
//! - `store`: `Store::claim` (limit 1): on SQLite one `BEGIN IMMEDIATE`
//!   transaction on the writer, on PostgreSQL `UPDATE … WHERE id IN (SELECT
//!   … FOR UPDATE SKIP LOCKED LIMIT 1) RETURNING` under the lane lock.
//! - `naive`: `SELECT` the oldest pending task, then `UPDATE` it by id —
//!   what a dispatcher without an atomic claim does. It double-claims under
//!   concurrency (the conformance suite shows it; this bench counts it).
//!
//! - `claim_batch`: 8 claimers asking for up to 16 tasks a call (what a
//!   worker with free slots asks for) on the cloud lane: `store_batch16`
//!   is `Store::claim` with `limit 16` (on PostgreSQL one autocommit
//!   statement while the lane is unbounded, every row fenced by its own
//!   lease token); `river_batch16` is River's claim statement written into
//!   the bench (one autocommit `UPDATE … FROM (SELECT … FOR UPDATE SKIP
//!   LOCKED LIMIT 16)`, no lane capacity, no transaction around it);
//!   `commit_floor` is one-row autocommit inserts on the same database and
//!   disk, one connection — the durable commits/s everything else is
//!   measured against.
//!
//! With 1 and 8 concurrent claimers each. An iteration is one task claimed
//! (one commit for `commit_floor`); criterion's throughput is claims/s. PostgreSQL runs when `DATABASE_URL`
//! is set. Results: `benches/RESULTS-store.md`.
//!
//! `cargo bench -p coderig --features sqlite,postgres --bench store_claim`

#[path = "../tests/common/mod.rs"]
mod common;

use coderig::arena::Lane;
use coderig::store::*;
use common::*;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

static BATCH: AtomicU64 = AtomicU64::new(0);

/// Queues `n` cloud tasks (one battle, untimed).
async fn queue(store: &dyn Store, n: u64) {
    let id = format!("bench{}", BATCH.fetch_add(1, Ordering::SeqCst));
    store
        .create_work(battle(&id, n as usize, Lane::Cloud))
        .await
        .unwrap();
}

/// River's claim, written into the bench: one autocommit statement that
/// picks up to `batch` pending cloud tasks with `FOR UPDATE SKIP LOCKED`
/// (PostgreSQL; SQLite's single writer needs no lock clause), marks them
/// running with a lease and returns the whole rows (River's
/// `RETURNING river_job.*`) — no lane capacity, no transaction around it.
async fn river_claim(raw: &Raw, worker: &str, batch: u32) -> Vec<(String, i64)> {
    use sqlx::Row;
    match raw {
        Raw::Postgres(pool) => sqlx::query(
            "WITH picked AS (SELECT id FROM tasks WHERE state = 'pending' AND lane = 'cloud' \
                 AND available_at <= now() ORDER BY available_at, queue_seq \
                 LIMIT $2 FOR UPDATE SKIP LOCKED) \
             UPDATE tasks t SET state = 'running', attempt = t.attempt + 1, worker = $1, \
                 lease_token = md5(random()::text), \
                 lease_expires_at = now() + interval '600 seconds', started_at = now() \
             FROM picked WHERE t.id = picked.id RETURNING t.*",
        )
        .bind(worker)
        .bind(i64::from(batch))
        .fetch_all(pool)
        .await
        .unwrap()
        .iter()
        .map(|row| (row.get("id"), row.get("attempt")))
        .collect(),
        Raw::Sqlite(pool) => sqlx::query(
            "UPDATE tasks SET state = 'running', attempt = attempt + 1, worker = ?1, \
                 lease_token = lower(hex(randomblob(16))), \
                 lease_expires_at = CAST(unixepoch('subsec') * 1000 AS INTEGER) + 600000, \
                 started_at = CAST(unixepoch('subsec') * 1000 AS INTEGER) \
             WHERE id IN (SELECT id FROM tasks WHERE state = 'pending' AND lane = 'cloud' \
                 AND available_at <= CAST(unixepoch('subsec') * 1000 AS INTEGER) \
                 ORDER BY available_at, rowid LIMIT ?2) \
             RETURNING *",
        )
        .bind(worker)
        .bind(i64::from(batch))
        .fetch_all(pool)
        .await
        .unwrap()
        .iter()
        .map(|row| (row.get("id"), row.get("attempt")))
        .collect(),
    }
}

/// `claimers` tasks, each calling `claim(i)` (claimer `i`'s claim of up to
/// `batch` tasks), until `total` tasks are claimed or a claim comes back
/// empty; the elapsed time and every (task, attempt) claimed.
async fn run_claimers<F, Fut>(
    claimers: usize,
    total: u64,
    batch: u32,
    claim: F,
) -> (Duration, Vec<(String, i64)>)
where
    F: Fn(usize) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = Vec<(String, i64)>> + Send,
{
    let made = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(Vec::with_capacity(total as usize)));
    let started = Instant::now();
    let mut workers = Vec::new();
    for i in 0..claimers {
        let (made, seen, claim) = (made.clone(), seen.clone(), claim.clone());
        workers.push(tokio::spawn(async move {
            while made.fetch_add(batch as usize, Ordering::SeqCst) < total as usize {
                let claimed = claim(i).await;
                if claimed.is_empty() {
                    break;
                }
                seen.lock().unwrap().extend(claimed);
            }
        }));
    }
    for worker in workers {
        worker.await.unwrap();
    }
    let elapsed = started.elapsed();
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    (elapsed, seen)
}

/// `Store::claim` of up to `batch` tasks by each claimer (the batched claim
/// of the issue takes the cloud lane alone), claimers spread over `stores`.
async fn run_store(
    stores: &[Arc<dyn Store>],
    claimers: usize,
    total: u64,
    batch: u32,
) -> (Duration, Vec<(String, i64)>) {
    let stores = stores.to_vec();
    run_claimers(claimers, total, batch, move |i| {
        let store = stores[i % stores.len()].clone();
        async move {
            let mut request = ClaimRequest::new(format!("w{i}"))
                .lease_ttl(Duration::from_secs(600))
                .limit(batch);
            if batch > 1 {
                request = request.lanes(&[Lane::Cloud]);
            }
            let claimed = store.claim(&request).await.unwrap();
            claimed
                .into_iter()
                .map(|c| (c.task.id, i64::from(c.task.attempt)))
                .collect()
        }
    })
    .await
}

/// The naive claim (one task a call) by each claimer.
async fn run_naive(raw: &Arc<Raw>, claimers: usize, total: u64) -> (Duration, Vec<(String, i64)>) {
    let raw = raw.clone();
    run_claimers(claimers, total, 1, move |i| {
        let raw = raw.clone();
        async move {
            naive_claim(&raw, &format!("w{i}"))
                .await
                .into_iter()
                .collect()
        }
    })
    .await
}

/// River's claim statement, up to `batch` tasks a call, by each claimer.
async fn run_river(
    raw: &Arc<Raw>,
    claimers: usize,
    total: u64,
    batch: u32,
) -> (Duration, Vec<(String, i64)>) {
    let raw = raw.clone();
    run_claimers(claimers, total, batch, move |i| {
        let raw = raw.clone();
        async move { river_claim(&raw, &format!("w{i}"), batch).await }
    })
    .await
}

struct Backend {
    name: &'static str,
    harness: Harness,
    /// One handle per claimer slot: on PostgreSQL each has its own pool (as
    /// several servers would); on SQLite one handle (one writer per process).
    stores: Vec<Arc<dyn Store>>,
    raw: Arc<Raw>,
}

fn backends(rt: &tokio::runtime::Runtime) -> Vec<Backend> {
    rt.block_on(async {
        let mut found = Vec::new();
        let harness = sqlite().await;
        let raw = Arc::new(harness.raw().await);
        found.push(Backend {
            name: "sqlite",
            stores: vec![harness.store.clone()],
            harness,
            raw,
        });
        if let Some(harness) = postgres("store_claim").await {
            let raw = Arc::new(harness.raw().await);
            let mut stores = vec![harness.store.clone()];
            stores.push(harness.another().await);
            found.push(Backend {
                name: "postgres",
                stores,
                harness,
                raw,
            });
        }
        found
    })
}

fn claims(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let backends = backends(&rt);
    for backend in &backends {
        let mut group = c.benchmark_group(format!("claim/{}", backend.name));
        group
            .throughput(Throughput::Elements(1))
            .sample_size(20)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(4));
        for claimers in [1usize, 8] {
            group.bench_function(BenchmarkId::new("store", claimers), |b| {
                b.iter_custom(|iters| {
                    rt.block_on(async {
                        queue(&*backend.harness.store, iters).await;
                        run_store(&backend.stores, claimers, iters, 1).await.0
                    })
                })
            });
            group.bench_function(BenchmarkId::new("naive", claimers), |b| {
                b.iter_custom(|iters| {
                    rt.block_on(async {
                        queue(&*backend.harness.store, iters).await;
                        run_naive(&backend.raw, claimers, iters).await.0
                    })
                })
            });
        }
        group.finish();

        // Batches of 16 (what a worker with free slots asks for), beside
        // River's claim statement and the disk's own commit rate.
        let mut group = c.benchmark_group(format!("claim_batch/{}", backend.name));
        group
            .throughput(Throughput::Elements(1))
            .sample_size(20)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(4));
        // Each variant starts on a vacuumed table: the claims before leave
        // thousands of dead row versions, and whichever variant ran first
        // paid for them (runs differed 2x by order alone).
        let vacuum = || {
            rt.block_on(async {
                if let Raw::Postgres(pool) = &*backend.raw {
                    sqlx::query("VACUUM ANALYZE tasks")
                        .execute(pool)
                        .await
                        .unwrap();
                }
            })
        };
        vacuum();
        group.bench_function(BenchmarkId::new("store_batch16", 8), |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    queue(&*backend.harness.store, iters).await;
                    run_store(&backend.stores, 8, iters, 16).await.0
                })
            })
        });
        vacuum();
        group.bench_function(BenchmarkId::new("river_batch16", 8), |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    queue(&*backend.harness.store, iters).await;
                    run_river(&backend.raw, 8, iters, 16).await.0
                })
            })
        });
        vacuum();
        group.bench_function(BenchmarkId::new("commit_floor", 1), |b| {
            b.iter_custom(|iters| rt.block_on(commit_floor(&backend.raw, iters)))
        });
        group.finish();

        // Correctness beside speed: 8 claimers over 400 fresh tasks.
        rt.block_on(async {
            queue(&*backend.harness.store, 400).await;
            let (_, store) = run_store(&backend.stores, 8, 400, 1).await;
            let unique: HashSet<_> = store.iter().collect();
            println!(
                "{}: store claim, 8 claimers, 400 tasks: {} claims, {} duplicates",
                backend.name,
                store.len(),
                store.len() - unique.len()
            );
            queue(&*backend.harness.store, 400).await;
            let (_, batched) = run_store(&backend.stores, 8, 400, 16).await;
            let unique: HashSet<_> = batched.iter().collect();
            println!(
                "{}: store claim, batches of 16, 8 claimers, 400 tasks: {} claims, {} duplicates",
                backend.name,
                batched.len(),
                batched.len() - unique.len()
            );
            queue(&*backend.harness.store, 400).await;
            let (_, naive) = run_naive(&backend.raw, 8, 400).await;
            let unique: HashSet<_> = naive.iter().collect();
            println!(
                "{}: naive claim, 8 claimers, 400 tasks: {} claims, {} duplicates",
                backend.name,
                naive.len(),
                naive.len() - unique.len()
            );
        });
    }
    rt.block_on(async {
        for backend in backends {
            backend.harness.finish().await;
        }
    });
}

criterion_group!(benches, claims);
criterion_main!(benches);
