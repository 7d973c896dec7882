//! The statements a sqlite transaction body runs: one event appended, a
//! task inserted, a lease checked (fenced), an owner updated —
//! shared by the `Store` methods of [`super`] and its `arena` and
//! `changes` rooms.

use super::*;

pub(super) async fn insert_event(
    tx: &mut SqliteConnection,
    work_id: &str,
    owner_id: Option<&str>,
    task_id: Option<&str>,
    event: &NewEvent,
) -> Result<EventRecord, TxError> {
    event.check()?;
    let row = sqlx::query(&format!(
        "INSERT INTO events (kind, work_id, owner_id, task_id, payload, created_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, {NOW}) RETURNING {EVENT_COLUMNS}"
    ))
    .bind(event.kind.as_str())
    .bind(work_id)
    .bind(owner_id)
    .bind(task_id)
    .bind(json_text(&event.payload))
    .fetch_one(&mut *tx)
    .await?;
    Ok(event_from_row(&row)?)
}

pub(super) async fn insert_task(
    tx: &mut SqliteConnection,
    spec: &TaskSpec,
) -> Result<Task, TxError> {
    check_task_spec(spec)?;
    let row = sqlx::query(&format!(
        "INSERT INTO tasks (id, work_id, owner_kind, owner_id, lane, state, payload, \
             max_attempts, backoff_initial_ms, backoff_multiplier, backoff_max_ms, max_rescues, \
             available_at, created_at) \
         SELECT ?1, o.work_id, o.kind, o.id, ?4, 'pending', ?5, ?6, ?7, ?8, ?9, ?10, \
             {NOW} + ?11, {NOW} \
         FROM owners o WHERE o.id = ?3 AND o.kind = ?2 \
         RETURNING {TASK_COLUMNS}"
    ))
    .bind(&spec.id)
    .bind(spec.owner.kind.as_str())
    .bind(&spec.owner.id)
    .bind(spec.lane.as_str())
    .bind(json_text(&spec.payload))
    .bind(i64::from(spec.retry.max_attempts))
    .bind(to_i64(spec.retry.initial_ms))
    .bind(spec.retry.multiplier)
    .bind(to_i64(spec.retry.max_ms))
    .bind(i64::from(spec.max_rescues))
    .bind(to_i64(spec.delay_ms))
    .fetch_optional(&mut *tx)
    .await
    .map_err(|e| on_duplicate(e, "task", &spec.id))?;
    match row {
        Some(row) => Ok(task_from_row(&row)?),
        None => Err(Error::not_found_id(spec.owner.kind.as_str(), &spec.owner.id).into()),
    }
}

/// The task's state, attempt and worker, for the message of a lost lease.
pub(super) async fn lease_lost(tx: &mut SqliteConnection, task_id: &str) -> Result<Error, TxError> {
    let row = sqlx::query("SELECT state, attempt, worker FROM tasks WHERE id = ?1")
        .bind(task_id)
        .fetch_optional(&mut *tx)
        .await?;
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
pub(super) async fn fenced_task(tx: &mut SqliteConnection, fence: &Fence) -> Result<Task, TxError> {
    let row = sqlx::query(&format!(
        "SELECT {TASK_COLUMNS} FROM tasks WHERE id = ?1 AND lease_token = ?2 AND state = 'running'"
    ))
    .bind(&fence.task_id)
    .bind(&fence.lease_token)
    .fetch_optional(&mut *tx)
    .await?;
    match row {
        Some(row) => Ok(task_from_row(&row)?),
        None => Err(lease_lost(tx, &fence.task_id).await?.into()),
    }
}

pub(super) async fn update_owner(
    tx: &mut SqliteConnection,
    owner_id: &str,
    update: &OwnerUpdate,
) -> Result<(), TxError> {
    if update.status.is_none() && update.data.is_none() {
        return Ok(());
    }
    sqlx::query(&format!(
        "UPDATE owners SET status = coalesce(?2, status), data = coalesce(?3, data), \
         updated_at = {NOW} WHERE id = ?1"
    ))
    .bind(owner_id)
    .bind(update.status.as_deref())
    .bind(update.data.as_ref().map(json_text))
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// The owner update and event of a task's write.
pub(super) async fn apply_update(
    tx: &mut SqliteConnection,
    task: &Task,
    owner: Option<&OwnerUpdate>,
    event: Option<&NewEvent>,
) -> Result<Option<EventRecord>, TxError> {
    if let Some(owner) = owner {
        update_owner(tx, &task.owner.id, owner).await?;
    }
    match event {
        None => Ok(None),
        Some(event) => Ok(Some(
            insert_event(
                tx,
                &task.work_id,
                Some(&task.owner.id),
                Some(&task.id),
                event,
            )
            .await?,
        )),
    }
}
