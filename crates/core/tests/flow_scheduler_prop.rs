//! Property: on random DAGs (random rules, batches, switches, do-whiles,
//! launch exclusions) and random event orders, the incremental `Scheduler`
//! agrees exactly with a reference run driven only by the pure functions
//! (`propagate_skips`, `ready_steps`, `ready_in_batch`) on the same state:
//! same newly ready steps, same skips with the same reasons, same state.

mod flow_gen;

use coderig::flow::{
    is_run_complete, switch_exclusions, Scheduler, SchedulerState, SkipReason, StepKind,
    SwitchResult,
};
use flow_gen::{build_flow, settle, step_gen};
use proptest::prelude::*;
use proptest::sample::Index;
use std::collections::BTreeSet;

fn sorted_skips(v: Vec<(String, SkipReason)>) -> BTreeSet<(String, SkipReason)> {
    v.into_iter().collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn scheduler_agrees_with_the_pure_decisions(
        gens in prop::collection::vec(step_gen(), 1..30),
        cap in prop::option::of(1usize..3),
        excluded in prop::collection::vec(any::<Index>(), 0..3),
        events in prop::collection::vec((0u8..8, any::<Index>()), 0..120),
    ) {
        let flow = build_flow(&gens, cap);
        let n = flow.steps.len();
        let excluded: BTreeSet<String> = excluded.iter().map(|i| format!("s{}", i.index(n))).collect();
        let mut sch = Scheduler::with_excluded(flow.clone(), &excluded).unwrap();
        let mut st = SchedulerState { excluded: excluded.clone(), ..Default::default() };

        let got = sch.start().unwrap();
        let (want, want_skips) = settle(&flow, &mut st);
        prop_assert_eq!(got.into_iter().collect::<BTreeSet<_>>(), want);
        prop_assert_eq!(sorted_skips(sch.take_skipped()), want_skips);
        prop_assert_eq!(&sch.state(), &st);

        for (kind, pick) in events {
            let in_flight: Vec<String> = st.in_flight.iter().cloned().collect();
            let pending: Vec<String> = flow
                .steps
                .iter()
                .map(|s| s.id.clone())
                .filter(|id| st.outcome(id) == coderig::flow::StepOutcome::Pending)
                .collect();
            let mut runtime_skip = None;
            let got = if kind == 7 {
                // A runtime skip of a step that has not started.
                if pending.is_empty() { continue; }
                let id = pending[pick.index(pending.len())].clone();
                st.skipped.insert(id.clone(), SkipReason::ConditionFalse);
                runtime_skip = Some(id.clone());
                sch.skip(&id).unwrap()
            } else {
                if in_flight.is_empty() { continue; }
                let id = in_flight[pick.index(in_flight.len())].clone();
                let step = flow.step(&id).unwrap();
                match kind {
                    0..=2 if step.kind == StepKind::Switch => {
                        // Pick a case (or none) with the same index.
                        let choice = pick.index(step.cases.len() + 1);
                        let chosen = (choice < step.cases.len()).then_some(choice);
                        let label = chosen.map(|c| step.cases[c].label.clone());
                        st.in_flight.remove(&id);
                        st.done.insert(id.clone());
                        st.switch_results.insert(id.clone(), SwitchResult {
                            chosen: label.clone(),
                            excluded: switch_exclusions(step, chosen).into_iter().collect(),
                        });
                        sch.complete_switch(&id, label.as_deref()).unwrap()
                    }
                    0 if step.kind == StepKind::DoWhile
                        && st.loop_iterations.get(&id).copied().unwrap_or(0) < 2
                        && step.loop_body.iter().all(|b| coderig::flow::StepOutcome::is_settled(st.outcome(b))) =>
                    {
                        *st.loop_iterations.entry(id.clone()).or_default() += 1;
                        for b in step.loop_body.iter().filter(|b| !st.excluded.contains(*b)) {
                            st.done.remove(b);
                            st.failed.remove(b);
                            st.timed_out.remove(b);
                            st.skipped.remove(b);
                        }
                        sch.next_iteration(&id).unwrap()
                    }
                    0..=2 => {
                        st.in_flight.remove(&id);
                        st.done.insert(id.clone());
                        sch.complete(&id).unwrap()
                    }
                    3 | 4 => {
                        st.in_flight.remove(&id);
                        st.failed.insert(id.clone());
                        sch.fail(&id).unwrap()
                    }
                    5 => {
                        st.in_flight.remove(&id);
                        st.timed_out.insert(id.clone());
                        sch.timeout(&id).unwrap()
                    }
                    _ => {
                        st.in_flight.remove(&id);
                        st.skipped.insert(id.clone(), SkipReason::ConditionFalse);
                        runtime_skip = Some(id.clone());
                        sch.skip(&id).unwrap()
                    }
                }
            };
            let (want, mut want_skips) = settle(&flow, &mut st);
            if let Some(id) = runtime_skip {
                want_skips.insert((id, SkipReason::ConditionFalse));
            }
            prop_assert_eq!(got.into_iter().collect::<BTreeSet<_>>(), want);
            prop_assert_eq!(sorted_skips(sch.take_skipped()), want_skips);
            prop_assert_eq!(&sch.state(), &st);
            prop_assert_eq!(sch.is_complete(), is_run_complete(&flow, &st));
        }
    }
}
