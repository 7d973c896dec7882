//! The store: durable work, leased claims, global lanes and the event log.
//!
//! One `Store` trait (feature `runtime`) with two implementations that pass
//! one conformance suite (`crates/core/tests/store_conformance.rs`):
//! `SqliteStore` (feature `sqlite`, the embedded default:
//! `<data_dir>/coderig.db`) and `PostgresStore` (feature `postgres`,
//! `DATABASE_URL`, for several servers sharing work). The records are pure
//! types and always compile ([`records`]).
//!
//! Both are one body of logic (`store::body`: every transaction's reads,
//! fences, compare-and-sets, writes and events, written once) over a seam
//! one statement wide — a connection that runs a named statement, and one
//! file of SQL text per dialect (`sqlite/statements.rs`,
//! `postgres/statements.rs`). A write of n rows (a new run's steps, a
//! driver's batch of step changes, their events) is one statement over a
//! JSON array, not n.
//!
//! # The model
//!
//! A **work** (a battle or a run) owns **owners** (a battle its
//! contestants, its judge and its cross-examinations; a run its steps); an
//! owner's work is done by **tasks** — queue rows that a worker
//! claims with a lease. Work and owner rows carry the runtime's status and
//! an opaque JSON `data`; the store decides nothing about them except that
//! they change in a transaction with their event. The task row is the
//! store's own: its state machine is
//!
//! ```text
//! pending --claim--> running --complete--> completed | failed | cancelled
//!    ^                  |  \--complete(Failed, retryable, retries left)--> pending (+ backoff)
//!    |                  \----lease expired, rescue (rescues left)--------> pending
//!    \-- enqueue          (out of rescues: failed, "lease expired"; cancel: cancelled from any live state)
//! ```
//!
//! A work that reaches a final status does so in one transaction with
//! every owner it settles and their events ([`Store::finish_work`], or a
//! holder's fenced [`Store::record_changes`]), so no reader sees a finished
//! work with a live owner; a finish may also cancel the work's unfinished
//! tasks, which fences their holders out.
//!
//! # The six guarantees (DESIGN "store"), each tested on both backends
//!
//! 1. **Atomic creation.** `Store::create_work` writes the work, its
//!    owners, their first tasks and the first event in one transaction.
//!    A task row names its owner (kind and id, a foreign key), so no task —
//!    and no completion — can exist for an unknown owner.
//! 2. **Leased claims.** `Store::claim` picks pending tasks and sets a
//!    fresh random `lease_token`, the worker and `lease_expires_at` from the
//!    database clock, in one statement (`UPDATE … WHERE id IN (SELECT … FOR
//!    UPDATE SKIP LOCKED LIMIT n) RETURNING` on Postgres, the same inside
//!    `BEGIN IMMEDIATE` on SQLite). Every later write of the holder
//!    (`Store::heartbeat`, `Store::record`, `Store::record_changes`,
//!    `Store::complete`) names a [`Fence`] and changes nothing — a typed
//!    `conflict` — unless the task is still `running` under that token. A holder whose lease expired but was
//!    not yet rescued may still write (nobody else has the task).
//! 3. **Global lanes.** A claim never lets more tasks run in a lane than its
//!    capacity (`local` = 1 by default, `cloud` unbounded), across every
//!    server sharing the store: the claim counts the lane's running tasks
//!    under the lane row's lock (Postgres `FOR UPDATE`; SQLite's one writer).
//! 4. **Rescue by lease, never by runtime.** `Store::rescue_expired` puts
//!    back tasks whose lease expired, by a guarded compare-and-set (a task
//!    that completes while the rescuer looks at it ends in exactly one of
//!    the two outcomes). Retries of reported failures follow the task's
//!    [`RetryPolicy`], the backoff persisted as `available_at`.
//! 5. **Events in the same transaction.** Every write that changes a work or
//!    owner appends its event in the same transaction; `seq` increases and
//!    becomes visible in order (`Store::events_after`). Postgres takes a
//!    transaction-level advisory lock before the insert, so transactions
//!    cannot commit their events out of order.
//! 6. **Nothing lost on a crash.** Every change is one transaction; a
//!    process killed at any instruction leaves a store in which its claims
//!    expire and are rescued (`crates/core/tests/store_kill.rs`).

pub mod records;

mod listing;
pub use listing::check_work_filter;

// Its planner is only called by the SQL backends.
#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
mod changes;
pub use changes::{check_changes, check_finish};

mod checks;
use checks::check_id;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) use checks::check_owner_kind;
pub use checks::{
    check_add_owner, check_claim, check_enqueue, check_lane_capacity, check_new_owner,
    check_new_work, check_task_spec, check_tasks, settle, Settlement,
};

#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod sql;

#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod body;

#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(feature = "sqlite")]
pub use sqlite::{SqliteOptions, SqliteStore};

#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "postgres")]
pub use postgres::{PostgresOptions, PostgresStore};

pub use records::*;

use crate::error::Error;
use crate::task::TaskState;
use std::collections::HashSet;

/// Every write transaction of the store, as one object-safe trait
/// (`Arc<dyn Store>`).
///
/// Errors: `conflict` when the state does not allow the write (a lost lease,
/// a finished task, an unexpected status, a duplicate id), `not_found_id`
/// for an unknown task, work or owner, `invalid_input` for a malformed
/// request, `io` when the database fails, `internal` for a row the store
/// cannot read back. A failed call changes nothing.
#[cfg(feature = "runtime")]
#[async_trait::async_trait]
pub trait Store: Send + Sync {
    /// `"sqlite"` or `"postgres"`.
    fn backend(&self) -> &'static str;

    /// The store's instance id, fixed when its schema was created: the SSE
    /// epoch (a cursor from another epoch means another event log).
    fn epoch(&self) -> &str;

    /// Creates a battle with its contestants, or a run with its steps, with
    /// their first tasks and the first event, in one transaction (guarantee
    /// 1). Returns the stored event.
    ///
    /// Every owner's kind must belong to the work's kind and every task
    /// must name one of the new owners (`invalid_input`); an id already in
    /// the store is a `conflict`.
    async fn create_work(&self, work: NewWork) -> Result<EventRecord, Error>;

    /// Queues tasks for existing owners (a step that became ready, a
    /// re-dispatch on resume), with an optional event of the first task's
    /// work, in one transaction. An unknown owner is `not_found_id`; an id
    /// already in the store is a `conflict` (re-enqueuing after a crash is
    /// safe).
    async fn enqueue(
        &self,
        tasks: Vec<TaskSpec>,
        event: Option<NewEvent>,
    ) -> Result<Vec<Task>, Error>;

    /// Adds one owner (a cross-examination, a judge) to an existing work,
    /// with its tasks and an optional event of the work about it, in one
    /// transaction. Returns the event when one was given.
    ///
    /// An unknown work is `not_found_id`; an owner whose kind does not
    /// belong to the work's kind, or a task that does not name this owner,
    /// is `invalid_input`; an owner or task id already in the store is a
    /// `conflict`. On any error nothing is written: no owner without its
    /// tasks.
    async fn add_owner(
        &self,
        work_id: &str,
        owner: NewOwner,
        tasks: Vec<TaskSpec>,
        event: Option<NewEvent>,
    ) -> Result<Option<EventRecord>, Error>;

    /// Claims up to `request.limit` available tasks (guarantees 2 and 3):
    /// oldest `available_at` first within a lane, lanes in the requested
    /// order, never more running tasks in a lane than its capacity, only
    /// tasks whose owner is of one of `request.owner_kinds` (any kind when
    /// empty). Each claim counts an attempt and gets a fresh lease token.
    /// An empty answer means nothing is claimable now.
    async fn claim(&self, request: &ClaimRequest) -> Result<Vec<Claim>, Error>;

    /// Extends the lease by `ttl` from now (database clock) and returns the
    /// new expiry; `conflict` when the lease is lost (the holder must stop
    /// its agent and write nothing). A lease that expired but was not yet
    /// rescued is still the holder's and can be extended: nobody else has
    /// the task.
    async fn heartbeat(&self, fence: &Fence, ttl: std::time::Duration) -> Result<Millis, Error>;

    /// [`Store::heartbeat`] for many leases in one write: one answer per
    /// fence, in order — the new expiry, or the `conflict` / `not_found_id`
    /// of a lost lease — each lease fenced on its own, so one lost lease
    /// does not fail its neighbours. The outer error is the write's own
    /// (`io`, `invalid_input` for a zero `ttl`), nothing extended. The
    /// default makes one [`Store::heartbeat`] per fence (a wrapper's);
    /// SQLite and PostgreSQL extend every lease in one statement.
    async fn heartbeat_many(
        &self,
        fences: &[Fence],
        ttl: std::time::Duration,
    ) -> Result<Vec<Result<Millis, Error>>, Error> {
        if ttl.is_zero() {
            return Err(Error::invalid_input("a heartbeat's ttl must be positive"));
        }
        let mut answers = Vec::with_capacity(fences.len());
        for fence in fences {
            answers.push(match self.heartbeat(fence, ttl).await {
                Err(e) if e.kind() == crate::ErrorKind::Io => return Err(e),
                answer => answer,
            });
        }
        Ok(answers)
    }

    /// A holder's write that does not end the task: the owner's update and
    /// its event, fenced. Returns the event when one was given.
    async fn record(&self, fence: &Fence, update: Update) -> Result<Option<EventRecord>, Error>;

    /// A lease holder's write of several rows of its task's work at once,
    /// in one transaction fenced like [`Store::record`]: the work's
    /// compare-and-set, then each owner's in order (one owner may appear
    /// twice; the second sees the first's status), then the events, appended
    /// in order with the task's work, their `owner_id` and the task's id.
    /// Returns the appended events in order (`[]` for no events; empty
    /// `Changes` only check the fence).
    ///
    /// Errors, each writing nothing: a fence that no longer matches a
    /// running task is the `conflict` of a lost lease; an event of a type
    /// the store does not keep (`agent_output`) is `invalid_input` before
    /// the database is touched; an owner (in a change or an event) of
    /// another work is `invalid_input`, an unknown one `not_found_id`; a
    /// work or owner whose status is not one of its change's `from` is a
    /// `conflict` naming the row, its status and the allowed ones.
    /// Linear in the size of `changes`.
    async fn record_changes(
        &self,
        fence: &Fence,
        changes: Changes,
    ) -> Result<Vec<EventRecord>, Error>;

    /// Finishes a work without a lease — a cancel, a stop, a reconcile
    /// that fails an orphaned work: in one transaction, optionally every
    /// unfinished task of the work cancelled ([`Finish::cancel_tasks`], so
    /// a running holder's next fenced write is a `conflict`), the work's
    /// compare-and-set, its owners' in order (one owner may appear twice;
    /// the second sees the first's status), then the events appended in
    /// order with the work, their `owner_id` and no task. No reader ever
    /// sees the work's final status without its owners' — or the other way
    /// round. Returns the appended events and the cancelled tasks.
    ///
    /// The owners' events should come before the work's final one: a
    /// follower that stops at the work's final status has then seen every
    /// owner's.
    ///
    /// Errors, each writing nothing: a `finish` without a work change, a
    /// malformed id or an event of a type the store does not keep
    /// (`agent_output`) is `invalid_input` before the database is touched;
    /// an unknown work is `not_found_id`; an owner (in a change or an
    /// event) of another work is `invalid_input`, an unknown one
    /// `not_found_id`; a work or owner whose status is not one of its
    /// change's `from` is a `conflict` naming the row, its status and the
    /// allowed ones. Linear in the size of `finish` and the work's live
    /// tasks.
    async fn finish_work(&self, work_id: &str, finish: Finish) -> Result<Finished, Error>;

    /// Ends the attempt (fenced): the task's new state per the outcome and
    /// its retry policy, the owner's update, the follow-up tasks and the
    /// event, in one transaction. Returns the task as it is now (`pending`
    /// again when a retry was scheduled). A zombie's late completion is a
    /// `conflict` and changes nothing.
    async fn complete(&self, fence: &Fence, completion: Completion) -> Result<Task, Error>;

    /// Cancels a task that is not finished (pending, running or blocked),
    /// with `reason` as its error, the owner's update and the event. A
    /// running holder's next write is then a `conflict`. A finished task is
    /// a `conflict`.
    async fn cancel(&self, task_id: &str, reason: &str, update: Update) -> Result<Task, Error>;

    /// Puts back up to `limit` tasks whose lease expired (database clock):
    /// `pending` again while rescues are left, else `failed` with error
    /// `lease expired` (guarantee 4). Safe to run from every server at once.
    async fn rescue_expired(&self, limit: u32) -> Result<Vec<Rescued>, Error>;

    /// Compare-and-set of a work's or owner's status (and data), with its
    /// event; `conflict` when the status is not one of `from`.
    async fn transition(&self, transition: Transition) -> Result<Option<EventRecord>, Error>;

    /// One task.
    async fn task(&self, id: &str) -> Result<Task, Error>;

    /// A work with its owners and tasks, read in one snapshot.
    async fn work(&self, id: &str) -> Result<WorkSnapshot, Error>;

    /// One owner (contestant, step, judge, cross-examination) by id;
    /// `not_found_id` when there is none.
    async fn owner(&self, id: &str) -> Result<Owner, Error>;

    /// One page of the works of `filter.kind`, newest first (`created_at`
    /// descending, then `id` descending), filtered by status and by a
    /// top-level string field of `data`. Keyset-paginated: following
    /// `next_cursor` until it is `None` returns every work that matched
    /// when the first page was read (and still matches) exactly once,
    /// whatever is created in between. A limit outside 1 to
    /// [`MAX_WORK_PAGE_LIMIT`], a bad data field key or a cursor that did
    /// not come from `next_cursor` is `invalid_input`.
    async fn list_works(&self, filter: &WorkFilter) -> Result<WorkPage, Error>;

    /// Up to `limit` events with `seq > after`, in `seq` order (guarantee
    /// 5: reading again from the last seq seen never misses an event).
    async fn events_after(&self, after: i64, limit: u32) -> Result<Vec<EventRecord>, Error>;

    /// Up to `limit` events of the battle or run `work_id` with `seq >
    /// after`, in `seq` order: one subject's history without reading the
    /// rest of the log (the index `events_by_work`). An unknown id has no
    /// events. What [`crate::watch::Watch`] replays.
    async fn work_events(
        &self,
        work_id: &str,
        after: i64,
        limit: u32,
    ) -> Result<Vec<EventRecord>, Error>;

    /// The event log's window for the SSE replay decision
    /// ([`crate::event::decide_replay`]): the epoch, the oldest retained
    /// seq and the newest committed seq (0 for an empty log).
    async fn event_window(&self) -> Result<crate::event::StoreWindow, Error>;

    /// Every lane with its capacity and running tasks, in [`Lane::ALL`]
    /// order.
    ///
    /// [`Lane::ALL`]: crate::task::Lane::ALL
    async fn lanes(&self) -> Result<Vec<LaneState>, Error>;

    /// Sets a lane's capacity (`None` = unbounded) for every server. Tasks
    /// already running keep running; claims that start after it returns
    /// respect the new capacity (on PostgreSQL a claim of an unbounded lane
    /// already under way may finish under the old one, as if it had come
    /// just before). The
    /// `driver` lane is never capped: a capacity for it is `invalid_input`
    /// ([`check_lane_capacity`]; `None` is accepted and changes nothing).
    async fn set_lane_capacity(
        &self,
        lane: crate::task::Lane,
        capacity: Option<u32>,
    ) -> Result<(), Error>;

    /// Deletes what is older than `retain` (measured by the database's
    /// clock), in one transaction, and counts it:
    ///
    /// - every battle or run that is final (`completed`, `failed`,
    ///   `cancelled`), was last updated before the cutoff and has no task
    ///   left to do (none `pending`, `running` or `blocked`: a late
    ///   cross-examination keeps its battle), with its contestants or
    ///   steps, its tasks and its events;
    /// - every other event created before the cutoff.
    ///
    /// The newest event of the log always stays, so seqs never go back. The
    /// log's oldest retained seq moves up, and an SSE client resuming below
    /// it gets `gap` (or a `reset` for another epoch) as for any compacted
    /// log ([`crate::event::decide_replay`]). Live works keep their rows and
    /// tasks; files outside the database (a battle's results folder, a
    /// run's artifacts) are not touched. `retain` must be at least a minute
    /// (`invalid_input`: a smaller one is nearly always a unit mistake).
    async fn compact(&self, retain: std::time::Duration) -> Result<Compacted, Error>;

    /// The database clock, in ms since the Unix epoch: the clock every
    /// stored time, lease and `available_at` is read from. A process that
    /// persists timers of its own (a flow step's deadline or backoff) reads
    /// them against this clock, not its wall clock, so every server sharing
    /// the store agrees when one falls due whatever their clocks' skew.
    /// Default: the local wall clock (a store with no database).
    async fn clock_ms(&self) -> Result<Millis, Error> {
        Ok(std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as Millis)
            .unwrap_or(0))
    }

    /// Starts telling `wake` of commits that appended events — by any
    /// handle on the same database, other processes included — until
    /// `stop`, and says how ([`CommitFeed`]). `wake` is also notified after
    /// the feed reconnects (notifications sent while it was away are lost,
    /// so the reader must look for itself), and spuriously at times; it is
    /// never the only way to learn of a commit — a reader still polls, as a
    /// backstop.
    ///
    /// PostgreSQL `LISTEN`s to the schema's channel (each handle sends a
    /// payload-free `NOTIFY` there after its commits that appended events:
    /// at once for a lone commit, at most one per 2 ms under load); it
    /// answers
    /// [`CommitFeed::Polling`] when the database cannot deliver one (a
    /// transaction-mode pooler such as PgBouncer drops `LISTEN`: a probe
    /// notification must arrive first). The default — SQLite's — has no
    /// feed: another process's commits are seen at the reader's poll.
    async fn watch_commits(
        &self,
        wake: std::sync::Arc<tokio::sync::Notify>,
        stop: tokio_util::sync::CancellationToken,
    ) -> CommitFeed {
        let _ = (wake, stop);
        CommitFeed::Polling {
            reason: format!("the {} store has no commit notifications", self.backend()),
        }
    }
}

/// What [`Store::compact`] deleted.
#[cfg(feature = "runtime")]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Compacted {
    /// Battles and runs, with their contestants or steps.
    pub works: u64,
    /// Their tasks.
    pub tasks: u64,
    /// Events: the deleted works' and every other one older than the
    /// cutoff (never the log's newest).
    pub events: u64,
}

/// The smallest `retain` [`Store::compact`] accepts.
pub const MIN_RETAIN: std::time::Duration = std::time::Duration::from_secs(60);

/// `invalid_input` for a `retain` under [`MIN_RETAIN`], naming the field.
pub fn check_retain(retain: std::time::Duration) -> Result<(), Error> {
    if retain < MIN_RETAIN {
        return Err(Error::invalid_input(format!(
            "retain {retain:?} is under a minute: compaction keeps what is younger than \
             `retain` (write it with a unit, e.g. \"30d\" or \"12h\")"
        ))
        .with_detail("path", "retain"));
    }
    Ok(())
}

/// How a reader of the event log learns of other handles' commits
/// ([`Store::watch_commits`]).
#[cfg(feature = "runtime")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommitFeed {
    /// Woken by the database at each commit (PostgreSQL `LISTEN`); a poll
    /// stays only as a slow backstop.
    Listening,
    /// No feed: commits of other handles are seen at the reader's poll.
    Polling {
        /// Why, in words for an operator.
        reason: String,
    },
}

/// Opens the store a server is configured with: PostgreSQL when `db` is a
/// `postgres://` or `postgresql://` URL, otherwise SQLite — the file `db`
/// names (`sqlite://` prefix optional) or `<data_dir>/coderig.db` when `db`
/// is `None`. Migrations run at open. A backend not compiled in is
/// `unavailable`; a URL of another scheme (`mysql://`) is `invalid_input`.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub async fn open(
    db: Option<&str>,
    data_dir: &std::path::Path,
) -> Result<std::sync::Arc<dyn Store>, Error> {
    if let Some((scheme, _)) = db.and_then(|url| url.split_once("://")) {
        if !matches!(scheme, "postgres" | "postgresql" | "sqlite") {
            // The URL itself is not echoed: it may carry a password.
            return Err(Error::invalid_input(format!(
                "a store is postgres://… (or postgresql://…), sqlite://PATH or a file path, not {scheme}://"
            ))
            .with_detail("path", "db"));
        }
    }
    match db {
        Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
            #[cfg(feature = "postgres")]
            {
                Ok(std::sync::Arc::new(PostgresStore::connect(url).await?))
            }
            #[cfg(not(feature = "postgres"))]
            {
                let _ = url;
                Err(Error::unavailable(
                    "this build of coderig has no PostgreSQL store (feature `postgres`)",
                ))
            }
        }
        _ => {
            #[cfg(feature = "sqlite")]
            {
                let store = match db {
                    None => SqliteStore::open(data_dir).await?,
                    Some(path) => {
                        let path = path.strip_prefix("sqlite://").unwrap_or(path);
                        let path = path.strip_prefix("sqlite:").unwrap_or(path);
                        SqliteStore::open_file(std::path::Path::new(path)).await?
                    }
                };
                Ok(std::sync::Arc::new(store))
            }
            #[cfg(not(feature = "sqlite"))]
            {
                let _ = data_dir;
                Err(Error::unavailable(
                    "this build of coderig has no SQLite store (feature `sqlite`)",
                ))
            }
        }
    }
}
