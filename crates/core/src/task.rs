//! The vocabulary of a unit of work in the store, shared by every runtime
//! that queues tasks (the arena's contestants, judges and
//! cross-examinations, the flow engine's run drivers): its state (one
//! vocabulary for both resume tables) and the lane it runs in. The store,
//! the arena and the task worker all import it from here, so none of them
//! depends on another for it.

use crate::names::macros::named_enum;

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

/// The lane a task runs in. Each lane has a global capacity held by the
/// store's claim across every server sharing it (DESIGN "store", guarantee
/// 3); `[lanes]` in `coderig.toml` sets the arena's two.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Lane {
    /// The serial lane of the local model server (capacity 1 by default).
    Local,
    /// The parallel lane of hosted APIs (unbounded unless capped).
    Cloud,
    /// The run drivers' own lane: never capacity-limited (no `[lanes]`
    /// entry may cap it, and the store refuses a capacity for it), so an
    /// arena cap never limits how many runs are driven at once. No agent
    /// or contestant runs in it.
    Driver,
}
named_enum!(Lane, "lane", { Local => "local", Cloud => "cloud", Driver => "driver" });

impl Lane {
    /// True for the lanes `[lanes]` may cap (`local` and `cloud`); the
    /// driver lane is always unbounded.
    pub fn takes_capacity(self) -> bool {
        !matches!(self, Lane::Driver)
    }
}
