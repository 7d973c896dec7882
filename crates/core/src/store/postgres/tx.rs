//! The statements a postgres transaction body runs: one event appended, a
//! task inserted, a lease checked (fenced), an owner updated, one claim —
//! shared by the `Store` methods of [`super`] and its `arena` and
//! `changes` rooms.

use super::*;

pub(super) async fn insert_event(
    tx: &mut PgConnection,
    event_lock: i32,
    work_id: &str,
    owner_id: Option<&str>,
    task_id: Option<&str>,
    event: &NewEvent,
) -> Result<EventRecord, TxError> {
    event.check()?;
    lock_events(tx, event_lock).await?;
    insert_event_locked(tx, work_id, owner_id, task_id, event).await
}

/// Takes the event log's advisory lock. Held until commit: no other
/// transaction can take a seq and commit before this one, so seqs become
/// visible in order.
pub(super) async fn lock_events(tx: &mut PgConnection, event_lock: i32) -> Result<(), TxError> {
    sqlx::query("SELECT pg_advisory_xact_lock($1, $2)")
        .bind(EVENT_LOCK_CLASS)
        .bind(event_lock)
        .execute(&mut *tx)
        .await?;
    Ok(())
}

tokio::task_local! {
    /// Set by [`insert_event_locked`] inside `pg_tx!`'s transaction: it
    /// appended an event, so its commit is announced to listeners.
    pub(super) static APPENDED: std::cell::Cell<bool>;
}

/// Appends a (checked) event; the transaction must hold [`lock_events`].
pub(super) async fn insert_event_locked(
    tx: &mut PgConnection,
    work_id: &str,
    owner_id: Option<&str>,
    task_id: Option<&str>,
    event: &NewEvent,
) -> Result<EventRecord, TxError> {
    let row = sqlx::query(&format!(
        "INSERT INTO events (kind, work_id, owner_id, task_id, payload, created_at) \
         VALUES ($1, $2, $3, $4, $5::jsonb, clock_timestamp()) RETURNING {EVENT_COLUMNS}"
    ))
    .bind(event.kind.as_str())
    .bind(work_id)
    .bind(owner_id)
    .bind(task_id)
    .bind(json_text(&event.payload))
    .fetch_one(&mut *tx)
    .await?;
    let _ = APPENDED.try_with(|appended| appended.set(true));
    Ok(event_from_row(&row)?)
}

pub(super) async fn insert_task(tx: &mut PgConnection, spec: &TaskSpec) -> Result<Task, TxError> {
    check_task_spec(spec)?;
    let row = sqlx::query(&format!(
        "INSERT INTO tasks (id, work_id, owner_kind, owner_id, lane, state, payload, \
             max_attempts, backoff_initial_ms, backoff_multiplier, backoff_max_ms, max_rescues, \
             available_at, created_at) \
         SELECT $1, o.work_id, o.kind, o.id, $4, 'pending', $5::jsonb, $6, $7, $8, $9, $10, \
             clock_timestamp() + {}, clock_timestamp() \
         FROM owners o WHERE o.id = $3 AND o.kind = $2 \
         RETURNING {TASK_COLUMNS}",
        ms(11)
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

pub(super) async fn lease_lost(tx: &mut PgConnection, task_id: &str) -> Result<Error, TxError> {
    let row = sqlx::query("SELECT state, attempt, worker FROM tasks WHERE id = $1")
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

/// The task under `fence`, locked, or the error of a lost lease.
pub(super) async fn fenced_task(tx: &mut PgConnection, fence: &Fence) -> Result<Task, TxError> {
    let row = sqlx::query(&format!(
        "SELECT {TASK_COLUMNS} FROM tasks \
         WHERE id = $1 AND lease_token = $2 AND state = 'running' FOR UPDATE"
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
    tx: &mut PgConnection,
    owner_id: &str,
    update: &OwnerUpdate,
) -> Result<(), TxError> {
    if update.status.is_none() && update.data.is_none() {
        return Ok(());
    }
    sqlx::query(
        "UPDATE owners SET status = coalesce($2, status), data = coalesce($3::jsonb, data), \
         updated_at = clock_timestamp() WHERE id = $1",
    )
    .bind(owner_id)
    .bind(update.status.as_deref())
    .bind(update.data.as_ref().map(json_text))
    .execute(&mut *tx)
    .await?;
    Ok(())
}

pub(super) async fn apply_update(
    tx: &mut PgConnection,
    event_lock: i32,
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
                event_lock,
                &task.work_id,
                Some(&task.owner.id),
                Some(&task.id),
                event,
            )
            .await?,
        )),
    }
}

/// One claim transaction; `None` when a lane turned out to be capped under
/// a shared lock (run it again, now with the exclusive one).
pub(super) async fn claim_once(
    tx: &mut PgConnection,
    request: &ClaimRequest,
    lanes: &[Lane],
    ttl: i64,
    capped: &[AtomicBool],
) -> Result<Option<Vec<Claim>>, TxError> {
    // Lock the lane rows in one fixed order: a capped lane exclusively
    // (FOR UPDATE, held while counting and claiming), an unbounded one
    // shared (so a concurrent change of its capacity waits for us). Which
    // lock to take is a guess from the last claim (`capped`); a wrong guess
    // is found under the lock: an exclusive lock on an unbounded lane is
    // merely stronger than needed, a shared lock on a capped lane means
    // starting again with the exclusive one.
    let mut capacity = Vec::with_capacity(lanes.len());
    for lane in Lane::ALL.iter().filter(|l| lanes.contains(l)) {
        let index = Lane::ALL.iter().position(|l| l == lane).unwrap_or(0);
        let exclusive = capped[index].load(Ordering::Relaxed);
        let mode = if exclusive { "UPDATE" } else { "SHARE" };
        let locked = sqlx::query(&format!(
            "SELECT capacity FROM lanes WHERE name = $1 FOR {mode}"
        ))
        .bind(lane.as_str())
        .fetch_one(&mut *tx)
        .await?
        .opt_int("capacity")?;
        capped[index].store(locked.is_some(), Ordering::Relaxed);
        if locked.is_some() && !exclusive {
            return Ok(None);
        }
        capacity.push((*lane, locked));
    }
    let kinds = owner_kind_names(request);
    let mut claims = Vec::new();
    for lane in lanes {
        let left = i64::from(request.limit) - claims.len() as i64;
        if left <= 0 {
            break;
        }
        let cap = capacity
            .iter()
            .find(|(l, _)| l == lane)
            .and_then(|(_, c)| *c);
        let n = match cap {
            None => left,
            Some(cap) => {
                let running = sqlx::query(
                    "SELECT count(*) AS running FROM tasks WHERE lane = $1 AND state = 'running'",
                )
                .bind(lane.as_str())
                .fetch_one(&mut *tx)
                .await?
                .int("running")?;
                left.min(cap - running)
            }
        };
        if n <= 0 {
            continue;
        }
        let picked = sqlx::query(&format!(
            "UPDATE tasks SET state = 'running', attempt = attempt + 1, worker = $2, \
                 lease_token = gen_random_uuid()::text, \
                 lease_expires_at = clock_timestamp() + {}, heartbeat_at = clock_timestamp(), \
                 started_at = clock_timestamp(), finished_at = NULL \
             WHERE id IN (SELECT id FROM tasks \
                 WHERE state = 'pending' AND lane = $1 AND available_at <= now() \
                     AND (cardinality($5::text[]) = 0 OR owner_kind = ANY($5::text[])) \
                     AND (cardinality($6::text[]) = 0 OR work_id = ANY($6::text[])) \
                 ORDER BY available_at, queue_seq LIMIT $4 FOR UPDATE SKIP LOCKED) \
             RETURNING {TASK_COLUMNS}, lease_token",
            ms(3)
        ))
        .bind(lane.as_str())
        .bind(&request.worker)
        .bind(ttl)
        .bind(n)
        .bind(&kinds)
        .bind(&request.work_ids)
        .fetch_all(&mut *tx)
        .await?;
        let mut picked = rows(&picked, claim_from_row)?;
        picked.sort_by(|a, b| {
            (a.task.available_at, a.task.created_at).cmp(&(b.task.available_at, b.task.created_at))
        });
        claims.extend(picked);
    }
    Ok(Some(claims))
}

/// The claim when every requested lane is believed unbounded: one
/// autocommit statement (River's shape, one round trip) that reads the
/// requested lanes and, when none is capped, claims up to `limit` pending
/// tasks of them, oldest first, with `SKIP LOCKED`, each with its own lease
/// token. No lane row lock (see the module docs of `postgres` for why and
/// what it means for a concurrent capacity change). `None` (nothing
/// claimed) when a requested lane turned out capped: the caller takes the
/// transactional path, which counts the running tasks under the lane's
/// exclusive lock.
pub(super) async fn claim_unbounded(
    pool: &PgPool,
    request: &ClaimRequest,
    lanes: &[Lane],
    ttl: i64,
) -> Result<Option<Vec<Claim>>, TxError> {
    // The lanes are written into the statement (names of a closed enum)
    // and the owner-kind and work filters only when given: each shape is
    // its own prepared statement with its own plan. One generic statement
    // for every shape (`lane = ANY($1)`, `cardinality($5) = 0 OR …`) got a
    // generic plan once the table held many running rows, and claimed at a
    // fifth of the speed.
    let lanes_sql = lanes
        .iter()
        .map(|l| format!("'{}'", l.as_str()))
        .collect::<Vec<_>>()
        .join(", ");
    let kinds = owner_kind_names(request);
    let mut filters = String::new();
    let mut next = 4;
    if !kinds.is_empty() {
        filters.push_str(&format!(" AND owner_kind = ANY(${next}::text[])"));
        next += 1;
    }
    if !request.work_ids.is_empty() {
        filters.push_str(&format!(" AND work_id = ANY(${next}::text[])"));
    }
    let sql = format!(
        "WITH lane_rows AS (SELECT capacity FROM lanes WHERE name IN ({lanes_sql})), \
         picked AS (SELECT id FROM tasks \
             WHERE NOT EXISTS (SELECT 1 FROM lane_rows WHERE capacity IS NOT NULL) \
                 AND state = 'pending' AND lane IN ({lanes_sql}) AND available_at <= now() \
                 {filters} \
             ORDER BY available_at, queue_seq LIMIT $3 FOR UPDATE SKIP LOCKED), \
         claimed AS (UPDATE tasks SET state = 'running', attempt = attempt + 1, worker = $1, \
                 lease_token = gen_random_uuid()::text, \
                 lease_expires_at = clock_timestamp() + {}, heartbeat_at = clock_timestamp(), \
                 started_at = clock_timestamp(), finished_at = NULL \
             WHERE id IN (SELECT id FROM picked) RETURNING *) \
         SELECT capped.lanes AS capped_lanes, {TASK_COLUMNS}, lease_token \
         FROM (SELECT count(*) AS lanes FROM lane_rows WHERE capacity IS NOT NULL) capped \
         LEFT JOIN claimed ON true",
        ms(2)
    );
    let mut query = sqlx::query(&sql)
        .bind(&request.worker)
        .bind(ttl)
        .bind(i64::from(request.limit));
    if !kinds.is_empty() {
        query = query.bind(&kinds);
    }
    if !request.work_ids.is_empty() {
        query = query.bind(&request.work_ids);
    }
    let rows = query.fetch_all(pool).await?;
    let capped = match rows.first() {
        Some(row) => row.int("capped_lanes")? > 0,
        None => false,
    };
    if capped {
        return Ok(None);
    }
    let mut claims = Vec::new();
    for row in &rows {
        if row.opt_text("id")?.is_some() {
            claims.push(claim_from_row(row)?);
        }
    }
    claims.sort_by(|a, b| {
        (a.task.available_at, a.task.created_at).cmp(&(b.task.available_at, b.task.created_at))
    });
    Ok(Some(claims))
}
