//! Claim throughput of the store beside the naive baseline, in one run.
//!
//! - `store`: `Store::claim` (limit 1): on SQLite one `BEGIN IMMEDIATE`
//!   transaction on the writer, on PostgreSQL `UPDATE … WHERE id IN (SELECT
//!   … FOR UPDATE SKIP LOCKED LIMIT 1) RETURNING` under the lane lock.
//! - `naive`: `SELECT` the oldest pending task, then `UPDATE` it by id —
//!   what a dispatcher without an atomic claim does. It double-claims under
//!   concurrency (the conformance suite shows it; this bench counts it).
//!
//! With 1 and 8 concurrent claimers each. An iteration is one claim;
//! criterion's throughput is claims/s. PostgreSQL runs when `DATABASE_URL`
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

/// `claimers` workers claim until `total` claims are made; returns the
/// elapsed time and every (task, attempt) claimed.
async fn run_store(
    stores: &[Arc<dyn Store>],
    claimers: usize,
    total: u64,
) -> (Duration, Vec<(String, u32)>) {
    let made = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(Vec::with_capacity(total as usize)));
    let started = Instant::now();
    let mut workers = Vec::new();
    for i in 0..claimers {
        let store = stores[i % stores.len()].clone();
        let (made, seen) = (made.clone(), seen.clone());
        workers.push(tokio::spawn(async move {
            let request = ClaimRequest::new(format!("w{i}")).lease_ttl(Duration::from_secs(600));
            while made.fetch_add(1, Ordering::SeqCst) < total as usize {
                match store.claim(&request).await.unwrap().pop() {
                    Some(claim) => seen
                        .lock()
                        .unwrap()
                        .push((claim.task.id, claim.task.attempt)),
                    None => break,
                }
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

async fn run_naive(raw: &Arc<Raw>, claimers: usize, total: u64) -> (Duration, Vec<(String, i64)>) {
    let made = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(Vec::with_capacity(total as usize)));
    let started = Instant::now();
    let mut workers = Vec::new();
    for i in 0..claimers {
        let (raw, made, seen) = (raw.clone(), made.clone(), seen.clone());
        workers.push(tokio::spawn(async move {
            let worker = format!("w{i}");
            while made.fetch_add(1, Ordering::SeqCst) < total as usize {
                match naive_claim(&raw, &worker).await {
                    Some(claim) => seen.lock().unwrap().push(claim),
                    None => break,
                }
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
                        run_store(&backend.stores, claimers, iters).await.0
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

        // Correctness beside speed: 8 claimers over 400 fresh tasks.
        rt.block_on(async {
            queue(&*backend.harness.store, 400).await;
            let (_, store) = run_store(&backend.stores, 8, 400).await;
            let unique: HashSet<_> = store.iter().collect();
            println!(
                "{}: store claim, 8 claimers, 400 tasks: {} claims, {} duplicates",
                backend.name,
                store.len(),
                store.len() - unique.len()
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
