//! The run as `coderig run`'s display knows it between its two reads: the
//! view read once when the run is created, kept current by the run's
//! stored events (each step's status, attempt, skip reason and error; the
//! run's status), so that following an n-step run reads nothing per event.
//! What no event carries is seen here: when a step started and ended (this
//! process's clock), a loop's iterations (counted). Display only: the
//! summary and `--json`'s last line are the run read at the end.

use coderig::event::{Event, RunStatus};
use coderig::flow::engine::RunView;
use coderig::flow::StepStatus;
use serde_json::Value;
use std::collections::BTreeSet;

/// The run as the display knows it.
pub(super) struct LiveRun {
    /// As read at the start, with every event since applied.
    pub(super) view: RunView,
    /// Do-while steps and the steps of their bodies.
    in_loop: BTreeSet<String>,
}

impl LiveRun {
    /// Starts from `view`, the run as read once.
    pub(super) fn new(view: RunView) -> Self {
        let in_loop = loop_steps(&view.spec);
        LiveRun { view, in_loop }
    }

    /// Applies one of the run's stored events, seen at `now` (ms). Returns
    /// the id of an approval step that began waiting: its message is
    /// rendered then, and no event carries it ([`LiveRun::message`]).
    pub(super) fn apply(&mut self, event: &Event, now: i64) -> Option<String> {
        match event {
            Event::StepUpdated(u) if u.run_id == self.view.id => {
                let step = self.view.steps.iter_mut().find(|s| s.id == u.step_id)?;
                let was = step.status;
                if self.in_loop.contains(&step.id) {
                    if step.kind == "do_while" {
                        // Touched, still running, as an iteration ends and
                        // the next starts: `iteration` counts those done.
                        if was == StepStatus::Running
                            && u.status == StepStatus::Running
                            && u.attempt == step.attempt
                        {
                            step.iteration += 1;
                        }
                    } else if u.status == StepStatus::Pending && was != StepStatus::Pending {
                        // A body step set back to pending: the next iteration.
                        step.iteration = step.iteration.max(1) + 1;
                    }
                }
                match u.status {
                    StepStatus::Pending => {
                        step.started_at = None;
                        step.finished_at = None;
                    }
                    StepStatus::Running | StepStatus::Waiting => {
                        if !is_active(was) || u.attempt != step.attempt {
                            step.started_at = Some(now);
                            step.finished_at = None;
                        }
                    }
                    _ => {
                        if is_active(was) || step.finished_at.is_none() {
                            step.finished_at = Some(now);
                        }
                    }
                }
                step.status = u.status;
                step.attempt = u.attempt;
                step.skip_reason = u.skip_reason;
                step.error = u.error.clone();
                let waits = step.kind == "approval"
                    && u.status == StepStatus::Waiting
                    && was != StepStatus::Waiting;
                waits.then(|| step.id.clone())
            }
            Event::RunUpdated(u) if u.run_id == self.view.id => {
                self.view.status = u.status;
                if u.error.is_some() {
                    self.view.error = u.error.clone();
                }
                if !is_live(u.status) {
                    self.view.finished_at.get_or_insert(now);
                }
                None
            }
            _ => None,
        }
    }

    /// Takes approval step `step`'s message from `read`, a read of the run.
    pub(super) fn message(&mut self, step: &str, read: &RunView) {
        let message = read.step(step).and_then(|s| s.message.clone());
        if let Some(mine) = self.view.steps.iter_mut().find(|s| s.id == step) {
            mine.message = message;
        }
    }
}

/// True while the run can still change by itself (`running`, `waiting`).
pub(super) fn is_live(status: RunStatus) -> bool {
    matches!(status, RunStatus::Running | RunStatus::Waiting)
}

/// True for a step at work: `running` or `waiting`.
fn is_active(status: StepStatus) -> bool {
    matches!(status, StepStatus::Running | StepStatus::Waiting)
}

/// The do-while steps of a spec (its canonical JSON) and every step of
/// their bodies.
pub(super) fn loop_steps(spec: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for step in spec["steps"].as_array().into_iter().flatten() {
        if step["kind"] == "do_while" {
            out.extend(step["id"].as_str().map(str::to_owned));
            for id in step["body"].as_array().into_iter().flatten() {
                out.extend(id.as_str().map(str::to_owned));
            }
        }
    }
    out
}
