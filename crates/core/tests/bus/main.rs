//! The event bus over a real store: every test is a function over a fresh
//! store, run on a real SQLite file (module `sqlite`) and on a real
//! PostgreSQL in its own schema (module `postgres`, skipped — and said so —
//! without `DATABASE_URL`).
//!
//! Timeouts below only keep a broken bus from hanging the suite; no
//! assertion depends on timing.

#[path = "../common/mod.rs"]
mod common;
// The commit feeds (SQLite's poll, PostgreSQL's LISTEN), in their own file.
mod feed;

use coderig::bus::{matches, BusEvent, BusOptions, EventBus, EventSubscription};
use coderig::event::{
    AgentOutput, BattleStarted, BattleStatus, BattleUpdated, Event, OutputKind, OutputSource,
    ReplayDecision, RunStatus, RunUpdated, SseId, StoredEvent,
};
use coderig::store::*;
use common::*;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

common::on_both_stores!(
    "bus";
    stored_events_reach_every_subscriber_once_in_order,
    replay_then_live_has_no_gap_or_duplicate_while_a_writer_writes,
    a_lagging_subscriber_recovers_every_stored_event_from_the_store,
    a_second_bus_on_the_same_store_sees_the_first_ones_events_by_polling,
    live_events_reach_subscribers_without_a_seq,
    shutdown_ends_next,
    a_foreign_cursor_resets_and_replays_everything,
    the_bus_starts_after_the_newest_event,
);

/// Hang guard: a broken bus fails the test instead of hanging it.
const GUARD: Duration = Duration::from_secs(60);

/// A battle `id` whose first event is a well-formed `battle_started`.
fn battle(id: &str) -> NewWork {
    let event = Event::BattleStarted(BattleStarted {
        battle_id: id.into(),
        battle_type: coderig::arena::BattleType::Qa,
        prompt: "hi".into(),
        contestants: vec![],
    });
    NewWork {
        id: id.into(),
        kind: WorkKind::Battle,
        status: "running".into(),
        data: json!({}),
        owners: vec![],
        tasks: vec![],
        event: NewEvent::from_event(&event).unwrap(),
    }
}

/// A run `id` whose first event is a `run_updated`.
fn run(id: &str) -> NewWork {
    let event = Event::RunUpdated(RunUpdated {
        run_id: id.into(),
        status: RunStatus::Running,
        error: None,
    });
    NewWork {
        id: id.into(),
        kind: WorkKind::Run,
        status: "running".into(),
        data: json!({}),
        owners: vec![],
        tasks: vec![],
        event: NewEvent::from_event(&event).unwrap(),
    }
}

/// One more `battle_updated` of battle `id` (a transition with its event).
async fn update(store: &dyn Store, id: &str) -> i64 {
    let event = Event::BattleUpdated(BattleUpdated {
        battle_id: id.into(),
        status: BattleStatus::Running,
        winner_contestant_id: None,
        winner_source: None,
        analysis_ready: None,
        cross_exam_id: None,
        error: None,
    });
    store
        .transition(Transition {
            target: Target::Work(id.into()),
            from: vec![],
            to: "running".into(),
            data: None,
            event: Some(NewEvent::from_event(&event).unwrap()),
        })
        .await
        .unwrap()
        .unwrap()
        .seq
}

async fn newest(store: &dyn Store) -> u64 {
    store.event_window().await.unwrap().newest
}

/// The next stored event (live ones are not expected here).
async fn next_stored(sub: &mut EventSubscription) -> StoredEvent {
    match tokio::time::timeout(GUARD, sub.next()).await {
        Ok(Some(BusEvent::Stored(e))) => e,
        other => panic!("expected a stored event, got {other:?}"),
    }
}

/// Stored events from `sub` until one with `seq >= last`; their seqs.
async fn seqs_until(sub: &mut EventSubscription, last: u64) -> Vec<u64> {
    let mut seqs = Vec::new();
    while seqs.last().is_none_or(|&s| s < last) {
        seqs.push(next_stored(sub).await.seq);
    }
    seqs
}

/// The seqs of the log in `(after, through]`, as the store has them (on
/// PostgreSQL the log may skip numbers).
async fn log(store: &dyn Store, after: u64, through: u64) -> Vec<u64> {
    let mut seqs = Vec::new();
    let mut from = after as i64;
    loop {
        let page = store.events_after(from, 1000).await.unwrap();
        let Some(last) = page.last() else { break };
        from = last.seq;
        seqs.extend(page.iter().map(|r| r.seq as u64).filter(|&s| s <= through));
        if from as u64 >= through {
            break;
        }
    }
    seqs
}

async fn stored_events_reach_every_subscriber_once_in_order(h: &Harness) {
    let bus = EventBus::start(h.store.clone());
    bus.started().await.unwrap();
    let mut subs: Vec<EventSubscription> = (0..3).map(|_| bus.subscribe()).collect();
    let start = newest(&*h.store).await;
    h.store.create_work(battle("b1")).await.unwrap();
    bus.notify();
    h.store.create_work(run("r1")).await.unwrap();
    for _ in 0..5 {
        update(&*h.store, "b1").await;
        bus.notify();
    }
    let last = newest(&*h.store).await;
    let expected = log(&*h.store, start, last).await;
    assert_eq!(expected.len(), 7);
    for sub in &mut subs {
        let mut got = Vec::new();
        for _ in 0..expected.len() {
            let e = next_stored(sub).await;
            assert_eq!(e.epoch.as_deref(), Some(h.store.epoch()));
            got.push(e);
        }
        assert_eq!(got.iter().map(|e| e.seq).collect::<Vec<_>>(), expected);
        assert!(matches!(&got[0].event, Event::BattleStarted(b) if b.battle_id == "b1"));
        assert!(matches!(&got[1].event, Event::RunUpdated(r) if r.run_id == "r1"));
        assert!(got[2..]
            .iter()
            .all(|e| matches!(&e.event, Event::BattleUpdated(_))));
    }
    // Nothing more (and nothing twice): the next event is a fresh one.
    let fresh = update(&*h.store, "b1").await as u64;
    bus.notify();
    for sub in &mut subs {
        assert_eq!(next_stored(sub).await.seq, fresh);
    }
    bus.shutdown();
}

async fn replay_then_live_has_no_gap_or_duplicate_while_a_writer_writes(h: &Harness) {
    let bus = EventBus::start(h.store.clone());
    bus.started().await.unwrap();
    h.store.create_work(battle("w")).await.unwrap();
    for _ in 0..20 {
        update(&*h.store, "w").await;
    }
    bus.notify();
    const WRITES: usize = 200;
    let writer = {
        let (store, bus) = (h.store.clone(), bus.clone());
        tokio::spawn(async move {
            for _ in 0..WRITES {
                update(&*store, "w").await;
                bus.notify();
                tokio::task::yield_now().await;
            }
        })
    };
    // Subscribers joining at different moments, each resuming from a cursor
    // a little behind the log's end at that moment.
    let mut readers = Vec::new();
    for i in 0..6u64 {
        let (store, bus) = (h.store.clone(), bus.clone());
        readers.push(tokio::spawn(async move {
            for _ in 0..i * 5 {
                tokio::task::yield_now().await;
            }
            let behind = newest(&*store).await.saturating_sub(3 + i);
            let cursor = SseId::new(store.epoch(), behind).unwrap();
            let mut sub = bus.subscribe();
            let (decision, replayed) = sub.replay(Some(&cursor)).await.unwrap();
            assert_eq!(decision, ReplayDecision::Replay { after: behind });
            let seqs: Vec<u64> = replayed.iter().map(|e| e.seq).collect();
            (behind, sub, seqs)
        }));
    }
    writer.await.unwrap();
    let last = newest(&*h.store).await;
    for reader in readers {
        let (behind, mut sub, mut seqs) = reader.await.unwrap();
        if seqs.last().is_none_or(|&s| s < last) {
            seqs.extend(seqs_until(&mut sub, last).await);
        }
        assert_eq!(seqs, log(&*h.store, behind, last).await, "from {behind}");
    }
    bus.shutdown();
}

async fn a_lagging_subscriber_recovers_every_stored_event_from_the_store(h: &Harness) {
    let bus = EventBus::start_with(
        h.store.clone(),
        BusOptions {
            capacity: 2,
            ..BusOptions::default()
        },
    );
    bus.started().await.unwrap();
    let mut slow = bus.subscribe();
    // A live event is published among them; it may be lost in the lag, by
    // contract, but no stored event may be.
    let start = newest(&*h.store).await;
    h.store.create_work(battle("lag")).await.unwrap();
    for i in 0..700 {
        update(&*h.store, "lag").await;
        if i % 7 == 0 {
            bus.notify();
        }
        if i == 350 {
            bus.publish_live(output("may be lost in the lag"));
        }
    }
    bus.notify();
    let last = newest(&*h.store).await;
    let mut seqs = Vec::new();
    while seqs.last().is_none_or(|&s| s < last) {
        match tokio::time::timeout(GUARD, slow.next()).await.unwrap() {
            Some(BusEvent::Stored(e)) => seqs.push(e.seq),
            Some(BusEvent::Live(_)) => {}
            None => panic!("the bus ended"),
        }
    }
    assert_eq!(seqs, log(&*h.store, start, last).await);
    bus.shutdown();
}

async fn a_second_bus_on_the_same_store_sees_the_first_ones_events_by_polling(h: &Harness) {
    let other = h.another().await;
    let here = EventBus::start(h.store.clone());
    let there = EventBus::start_with(
        other,
        BusOptions {
            poll: Duration::from_millis(20),
            ..BusOptions::default()
        },
    );
    here.started().await.unwrap();
    there.started().await.unwrap();
    let mut remote = there.subscribe();
    // Positioned where that bus started: replay with its own start as the
    // cursor, so nothing written before the subscription is missed.
    let (_, before) = remote.replay(None).await.unwrap();
    assert!(before.is_empty());
    let start = newest(&*h.store).await;
    h.store.create_work(battle("far")).await.unwrap();
    for _ in 0..10 {
        update(&*h.store, "far").await;
        here.notify(); // only this server's bus is told
    }
    let last = newest(&*h.store).await;
    assert_eq!(
        seqs_until(&mut remote, last).await,
        log(&*h.store, start, last).await
    );
    here.shutdown();
    there.shutdown();
}

async fn live_events_reach_subscribers_without_a_seq(h: &Harness) {
    let bus = EventBus::start(h.store.clone());
    bus.started().await.unwrap();
    let mut a = bus.subscribe();
    let mut b = bus.subscribe();
    // Nobody listens to this one's bus: dropped silently.
    EventBus::start(h.store.clone()).publish_live(output("nobody"));
    bus.publish_live(output("hello"));
    for sub in [&mut a, &mut b] {
        match tokio::time::timeout(GUARD, sub.next()).await.unwrap() {
            Some(BusEvent::Live(Event::AgentOutput(o))) => assert_eq!(o.text, "hello"),
            other => panic!("{other:?}"),
        }
    }
    bus.shutdown();
}

fn output(text: &str) -> Event {
    Event::AgentOutput(AgentOutput {
        source: OutputSource::Contestant {
            battle_id: "b".into(),
            contestant_id: "c".into(),
        },
        kind: OutputKind::Text,
        text: text.into(),
    })
}

async fn shutdown_ends_next(h: &Harness) {
    let bus = EventBus::start(h.store.clone());
    bus.started().await.unwrap();
    let mut sub = bus.subscribe();
    let waiting = tokio::spawn(async move { sub.next().await });
    tokio::task::yield_now().await;
    bus.shutdown();
    assert_eq!(
        tokio::time::timeout(GUARD, waiting).await.unwrap().unwrap(),
        None
    );
    let mut after = bus.subscribe();
    assert_eq!(after.next().await, None);
    assert!(after.replay(None).await.is_err());

    // Dropping the last Arc stops the bus as well.
    let bus: Arc<EventBus> = EventBus::start(h.store.clone());
    let mut sub = bus.subscribe();
    drop(bus);
    assert_eq!(tokio::time::timeout(GUARD, sub.next()).await.unwrap(), None);
}

async fn a_foreign_cursor_resets_and_replays_everything(h: &Harness) {
    h.store.create_work(battle("old")).await.unwrap();
    update(&*h.store, "old").await;
    let bus = EventBus::start(h.store.clone());
    bus.started().await.unwrap();
    let mut sub = bus.subscribe();
    let foreign = SseId::new("another-store", 1).unwrap();
    let (decision, replayed) = sub.replay(Some(&foreign)).await.unwrap();
    assert_eq!(decision, ReplayDecision::Reset);
    let last = newest(&*h.store).await;
    assert_eq!(
        replayed.iter().map(|e| e.seq).collect::<Vec<_>>(),
        log(&*h.store, 0, last).await
    );
    // Then live, from just after the replay.
    let fresh = update(&*h.store, "old").await as u64;
    bus.notify();
    assert_eq!(next_stored(&mut sub).await.seq, fresh);
    bus.shutdown();
}

async fn the_bus_starts_after_the_newest_event(h: &Harness) {
    h.store.create_work(battle("before")).await.unwrap();
    let bus = EventBus::start(h.store.clone());
    // Subscribed before the tailer's first read: it stands where the
    // tailer starts, the log's end.
    let mut sub = bus.subscribe();
    assert_eq!(bus.started().await, Some(newest(&*h.store).await));
    // No cursor: live only, no history.
    let (decision, replayed) = sub.replay(None).await.unwrap();
    assert_eq!((decision, replayed.len()), (ReplayDecision::Live, 0));
    let fresh = update(&*h.store, "before").await as u64;
    bus.notify();
    assert_eq!(next_stored(&mut sub).await.seq, fresh);
    assert!(Arc::ptr_eq(bus.store(), &h.store));
    bus.shutdown();
}

#[test]
fn matches_filters_by_battle_and_run() {
    let battle = Event::BattleUpdated(BattleUpdated {
        battle_id: "b".into(),
        status: BattleStatus::Completed,
        winner_contestant_id: None,
        winner_source: None,
        analysis_ready: None,
        cross_exam_id: None,
        error: None,
    });
    let run = Event::RunUpdated(RunUpdated {
        run_id: "r".into(),
        status: RunStatus::Running,
        error: None,
    });
    assert!(matches(&battle, None, None));
    assert!(matches(&battle, Some("b"), None));
    assert!(!matches(&battle, Some("x"), None));
    assert!(!matches(&battle, None, Some("r")));
    assert!(matches(&run, None, Some("r")));
    assert!(!matches(&run, Some("b"), None));
    assert!(!matches(&run, Some("b"), Some("r")));
    assert!(matches(&output("t"), Some("b"), None));
}
