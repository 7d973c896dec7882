//! The embedded store: one SQLite file (`<data_dir>/coderig.db`).
//!
//! - WAL journal, `synchronous = FULL` (a committed transaction survives a
//!   power cut, not only a killed process), foreign keys on.
//! - One writer connection; every write transaction is `BEGIN IMMEDIATE`,
//!   so it takes the database's write lock before it reads anything and
//!   never has to upgrade a read snapshot (the source of `SQLITE_BUSY`
//!   that a busy timeout cannot cure). Reads go to a pool of read-only
//!   connections, which WAL lets run beside the writer.
//! - A busy database never surfaces: each statement waits `busy_timeout`,
//!   and a transaction that still meets `SQLITE_BUSY`/`SQLITE_LOCKED`
//!   (another process holds the lock) is retried whole with a growing pause,
//!   for up to [`SqliteOptions::busy_deadline`] (10 minutes by default)
//!   before it is reported as `io`.
//! - Several processes may open the same file: the file lock serializes
//!   their writers, so every guarantee holds across them too.

use super::records::*;
use super::sql::*;
use super::{check_claim, check_new_work, check_task_spec, check_tasks, settle, Store};
use crate::error::Error;
use crate::task::Lane;
use crate::task::TaskState;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqlitePool, SqlitePoolOptions,
    SqliteSynchronous,
};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const BACKEND: &str = "sqlite";

/// The database clock, in milliseconds since the Unix epoch.
const NOW: &str = "CAST(unixepoch('subsec') * 1000 AS INTEGER)";

const TASK_COLUMNS: &str = "id, work_id, owner_kind, owner_id, lane, state, payload, attempt, \
    failures, rescues, max_attempts, backoff_initial_ms, backoff_multiplier, backoff_max_ms, \
    max_rescues, available_at, worker, lease_expires_at, heartbeat_at, result, error, \
    created_at, started_at, finished_at";

const EVENT_COLUMNS: &str = "seq, kind, work_id, owner_id, task_id, payload, created_at";

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("src/store/migrations/sqlite");

/// How the SQLite store opens its file.
#[derive(Debug, Clone, PartialEq)]
pub struct SqliteOptions {
    /// Read-only connections beside the one writer (at least 1; default 4).
    pub readers: u32,
    /// How long one statement waits for another process's lock (default 5 s).
    pub busy_timeout: Duration,
    /// How long a transaction is retried while the database stays busy
    /// before the store reports `io` (default 10 min).
    pub busy_deadline: Duration,
    /// `synchronous = FULL` (default `true`): a commit survives a power cut.
    /// `false` gives `NORMAL`: still safe from a killed process (WAL), may
    /// lose the last commits on a power cut.
    pub synchronous_full: bool,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        SqliteOptions {
            readers: 4,
            busy_timeout: Duration::from_secs(5),
            busy_deadline: Duration::from_secs(600),
            synchronous_full: true,
        }
    }
}

/// The SQLite [`Store`]. Cheap to clone (the pools are shared).
#[derive(Debug, Clone)]
pub struct SqliteStore {
    writer: SqlitePool,
    readers: SqlitePool,
    epoch: String,
    path: PathBuf,
    busy_deadline: Duration,
}

/// True for `SQLITE_BUSY` and `SQLITE_LOCKED` with any extended code, and
/// for a writer that could not be had in time.
fn is_busy(e: &TxError) -> bool {
    match e {
        TxError::Sql(sqlx::Error::Database(db)) => db
            .code()
            .and_then(|code| code.parse::<i32>().ok())
            .is_some_and(|code| matches!(code & 0xff, 5 | 6)),
        TxError::Sql(sqlx::Error::PoolTimedOut) => true,
        _ => false,
    }
}

/// Runs `$body` (an expression using `$tx: &mut SqliteConnection`) in a
/// `BEGIN IMMEDIATE` transaction on the writer, retrying the whole
/// transaction while the database is busy. `return Err(..)` in the body
/// rolls back.
macro_rules! write_tx {
    ($store:expr, |$tx:ident| $body:expr) => {{
        let store = $store;
        let started = Instant::now();
        let mut pause = Duration::from_millis(1);
        loop {
            let attempt: Result<_, TxError> = async {
                let mut transaction = store.writer.begin_with("BEGIN IMMEDIATE").await?;
                let $tx: &mut SqliteConnection = &mut transaction;
                let value = $body;
                transaction.commit().await?;
                Ok(value)
            }
            .await;
            match attempt {
                Err(e) if is_busy(&e) && started.elapsed() < store.busy_deadline => {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(100));
                }
                other => break other.map_err(|e| e.into_error(BACKEND)),
            }
        }
    }};
}

/// Runs `$body` (using `$conn: &mut SqliteConnection`) in a read
/// transaction on a reader (one snapshot), retrying while busy.
macro_rules! read_tx {
    ($store:expr, |$conn:ident| $body:expr) => {{
        let store = $store;
        let started = Instant::now();
        let mut pause = Duration::from_millis(1);
        loop {
            let attempt: Result<_, TxError> = async {
                let mut transaction = store.readers.begin().await?;
                let $conn: &mut SqliteConnection = &mut transaction;
                let value = $body;
                transaction.commit().await?;
                Ok(value)
            }
            .await;
            match attempt {
                Err(e) if is_busy(&e) && started.elapsed() < store.busy_deadline => {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(100));
                }
                other => break other.map_err(|e| e.into_error(BACKEND)),
            }
        }
    }};
}

// After the macros: the modules use them.
mod arena;
mod changes;
mod retention;
mod tx;
use tx::*;

impl SqliteStore {
    /// Opens (creating it and the directory when missing) the store in
    /// `<data_dir>/coderig.db` with [`SqliteOptions::default`], running its
    /// migrations.
    pub async fn open(data_dir: &Path) -> Result<SqliteStore, Error> {
        std::fs::create_dir_all(data_dir).map_err(|e| {
            Error::io(format!(
                "cannot create the data dir {}: {e}",
                data_dir.display()
            ))
        })?;
        SqliteStore::open_with(&data_dir.join("coderig.db"), SqliteOptions::default()).await
    }

    /// Opens (creating it when missing) the store in the file `path`.
    pub async fn open_file(path: &Path) -> Result<SqliteStore, Error> {
        SqliteStore::open_with(path, SqliteOptions::default()).await
    }

    /// Opens the store in `path` with `options`, running its migrations.
    pub async fn open_with(path: &Path, options: SqliteOptions) -> Result<SqliteStore, Error> {
        let io = |e: sqlx::Error| sql_error(BACKEND, e);
        let connect = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(if options.synchronous_full {
                SqliteSynchronous::Full
            } else {
                SqliteSynchronous::Normal
            })
            .foreign_keys(true)
            .busy_timeout(options.busy_timeout);
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .acquire_timeout(options.busy_deadline)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(connect.clone())
            .await
            .map_err(io)?;
        // Two processes opening a new file at once may race to migrate; the
        // loser sees the winner's tables and succeeds on the next run.
        let mut tries = 0;
        loop {
            match MIGRATOR.run(&writer).await {
                Ok(()) => break,
                Err(_) if tries < 5 => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(50 * tries)).await;
                }
                Err(e) => {
                    return Err(Error::io(format!(
                        "sqlite store: migrating {}: {e}",
                        path.display()
                    )))
                }
            }
        }
        let readers = SqlitePoolOptions::new()
            .max_connections(options.readers.max(1))
            .acquire_timeout(options.busy_deadline)
            .connect_with(connect.read_only(true).create_if_missing(false))
            .await
            .map_err(io)?;
        let store = SqliteStore {
            writer,
            readers,
            epoch: String::new(),
            path: path.to_path_buf(),
            busy_deadline: options.busy_deadline,
        };
        let epoch = read_tx!(&store, |conn| {
            let row = sqlx::query("SELECT value FROM meta WHERE key = 'instance_id'")
                .fetch_one(&mut *conn)
                .await?;
            row.text("value")?
        })?;
        Ok(SqliteStore { epoch, ..store })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Closes every connection (waiting for running statements); the store
    /// must not be used afterwards.
    pub async fn close(&self) {
        self.readers.close().await;
        self.writer.close().await;
    }
}

#[async_trait::async_trait]
impl Store for SqliteStore {
    fn backend(&self) -> &'static str {
        BACKEND
    }

    fn epoch(&self) -> &str {
        &self.epoch
    }

    async fn create_work(&self, work: NewWork) -> Result<EventRecord, Error> {
        check_new_work(&work)?;
        let work = &work;
        write_tx!(self, |tx| {
            sqlx::query(&format!(
                "INSERT INTO works (id, kind, status, data, created_at, updated_at) \
                 VALUES (?1, ?2, ?3, ?4, {NOW}, {NOW})"
            ))
            .bind(&work.id)
            .bind(work.kind.as_str())
            .bind(&work.status)
            .bind(json_text(&work.data))
            .execute(&mut *tx)
            .await
            .map_err(|e| on_duplicate(e, work.kind.as_str(), &work.id))?;
            for (ordinal, owner) in work.owners.iter().enumerate() {
                sqlx::query(&format!(
                    "INSERT INTO owners (id, work_id, kind, status, data, ordinal, created_at, \
                     updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, {NOW}, {NOW})"
                ))
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
            insert_event(tx, &work.id, None, None, &work.event).await?
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
        write_tx!(self, |tx| {
            let mut created = Vec::with_capacity(tasks.len());
            for spec in tasks {
                created.push(insert_task(tx, spec).await?);
            }
            if let Some(event) = event {
                let first: &Task = &created[0];
                insert_event(tx, &first.work_id, Some(&first.owner.id), None, event).await?;
            }
            created
        })
    }

    async fn claim(&self, request: &ClaimRequest) -> Result<Vec<Claim>, Error> {
        check_claim(request)?;
        let lanes = claim_lanes(request);
        let ttl = millis(request.lease_ttl);
        let kinds = owner_kind_names(request);
        let kinds = serde_json::Value::from(kinds).to_string();
        let works = serde_json::Value::from(request.work_ids.clone()).to_string();
        let (lanes, kinds, works) = (&lanes, &kinds, &works);
        write_tx!(self, |tx| {
            let mut claims = Vec::new();
            for lane in lanes {
                let left = i64::from(request.limit) - claims.len() as i64;
                if left <= 0 {
                    break;
                }
                let capacity = sqlx::query("SELECT capacity FROM lanes WHERE name = ?1")
                    .bind(lane.as_str())
                    .fetch_one(&mut *tx)
                    .await?
                    .opt_int("capacity")?;
                let n = match capacity {
                    None => left,
                    Some(capacity) => {
                        let running = sqlx::query(
                            "SELECT count(*) AS running FROM tasks \
                             WHERE lane = ?1 AND state = 'running'",
                        )
                        .bind(lane.as_str())
                        .fetch_one(&mut *tx)
                        .await?
                        .int("running")?;
                        left.min(capacity - running)
                    }
                };
                if n <= 0 {
                    continue;
                }
                let picked = sqlx::query(&format!(
                    "UPDATE tasks SET state = 'running', attempt = attempt + 1, worker = ?2, \
                         lease_token = lower(hex(randomblob(16))), \
                         lease_expires_at = {NOW} + ?3, heartbeat_at = {NOW}, \
                         started_at = {NOW}, finished_at = NULL \
                     WHERE id IN (SELECT id FROM tasks \
                         WHERE state = 'pending' AND lane = ?1 AND available_at <= {NOW} \
                             AND (json_array_length(?5) = 0 \
                                 OR owner_kind IN (SELECT value FROM json_each(?5))) \
                             AND (json_array_length(?6) = 0 \
                                 OR work_id IN (SELECT value FROM json_each(?6))) \
                         ORDER BY available_at, rowid LIMIT ?4) \
                     RETURNING {TASK_COLUMNS}, lease_token"
                ))
                .bind(lane.as_str())
                .bind(&request.worker)
                .bind(ttl)
                .bind(n)
                .bind(kinds)
                .bind(works)
                .fetch_all(&mut *tx)
                .await?;
                let mut picked = rows(&picked, claim_from_row)?;
                picked.sort_by(|a, b| {
                    (a.task.available_at, a.task.created_at)
                        .cmp(&(b.task.available_at, b.task.created_at))
                });
                claims.extend(picked);
            }
            claims
        })
    }

    async fn heartbeat(&self, fence: &Fence, ttl: Duration) -> Result<Millis, Error> {
        if ttl.is_zero() {
            return Err(Error::invalid_input("a heartbeat's ttl must be positive"));
        }
        let ttl = millis(ttl);
        write_tx!(self, |tx| {
            let row = sqlx::query(&format!(
                "UPDATE tasks SET lease_expires_at = {NOW} + ?3, heartbeat_at = {NOW} \
                 WHERE id = ?1 AND lease_token = ?2 AND state = 'running' \
                 RETURNING lease_expires_at"
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
        let pairs = serde_json::Value::from(
            fences
                .iter()
                .map(|f| serde_json::json!([f.task_id, f.lease_token]))
                .collect::<Vec<_>>(),
        )
        .to_string();
        let pairs = &pairs;
        write_tx!(self, |tx| {
            let renewed = sqlx::query(&format!(
                "UPDATE tasks SET lease_expires_at = {NOW} + ?2, heartbeat_at = {NOW} \
                 WHERE state = 'running' AND (id, lease_token) IN \
                     (SELECT value ->> 0, value ->> 1 FROM json_each(?1)) \
                 RETURNING id, lease_token, lease_expires_at"
            ))
            .bind(pairs)
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
        write_tx!(self, |tx| {
            let task = fenced_task(tx, fence).await?;
            apply_update(tx, &task, update.owner.as_ref(), update.event.as_ref()).await?
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
        write_tx!(self, |tx| {
            let task = fenced_task(tx, fence).await?;
            let settled = settle(&task, &completion.outcome);
            let finished = settled.state != TaskState::Pending;
            let row = sqlx::query(&format!(
                "UPDATE tasks SET state = ?2, failures = ?3, \
                     available_at = CASE WHEN ?4 IS NULL THEN available_at ELSE {NOW} + ?4 END, \
                     lease_token = NULL, lease_expires_at = NULL, heartbeat_at = NULL, \
                     result = ?5, error = ?6, \
                     finished_at = CASE WHEN ?7 THEN {NOW} ELSE NULL END \
                 WHERE id = ?1 RETURNING {TASK_COLUMNS}"
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
        write_tx!(self, |tx| {
            let row = sqlx::query(&format!(
                "UPDATE tasks SET state = 'cancelled', lease_token = NULL, \
                     lease_expires_at = NULL, heartbeat_at = NULL, error = ?2, \
                     finished_at = {NOW} \
                 WHERE id = ?1 AND state IN ('pending', 'running', 'blocked') \
                 RETURNING {TASK_COLUMNS}"
            ))
            .bind(task_id)
            .bind(reason)
            .fetch_optional(&mut *tx)
            .await?;
            let task = match row {
                Some(row) => task_from_row(&row)?,
                None => {
                    let state = sqlx::query("SELECT state FROM tasks WHERE id = ?1")
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
            apply_update(tx, &task, update.owner.as_ref(), update.event.as_ref()).await?;
            task
        })
    }

    async fn rescue_expired(&self, limit: u32) -> Result<Vec<Rescued>, Error> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        write_tx!(self, |tx| {
            let rescued = sqlx::query(&format!(
                "UPDATE tasks SET \
                     state = CASE WHEN rescues < max_rescues THEN 'pending' ELSE 'failed' END, \
                     rescues = rescues + 1, available_at = {NOW}, \
                     lease_token = NULL, lease_expires_at = NULL, heartbeat_at = NULL, \
                     error = 'lease expired', \
                     finished_at = CASE WHEN rescues < max_rescues THEN NULL ELSE {NOW} END \
                 WHERE id IN (SELECT id FROM tasks \
                         WHERE state = 'running' AND lease_expires_at < {NOW} \
                         ORDER BY lease_expires_at LIMIT ?1) \
                     AND state = 'running' AND lease_expires_at < {NOW} \
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
        write_tx!(self, |tx| {
            let select = if table == "works" {
                "SELECT status, id AS work_id FROM works WHERE id = ?1"
            } else {
                "SELECT status, work_id FROM owners WHERE id = ?1"
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
                "UPDATE {table} SET status = ?2, data = coalesce(?3, data), updated_at = {NOW} \
                 WHERE id = ?1"
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
                    Some(insert_event(tx, &work_id, owner, None, event).await?)
                }
            }
        })
    }

    async fn task(&self, id: &str) -> Result<Task, Error> {
        read_tx!(self, |conn| {
            let row = sqlx::query(&format!("SELECT {TASK_COLUMNS} FROM tasks WHERE id = ?1"))
                .bind(id)
                .fetch_optional(&mut *conn)
                .await?;
            match row {
                Some(row) => task_from_row(&row)?,
                None => return Err(Error::not_found_id("task", id).into()),
            }
        })
    }

    async fn work(&self, id: &str) -> Result<WorkSnapshot, Error> {
        read_tx!(self, |conn| {
            let row = sqlx::query(
                "SELECT id, kind, status, data, created_at, updated_at FROM works WHERE id = ?1",
            )
            .bind(id)
            .fetch_optional(&mut *conn)
            .await?;
            let Some(row) = row else {
                return Err(Error::not_found_id("battle or run", id).into());
            };
            let work = work_from_row(&row)?;
            let owners = sqlx::query(
                "SELECT id, work_id, kind, status, data, updated_at FROM owners \
                 WHERE work_id = ?1 ORDER BY ordinal",
            )
            .bind(id)
            .fetch_all(&mut *conn)
            .await?;
            let tasks = sqlx::query(&format!(
                "SELECT {TASK_COLUMNS} FROM tasks WHERE work_id = ?1 ORDER BY rowid"
            ))
            .bind(id)
            .fetch_all(&mut *conn)
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
        read_tx!(self, |conn| {
            let events = sqlx::query(&format!(
                "SELECT {EVENT_COLUMNS} FROM events WHERE seq > ?1 ORDER BY seq LIMIT ?2"
            ))
            .bind(after)
            .bind(i64::from(limit))
            .fetch_all(&mut *conn)
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
        read_tx!(self, |conn| {
            let events = sqlx::query(&format!(
                "SELECT {EVENT_COLUMNS} FROM events WHERE work_id = ?1 AND seq > ?2 \
                 ORDER BY seq LIMIT ?3"
            ))
            .bind(work_id)
            .bind(after)
            .bind(i64::from(limit))
            .fetch_all(&mut *conn)
            .await?;
            rows(&events, event_from_row)?
        })
    }

    async fn event_window(&self) -> Result<crate::event::StoreWindow, Error> {
        let (oldest, newest) = read_tx!(self, |conn| {
            let row = sqlx::query(
                "SELECT coalesce(min(seq), 0) AS oldest, coalesce(max(seq), 0) AS newest \
                 FROM events",
            )
            .fetch_one(&mut *conn)
            .await?;
            (row.int("oldest")?, row.int("newest")?)
        })?;
        Ok(window(&self.epoch, oldest, newest))
    }

    async fn lanes(&self) -> Result<Vec<LaneState>, Error> {
        let found = read_tx!(self, |conn| {
            let lanes = sqlx::query(
                "SELECT name, capacity, (SELECT count(*) FROM tasks t \
                     WHERE t.lane = l.name AND t.state = 'running') AS running \
                 FROM lanes l",
            )
            .fetch_all(&mut *conn)
            .await?;
            rows(&lanes, lane_from_row)?
        })?;
        Ok(in_lane_order(found))
    }

    async fn set_lane_capacity(&self, lane: Lane, capacity: Option<u32>) -> Result<(), Error> {
        super::check_lane_capacity(lane, capacity)?;
        write_tx!(self, |tx| {
            sqlx::query("UPDATE lanes SET capacity = ?2 WHERE name = ?1")
                .bind(lane.as_str())
                .bind(capacity.map(i64::from))
                .execute(&mut *tx)
                .await?;
        })
    }

    async fn compact(&self, retain: Duration) -> Result<super::Compacted, Error> {
        retention::compact(self, retain).await
    }
}
