//! Property: on random DAGs (random rules, batches, switches, do-whiles,
//! launch exclusions) and random event orders, the incremental `Scheduler`
//! agrees exactly with a reference run driven only by the pure functions
//! (`propagate_skips`, `ready_steps`, `ready_in_batch`) on the same state:
//! same newly ready steps, same skips with the same reasons, same state.

use coderig::flow::{
    is_run_complete, propagate_skips, ready_in_batch, ready_steps, switch_exclusions, BatchConfig,
    Case, Flow, Scheduler, SchedulerState, SkipReason, Step, StepKind, SwitchResult, TriggerRule,
};
use proptest::prelude::*;
use proptest::sample::Index;
use std::collections::{BTreeSet, HashSet};

#[derive(Debug, Clone)]
struct StepGen {
    deps: Vec<Index>,
    rule: usize,
    batch: u8,
    kind: u8,
}

fn step_gen() -> impl Strategy<Value = StepGen> {
    (
        prop::collection::vec(any::<Index>(), 0..4),
        0..TriggerRule::ALL.len(),
        0u8..3,
        0u8..10,
    )
        .prop_map(|(deps, rule, batch, kind)| StepGen {
            deps,
            rule,
            batch,
            kind,
        })
}

/// Builds a valid flow: deps point to earlier steps; a switch's cases split
/// its direct dependents; a do-while's body is its remaining plain dependents.
fn build_flow(gens: &[StepGen], cap: Option<usize>) -> Flow {
    let n = gens.len();
    let id = |i: usize| format!("s{i}");
    let mut steps: Vec<Step> = gens
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let kind = match g.kind {
                0 => StepKind::Switch,
                1 => StepKind::DoWhile,
                _ => StepKind::Code,
            };
            let mut s = Step::new(id(i), kind).trigger_rule(TriggerRule::ALL[g.rule]);
            if i > 0 {
                s = s.deps(g.deps.iter().map(|d| id(d.index(i))));
            }
            if g.batch > 0 {
                s = s.batch(format!("b{}", g.batch));
            }
            s
        })
        .collect();
    let dependents = |i: usize, steps: &[Step]| -> Vec<usize> {
        (i + 1..n)
            .filter(|&j| steps[j].deps.contains(&id(i)))
            .collect()
    };
    let mut in_branch: HashSet<usize> = HashSet::new();
    for i in 0..n {
        if steps[i].kind == StepKind::Switch {
            let deps = dependents(i, &steps);
            let mut cases = vec![Vec::new(), Vec::new()];
            let mut default = Vec::new();
            for (k, &j) in deps.iter().enumerate() {
                in_branch.insert(j);
                match k % 3 {
                    2 => default.push(id(j)),
                    c => cases[c].push(id(j)),
                }
            }
            steps[i].cases = cases
                .into_iter()
                .enumerate()
                .map(|(c, ids)| Case::new(format!("c{c}"), ids, |_: &serde_json::Value| false))
                .collect();
            steps[i].default_branch = default;
        }
    }
    for i in 0..n {
        if steps[i].kind == StepKind::DoWhile {
            let body: Vec<String> = dependents(i, &steps)
                .into_iter()
                .filter(|j| !in_branch.contains(j) && steps[*j].kind == StepKind::Code)
                .map(id)
                .collect();
            steps[i].loop_body = body;
        }
    }
    Flow::new(steps).with_batch_config(BatchConfig {
        max_concurrent: cap,
        join_rule: TriggerRule::AllSuccess,
    })
}

/// The pure-function run: propagate skips to a fixpoint, hand out what the
/// batch caps admit, repeat while anything changed.
fn settle(
    flow: &Flow,
    st: &mut SchedulerState,
) -> (BTreeSet<String>, BTreeSet<(String, SkipReason)>) {
    let mut ready = BTreeSet::new();
    let mut skipped = BTreeSet::new();
    loop {
        let skips = propagate_skips(flow, st);
        for (id, r) in &skips {
            st.skipped.insert(id.clone(), *r);
            skipped.insert((id.clone(), *r));
        }
        let admitted = ready_in_batch(flow, st, &ready_steps(flow, st));
        for id in &admitted {
            st.in_flight.insert(id.clone());
            ready.insert(id.clone());
        }
        if skips.is_empty() && admitted.is_empty() {
            return (ready, skipped);
        }
    }
}

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
