//! The incremental scheduler: the decisions of [`crate::flow::decide`],
//! maintained event by event at a cost proportional to the out-degree of the
//! step that changed, not to the size of the flow.
//!
//! Each step keeps a [`DepCounts`] of its dependencies' outcomes. When a step
//! changes state, only its dependents' counters move, and only those
//! dependents are re-judged with the same [`decide_trigger`] the pure
//! functions use. Ids are mapped to integer indices once, at construction.

mod restore;

use super::decide::{
    contribution, decide_trigger, resolve_switch, switch_exclusions, DepCounts, TriggerDecision,
};
use super::error::FlowError;
use super::spec::{Flow, StepKind, TriggerRule};
use super::state::{SchedulerState, SkipReason, StepOutcome, SwitchResult};
use super::validate::validate;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// A step's state inside the scheduler. `Held` is "ready, not yet handed
/// out": waiting for a batch slot, or for the end of the current event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Pending,
    Held,
    InFlight,
    Done,
    Failed,
    TimedOut,
    Skipped(SkipReason),
}

impl Status {
    fn outcome(self) -> StepOutcome {
        match self {
            Status::Pending | Status::Held => StepOutcome::Pending,
            Status::InFlight => StepOutcome::InFlight,
            Status::Done => StepOutcome::Done,
            Status::Failed => StepOutcome::Failed,
            Status::TimedOut => StepOutcome::TimedOut,
            Status::Skipped(r) => StepOutcome::Skipped(r),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Held => "held",
            Status::InFlight => "in_flight",
            Status::Done => "done",
            Status::Failed => "failed",
            Status::TimedOut => "timed_out",
            Status::Skipped(_) => "skipped",
        }
    }

    fn is_waiting(self) -> bool {
        matches!(self, Status::Pending | Status::Held)
    }
}

/// An incremental scheduler over a validated [`Flow`].
///
/// Every id it returns is *dispatched*: it counts as in flight (and against
/// its batch cap) until the caller reports `complete`, `fail`, `timeout` or
/// `skip` for it. Each event returns the steps that became ready because of
/// it, in flow order; steps that can never run are recorded as skipped with
/// their reason and can be collected with [`Scheduler::take_skipped`].
///
/// After every event, [`Scheduler::state`] is a state in which
/// [`crate::flow::propagate_skips`] has nothing left to report and
/// [`crate::flow::ready_in_batch`] of [`crate::flow::ready_steps`] is empty —
/// the property test checks exactly that agreement.
///
/// Retries are the caller's business: while a step is retried it simply
/// stays in flight; report `fail`/`timeout` only when the budget is spent.
#[derive(Debug, Clone)]
pub struct Scheduler {
    flow: Flow,
    ids: Vec<String>,
    index: HashMap<String, u32>,
    kinds: Vec<StepKind>,
    rules: Vec<TriggerRule>,
    dependents: Vec<Vec<u32>>,
    /// Sorted body members of each do-while (empty for other steps).
    loop_body: Vec<Vec<u32>>,
    status: Vec<Status>,
    counts: Vec<DepCounts>,
    batch_of: Vec<Option<u32>>,
    batch_running: Vec<usize>,
    batch_held: Vec<BTreeSet<u32>>,
    batch_cap: usize,
    launch_excluded: BTreeSet<u32>,
    switch_results: BTreeMap<String, SwitchResult>,
    loop_iterations: Vec<u32>,
    started: bool,
    settled: usize,
    worklist: Vec<u32>,
    ready_unbatched: Vec<u32>,
    dirty_batches: Vec<u32>,
    newly_ready: Vec<u32>,
    skipped_log: Vec<(String, SkipReason)>,
}

impl Scheduler {
    /// Validates `flow` (see [`crate::flow::validate()`]) and builds the scheduler.
    pub fn new(flow: Flow) -> Result<Scheduler, FlowError> {
        Self::with_excluded(flow, std::iter::empty::<&str>())
    }

    /// Like [`Scheduler::new`], with steps excluded at launch (typically
    /// [`crate::flow::manifest_steps`]); they are skipped with reason
    /// `excluded` by [`Scheduler::start`].
    pub fn with_excluded(
        flow: Flow,
        excluded: impl IntoIterator<Item = impl AsRef<str>>,
    ) -> Result<Scheduler, FlowError> {
        let errors = validate(&flow);
        if !errors.is_empty() {
            return Err(FlowError::Invalid(errors));
        }
        let n = flow.steps.len();
        let ids: Vec<String> = flow.steps.iter().map(|s| s.id.clone()).collect();
        let index: HashMap<String, u32> = ids
            .iter()
            .enumerate()
            .map(|(i, id)| (id.clone(), i as u32))
            .collect();
        let mut dependents: Vec<Vec<u32>> = vec![Vec::new(); n];
        let mut counts = vec![DepCounts::default(); n];
        let mut batch_names: HashMap<&str, u32> = HashMap::new();
        let mut batch_of = Vec::with_capacity(n);
        let mut loop_body = vec![Vec::new(); n];
        for (i, s) in flow.steps.iter().enumerate() {
            let mut deps: Vec<u32> = s.deps.iter().map(|d| index[d.as_str()]).collect();
            deps.sort_unstable();
            deps.dedup();
            counts[i].total = deps.len();
            for d in deps {
                dependents[d as usize].push(i as u32);
            }
            batch_of.push(s.batch.as_deref().map(|b| {
                let next = batch_names.len() as u32;
                *batch_names.entry(b).or_insert(next)
            }));
            if s.kind == StepKind::DoWhile {
                let mut body: Vec<u32> = s.loop_body.iter().map(|b| index[b.as_str()]).collect();
                body.sort_unstable();
                body.dedup();
                loop_body[i] = body;
            }
        }
        let mut launch_excluded = BTreeSet::new();
        for e in excluded {
            let e = e.as_ref();
            match index.get(e) {
                Some(&i) => {
                    launch_excluded.insert(i);
                }
                None => return Err(FlowError::UnknownStep(e.to_string())),
            }
        }
        let groups = batch_names.len();
        Ok(Scheduler {
            kinds: flow.steps.iter().map(|s| s.kind).collect(),
            rules: flow.steps.iter().map(|s| s.trigger_rule).collect(),
            batch_cap: flow.batch_config.max_concurrent.unwrap_or(usize::MAX),
            flow,
            ids,
            index,
            dependents,
            loop_body,
            status: vec![Status::Pending; n],
            counts,
            batch_of,
            batch_running: vec![0; groups],
            batch_held: vec![BTreeSet::new(); groups],
            launch_excluded,
            switch_results: BTreeMap::new(),
            loop_iterations: vec![0; n],
            started: false,
            settled: 0,
            worklist: Vec::new(),
            ready_unbatched: Vec::new(),
            dirty_batches: Vec::new(),
            newly_ready: Vec::new(),
            skipped_log: Vec::new(),
        })
    }

    /// Starts the run: skips the launch-excluded steps and returns the steps
    /// ready at once. O(steps + edges).
    pub fn start(&mut self) -> Result<Vec<String>, FlowError> {
        if self.started {
            return Err(FlowError::AlreadyStarted);
        }
        self.started = true;
        let excluded: Vec<u32> = self.launch_excluded.iter().copied().collect();
        for i in excluded {
            self.set_status(i, Status::Skipped(SkipReason::Excluded));
        }
        self.worklist.extend((0..self.ids.len() as u32).rev());
        Ok(self.finish_event())
    }

    /// Records that an in-flight step finished successfully; returns the
    /// newly ready steps. A switch must use [`Scheduler::complete_switch`].
    pub fn complete(&mut self, id: &str) -> Result<Vec<String>, FlowError> {
        let i = self.in_flight_step(id, "complete")?;
        if self.kinds[i as usize] == StepKind::Switch {
            return Err(FlowError::SwitchOutcomeRequired(id.to_string()));
        }
        self.set_status(i, Status::Done);
        Ok(self.finish_event())
    }

    /// Records that an in-flight switch finished choosing the case labelled
    /// `chosen` (`None`: no case matched): excludes the untaken branches
    /// (see [`crate::flow::switch_exclusions`]) with reason
    /// `branch_not_taken` and returns the newly ready steps.
    pub fn complete_switch(
        &mut self,
        id: &str,
        chosen: Option<&str>,
    ) -> Result<Vec<String>, FlowError> {
        let i = self.lookup(id)?;
        if self.kinds[i as usize] != StepKind::Switch {
            return Err(FlowError::NotASwitch(id.to_string()));
        }
        let step = &self.flow.steps[i as usize];
        let chosen_index = match chosen {
            None => None,
            Some(label) => match step.cases.iter().position(|c| c.label == label) {
                Some(p) => Some(p),
                None => {
                    return Err(FlowError::UnknownCase {
                        step: id.to_string(),
                        label: label.to_string(),
                    })
                }
            },
        };
        self.in_flight_step(id, "complete")?;
        let excluded = switch_exclusions(step, chosen_index);
        self.set_status(i, Status::Done);
        for e in &excluded {
            let j = self.index[e.as_str()];
            if self.status[j as usize].is_waiting() {
                self.set_status(j, Status::Skipped(SkipReason::BranchNotTaken));
            }
        }
        self.switch_results.insert(
            id.to_string(),
            SwitchResult {
                chosen: chosen.map(str::to_string),
                excluded: excluded.into_iter().collect(),
            },
        );
        Ok(self.finish_event())
    }

    /// [`Scheduler::complete_switch`] with the case chosen by
    /// [`crate::flow::resolve_switch`] on `ctx`.
    pub fn complete_switch_with(
        &mut self,
        id: &str,
        ctx: &Value,
    ) -> Result<Vec<String>, FlowError> {
        let i = self.lookup(id)?;
        let (chosen, _) = resolve_switch(&self.flow.steps[i as usize], ctx);
        self.complete_switch(id, chosen.as_deref())
    }

    /// Records that an in-flight step failed for good; its dependents are
    /// judged by their trigger rules (`upstream_failed` propagation).
    pub fn fail(&mut self, id: &str) -> Result<Vec<String>, FlowError> {
        let i = self.in_flight_step(id, "fail")?;
        self.set_status(i, Status::Failed);
        Ok(self.finish_event())
    }

    /// Records that an in-flight step timed out for good (counts as failed).
    pub fn timeout(&mut self, id: &str) -> Result<Vec<String>, FlowError> {
        let i = self.in_flight_step(id, "timeout")?;
        self.set_status(i, Status::TimedOut);
        Ok(self.finish_event())
    }

    /// Records a deliberate skip (reason `condition_false`) of a step that
    /// has not finished: pending, held or in flight.
    pub fn skip(&mut self, id: &str) -> Result<Vec<String>, FlowError> {
        let i = self.started_step(id)?;
        let s = self.status[i as usize];
        if !matches!(s, Status::Pending | Status::Held | Status::InFlight) {
            return Err(self.transition_error(i, "skip"));
        }
        self.set_status(i, Status::Skipped(SkipReason::ConditionFalse));
        Ok(self.finish_event())
    }

    /// Starts another iteration of an in-flight do-while whose body steps
    /// have all finished: the body steps become pending again (their
    /// dependents' counters are rolled back, a body switch forgets its
    /// decision; launch-excluded steps stay excluded) and the ready ones are
    /// returned.
    /// The caller decides *whether* to iterate with
    /// [`crate::flow::is_loop_terminated`], and ends the loop with
    /// [`Scheduler::complete`].
    pub fn next_iteration(&mut self, id: &str) -> Result<Vec<String>, FlowError> {
        let i = self.lookup(id)?;
        if self.kinds[i as usize] != StepKind::DoWhile {
            return Err(FlowError::NotALoop(id.to_string()));
        }
        self.in_flight_step(id, "iterate")?;
        let body = self.loop_body[i as usize].clone();
        if let Some(&b) = body
            .iter()
            .find(|&&b| !self.status[b as usize].outcome().is_settled())
        {
            return Err(FlowError::LoopBodyBusy {
                step: id.to_string(),
                body: self.ids[b as usize].clone(),
            });
        }
        self.loop_iterations[i as usize] += 1;
        let body: Vec<u32> = body
            .into_iter()
            .filter(|b| !self.launch_excluded.contains(b))
            .collect();
        for &b in &body {
            self.set_status(b, Status::Pending);
            if self.kinds[b as usize] == StepKind::Switch {
                self.switch_results.remove(&self.ids[b as usize]);
            }
        }
        self.worklist.extend(body.iter().rev());
        Ok(self.finish_event())
    }

    /// The skips recorded since the last call (propagated ones included),
    /// in the order they happened.
    pub fn take_skipped(&mut self) -> Vec<(String, SkipReason)> {
        std::mem::take(&mut self.skipped_log)
    }

    /// How `id` stands (a held step is `Pending`).
    pub fn outcome(&self, id: &str) -> Result<StepOutcome, FlowError> {
        Ok(self.status[self.lookup(id)? as usize].outcome())
    }

    /// Steps ready but waiting for a batch slot, in flow order.
    pub fn held(&self) -> Vec<String> {
        self.ids_where(|s| s == Status::Held)
    }

    /// Steps in flight, in flow order.
    pub fn in_flight(&self) -> Vec<String> {
        self.ids_where(|s| s == Status::InFlight)
    }

    /// True when every step is done, failed, timed out or skipped. O(1).
    pub fn is_complete(&self) -> bool {
        self.settled == self.ids.len()
    }

    /// Completed iterations of a do-while (0 for other steps).
    pub fn loop_iterations(&self, id: &str) -> Result<u32, FlowError> {
        Ok(self.loop_iterations[self.lookup(id)? as usize])
    }

    /// The flow being scheduled.
    pub fn flow(&self) -> &Flow {
        &self.flow
    }

    /// A snapshot as a [`SchedulerState`] (for persistence, or for the pure
    /// functions). O(steps).
    pub fn state(&self) -> SchedulerState {
        let mut st = SchedulerState::new();
        for (i, s) in self.status.iter().enumerate() {
            let id = self.ids[i].clone();
            match s {
                Status::Pending | Status::Held => {}
                Status::InFlight => {
                    st.in_flight.insert(id);
                }
                Status::Done => {
                    st.done.insert(id);
                }
                Status::Failed => {
                    st.failed.insert(id);
                }
                Status::TimedOut => {
                    st.timed_out.insert(id);
                }
                Status::Skipped(r) => {
                    st.skipped.insert(id, *r);
                }
            }
        }
        st.excluded = self
            .launch_excluded
            .iter()
            .map(|&i| self.ids[i as usize].clone())
            .collect();
        st.switch_results = self.switch_results.clone();
        st.loop_iterations = self
            .loop_iterations
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(i, &n)| (self.ids[i].clone(), n))
            .collect();
        st
    }

    fn ids_where(&self, f: impl Fn(Status) -> bool) -> Vec<String> {
        self.status
            .iter()
            .enumerate()
            .filter(|(_, &s)| f(s))
            .map(|(i, _)| self.ids[i].clone())
            .collect()
    }

    fn lookup(&self, id: &str) -> Result<u32, FlowError> {
        self.index
            .get(id)
            .copied()
            .ok_or_else(|| FlowError::UnknownStep(id.to_string()))
    }

    fn started_step(&self, id: &str) -> Result<u32, FlowError> {
        let i = self.lookup(id)?;
        if !self.started {
            return Err(FlowError::NotStarted);
        }
        Ok(i)
    }

    fn in_flight_step(&self, id: &str, event: &'static str) -> Result<u32, FlowError> {
        let i = self.started_step(id)?;
        if self.status[i as usize] != Status::InFlight {
            return Err(self.transition_error(i, event));
        }
        Ok(i)
    }

    fn transition_error(&self, i: u32, event: &'static str) -> FlowError {
        FlowError::InvalidTransition {
            step: self.ids[i as usize].clone(),
            event,
            state: self.status[i as usize].name(),
        }
    }

    fn in_body(&self, dep: u32, dependent: u32) -> bool {
        self.kinds[dep as usize] == StepKind::DoWhile
            && self.loop_body[dep as usize]
                .binary_search(&dependent)
                .is_ok()
    }

    /// Moves step `i` to `new`, keeping counters, batch bookkeeping and the
    /// worklist of dependents to re-judge in sync. O(out-degree of `i`).
    fn set_status(&mut self, i: u32, new: Status) {
        let iu = i as usize;
        let old = self.status[iu];
        if old == new {
            return;
        }
        let (old_outcome, new_outcome) = (old.outcome(), new.outcome());
        match (old_outcome.is_settled(), new_outcome.is_settled()) {
            (false, true) => self.settled += 1,
            (true, false) => self.settled -= 1,
            _ => {}
        }
        if let Some(b) = self.batch_of[iu] {
            let bu = b as usize;
            if old == Status::InFlight {
                self.batch_running[bu] -= 1;
                self.dirty_batches.push(b);
            }
            if new == Status::InFlight {
                self.batch_running[bu] += 1;
            }
            if old == Status::Held {
                self.batch_held[bu].remove(&i);
            }
            if new == Status::Held {
                self.batch_held[bu].insert(i);
                self.dirty_batches.push(b);
            }
        } else if new == Status::Held {
            self.ready_unbatched.push(i);
        }
        self.status[iu] = new;
        if old_outcome != new_outcome {
            for k in 0..self.dependents[iu].len() {
                let d = self.dependents[iu][k];
                let in_body = self.in_body(i, d);
                let (was, now) = (
                    contribution(old_outcome, in_body),
                    contribution(new_outcome, in_body),
                );
                if was != now {
                    let c = &mut self.counts[d as usize];
                    was.remove_from(c);
                    now.add_to(c);
                    if self.status[d as usize].is_waiting() {
                        self.worklist.push(d);
                    }
                }
            }
        }
        if let Status::Skipped(r) = new {
            self.skipped_log.push((self.ids[iu].clone(), r));
        }
    }

    /// Re-judges the worklist to a fixpoint (skips propagate transitively),
    /// then hands out every ready step the batch caps allow — in flow order
    /// within a batch — and repeats while handing out woke more steps
    /// (a running do-while wakes its body). Returns the handed-out ids in
    /// flow order.
    fn finish_event(&mut self) -> Vec<String> {
        loop {
            while let Some(d) = self.worklist.pop() {
                let status = self.status[d as usize];
                if !status.is_waiting() {
                    continue;
                }
                match decide_trigger(self.rules[d as usize], &self.counts[d as usize]) {
                    TriggerDecision::Run => {
                        if status == Status::Pending {
                            self.set_status(d, Status::Held);
                        }
                    }
                    TriggerDecision::Wait => {
                        if status == Status::Held {
                            self.set_status(d, Status::Pending);
                        }
                    }
                    TriggerDecision::Skip(r) => self.set_status(d, Status::Skipped(r)),
                }
            }
            for i in std::mem::take(&mut self.ready_unbatched) {
                if self.status[i as usize] == Status::Held {
                    self.set_status(i, Status::InFlight);
                    self.newly_ready.push(i);
                }
            }
            while let Some(b) = self.dirty_batches.pop() {
                let bu = b as usize;
                while self.batch_running[bu] < self.batch_cap {
                    let Some(&first) = self.batch_held[bu].first() else {
                        break;
                    };
                    self.set_status(first, Status::InFlight);
                    self.newly_ready.push(first);
                }
            }
            if self.worklist.is_empty() {
                break;
            }
        }
        let mut ready = std::mem::take(&mut self.newly_ready);
        ready.sort_unstable();
        ready.dedup();
        ready
            .into_iter()
            .map(|i| self.ids[i as usize].clone())
            .collect()
    }
}
