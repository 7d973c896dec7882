//! The store's reads, once for every SQL backend. Each runs on whatever
//! connection its backend gives it: a snapshot transaction for reads of
//! several statements, a single autocommit statement otherwise.

use super::{args, Conn, Statements};
use crate::error::Error;
use crate::store::listing::WorkCursor;
use crate::store::records::*;
use crate::store::sql::*;
use crate::task::Lane;
use serde_json::Value;

/// `Store::task`.
pub(crate) async fn task<C: Conn>(tx: &mut C, sql: &Statements, id: &str) -> Result<Task, TxError> {
    match tx.fetch_optional(&sql.task, args![id]).await? {
        Some(row) => Ok(task_from_row(&row)?),
        None => Err(Error::not_found_id("task", id).into()),
    }
}

/// `Store::work`: the work, its owners in order, its tasks in the order
/// they were enqueued (three statements: run them in one snapshot).
pub(crate) async fn work<C: Conn>(
    tx: &mut C,
    sql: &Statements,
    id: &str,
) -> Result<WorkSnapshot, TxError> {
    let Some(row) = tx.fetch_optional(&sql.work, args![id]).await? else {
        return Err(Error::not_found_id("battle or run", id).into());
    };
    let work = work_from_row(&row)?;
    let owners = tx.fetch_all(&sql.work_owners, args![id]).await?;
    let tasks = tx.fetch_all(&sql.work_tasks, args![id]).await?;
    Ok(WorkSnapshot {
        work,
        owners: rows(&owners, owner_from_row)?,
        tasks: rows(&tasks, task_from_row)?,
    })
}

/// `Store::owner`.
pub(crate) async fn owner<C: Conn>(
    tx: &mut C,
    sql: &Statements,
    id: &str,
) -> Result<Owner, TxError> {
    match tx.fetch_optional(&sql.owner, args![id]).await? {
        Some(row) => Ok(owner_from_row(&row)?),
        None => Err(Error::not_found_id("owner", id).into()),
    }
}

/// `Store::list_works` after the filter's check: one more row than the
/// page (whether it exists says if there is a next page).
pub(crate) async fn list_works<C: Conn>(
    tx: &mut C,
    sql: &Statements,
    filter: &WorkFilter,
    cursor: Option<&WorkCursor>,
) -> Result<Vec<Work>, TxError> {
    let (key, value) = match &filter.data_field {
        Some((key, value)) => (Some(key.as_str()), Some(value.as_str())),
        None => (None, None),
    };
    let found = tx
        .fetch_all(
            &sql.list_works,
            args![
                filter.kind.as_str(),
                Value::from(filter.statuses.clone()).to_string(),
                key,
                value,
                cursor.map(|c| c.created_at),
                cursor.map(|c| c.id.as_str()),
                i64::from(filter.limit) + 1,
            ],
        )
        .await?;
    Ok(rows(&found, work_from_row)?)
}

/// `Store::events_after` (`work_id` `None`) and `Store::work_events`.
pub(crate) async fn events<C: Conn>(
    tx: &mut C,
    sql: &Statements,
    work_id: Option<&str>,
    after: i64,
    limit: u32,
) -> Result<Vec<EventRecord>, TxError> {
    let found = match work_id {
        None => {
            tx.fetch_all(&sql.events_after, args![after, i64::from(limit)])
                .await?
        }
        Some(work_id) => {
            tx.fetch_all(&sql.work_events, args![work_id, after, i64::from(limit)])
                .await?
        }
    };
    Ok(rows(&found, event_from_row)?)
}

/// The oldest and newest seq of the log (0, 0 when it is empty).
pub(crate) async fn seq_range<C: Conn>(
    tx: &mut C,
    sql: &Statements,
) -> Result<(i64, i64), TxError> {
    let row = tx.fetch_optional(&sql.seq_range, Vec::new()).await?;
    let row = super::one(row, "the event log's range")?;
    Ok((row.int("oldest")?, row.int("newest")?))
}

/// `Store::lanes`, in [`Lane::ALL`] order.
pub(crate) async fn lanes<C: Conn>(
    tx: &mut C,
    sql: &Statements,
) -> Result<Vec<LaneState>, TxError> {
    let found = tx.fetch_all(&sql.lanes, Vec::new()).await?;
    Ok(in_lane_order(rows(&found, lane_from_row)?))
}

/// `Store::set_lane_capacity` (checked).
pub(crate) async fn set_lane_capacity<C: Conn>(
    tx: &mut C,
    sql: &Statements,
    lane: Lane,
    capacity: Option<u32>,
) -> Result<(), TxError> {
    tx.execute(
        &sql.set_lane_capacity,
        args![lane.as_str(), capacity.map(i64::from)],
    )
    .await?;
    Ok(())
}

/// `Store::clock_ms`: the database clock.
pub(crate) async fn clock<C: Conn>(tx: &mut C, sql: &Statements) -> Result<Millis, TxError> {
    let row = tx.fetch_optional(&sql.clock, Vec::new()).await?;
    Ok(super::one(row, "the clock")?.int("now")?)
}
