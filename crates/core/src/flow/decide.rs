//! Pure scheduling decisions: functions of a [`Flow`], a [`SchedulerState`]
//! and (for conditions) a caller-given context. No IO, no clock.
//!
//! The incremental [`crate::flow::Scheduler`] uses the same
//! [`decide_trigger`] on counters it keeps up to date, so the two can only
//! disagree about *which* counts they feed it, which the property test pins.

use super::spec::{Flow, Step, StepKind, TriggerRule};
use super::state::{SchedulerState, SkipReason, StepOutcome};
use crate::names::macros::named_enum;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// The outcomes of one step's dependencies, by category.
///
/// `failed` counts failed and timed-out dependencies; `upstream_failed`
/// counts dependencies skipped because of a failure upstream; `skipped`
/// counts deliberately skipped ones (`branch_not_taken`, `condition_false`,
/// `excluded`). The rest of `total` is still pending or running.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DepCounts {
    /// Number of distinct dependencies.
    pub total: usize,
    /// Done (or a running do-while, for its own body steps).
    pub success: usize,
    /// Failed or timed out.
    pub failed: usize,
    /// Skipped with reason `upstream_failed`.
    pub upstream_failed: usize,
    /// Skipped deliberately.
    pub skipped: usize,
}

impl DepCounts {
    /// Dependencies whose outcome is known.
    pub fn settled(&self) -> usize {
        self.success + self.failed + self.upstream_failed + self.skipped
    }

    /// Dependencies still pending or running.
    pub fn pending(&self) -> usize {
        self.total.saturating_sub(self.settled())
    }
}

/// What a trigger rule says about a not-yet-started step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TriggerDecision {
    /// It may run now.
    Run,
    /// It cannot decide yet: some dependency is unsettled.
    Wait,
    /// It can never run, for this reason.
    Skip(SkipReason),
}

/// The trigger rule table (see the [`crate::flow`] module docs), as a pure
/// function of the dependency counts. A step without dependencies always runs.
///
/// Decisions only move from `Wait` to `Run` or `Skip` as dependencies settle,
/// and a `Run`/`Skip` never flips back while counts only grow.
pub fn decide_trigger(rule: TriggerRule, c: &DepCounts) -> TriggerDecision {
    use TriggerDecision::{Run, Skip, Wait};
    use TriggerRule as R;
    if c.total == 0 {
        return Run;
    }
    let all_settled = c.pending() == 0;
    let any_failure = c.failed + c.upstream_failed > 0;
    let not_yet =
        |settled_outcome: TriggerDecision| if all_settled { settled_outcome } else { Wait };
    match rule {
        R::Always => Run,
        R::AllSuccess | R::NoneFailed => {
            if any_failure {
                Skip(SkipReason::UpstreamFailed)
            } else {
                not_yet(Run)
            }
        }
        R::NoneFailedMinOneSuccess => {
            if any_failure {
                Skip(SkipReason::UpstreamFailed)
            } else if c.success > 0 {
                not_yet(Run)
            } else {
                not_yet(Skip(SkipReason::ConditionFalse))
            }
        }
        R::AllFailed => {
            if c.success + c.skipped > 0 {
                Skip(SkipReason::ConditionFalse)
            } else {
                not_yet(Run)
            }
        }
        R::AllDone => not_yet(Run),
        R::AllSkipped => {
            if c.success + c.failed + c.upstream_failed > 0 {
                Skip(SkipReason::ConditionFalse)
            } else {
                not_yet(Run)
            }
        }
        R::OneSuccess => {
            if c.success > 0 {
                Run
            } else if any_failure {
                not_yet(Skip(SkipReason::UpstreamFailed))
            } else {
                not_yet(Skip(SkipReason::ConditionFalse))
            }
        }
        R::OneFailed => {
            if any_failure {
                Run
            } else {
                not_yet(Skip(SkipReason::ConditionFalse))
            }
        }
        R::OneDone => {
            if c.success + c.failed > 0 {
                Run
            } else {
                not_yet(Skip(SkipReason::ConditionFalse))
            }
        }
        R::NoneSkipped => {
            if c.skipped > 0 {
                Skip(SkipReason::ConditionFalse)
            } else {
                not_yet(Run)
            }
        }
    }
}

/// Which counter a dependency in `outcome` feeds. `dependent_in_body` is true
/// when the dependency is a do-while whose loop body contains the dependent.
pub(crate) fn contribution(outcome: StepOutcome, dependent_in_body: bool) -> Contribution {
    match outcome {
        StepOutcome::Done => Contribution::Success,
        StepOutcome::InFlight if dependent_in_body => Contribution::Success,
        StepOutcome::Pending | StepOutcome::InFlight => Contribution::None,
        StepOutcome::Failed | StepOutcome::TimedOut => Contribution::Failed,
        StepOutcome::Skipped(SkipReason::UpstreamFailed) => Contribution::UpstreamFailed,
        StepOutcome::Skipped(_) => Contribution::Skipped,
    }
}

/// One dependency's share of [`DepCounts`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Contribution {
    None,
    Success,
    Failed,
    UpstreamFailed,
    Skipped,
}

impl Contribution {
    pub(crate) fn add_to(self, c: &mut DepCounts) {
        match self {
            Contribution::None => {}
            Contribution::Success => c.success += 1,
            Contribution::Failed => c.failed += 1,
            Contribution::UpstreamFailed => c.upstream_failed += 1,
            Contribution::Skipped => c.skipped += 1,
        }
    }

    pub(crate) fn remove_from(self, c: &mut DepCounts) {
        match self {
            Contribution::None => {}
            Contribution::Success => c.success -= 1,
            Contribution::Failed => c.failed -= 1,
            Contribution::UpstreamFailed => c.upstream_failed -= 1,
            Contribution::Skipped => c.skipped -= 1,
        }
    }
}

/// Calls `f` once per distinct id of `deps`, in order. Dependency lists are
/// usually short, and a scan beats allocating a set for every step on every
/// call; long lists (a big fan-in join) use a set to stay linear.
fn for_each_distinct<'a>(deps: &'a [String], mut f: impl FnMut(&'a str)) {
    if deps.len() <= 16 {
        for (k, d) in deps.iter().enumerate() {
            if !deps[..k].contains(d) {
                f(d);
            }
        }
    } else {
        let mut seen = HashSet::with_capacity(deps.len());
        for d in deps {
            if seen.insert(d.as_str()) {
                f(d);
            }
        }
    }
}

/// Counts `deps` by their outcome in `state` (duplicates counted once).
///
/// This flow-less form knows nothing of do-while bodies: a running do-while
/// counts as unsettled here; [`ready_steps`] applies the body rule.
pub fn dep_counts(deps: &[String], state: &SchedulerState) -> DepCounts {
    let mut c = DepCounts::default();
    for_each_distinct(deps, |d| {
        c.total += 1;
        contribution(state.outcome(d), false).add_to(&mut c);
    });
    c
}

/// True when `rule` lets a step with these `deps` run now in `state`.
pub fn evaluate_trigger_rule(deps: &[String], state: &SchedulerState, rule: TriggerRule) -> bool {
    decide_trigger(rule, &dep_counts(deps, state)) == TriggerDecision::Run
}

/// Index from step id to step (first occurrence wins).
fn by_id(flow: &Flow) -> HashMap<&str, &Step> {
    let mut m = HashMap::with_capacity(flow.steps.len());
    for s in &flow.steps {
        m.entry(s.id.as_str()).or_insert(s);
    }
    m
}

/// Duplicate ids (an invalid flow) are judged once, by their first step.
fn is_first_with_its_id(step: &Step, steps: &HashMap<&str, &Step>) -> bool {
    steps
        .get(step.id.as_str())
        .is_some_and(|first| std::ptr::eq(*first, step))
}

fn in_loop_body(dep: Option<&&Step>, dependent: &str) -> bool {
    matches!(dep, Some(d) if d.kind == StepKind::DoWhile && d.loop_body.iter().any(|b| b == dependent))
}

/// Counts of `step`'s dependencies with the do-while rule applied, reading
/// outcomes through `outcome` (so callers can layer virtual outcomes).
fn flow_dep_counts(
    step: &Step,
    steps: &HashMap<&str, &Step>,
    outcome: &dyn Fn(&str) -> StepOutcome,
) -> DepCounts {
    let mut c = DepCounts::default();
    for_each_distinct(&step.deps, |d| {
        c.total += 1;
        contribution(outcome(d), in_loop_body(steps.get(d), &step.id)).add_to(&mut c);
    });
    c
}

/// The steps that may start now, in flow order: not started, not excluded,
/// and allowed by their trigger rule. Batch caps are not applied here (see
/// [`ready_in_batch`]); failed and timed-out steps are never offered again.
///
/// A dependency on a running do-while step counts as done for the steps of
/// that do-while's `loop_body`, so the body can run while the loop is open.
pub fn ready_steps(flow: &Flow, state: &SchedulerState) -> Vec<String> {
    let steps = by_id(flow);
    let outcome = |id: &str| state.outcome(id);
    flow.steps
        .iter()
        .filter(|s| is_first_with_its_id(s, &steps))
        .filter(|s| state.outcome(&s.id) == StepOutcome::Pending)
        .filter(|s| {
            decide_trigger(s.trigger_rule, &flow_dep_counts(s, &steps, &outcome))
                == TriggerDecision::Run
        })
        .map(|s| s.id.clone())
        .collect()
}

/// Steps in dependency order (Kahn); steps on a cycle are left out.
fn topological_order(flow: &Flow) -> Vec<&Step> {
    let steps = by_id(flow);
    let mut indegree: HashMap<&str, usize> = HashMap::with_capacity(steps.len());
    let mut dependents: HashMap<&str, Vec<&str>> = HashMap::new();
    for s in steps.values() {
        let deps: BTreeSet<&str> = s
            .deps
            .iter()
            .map(String::as_str)
            .filter(|d| steps.contains_key(d))
            .collect();
        indegree.insert(s.id.as_str(), deps.len());
        for d in deps {
            dependents.entry(d).or_default().push(s.id.as_str());
        }
    }
    let mut queue: Vec<&str> = flow
        .steps
        .iter()
        .map(|s| s.id.as_str())
        .filter(|id| indegree.get(id) == Some(&0))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut order = Vec::with_capacity(steps.len());
    while let Some(id) = queue.pop() {
        order.push(steps[id]);
        for d in dependents.get(id).into_iter().flatten() {
            let n = indegree
                .get_mut(d)
                .expect("every dependent has an indegree");
            *n -= 1;
            if *n == 0 {
                queue.push(d);
            }
        }
    }
    order
}

/// The skips a runtime should record now, in flow order: every not-started
/// step that can never run given `state`, with its reason, transitively (a
/// step whose dependency is reported here is judged as if that skip were
/// already recorded). Steps excluded at launch or by a switch that are not
/// yet in `state.skipped` are reported too (`excluded`, `branch_not_taken`).
///
/// Applying the result to `state.skipped` makes a second call return nothing.
pub fn propagate_skips(flow: &Flow, state: &SchedulerState) -> Vec<(String, SkipReason)> {
    let steps = by_id(flow);
    let mut virtual_skips: HashMap<&str, SkipReason> = HashMap::new();
    for s in topological_order(flow) {
        let own = state.outcome(&s.id);
        let reason = match own {
            StepOutcome::Skipped(r) if !state.skipped.contains_key(&s.id) => Some(r),
            StepOutcome::Pending => {
                let outcome = |id: &str| match virtual_skips.get(id) {
                    Some(r) => StepOutcome::Skipped(*r),
                    None => state.outcome(id),
                };
                match decide_trigger(s.trigger_rule, &flow_dep_counts(s, &steps, &outcome)) {
                    TriggerDecision::Skip(r) => Some(r),
                    _ => None,
                }
            }
            _ => None,
        };
        if let Some(r) = reason {
            virtual_skips.insert(s.id.as_str(), r);
        }
    }
    flow.steps
        .iter()
        .filter(|s| is_first_with_its_id(s, &steps))
        .filter_map(|s| virtual_skips.get(s.id.as_str()).map(|r| (s.id.clone(), *r)))
        .collect()
}

/// One batch group as seen by [`build_batch_state`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchState {
    /// Members of the group currently in flight.
    pub running: BTreeSet<String>,
    /// The group's cap (`None`: unbounded).
    pub max_concurrent: Option<usize>,
    /// The group's join rule.
    pub join_rule: TriggerRule,
}

/// Every batch group named by a step, with its running members.
pub fn build_batch_state(
    flow: &Flow,
    in_flight: &BTreeSet<String>,
) -> BTreeMap<String, BatchState> {
    let mut groups = BTreeMap::new();
    for s in &flow.steps {
        if let Some(b) = &s.batch {
            let g = groups.entry(b.clone()).or_insert_with(|| BatchState {
                running: BTreeSet::new(),
                max_concurrent: flow.batch_config.max_concurrent,
                join_rule: flow.batch_config.join_rule,
            });
            if in_flight.contains(&s.id) {
                g.running.insert(s.id.clone());
            }
        }
    }
    groups
}

/// The subset of `ready_ids` to dispatch now, in their given order: a step
/// outside any batch group always passes; a group admits at most
/// `max_concurrent − running` more (0 running, cap 2, 3 ready → 2).
/// Ids that are not steps of `flow` are dropped.
pub fn ready_in_batch(flow: &Flow, state: &SchedulerState, ready_ids: &[String]) -> Vec<String> {
    let steps = by_id(flow);
    let groups = build_batch_state(flow, &state.in_flight);
    let mut free: HashMap<&str, usize> = groups
        .iter()
        .map(|(name, g)| {
            let cap = g.max_concurrent.unwrap_or(usize::MAX);
            (name.as_str(), cap.saturating_sub(g.running.len()))
        })
        .collect();
    let mut admitted = Vec::new();
    for id in ready_ids {
        let Some(step) = steps.get(id.as_str()) else {
            continue;
        };
        match &step.batch {
            None => admitted.push(id.clone()),
            Some(b) => {
                let slots = free
                    .get_mut(b.as_str())
                    .expect("every batch named by a step has a group");
                if *slots > 0 {
                    *slots -= 1;
                    admitted.push(id.clone());
                }
            }
        }
    }
    admitted
}

/// Whether batch group `batch` as a whole satisfies the flow's join rule,
/// judged over its members like a step depending on all of them; `None`
/// when no step names that group.
pub fn is_batch_joined(flow: &Flow, state: &SchedulerState, batch: &str) -> Option<bool> {
    let members: Vec<String> = flow
        .steps
        .iter()
        .filter(|s| s.batch.as_deref() == Some(batch))
        .map(|s| s.id.clone())
        .collect();
    if members.is_empty() {
        return None;
    }
    Some(evaluate_trigger_rule(
        &members,
        state,
        flow.batch_config.join_rule,
    ))
}

/// The steps excluded when a switch takes case number `chosen` (an index
/// into `step.cases`) or, with `None`, no case: the other cases' steps and,
/// if a case was taken, the default branch. A step listed in the taken
/// branch is never excluded. Order: cases in order, then the default
/// branch; no duplicates.
pub fn switch_exclusions(step: &Step, chosen: Option<usize>) -> Vec<String> {
    let taken: HashSet<&str> = match chosen {
        Some(i) => step
            .cases
            .get(i)
            .map(|c| c.steps.iter().map(String::as_str).collect()),
        None => Some(step.default_branch.iter().map(String::as_str).collect()),
    }
    .unwrap_or_default();
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    let mut push = |id: &String| {
        if !taken.contains(id.as_str()) && seen.insert(id.clone()) {
            out.push(id.clone());
        }
    };
    for (i, case) in step.cases.iter().enumerate() {
        if Some(i) != chosen {
            case.steps.iter().for_each(&mut push);
        }
    }
    if chosen.is_some() {
        step.default_branch.iter().for_each(&mut push);
    }
    out
}

/// Decides a switch on `ctx`: the first case whose condition holds wins and
/// every other case's steps plus the default branch are excluded; with no
/// match the default branch runs and every case's steps are excluded (all of
/// them when there is no default); a switch with no cases excludes nothing.
/// A case without a condition never matches.
pub fn resolve_switch(step: &Step, ctx: &Value) -> (Option<String>, Vec<String>) {
    if step.cases.is_empty() {
        return (None, Vec::new());
    }
    let chosen = step
        .cases
        .iter()
        .position(|c| c.condition.as_ref().is_some_and(|cond| cond.eval(ctx)));
    (
        chosen.map(|i| step.cases[i].label.clone()),
        switch_exclusions(step, chosen),
    )
}

/// Whether a do-while stops after `iterations` completed body runs: true at
/// the cap (`loop_max_iterations`, default 100) or when the loop condition is
/// false on `ctx`. The body always runs once (0 iterations → false unless the
/// cap is 0); a loop without a condition stops after one iteration.
pub fn is_loop_terminated(step: &Step, ctx: &Value, iterations: u32) -> bool {
    if iterations >= step.loop_max_iterations {
        return true;
    }
    if iterations == 0 {
        return false;
    }
    match &step.loop_condition {
        Some(cond) => !cond.eval(ctx),
        None => true,
    }
}

/// True when every step of `flow` is settled (done, failed, timed out,
/// skipped, or excluded at launch or by a switch) and none is in flight.
/// Steps that merely *can never run* count only once their skip is recorded
/// (apply [`propagate_skips`] first).
pub fn is_run_complete(flow: &Flow, state: &SchedulerState) -> bool {
    flow.steps.iter().all(|s| state.outcome(&s.id).is_settled())
}

/// True when the run can make no progress: not complete, nothing in flight,
/// nothing ready and nothing left to skip. A valid flow (see
/// [`crate::flow::validate()`]) driven by these decisions never gets stuck;
/// this catches unknown dependency ids, cycles and inconsistent states.
pub fn is_stuck(flow: &Flow, state: &SchedulerState) -> bool {
    !is_run_complete(flow, state)
        && !flow
            .steps
            .iter()
            .any(|s| state.outcome(&s.id) == StepOutcome::InFlight)
        && ready_steps(flow, state).is_empty()
        && propagate_skips(flow, state).is_empty()
}

/// True while a step that has been retried `retry_count` times may be
/// retried again (`retry_count < max_retries`). No retry policy
/// (`max_retries` of `None`) means no retry.
pub fn should_retry(max_retries: impl Into<Option<u32>>, retry_count: u32) -> bool {
    max_retries.into().is_some_and(|max| retry_count < max)
}

/// Why an attempt failed, as far as retrying is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FailureKind {
    /// The attempt exceeded its timeout.
    Timeout,
    /// The backend asked to slow down (HTTP 429 and the like).
    RateLimited,
    /// A network error, a 5xx, an overloaded backend.
    Transient,
    /// The worker process died mid-attempt.
    Crashed,
    /// The input or the step spec is invalid; the same attempt fails again.
    Validation,
    /// Someone cancelled the step.
    Cancelled,
    /// Any other deterministic error (auth, not found, a bug in the step).
    Permanent,
}
named_enum!(FailureKind, "failure kind", {
    Timeout => "timeout",
    RateLimited => "rate_limited",
    Transient => "transient",
    Crashed => "crashed",
    Validation => "validation",
    Cancelled => "cancelled",
    Permanent => "permanent",
});

/// Whether a failure of this kind may succeed on a new attempt: timeouts,
/// rate limits, transient errors and crashes are retriable; validation
/// errors, cancellations and permanent errors are not (retrying them only
/// burns budget). Combine with [`should_retry`] for the retry budget.
pub fn is_retriable(kind: FailureKind) -> bool {
    matches!(
        kind,
        FailureKind::Timeout
            | FailureKind::RateLimited
            | FailureKind::Transient
            | FailureKind::Crashed
    )
}

/// The steps excluded at launch: those whose `when` guard is false on the
/// launch context `ctx`. Steps without a guard are always included.
pub fn manifest_steps(flow: &Flow, ctx: &Value) -> BTreeSet<String> {
    flow.steps
        .iter()
        .filter(|s| s.when.as_ref().is_some_and(|w| !w.eval(ctx)))
        .map(|s| s.id.clone())
        .collect()
}
