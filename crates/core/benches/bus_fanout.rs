//! Fan-out of stored events to 100 subscribers: the `EventBus` beside the
//! naive baseline where every subscriber polls `Store::events_after` itself.
//!
//! One iteration: 500 events are committed to a real SQLite store
//! (untimed; the bus's tailer is asleep meanwhile: poll 1 h, no notify),
//! then the clock runs from "go" (`notify()` for the bus; the pollers'
//! start for the baseline) until each of the 100 subscribers has received
//! all 500 as typed `StoredEvent`s. Criterion's throughput is deliveries/s
//! (events × subscribers). The naive pollers loop without sleeping, their
//! best case for throughput. Results: `benches/RESULTS-bus.md`.
//!
//! `cargo bench -p coderig --features sqlite,postgres --bench bus_fanout`

#[path = "../tests/common/mod.rs"]
mod common;

use coderig::bus::{BusEvent, BusOptions, EventBus, EventSubscription};
use coderig::event::{BattleStatus, BattleUpdated, Event};
use coderig::store::*;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

const SUBSCRIBERS: usize = 100;
const EVENTS: u64 = 500;

async fn write(store: &dyn Store, n: u64) {
    let event = NewEvent::from_event(&Event::BattleUpdated(BattleUpdated {
        battle_id: "bench".into(),
        status: BattleStatus::Running,
        winner_contestant_id: None,
        winner_source: None,
        analysis_ready: None,
        cross_exam_id: None,
        error: None,
    }))
    .unwrap();
    for _ in 0..n {
        store
            .transition(Transition {
                target: Target::Work("bench".into()),
                from: vec![],
                to: "running".into(),
                data: None,
                event: Some(event.clone()),
            })
            .await
            .unwrap();
    }
}

async fn setup() -> common::Harness {
    let harness = common::sqlite().await;
    let mut work = common::battle("bench", 0, coderig::arena::Lane::Cloud);
    work.event = NewEvent::new(
        coderig::event::EventType::BattleUpdated,
        json!({"battle_id": "bench", "status": "running"}),
    );
    harness.store.create_work(work).await.unwrap();
    harness
}

/// Each subscription receives `n` stored events; returns the subscriptions.
async fn drain(subs: Vec<EventSubscription>, n: u64) -> Vec<EventSubscription> {
    let tasks: Vec<_> = subs
        .into_iter()
        .map(|mut sub| {
            tokio::spawn(async move {
                let mut got = 0;
                while got < n {
                    if let Some(BusEvent::Stored(e)) = sub.next().await {
                        std::hint::black_box(&e);
                        got += 1;
                    }
                }
                sub
            })
        })
        .collect();
    let mut subs = Vec::with_capacity(tasks.len());
    for task in tasks {
        subs.push(task.await.unwrap());
    }
    subs
}

/// Each of `SUBSCRIBERS` pollers reads `events_after` from `after` until it
/// has `n` typed events.
async fn poll(store: &Arc<dyn Store>, after: i64, n: u64) {
    let tasks: Vec<_> = (0..SUBSCRIBERS)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move {
                let (mut from, mut got) = (after, 0);
                while got < n {
                    for record in store.events_after(from, 500).await.unwrap() {
                        from = record.seq;
                        std::hint::black_box(record.to_stored(Some(store.epoch())).unwrap());
                        got += 1;
                    }
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
}

fn fanout(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("bus_fanout");
    group.throughput(Throughput::Elements(EVENTS * SUBSCRIBERS as u64));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));

    let harness = runtime.block_on(setup());
    let store = harness.store.clone();
    let bus = runtime.block_on(async {
        let bus = EventBus::start_with(
            store.clone(),
            BusOptions {
                poll: Duration::from_secs(3600),
                ..BusOptions::default()
            },
        );
        bus.started().await;
        bus
    });
    let mut subs: Vec<EventSubscription> = (0..SUBSCRIBERS).map(|_| bus.subscribe()).collect();
    group.bench_function("bus", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                runtime.block_on(write(&*store, EVENTS));
                let started = Instant::now();
                bus.notify();
                subs = runtime.block_on(drain(std::mem::take(&mut subs), EVENTS));
                total += started.elapsed();
            }
            total
        })
    });
    bus.shutdown();

    group.bench_function("naive_poll", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let after = runtime.block_on(store.event_window()).unwrap().newest as i64;
                runtime.block_on(write(&*store, EVENTS));
                let started = Instant::now();
                runtime.block_on(poll(&store, after, EVENTS));
                total += started.elapsed();
            }
            total
        })
    });
    group.finish();
}

criterion_group!(benches, fanout);
criterion_main!(benches);
