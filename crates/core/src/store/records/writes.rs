//! What a write to the store says: updates of a task's owner, a task's
//! completion, batches of fenced changes with their events, a work's final
//! state, compare-and-set transitions, rescues and lane states.

use super::*;

/// A change to the owner (contestant or step) of a task.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OwnerUpdate {
    /// The new status, when it changes.
    pub status: Option<String>,
    /// The new data (replaces the old), when it changes.
    pub data: Option<Value>,
}

/// A lease holder's write that does not end its task: the owner's new
/// status or data and the event reporting it, in one transaction.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Update {
    /// The change to the task's owner.
    pub owner: Option<OwnerUpdate>,
    /// The event to append.
    pub event: Option<NewEvent>,
}

/// How an attempt ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Outcome {
    /// It succeeded with this result.
    Completed {
        /// The result.
        result: Value,
    },
    /// It failed. A `retryable` failure goes back to the queue (after the
    /// policy's backoff, as `available_at`) while the retry policy allows;
    /// otherwise the task fails.
    Failed {
        /// What went wrong.
        error: String,
        /// Whether the policy may retry it.
        retryable: bool,
    },
    /// The worker gave up on it (e.g. the battle was stopped).
    Cancelled {
        /// Why.
        reason: String,
    },
}

/// The end of an attempt, with what it changes besides the task, all in one
/// transaction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Completion {
    /// How the attempt ended.
    pub outcome: Outcome,
    /// The change to the task's owner.
    pub owner: Option<OwnerUpdate>,
    /// The event to append.
    pub event: Option<NewEvent>,
    /// Follow-up tasks to queue (e.g. the steps this one made ready).
    pub enqueue: Vec<TaskSpec>,
}

impl Completion {
    /// A completion with only an outcome.
    pub fn new(outcome: Outcome) -> Self {
        Completion {
            outcome,
            owner: None,
            event: None,
            enqueue: Vec::new(),
        }
    }

    /// `Completed` with `result`.
    pub fn completed(result: Value) -> Self {
        Completion::new(Outcome::Completed { result })
    }

    /// `Failed` with `error`.
    pub fn failed(error: impl Into<String>, retryable: bool) -> Self {
        Completion::new(Outcome::Failed {
            error: error.into(),
            retryable,
        })
    }

    /// The same completion, also changing the owner.
    pub fn with_owner(mut self, owner: OwnerUpdate) -> Self {
        self.owner = Some(owner);
        self
    }

    /// The same completion, also appending `event`.
    pub fn with_event(mut self, event: NewEvent) -> Self {
        self.event = Some(event);
        self
    }
}

/// A compare-and-set of one owner (contestant, step, …) of the fenced
/// task's work, one part of [`Changes`] (`Store::record_changes`).
///
/// The owner must belong to the fenced task's work (another work's owner
/// is `invalid_input`, an unknown one `not_found_id`). When its status is
/// not one of `from` the whole call is a `conflict` and writes nothing. A
/// change with neither `status` nor `data` only checks `from` (it writes
/// nothing and leaves `updated_at` alone).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OwnerChange {
    /// The owner's id.
    pub id: String,
    /// The statuses it may be in now (as earlier changes of the same call
    /// left it); empty means any.
    #[serde(default)]
    pub from: Vec<String>,
    /// The new status, when it changes.
    #[serde(default)]
    pub status: Option<String>,
    /// The new data (replaces the old), when it changes.
    #[serde(default)]
    pub data: Option<Value>,
}

impl OwnerChange {
    /// A change of owner `id` from any status that changes nothing yet.
    pub fn new(id: impl Into<String>) -> Self {
        OwnerChange {
            id: id.into(),
            from: Vec::new(),
            status: None,
            data: None,
        }
    }
}

/// A compare-and-set of the fenced task's work (battle or run), one part of
/// [`Changes`]. When the work's status is not one of `from` the whole call
/// is a `conflict` and writes nothing; with neither `status` nor `data` it
/// only checks `from`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WorkChange {
    /// The statuses it may be in now; empty means any.
    pub from: Vec<String>,
    /// The new status, when it changes.
    pub status: Option<String>,
    /// The new data (replaces the old), when it changes.
    pub data: Option<Value>,
}

impl WorkChange {
    /// A change of the work from any status that changes nothing yet.
    pub fn new() -> Self {
        WorkChange::default()
    }
}

/// The builder steps of a compare-and-set ([`OwnerChange`], [`WorkChange`]):
/// the statuses it may start from, the new status, the new data.
macro_rules! compare_and_set {
    ($($ty:ty),+) => {$(
        impl $ty {
            /// The same change, only from one of `statuses` (empty = any).
            pub fn from<S: AsRef<str>>(mut self, statuses: &[S]) -> Self {
                self.from = statuses.iter().map(|s| s.as_ref().to_string()).collect();
                self
            }

            /// The same change, setting the status.
            pub fn status(mut self, status: impl Into<String>) -> Self {
                self.status = Some(status.into());
                self
            }

            /// The same change, replacing the data.
            pub fn data(mut self, data: Value) -> Self {
                self.data = Some(data);
                self
            }
        }
    )+};
}
compare_and_set!(OwnerChange, WorkChange);

/// An event to append with [`Changes`]: about `owner_id` (an owner of the
/// fenced task's work, checked like an [`OwnerChange`]'s) or about the work
/// itself (`None`). It is stored with the work of the fenced task and that
/// task's id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChangeEvent {
    /// The owner it is about, or `None` for the work itself.
    pub owner_id: Option<String>,
    /// The event (a stored type: `agent_output` is `invalid_input`).
    pub event: NewEvent,
}

impl ChangeEvent {
    /// An event about the owner `owner_id`.
    pub fn about(owner_id: impl Into<String>, event: NewEvent) -> Self {
        ChangeEvent {
            owner_id: Some(owner_id.into()),
            event,
        }
    }

    /// An event about the work itself.
    pub fn of_work(event: NewEvent) -> Self {
        ChangeEvent {
            owner_id: None,
            event,
        }
    }
}

/// Everything one `Store::record_changes` writes, in one transaction
/// fenced by the lease of one task: the task's work, any number of its
/// owners, and events. The work change applies first, then the owner
/// changes in order (one owner may appear twice: the second sees the
/// first's status), then the events are appended in order. Any refusal
/// writes nothing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Changes {
    /// The change of the fenced task's work, when there is one.
    pub work: Option<WorkChange>,
    /// The changes of owners of that work, in order.
    pub owners: Vec<OwnerChange>,
    /// The events to append, in order.
    pub events: Vec<ChangeEvent>,
}

impl Changes {
    /// No change at all (`record_changes` then only checks the fence).
    pub fn new() -> Self {
        Changes::default()
    }

    /// The same changes, with `change` as the work's.
    pub fn work(mut self, change: WorkChange) -> Self {
        self.work = Some(change);
        self
    }

    /// The same changes, with `change` after the owner changes so far.
    pub fn owner(mut self, change: OwnerChange) -> Self {
        self.owners.push(change);
        self
    }

    /// The same changes, with `event` after the events so far.
    pub fn event(mut self, event: ChangeEvent) -> Self {
        self.events.push(event);
        self
    }

    /// True when there is nothing to write.
    pub fn is_empty(&self) -> bool {
        self.work.is_none() && self.owners.is_empty() && self.events.is_empty()
    }
}

/// Everything one `Store::finish_work` writes in one transaction, without
/// a lease: a work (battle or run) reaching its final status together with
/// every owner it settles, their events, and — when asked — the
/// cancellation of the work's unfinished tasks.
///
/// In order: the tasks are cancelled (with [`Finish::cancel_tasks`]), the
/// work's compare-and-set applies (`changes.work`, required: it is what
/// makes two finishes of one work end in one), then the owner changes in
/// order (one owner may appear twice: the second sees the first's status),
/// then the events are appended in order. Put the owners' events first and
/// the work's final event last: a follower that stops at the work's final
/// status has then seen every owner's. Any refusal writes nothing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Finish {
    /// The work's change (required), its owners' changes and the events,
    /// checked and applied as `Store::record_changes` does, but for the
    /// work named in the call instead of a fenced task's.
    pub changes: Changes,
    /// `Some(reason)`: every task of the work that is not finished
    /// (`pending`, `running`, `blocked`) is cancelled with `reason` as its
    /// error, in the same transaction; a running holder's next fenced write
    /// (heartbeat, record, completion) is then a `conflict`. `None` leaves
    /// the tasks alone.
    pub cancel_tasks: Option<String>,
}

impl Finish {
    /// A finish whose work changes by `work` (the compare-and-set of its
    /// status, usually `from` the live statuses `status` a final one).
    pub fn new(work: WorkChange) -> Self {
        Finish {
            changes: Changes::new().work(work),
            cancel_tasks: None,
        }
    }

    /// The same finish, with `change` after the owner changes so far.
    pub fn owner(mut self, change: OwnerChange) -> Self {
        self.changes.owners.push(change);
        self
    }

    /// The same finish, with `event` after the events so far.
    pub fn event(mut self, event: ChangeEvent) -> Self {
        self.changes.events.push(event);
        self
    }

    /// The same finish, also cancelling every unfinished task of the work
    /// with `reason`.
    pub fn cancel_tasks(mut self, reason: impl Into<String>) -> Self {
        self.cancel_tasks = Some(reason.into());
        self
    }
}

/// What `Store::finish_work` wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finished {
    /// The appended events, in the order given.
    pub events: Vec<EventRecord>,
    /// The tasks it cancelled, as they are now (`cancelled`), in queue
    /// order; empty without [`Finish::cancel_tasks`].
    pub cancelled: Vec<Task>,
}

/// The row a [`Transition`] changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Target {
    /// A battle or run.
    Work(String),
    /// A contestant or step.
    Owner(String),
}

/// A compare-and-set of a work's or owner's status, with its event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transition {
    /// The row.
    pub target: Target,
    /// The statuses it may be in now; empty means any. Any other status is
    /// a `conflict` (e.g. stopping a finished battle).
    pub from: Vec<String>,
    /// The new status.
    pub to: String,
    /// The new data (replaces the old), when it changes.
    pub data: Option<Value>,
    /// The event to append.
    pub event: Option<NewEvent>,
}

/// A task an expired lease put back (or, out of rescues, failed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rescued {
    /// The task as the rescue left it: `pending`, or `failed` with error
    /// `lease expired`.
    pub task: Task,
    /// The worker whose lease expired.
    pub worker: Option<String>,
}

/// A lane's capacity and load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaneState {
    /// The lane.
    pub lane: Lane,
    /// Tasks that may run in it at once across every server (`None` =
    /// unbounded).
    pub capacity: Option<u32>,
    /// Tasks running in it now.
    pub running: u32,
}
