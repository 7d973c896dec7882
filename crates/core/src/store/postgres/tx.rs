//! PostgreSQL's own transaction parts: the mark of a transaction that
//! appended events, and the claim with its lane locks.

use super::*;

tokio::task_local! {
    /// Set inside `pg_tx!`'s transaction before its first event is
    /// appended (`statements`' `before_append`): its commit is announced
    /// to listeners.
    pub(super) static APPENDED: std::cell::Cell<bool>;
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
