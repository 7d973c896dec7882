//! Generators shared by the scheduler's property tests: random valid flows
//! (rules, batches, switches, do-whiles) and the reference run driven only
//! by the pure functions.

use coderig::flow::{
    propagate_skips, ready_in_batch, ready_steps, BatchConfig, Case, Flow, SchedulerState,
    SkipReason, Step, StepKind, TriggerRule,
};
use proptest::prelude::*;
use proptest::sample::Index;
use std::collections::{BTreeSet, HashSet};

/// One generated step: its dependencies (indices into earlier steps), rule,
/// batch group (0: none) and kind (0 switch, 1 do-while, else code).
#[derive(Debug, Clone)]
pub struct StepGen {
    deps: Vec<Index>,
    rule: usize,
    batch: u8,
    kind: u8,
}

pub fn step_gen() -> impl Strategy<Value = StepGen> {
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
pub fn build_flow(gens: &[StepGen], cap: Option<usize>) -> Flow {
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
pub fn settle(
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
