//! The PostgreSQL transactions of `Store::record_changes` and
//! `Store::finish_work` (kept out of `postgres.rs` to keep it readable).
//! The decisions are the shared planner's (`store::changes`); this locks
//! and reads the rows it needs, then writes one prepared statement per
//! changed row and per event, the events under one take of the event log's
//! advisory lock.
//!
//! Lock order, the same in both: tasks, then the work, then the owners (in
//! id order), so a fenced write and a finish of one work cannot deadlock.

use super::{
    fenced_task, insert_event_locked, is_retryable, lock_events, PostgresStore, BACKEND,
    TASK_COLUMNS, WRITE,
};
use crate::error::Error;
use crate::store::changes::{
    check_changes, check_finish, named_owners, plan, OwnerRow, Plan, Scope,
};
use crate::store::records::*;
use crate::store::sql::*;
use std::collections::HashMap;
// The transaction macro names these types.
use sqlx::postgres::PgConnection;
use std::time::Duration;

/// The owner ids the changes name, sorted: locked in id order, two calls
/// naming the same owners cannot deadlock on them.
fn sorted_owners(changes: &Changes) -> Vec<String> {
    let mut named: Vec<String> = named_owners(changes)
        .into_iter()
        .map(String::from)
        .collect();
    named.sort_unstable();
    named
}

pub(super) async fn record_changes(
    store: &PostgresStore,
    fence: &Fence,
    changes: &Changes,
) -> Result<Vec<EventRecord>, Error> {
    check_changes(changes)?;
    let named = &sorted_owners(changes);
    let lock = store.event_lock;
    pg_tx!(store, WRITE, |tx| {
        // Locks: the task row (the fence), then the work, then the owners,
        // each held to commit, so every compare-and-set below stays true
        // against concurrent transitions and fenced writes.
        let task = fenced_task(tx, fence).await?;
        let work = match &changes.work {
            None => None,
            Some(_) => work_row(tx, &task.work_id).await?,
        };
        let owners = owner_rows(tx, named).await?;
        let work = work.as_ref().map(|(kind, status)| (*kind, status.as_str()));
        let plan = plan(
            &task.work_id,
            Scope::Fenced(&task.id),
            work,
            &owners,
            changes,
        )?;
        write_plan(tx, &plan).await?;
        append(tx, lock, &task.work_id, Some(&task.id), &changes.events).await?
    })
}

pub(super) async fn finish_work(
    store: &PostgresStore,
    work_id: &str,
    finish: &Finish,
) -> Result<Finished, Error> {
    check_finish(work_id, finish)?;
    let changes = &finish.changes;
    let named = &sorted_owners(changes);
    let lock = store.event_lock;
    pg_tx!(store, WRITE, |tx| {
        // Tasks first (the order of a fenced write: task, work, owners).
        // The update locks every live task of the work and re-checks its
        // state on the newest version: a claim or a completion that
        // commits first is seen, one that comes later waits and then finds
        // the task cancelled. On a refusal below it all rolls back.
        let cancelled = match &finish.cancel_tasks {
            None => Vec::new(),
            Some(reason) => {
                let found = sqlx::query(&format!(
                    "UPDATE tasks SET state = 'cancelled', lease_token = NULL, \
                         lease_expires_at = NULL, heartbeat_at = NULL, error = $2, \
                         finished_at = clock_timestamp() \
                     WHERE id IN (SELECT id FROM tasks \
                             WHERE work_id = $1 AND state IN ('pending', 'running', 'blocked') \
                             ORDER BY id FOR UPDATE) \
                         AND state IN ('pending', 'running', 'blocked') \
                     RETURNING {TASK_COLUMNS}"
                ))
                .bind(work_id)
                .bind(reason)
                .fetch_all(&mut *tx)
                .await?;
                let mut tasks = rows(&found, task_from_row)?;
                tasks.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
                tasks
            }
        };
        let work = work_row(tx, work_id).await?;
        let owners = owner_rows(tx, named).await?;
        let work = work.as_ref().map(|(kind, status)| (*kind, status.as_str()));
        let plan = plan(work_id, Scope::Finish, work, &owners, changes)?;
        write_plan(tx, &plan).await?;
        let events = append(tx, lock, work_id, None, &changes.events).await?;
        Finished { events, cancelled }
    })
}

/// The kind and status of work `id`, locked to commit; `None` when there
/// is none.
async fn work_row(tx: &mut PgConnection, id: &str) -> Result<Option<(WorkKind, String)>, TxError> {
    Ok(
        sqlx::query("SELECT kind, status FROM works WHERE id = $1 FOR UPDATE")
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?
            .map(|row| Ok::<_, Error>((row.name::<WorkKind>("kind")?, row.text("status")?)))
            .transpose()?,
    )
}

/// The owners named (sorted), locked to commit, as the planner needs them.
async fn owner_rows(
    tx: &mut PgConnection,
    named: &[String],
) -> Result<HashMap<String, OwnerRow>, TxError> {
    let mut owners = HashMap::new();
    if named.is_empty() {
        return Ok(owners);
    }
    let found = sqlx::query(
        "SELECT id, work_id, kind, status FROM owners \
         WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE",
    )
    .bind(named)
    .fetch_all(&mut *tx)
    .await?;
    for row in &found {
        owners.insert(
            row.text("id")?,
            OwnerRow {
                work_id: row.text("work_id")?,
                kind: row.name("kind")?,
                status: row.text("status")?,
            },
        );
    }
    Ok(owners)
}

/// The row writes of a plan: the work, then the owners in order.
async fn write_plan(tx: &mut PgConnection, plan: &Plan<'_>) -> Result<(), TxError> {
    if let Some(w) = &plan.work {
        sqlx::query(
            "UPDATE works SET status = coalesce($2, status), \
             data = coalesce($3::jsonb, data), updated_at = clock_timestamp() WHERE id = $1",
        )
        .bind(w.id)
        .bind(w.status)
        .bind(w.data.as_deref())
        .execute(&mut *tx)
        .await?;
    }
    for o in &plan.owners {
        sqlx::query(
            "UPDATE owners SET status = coalesce($2, status), \
             data = coalesce($3::jsonb, data), updated_at = clock_timestamp() WHERE id = $1",
        )
        .bind(o.id)
        .bind(o.status)
        .bind(o.data.as_deref())
        .execute(&mut *tx)
        .await?;
    }
    Ok(())
}

/// Appends `events` in order for work `work_id` (and the task whose write
/// they are, when there is one), under one take of the event log's lock.
async fn append(
    tx: &mut PgConnection,
    lock: i32,
    work_id: &str,
    task_id: Option<&str>,
    events: &[ChangeEvent],
) -> Result<Vec<EventRecord>, TxError> {
    let mut appended = Vec::with_capacity(events.len());
    if events.is_empty() {
        return Ok(appended);
    }
    // Once for all the events (a re-take would be a round trip per event
    // for a lock already held).
    lock_events(tx, lock).await?;
    for e in events {
        appended.push(
            insert_event_locked(tx, work_id, e.owner_id.as_deref(), task_id, &e.event).await?,
        );
    }
    Ok(appended)
}
