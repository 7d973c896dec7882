//! The state of a unit of work in the store, shared by flow steps and arena
//! contestants (one vocabulary for both resume tables).

use crate::names::named_enum;

/// State of a task row in the store. Shared vocabulary of flow steps and
/// arena contestants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TaskState {
    /// Queued, not yet claimed by a worker.
    Pending,
    /// Claimed by a worker.
    Running,
    /// Waiting on something outside the worker (an approval, a lock).
    Blocked,
    /// Finished successfully.
    Completed,
    /// Finished with an error.
    Failed,
    /// Cancelled before finishing.
    Cancelled,
}
named_enum!(TaskState, "task state", {
    Pending => "pending",
    Running => "running",
    Blocked => "blocked",
    Completed => "completed",
    Failed => "failed",
    Cancelled => "cancelled" | "canceled",
});
