//! `Store::record_changes` and `Store::finish_work`, once for every SQL
//! backend: read (PostgreSQL: lock) the rows the changes name, let the
//! shared planner (`store::changes`) decide, then write the plan in at
//! most four statements whatever its size — the work, every owner, every
//! event — and the tasks a finish cancels.
//!
//! Order, the same in both (PostgreSQL's lock order): tasks, then the
//! work, then the owners in id order, so a fenced write and a finish of
//! one work cannot deadlock.

use super::writes::{append, fenced_task, update_owners};
use super::{args, Conn, Statements};
use crate::error::Error;
use crate::store::changes::{named_owners, plan, OwnerRow, Plan, Scope};
use crate::store::records::*;
use crate::store::sql::*;
use serde_json::Value;
use std::collections::HashMap;

/// A fenced batch of changes: the task's lease checked (and its row
/// locked) first.
pub(crate) async fn record_changes<C: Conn>(
    tx: &mut C,
    sql: &Statements,
    fence: &Fence,
    changes: &Changes,
) -> Result<Vec<EventRecord>, TxError> {
    let task = fenced_task(tx, sql, fence).await?;
    let work = match &changes.work {
        None => None,
        Some(_) => work_row(tx, sql, &task.work_id).await?,
    };
    let owners = owner_rows(tx, sql, changes).await?;
    let work = work.as_ref().map(|(kind, status)| (*kind, status.as_str()));
    let plan = plan(
        &task.work_id,
        Scope::Fenced(&task.id),
        work,
        &owners,
        changes,
    )?;
    write_plan(tx, sql, &plan).await?;
    append(tx, sql, &task.work_id, Some(&task.id), &changes.events).await
}

/// A work's final changes, cancelling its live tasks first when asked.
pub(crate) async fn finish_work<C: Conn>(
    tx: &mut C,
    sql: &Statements,
    work_id: &str,
    finish: &Finish,
) -> Result<Finished, TxError> {
    let changes = &finish.changes;
    // Tasks first (a fenced write's order: task, work, owners). On
    // PostgreSQL the update locks every live task of the work and re-checks
    // its state on the newest version: a claim or completion that commits
    // first is seen, one that comes later waits and then finds the task
    // cancelled. On a refusal below it all rolls back.
    let cancelled = match &finish.cancel_tasks {
        None => Vec::new(),
        Some(reason) => {
            let found = tx
                .fetch_all(&sql.cancel_work_tasks, args![work_id, reason.as_str()])
                .await?;
            let mut tasks = rows(&found, task_from_row)?;
            tasks.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
            tasks
        }
    };
    let work = work_row(tx, sql, work_id).await?;
    let owners = owner_rows(tx, sql, changes).await?;
    let work = work.as_ref().map(|(kind, status)| (*kind, status.as_str()));
    let plan = plan(work_id, Scope::Finish, work, &owners, changes)?;
    write_plan(tx, sql, &plan).await?;
    let events = append(tx, sql, work_id, None, &changes.events).await?;
    Ok(Finished { events, cancelled })
}

/// The kind and status of work `id` (PostgreSQL: locked to commit); `None`
/// when there is none.
async fn work_row<C: Conn>(
    tx: &mut C,
    sql: &Statements,
    id: &str,
) -> Result<Option<(WorkKind, String)>, TxError> {
    Ok(tx
        .fetch_optional(&sql.work_row, args![id])
        .await?
        .map(|row| Ok::<_, Error>((row.name::<WorkKind>("kind")?, row.text("status")?)))
        .transpose()?)
}

/// The owners the changes name, read (PostgreSQL: locked) in id order, so
/// two transactions naming the same owners cannot deadlock on them.
async fn owner_rows<C: Conn>(
    tx: &mut C,
    sql: &Statements,
    changes: &Changes,
) -> Result<HashMap<String, OwnerRow>, TxError> {
    let mut named = named_owners(changes);
    let mut owners = HashMap::new();
    if named.is_empty() {
        return Ok(owners);
    }
    named.sort_unstable();
    let found = tx
        .fetch_all(&sql.owner_rows, args![Value::from(named).to_string()])
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

/// The row writes of a plan: the work, then every owner in one statement
/// (a second write of one owner folded into its first: the last status
/// and the last data win, as one after the other would leave them).
async fn write_plan<C: Conn>(tx: &mut C, sql: &Statements, plan: &Plan<'_>) -> Result<(), TxError> {
    if let Some(w) = &plan.work {
        tx.execute(&sql.update_work, args![w.id, w.status, w.data.clone()])
            .await?;
    }
    let mut at: HashMap<&str, usize> = HashMap::new();
    let mut writes: Vec<(&str, Option<&str>, Option<String>)> = Vec::new();
    for o in &plan.owners {
        match at.get(o.id) {
            Some(&i) => {
                let w = &mut writes[i];
                if o.status.is_some() {
                    w.1 = o.status;
                }
                if o.data.is_some() {
                    w.2 = o.data.clone();
                }
            }
            None => {
                at.insert(o.id, writes.len());
                writes.push((o.id, o.status, o.data.clone()));
            }
        }
    }
    update_owners(tx, sql, &writes).await
}
