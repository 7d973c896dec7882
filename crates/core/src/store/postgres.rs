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

use super::body::{self, sql_store, Statements};
use super::listing::{checked_filter, page};
use super::records::*;
use super::sql::*;
use super::{
    check_add_owner, check_changes, check_claim, check_enqueue, check_finish, check_new_work,
    check_retain, check_tasks,
};
use crate::error::Error;
use crate::task::Lane;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions};
use sqlx::{ConnectOptions, Connection};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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
    /// lone commit, one per 2–8 ms under load — and other handles'
    /// buses wake then instead of at their poll. `false`: none (the
    /// benchmark's baseline).
    pub notify: bool,
    /// The most completions one transaction writes (default 64): concurrent
    /// `complete` calls queued together are settled, their owners updated
    /// and their events appended by one statement each; a lone one goes at
    /// once. 1: a transaction each (the benchmark's baseline).
    pub max_completion_batch: usize,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        PostgresOptions {
            max_connections: 10,
            acquire_timeout: Duration::from_secs(30),
            schema: None,
            notify: true,
            max_completion_batch: 64,
        }
    }
}

/// The PostgreSQL [`Store`](super::Store). Cheap to clone (the pool is shared).
#[derive(Debug, Clone)]
pub struct PostgresStore {
    pool: PgPool,
    epoch: String,
    /// The `LISTEN` channel of the store's schema (see [`listen`]).
    channel: String,
    /// Announces commits that appended events (`None`: notify off).
    notifier: Option<Arc<listen::Notifier>>,
    /// Per lane (in `Lane::ALL` order): was it capped at the last claim?
    capped: Arc<[AtomicBool]>,
    /// The shared body's statements, with this schema's event lock.
    sql: Arc<Statements>,
    /// Write transactions (and one-statement claims) committed.
    commits: Arc<AtomicU64>,
    /// The statement of a fenced batch written at once (`at_once`).
    at_once: Arc<str>,
    /// Batches concurrent completions (`complete`).
    completer: Arc<complete::Completer>,
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
                    if $begin == WRITE {
                        store.commits.fetch_add(1, Ordering::Relaxed);
                    }
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

/// `pg_tx!` in a write transaction; `[a, b]` are seen by the body as
/// references, `$sql` is the store's statements (see `sql_store!`).
macro_rules! pg_write {
    ($store:expr, [$($cap:ident),* $(,)?] |$tx:ident, $sql:ident| $body:expr) => {{
        #[allow(unused_parens)]
        let ($($cap,)*) = ($(&$cap,)*);
        let $sql = $store.statements();
        pg_tx!($store, WRITE, |$tx| $body)
    }};
}

/// `pg_tx!` in one read-only snapshot.
macro_rules! pg_snapshot {
    ($store:expr, |$tx:ident| $body:expr) => {
        pg_tx!($store, READ, |$tx| $body)
    };
}

/// For the unit tests of this module's rooms: a handle on the PostgreSQL
/// of `DATABASE_URL` in a fresh schema `schema`; `None` without one
/// (unless `CODERIG_REQUIRE_POSTGRES` is set, which makes that a failure).
#[cfg(test)]
async fn test_store(schema: &str) -> Option<PostgresStore> {
    let Ok(url) = std::env::var("DATABASE_URL") else {
        assert!(
            std::env::var_os("CODERIG_REQUIRE_POSTGRES").is_none(),
            "CODERIG_REQUIRE_POSTGRES is set but DATABASE_URL is not"
        );
        return None;
    };
    let mut admin = PgConnection::connect(&url).await.unwrap();
    sqlx::query(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .execute(&mut admin)
        .await
        .unwrap();
    let options = PostgresOptions {
        schema: Some(schema.into()),
        ..PostgresOptions::default()
    };
    Some(PostgresStore::connect_with(&url, options).await.unwrap())
}

// After the macro: the modules use it.
mod at_once;
mod complete;
mod listen;
mod statements;
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
        let event_lock = crate::xxhash32(schema.as_bytes(), 0) as i32;
        let sql = Arc::new(statements::statements(event_lock));
        let commits = Arc::new(AtomicU64::new(0));
        let completer = complete::Completer::start(complete::Parts {
            pool: pool.clone(),
            sql: sql.clone(),
            commits: commits.clone(),
            notifier: notifier.clone(),
            event_lock,
            max_batch: options.max_completion_batch.max(1),
        });
        Ok(PostgresStore {
            pool,
            epoch,
            sql,
            at_once: at_once::statement(event_lock).into(),
            commits,
            completer: Arc::new(completer),
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

    /// `record_changes`' one-statement path (see `at_once`): `Some` when
    /// the batch qualifies and was written, `None` when the transaction
    /// must decide (nothing was written).
    async fn record_changes_at_once(
        &self,
        fence: &Fence,
        changes: &Changes,
    ) -> Result<Option<Vec<EventRecord>>, Error> {
        let Some(batch) = crate::store::changes::at_once(changes) else {
            return Ok(None);
        };
        let mut tries = 0u32;
        loop {
            match at_once::write(&self.pool, &self.at_once, fence, &batch).await {
                Ok(Some(events)) => {
                    self.commits.fetch_add(1, Ordering::Relaxed);
                    if !events.is_empty() {
                        self.appended();
                    }
                    return Ok(Some(events));
                }
                Ok(None) => return Ok(None),
                Err(e) if is_retryable(&e) && tries < 20 => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(u64::from(tries) * 5)).await;
                }
                Err(e) => return Err(e.into_error(BACKEND)),
            }
        }
    }

    /// How many write transactions (and one-statement claims) this handle
    /// has committed: each one durable commit of the server (for
    /// benchmarks and metrics: work per commit).
    pub fn commits(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }

    /// Closes every connection; the store must not be used afterwards.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

sql_store!(PostgresStore, write: pg_write, snapshot: pg_snapshot, read: pg_read, sql: |store| &store.sql, {
    fn backend(&self) -> &'static str {
        BACKEND
    }

    async fn complete(&self, fence: &Fence, completion: Completion) -> Result<Task, Error> {
        check_tasks(&completion.enqueue)?;
        self.completer.complete(fence.clone(), completion).await
    }

    fn epoch(&self) -> &str {
        &self.epoch
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
                    Ok(Some(claims)) => {
                        self.commits.fetch_add(1, Ordering::Relaxed);
                        return Ok(claims);
                    }
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

    async fn watch_commits(
        &self,
        wake: Arc<tokio::sync::Notify>,
        stop: tokio_util::sync::CancellationToken,
    ) -> super::CommitFeed {
        listen::watch(self.pool.clone(), self.channel.clone(), wake, stop).await
    }
});
