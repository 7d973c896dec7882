//! Properties of `Scheduler::restore` on random flows (the generators of
//! the scheduler's agreement property) and random event sequences:
//!
//! 1. Restoring a copy from `state()` at any point gives a scheduler that
//!    reports nothing new (no ready step, no skip), the same `state()` and
//!    `held()`, and from then on answers every event exactly as the original
//!    (same returns or errors, same `take_skipped` in the same order, same
//!    `state()` and `held()`).
//! 2. Dropping some in-flight ids from the state (never persisted as
//!    started): restore hands out exactly those that are ready again —
//!    what the pure functions dispatch on that state — and lands on the
//!    pure functions' state.

mod flow_gen;

use coderig::flow::{
    Flow, FlowError, Scheduler, SchedulerState, SkipReason, StepKind, StepOutcome,
};
use flow_gen::{build_flow, settle, step_gen};
use proptest::prelude::*;
use proptest::sample::Index;
use std::collections::BTreeSet;

/// One event a runtime reports.
#[derive(Debug, Clone)]
enum Event {
    Complete(String),
    Switch(String, Option<String>),
    Iterate(String),
    Fail(String),
    Timeout(String),
    Skip(String),
}

/// The event `(kind, pick)` means in `state`: an event on an in-flight
/// step, or (kind 7) a runtime skip of a pending one; `None` when there is
/// no such step. A do-while iterates at most 3 times.
fn pick_event(flow: &Flow, state: &SchedulerState, kind: u8, pick: Index) -> Option<Event> {
    if kind == 7 {
        let pending: Vec<&str> = flow
            .steps
            .iter()
            .map(|s| s.id.as_str())
            .filter(|id| state.outcome(id) == StepOutcome::Pending)
            .collect();
        if pending.is_empty() {
            return None;
        }
        return Some(Event::Skip(pending[pick.index(pending.len())].to_string()));
    }
    let in_flight: Vec<&String> = state.in_flight.iter().collect();
    if in_flight.is_empty() {
        return None;
    }
    let id = in_flight[pick.index(in_flight.len())].clone();
    let step = flow.step(&id).unwrap();
    Some(match kind {
        0..=2 if step.kind == StepKind::Switch => {
            let choice = pick.index(step.cases.len() + 1);
            let label = step.cases.get(choice).map(|c| c.label.clone());
            Event::Switch(id, label)
        }
        // May be refused (body busy): both schedulers must refuse alike.
        0 if step.kind == StepKind::DoWhile
            && state.loop_iterations.get(&id).copied().unwrap_or(0) < 3 =>
        {
            Event::Iterate(id)
        }
        0..=2 => Event::Complete(id),
        3 | 4 => Event::Fail(id),
        5 => Event::Timeout(id),
        _ => Event::Skip(id),
    })
}

fn apply(s: &mut Scheduler, e: &Event) -> Result<Vec<String>, FlowError> {
    match e {
        Event::Complete(id) => s.complete(id),
        Event::Switch(id, label) => s.complete_switch(id, label.as_deref()),
        Event::Iterate(id) => s.next_iteration(id),
        Event::Fail(id) => s.fail(id),
        Event::Timeout(id) => s.timeout(id),
        Event::Skip(id) => s.skip(id),
    }
}

fn flow_and_scheduler(
    gens: &[flow_gen::StepGen],
    cap: Option<usize>,
    excluded: &[Index],
) -> (Flow, Scheduler) {
    let flow = build_flow(gens, cap);
    let n = flow.steps.len();
    let excluded: BTreeSet<String> = excluded
        .iter()
        .map(|i| format!("s{}", i.index(n)))
        .collect();
    let mut sch = Scheduler::with_excluded(flow.clone(), &excluded).unwrap();
    sch.start().unwrap();
    sch.take_skipped();
    (flow, sch)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn a_restored_scheduler_behaves_exactly_like_the_original(
        gens in prop::collection::vec(step_gen(), 1..30),
        cap in prop::option::of(1usize..3),
        excluded in prop::collection::vec(any::<Index>(), 0..3),
        events in prop::collection::vec((0u8..8, any::<Index>()), 0..120),
        split in any::<Index>(),
    ) {
        let (flow, mut original) = flow_and_scheduler(&gens, cap, &excluded);
        let split = split.index(events.len() + 1);
        let mut restored: Option<Scheduler> = None;
        for (k, (kind, pick)) in events.iter().enumerate() {
            if k == split {
                let (mut r, ready) = Scheduler::restore(flow.clone(), &original.state()).unwrap();
                prop_assert_eq!(ready, Vec::<String>::new());
                prop_assert_eq!(r.take_skipped(), vec![]);
                prop_assert_eq!(r.state(), original.state());
                prop_assert_eq!(r.held(), original.held());
                prop_assert_eq!(r.is_complete(), original.is_complete());
                restored = Some(r);
            }
            let Some(e) = pick_event(&flow, &original.state(), *kind, *pick) else { continue };
            let want = apply(&mut original, &e);
            let want_skips = original.take_skipped();
            if let Some(r) = restored.as_mut() {
                prop_assert_eq!(apply(r, &e), want, "{:?}", e);
                prop_assert_eq!(r.take_skipped(), want_skips);
                prop_assert_eq!(r.state(), original.state());
                prop_assert_eq!(r.held(), original.held());
                prop_assert_eq!(r.is_complete(), original.is_complete());
            }
        }
    }

    #[test]
    fn restore_hands_out_exactly_the_unpersisted_steps_that_are_ready(
        gens in prop::collection::vec(step_gen(), 1..30),
        cap in prop::option::of(1usize..3),
        excluded in prop::collection::vec(any::<Index>(), 0..3),
        events in prop::collection::vec((0u8..8, any::<Index>()), 0..80),
        drop_mask in prop::collection::vec(any::<bool>(), 30),
    ) {
        let (flow, mut original) = flow_and_scheduler(&gens, cap, &excluded);
        for (kind, pick) in &events {
            if let Some(e) = pick_event(&flow, &original.state(), *kind, *pick) {
                let _ = apply(&mut original, &e);
            }
        }
        let mut st = original.state();
        let mut dropped: BTreeSet<String> = st
            .in_flight
            .iter()
            .enumerate()
            .filter(|(k, _)| drop_mask[*k % drop_mask.len()])
            .map(|(_, id)| id.clone())
            .collect();
        // A loop never persisted as started cannot have started the body
        // steps it gates either.
        for l in dropped.clone() {
            let step = flow.step(&l).unwrap();
            for b in &step.loop_body {
                if st.in_flight.contains(b) && flow.step(b).unwrap().deps.contains(&l) {
                    dropped.insert(b.clone());
                }
            }
        }
        for id in &dropped {
            st.in_flight.remove(id);
        }

        let (mut restored, ready) = Scheduler::restore(flow.clone(), &st).unwrap();
        let skipped: BTreeSet<(String, SkipReason)> = restored.take_skipped().into_iter().collect();
        let mut want_state = st.clone();
        let (want_ready, want_skips) = settle(&flow, &mut want_state);
        let ready_set: BTreeSet<String> = ready.iter().cloned().collect();
        prop_assert_eq!(ready.len(), ready_set.len());
        prop_assert_eq!(&ready_set, &want_ready);
        prop_assert_eq!(&skipped, &want_skips);
        prop_assert_eq!(restored.state(), want_state);
        // Unless a dropped id is now skipped (a do-while that counted as
        // done for it was skipped or failed since, and its dependents follow
        // the skip), nothing else comes back: only dropped ids, held
        // siblings taking the batch slots dropped ids freed, and the body
        // steps a do-while among those opens.
        if skipped.is_empty() {
            let held_before: BTreeSet<String> = original.held().into_iter().collect();
            let opened: BTreeSet<&String> = ready_set
                .iter()
                .flat_map(|l| flow.step(l).unwrap().loop_body.iter())
                .collect();
            for id in &ready_set {
                prop_assert!(
                    dropped.contains(id) || held_before.contains(id) || opened.contains(id),
                    "{} handed out", id
                );
            }
        }
        if cap.is_none() {
            prop_assert!(restored.held().is_empty());
        }
    }
}
