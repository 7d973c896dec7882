//! [`Scheduler::restore`]: the scheduler rebuilt from a persisted
//! [`SchedulerState`], without replaying the events that led to it.
//!
//! Everything a [`Scheduler`] knows beyond its flow is either in its
//! [`Scheduler::state`] (statuses, skip reasons, launch exclusions, switch
//! decisions, loop iterations) or derived from it: dependency counters,
//! batch occupancy, and which pending steps are held. After every event a
//! pending step whose trigger rule says *run* is held (it waits for a batch
//! slot) and every other pending step waits, so re-judging every pending
//! step over the restored counters gives back exactly the held set.

use super::{Scheduler, Status};
use crate::flow::decide::switch_exclusions;
use crate::flow::error::FlowError;
use crate::flow::spec::{Flow, StepKind, TriggerRule};
use crate::flow::state::{SchedulerState, SkipReason, SwitchResult};
use std::collections::{BTreeMap, BTreeSet};

impl Scheduler {
    /// Rebuilds the scheduler that reached `state` over `flow` (started).
    /// Returns it and the steps that are ready to hand out now and were not
    /// in flight in `state` (e.g. a crash between a decision and its
    /// persistence); those count as in flight from now on, like every id an
    /// event returns. Skips that the state implies but does not record are
    /// applied and collected by [`Scheduler::take_skipped`].
    ///
    /// Guarantees, for a `state` taken with [`Scheduler::state`] from a
    /// scheduler over the same flow (after it handed out its ready steps, as
    /// every event does): the returned list and `take_skipped` are empty,
    /// and from then on the restored scheduler answers every event, and
    /// reports `state()`, `held()` and `take_skipped()`, exactly as the
    /// original would. Recorded decisions are never re-made: a switch keeps
    /// its persisted choice (its conditions are not evaluated), a do-while
    /// keeps its iteration count, in-flight steps stay in flight, finished
    /// and skipped steps stay as recorded. Batch-capped steps that were
    /// waiting for a slot are held again and handed out, in flow order, as
    /// slots free. A switch result recorded with an empty `excluded` set
    /// gets the exclusions its choice implies
    /// ([`crate::flow::switch_exclusions`]).
    ///
    /// Refusals (typed, nothing is built):
    /// - the flow is invalid: [`FlowError::Invalid`];
    /// - an id in any part of the state is not a step:
    ///   [`FlowError::UnknownStep`];
    /// - a step in two of `done`, `failed`, `timed_out`, `skipped`,
    ///   `in_flight`, or a launch-excluded step recorded as anything but
    ///   skipped with reason `excluded`: [`FlowError::StepInTwoBuckets`];
    /// - a switch result for a step that is not a switch
    ///   ([`FlowError::NotASwitch`]), naming a case the switch lacks
    ///   ([`FlowError::UnknownCase`]), for a switch that is not done
    ///   ([`FlowError::SwitchResultNotDone`]), or whose non-empty `excluded`
    ///   set differs from what its choice implies
    ///   ([`FlowError::SwitchExclusionsMismatch`]);
    /// - loop iterations for a step that is not a do-while:
    ///   [`FlowError::NotALoop`];
    /// - a do-while body step in flight while its do-while has not started
    ///   (pending), where it could only have run inside the loop: it
    ///   depends on the do-while under a rule that waits for every
    ///   dependency, and the do-while is in no other loop's body:
    ///   [`FlowError::LoopBodyOutsideLoop`]. A loop that finished, failed or
    ///   was skipped while its body still ran, or a body step that an
    ///   `always` or `one_*` rule let start first, is a state the scheduler
    ///   itself reaches, and is restored as it is.
    ///
    /// O(steps + edges + size of the state).
    pub fn restore(
        flow: Flow,
        state: &SchedulerState,
    ) -> Result<(Scheduler, Vec<String>), FlowError> {
        let mut s = Scheduler::with_excluded(flow, &state.excluded)?;
        let mut status = s.recorded_statuses(state)?;
        let switch_results = s.checked_switch_results(state, &status)?;
        let loop_iterations = s.checked_loop_iterations(state)?;

        // Skips the state implies without recording them: a launch
        // exclusion, or a switch's exclusion of a step that never started.
        let mut implied = Vec::new();
        for &i in &s.launch_excluded {
            if status[i as usize] == Status::Pending {
                implied.push((i, SkipReason::Excluded));
            }
        }
        for r in switch_results.values() {
            for e in &r.excluded {
                let i = s.index[e.as_str()];
                if status[i as usize] == Status::Pending {
                    implied.push((i, SkipReason::BranchNotTaken));
                }
            }
        }
        for &(i, r) in &implied {
            status[i as usize] = Status::Skipped(r);
        }
        s.check_loop_bodies(&status)?;

        // Apply the recorded statuses through the same bookkeeping events
        // use, so counters, batch occupancy and `settled` are exactly what
        // the original maintained. Recorded skips are not news: they are
        // dropped from the log; implied ones are news and are logged.
        let implied_set: BTreeSet<u32> = implied.iter().map(|&(i, _)| i).collect();
        for (i, &st) in status.iter().enumerate() {
            if st != Status::Pending && !implied_set.contains(&(i as u32)) {
                s.set_status(i as u32, st);
            }
        }
        s.skipped_log.clear();
        // In the order the original would have recorded them: launch
        // exclusions first (as `start` does), then each switch's.
        let mut logged = BTreeSet::new();
        for (i, r) in implied {
            if logged.insert(i) {
                s.set_status(i, Status::Skipped(r));
            }
        }
        s.switch_results = switch_results;
        s.loop_iterations = loop_iterations;
        s.started = true;
        // Nothing recorded can be undone, so only waiting steps are judged:
        // propagation of skips the state implies, and the held set.
        s.worklist.extend((0..s.ids.len() as u32).rev());
        let ready = s.finish_event();
        Ok((s, ready))
    }

    /// Each step's status as `state` records it (held is recomputed later),
    /// refusing unknown ids and steps recorded twice.
    fn recorded_statuses(&self, state: &SchedulerState) -> Result<Vec<Status>, FlowError> {
        let mut status: Vec<Option<(Status, &'static str)>> = vec![None; self.ids.len()];
        let mut put = |i: u32, st: Status, bucket: &'static str| match status[i as usize] {
            Some((_, first)) => Err(FlowError::StepInTwoBuckets {
                step: self.ids[i as usize].clone(),
                first,
                second: bucket,
            }),
            None => {
                status[i as usize] = Some((st, bucket));
                Ok(())
            }
        };
        for id in &state.done {
            put(self.lookup(id)?, Status::Done, "done")?;
        }
        for id in &state.failed {
            put(self.lookup(id)?, Status::Failed, "failed")?;
        }
        for id in &state.timed_out {
            put(self.lookup(id)?, Status::TimedOut, "timed_out")?;
        }
        for (id, &r) in &state.skipped {
            put(self.lookup(id)?, Status::Skipped(r), "skipped")?;
        }
        for id in &state.in_flight {
            put(self.lookup(id)?, Status::InFlight, "in_flight")?;
        }
        // A launch-excluded step is skipped at start and can never change.
        for &i in &self.launch_excluded {
            match status[i as usize] {
                None | Some((Status::Skipped(SkipReason::Excluded), _)) => {}
                Some((_, bucket)) => {
                    return Err(FlowError::StepInTwoBuckets {
                        step: self.ids[i as usize].clone(),
                        first: bucket,
                        second: "excluded",
                    })
                }
            }
        }
        Ok(status
            .into_iter()
            .map(|s| s.map_or(Status::Pending, |(st, _)| st))
            .collect())
    }

    /// The switch results of `state`, checked against the flow and filled
    /// in where only the choice was persisted.
    fn checked_switch_results(
        &self,
        state: &SchedulerState,
        status: &[Status],
    ) -> Result<BTreeMap<String, SwitchResult>, FlowError> {
        let mut out = BTreeMap::new();
        for (id, r) in &state.switch_results {
            let i = self.lookup(id)? as usize;
            if self.kinds[i] != StepKind::Switch {
                return Err(FlowError::NotASwitch(id.clone()));
            }
            let step = &self.flow.steps[i];
            let chosen = match &r.chosen {
                None => None,
                Some(label) => Some(
                    step.cases
                        .iter()
                        .position(|c| &c.label == label)
                        .ok_or_else(|| FlowError::UnknownCase {
                            step: id.clone(),
                            label: label.clone(),
                        })?,
                ),
            };
            for e in &r.excluded {
                self.lookup(e)?;
            }
            if status[i] != Status::Done {
                return Err(FlowError::SwitchResultNotDone {
                    step: id.clone(),
                    state: status[i].name(),
                });
            }
            let implied: BTreeSet<String> = switch_exclusions(step, chosen).into_iter().collect();
            let excluded = if r.excluded.is_empty() {
                implied
            } else if r.excluded == implied {
                r.excluded.clone()
            } else {
                return Err(FlowError::SwitchExclusionsMismatch { step: id.clone() });
            };
            out.insert(
                id.clone(),
                SwitchResult {
                    chosen: r.chosen.clone(),
                    excluded,
                },
            );
        }
        Ok(out)
    }

    /// Per-step loop iterations from `state`, refusing non-loops.
    fn checked_loop_iterations(&self, state: &SchedulerState) -> Result<Vec<u32>, FlowError> {
        let mut out = vec![0; self.ids.len()];
        for (id, &n) in &state.loop_iterations {
            let i = self.lookup(id)? as usize;
            if self.kinds[i] != StepKind::DoWhile {
                return Err(FlowError::NotALoop(id.clone()));
            }
            out[i] = n;
        }
        Ok(out)
    }

    /// Refuses a do-while body step in flight whose do-while has not
    /// started, where that cannot happen: the step depends on the do-while
    /// under a rule that waits for every dependency (so the do-while was in
    /// flight or settled when the step was dispatched), and the do-while is
    /// in no loop body (so no iteration of an outer loop reset it). Under
    /// `always` or a `one_*` rule a body step may legitimately run first.
    fn check_loop_bodies(&self, status: &[Status]) -> Result<(), FlowError> {
        let mut in_some_body = vec![false; self.ids.len()];
        for body in &self.loop_body {
            for &b in body {
                in_some_body[b as usize] = true;
            }
        }
        for (l, body) in self.loop_body.iter().enumerate() {
            if status[l] != Status::Pending || in_some_body[l] {
                continue;
            }
            let loop_id = &self.ids[l];
            for &b in body {
                let bu = b as usize;
                if status[bu] == Status::InFlight
                    && waits_for_every_dependency(self.rules[bu])
                    && self.flow.steps[bu].deps.contains(loop_id)
                {
                    return Err(FlowError::LoopBodyOutsideLoop {
                        step: loop_id.clone(),
                        body: self.ids[bu].clone(),
                    });
                }
            }
        }
        Ok(())
    }
}

/// True for the rules that never run a step while one of its dependencies
/// is pending (see [`crate::flow::decide_trigger`]).
fn waits_for_every_dependency(rule: TriggerRule) -> bool {
    match rule {
        TriggerRule::AllSuccess
        | TriggerRule::AllFailed
        | TriggerRule::AllDone
        | TriggerRule::AllSkipped
        | TriggerRule::NoneFailed
        | TriggerRule::NoneFailedMinOneSuccess
        | TriggerRule::NoneSkipped => true,
        TriggerRule::OneSuccess
        | TriggerRule::OneFailed
        | TriggerRule::OneDone
        | TriggerRule::Always => false,
    }
}
