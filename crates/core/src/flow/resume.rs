//! Crash-resume: what to do with each persisted step row when a runtime
//! restarts, given the state of the task (worker job) it pointed to.

use super::decide::should_retry;
use crate::names::macros::named_enum;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The persisted status of a step row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StepStatus {
    /// Not started.
    Pending,
    /// Dispatched to a task.
    Running,
    /// Waiting for something outside any worker (an approval step waiting
    /// for its decision); nothing is running for it.
    Waiting,
    /// Finished successfully.
    Done,
    /// Failed.
    Failed,
    /// Skipped.
    Skipped,
    /// Hit its timeout.
    TimedOut,
    /// Cancelled.
    Cancelled,
}
named_enum!(StepStatus, "step status", {
    Pending => "pending",
    Running => "running",
    Waiting => "waiting",
    Done => "done" | "completed",
    Failed => "failed",
    Skipped => "skipped",
    TimedOut => "timed_out",
    Cancelled => "cancelled",
});

/// How one attempt of a step ended: what a run's step history records for
/// each finished attempt (`StepView.attempts[].outcome`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AttemptOutcome {
    /// It succeeded.
    Done,
    /// It failed (an error, a non-zero exit).
    Failed,
    /// It ran past its timeout.
    TimedOut,
    /// It was cancelled.
    Cancelled,
    /// The process that ran it ended before it did (a crash); it does not
    /// count against the retry budget.
    Interrupted,
}
named_enum!(AttemptOutcome, "attempt outcome", {
    Done => "done",
    Failed => "failed",
    TimedOut => "timed_out",
    Cancelled => "cancelled",
    Interrupted => "interrupted",
});

impl AttemptOutcome {
    /// True for the endings a retry policy counts against its budget
    /// (`failed` and `timed_out`).
    pub fn uses_a_retry(self) -> bool {
        matches!(self, AttemptOutcome::Failed | AttemptOutcome::TimedOut)
    }
}

/// The state of the task (worker job) a running step points to: the one
/// vocabulary shared with arena contestants.
pub use crate::task::TaskState;

/// What a resuming runtime does with one step row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ResumeAction {
    /// Leave it as it is.
    Keep,
    /// Dispatch it again (its worker is gone).
    ReDispatch,
    /// Record it as done (its task finished while we were down).
    MarkDone,
    /// Record it as failed.
    MarkFailed,
    /// Record it as cancelled.
    MarkCancelled,
    /// Start a new attempt (counts against the retry budget).
    Retry,
}
named_enum!(ResumeAction, "resume action", {
    Keep => "keep",
    ReDispatch => "re-dispatch",
    MarkDone => "mark-done",
    MarkFailed => "mark-failed",
    MarkCancelled => "mark-cancelled",
    Retry => "retry",
});

/// The resume table, row by row:
///
/// | step status | task | action |
/// |---|---|---|
/// | `timed_out` | any | `retry` if `retry_count < max_retries`, else `mark-failed` |
/// | not `running` (pending, waiting, done, failed, skipped, cancelled) | any | `keep` |
/// | `running` | no task id, or task row missing | `re-dispatch` |
/// | `running` | `completed` | `mark-done` |
/// | `running` | `failed` | `mark-failed` |
/// | `running` | `cancelled` | `mark-cancelled` |
/// | `running` | `pending` | `keep` (the queue still holds it) |
/// | `running` | `running` / `blocked` | `re-dispatch` (the process died with us) |
///
/// `max_retries = None` means no retries.
pub fn reconcile_resume_step(
    status: StepStatus,
    task_id: Option<&str>,
    task_state: Option<TaskState>,
    retry_count: u32,
    max_retries: Option<u32>,
) -> ResumeAction {
    match status {
        StepStatus::TimedOut => {
            if should_retry(max_retries.unwrap_or(0), retry_count) {
                ResumeAction::Retry
            } else {
                ResumeAction::MarkFailed
            }
        }
        StepStatus::Running => match (task_id, task_state) {
            (None, _) | (Some(_), None) => ResumeAction::ReDispatch,
            (Some(_), Some(TaskState::Completed)) => ResumeAction::MarkDone,
            (Some(_), Some(TaskState::Failed)) => ResumeAction::MarkFailed,
            (Some(_), Some(TaskState::Cancelled)) => ResumeAction::MarkCancelled,
            (Some(_), Some(TaskState::Pending)) => ResumeAction::Keep,
            (Some(_), Some(TaskState::Running | TaskState::Blocked)) => ResumeAction::ReDispatch,
        },
        StepStatus::Pending
        | StepStatus::Waiting
        | StepStatus::Done
        | StepStatus::Failed
        | StepStatus::Skipped
        | StepStatus::Cancelled => ResumeAction::Keep,
    }
}

/// One persisted step row, as [`reconcile_run`] reads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResumeRow {
    /// The step's id.
    pub step_id: String,
    /// The task it was dispatched as, if any.
    pub task_id: Option<String>,
    /// Its persisted status.
    pub status: StepStatus,
    /// Retries used so far.
    #[serde(default)]
    pub retry_count: u32,
    /// Its retry budget (`None`: none).
    #[serde(default)]
    pub max_retries: Option<u32>,
}

/// [`reconcile_resume_step`] for every row, in row order; a task id absent
/// from `task_states` is a missing task row.
pub fn reconcile_run(
    rows: &[ResumeRow],
    task_states: &HashMap<String, TaskState>,
) -> Vec<(String, ResumeAction)> {
    rows.iter()
        .map(|r| {
            let task_state = r.task_id.as_ref().and_then(|t| task_states.get(t).copied());
            let action = reconcile_resume_step(
                r.status,
                r.task_id.as_deref(),
                task_state,
                r.retry_count,
                r.max_retries,
            );
            (r.step_id.clone(), action)
        })
        .collect()
}
