//! The write transactions' bodies, once for every SQL backend: works and
//! owners created, tasks enqueued, fenced writes, completions, cancels,
//! transitions. Each runs inside the transaction its backend begins; an
//! `Err` rolls it back.

use super::{args, in_seq_order, one, Conn, Statements};
use crate::error::Error;
use crate::store::records::*;
use crate::store::sql::*;
use crate::store::{check_owner_kind, settle};
use crate::task::TaskState;
use serde_json::{json, Value};

/// Appends `events` in order for work `work_id` (written by task
/// `task_id`, when a task's holder writes them): one statement for all.
pub(crate) async fn append<C: Conn>(
    tx: &mut C,
    sql: &Statements,
    work_id: &str,
    task_id: Option<&str>,
    events: &[ChangeEvent],
) -> Result<Vec<EventRecord>, TxError> {
    if events.is_empty() {
        return Ok(Vec::new());
    }
    let mut rows = Vec::with_capacity(events.len());
    for e in events {
        e.event.check()?;
        rows.push(json!([
            e.event.kind.as_str(),
            e.owner_id,
            json_text(&e.event.payload)
        ]));
    }
    tx.before_append();
    let found = tx
        .fetch_all(
            &sql.insert_events,
            args![work_id, task_id, Value::from(rows).to_string()],
        )
        .await?;
    if found.len() != events.len() {
        return Err(Error::internal(format!(
            "store: {} events appended, {} returned",
            events.len(),
            found.len()
        ))
        .into());
    }
    Ok(in_seq_order(rows_of(&found, event_from_row)?))
}

/// Appends one event.
pub(crate) async fn append_one<C: Conn>(
    tx: &mut C,
    sql: &Statements,
    work_id: &str,
    owner_id: Option<&str>,
    task_id: Option<&str>,
    event: &NewEvent,
) -> Result<EventRecord, TxError> {
    let change = [ChangeEvent {
        owner_id: owner_id.map(str::to_owned),
        event: event.clone(),
    }];
    let mut appended = append(tx, sql, work_id, task_id, &change).await?;
    one(appended.pop(), "an event insert")
}

fn rows_of<R: RowExt, T>(found: &[R], f: impl Fn(&R) -> Result<T, Error>) -> Result<Vec<T>, Error> {
    found.iter().map(f).collect()
}

/// Inserts a (checked) task for its existing owner.
pub(crate) async fn insert_task<C: Conn>(
    tx: &mut C,
    sql: &Statements,
    spec: &TaskSpec,
) -> Result<Task, TxError> {
    crate::store::check_task_spec(spec)?;
    let row = tx
        .fetch_optional(
            &sql.insert_task,
            args![
                &spec.id,
                spec.owner.kind.as_str(),
                &spec.owner.id,
                spec.lane.as_str(),
                json_text(&spec.payload),
                i64::from(spec.retry.max_attempts),
                to_i64(spec.retry.initial_ms),
                spec.retry.multiplier,
                to_i64(spec.retry.max_ms),
                i64::from(spec.max_rescues),
                to_i64(spec.delay_ms),
            ],
        )
        .await
        .map_err(|e| duplicate(e, "task", &spec.id))?;
    match row {
        Some(row) => Ok(task_from_row(&row)?),
        None => Err(Error::not_found_id(spec.owner.kind.as_str(), &spec.owner.id).into()),
    }
}

/// A unique violation as the `conflict` naming the duplicate.
fn duplicate(e: TxError, what: &str, id: &str) -> TxError {
    match e {
        TxError::Sql(e) => on_duplicate(e, what, id),
        other => other,
    }
}

/// The error of a fenced write whose lease is gone (or whose task never
/// existed).
pub(crate) async fn lease_lost<C: Conn>(
    tx: &mut C,
    sql: &Statements,
    task_id: &str,
) -> Result<Error, TxError> {
    let row = tx.fetch_optional(&sql.task_state, args![task_id]).await?;
    let now = match row {
        None => None,
        Some(row) => Some((
            row.name::<TaskState>("state")?,
            row.count("attempt")?,
            row.opt_text("worker")?,
        )),
    };
    Ok(lost_lease(task_id, now))
}

/// The task under `fence`, or the error of a lost lease.
pub(crate) async fn fenced_task<C: Conn>(
    tx: &mut C,
    sql: &Statements,
    fence: &Fence,
) -> Result<Task, TxError> {
    let row = tx
        .fetch_optional(&sql.fenced_task, args![&fence.task_id, &fence.lease_token])
        .await?;
    match row {
        Some(row) => Ok(task_from_row(&row)?),
        None => Err(lease_lost(tx, sql, &fence.task_id).await?.into()),
    }
}

/// Owner writes, one statement: `(id, status, data text)` each, at most
/// one per id. Returns the work of each owner it changed (an id that does
/// not exist changes none): a caller that did not read the owners first
/// checks them and rolls back.
pub(crate) async fn update_owners<C: Conn>(
    tx: &mut C,
    sql: &Statements,
    writes: &[(&str, Option<&str>, Option<String>)],
) -> Result<Vec<String>, TxError> {
    if writes.is_empty() {
        return Ok(Vec::new());
    }
    let rows: Vec<Value> = writes
        .iter()
        .map(|(id, status, data)| json!([id, status, data]))
        .collect();
    let changed = tx
        .fetch_all(&sql.update_owners, args![Value::from(rows).to_string()])
        .await?;
    Ok(rows_of(&changed, |row| row.text("work_id"))?)
}

/// The owner update and event of a task's write.
pub(crate) async fn apply_update<C: Conn>(
    tx: &mut C,
    sql: &Statements,
    task: &Task,
    owner: Option<&OwnerUpdate>,
    event: Option<&NewEvent>,
) -> Result<Option<EventRecord>, TxError> {
    if let Some(o) = owner.filter(|o| o.status.is_some() || o.data.is_some()) {
        let write = (
            task.owner.id.as_str(),
            o.status.as_deref(),
            o.data.as_ref().map(json_text),
        );
        update_owners(tx, sql, &[write]).await?;
    }
    match event {
        None => Ok(None),
        Some(event) => Ok(Some(
            append_one(
                tx,
                sql,
                &task.work_id,
                Some(&task.owner.id),
                Some(&task.id),
                event,
            )
            .await?,
        )),
    }
}

/// Inserts owners of work `work_id` after its last one, in one statement;
/// a `conflict` naming the first whose id is taken.
async fn insert_owners<C: Conn>(
    tx: &mut C,
    sql: &Statements,
    work_id: &str,
    owners: &[NewOwner],
) -> Result<(), TxError> {
    if owners.is_empty() {
        return Ok(());
    }
    let ids = Value::from(owners.iter().map(|o| o.id.as_str()).collect::<Vec<_>>());
    let taken = tx
        .fetch_all(&sql.existing_owners, args![ids.to_string()])
        .await?;
    if !taken.is_empty() {
        let taken: Vec<String> = rows_of(&taken, |r| r.text("id"))?;
        if let Some(o) = owners.iter().find(|o| taken.contains(&o.id)) {
            return Err(
                Error::conflict(format!("a {} with id {:?} already exists", o.kind, o.id))
                    .with_detail("what", o.kind.as_str())
                    .with_detail("id", o.id.as_str())
                    .into(),
            );
        }
    }
    let rows: Vec<Value> = owners
        .iter()
        .zip(0i64..)
        .map(|(o, ordinal)| json!([o.id, o.kind.as_str(), o.status, json_text(&o.data), ordinal]))
        .collect();
    tx.execute(
        &sql.insert_owners,
        args![work_id, Value::from(rows).to_string()],
    )
    .await
    .map_err(|e| duplicate(e, owners[0].kind.as_str(), &owners[0].id))?;
    Ok(())
}

/// `Store::create_work`: the work, its owners, its tasks and its event.
pub(crate) async fn create_work<C: Conn>(
    tx: &mut C,
    sql: &Statements,
    work: &NewWork,
) -> Result<EventRecord, TxError> {
    tx.execute(
        &sql.insert_work,
        args![
            &work.id,
            work.kind.as_str(),
            &work.status,
            json_text(&work.data)
        ],
    )
    .await
    .map_err(|e| duplicate(e, work.kind.as_str(), &work.id))?;
    insert_owners(tx, sql, &work.id, &work.owners).await?;
    for spec in &work.tasks {
        insert_task(tx, sql, spec).await?;
    }
    append_one(tx, sql, &work.id, None, None, &work.event).await
}

/// `Store::enqueue` (at least one task): the tasks, and the event on the
/// first one's work and owner.
pub(crate) async fn enqueue<C: Conn>(
    tx: &mut C,
    sql: &Statements,
    tasks: &[TaskSpec],
    event: Option<&NewEvent>,
) -> Result<Vec<Task>, TxError> {
    let mut created = Vec::with_capacity(tasks.len());
    for spec in tasks {
        created.push(insert_task(tx, sql, spec).await?);
    }
    if let (Some(event), Some(first)) = (event, created.first()) {
        let (work_id, owner_id) = (first.work_id.clone(), first.owner.id.clone());
        append_one(tx, sql, &work_id, Some(&owner_id), None, event).await?;
    }
    Ok(created)
}

/// `Store::record`: a fenced owner update and event.
pub(crate) async fn record<C: Conn>(
    tx: &mut C,
    sql: &Statements,
    fence: &Fence,
    update: &Update,
) -> Result<Option<EventRecord>, TxError> {
    let task = fenced_task(tx, sql, fence).await?;
    apply_update(tx, sql, &task, update.owner.as_ref(), update.event.as_ref()).await
}

/// `Store::complete`: the fenced task settled by the shared retry policy
/// ([`settle`]), its follow-up tasks enqueued, its owner update and event.
pub(crate) async fn complete<C: Conn>(
    tx: &mut C,
    sql: &Statements,
    fence: &Fence,
    completion: &Completion,
) -> Result<Task, TxError> {
    let task = fenced_task(tx, sql, fence).await?;
    let settled = settle(&task, &completion.outcome);
    let finished = settled.state != TaskState::Pending;
    let row = tx
        .fetch_optional(
            &sql.settle_task,
            args![
                &task.id,
                settled.state.as_str(),
                i64::from(settled.failures),
                settled.retry_in_ms.map(to_i64),
                settled.result.as_ref().map(json_text),
                settled.error.as_deref(),
                finished,
            ],
        )
        .await?;
    let after = task_from_row(&one(row, "a settle of a fenced task")?)?;
    for spec in &completion.enqueue {
        insert_task(tx, sql, spec).await?;
    }
    apply_update(
        tx,
        sql,
        &after,
        completion.owner.as_ref(),
        completion.event.as_ref(),
    )
    .await?;
    Ok(after)
}

/// `Store::cancel`: a pending, running or blocked task cancelled with its
/// owner update and event; `conflict` naming its state when it is final.
pub(crate) async fn cancel<C: Conn>(
    tx: &mut C,
    sql: &Statements,
    task_id: &str,
    reason: &str,
    update: &Update,
) -> Result<Task, TxError> {
    let row = tx
        .fetch_optional(&sql.cancel_task, args![task_id, reason])
        .await?;
    let task = match row {
        Some(row) => task_from_row(&row)?,
        None => {
            let state = tx.fetch_optional(&sql.task_state, args![task_id]).await?;
            return Err(match state {
                None => Error::not_found_id("task", task_id),
                Some(row) => {
                    let state = row.text("state")?;
                    Error::conflict(format!(
                        "task {task_id:?} is already {state}; there is nothing to cancel"
                    ))
                    .with_detail("task_id", task_id)
                    .with_detail("state", state)
                }
            }
            .into());
        }
    };
    apply_update(tx, sql, &task, update.owner.as_ref(), update.event.as_ref()).await?;
    Ok(task)
}

/// `Store::transition`: a compare-and-set of a work's or owner's status
/// (`from`, empty for any), its data, and its event.
pub(crate) async fn transition<C: Conn>(
    tx: &mut C,
    sql: &Statements,
    t: &Transition,
) -> Result<Option<EventRecord>, TxError> {
    let (owner, what, id) = match &t.target {
        Target::Work(id) => (false, "battle or run", id.as_str()),
        Target::Owner(id) => (true, "contestant or step", id.as_str()),
    };
    let select = if owner {
        &sql.owner_status
    } else {
        &sql.work_status
    };
    let Some(row) = tx.fetch_optional(select, args![id]).await? else {
        return Err(Error::not_found_id(what, id).into());
    };
    let status = row.text("status")?;
    let work_id = row.text("work_id")?;
    if !t.from.is_empty() && !t.from.contains(&status) {
        return Err(Error::conflict(format!(
            "{what} {id:?} is {status}; the change to {} needs one of: {}",
            t.to,
            t.from.join(", ")
        ))
        .with_detail("id", id)
        .with_detail("status", status.as_str())
        .into());
    }
    let data = t.data.as_ref().map(json_text);
    if owner {
        update_owners(tx, sql, &[(id, Some(t.to.as_str()), data)]).await?;
    } else {
        tx.execute(&sql.update_work, args![id, t.to.as_str(), data])
            .await?;
    }
    match &t.event {
        None => Ok(None),
        Some(event) => {
            let owner_id = owner.then_some(id);
            Ok(Some(
                append_one(tx, sql, &work_id, owner_id, None, event).await?,
            ))
        }
    }
}

/// `Store::add_owner` (checked): the owner after the work's last (the
/// work row read first, on PostgreSQL locked: two owners added at once get
/// distinct ordinals), its tasks, its event.
pub(crate) async fn add_owner<C: Conn>(
    tx: &mut C,
    sql: &Statements,
    work_id: &str,
    owner: &NewOwner,
    tasks: &[TaskSpec],
    event: Option<&NewEvent>,
) -> Result<Option<EventRecord>, TxError> {
    let Some(row) = tx
        .fetch_optional(&sql.work_for_owner, args![work_id])
        .await?
    else {
        return Err(Error::not_found_id("battle or run", work_id).into());
    };
    check_owner_kind(row.name("kind")?, owner)?;
    insert_owners(tx, sql, work_id, std::slice::from_ref(owner)).await?;
    for spec in tasks {
        insert_task(tx, sql, spec).await?;
    }
    match event {
        None => Ok(None),
        Some(event) => Ok(Some(
            append_one(tx, sql, work_id, Some(&owner.id), None, event).await?,
        )),
    }
}
