//! Properties of the SSE replay: the decision table's guarantees, and the
//! whole resume protocol (subscribe live first, read the store's window,
//! replay, merge) simulated over random stores, cursors and timings.

use coderig::event::{
    decide_replay, merge_replay, Event, ReplayDecision, RunStatus, RunUpdated, SseId, StoreWindow,
    StoredEvent,
};
use proptest::prelude::*;

fn ev(seq: u64) -> StoredEvent {
    StoredEvent {
        seq,
        epoch: Some("st".into()),
        event: Event::RunUpdated(RunUpdated {
            run_id: "r".into(),
            status: RunStatus::Running,
            error: None,
        }),
    }
}

/// (store window, cursor)
fn setup() -> impl Strategy<Value = (StoreWindow, Option<SseId>)> {
    (0u64..40)
        .prop_flat_map(|newest| {
            (
                Just(newest),
                1u64..=newest + 1,
                proptest::option::of((prop::sample::select(&["st", "other"][..]), 0u64..50)),
            )
        })
        .prop_map(|(newest, oldest, cursor)| {
            let window = StoreWindow {
                epoch: "st".into(),
                oldest_retained: oldest,
                newest,
            };
            (window, cursor.map(|(e, s)| SseId::new(e, s).unwrap()))
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn the_decision_keeps_its_guarantees((window, cursor) in setup()) {
        let decision = decide_replay(cursor.as_ref(), &window);
        let retained = window.oldest()..=window.newest;
        let replayed: Vec<u64> = match decision.replay_after(&window) {
            Some(after) => retained.clone().filter(|&s| s > after).collect(),
            None => vec![],
        };
        match &cursor {
            None => prop_assert_eq!(decision, ReplayDecision::Live),
            Some(c) if c.epoch() != window.epoch => {
                // Another epoch always resets, and the reset replays everything retained.
                prop_assert_eq!(decision, ReplayDecision::Reset);
                prop_assert_eq!(&replayed, &retained.clone().collect::<Vec<_>>());
            }
            Some(c) => {
                let s = c.seq();
                if s > window.newest {
                    prop_assert_eq!(decision, ReplayDecision::Reset);
                } else if s + 1 >= window.oldest() {
                    // Inside the retained range: exactly the events after it.
                    prop_assert_eq!(decision, ReplayDecision::Replay { after: s });
                    prop_assert_eq!(&replayed, &(s + 1..=window.newest).collect::<Vec<_>>());
                } else {
                    prop_assert_eq!(decision, ReplayDecision::Gap { after: s, oldest: window.oldest() });
                    prop_assert_eq!(&replayed, &retained.clone().collect::<Vec<_>>());
                }
                if decision != ReplayDecision::Reset {
                    // Never an event at or before the cursor.
                    prop_assert!(replayed.iter().all(|&r| r > s));
                    prop_assert_eq!(decision.delivered_after(), Some(s));
                }
            }
        }
    }

    #[test]
    fn resuming_delivers_each_missing_event_once_in_order(
        (window, cursor) in setup(),
        subscribed_at in 0u64..40,
        later in 0u64..10,
        live_order in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
    ) {
        // The live subscription starts when the newest seq is `subscribed_at`
        // and receives everything committed after it, up to `total`. The
        // window is read after subscribing, so `subscribed_at <= newest`; and
        // compaction removes old events, never ones committed since the
        // subscription, so `subscribed_at >= oldest - 1`.
        let subscribed_at = subscribed_at.clamp(window.oldest() - 1, window.newest);
        let total = window.newest + later;
        let mut live: Vec<StoredEvent> = (subscribed_at + 1..=total).map(ev).collect();
        for (i, j) in live_order.iter().enumerate() {
            // Some reordering, to show the merge does not rely on arrival order.
            if !live.is_empty() {
                let a = i % live.len();
                let b = j.index(live.len());
                live.swap(a, b);
            }
        }
        let decision = decide_replay(cursor.as_ref(), &window);
        let replayed: Vec<StoredEvent> = match decision.replay_after(&window) {
            Some(after) => (window.oldest()..=window.newest).filter(|&s| s > after).map(ev).collect(),
            None => vec![],
        };
        let sent: Vec<u64> = merge_replay(decision.delivered_after(), live, replayed)
            .iter()
            .map(|e| e.seq)
            .collect();
        // In strictly increasing order: no duplicate.
        prop_assert!(sent.windows(2).all(|w| w[0] < w[1]), "{:?}", sent);
        let expected: Vec<u64> = match decision {
            ReplayDecision::Live => (subscribed_at + 1..=total).collect(),
            ReplayDecision::Replay { after } => (after + 1..=total).collect(),
            ReplayDecision::Gap { oldest, .. } => (oldest..=total).collect(),
            ReplayDecision::Reset => (window.oldest()..=total).collect(),
        };
        // No gap: everything after the cursor that the store still has (and
        // everything live brought since), nothing the client already has.
        prop_assert_eq!(&sent, &expected);
        if let Some(after) = decision.delivered_after() {
            prop_assert!(sent.iter().all(|&s| s > after));
        }
    }

    #[test]
    fn merge_is_the_sorted_union_after_the_cursor_with_the_stored_copy_first(
        live in prop::collection::vec(0u64..30, 0..20),
        replayed in prop::collection::btree_set(0u64..30, 0..20),
        after in proptest::option::of(0u64..30),
    ) {
        let tagged = |seq: u64, by: &str| {
            let mut e = ev(seq);
            e.epoch = Some(by.into());
            e
        };
        let live_events: Vec<StoredEvent> = live.iter().map(|&s| tagged(s, "live")).collect();
        let replayed_events: Vec<StoredEvent> = replayed.iter().map(|&s| tagged(s, "store")).collect();
        let merged = merge_replay(after, live_events, replayed_events);
        let mut expected: Vec<u64> = live.iter().chain(&replayed).copied().filter(|&s| after.is_none_or(|a| s > a)).collect();
        expected.sort_unstable();
        expected.dedup();
        prop_assert_eq!(merged.iter().map(|e| e.seq).collect::<Vec<_>>(), expected);
        for e in &merged {
            let from_store = replayed.contains(&e.seq);
            prop_assert_eq!(e.epoch.as_deref() == Some("store"), from_store);
        }
    }
}
