//! Scheduling overhead of the arena runtime per contestant, beside a naive
//! polling dispatcher, in one run.
//!
//! - `start_to_spawn`: from the `start_battle` call to the contestant's
//!   agent being called (`Agent::run` entered).
//! - `exit_to_event`: from the agent returning to a subscriber receiving
//!   the contestant's `contestant_updated` (`done`).
//!
//! Contenders:
//! - `runner`: `Arena` — the creation wakes the worker, which claims at
//!   once; the completion notifies the event bus, whose subscribers get the
//!   event without waiting for a poll.
//! - `naive`: the dispatcher most job queues begin as — a worker loop that
//!   polls the queue every 250 ms (`Store::claim`), runs what it got and
//!   completes it, and an observer that polls the event log every 250 ms,
//!   both running all along (a battle lands at a random point of their
//!   cycles). Same store, same transactions; only the waking differs.
//!
//! The agent is an in-process probe that records when it is called and
//! returns at once, so only the scheduling is measured. One qa battle of two
//! contestants per iteration; the first contestant is measured. PostgreSQL
//! runs when `DATABASE_URL` is set. Results: `benches/RESULTS-arena.md`.
//!
//! After the report, each store's commit floor (1,000 one-row durable
//! commits): the latencies above are a few commits each.
//!
//! `cargo bench -p coderig --features sqlite,postgres,git --bench arena_dispatch`

#[path = "../tests/common/mod.rs"]
mod common;

use async_trait::async_trait;
use coderig::agent::config::AgentKind;
use coderig::agent::{Agent, AgentEntry, AgentError, AgentEvent, Registry, Turn, TurnOutcome};
use coderig::arena::runner::{Arena, ArenaConfig};
use coderig::arena::ContestantStatus;
use coderig::arena::{BattleSpec, Lane};
use coderig::bus::{BusEvent, EventBus};
use coderig::event::Event;
use coderig::store::*;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const NAIVE_POLL: Duration = Duration::from_millis(250);

/// Records when it is called and when it returns.
#[derive(Default)]
struct Probe {
    calls: Mutex<Vec<(String, Instant, Instant)>>,
}

#[async_trait]
impl Agent for Probe {
    async fn run(
        &self,
        turn: Turn,
        _events: mpsc::Sender<AgentEvent>,
        _cancel: CancellationToken,
    ) -> Result<TurnOutcome, AgentError> {
        let called = Instant::now();
        let model = turn.model.clone().unwrap_or_default();
        let text = if turn.system.is_some() {
            "WINNER: probe/a".to_owned()
        } else {
            format!("answer of {model}")
        };
        let returned = Instant::now();
        self.calls.lock().unwrap().push((model, called, returned));
        Ok(TurnOutcome {
            final_text: text,
            ..TurnOutcome::default()
        })
    }
}

fn spec() -> BattleSpec {
    BattleSpec::from_json(&json!({
        "battle_type": "qa", "prompt": "What is 2+2?",
        "contestants": [{"identity": "probe", "model": "a"}, {"identity": "probe", "model": "b"}],
        "judge": {"identity": "probe", "model": "judge"},
    }))
    .unwrap()
}

/// One battle through the runner: (start → spawn, exit → event) of the
/// first contestant.
async fn runner_round(arena: &Arena, probe: &Probe) -> (Duration, Duration) {
    let mut sub = arena.bus().subscribe();
    probe.calls.lock().unwrap().clear();
    let started = Instant::now();
    let view = arena.start_battle(spec()).await.unwrap();
    let first = view.contestants[0].id.clone();
    let seen = loop {
        match sub.next().await {
            Some(BusEvent::Stored(e)) => {
                if let Event::ContestantUpdated(u) = &e.event {
                    if u.contestant_id == first && u.status == ContestantStatus::Done {
                        break Instant::now();
                    }
                }
            }
            Some(_) => {}
            None => panic!("bus closed"),
        }
    };
    let (called, returned) = {
        let calls = probe.calls.lock().unwrap();
        let c = calls
            .iter()
            .find(|c| c.0 == "a")
            .expect("the first contestant ran");
        (c.1, c.2)
    };
    arena
        .wait(&view.id, Some(Duration::from_secs(30)))
        .await
        .unwrap();
    (called - started, seen - returned)
}

static NAIVE_BATTLE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The naive dispatcher: a worker that polls the queue every 250 ms and an
/// observer that polls the event log every 250 ms, both running all along
/// (so a battle arrives at a random point of their cycles, as in life).
struct Naive {
    /// (task's work id, agent called, agent returned) per contestant run.
    ran: Arc<Mutex<Vec<(String, Instant, Instant)>>>,
    /// (work id, when the observer saw its contestant_updated).
    seen: Arc<Mutex<Vec<(String, Instant)>>>,
    stop: CancellationToken,
}

impl Naive {
    fn start(store: Arc<dyn Store>) -> Naive {
        let naive = Naive {
            ran: Default::default(),
            seen: Default::default(),
            stop: CancellationToken::new(),
        };
        let (ran, stop, worker_store) = (naive.ran.clone(), naive.stop.clone(), store.clone());
        tokio::spawn(async move {
            let probe = Probe::default();
            let request = ClaimRequest::new("naive")
                .lease_ttl(Duration::from_secs(600))
                .limit(16);
            while !stop.is_cancelled() {
                for claim in worker_store.claim(&request).await.unwrap() {
                    let (tx, _rx) = mpsc::channel(16);
                    let called = Instant::now();
                    probe
                        .run(Turn::new("q").model("a"), tx, CancellationToken::new())
                        .await
                        .unwrap();
                    let returned = Instant::now();
                    let task = claim.task.clone();
                    worker_store
                        .complete(
                            &claim.fence(),
                            Completion::completed(json!({}))
                                .with_event(common::contestant_event(&task, "done")),
                        )
                        .await
                        .unwrap();
                    ran.lock()
                        .unwrap()
                        .push((task.work_id.clone(), called, returned));
                }
                tokio::time::sleep(NAIVE_POLL).await;
            }
        });
        let (seen, stop) = (naive.seen.clone(), naive.stop.clone());
        tokio::spawn(async move {
            let mut after = store.event_window().await.unwrap().newest as i64;
            while !stop.is_cancelled() {
                for e in store.events_after(after, 1000).await.unwrap() {
                    after = after.max(e.seq);
                    if e.kind == EventType::ContestantUpdated {
                        seen.lock()
                            .unwrap()
                            .push((e.work_id.clone(), Instant::now()));
                    }
                }
                tokio::time::sleep(NAIVE_POLL).await;
            }
        });
        naive
    }
}

/// One battle through the naive poller: the same creation, claim and
/// completion transactions, woken by nothing but the polls.
async fn naive_round(store: &Arc<dyn Store>, naive: &Naive) -> (Duration, Duration) {
    let n = NAIVE_BATTLE.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let id = format!("naive{n}");
    // Untimed: land at a random point of the pollers' cycles (back-to-back
    // rounds would otherwise line up with the worker's next poll).
    let phase = (n
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407)
        >> 33)
        % 250;
    tokio::time::sleep(Duration::from_millis(phase)).await;
    let started = Instant::now();
    store
        .create_work(common::battle(&id, 1, Lane::Cloud))
        .await
        .unwrap();
    loop {
        let ran = naive
            .ran
            .lock()
            .unwrap()
            .iter()
            .find(|r| r.0 == id)
            .cloned();
        let seen = naive
            .seen
            .lock()
            .unwrap()
            .iter()
            .find(|r| r.0 == id)
            .cloned();
        if let (Some((_, called, returned)), Some((_, at))) = (ran, seen) {
            return (called - started, at - returned);
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut harnesses = vec![("sqlite", rt.block_on(common::sqlite()))];
    if let Some(pg) = rt.block_on(common::postgres("arena_dispatch")) {
        harnesses.push(("postgres", pg));
    }
    let mut spawn = c.benchmark_group("start_to_spawn");
    spawn
        .sample_size(10)
        .measurement_time(Duration::from_secs(8))
        .warm_up_time(Duration::from_secs(1));
    let mut settle_results: Vec<(String, Vec<Duration>)> = Vec::new();
    for (backend, harness) in &harnesses {
        let data = tempfile::tempdir().unwrap();
        let probe = Arc::new(Probe::default());
        let mut registry = Registry::new();
        registry.insert("probe", AgentEntry::new(AgentKind::Scripted, probe.clone()));
        let mut config = ArenaConfig::new(data.path());
        // The runner's own poll stays at its default: every wake-up below
        // comes from the creation and the completion.
        config.reconcile_every = Duration::from_secs(2);
        let arena = rt.block_on(async {
            let bus = EventBus::start(harness.store.clone());
            Arena::start(harness.store.clone(), registry, bus, config)
                .await
                .unwrap()
        });
        let settles = Arc::new(Mutex::new(Vec::new()));
        {
            let settles = settles.clone();
            spawn.bench_function(BenchmarkId::new("runner", backend), |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let (s, e) = rt.block_on(runner_round(&arena, &probe));
                        total += s;
                        settles.lock().unwrap().push(e);
                    }
                    total
                })
            });
        }
        settle_results.push((format!("runner/{backend}"), settles.lock().unwrap().clone()));
        // The naive poller must be alone on the store.
        rt.block_on(arena.shutdown(Duration::from_secs(5)));
        let naive = rt.block_on(async { Naive::start(harness.store.clone()) });
        let nsettles = Arc::new(Mutex::new(Vec::new()));
        {
            let nsettles = nsettles.clone();
            spawn.bench_function(BenchmarkId::new("naive", backend), |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let (s, e) = rt.block_on(naive_round(&harness.store, &naive));
                        total += s;
                        nsettles.lock().unwrap().push(e);
                    }
                    total
                })
            });
        }
        settle_results.push((format!("naive/{backend}"), nsettles.lock().unwrap().clone()));
        naive.stop.cancel();
    }
    spawn.finish();
    // exit → event, from the same rounds (criterion times one quantity per
    // routine; this one is summarized here).
    println!(
        "\nexit_to_event (agent returned → subscriber has contestant_updated), median [p10, p90]:"
    );
    for (name, mut samples) in settle_results {
        samples.sort();
        let pick = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
        if samples.is_empty() {
            continue;
        }
        println!(
            "  {name:<18} {:>10.3?} [{:.3?}, {:.3?}]  (n = {})",
            pick(0.5),
            pick(0.1),
            pick(0.9),
            samples.len()
        );
    }
    // One durable commit on each store: the unit every figure above is in
    // (a dispatch is a handful of commits, the naive poller's wait none).
    println!("\ncommit floor (one-row autocommit inserts on the same database and disk):");
    for (backend, h) in &harnesses {
        rt.block_on(async { common::report_commit_floor(backend, &h.raw().await, 1_000).await });
    }
    for (_, h) in harnesses {
        rt.block_on(h.finish());
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
