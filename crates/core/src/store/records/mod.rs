//! The store's records: what goes in and what comes out. Pure types, always
//! compiled (no IO, no async), so faces and pure tests can name them without
//! the `runtime` feature.
//!
//! Times are [`Millis`]: milliseconds since the Unix epoch, always taken from
//! the **database clock** (never from the caller's), so servers whose clocks
//! disagree still agree on when a lease expires.

use crate::error::Error;
pub use crate::event::EventType;
use crate::event::{Event, StoredEvent};
use crate::names::macros::named_enum;
use crate::task::{Lane, TaskState};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::Duration;

mod writes;
pub use writes::*;

/// Milliseconds since the Unix epoch, read from the database clock.
pub type Millis = i64;

/// The lease a claim gets when the caller does not say: 30 s. Heartbeat
/// every third of it ([`heartbeat_interval`]).
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(30);

/// The shortest time between two heartbeats of one lease, whatever its
/// length: a test's tiny lease does not make its holder hammer the store.
pub const HEARTBEAT_FLOOR: Duration = Duration::from_millis(50);

/// How often a holder heartbeats a lease of `ttl`: every third of it (two
/// beats may fail before it expires), never more often than
/// [`HEARTBEAT_FLOOR`]. The one rule of every holder
/// (`crate::worker::TaskWorker`).
pub fn heartbeat_interval(ttl: Duration) -> Duration {
    (ttl / 3).max(HEARTBEAT_FLOOR)
}

/// How many times by default an expired lease puts a task back in the queue
/// before the store gives up on it (a task whose worker keeps dying is
/// failed with `lease expired` instead of killing workers forever).
pub const DEFAULT_MAX_RESCUES: u32 = 3;

/// The kind of a unit of work: what owns a set of owners and their tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WorkKind {
    /// An arena battle; its owners are its contestants, its judge and its
    /// cross-examinations.
    Battle,
    /// A flow run; its owners are steps.
    Run,
}
named_enum!(WorkKind, "work kind", { Battle => "battle", Run => "run" });

/// The kind of the row a task belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OwnerKind {
    /// A battle's contestant.
    Contestant,
    /// A run's step.
    Step,
    /// A battle's judge: the one owner (id `<battle_id>-judge`) whose tasks
    /// do the battle's analysis.
    Judge,
    /// One cross-examination of a battle (added later with
    /// `Store::add_owner`).
    CrossExam,
}
named_enum!(OwnerKind, "owner kind", {
    Contestant => "contestant",
    Step => "step",
    Judge => "judge",
    CrossExam => "cross_exam",
});

impl OwnerKind {
    /// The kind of work this kind of owner belongs to: contestants, judges
    /// and cross-examinations to battles, steps to runs.
    pub fn work_kind(self) -> WorkKind {
        match self {
            OwnerKind::Contestant | OwnerKind::Judge | OwnerKind::CrossExam => WorkKind::Battle,
            OwnerKind::Step => WorkKind::Run,
        }
    }
}

/// When a worker's reported failure is retried, and after how long.
///
/// Only failures the worker reports as retryable count ([`Outcome::Failed`]);
/// an attempt lost because its lease expired is a *rescue*, counted against
/// [`TaskSpec::max_rescues`] instead, so a crash does not eat a step's
/// retry budget.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RetryPolicy {
    /// Attempts that may fail before the task fails for good (1 = no retry).
    pub max_attempts: u32,
    /// The delay before the first retry.
    pub initial_ms: u64,
    /// The factor each further retry's delay grows by (≥ 1).
    pub multiplier: f64,
    /// The longest delay.
    pub max_ms: u64,
}

impl RetryPolicy {
    /// No retry: the first failure is final.
    pub const NONE: RetryPolicy = RetryPolicy {
        max_attempts: 1,
        initial_ms: 0,
        multiplier: 1.0,
        max_ms: 0,
    };

    /// Up to `max_attempts` attempts, waiting `initial_ms`, then `multiplier`
    /// times longer after each failure, never more than `max_ms`.
    pub fn exponential(max_attempts: u32, initial_ms: u64, multiplier: f64, max_ms: u64) -> Self {
        RetryPolicy {
            max_attempts,
            initial_ms,
            multiplier,
            max_ms,
        }
    }

    /// True when a task that has now failed `failures` times goes back to
    /// the queue (`failures < max_attempts`).
    pub fn retries_after(&self, failures: u32) -> bool {
        failures < self.max_attempts
    }

    /// The wait before the next attempt after `failures` (≥ 1) failures:
    /// `initial_ms · multiplier^(failures−1)`, capped at `max_ms` (and at
    /// `initial_ms` when `max_ms` is below it). A multiplier below 1 or not
    /// finite counts as 1.
    pub fn delay_ms(&self, failures: u32) -> u64 {
        let multiplier = if self.multiplier.is_finite() && self.multiplier >= 1.0 {
            self.multiplier
        } else {
            1.0
        };
        let exponent = failures.saturating_sub(1).min(1024) as i32;
        let delay = self.initial_ms as f64 * multiplier.powi(exponent);
        let cap = self.max_ms.max(self.initial_ms) as f64;
        if delay.is_finite() {
            delay.min(cap) as u64
        } else {
            cap as u64
        }
    }
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy::NONE
    }
}

/// A reference to the row a task belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct OwnerRef {
    /// Contestant, judge or cross-examination (of a battle), or step (of a
    /// run).
    pub kind: OwnerKind,
    /// The owner's id.
    pub id: String,
}

/// A task to put in the queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskSpec {
    /// The task's id, chosen by the caller (unique in the store: enqueuing
    /// the same id twice is a `conflict`, which makes re-enqueuing after a
    /// crash safe).
    pub id: String,
    /// The contestant or step it runs. The owner must exist (or be created
    /// in the same call): a task never belongs to an unknown owner.
    pub owner: OwnerRef,
    /// The lane whose capacity it counts against while running.
    pub lane: Lane,
    /// What the worker needs to run it (opaque to the store).
    pub payload: Value,
    /// Retries of reported failures.
    pub retry: RetryPolicy,
    /// Expired leases that put it back in the queue before it fails with
    /// `lease expired`.
    pub max_rescues: u32,
    /// Not claimable before this long after it is enqueued.
    pub delay_ms: u64,
}

impl TaskSpec {
    /// A task for `owner` on `lane` with an empty payload, no retry,
    /// [`DEFAULT_MAX_RESCUES`] and no delay.
    pub fn new(id: impl Into<String>, owner: OwnerRef, lane: Lane) -> Self {
        TaskSpec {
            id: id.into(),
            owner,
            lane,
            payload: Value::Object(Default::default()),
            retry: RetryPolicy::NONE,
            max_rescues: DEFAULT_MAX_RESCUES,
            delay_ms: 0,
        }
    }

    /// The same task with this payload.
    pub fn with_payload(mut self, payload: Value) -> Self {
        self.payload = payload;
        self
    }

    /// The same task with this retry policy.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// The same task with this many rescues allowed.
    pub fn with_max_rescues(mut self, max_rescues: u32) -> Self {
        self.max_rescues = max_rescues;
        self
    }
}

/// An event to append, in the transaction of the change it reports.
///
/// Only stored types ([`EventType::is_stored`]) may be appended; an
/// `agent_output` is `invalid_input` (it is live only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewEvent {
    /// Its type.
    pub kind: EventType,
    /// Its fields (DESIGN "events", without `type`); opaque to the store.
    pub payload: Value,
}

impl NewEvent {
    /// An event of `kind` with `payload`.
    pub fn new(kind: EventType, payload: Value) -> Self {
        NewEvent { kind, payload }
    }

    /// The typed event of [`crate::event`], as the store keeps it: its type
    /// and its other fields. `invalid_input` for `agent_output`.
    pub fn from_event(event: &Event) -> Result<NewEvent, Error> {
        let kind = event.event_type();
        if !kind.is_stored() {
            return Err(Error::invalid_input(format!(
                "{kind} events are live only; the store keeps no {kind}"
            )));
        }
        let mut payload = serde_json::to_value(event)
            .map_err(|e| Error::internal(format!("serializing a {kind} event: {e}")))?;
        if let Value::Object(fields) = &mut payload {
            fields.remove("type");
        }
        Ok(NewEvent { kind, payload })
    }

    /// `invalid_input` unless the store keeps events of this type.
    pub fn check(&self) -> Result<(), Error> {
        if self.kind.is_stored() {
            Ok(())
        } else {
            Err(Error::invalid_input(format!(
                "{} events are live only; the store keeps none",
                self.kind
            )))
        }
    }
}

/// A stored event.
///
/// Guarantees: `seq` increases strictly with every append and becomes
/// visible in order — a reader that has seen `seq = N` never later finds a
/// committed event below `N`. On SQLite the log has no gaps; PostgreSQL
/// skips the numbers of a transaction that died after taking one
/// (sequences are not rolled back), so a reader must not wait for a gap to
/// fill.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventRecord {
    /// The position in the store's one event log.
    pub seq: i64,
    /// Its type (always a stored one).
    pub kind: EventType,
    /// The battle or run it belongs to.
    pub work_id: String,
    /// The contestant or step it is about, when there is one.
    pub owner_id: Option<String>,
    /// The task whose write appended it, when there is one.
    pub task_id: Option<String>,
    /// Its fields.
    pub payload: Value,
    /// When it was appended.
    pub created_at: Millis,
}

impl EventRecord {
    /// The typed event with its seq (and the store's epoch, for the SSE id):
    /// the payload read as the fields of an event of type `kind`.
    /// `invalid_input` when the payload is not such an event (the store
    /// keeps payloads opaque, so a runtime could have written anything).
    pub fn to_stored(&self, epoch: Option<&str>) -> Result<StoredEvent, Error> {
        let mut fields = match &self.payload {
            Value::Object(fields) => fields.clone(),
            other => {
                return Err(Error::invalid_input(format!(
                    "event {} is not an object: {other}",
                    self.seq
                )))
            }
        };
        fields.insert("type".into(), Value::String(self.kind.as_str().into()));
        let event: Event = serde_json::from_value(Value::Object(fields)).map_err(|e| {
            Error::invalid_input(format!("event {} is not a {}: {e}", self.seq, self.kind))
        })?;
        Ok(StoredEvent {
            seq: u64::try_from(self.seq).unwrap_or(0),
            epoch: epoch.map(str::to_string),
            event,
        })
    }
}

/// An owner (contestant or step) created with its work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewOwner {
    /// Its id (unique in the store).
    pub id: String,
    /// Contestant, judge or cross-examination (of a battle), or step (of a
    /// run).
    pub kind: OwnerKind,
    /// Its first status (the runtime's vocabulary: `queued`, `pending`, …).
    pub status: String,
    /// The runtime's fields (identity, model, step id, …); opaque here.
    pub data: Value,
}

/// A battle with its contestants, or a run with its steps, and their first
/// tasks and event: created all at once or not at all
/// (`Store::create_work`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewWork {
    /// Its id (unique in the store).
    pub id: String,
    /// Battle or run.
    pub kind: WorkKind,
    /// Its first status (`running`, …).
    pub status: String,
    /// The runtime's fields (the spec, the prompt, …); opaque here.
    pub data: Value,
    /// Its contestants or steps, in order.
    pub owners: Vec<NewOwner>,
    /// The tasks to queue now; each names one of `owners`.
    pub tasks: Vec<TaskSpec>,
    /// The event announcing it (`battle_started`, `run_updated`).
    pub event: NewEvent,
}

/// A stored battle or run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Work {
    /// Its id.
    pub id: String,
    /// Battle or run.
    pub kind: WorkKind,
    /// Its status (the runtime's vocabulary).
    pub status: String,
    /// The runtime's fields.
    pub data: Value,
    /// When it was created.
    pub created_at: Millis,
    /// When its status or data last changed.
    pub updated_at: Millis,
}

/// A stored contestant or step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Owner {
    /// Its id.
    pub id: String,
    /// The battle or run it belongs to.
    pub work_id: String,
    /// Contestant or step.
    pub kind: OwnerKind,
    /// Its status (the runtime's vocabulary).
    pub status: String,
    /// The runtime's fields.
    pub data: Value,
    /// When its status or data last changed.
    pub updated_at: Millis,
}

/// A battle or run with everything it owns, as one consistent snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkSnapshot {
    /// The battle or run.
    pub work: Work,
    /// Its contestants or steps, in creation order.
    pub owners: Vec<Owner>,
    /// Their tasks, in queue order.
    pub tasks: Vec<Task>,
}

/// The page size of [`WorkFilter::new`].
pub const DEFAULT_WORK_PAGE_LIMIT: u32 = 50;

/// The largest page `Store::list_works` serves.
pub const MAX_WORK_PAGE_LIMIT: u32 = 500;

/// Which works `Store::list_works` lists, and which page of them.
///
/// Works come newest first (`created_at` descending, then `id`
/// descending). Pages are keyset-paginated: the cursor names the last work
/// of the page before, so a work created while a client pages through is
/// never the cause of a duplicate or a miss among the works that already
/// existed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkFilter {
    /// Battles or runs.
    pub kind: WorkKind,
    /// Only works in one of these statuses; empty means any status.
    pub statuses: Vec<String>,
    /// Only works whose `data` has this top-level field (the key is
    /// `[A-Za-z0-9_]+`) holding exactly this JSON string, e.g.
    /// `("project", "/abs/path")`. A field holding a number or anything
    /// else than a string never matches.
    pub data_field: Option<(String, String)>,
    /// Works per page, 1 to [`MAX_WORK_PAGE_LIMIT`].
    pub limit: u32,
    /// Where the page starts: the [`WorkPage::next_cursor`] of the page
    /// before (opaque), or `None` for the first page.
    pub cursor: Option<String>,
}

impl WorkFilter {
    /// The first page of works of `kind`, any status, any data, with
    /// [`DEFAULT_WORK_PAGE_LIMIT`] works per page.
    pub fn new(kind: WorkKind) -> Self {
        WorkFilter {
            kind,
            statuses: Vec::new(),
            data_field: None,
            limit: DEFAULT_WORK_PAGE_LIMIT,
            cursor: None,
        }
    }

    /// The same filter, only for works in one of `statuses` (empty = any).
    pub fn statuses<S: AsRef<str>>(mut self, statuses: &[S]) -> Self {
        self.statuses = statuses.iter().map(|s| s.as_ref().to_string()).collect();
        self
    }

    /// The same filter, only for works whose `data[key]` is the string
    /// `value`.
    pub fn data_field(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.data_field = Some((key.into(), value.into()));
        self
    }

    /// The same filter with `limit` works per page.
    pub fn limit(mut self, limit: u32) -> Self {
        self.limit = limit;
        self
    }

    /// The same filter, for the page after the one that returned `cursor`
    /// as its [`WorkPage::next_cursor`].
    pub fn cursor(mut self, cursor: impl Into<String>) -> Self {
        self.cursor = Some(cursor.into());
        self
    }
}

/// One page of `Store::list_works`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkPage {
    /// At most the filter's limit works, newest first.
    pub works: Vec<Work>,
    /// The cursor of the next page, or `None` when this is the last page
    /// (no work matching the filter comes after these).
    pub next_cursor: Option<String>,
}

/// A stored task. The lease token is never part of it: only the claim that
/// set it ([`Claim`]) knows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    /// Its id.
    pub id: String,
    /// The battle or run of its owner.
    pub work_id: String,
    /// The contestant or step it runs.
    pub owner: OwnerRef,
    /// The lane it counts against while running.
    pub lane: Lane,
    /// Where it stands.
    pub state: TaskState,
    /// What the worker needs.
    pub payload: Value,
    /// How many times it has been claimed (the current or last attempt's
    /// number; 0 before the first claim). Each `(id, attempt)` is claimed
    /// exactly once.
    pub attempt: u32,
    /// Reported failures so far.
    pub failures: u32,
    /// Expired leases so far.
    pub rescues: u32,
    /// Retries of reported failures.
    pub retry: RetryPolicy,
    /// Rescues allowed.
    pub max_rescues: u32,
    /// Not claimable before this time.
    pub available_at: Millis,
    /// The worker of the current or last claim.
    pub worker: Option<String>,
    /// When the current lease ends (only while `running`).
    pub lease_expires_at: Option<Millis>,
    /// The last heartbeat of the current lease (only while `running`).
    pub heartbeat_at: Option<Millis>,
    /// The result of a completed task.
    pub result: Option<Value>,
    /// The last error (failure, cancellation reason, `lease expired`).
    pub error: Option<String>,
    /// When it was enqueued.
    pub created_at: Millis,
    /// When its current or last attempt was claimed.
    pub started_at: Option<Millis>,
    /// When it reached `completed`, `failed` or `cancelled`.
    pub finished_at: Option<Millis>,
}

impl Task {
    /// True in `completed`, `failed` and `cancelled`: nothing will change it
    /// any more.
    pub fn is_finished(&self) -> bool {
        matches!(
            self.state,
            TaskState::Completed | TaskState::Failed | TaskState::Cancelled
        )
    }
}

/// What a claim asks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClaimRequest {
    /// Who claims (a server or worker name; recorded on the task).
    pub worker: String,
    /// The lanes to claim from, in this order; empty means every lane.
    pub lanes: Vec<Lane>,
    /// At most this many tasks (≥ 1).
    pub limit: u32,
    /// The lease's length (> 0); the expiry is computed by the database.
    pub lease_ttl: Duration,
    /// Only tasks whose owner is of one of these kinds (the arena runner
    /// claims contestant, judge and cross-examination tasks, the flow
    /// runtime steps); empty means every kind. Lane capacities still count
    /// every running task of the lane, whatever its owner's kind.
    #[serde(default)]
    pub owner_kinds: Vec<OwnerKind>,
    /// Only tasks of these works (battles, runs); empty means every work.
    /// A process that starts its own work beside a server on the same
    /// store (the CLI's `battle run` and `run`) claims only that.
    #[serde(default)]
    pub work_ids: Vec<String>,
}

impl ClaimRequest {
    /// One task from any lane for `worker`, with [`DEFAULT_LEASE_TTL`].
    pub fn new(worker: impl Into<String>) -> Self {
        ClaimRequest {
            worker: worker.into(),
            lanes: Vec::new(),
            limit: 1,
            lease_ttl: DEFAULT_LEASE_TTL,
            owner_kinds: Vec::new(),
            work_ids: Vec::new(),
        }
    }

    /// The same request, only for tasks of these works (empty = every
    /// work).
    pub fn work_ids(mut self, ids: &[String]) -> Self {
        self.work_ids = ids.to_vec();
        self
    }

    /// The same request, only for tasks of owners of these kinds (empty =
    /// every kind).
    pub fn owner_kinds(mut self, kinds: &[OwnerKind]) -> Self {
        self.owner_kinds = kinds.to_vec();
        self
    }

    /// The same request for at most `limit` tasks.
    pub fn limit(mut self, limit: u32) -> Self {
        self.limit = limit;
        self
    }

    /// The same request, only from `lanes`.
    pub fn lanes(mut self, lanes: &[Lane]) -> Self {
        self.lanes = lanes.to_vec();
        self
    }

    /// The same request with this lease length.
    pub fn lease_ttl(mut self, ttl: Duration) -> Self {
        self.lease_ttl = ttl;
        self
    }

    /// How often a holder should heartbeat: a third of the lease, at
    /// least [`HEARTBEAT_FLOOR`] ([`heartbeat_interval`]).
    pub fn heartbeat_every(&self) -> Duration {
        heartbeat_interval(self.lease_ttl)
    }
}

/// A claimed task: the task as the claim left it (`running`, its attempt
/// counted) and the lease that fences every later write for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Claim {
    /// The task, now `running`.
    pub task: Task,
    /// A fresh random token (from the database); every later write names it.
    pub lease_token: String,
    /// When the lease ends unless a heartbeat extends it (database clock).
    pub lease_expires_at: Millis,
}

impl Claim {
    /// The fence of this claim's writes.
    pub fn fence(&self) -> Fence {
        Fence {
            task_id: self.task.id.clone(),
            lease_token: self.lease_token.clone(),
        }
    }
}

/// What every write of a lease holder names: its task and its lease token.
/// A write whose fence no longer matches a `running` task is a `conflict`
/// and changes nothing.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Fence {
    /// The task.
    pub task_id: String,
    /// The token of the claim.
    pub lease_token: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_by_the_multiplier_and_stops_at_the_cap() {
        let p = RetryPolicy::exponential(5, 1000, 2.0, 5000);
        assert_eq!(
            (1..=5).map(|f| p.delay_ms(f)).collect::<Vec<_>>(),
            [1000, 2000, 4000, 5000, 5000]
        );
        assert!(p.retries_after(4));
        assert!(!p.retries_after(5));
        assert!(!RetryPolicy::NONE.retries_after(1));
        assert_eq!(RetryPolicy::exponential(3, 10, 0.5, 0).delay_ms(3), 10);
        assert_eq!(
            RetryPolicy::exponential(3, 10, f64::INFINITY, 99).delay_ms(3),
            10
        );
        assert_eq!(
            RetryPolicy::exponential(3, 10, 1e300, 99).delay_ms(u32::MAX),
            99
        );
    }

    #[test]
    fn names_of_the_store_enums() {
        assert_eq!(WorkKind::NAMES, ["battle", "run"]);
        assert_eq!(
            OwnerKind::NAMES,
            ["contestant", "step", "judge", "cross_exam"]
        );
        assert_eq!(OwnerKind::Step.work_kind(), WorkKind::Run);
        assert_eq!(OwnerKind::Judge.work_kind(), WorkKind::Battle);
        assert_eq!(OwnerKind::CrossExam.work_kind(), WorkKind::Battle);
        assert_eq!("cross_exam".parse::<OwnerKind>(), Ok(OwnerKind::CrossExam));
    }
}
