//! What the sqlx backends share: the error inside a transaction, the
//! mapping of database errors to the taxonomy, and reading records back
//! from rows (both backends select the same column names with the same
//! types: text, 64-bit integers, doubles; times as milliseconds).

use super::records::*;
use crate::error::Error;
use crate::task::Lane;
use crate::task::TaskState;
use serde_json::Value;
use sqlx::{ColumnIndex, Decode, Row, Type};

/// An error inside a transaction: the database's (a busy SQLite database is
/// retried by the caller), or the store's own refusal (a lost lease, ...).
#[derive(Debug)]
pub(crate) enum TxError {
    Sql(sqlx::Error),
    Store(Error),
}

impl From<sqlx::Error> for TxError {
    fn from(e: sqlx::Error) -> Self {
        TxError::Sql(e)
    }
}

impl From<Error> for TxError {
    fn from(e: Error) -> Self {
        TxError::Store(e)
    }
}

impl TxError {
    /// The error as every face sees it.
    pub(crate) fn into_error(self, backend: &str) -> Error {
        match self {
            TxError::Store(e) => e,
            TxError::Sql(e) => sql_error(backend, e),
        }
    }
}

/// A database error as an `io` error (the store could not do its job).
pub(crate) fn sql_error(backend: &str, e: sqlx::Error) -> Error {
    Error::io(format!("{backend} store: {e}")).with_detail("backend", backend)
}

/// Maps a unique violation to a `conflict` naming the duplicate.
pub(crate) fn on_duplicate(e: sqlx::Error, what: &str, id: &str) -> TxError {
    if let sqlx::Error::Database(db) = &e {
        if db.is_unique_violation() {
            return TxError::Store(
                Error::conflict(format!("a {what} with id {id:?} already exists"))
                    .with_detail("what", what)
                    .with_detail("id", id),
            );
        }
    }
    TxError::Sql(e)
}

/// Serializes a JSON value for a text (or jsonb) column.
pub(crate) fn json_text(value: &Value) -> String {
    value.to_string()
}

/// Clamps an unsigned count or duration into a 64-bit column.
pub(crate) fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A duration in whole milliseconds (at least 1 for a positive one).
pub(crate) fn millis(d: std::time::Duration) -> i64 {
    let ms = to_i64(d.as_millis().min(u64::MAX as u128) as u64);
    if ms == 0 && !d.is_zero() {
        1
    } else {
        ms
    }
}

fn corrupt(what: &str, detail: impl std::fmt::Display) -> Error {
    Error::internal(format!("store row: bad {what}: {detail}"))
}

/// Typed column access shared by SQLite and PostgreSQL rows.
pub(crate) trait RowExt {
    fn text(&self, column: &str) -> Result<String, Error>;
    fn opt_text(&self, column: &str) -> Result<Option<String>, Error>;
    fn int(&self, column: &str) -> Result<i64, Error>;
    fn opt_int(&self, column: &str) -> Result<Option<i64>, Error>;
    fn real(&self, column: &str) -> Result<f64, Error>;

    fn count(&self, column: &str) -> Result<u32, Error> {
        let n = self.int(column)?;
        u32::try_from(n).map_err(|_| corrupt(column, n))
    }

    fn json(&self, column: &str) -> Result<Value, Error> {
        let text = self.text(column)?;
        serde_json::from_str(&text).map_err(|e| corrupt(column, e))
    }

    fn opt_json(&self, column: &str) -> Result<Option<Value>, Error> {
        match self.opt_text(column)? {
            None => Ok(None),
            Some(text) => serde_json::from_str(&text)
                .map(Some)
                .map_err(|e| corrupt(column, e)),
        }
    }

    fn name<T: std::str::FromStr>(&self, column: &str) -> Result<T, Error>
    where
        T::Err: std::fmt::Display,
    {
        let text = self.text(column)?;
        text.parse().map_err(|e| corrupt(column, e))
    }
}

impl<R> RowExt for R
where
    R: Row,
    for<'a> &'a str: ColumnIndex<R>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> f64: Decode<'r, R::Database> + Type<R::Database>,
{
    fn text(&self, column: &str) -> Result<String, Error> {
        self.try_get::<String, _>(column)
            .map_err(|e| corrupt(column, e))
    }
    fn opt_text(&self, column: &str) -> Result<Option<String>, Error> {
        self.try_get::<Option<String>, _>(column)
            .map_err(|e| corrupt(column, e))
    }
    fn int(&self, column: &str) -> Result<i64, Error> {
        self.try_get::<i64, _>(column)
            .map_err(|e| corrupt(column, e))
    }
    fn opt_int(&self, column: &str) -> Result<Option<i64>, Error> {
        self.try_get::<Option<i64>, _>(column)
            .map_err(|e| corrupt(column, e))
    }
    fn real(&self, column: &str) -> Result<f64, Error> {
        self.try_get::<f64, _>(column)
            .map_err(|e| corrupt(column, e))
    }
}

/// A task from a row with the task columns.
pub(crate) fn task_from_row(row: &impl RowExt) -> Result<Task, Error> {
    Ok(Task {
        id: row.text("id")?,
        work_id: row.text("work_id")?,
        owner: OwnerRef {
            kind: row.name("owner_kind")?,
            id: row.text("owner_id")?,
        },
        lane: row.name::<Lane>("lane")?,
        state: row.name::<TaskState>("state")?,
        payload: row.json("payload")?,
        attempt: row.count("attempt")?,
        failures: row.count("failures")?,
        rescues: row.count("rescues")?,
        retry: RetryPolicy {
            max_attempts: row.count("max_attempts")?,
            initial_ms: row.int("backoff_initial_ms")?.max(0) as u64,
            multiplier: row.real("backoff_multiplier")?,
            max_ms: row.int("backoff_max_ms")?.max(0) as u64,
        },
        max_rescues: row.count("max_rescues")?,
        available_at: row.int("available_at")?,
        worker: row.opt_text("worker")?,
        lease_expires_at: row.opt_int("lease_expires_at")?,
        heartbeat_at: row.opt_int("heartbeat_at")?,
        result: row.opt_json("result")?,
        error: row.opt_text("error")?,
        created_at: row.int("created_at")?,
        started_at: row.opt_int("started_at")?,
        finished_at: row.opt_int("finished_at")?,
    })
}

/// A claim from a row with the task columns and `lease_token`.
pub(crate) fn claim_from_row(row: &impl RowExt) -> Result<Claim, Error> {
    let task = task_from_row(row)?;
    let lease_token = row.text("lease_token")?;
    let lease_expires_at = task
        .lease_expires_at
        .ok_or_else(|| corrupt("lease_expires_at", "a claimed task without a lease"))?;
    Ok(Claim {
        task,
        lease_token,
        lease_expires_at,
    })
}

/// An event from a row with the event columns.
pub(crate) fn event_from_row(row: &impl RowExt) -> Result<EventRecord, Error> {
    Ok(EventRecord {
        seq: row.int("seq")?,
        kind: row.name("kind")?,
        work_id: row.text("work_id")?,
        owner_id: row.opt_text("owner_id")?,
        task_id: row.opt_text("task_id")?,
        payload: row.json("payload")?,
        created_at: row.int("created_at")?,
    })
}

/// A work from a row with the work columns.
pub(crate) fn work_from_row(row: &impl RowExt) -> Result<Work, Error> {
    Ok(Work {
        id: row.text("id")?,
        kind: row.name("kind")?,
        status: row.text("status")?,
        data: row.json("data")?,
        created_at: row.int("created_at")?,
        updated_at: row.int("updated_at")?,
    })
}

/// An owner from a row with the owner columns.
pub(crate) fn owner_from_row(row: &impl RowExt) -> Result<Owner, Error> {
    Ok(Owner {
        id: row.text("id")?,
        work_id: row.text("work_id")?,
        kind: row.name("kind")?,
        status: row.text("status")?,
        data: row.json("data")?,
        updated_at: row.int("updated_at")?,
    })
}

/// The `conflict` of a fenced write whose lease is gone, or `not_found_id`
/// when the task does not exist at all.
pub(crate) fn lost_lease(task_id: &str, now: Option<(TaskState, u32, Option<String>)>) -> Error {
    match now {
        None => Error::not_found_id("task", task_id),
        Some((state, attempt, worker)) => Error::conflict(format!(
            "task {task_id:?} is no longer held by this lease (it is {state}, attempt {attempt}{}); \
             the holder must stop its work and write nothing",
            worker.map(|w| format!(", last claimed by {w:?}")).unwrap_or_default()
        ))
        .with_detail("task_id", task_id)
        .with_detail("state", state.as_str())
        .with_detail("attempt", attempt),
    }
}

/// The lanes a claim visits: the requested ones in order without repeats,
/// or every lane.
pub(crate) fn claim_lanes(request: &ClaimRequest) -> Vec<Lane> {
    if request.lanes.is_empty() {
        return Lane::ALL.to_vec();
    }
    let mut lanes = Vec::new();
    for lane in &request.lanes {
        if !lanes.contains(lane) {
            lanes.push(*lane);
        }
    }
    lanes
}

/// The owner kinds a claim may take, as their names; empty means every
/// kind (the queries skip the filter for an empty list).
pub(crate) fn owner_kind_names(request: &ClaimRequest) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for kind in &request.owner_kinds {
        if !names.iter().any(|n| n == kind.as_str()) {
            names.push(kind.as_str().to_string());
        }
    }
    names
}

/// The new expiry of each fence of a batched heartbeat, in the fences'
/// order, from the rows the renewing statement returned (`id`,
/// `lease_token`, `lease_expires_at`); `None` for a lease that was not
/// renewed (lost: the caller reads why, in its dialect).
pub(crate) fn renewed_in_order(
    fences: &[Fence],
    renewed: &[impl RowExt],
) -> Result<Vec<Option<Millis>>, Error> {
    let mut expiries = std::collections::HashMap::new();
    for row in renewed {
        let key = (row.text("id")?, row.text("lease_token")?);
        expiries.insert(key, row.int("lease_expires_at")?);
    }
    Ok(fences
        .iter()
        .map(|f| {
            expiries
                .get(&(f.task_id.clone(), f.lease_token.clone()))
                .copied()
        })
        .collect())
}

/// Every row through `f`.
pub(crate) fn rows<R, T>(rows: &[R], f: impl Fn(&R) -> Result<T, Error>) -> Result<Vec<T>, Error> {
    rows.iter().map(f).collect()
}

pub(crate) fn lane_from_row(row: &impl RowExt) -> Result<LaneState, Error> {
    Ok(LaneState {
        lane: row.name("name")?,
        capacity: row
            .opt_int("capacity")?
            .map(|c| u32::try_from(c).unwrap_or(u32::MAX)),
        running: row.count("running")?,
    })
}

pub(crate) fn in_lane_order(mut lanes: Vec<LaneState>) -> Vec<LaneState> {
    lanes.sort_by_key(|l| Lane::ALL.iter().position(|x| *x == l.lane));
    lanes
}

/// The replay window from the oldest and newest seq in the log (0, 0 when
/// it is empty).
pub(crate) fn window(epoch: &str, oldest: i64, newest: i64) -> crate::event::StoreWindow {
    let newest = u64::try_from(newest).unwrap_or(0);
    let oldest = if oldest <= 0 {
        newest + 1
    } else {
        oldest as u64
    };
    crate::event::StoreWindow {
        epoch: epoch.to_string(),
        oldest_retained: oldest,
        newest,
    }
}
