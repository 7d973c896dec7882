//! What the store tests share: a fresh store per test on each backend (a
//! real SQLite file in a tempdir; a real PostgreSQL in its own schema when
//! `DATABASE_URL` is set), fixtures, and the naive claim the benchmark
//! compares with.
#![allow(dead_code)]

use coderig::arena::Lane;
use coderig::store::*;
use serde_json::json;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Once};

/// Where a test's store lives, so that more handles (other "servers") can
/// be opened on it.
#[derive(Debug, Clone)]
pub enum Location {
    Sqlite(PathBuf),
    Postgres { url: String, schema: String },
}

/// A fresh store for one test.
pub struct Harness {
    pub store: Arc<dyn Store>,
    pub location: Location,
    /// The write transactions `store` has committed so far.
    commits: Arc<dyn Fn() -> u64 + Send + Sync>,
    _dir: Option<tempfile::TempDir>,
}

impl Harness {
    /// The write transactions the harness's store handle has committed
    /// (its durable commits).
    pub fn commits(&self) -> u64 {
        (self.commits)()
    }

    /// Another handle on the same store, with its own connections (another
    /// server, as far as the store can tell).
    pub async fn another(&self) -> Arc<dyn Store> {
        open_at(&self.location).await
    }

    /// Drops the test's schema (PostgreSQL); the tempdir goes with `self`.
    pub async fn finish(self) {
        if let Location::Postgres { url, schema } = &self.location {
            let pool = sqlx::postgres::PgPoolOptions::new()
                .max_connections(1)
                .connect(url)
                .await
                .expect("connect to drop the test schema");
            sqlx::query(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
                .execute(&pool)
                .await
                .expect("drop the test schema");
            pool.close().await;
        }
    }

    /// A raw connection pool on the store's database (for the naive claim).
    pub async fn raw(&self) -> Raw {
        raw(&self.location).await
    }
}

pub async fn open_at(location: &Location) -> Arc<dyn Store> {
    match location {
        Location::Sqlite(path) => {
            Arc::new(SqliteStore::open_file(path).await.expect("open sqlite"))
        }
        Location::Postgres { .. } => Arc::new(open_postgres(location).await),
    }
}

async fn open_postgres(location: &Location) -> PostgresStore {
    let Location::Postgres { url, schema } = location else {
        panic!("not a PostgreSQL location: {location:?}");
    };
    PostgresStore::connect_with(
        url,
        PostgresOptions {
            schema: Some(schema.clone()),
            ..PostgresOptions::default()
        },
    )
    .await
    .expect("connect postgres")
}

/// A store in a new SQLite file.
pub async fn sqlite() -> Harness {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SqliteStore::open(dir.path()).await.expect("open sqlite");
    let location = Location::Sqlite(store.path().to_path_buf());
    let counted = store.clone();
    Harness {
        store: Arc::new(store),
        location,
        commits: Arc::new(move || counted.commits()),
        _dir: Some(dir),
    }
}

static SKIP_NOTICE: Once = Once::new();
static SCHEMAS: AtomicU32 = AtomicU32::new(0);

/// The PostgreSQL URL, or `None` (having said once, on the real stderr,
/// that the PostgreSQL half is skipped). With `CODERIG_REQUIRE_POSTGRES=1`
/// a missing URL fails the test instead.
pub fn database_url(suite: &str) -> Option<String> {
    match std::env::var("DATABASE_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            if std::env::var("CODERIG_REQUIRE_POSTGRES").as_deref() == Ok("1") {
                panic!("CODERIG_REQUIRE_POSTGRES=1 but DATABASE_URL is not set");
            }
            SKIP_NOTICE.call_once(|| {
                // Straight to fd 2: libtest captures only print!/eprint!.
                let _ = writeln!(
                    std::io::stderr(),
                    "{suite}: DATABASE_URL is not set: SKIPPING the PostgreSQL half \
                     (its tests pass without running); SQLite runs in full"
                );
            });
            None
        }
    }
}

/// A store in a new schema of the `DATABASE_URL` database, or `None`.
pub async fn postgres(suite: &str) -> Option<Harness> {
    let url = database_url(suite)?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let schema = format!(
        "coderig_t{}_{}_{}",
        std::process::id(),
        SCHEMAS.fetch_add(1, Ordering::SeqCst),
        nanos
    );
    let location = Location::Postgres { url, schema };
    let store = open_postgres(&location).await;
    let counted = store.clone();
    Some(Harness {
        store: Arc::new(store),
        location,
        commits: Arc::new(move || counted.commits()),
        _dir: None,
    })
}

/// A raw pool on a store's database.
pub enum Raw {
    Sqlite(sqlx::SqlitePool),
    Postgres(sqlx::PgPool),
}

pub async fn raw(location: &Location) -> Raw {
    match location {
        Location::Sqlite(path) => {
            let options = sqlx::sqlite::SqliteConnectOptions::new()
                .filename(path)
                .busy_timeout(std::time::Duration::from_secs(30));
            Raw::Sqlite(
                sqlx::sqlite::SqlitePoolOptions::new()
                    .max_connections(16)
                    .connect_with(options)
                    .await
                    .expect("raw sqlite"),
            )
        }
        Location::Postgres { url, schema } => {
            let options: sqlx::postgres::PgConnectOptions = url.parse().expect("url");
            Raw::Postgres(
                sqlx::postgres::PgPoolOptions::new()
                    .max_connections(16)
                    .connect_with(options.options([("search_path", schema.as_str())]))
                    .await
                    .expect("raw postgres"),
            )
        }
    }
}

/// The commit floor: `n` one-row durable commits (autocommit inserts into
/// a scratch table, created when missing, one after another) on the
/// store's own database and disk, with its durability settings — what every
/// store benchmark states its result beside.
pub async fn commit_floor(raw: &Raw, n: u64) -> std::time::Duration {
    let create = "CREATE TABLE IF NOT EXISTS commit_floor (n BIGINT NOT NULL)";
    match raw {
        Raw::Postgres(pool) => sqlx::query(create).execute(pool).await.map(|_| ()),
        Raw::Sqlite(pool) => sqlx::query(create).execute(pool).await.map(|_| ()),
    }
    .expect("the commit floor's table");
    let started = std::time::Instant::now();
    for i in 0..n as i64 {
        match raw {
            Raw::Postgres(pool) => sqlx::query("INSERT INTO commit_floor (n) VALUES ($1)")
                .bind(i)
                .execute(pool)
                .await
                .map(|_| ()),
            Raw::Sqlite(pool) => sqlx::query("INSERT INTO commit_floor (n) VALUES (?1)")
                .bind(i)
                .execute(pool)
                .await
                .map(|_| ()),
        }
        .expect("a commit of the floor");
    }
    started.elapsed()
}

/// The commit floor of `n` commits as one line of a bench's report.
pub async fn report_commit_floor(name: &str, raw: &Raw, n: u64) {
    let took = commit_floor(raw, n).await;
    let per = took / n.max(1) as u32;
    println!(
        "  commit floor/{name:<9} {per:>10.3?} per durable commit = {:.0} commits/s ({n} one-row commits)",
        n as f64 / took.as_secs_f64()
    );
}

/// The naive claim, first half: read the oldest pending cloud task (no lock).
/// Returns its id and the attempt the claimer believes it takes.
pub async fn naive_pick(raw: &Raw) -> Option<(String, i64)> {
    let sql =
        "SELECT id, attempt FROM tasks WHERE state = 'pending' ORDER BY available_at, id LIMIT 1";
    match raw {
        Raw::Sqlite(pool) => {
            let row: Option<(String, i64)> =
                sqlx::query_as(sql).fetch_optional(pool).await.unwrap();
            row.map(|(id, attempt)| (id, attempt + 1))
        }
        Raw::Postgres(pool) => {
            let row: Option<(String, i64)> =
                sqlx::query_as(sql).fetch_optional(pool).await.unwrap();
            row.map(|(id, attempt)| (id, attempt + 1))
        }
    }
}

/// The naive claim, second half: mark it running by id (no state guard,
/// no lock): what the seed's dispatcher did.
pub async fn naive_take(raw: &Raw, id: &str, worker: &str) {
    match raw {
        Raw::Sqlite(pool) => {
            sqlx::query(
                "UPDATE tasks SET state = 'running', attempt = attempt + 1, worker = ?2, \
                 lease_token = lower(hex(randomblob(16))), \
                 lease_expires_at = CAST(unixepoch('subsec') * 1000 AS INTEGER) + 30000 \
                 WHERE id = ?1",
            )
            .bind(id)
            .bind(worker)
            .execute(pool)
            .await
            .unwrap();
        }
        Raw::Postgres(pool) => {
            sqlx::query(
                "UPDATE tasks SET state = 'running', attempt = attempt + 1, worker = $2, \
                 lease_token = gen_random_uuid()::text, \
                 lease_expires_at = clock_timestamp() + interval '30 seconds' WHERE id = $1",
            )
            .bind(id)
            .bind(worker)
            .execute(pool)
            .await
            .unwrap();
        }
    }
}

/// The naive claim in one go: pick, then take. `None` when nothing is
/// pending (as far as it could see).
pub async fn naive_claim(raw: &Raw, worker: &str) -> Option<(String, i64)> {
    let (id, attempt) = naive_pick(raw).await?;
    naive_take(raw, &id, worker).await;
    Some((id, attempt))
}

/// A battle `id` with `n` contestants `<id>-c<i>` on `lane`, each with one
/// task `<id>-t<i>`.
pub fn battle(id: &str, n: usize, lane: Lane) -> NewWork {
    let owners = (0..n)
        .map(|i| NewOwner {
            id: format!("{id}-c{i}"),
            kind: OwnerKind::Contestant,
            status: "queued".into(),
            data: json!({"identity": format!("agent{i}"), "model": "m"}),
        })
        .collect::<Vec<_>>();
    let tasks = owners
        .iter()
        .enumerate()
        .map(|(i, owner)| {
            TaskSpec::new(
                format!("{id}-t{i}"),
                OwnerRef {
                    kind: OwnerKind::Contestant,
                    id: owner.id.clone(),
                },
                lane,
            )
            .with_payload(json!({"contestant": owner.id}))
        })
        .collect();
    NewWork {
        id: id.into(),
        kind: WorkKind::Battle,
        status: "running".into(),
        data: json!({"battle_type": "qa", "prompt": "hi"}),
        owners,
        tasks,
        event: NewEvent::new(EventType::BattleStarted, json!({"battle_id": id})),
    }
}

/// The same battle with every task's retry policy set.
pub fn with_retry(mut work: NewWork, retry: RetryPolicy) -> NewWork {
    for task in &mut work.tasks {
        task.retry = retry;
    }
    work
}

/// A run `id` with `steps` steps `<id>-s<i>` and no tasks yet.
pub fn run(id: &str, steps: usize) -> NewWork {
    NewWork {
        id: id.into(),
        kind: WorkKind::Run,
        status: "running".into(),
        data: json!({"flow": "f"}),
        owners: (0..steps)
            .map(|i| NewOwner {
                id: format!("{id}-s{i}"),
                kind: OwnerKind::Step,
                status: "pending".into(),
                data: json!({"step": format!("s{i}")}),
            })
            .collect(),
        tasks: Vec::new(),
        event: NewEvent::new(
            EventType::RunUpdated,
            json!({"run_id": id, "status": "running"}),
        ),
    }
}

/// A run `id` with `steps` steps and its driver task `<id>-driver` (on
/// the first step), claimed with a 30 s lease: the holder that changes are
/// fenced by, and that a finish must fence out.
pub async fn claimed_run(store: &dyn Store, id: &str, steps: usize) -> Claim {
    store.create_work(run(id, steps)).await.unwrap();
    let driver = step_task(&format!("{id}-driver"), &format!("{id}-s0"), Lane::Cloud);
    store.enqueue(vec![driver], None).await.unwrap();
    let claim =
        ClaimRequest::new(format!("driver-{id}")).lease_ttl(std::time::Duration::from_secs(30));
    let mut claims = store.claim(&claim).await.unwrap();
    assert_eq!(claims.len(), 1);
    let claim = claims.remove(0);
    assert_eq!(claim.task.work_id, id);
    claim
}

/// A task for step `step` of a run.
pub fn step_task(id: &str, step: &str, lane: Lane) -> TaskSpec {
    TaskSpec::new(
        id,
        OwnerRef {
            kind: OwnerKind::Step,
            id: step.into(),
        },
        lane,
    )
}

/// A contestant event for the task's owner.
pub fn contestant_event(task: &Task, status: &str) -> NewEvent {
    NewEvent::new(
        EventType::ContestantUpdated,
        json!({"battle_id": task.work_id, "contestant_id": task.owner.id, "status": status}),
    )
}

/// `on_both_stores!("suite"; a, b, ...)`: each named `async fn(&Harness)`
/// becomes two tests, `sqlite::a` on a fresh SQLite file and `postgres::a`
/// on a fresh schema of `DATABASE_URL` (skipped as [`database_url`] says),
/// each finishing its harness — the one conformance rule every store suite
/// runs by.
#[allow(unused_macros)]
macro_rules! on_both_stores {
    ($suite:literal; $($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let harness = crate::common::sqlite().await;
                    super::$name(&harness).await;
                    harness.finish().await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let Some(harness) = crate::common::postgres($suite).await else {
                        return;
                    };
                    super::$name(&harness).await;
                    harness.finish().await;
                }
            )*
        }
    };
}
#[allow(unused_imports)]
pub(crate) use on_both_stores;
