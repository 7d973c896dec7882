//! The shared store: PostgreSQL (`DATABASE_URL=postgres://…`), for several
//! servers working on one queue.
//!
//! - Claims: `UPDATE tasks … WHERE id IN (SELECT id … FOR UPDATE SKIP
//!   LOCKED LIMIT n) RETURNING …`, so concurrent claimers never wait on
//!   each other's rows and never take the same one.
//! - Lanes: a claim in a capped lane holds the lane row `FOR UPDATE` while
//!   it counts the lane's running tasks and claims. A claim of lanes that
//!   are all unbounded (as far as the handle last saw) is one autocommit
//!   statement that reads the lanes, finds them unbounded and claims — no
//!   lane lock: a shared row lock taken by every claimer cost a quarter of
//!   the batched claim's throughput (MultiXact writes on one hot row). Such
//!   a claim reads the capacities in its statement's snapshot, so one under
//!   way when a capacity is set may still finish under the old (unbounded)
//!   one, as if it had run just before the change (tasks already running
//!   keep running anyway); every claim that starts after the change sees
//!   it. A statement that finds a requested lane capped claims nothing and
//!   the claim goes the locked way. Lane rows are always locked in
//!   [`Lane::ALL`] order, so claims of several lanes cannot deadlock.
//! - Fenced writes lock their task row (`SELECT … FOR UPDATE` on id, token
//!   and `state = 'running'`); the rescuer locks with `SKIP LOCKED` and
//!   re-checks its predicate on the row's newest version, so a completion
//!   and a rescue of the same task end in exactly one outcome.
//! - Events: every insert takes `pg_advisory_xact_lock` first (held to
//!   commit, keyed by the schema), so seq order is commit order.
//! - Times come from the server's clock (`now()`, `clock_timestamp()`).
//! - A deadlock or serialization failure is retried (the transaction
//!   changed nothing).

use super::records::*;
use super::sql::*;
use super::{check_claim, check_new_work, check_task_spec, check_tasks, settle, Store};
use crate::error::Error;
use crate::task::Lane;
use crate::task::TaskState;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions};
use sqlx::{ConnectOptions, Connection};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

const BACKEND: &str = "postgres";

const TASK_COLUMNS: &str = "id, work_id, owner_kind, owner_id, lane, state, \
    payload::text AS payload, attempt, failures, rescues, max_attempts, backoff_initial_ms, \
    backoff_multiplier, backoff_max_ms, max_rescues, \
    coderig_ms(available_at) AS available_at, worker, \
    coderig_ms(lease_expires_at) AS lease_expires_at, \
    coderig_ms(heartbeat_at) AS heartbeat_at, result::text AS result, error, \
    coderig_ms(created_at) AS created_at, coderig_ms(started_at) AS started_at, \
    coderig_ms(finished_at) AS finished_at";

const EVENT_COLUMNS: &str = "seq, kind, work_id, owner_id, task_id, payload::text AS payload, \
    coderig_ms(created_at) AS created_at";

/// `$n` milliseconds as an interval.
fn ms(param: usize) -> String {
    format!("(${param}::float8 * interval '1 millisecond')")
}

/// The advisory lock class of the event log ("codr").
const EVENT_LOCK_CLASS: i32 = 0x636f_6472;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("src/store/migrations/postgres");

/// How the PostgreSQL store connects.
#[derive(Debug, Clone, PartialEq)]
pub struct PostgresOptions {
    /// Connections in the pool (default 10).
    pub max_connections: u32,
    /// How long a call waits for a free connection (default 30 s).
    pub acquire_timeout: Duration,
    /// The schema holding the store's tables (created when missing), or
    /// `None` for the connection's default search path (usually `public`).
    /// Lowercase letters, digits and `_` only.
    pub schema: Option<String>,
    /// Whether this handle's commits notify listeners (default true): after
    /// a write transaction that appended events commits, the handle sends
    /// one payload-free `NOTIFY` on the schema's channel — at once for a
    /// lone commit, at most one per 2 ms under load — and other handles'
    /// buses wake then instead of at their poll. `false`: none (the
    /// benchmark's baseline).
    pub notify: bool,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        PostgresOptions {
            max_connections: 10,
            acquire_timeout: Duration::from_secs(30),
            schema: None,
            notify: true,
        }
    }
}

/// The PostgreSQL [`Store`]. Cheap to clone (the pool is shared).
#[derive(Debug, Clone)]
pub struct PostgresStore {
    pool: PgPool,
    epoch: String,
    event_lock: i32,
    /// The `LISTEN` channel of the store's schema (see [`listen`]).
    channel: String,
    /// Announces commits that appended events (`None`: notify off).
    notifier: Option<Arc<listen::Notifier>>,
    /// Per lane (in `Lane::ALL` order): was it capped at the last claim?
    capped: Arc<[AtomicBool]>,
}

/// True for errors after which the whole transaction may simply run again:
/// deadlock detected (40P01), serialization failure (40001), and a write
/// refused as inside a read-only transaction (25006).
///
/// 25006: sqlx 0.8.6 is not cancel-safe in `begin` on PostgreSQL
/// (transact-rs/sqlx#4393): a read whose future is dropped while its
/// `BEGIN … READ ONLY` is in flight returns the
/// connection to the pool inside that read-only transaction. The next
/// write there gets "already a transaction in progress", then 25006 on its
/// first write statement; dropping its failed transaction queues the
/// `ROLLBACK` that ends the stale one, so the connection is healthy again
/// and running the transaction again succeeds. Our own write transactions
/// are never read-only, so nothing was written. Seen in the flow_engine
/// bench (10,000-step runs), when a `select!` dropped
/// `EventSubscription::next` during its catch-up read: drivers failed and
/// their runs stalled until lease rescue. That read now runs on a task of
/// its own; the retry stays for any other dropped read.
fn is_retryable(e: &TxError) -> bool {
    match e {
        TxError::Sql(sqlx::Error::Database(db)) => {
            matches!(
                db.code().as_deref(),
                Some("40P01") | Some("40001") | Some("25006")
            )
        }
        _ => false,
    }
}

/// Runs `$body` (using `$tx: &mut PgConnection`) in a transaction begun by
/// `$begin`, retrying deadlocks and serialization failures.
macro_rules! pg_tx {
    ($store:expr, $begin:expr, |$tx:ident| $body:expr) => {{
        let store = $store;
        let mut tries = 0u32;
        loop {
            // The body's event inserts mark APPENDED; a commit with events
            // is announced to other servers' buses (listen::Notifier).
            let attempt: Result<_, TxError> = crate::store::postgres::tx::APPENDED
                .scope(std::cell::Cell::new(false), async {
                    let mut transaction = store.pool.begin_with($begin).await?;
                    let $tx: &mut PgConnection = &mut transaction;
                    let value = $body;
                    transaction.commit().await?;
                    Ok((
                        value,
                        crate::store::postgres::tx::APPENDED.with(std::cell::Cell::get),
                    ))
                })
                .await;
            match attempt {
                Ok((value, appended)) => {
                    if appended {
                        store.appended();
                    }
                    break Ok(value);
                }
                Err(e) if is_retryable(&e) && tries < 20 => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(u64::from(tries) * 5)).await;
                }
                Err(e) => break Err(e.into_error(BACKEND)),
            }
        }
    }};
}

/// Runs `$body` (one read statement, using `$conn: &mut PgConnection`) on
/// a pooled connection outside a transaction: a single statement reads one
/// snapshot by itself, in one round trip where `BEGIN … COMMIT` costs three
/// (the event bus reads the log after every notification).
macro_rules! pg_read {
    ($store:expr, |$conn:ident| $body:expr) => {{
        let attempt: Result<_, TxError> = async {
            let mut connection = $store.pool.acquire().await?;
            let $conn: &mut PgConnection = &mut connection;
            Ok($body)
        }
        .await;
        attempt.map_err(|e| e.into_error(BACKEND))
    }};
}

// After the macro: the modules use it.
mod arena;
mod changes;
mod listen;
mod retention;
mod tx;
use tx::*;

const WRITE: &str = "BEGIN";
const READ: &str = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";

impl PostgresStore {
    /// Connects to `url` (`postgres://user@host:port/db`) with
    /// [`PostgresOptions::default`] and runs the migrations.
    pub async fn connect(url: &str) -> Result<PostgresStore, Error> {
        PostgresStore::connect_with(url, PostgresOptions::default()).await
    }

    /// Connects to the URL in `DATABASE_URL`; `unavailable` when it is not
    /// set.
    pub async fn from_env() -> Result<PostgresStore, Error> {
        let url = std::env::var("DATABASE_URL")
            .map_err(|_| Error::unavailable("DATABASE_URL is not set"))?;
        PostgresStore::connect(&url).await
    }

    /// Connects to `url` with `options` and runs the migrations (in
    /// `options.schema`, created when missing).
    pub async fn connect_with(url: &str, options: PostgresOptions) -> Result<PostgresStore, Error> {
        let io = |e: sqlx::Error| sql_error(BACKEND, e);
        let mut connect = PgConnectOptions::from_str(url).map_err(|e| {
            Error::invalid_input(format!("not a PostgreSQL URL: {e}")).with_detail("path", "db")
        })?;
        // One direct connection first: a refused connection, a bad password
        // or a missing database is reported with its cause at once, where
        // the pool would retry until its acquire timeout and then say only
        // that it timed out.
        match tokio::time::timeout(options.acquire_timeout, connect.connect()).await {
            Ok(Ok(probe)) => probe.close().await.map_err(io)?,
            Ok(Err(e)) => return Err(io(e)),
            Err(_) => {
                return Err(Error::io(format!(
                    "postgres store: no connection within {:?}",
                    options.acquire_timeout
                )))
            }
        }
        if let Some(schema) = &options.schema {
            let valid = !schema.is_empty()
                && schema.len() <= 63
                && schema
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
                && !schema.as_bytes()[0].is_ascii_digit();
            if !valid {
                return Err(Error::invalid_input(format!(
                    "a store schema is 1 to 63 lowercase letters, digits or '_', \
                     not starting with a digit, not {schema:?}"
                )));
            }
            let mut admin = connect.connect().await.map_err(io)?;
            sqlx::query(&format!("CREATE SCHEMA IF NOT EXISTS {schema}"))
                .execute(&mut admin)
                .await
                .map_err(io)?;
            admin.close().await.map_err(io)?;
            connect = connect.options([("search_path", schema.as_str())]);
        }
        let pool = PgPoolOptions::new()
            .max_connections(options.max_connections.max(1))
            .acquire_timeout(options.acquire_timeout)
            .connect_with(connect)
            .await
            .map_err(io)?;
        MIGRATOR
            .run(&pool)
            .await
            .map_err(|e| Error::io(format!("postgres store: migrating: {e}")))?;
        let row = sqlx::query(
            "SELECT (SELECT value FROM meta WHERE key = 'instance_id') AS epoch, \
             current_schema() AS schema",
        )
        .fetch_one(&pool)
        .await
        .map_err(io)?;
        let epoch = row.text("epoch")?;
        let schema = row.text("schema")?;
        let notifier = options
            .notify
            .then(|| listen::Notifier::start(pool.clone(), listen::channel(&schema)));
        Ok(PostgresStore {
            pool,
            epoch,
            event_lock: crate::xxhash32(schema.as_bytes(), 0) as i32,
            notifier,
            channel: listen::channel(&schema),
            // Local starts capped (its default is 1), cloud unbounded.
            capped: Lane::ALL
                .iter()
                .map(|lane| AtomicBool::new(*lane == Lane::Local))
                .collect(),
        })
    }

    /// Called after a commit that appended events: tells the notifier.
    fn appended(&self) {
        if let Some(notifier) = &self.notifier {
            notifier.mark();
        }
    }

    /// Closes every connection; the store must not be used afterwards.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

#[async_trait::async_trait]
impl Store for PostgresStore {
    fn backend(&self) -> &'static str {
        BACKEND
    }

    fn epoch(&self) -> &str {
        &self.epoch
    }

    async fn create_work(&self, work: NewWork) -> Result<EventRecord, Error> {
        check_new_work(&work)?;
        let work = &work;
        let lock = self.event_lock;
        pg_tx!(self, WRITE, |tx| {
            sqlx::query(
                "INSERT INTO works (id, kind, status, data) VALUES ($1, $2, $3, $4::jsonb)",
            )
            .bind(&work.id)
            .bind(work.kind.as_str())
            .bind(&work.status)
            .bind(json_text(&work.data))
            .execute(&mut *tx)
            .await
            .map_err(|e| on_duplicate(e, work.kind.as_str(), &work.id))?;
            for (ordinal, owner) in work.owners.iter().enumerate() {
                sqlx::query(
                    "INSERT INTO owners (id, work_id, kind, status, data, ordinal) \
                     VALUES ($1, $2, $3, $4, $5::jsonb, $6)",
                )
                .bind(&owner.id)
                .bind(&work.id)
                .bind(owner.kind.as_str())
                .bind(&owner.status)
                .bind(json_text(&owner.data))
                .bind(ordinal as i64)
                .execute(&mut *tx)
                .await
                .map_err(|e| on_duplicate(e, owner.kind.as_str(), &owner.id))?;
            }
            for spec in &work.tasks {
                insert_task(tx, spec).await?;
            }
            insert_event(tx, lock, &work.id, None, None, &work.event).await?
        })
    }

    async fn enqueue(
        &self,
        tasks: Vec<TaskSpec>,
        event: Option<NewEvent>,
    ) -> Result<Vec<Task>, Error> {
        check_tasks(&tasks)?;
        if tasks.is_empty() {
            return match event {
                None => Ok(Vec::new()),
                Some(_) => Err(Error::invalid_input(
                    "an enqueue with an event needs at least one task (the event's work)",
                )),
            };
        }
        let (tasks, event) = (&tasks, &event);
        let lock = self.event_lock;
        pg_tx!(self, WRITE, |tx| {
            let mut created = Vec::with_capacity(tasks.len());
            for spec in tasks {
                created.push(insert_task(tx, spec).await?);
            }
            if let Some(event) = event {
                let first: &Task = &created[0];
                insert_event(tx, lock, &first.work_id, Some(&first.owner.id), None, event).await?;
            }
            created
        })
    }

    async fn claim(&self, request: &ClaimRequest) -> Result<Vec<Claim>, Error> {
        check_claim(request)?;
        let lanes = claim_lanes(request);
        let ttl = millis(request.lease_ttl);
        // Every lane unbounded at the last claim: one statement, no
        // transaction around it (the claim a worker makes all day).
        let unbounded = lanes.iter().all(|lane| {
            let index = Lane::ALL.iter().position(|l| l == lane).unwrap_or(0);
            !self.capped[index].load(Ordering::Relaxed)
        });
        if unbounded {
            let mut tries = 0u32;
            loop {
                match claim_unbounded(&self.pool, request, &lanes, ttl).await {
                    Ok(Some(claims)) => return Ok(claims),
                    // A lane is capped now: the transactional path learns
                    // which and counts under its lock.
                    Ok(None) => break,
                    Err(e) if is_retryable(&e) && tries < 20 => {
                        tries += 1;
                        tokio::time::sleep(Duration::from_millis(u64::from(tries) * 5)).await;
                    }
                    Err(e) => return Err(e.into_error(BACKEND)),
                }
            }
        }
        loop {
            let lanes = &lanes;
            let claimed = pg_tx!(self, WRITE, |tx| claim_once(
                tx,
                request,
                lanes,
                ttl,
                &self.capped
            )
            .await?)?;
            if let Some(claims) = claimed {
                return Ok(claims);
            }
        }
    }

    async fn heartbeat(&self, fence: &Fence, ttl: Duration) -> Result<Millis, Error> {
        if ttl.is_zero() {
            return Err(Error::invalid_input("a heartbeat's ttl must be positive"));
        }
        let ttl = millis(ttl);
        pg_tx!(self, WRITE, |tx| {
            let row = sqlx::query(&format!(
                "UPDATE tasks SET lease_expires_at = clock_timestamp() + {}, \
                     heartbeat_at = clock_timestamp() \
                 WHERE id = $1 AND lease_token = $2 AND state = 'running' \
                 RETURNING coderig_ms(lease_expires_at) AS lease_expires_at",
                ms(3)
            ))
            .bind(&fence.task_id)
            .bind(&fence.lease_token)
            .bind(ttl)
            .fetch_optional(&mut *tx)
            .await?;
            match row {
                Some(row) => row.int("lease_expires_at")?,
                None => return Err(lease_lost(tx, &fence.task_id).await?.into()),
            }
        })
    }

    async fn heartbeat_many(
        &self,
        fences: &[Fence],
        ttl: Duration,
    ) -> Result<Vec<Result<Millis, Error>>, Error> {
        if ttl.is_zero() {
            return Err(Error::invalid_input("a heartbeat's ttl must be positive"));
        }
        if fences.is_empty() {
            return Ok(Vec::new());
        }
        let ttl = millis(ttl);
        let ids: Vec<&str> = fences.iter().map(|f| f.task_id.as_str()).collect();
        let tokens: Vec<&str> = fences.iter().map(|f| f.lease_token.as_str()).collect();
        pg_tx!(self, WRITE, |tx| {
            // Rows locked in id order: two batches over the same tasks
            // cannot deadlock.
            let renewed = sqlx::query(&format!(
                "UPDATE tasks SET lease_expires_at = clock_timestamp() + {}, \
                     heartbeat_at = clock_timestamp() \
                 FROM (SELECT t.id FROM tasks t \
                       JOIN unnest($1::text[], $2::text[]) AS f(id, token) \
                         ON t.id = f.id AND t.lease_token = f.token \
                       WHERE t.state = 'running' ORDER BY t.id FOR UPDATE OF t) AS held \
                 WHERE tasks.id = held.id \
                 RETURNING tasks.id, tasks.lease_token, \
                     coderig_ms(tasks.lease_expires_at) AS lease_expires_at",
                ms(3)
            ))
            .bind(&ids)
            .bind(&tokens)
            .bind(ttl)
            .fetch_all(&mut *tx)
            .await?;
            let mut answers = Vec::with_capacity(fences.len());
            for (fence, renewed) in fences.iter().zip(renewed_in_order(fences, &renewed)?) {
                answers.push(match renewed {
                    Some(at) => Ok(at),
                    None => Err(lease_lost(tx, &fence.task_id).await?),
                });
            }
            answers
        })
    }

    async fn record(&self, fence: &Fence, update: Update) -> Result<Option<EventRecord>, Error> {
        let update = &update;
        let lock = self.event_lock;
        pg_tx!(self, WRITE, |tx| {
            let task = fenced_task(tx, fence).await?;
            apply_update(
                tx,
                lock,
                &task,
                update.owner.as_ref(),
                update.event.as_ref(),
            )
            .await?
        })
    }

    async fn record_changes(
        &self,
        fence: &Fence,
        changes: Changes,
    ) -> Result<Vec<EventRecord>, Error> {
        changes::record_changes(self, fence, &changes).await
    }

    async fn finish_work(&self, work_id: &str, finish: Finish) -> Result<Finished, Error> {
        changes::finish_work(self, work_id, &finish).await
    }

    async fn complete(&self, fence: &Fence, completion: Completion) -> Result<Task, Error> {
        check_tasks(&completion.enqueue)?;
        let completion = &completion;
        let lock = self.event_lock;
        pg_tx!(self, WRITE, |tx| {
            let task = fenced_task(tx, fence).await?;
            let settled = settle(&task, &completion.outcome);
            let finished = settled.state != TaskState::Pending;
            let row = sqlx::query(&format!(
                "UPDATE tasks SET state = $2, failures = $3, \
                     available_at = CASE WHEN $4::bigint IS NULL THEN available_at \
                         ELSE clock_timestamp() + {} END, \
                     lease_token = NULL, lease_expires_at = NULL, heartbeat_at = NULL, \
                     result = $5::jsonb, error = $6, \
                     finished_at = CASE WHEN $7 THEN clock_timestamp() ELSE NULL END \
                 WHERE id = $1 RETURNING {TASK_COLUMNS}",
                ms(4)
            ))
            .bind(&task.id)
            .bind(settled.state.as_str())
            .bind(i64::from(settled.failures))
            .bind(settled.retry_in_ms.map(to_i64))
            .bind(settled.result.as_ref().map(json_text))
            .bind(settled.error.as_deref())
            .bind(finished)
            .fetch_one(&mut *tx)
            .await?;
            let after = task_from_row(&row)?;
            for spec in &completion.enqueue {
                insert_task(tx, spec).await?;
            }
            apply_update(
                tx,
                lock,
                &after,
                completion.owner.as_ref(),
                completion.event.as_ref(),
            )
            .await?;
            after
        })
    }

    async fn cancel(&self, task_id: &str, reason: &str, update: Update) -> Result<Task, Error> {
        let update = &update;
        let lock = self.event_lock;
        pg_tx!(self, WRITE, |tx| {
            let row = sqlx::query(&format!(
                "UPDATE tasks SET state = 'cancelled', lease_token = NULL, \
                     lease_expires_at = NULL, heartbeat_at = NULL, error = $2, \
                     finished_at = clock_timestamp() \
                 WHERE id = $1 AND state IN ('pending', 'running', 'blocked') \
                 RETURNING {TASK_COLUMNS}"
            ))
            .bind(task_id)
            .bind(reason)
            .fetch_optional(&mut *tx)
            .await?;
            let task = match row {
                Some(row) => task_from_row(&row)?,
                None => {
                    let state = sqlx::query("SELECT state FROM tasks WHERE id = $1")
                        .bind(task_id)
                        .fetch_optional(&mut *tx)
                        .await?;
                    return Err(match state {
                        None => Error::not_found_id("task", task_id),
                        Some(row) => Error::conflict(format!(
                            "task {task_id:?} is already {}; there is nothing to cancel",
                            row.text("state")?
                        ))
                        .with_detail("task_id", task_id)
                        .with_detail("state", row.text("state")?),
                    }
                    .into());
                }
            };
            apply_update(
                tx,
                lock,
                &task,
                update.owner.as_ref(),
                update.event.as_ref(),
            )
            .await?;
            task
        })
    }

    async fn rescue_expired(&self, limit: u32) -> Result<Vec<Rescued>, Error> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        pg_tx!(self, WRITE, |tx| {
            // The outer predicate is re-checked on the newest row version
            // after the lock: a task completed meanwhile is left alone.
            let rescued = sqlx::query(&format!(
                "UPDATE tasks SET \
                     state = CASE WHEN rescues < max_rescues THEN 'pending' ELSE 'failed' END, \
                     rescues = rescues + 1, available_at = clock_timestamp(), \
                     lease_token = NULL, lease_expires_at = NULL, heartbeat_at = NULL, \
                     error = 'lease expired', \
                     finished_at = CASE WHEN rescues < max_rescues THEN NULL \
                         ELSE clock_timestamp() END \
                 WHERE id IN (SELECT id FROM tasks \
                         WHERE state = 'running' AND lease_expires_at < now() \
                         ORDER BY lease_expires_at LIMIT $1 FOR UPDATE SKIP LOCKED) \
                     AND state = 'running' AND lease_expires_at < now() \
                 RETURNING {TASK_COLUMNS}"
            ))
            .bind(i64::from(limit))
            .fetch_all(&mut *tx)
            .await?;
            rows(&rescued, |row| {
                let task = task_from_row(row)?;
                Ok(Rescued {
                    worker: task.worker.clone(),
                    task,
                })
            })?
        })
    }

    async fn transition(&self, transition: Transition) -> Result<Option<EventRecord>, Error> {
        let t = &transition;
        let (table, what, id) = match &t.target {
            Target::Work(id) => ("works", "battle or run", id.as_str()),
            Target::Owner(id) => ("owners", "contestant or step", id.as_str()),
        };
        let lock = self.event_lock;
        pg_tx!(self, WRITE, |tx| {
            let select = if table == "works" {
                "SELECT status, id AS work_id FROM works WHERE id = $1 FOR UPDATE"
            } else {
                "SELECT status, work_id FROM owners WHERE id = $1 FOR UPDATE"
            };
            let Some(row) = sqlx::query(select)
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?
            else {
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
            sqlx::query(&format!(
                "UPDATE {table} SET status = $2, data = coalesce($3::jsonb, data), \
                 updated_at = clock_timestamp() WHERE id = $1"
            ))
            .bind(id)
            .bind(&t.to)
            .bind(t.data.as_ref().map(json_text))
            .execute(&mut *tx)
            .await?;
            match &t.event {
                None => None,
                Some(event) => {
                    let owner = (table == "owners").then_some(id);
                    Some(insert_event(tx, lock, &work_id, owner, None, event).await?)
                }
            }
        })
    }

    async fn task(&self, id: &str) -> Result<Task, Error> {
        pg_tx!(self, READ, |tx| {
            let row = sqlx::query(&format!("SELECT {TASK_COLUMNS} FROM tasks WHERE id = $1"))
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?;
            match row {
                Some(row) => task_from_row(&row)?,
                None => return Err(Error::not_found_id("task", id).into()),
            }
        })
    }

    async fn work(&self, id: &str) -> Result<WorkSnapshot, Error> {
        pg_tx!(self, READ, |tx| {
            let row = sqlx::query(
                "SELECT id, kind, status, data::text AS data, coderig_ms(created_at) AS created_at, \
                     coderig_ms(updated_at) AS updated_at FROM works WHERE id = $1",
            )
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?;
            let Some(row) = row else {
                return Err(Error::not_found_id("battle or run", id).into());
            };
            let work = work_from_row(&row)?;
            let owners = sqlx::query(
                "SELECT id, work_id, kind, status, data::text AS data, \
                     coderig_ms(updated_at) AS updated_at \
                 FROM owners WHERE work_id = $1 ORDER BY ordinal",
            )
            .bind(id)
            .fetch_all(&mut *tx)
            .await?;
            let tasks = sqlx::query(&format!(
                "SELECT {TASK_COLUMNS} FROM tasks WHERE work_id = $1 ORDER BY queue_seq"
            ))
            .bind(id)
            .fetch_all(&mut *tx)
            .await?;
            WorkSnapshot {
                work,
                owners: rows(&owners, owner_from_row)?,
                tasks: rows(&tasks, task_from_row)?,
            }
        })
    }

    async fn add_owner(
        &self,
        work_id: &str,
        owner: NewOwner,
        tasks: Vec<TaskSpec>,
        event: Option<NewEvent>,
    ) -> Result<Option<EventRecord>, Error> {
        arena::add_owner(self, work_id, &owner, &tasks, event.as_ref()).await
    }

    async fn owner(&self, id: &str) -> Result<Owner, Error> {
        arena::owner(self, id).await
    }

    async fn list_works(&self, filter: &WorkFilter) -> Result<WorkPage, Error> {
        arena::list_works(self, filter).await
    }

    async fn events_after(&self, after: i64, limit: u32) -> Result<Vec<EventRecord>, Error> {
        pg_read!(self, |tx| {
            let events = sqlx::query(&format!(
                "SELECT {EVENT_COLUMNS} FROM events WHERE seq > $1 ORDER BY seq LIMIT $2"
            ))
            .bind(after)
            .bind(i64::from(limit))
            .fetch_all(&mut *tx)
            .await?;
            rows(&events, event_from_row)?
        })
    }

    async fn work_events(
        &self,
        work_id: &str,
        after: i64,
        limit: u32,
    ) -> Result<Vec<EventRecord>, Error> {
        pg_read!(self, |tx| {
            let events = sqlx::query(&format!(
                "SELECT {EVENT_COLUMNS} FROM events WHERE work_id = $1 AND seq > $2 \
                 ORDER BY seq LIMIT $3"
            ))
            .bind(work_id)
            .bind(after)
            .bind(i64::from(limit))
            .fetch_all(&mut *tx)
            .await?;
            rows(&events, event_from_row)?
        })
    }

    async fn event_window(&self) -> Result<crate::event::StoreWindow, Error> {
        let (oldest, newest) = pg_read!(self, |tx| {
            let row = sqlx::query(
                "SELECT coalesce(min(seq), 0)::int8 AS oldest, coalesce(max(seq), 0)::int8 AS newest \
                 FROM events",
            )
            .fetch_one(&mut *tx)
            .await?;
            (row.int("oldest")?, row.int("newest")?)
        })?;
        Ok(window(&self.epoch, oldest, newest))
    }

    async fn lanes(&self) -> Result<Vec<LaneState>, Error> {
        let found = pg_tx!(self, READ, |tx| {
            let lanes = sqlx::query(
                "SELECT name, capacity, (SELECT count(*) FROM tasks t \
                     WHERE t.lane = l.name AND t.state = 'running') AS running \
                 FROM lanes l",
            )
            .fetch_all(&mut *tx)
            .await?;
            rows(&lanes, lane_from_row)?
        })?;
        Ok(in_lane_order(found))
    }

    async fn set_lane_capacity(&self, lane: Lane, capacity: Option<u32>) -> Result<(), Error> {
        super::check_lane_capacity(lane, capacity)?;
        pg_tx!(self, WRITE, |tx| {
            sqlx::query("UPDATE lanes SET capacity = $2 WHERE name = $1")
                .bind(lane.as_str())
                .bind(capacity.map(i64::from))
                .execute(&mut *tx)
                .await?;
        })
    }

    async fn compact(&self, retain: Duration) -> Result<super::Compacted, Error> {
        retention::compact(self, retain).await
    }

    async fn watch_commits(
        &self,
        wake: Arc<tokio::sync::Notify>,
        stop: tokio_util::sync::CancellationToken,
    ) -> super::CommitFeed {
        listen::watch(self.pool.clone(), self.channel.clone(), wake, stop).await
    }
}
