//! The flow engine's cost per step and its completion → dispatch latency,
//! beside a naive `ready_steps` loop, in one run, on SQLite (a file in a
//! tempdir) and on PostgreSQL (`DATABASE_URL`, each store in its own schema).
//!
//! - `flow_10k`: a 10,000-step flow of no-op code steps
//!   (`code_fn(|_| async { Ok(Value::Null) })`) run to completion: from
//!   the `FlowSpec` to every step's row written and the run ended. Shape:
//!   100 layers of 100 steps, step `(l, j)` depending on `(l-1, j)` — 100
//!   chains of 100. Why this shape: 9,900 of the 10,000 steps are started
//!   by a completion (the engine's hot path), up to 100 run at once (the
//!   driver's batching and the store's concurrency are exercised), and every
//!   step has one dependency and at most one dependent, so the per-step
//!   figure is the engine's own cost rather than fan-in bookkeeping. For
//!   the naive loop it is the kind shape: `ready_steps` returns one whole
//!   layer per call, so it scans the flow 101 times, not 10,000 times.
//! - `dispatch latency`: from a code step returning to each dependent's
//!   code step being called (both record `Instant::now()`), over a 100-step
//!   chain (one dependent each) and a fan-out (one step, 100 dependents);
//!   median and p95 over 5 runs of each, printed after criterion's report.
//!
//! Contenders, on the same store database:
//! - `commit_floor`: 10,000 one-row autocommit inserts on the store's
//!   database — the disk's durable commits per second, beside
//!   which the engine's steps per durable commit (printed after criterion's
//!   report, from the store's own count) say what batching buys.
//! - `engine`: `Engine::start_run` + `Engine::wait` — the run, its 10,000
//!   step rows and driver task created in one transaction, the driver
//!   claimed under a lease, every step's start and ending written fenced
//!   with its `step_updated` event, events fanned out by the `EventBus`.
//! - `naive`: the loop a first version would be: `FlowSpec::compile`, then
//!   `loop { ready_steps(flow, state) → for each ready step: call it, write
//!   its row (one plain sqlx `INSERT` in its own transaction) }` — one
//!   process, no lease, no events, no `running` row before a step starts,
//!   steps run one after another. Its latency is its own (write the row,
//!   scan again, call the next), not a poller's: a poller waking every
//!   250 ms would add 0–250 ms to it (see `benches/RESULTS-arena.md`).
//!
//! With `--test` (`cargo bench ... -- --test`) every size shrinks (a
//! 10 × 10 flow, 10-step chain, 10-step fan-out, one run each) so the bench
//! is a quick smoke check. Results: `benches/RESULTS-flow.md`.
//!
//! `DATABASE_URL=postgres://… cargo bench -p coderig --features sqlite,postgres --bench flow_engine`

#[path = "../tests/common/mod.rs"]
mod common;

use coderig::agent::Registry;
use coderig::bus::EventBus;
use coderig::event::RunStatus;
use coderig::flow::engine::{code_fn, CodeStep, CodeSteps, Engine, EngineConfig, NewRun};
use coderig::flow::{ready_steps, FlowSpec, SchedulerState, StepStatus};
use criterion::{
    criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput,
};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// The sizes of one bench run (`--test` shrinks them).
#[derive(Clone, Copy)]
struct Sizes {
    layers: usize,
    width: usize,
    chain: usize,
    fanout: usize,
    latency_runs: usize,
}

fn sizes() -> Sizes {
    if std::env::args().any(|a| a == "--test") {
        Sizes {
            layers: 10,
            width: 10,
            chain: 10,
            fanout: 10,
            latency_runs: 1,
        }
    } else {
        Sizes {
            layers: 100,
            width: 100,
            chain: 100,
            fanout: 100,
            latency_runs: 5,
        }
    }
}

/// A flow of code steps from `(id, deps)`.
fn spec_of(steps: &[(String, Vec<String>)]) -> FlowSpec {
    let steps: Vec<Value> = steps
        .iter()
        .map(|(id, deps)| json!({"id": id, "kind": "code", "deps": deps}))
        .collect();
    FlowSpec::from_json(&json!({ "name": "bench", "steps": steps })).expect("a valid spec")
}

/// `layers` × `width` steps, `(l, j)` depending on `(l-1, j)`.
fn layered(layers: usize, width: usize) -> Vec<(String, Vec<String>)> {
    let id = |l: usize, j: usize| format!("s{l}_{j}");
    (0..layers)
        .flat_map(|l| {
            (0..width).map(move |j| {
                let deps = if l == 0 { vec![] } else { vec![id(l - 1, j)] };
                (id(l, j), deps)
            })
        })
        .collect()
}

/// `c0 → c1 → … → c(n-1)`.
fn chain(n: usize) -> Vec<(String, Vec<String>)> {
    (0..n)
        .map(|i| {
            let deps = if i == 0 {
                vec![]
            } else {
                vec![format!("c{}", i - 1)]
            };
            (format!("c{i}"), deps)
        })
        .collect()
}

/// `root → f0, f1, …, f(n-1)`.
fn fanout(n: usize) -> Vec<(String, Vec<String>)> {
    std::iter::once(("root".to_string(), vec![]))
        .chain((0..n).map(|i| (format!("f{i}"), vec!["root".to_string()])))
        .collect()
}

/// One no-op callable for every step (the brief's
/// `code_fn(|_| async { Ok(Value::Null) })`).
fn noop_steps(steps: &[(String, Vec<String>)]) -> CodeSteps {
    let noop = code_fn(|_| async { Ok(Value::Null) });
    steps
        .iter()
        .map(|(id, _)| (id.clone(), noop.clone()))
        .collect()
}

/// When each step was called and when it returned.
#[derive(Default)]
struct Probe {
    called: Mutex<HashMap<String, Instant>>,
    returned: Mutex<HashMap<String, Instant>>,
}

impl Probe {
    /// Callables that record into the probe and return at once.
    fn steps(self: &Arc<Self>, steps: &[(String, Vec<String>)]) -> CodeSteps {
        steps
            .iter()
            .map(|(id, _)| {
                let (probe, name) = (self.clone(), id.clone());
                let f = code_fn(move |_| {
                    let (probe, name) = (probe.clone(), name.clone());
                    async move {
                        let called = Instant::now();
                        probe.called.lock().unwrap().insert(name.clone(), called);
                        let returned = Instant::now();
                        probe.returned.lock().unwrap().insert(name, returned);
                        Ok(Value::Null)
                    }
                });
                (id.clone(), f)
            })
            .collect()
    }

    /// Per step with a dependency: its call minus the dependency's return.
    fn latencies(&self, steps: &[(String, Vec<String>)]) -> Vec<Duration> {
        let called = self.called.lock().unwrap();
        let returned = self.returned.lock().unwrap();
        steps
            .iter()
            .filter_map(|(id, deps)| {
                let dep = deps.first()?;
                Some(called[id].duration_since(returned[dep]))
            })
            .collect()
    }

    fn clear(&self) {
        self.called.lock().unwrap().clear();
        self.returned.lock().unwrap().clear();
    }
}

// ----- the engine -----

struct EngineUnderTest {
    engine: Engine,
    _data: tempfile::TempDir,
}

async fn start_engine(harness: &common::Harness) -> EngineUnderTest {
    let data = tempfile::tempdir().unwrap();
    let bus = EventBus::start(harness.store.clone());
    let engine = Engine::start(
        harness.store.clone(),
        Registry::new(),
        bus,
        EngineConfig::new(data.path()),
    )
    .await
    .unwrap();
    EngineUnderTest {
        engine,
        _data: data,
    }
}

/// One run through the engine, from `start_run` to `wait` returning it
/// ended; checks that it completed with every step done.
async fn engine_round(engine: &Engine, run: NewRun, steps: usize) -> Duration {
    let started = Instant::now();
    let id = engine.start_run(run).await.unwrap();
    let view = engine
        .wait(&id, Some(Duration::from_secs(3600)))
        .await
        .unwrap();
    let elapsed = started.elapsed();
    assert_eq!(view.status, RunStatus::Completed, "{:?}", view.error);
    assert_eq!(view.steps.len(), steps);
    assert!(view.steps.iter().all(|s| s.status == StepStatus::Done));
    elapsed
}

// ----- the naive loop -----

/// The naive loop's own table in the store's database, on its own pool.
enum NaiveDb {
    Sqlite(sqlx::SqlitePool),
    Postgres(sqlx::PgPool),
}

const NAIVE_TABLE: &str = "CREATE TABLE IF NOT EXISTS naive_steps (\
     run_id TEXT NOT NULL, step_id TEXT NOT NULL, status TEXT NOT NULL, \
     output TEXT, finished_at BIGINT NOT NULL, PRIMARY KEY (run_id, step_id))";

impl NaiveDb {
    async fn open(harness: &common::Harness) -> NaiveDb {
        let db = match &harness.location {
            // The store's own durability settings (WAL, synchronous = FULL)
            // and one writer, so both pay the same for a commit.
            common::Location::Sqlite(path) => {
                let options = sqlx::sqlite::SqliteConnectOptions::new()
                    .filename(path)
                    .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
                    .synchronous(sqlx::sqlite::SqliteSynchronous::Full)
                    .busy_timeout(Duration::from_secs(30));
                NaiveDb::Sqlite(
                    sqlx::sqlite::SqlitePoolOptions::new()
                        .max_connections(1)
                        .connect_with(options)
                        .await
                        .unwrap(),
                )
            }
            common::Location::Postgres { .. } => match harness.raw().await {
                common::Raw::Postgres(pool) => NaiveDb::Postgres(pool),
                common::Raw::Sqlite(_) => unreachable!(),
            },
        };
        match &db {
            NaiveDb::Sqlite(pool) => sqlx::query(NAIVE_TABLE).execute(pool).await.map(|_| ()),
            NaiveDb::Postgres(pool) => sqlx::query(NAIVE_TABLE).execute(pool).await.map(|_| ()),
        }
        .unwrap();
        db
    }

    /// One step's row, in its own transaction.
    async fn write_step(&self, run: &str, step: &str, output: &Value) {
        let output = output.to_string();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
        match self {
            NaiveDb::Sqlite(pool) => {
                let mut tx = pool.begin().await.unwrap();
                sqlx::query(
                    "INSERT INTO naive_steps (run_id, step_id, status, output, finished_at) \
                     VALUES (?1, ?2, 'done', ?3, ?4)",
                )
                .bind(run)
                .bind(step)
                .bind(output)
                .bind(now)
                .execute(&mut *tx)
                .await
                .unwrap();
                tx.commit().await.unwrap();
            }
            NaiveDb::Postgres(pool) => {
                let mut tx = pool.begin().await.unwrap();
                sqlx::query(
                    "INSERT INTO naive_steps (run_id, step_id, status, output, finished_at) \
                     VALUES ($1, $2, 'done', $3, $4)",
                )
                .bind(run)
                .bind(step)
                .bind(output)
                .bind(now)
                .execute(&mut *tx)
                .await
                .unwrap();
                tx.commit().await.unwrap();
            }
        }
    }
}

static NAIVE_RUN: AtomicU64 = AtomicU64::new(0);

/// One run through the naive loop: compile, then `ready_steps` over the
/// whole flow, each ready step called and its row written, until nothing
/// is ready.
async fn naive_round(db: &NaiveDb, spec: &FlowSpec, code: &CodeSteps) -> Duration {
    let run = format!("naive{}", NAIVE_RUN.fetch_add(1, Ordering::SeqCst));
    let started = Instant::now();
    let compiled = spec.compile().unwrap();
    let flow = compiled.flow();
    let mut state = SchedulerState::new();
    let mut written = 0;
    loop {
        let ready = ready_steps(flow, &state);
        if ready.is_empty() {
            break;
        }
        for id in ready {
            let f: &Arc<dyn CodeStep> = &code[&id];
            let output = f
                .call(json!({"input": {}}), CancellationToken::new())
                .await
                .unwrap();
            db.write_step(&run, &id, &output).await;
            state.done.insert(id);
            written += 1;
        }
    }
    let elapsed = started.elapsed();
    assert_eq!(written, spec.steps.len());
    elapsed
}

// ----- the report -----

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn summary(name: &str, mut samples: Vec<Duration>) {
    if samples.is_empty() {
        return;
    }
    samples.sort();
    println!(
        "  {name:<26} median {:>10.3?}  p95 {:>10.3?}  max {:>10.3?}  (n = {})",
        quantile(&samples, 0.5),
        quantile(&samples, 0.95),
        samples[samples.len() - 1],
        samples.len()
    );
}

fn bench(c: &mut Criterion) {
    let sizes = sizes();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut harnesses = vec![("sqlite", rt.block_on(common::sqlite()))];
    if let Some(pg) = rt.block_on(common::postgres("flow_engine")) {
        harnesses.push(("postgres", pg));
    }
    let big = layered(sizes.layers, sizes.width);
    let big_spec = spec_of(&big);
    let big_code = noop_steps(&big);

    let mut group = c.benchmark_group("flow_10k");
    // One run per sample: a run takes seconds (criterion says it cannot
    // fit 10 samples in the 1 s asked for, and runs 1 + 10 runs).
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(1))
        .measurement_time(Duration::from_secs(1))
        .throughput(Throughput::Elements(big.len() as u64));
    // Per backend: the engine's runs and the durable commits they made.
    let mut per_commit = Vec::new();
    for (backend, harness) in &harnesses {
        let under_test = rt.block_on(start_engine(harness));
        let (runs, commits) = (AtomicU64::new(0), AtomicU64::new(0));
        group.bench_function(BenchmarkId::new("engine", backend), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let mut run = NewRun::spec(big_spec.clone(), json!({}));
                    run.code = big_code.clone();
                    let before = harness.commits();
                    total += rt.block_on(engine_round(&under_test.engine, run, big.len()));
                    commits.fetch_add(harness.commits() - before, Ordering::Relaxed);
                    runs.fetch_add(1, Ordering::Relaxed);
                }
                total
            })
        });
        per_commit.push((backend, runs.into_inner(), commits.into_inner()));
        // The naive loop has the database to itself.
        rt.block_on(under_test.engine.shutdown(Duration::from_secs(10)));
        let db = rt.block_on(NaiveDb::open(harness));
        let raw = rt.block_on(harness.raw());
        group.bench_function(BenchmarkId::new("naive", backend), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    total += rt.block_on(naive_round(&db, &big_spec, &big_code));
                }
                total
            })
        });
        group.bench_function(BenchmarkId::new("commit_floor", backend), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    total += rt.block_on(common::commit_floor(&raw, big.len() as u64));
                }
                total
            })
        });
    }
    group.finish();
    println!("\ndurable commits of the engine's 10,000-step runs (the naive loop: one per step):");
    for (backend, runs, commits) in per_commit {
        let per_run = commits as f64 / runs.max(1) as f64;
        println!(
            "  engine/{backend:<9} {per_run:>8.0} commits per run = {:.1} steps per durable commit \
             ({runs} runs)",
            big.len() as f64 / per_run.max(1.0)
        );
    }

    // Completion → dependents' dispatch (criterion times one quantity per
    // routine; these are distributions, summarized here).
    println!(
        "\ndispatch latency (a code step returned → its dependent's code step called), \
         {} runs each:",
        sizes.latency_runs
    );
    let shapes = [
        ("chain", chain(sizes.chain)),
        ("fan-out", fanout(sizes.fanout)),
    ];
    for (backend, harness) in &harnesses {
        let under_test = rt.block_on(start_engine(harness));
        let probe = Arc::new(Probe::default());
        let mut results = Vec::new();
        for (shape, steps) in &shapes {
            let spec = spec_of(steps);
            let mut samples = Vec::new();
            for _ in 0..sizes.latency_runs {
                probe.clear();
                let mut run = NewRun::spec(spec.clone(), json!({}));
                run.code = probe.steps(steps);
                rt.block_on(engine_round(&under_test.engine, run, steps.len()));
                samples.extend(probe.latencies(steps));
            }
            results.push((format!("engine/{backend}/{shape}"), samples));
        }
        rt.block_on(under_test.engine.shutdown(Duration::from_secs(10)));
        let db = rt.block_on(NaiveDb::open(harness));
        for (shape, steps) in &shapes {
            let spec = spec_of(steps);
            let code = probe.steps(steps);
            let mut samples = Vec::new();
            for _ in 0..sizes.latency_runs {
                probe.clear();
                rt.block_on(naive_round(&db, &spec, &code));
                samples.extend(probe.latencies(steps));
            }
            results.push((format!("naive/{backend}/{shape}"), samples));
        }
        for (name, samples) in results {
            summary(&name, samples);
        }
    }
    for (_, h) in harnesses {
        rt.block_on(h.finish());
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
