//! The one body of store logic, as River writes its job queue once above
//! its drivers: every write transaction of the SQL backends — what it
//! reads, which compare-and-set or fence it checks, what it writes and in
//! which order, which events it appends — written once here, over a seam
//! one statement wide:
//!
//! - [`Conn`]: run one statement with its bound [`Arg`]s (implemented for
//!   `SqliteConnection` and `PgConnection`, each in its dialect's
//!   `statements.rs`);
//! - [`Statements`]: the named SQL text of each statement, one instance
//!   per dialect (and per PostgreSQL schema, whose advisory-lock key it
//!   carries).
//!
//! What stays in a backend is what really differs: how a transaction
//! begins and is retried (`BEGIN IMMEDIATE` and busy retries on SQLite,
//! deadlock and serialization retries on PostgreSQL), the SQL text, and a
//! PostgreSQL claim's lane locks. Lists cross the seam as one JSON array
//! text bound once (`json_each` on SQLite, `jsonb_array_elements` on
//! PostgreSQL), so a write of n rows is one statement, not n.

use super::records::*;
use super::sql::{RowExt, TxError};

mod changes;
mod leases;
mod reads;
mod retention;
mod store_impl;
mod writes;

pub(crate) use changes::{finish_work, record_changes};
pub(crate) use leases::*;
pub(crate) use reads::*;
pub(crate) use retention::compact;
pub(crate) use store_impl::sql_store;
pub(crate) use writes::*;

/// One value bound to a statement parameter (`$1`, `$2`, … in order).
#[derive(Debug, Clone)]
pub(crate) enum Arg<'a> {
    Text(&'a str),
    OptText(Option<&'a str>),
    Owned(String),
    OptOwned(Option<String>),
    Int(i64),
    OptInt(Option<i64>),
    Real(f64),
    Bool(bool),
}

impl<'a> From<&'a str> for Arg<'a> {
    fn from(v: &'a str) -> Self {
        Arg::Text(v)
    }
}
impl<'a> From<&'a String> for Arg<'a> {
    fn from(v: &'a String) -> Self {
        Arg::Text(v)
    }
}
impl<'a> From<Option<&'a str>> for Arg<'a> {
    fn from(v: Option<&'a str>) -> Self {
        Arg::OptText(v)
    }
}
impl From<String> for Arg<'_> {
    fn from(v: String) -> Self {
        Arg::Owned(v)
    }
}
impl From<Option<String>> for Arg<'_> {
    fn from(v: Option<String>) -> Self {
        Arg::OptOwned(v)
    }
}
impl From<i64> for Arg<'_> {
    fn from(v: i64) -> Self {
        Arg::Int(v)
    }
}
impl From<Option<i64>> for Arg<'_> {
    fn from(v: Option<i64>) -> Self {
        Arg::OptInt(v)
    }
}
impl From<f64> for Arg<'_> {
    fn from(v: f64) -> Self {
        Arg::Real(v)
    }
}
impl From<bool> for Arg<'_> {
    fn from(v: bool) -> Self {
        Arg::Bool(v)
    }
}

/// The bound values of one statement, in parameter order.
macro_rules! args {
    ($($value:expr),* $(,)?) => {
        vec![$(crate::store::body::Arg::from($value)),*]
    };
}
pub(crate) use args;

/// One connection (inside a transaction or not) of a dialect: the whole
/// seam between the body and a database.
#[async_trait::async_trait]
pub(crate) trait Conn: Send {
    /// A row as the body reads it (by column name, see [`RowExt`]).
    type Row: RowExt + Send;

    /// Runs a statement; the number of rows it changed.
    async fn execute<'q>(&mut self, sql: &'q str, args: Vec<Arg<'q>>) -> Result<u64, TxError>;

    /// Runs a statement; every row it returned.
    async fn fetch_all<'q>(
        &mut self,
        sql: &'q str,
        args: Vec<Arg<'q>>,
    ) -> Result<Vec<Self::Row>, TxError>;

    /// Runs a statement; its first row, if any.
    async fn fetch_optional<'q>(
        &mut self,
        sql: &'q str,
        args: Vec<Arg<'q>>,
    ) -> Result<Option<Self::Row>, TxError>;

    /// Called before a transaction appends events: a dialect may note
    /// that it did (PostgreSQL: its commit is announced to listeners).
    fn before_append(&mut self) {}
}

/// The named SQL statements of one dialect. Parameters are `$1`, `$2`, …
/// in the order each field's doc lists them; list parameters are one JSON
/// array (text). Statements that return tasks, events, works or owners
/// return the columns `store::sql`'s `*_from_row` read.
#[derive(Debug, Clone)]
pub(crate) struct Statements {
    /// `work_id, task_id?, [[kind, owner_id?, payload text], …]` → the
    /// events, one row each, seqs in the array's order. Seqs become visible
    /// in order: the statement takes whatever lock orders commits before
    /// it takes a seq (PostgreSQL: the schema's advisory lock, held to
    /// commit; SQLite's write lock is held from `BEGIN IMMEDIATE`).
    pub insert_events: String,
    /// `id, kind, status, data text`.
    pub insert_work: String,
    /// `work_id, [[id, kind, status, data text, n], …]`: ordinal `n` after
    /// the work's last owner (0, 1, … for a new work).
    pub insert_owners: String,
    /// `[id, …]` → `id` of each that exists already.
    pub existing_owners: String,
    /// `id, owner kind, owner id, lane, payload text, max_attempts,
    /// backoff_initial_ms, backoff_multiplier, backoff_max_ms, max_rescues,
    /// delay ms` → the task; no row when the owner does not exist.
    pub insert_task: String,
    /// `task id, lease token` → the task while that lease holds it
    /// (PostgreSQL: locked to commit).
    pub fenced_task: String,
    /// `task id, lease token` → the task while that lease holds it, with
    /// its work's `work_kind, work_status` (PostgreSQL: the task, then the
    /// work, locked): a fenced write's two reads in one round trip.
    pub fenced_work: String,
    /// `task id` → `state, attempt, worker`.
    pub task_state: String,
    /// `work id` → `kind, status` (PostgreSQL: locked).
    pub work_row: String,
    /// `[owner id, …]` (sorted) → `id, work_id, kind, status` (PostgreSQL:
    /// locked, in id order).
    pub owner_rows: String,
    /// `id, status?, data text?`: each `NULL` keeps the stored value.
    pub update_work: String,
    /// `[[id, status?, data text?], …]` (at most one entry per id) →
    /// `work_id` of each owner changed. Found by id alone (a work filter
    /// here steers planners onto the work's index: every owner of a
    /// 10,000-step run scanned per write); the caller checks the works and
    /// rolls back a write that reached another's.
    pub update_owners: String,
    /// `work id, reason` → every task of the work still pending, running or
    /// blocked, now `cancelled` (PostgreSQL: locked in id order).
    pub cancel_work_tasks: String,
    /// `task id, state, failures, retry in ms?, result text?, error?,
    /// finished` → the task as settled.
    pub settle_task: String,
    /// `task id, reason` → the task, now `cancelled`, when it was pending,
    /// running or blocked.
    pub cancel_task: String,
    /// `work id` → `status, work_id` (PostgreSQL: locked).
    pub work_status: String,
    /// `owner id` → `status, work_id` (PostgreSQL: locked).
    pub owner_status: String,
    /// `work id` → `kind` (PostgreSQL: the work locked).
    pub work_for_owner: String,

    // ----- leases -----
    /// `task id, lease token, ttl ms` → `lease_expires_at` when renewed.
    pub heartbeat: String,
    /// `[[task id, lease token], …], ttl ms` → `id, lease_token,
    /// lease_expires_at` of each renewed (PostgreSQL: locked in id order).
    pub heartbeat_many: String,
    /// `limit` → the rescued tasks (PostgreSQL: `SKIP LOCKED`, the
    /// predicate re-checked on the newest row version).
    pub rescue_expired: String,

    // ----- reads -----
    /// `task id` → the task.
    pub task: String,
    /// `work id` → the work.
    pub work: String,
    /// `work id` → its owners in ordinal order.
    pub work_owners: String,
    /// `work id` → its tasks in enqueue order.
    pub work_tasks: String,
    /// `owner id` → the owner.
    pub owner: String,
    /// `kind, [status, …] (empty: any), data key?, data value?, cursor
    /// created_at?, cursor id?, limit` → works newest first (see
    /// `store::listing`).
    pub list_works: String,
    /// `after seq, limit` → events in seq order.
    pub events_after: String,
    /// `work id, after seq, limit` → the work's events in seq order.
    pub work_events: String,
    /// No parameters → `oldest, newest` seq (0 when empty).
    pub seq_range: String,
    /// No parameters → `name, capacity, running` per lane.
    pub lanes: String,
    /// `lane, capacity?`.
    pub set_lane_capacity: String,
    /// No parameters → `now`: the database clock in ms.
    pub clock: String,

    // ----- retention -----
    /// `retain ms` → `id` of each work to delete.
    pub compact_victims: String,
    /// `retain ms, [work id, …]`: events older than the age or of those
    /// works, never the newest.
    pub compact_events: String,
    /// `[work id, …]`: their tasks.
    pub compact_tasks: String,
    /// `[work id, …]`: their owners.
    pub compact_owners: String,
    /// `[work id, …]`: the works.
    pub compact_works: String,
}

/// The statements both dialects spell alike.
pub(crate) mod portable {
    /// [`super::Statements::task_state`].
    pub const TASK_STATE: &str = "SELECT state, attempt, worker FROM tasks WHERE id = $1";
    /// [`super::Statements::lanes`].
    pub const LANES: &str = "SELECT name, capacity, (SELECT count(*) FROM tasks t \
         WHERE t.lane = l.name AND t.state = 'running') AS running FROM lanes l";
    /// [`super::Statements::set_lane_capacity`].
    pub const SET_LANE_CAPACITY: &str = "UPDATE lanes SET capacity = $2 WHERE name = $1";
}

/// Checks a statement that must return a row did (a constraint the schema
/// holds, e.g. an `UPDATE … WHERE id = $1 RETURNING` on a locked row).
pub(crate) fn one<R>(row: Option<R>, what: &str) -> Result<R, TxError> {
    row.ok_or_else(|| {
        TxError::Store(crate::error::Error::internal(format!(
            "store: {what} returned no row"
        )))
    })
}

/// The events of a transaction's appends, back in the order they were
/// given (the statement returns them in any order; seqs follow the
/// array's order).
pub(crate) fn in_seq_order(mut events: Vec<EventRecord>) -> Vec<EventRecord> {
    events.sort_by_key(|e| e.seq);
    events
}

/// Binds `args` in order to a sqlx query of any dialect whose types take
/// text, 64-bit integers, doubles and booleans (both of ours).
pub(crate) fn bind_all<'q, DB>(
    mut query: sqlx::query::Query<'q, DB, <DB as sqlx::Database>::Arguments<'q>>,
    args: Vec<Arg<'q>>,
) -> sqlx::query::Query<'q, DB, <DB as sqlx::Database>::Arguments<'q>>
where
    DB: sqlx::Database,
    &'q str: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    Option<&'q str>: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    String: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    Option<String>: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    i64: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    Option<i64>: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    f64: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    bool: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
{
    for arg in args {
        query = match arg {
            Arg::Text(v) => query.bind(v),
            Arg::OptText(v) => query.bind(v),
            Arg::Owned(v) => query.bind(v),
            Arg::OptOwned(v) => query.bind(v),
            Arg::Int(v) => query.bind(v),
            Arg::OptInt(v) => query.bind(v),
            Arg::Real(v) => query.bind(v),
            Arg::Bool(v) => query.bind(v),
        };
    }
    query
}

/// Implements [`Conn`] for a sqlx connection type (`$conn`, rows `$row`):
/// the same three calls in every dialect, so written once. A dialect that
/// notes appends passes `before_append: { … }`.
macro_rules! sqlx_conn {
    ($conn:ty, $row:ty $(, before_append: $hook:block)?) => {
        #[async_trait::async_trait]
        impl crate::store::body::Conn for $conn {
            type Row = $row;

            async fn execute<'q>(
                &mut self,
                sql: &'q str,
                args: Vec<crate::store::body::Arg<'q>>,
            ) -> Result<u64, crate::store::sql::TxError> {
                let query = crate::store::body::bind_all(sqlx::query(sql), args);
                Ok(query.execute(&mut *self).await?.rows_affected())
            }

            async fn fetch_all<'q>(
                &mut self,
                sql: &'q str,
                args: Vec<crate::store::body::Arg<'q>>,
            ) -> Result<Vec<$row>, crate::store::sql::TxError> {
                let query = crate::store::body::bind_all(sqlx::query(sql), args);
                Ok(query.fetch_all(&mut *self).await?)
            }

            async fn fetch_optional<'q>(
                &mut self,
                sql: &'q str,
                args: Vec<crate::store::body::Arg<'q>>,
            ) -> Result<Option<$row>, crate::store::sql::TxError> {
                let query = crate::store::body::bind_all(sqlx::query(sql), args);
                Ok(query.fetch_optional(&mut *self).await?)
            }

            $(
                fn before_append(&mut self) $hook
            )?
        }
    };
}
pub(crate) use sqlx_conn;
