//! Crash-resume: reconcile contestants with the tasks that ran them.
//!
//! After a restart, a contestant marked `running` may have a task that
//! finished, failed, was cancelled, is still waiting, or died with the old
//! process. The table (shared with flow steps, which say `mark-failed`
//! where contestants say `mark-error`):
//!
//! | contestant | task id | task state            | action           |
//! |------------|---------|-----------------------|------------------|
//! | not running| any     | any                   | `keep`           |
//! | running    | none    | –                     | `re-dispatch`    |
//! | running    | some    | no row                | `re-dispatch`    |
//! | running    | some    | `completed`           | `mark-done`      |
//! | running    | some    | `failed`              | `mark-error`     |
//! | running    | some    | `cancelled`           | `mark-cancelled` |
//! | running    | some    | `pending`             | `keep`           |
//! | running    | some    | `running`, `blocked`  | `re-dispatch`    |
//!
//! A task still `running` or `blocked` after a restart belonged to the dead
//! process, so nobody will finish it; a `pending` task will still be picked
//! up by a worker, so re-dispatching it would run the contestant twice.

use super::lane::ContestantStatus;
use crate::names::macros::named_enum;
pub use crate::task::TaskState;
use std::collections::HashMap;

/// What the runner does with one contestant on resume.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ContestantAction {
    /// Leave it as it is.
    Keep,
    /// Start it again (its task died or never existed).
    ReDispatch,
    /// Its task completed: record the result, status `done`.
    MarkDone,
    /// Its task failed: status `error`.
    MarkError,
    /// Its task was cancelled: status `cancelled`.
    MarkCancelled,
}
named_enum!(ContestantAction, "contestant action", {
    Keep => "keep",
    ReDispatch => "re-dispatch",
    MarkDone => "mark-done",
    MarkError => "mark-error",
    MarkCancelled => "mark-cancelled",
});

/// The resume action for one contestant, per the table in the module docs.
/// An empty `task_id` counts as no task. `task_state` is `None` when the
/// task row is missing.
pub fn reconcile_contestant_resume(
    status: ContestantStatus,
    task_id: Option<&str>,
    task_state: Option<TaskState>,
) -> ContestantAction {
    if status != ContestantStatus::Running {
        return ContestantAction::Keep;
    }
    if task_id.is_none_or(str::is_empty) {
        return ContestantAction::ReDispatch;
    }
    match task_state {
        None | Some(TaskState::Running) | Some(TaskState::Blocked) => ContestantAction::ReDispatch,
        Some(TaskState::Pending) => ContestantAction::Keep,
        Some(TaskState::Completed) => ContestantAction::MarkDone,
        Some(TaskState::Failed) => ContestantAction::MarkError,
        Some(TaskState::Cancelled) => ContestantAction::MarkCancelled,
    }
}

/// The resume action of every contestant, in input order. Each row is
/// `(contestant_id, task_id, status)`; `task_states` maps task ids to their
/// stored state (a task id absent from the map is a missing row).
pub fn reconcile_contestants<Id: Clone, T: AsRef<str>>(
    rows: &[(Id, Option<T>, ContestantStatus)],
    task_states: &HashMap<String, TaskState>,
) -> Vec<(Id, ContestantAction)> {
    rows.iter()
        .map(|(id, task_id, status)| {
            let task_id = task_id.as_ref().map(AsRef::as_ref);
            let state = task_id.and_then(|t| task_states.get(t).copied());
            (
                id.clone(),
                reconcile_contestant_resume(*status, task_id, state),
            )
        })
        .collect()
}
