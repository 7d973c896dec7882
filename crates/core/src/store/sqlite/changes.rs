//! The SQLite transactions of `Store::record_changes` and
//! `Store::finish_work` (kept out of `sqlite.rs` to keep it readable). The
//! decisions are the shared planner's (`store::changes`); this reads the
//! rows it needs in two statements and writes one prepared statement per
//! changed row and per event.

use super::{fenced_task, insert_event, is_busy, SqliteStore, BACKEND, NOW, TASK_COLUMNS};
use crate::error::Error;
use crate::store::changes::{
    check_changes, check_finish, named_owners, plan, OwnerRow, Plan, Scope,
};
use crate::store::records::*;
use crate::store::sql::*;
use std::collections::HashMap;
// The transaction macro names these types.
use sqlx::sqlite::SqliteConnection;
use std::time::{Duration, Instant};

pub(super) async fn record_changes(
    store: &SqliteStore,
    fence: &Fence,
    changes: &Changes,
) -> Result<Vec<EventRecord>, Error> {
    check_changes(changes)?;
    let named = named_owners(changes);
    let named = serde_json::Value::from(named).to_string();
    let named = &named;
    write_tx!(store, |tx| {
        // BEGIN IMMEDIATE holds the write lock: what is read here stays
        // true until commit, so the compare-and-sets need no row locks.
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
        append(tx, &task.work_id, Some(&task.id), &changes.events).await?
    })
}

pub(super) async fn finish_work(
    store: &SqliteStore,
    work_id: &str,
    finish: &Finish,
) -> Result<Finished, Error> {
    check_finish(work_id, finish)?;
    let changes = &finish.changes;
    let named = named_owners(changes);
    let named = serde_json::Value::from(named).to_string();
    let named = &named;
    write_tx!(store, |tx| {
        // The write lock is held from BEGIN IMMEDIATE: the rows read here
        // are the rows written, the tasks cancelled the ones live at commit.
        let work = work_row(tx, work_id).await?;
        let owners = owner_rows(tx, named).await?;
        let work = work.as_ref().map(|(kind, status)| (*kind, status.as_str()));
        let plan = plan(work_id, Scope::Finish, work, &owners, changes)?;
        let cancelled = match &finish.cancel_tasks {
            None => Vec::new(),
            Some(reason) => {
                let found = sqlx::query(&format!(
                    "UPDATE tasks SET state = 'cancelled', lease_token = NULL, \
                         lease_expires_at = NULL, heartbeat_at = NULL, error = ?2, \
                         finished_at = {NOW} \
                     WHERE work_id = ?1 AND state IN ('pending', 'running', 'blocked') \
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
        write_plan(tx, &plan).await?;
        let events = append(tx, work_id, None, &changes.events).await?;
        Finished { events, cancelled }
    })
}

/// The kind and status of work `id`, `None` when there is none.
async fn work_row(
    tx: &mut SqliteConnection,
    id: &str,
) -> Result<Option<(WorkKind, String)>, TxError> {
    Ok(sqlx::query("SELECT kind, status FROM works WHERE id = ?1")
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?
        .map(|row| Ok::<_, Error>((row.name::<WorkKind>("kind")?, row.text("status")?)))
        .transpose()?)
}

/// The owners named (a JSON array of ids) as the planner needs them.
async fn owner_rows(
    tx: &mut SqliteConnection,
    named: &str,
) -> Result<HashMap<String, OwnerRow>, TxError> {
    let mut owners = HashMap::new();
    if named == "[]" {
        return Ok(owners);
    }
    let found = sqlx::query(
        "SELECT id, work_id, kind, status FROM owners \
         WHERE id IN (SELECT value FROM json_each(?1))",
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
async fn write_plan(tx: &mut SqliteConnection, plan: &Plan<'_>) -> Result<(), TxError> {
    if let Some(w) = &plan.work {
        sqlx::query(&format!(
            "UPDATE works SET status = coalesce(?2, status), data = coalesce(?3, data), \
             updated_at = {NOW} WHERE id = ?1"
        ))
        .bind(w.id)
        .bind(w.status)
        .bind(w.data.as_deref())
        .execute(&mut *tx)
        .await?;
    }
    let update_owner = format!(
        "UPDATE owners SET status = coalesce(?2, status), data = coalesce(?3, data), \
         updated_at = {NOW} WHERE id = ?1"
    );
    for o in &plan.owners {
        sqlx::query(&update_owner)
            .bind(o.id)
            .bind(o.status)
            .bind(o.data.as_deref())
            .execute(&mut *tx)
            .await?;
    }
    Ok(())
}

/// Appends `events` in order for work `work_id` (and the task whose
/// write they are, when there is one).
async fn append(
    tx: &mut SqliteConnection,
    work_id: &str,
    task_id: Option<&str>,
    events: &[ChangeEvent],
) -> Result<Vec<EventRecord>, TxError> {
    let mut appended = Vec::with_capacity(events.len());
    for e in events {
        appended.push(insert_event(tx, work_id, e.owner_id.as_deref(), task_id, &e.event).await?);
    }
    Ok(appended)
}
