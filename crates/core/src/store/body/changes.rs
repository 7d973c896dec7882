//! `Store::record_changes` and `Store::finish_work`, once for every SQL
//! backend: read (PostgreSQL: lock) the rows the changes name, let the
//! shared planner (`store::changes`) decide, then write the plan in at
//! most four statements whatever its size — the work, every owner, every
//! event — and the tasks a finish cancels.
//!
//! Order, the same in both (PostgreSQL's lock order): tasks, then the
//! work, then the owners in id order, so a fenced write and a finish of
//! one work cannot deadlock.

use super::writes::{append, fenced_task, lease_lost, update_owners};
use super::{args, Conn, Statements};
use crate::error::Error;
use crate::store::changes::{named_owners, plan, OwnerRow, Plan, Scope};
use crate::store::records::*;
use crate::store::sql::*;
use serde_json::Value;
use std::collections::HashMap;

/// A fenced batch of changes: the task's lease checked (and its row
/// locked) first, with the work's row in the same statement.
///
/// When no owner change compares a status (`from` empty, the flow
/// driver's steps) and each writes something, the owners are not read
/// first: the rows the write changed must be every one named, each of
/// this work — otherwise the precise refusal is read and planned as
/// usual, and the transaction rolls back. Three statements in
/// all (task and work, owners, events) whatever the batch's size.
pub(crate) async fn record_changes<C: Conn>(
    tx: &mut C,
    sql: &Statements,
    fence: &Fence,
    changes: &Changes,
) -> Result<Vec<EventRecord>, TxError> {
    let (task, work) = match &changes.work {
        None => (fenced_task(tx, sql, fence).await?, None),
        Some(_) => fenced_work(tx, sql, fence).await?,
    };
    let work = work.as_ref().map(|(kind, status)| (*kind, status.as_str()));
    let scope = Scope::Fenced(&task.id);
    let work_id = task.work_id.as_str();
    match assumed_owners(work_id, changes) {
        Some(assumed) => {
            let plan = plan(work_id, scope, work, &assumed, changes)?;
            let changed = write_plan(tx, sql, &plan).await?;
            let all_ours = changed.iter().all(|w| w == work_id);
            if !all_ours || changed.len() != assumed.len() {
                // An owner that does not exist or is another work's: the
                // planner says which, from the rows as stored.
                let owners = owner_rows(tx, sql, changes).await?;
                plan_refusal(work_id, scope, work, &owners, changes)?;
            }
        }
        None => {
            let owners = owner_rows(tx, sql, changes).await?;
            let plan = plan(work_id, scope, work, &owners, changes)?;
            write_plan(tx, sql, &plan).await?;
        }
    }
    append(tx, sql, work_id, Some(&task.id), &changes.events).await
}

/// The owners of `changes` as the planner may assume them without reading
/// — each of work `work_id`, whatever its status — when nothing depends on
/// their stored status: every owner change has an empty `from` and writes
/// something, and every event names one of them (or none). `None`
/// otherwise.
fn assumed_owners(work_id: &str, changes: &Changes) -> Option<HashMap<String, OwnerRow>> {
    let blind = changes
        .owners
        .iter()
        .all(|c| c.from.is_empty() && (c.status.is_some() || c.data.is_some()));
    if !blind {
        return None;
    }
    let assumed: HashMap<String, OwnerRow> = changes
        .owners
        .iter()
        .map(|c| {
            let row = OwnerRow {
                work_id: work_id.to_owned(),
                kind: OwnerKind::Step,
                status: String::new(),
            };
            (c.id.clone(), row)
        })
        .collect();
    let events_named = changes
        .events
        .iter()
        .filter_map(|e| e.owner_id.as_deref())
        .all(|id| assumed.contains_key(id));
    events_named.then_some(assumed)
}

/// The planner's refusal for changes whose unread write missed an owner;
/// an `internal` error if, against the rows as stored, it has none.
fn plan_refusal(
    work_id: &str,
    scope: Scope<'_>,
    work: Option<(WorkKind, &str)>,
    owners: &HashMap<String, OwnerRow>,
    changes: &Changes,
) -> Result<(), TxError> {
    plan(work_id, scope, work, owners, changes)?;
    Err(Error::internal(format!(
        "store: a write to the owners of {work_id:?} changed fewer rows than it named"
    ))
    .into())
}

/// The task under `fence` with its work's kind and status, or the error
/// of a lost lease.
async fn fenced_work<C: Conn>(
    tx: &mut C,
    sql: &Statements,
    fence: &Fence,
) -> Result<(Task, Option<(WorkKind, String)>), TxError> {
    let row = tx
        .fetch_optional(&sql.fenced_work, args![&fence.task_id, &fence.lease_token])
        .await?;
    match row {
        Some(row) => {
            let work = (row.name::<WorkKind>("work_kind")?, row.text("work_status")?);
            Ok((task_from_row(&row)?, Some(work)))
        }
        None => Err(lease_lost(tx, sql, &fence.task_id).await?.into()),
    }
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
/// Returns the work of each owner row changed.
async fn write_plan<C: Conn>(
    tx: &mut C,
    sql: &Statements,
    plan: &Plan<'_>,
) -> Result<Vec<String>, TxError> {
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
