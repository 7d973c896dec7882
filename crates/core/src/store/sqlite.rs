//! The embedded store: one SQLite file (`<data_dir>/coderig.db`).
//!
//! - WAL journal, `synchronous = FULL` (a committed transaction survives a
//!   power cut, not only a killed process), foreign keys on.
//! - One writer thread owns the write connection (`sqlite::writer`): the
//!   writes queued while a batch commits share the next `BEGIN IMMEDIATE`
//!   and its one fsync, each in a savepoint of its own, so a refused write
//!   does not fail its neighbours and a lone write never waits. `BEGIN
//!   IMMEDIATE` takes the database's write lock before anything is read,
//!   so a transaction never has to upgrade a read snapshot (the source of
//!   `SQLITE_BUSY` that a busy timeout cannot cure). Reads go to a pool of
//!   read-only connections, which WAL lets run beside the writer.
//! - A busy database never surfaces: each statement waits `busy_timeout`,
//!   and a transaction that still meets `SQLITE_BUSY`/`SQLITE_LOCKED`
//!   (another process holds the lock) is retried whole with a growing pause,
//!   for up to [`SqliteOptions::busy_deadline`] (10 minutes by default)
//!   before it is reported as `io`.
//! - Several processes may open the same file: the file lock serializes
//!   their writers, so every guarantee holds across them too.

use super::body::{self, sql_store};
use super::listing::{checked_filter, page};
use super::records::*;
use super::sql::*;
use super::{
    check_add_owner, check_changes, check_claim, check_enqueue, check_finish, check_new_work,
    check_retain, check_tasks,
};
use crate::error::Error;
use crate::task::Lane;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqlitePool, SqlitePoolOptions,
    SqliteSynchronous,
};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
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
    /// At most this many writes share one transaction and its commit
    /// (default 256; at least 1). 1 gives every write a commit of its own
    /// — for benchmarks against group commit, not for use.
    pub max_batch: usize,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        SqliteOptions {
            readers: 4,
            busy_timeout: Duration::from_secs(5),
            busy_deadline: Duration::from_secs(600),
            synchronous_full: true,
            max_batch: 256,
        }
    }
}

/// The SQLite [`Store`](super::Store). Cheap to clone (the pools are shared).
#[derive(Debug, Clone)]
pub struct SqliteStore {
    writer: Writer,
    readers: SqlitePool,
    epoch: String,
    path: PathBuf,
    busy_deadline: Duration,
    /// Write transactions committed by this handle.
    commits: Arc<AtomicU64>,
}

/// True for `SQLITE_BUSY` and `SQLITE_LOCKED` with any extended code, and
/// for a reader that could not be had in time.
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

/// Queues `$body` (an expression using `$tx: &mut SqliteConnection` and
/// `$sql: &Statements`) on the store's [`Writer`]: it runs in the next
/// batch's `BEGIN IMMEDIATE`, in a savepoint of its own, retried with the
/// batch while another process holds the file. The captured variables
/// `[a, b]` are moved into the write (it may outlive its caller's future)
/// and seen by the body as references. `return Err(..)` or `?` in the body
/// rolls back this write alone.
macro_rules! write_tx {
    ($store:expr, [$($cap:ident),* $(,)?] |$tx:ident, $sql:ident| $body:expr) => {{
        let captured = Arc::new(($($cap,)*));
        $store
            .writer
            .write(move |conn: &mut SqliteConnection| -> writer::Body<'_, _> {
                let captured = Arc::clone(&captured);
                Box::pin(async move {
                    #[allow(unused_variables)]
                    let ($($cap,)*) = &*captured;
                    let $tx: &mut SqliteConnection = conn;
                    let $sql: &'static body::Statements = &SQL;
                    Ok($body)
                })
            })
            .await
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
mod statements;
mod writer;
use statements::{CLAIM_LANE, SQL};
use writer::{Writer, WriterConfig};

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
        // Migrated through a one-connection pool whose connection then
        // becomes the writer's (`Migrator::run` on a bare `&mut
        // SqliteConnection` makes the future of `open` not provably `Send`
        // for every lifetime, which the Python face's spawn requires).
        let migrating = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(0)
            .acquire_timeout(options.busy_deadline)
            .connect_with(connect.clone())
            .await
            .map_err(io)?;
        // Two processes opening a new file at once may race to migrate; the
        // loser sees the winner's tables and succeeds on the next run.
        let mut tries = 0;
        loop {
            match MIGRATOR.run(&migrating).await {
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
        let writer = migrating.acquire().await.map_err(io)?.detach();
        migrating.close().await;
        let commits = Arc::new(AtomicU64::new(0));
        let writer = Writer::start(
            writer,
            WriterConfig {
                busy_deadline: options.busy_deadline,
                commits: Arc::clone(&commits),
                is_busy,
                backend: BACKEND,
                max_batch: options.max_batch.max(1),
            },
        )?;
        let store = SqliteStore {
            writer,
            readers,
            epoch: String::new(),
            path: path.to_path_buf(),
            busy_deadline: options.busy_deadline,
            commits,
        };
        let epoch = read_tx!(&store, |conn| {
            let row = sqlx::query("SELECT value FROM meta WHERE key = 'instance_id'")
                .fetch_one(&mut *conn)
                .await?;
            row.text("value")?
        })?;
        Ok(SqliteStore { epoch, ..store })
    }

    /// How many write transactions this handle has committed: each one
    /// durable commit of the file (for benchmarks and metrics: work per
    /// commit).
    pub fn commits(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `record_changes`' one-statement path: none on SQLite, whose writer
    /// already shares one transaction and commit among concurrent batches
    /// and has no round trips to save.
    async fn record_changes_at_once(
        &self,
        _fence: &Fence,
        _changes: &Changes,
    ) -> Result<Option<Vec<EventRecord>>, Error> {
        Ok(None)
    }

    /// Closes every connection (the writes already queued are finished
    /// first); later calls on any clone answer `io` (closed).
    pub async fn close(&self) {
        self.readers.close().await;
        self.writer.close().await;
    }
}

sql_store!(SqliteStore, write: write_tx, snapshot: read_tx, read: read_tx, sql: |_store| &SQL, {
    fn backend(&self) -> &'static str {
        BACKEND
    }

    async fn complete(&self, fence: &Fence, completion: Completion) -> Result<Task, Error> {
        // Concurrent completions already share the writer's batches.
        check_tasks(&completion.enqueue)?;
        let fence = fence.clone();
        write_tx!(self, [fence, completion] |tx, sql| body::complete(tx, sql, fence, completion).await?)
    }

    fn epoch(&self) -> &str {
        &self.epoch
    }

    async fn claim(&self, request: &ClaimRequest) -> Result<Vec<Claim>, Error> {
        check_claim(request)?;
        let lanes = claim_lanes(request);
        let ttl = millis(request.lease_ttl);
        let kinds = owner_kind_names(request);
        let kinds = serde_json::Value::from(kinds).to_string();
        let works = serde_json::Value::from(request.work_ids.clone()).to_string();
        let request = request.clone();
        write_tx!(self, [lanes, kinds, works, request, ttl] |tx, _sql| {
            let mut claims = Vec::new();
            for lane in lanes {
                let left = i64::from(request.limit) - claims.len() as i64;
                if left <= 0 {
                    break;
                }
                let picked = sqlx::query(&CLAIM_LANE)
                .bind(lane.as_str())
                .bind(&request.worker)
                .bind(*ttl)
                .bind(left)
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
});
