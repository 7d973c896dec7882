//! Cross-server event latency on one PostgreSQL: a commit on one store
//! handle until the event reaches a subscriber of another handle's
//! `EventBus` — woken by `LISTEN`/`NOTIFY` (`listen`) beside the poll it
//! replaces (`poll`: the writer's notifications off, the reader's bus
//! polling every 250 ms, as before). And what the notifications cost the
//! writers: commits/s of 8 concurrent writers with notifications on (a
//! listening bus attached, reading what it is woken for) and off (a bus
//! polling every 250 ms attached).
//!
//! Latency is timed from the write call (so it includes the commit) to the
//! subscriber's receipt, each commit after an untimed random pause (commits
//! of another server come at any moment); criterion reports the mean, and
//! the bench prints p50/p95/max of every iteration it ran. Results: `benches/RESULTS-bus.md`.
//!
//! `DATABASE_URL=postgres://… cargo bench -p coderig --features sqlite,postgres --bench bus_notify`
//! (without `DATABASE_URL` it says so and measures nothing).

#[path = "../tests/common/mod.rs"]
mod common;

use coderig::bus::{BusEvent, BusOptions, EventBus, EventSubscription};
use coderig::event::{BattleStatus, BattleUpdated, Event};
use coderig::store::*;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const WRITERS: usize = 8;

fn updated(battle: &str) -> NewEvent {
    NewEvent::from_event(&Event::BattleUpdated(BattleUpdated {
        battle_id: battle.into(),
        status: BattleStatus::Running,
        winner_contestant_id: None,
        winner_source: None,
        analysis_ready: None,
        cross_exam_id: None,
        error: None,
    }))
    .unwrap()
}

/// One write transaction appending one event to `battle`; its seq.
async fn commit(store: &dyn Store, battle: &str) -> u64 {
    let record = store
        .transition(Transition {
            target: Target::Work(battle.into()),
            from: vec![],
            to: "running".into(),
            data: None,
            event: Some(updated(battle)),
        })
        .await
        .unwrap()
        .expect("an event");
    record.seq as u64
}

/// A handle on the harness's schema with notifications on or off.
async fn handle(location: &common::Location, notify: bool) -> Arc<dyn Store> {
    let common::Location::Postgres { url, schema } = location else {
        unreachable!("PostgreSQL only")
    };
    Arc::new(
        PostgresStore::connect_with(
            url,
            PostgresOptions {
                schema: Some(schema.clone()),
                notify,
                max_connections: WRITERS as u32 + 2,
                ..PostgresOptions::default()
            },
        )
        .await
        .unwrap(),
    )
}

/// A bus on its own handle: listening (the default: woken by each
/// notification, 5 s backstop), or polling every 250 ms as every bus did
/// before `LISTEN` (`poll`).
async fn bus(location: &common::Location, poll: bool) -> Arc<EventBus> {
    let store = handle(location, true).await;
    let bus = if poll {
        let every = Duration::from_millis(250);
        EventBus::start_with(
            store,
            BusOptions {
                poll: every,
                backstop: every,
                ..BusOptions::default()
            },
        )
    } else {
        EventBus::start(store)
    };
    bus.started().await.unwrap();
    bus.commit_feed().await.unwrap();
    bus
}

async fn until_seq(sub: &mut EventSubscription, seq: u64) {
    loop {
        match sub.next().await {
            Some(BusEvent::Stored(e)) if e.seq >= seq => return,
            Some(_) => {}
            None => panic!("bus stopped"),
        }
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index]
}

fn report(name: &str, samples: &Mutex<Vec<Duration>>) {
    let mut all = samples.lock().unwrap().clone();
    all.sort();
    if all.is_empty() {
        return;
    }
    println!(
        "{name}: {} commits, latency p50 {:.2?}, p95 {:.2?}, max {:.2?}",
        all.len(),
        percentile(&all, 0.50),
        percentile(&all, 0.95),
        all[all.len() - 1]
    );
}

fn bench(c: &mut Criterion) {
    let Some(url) = common::database_url("bus_notify") else {
        eprintln!("bus_notify: DATABASE_URL is not set: nothing measured");
        return;
    };
    let _ = url;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let harness = rt.block_on(common::postgres("bus_notify")).unwrap();
    rt.block_on(async {
        for n in 0..WRITERS {
            let id = format!("w{n}");
            let mut work = common::battle(&id, 0, coderig::arena::Lane::Cloud);
            work.event = updated(&id);
            harness.store.create_work(work).await.unwrap();
        }
    });

    let mut latency = c.benchmark_group("bus_notify/latency");
    latency.sample_size(10);
    latency.measurement_time(Duration::from_secs(10));
    for (variant, notify) in [("listen", true), ("poll", false)] {
        let (writer, mut sub, bus) = rt.block_on(async {
            let writer = handle(&harness.location, notify).await;
            let bus = bus(&harness.location, !notify).await;
            (writer, bus.subscribe(), bus)
        });
        let samples = Mutex::new(Vec::new());
        // Commits of another server come at any moment: an untimed pause,
        // uniform over the poll period (or over a few coalescing gaps),
        // before each, so no commit lines up with the reader's poll or
        // gap and the baseline is not measured at its worst.
        let spread_ms = if notify { 10 } else { 250 };
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        latency.bench_function(variant, |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        let pause = Duration::from_micros(seed % (spread_ms * 1000));
                        tokio::time::sleep(pause).await;
                        let start = Instant::now();
                        let seq = commit(&*writer, "w0").await;
                        until_seq(&mut sub, seq).await;
                        let took = start.elapsed();
                        samples.lock().unwrap().push(took);
                        total += took;
                    }
                    total
                })
            })
        });
        report(&format!("bus_notify/latency/{variant}"), &samples);
        bus.shutdown();
    }
    latency.finish();

    let mut writers = c.benchmark_group("bus_notify/writers");
    writers.sample_size(10);
    writers.measurement_time(Duration::from_secs(10));
    writers.throughput(Throughput::Elements(WRITERS as u64 * 16));
    for (variant, notify) in [("notify_on", true), ("notify_off", false)] {
        let (writer, bus) = rt.block_on(async {
            let bus = bus(&harness.location, !notify).await;
            (handle(&harness.location, notify).await, bus)
        });
        writers.bench_function(variant, |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let start = Instant::now();
                    for _ in 0..iters {
                        let tasks: Vec<_> = (0..WRITERS)
                            .map(|n| {
                                let writer = writer.clone();
                                tokio::spawn(async move {
                                    let id = format!("w{n}");
                                    for _ in 0..16 {
                                        commit(&*writer, &id).await;
                                    }
                                })
                            })
                            .collect();
                        for task in tasks {
                            task.await.unwrap();
                        }
                    }
                    start.elapsed()
                })
            })
        });
        bus.shutdown();
    }
    writers.finish();
    // The writers' commits beside the disk's: one writer's one-row
    // autocommit inserts, one after another.
    println!("\ncommit floor (one-row autocommit inserts on the same database):");
    rt.block_on(async {
        common::report_commit_floor("postgres", &harness.raw().await, 1_000).await
    });
    rt.block_on(harness.finish());
}

criterion_group!(benches, bench);
criterion_main!(benches);
