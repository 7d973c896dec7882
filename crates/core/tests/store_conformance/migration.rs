//! Migrations 0002 and 0003 on a store that 0001 created and that holds
//! work: every row of every table survives unchanged (on SQLite, which
//! rebuilds owners and tasks, then lanes, down to the rowids that are the
//! queue's order) but for the lane of step tasks (0003 moves run drivers to
//! the `driver` lane), the indexes and foreign keys are back, leases still
//! fence, the new owner kinds are accepted and the driver lane is there,
//! never capped. The old store is made by sqlx's own migrator from a folder
//! holding only 0001 (the same file, so the same checksum the store's
//! migrator then finds).

use crate::common::*;
use coderig::arena::Lane;
use coderig::store::*;
use coderig::task::TaskState;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A folder with only `0001_store.sql` of `backend`.
fn only_0001(backend: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/store/migrations")
        .join(backend)
        .join("0001_store.sql");
    std::fs::copy(&source, dir.path().join("0001_store.sql")).unwrap();
    dir
}

async fn migrator_0001(backend: &str) -> (sqlx::migrate::Migrator, tempfile::TempDir) {
    let dir = only_0001(backend);
    let migrator = sqlx::migrate::Migrator::new(dir.path()).await.unwrap();
    assert_eq!(migrator.iter().count(), 1);
    (migrator, dir)
}

pub async fn migrating_from_0001_keeps_every_row(h: &Harness) {
    match &h.location {
        Location::Sqlite(_) => sqlite_from_0001().await,
        Location::Postgres { url, .. } => postgres_from_0001(url).await,
    }
}

const SQLITE_SEED: &[&str] = &[
    r#"INSERT INTO works VALUES ('b', 'battle', 'running', '{"project":"/p"}', 1000, 1001)"#,
    "INSERT INTO works VALUES ('r', 'run', 'running', '{}', 2000, 2000)",
    r#"INSERT INTO owners VALUES ('b-c1', 'b', 'contestant', 'running', '{"identity":"b"}', 1, 1000, 1200)"#,
    r#"INSERT INTO owners VALUES ('b-c0', 'b', 'contestant', 'done', '{"identity":"a"}', 0, 1000, 1100)"#,
    "INSERT INTO owners VALUES ('r-s0', 'r', 'step', 'pending', '{}', 0, 2000, 2000)",
    // Queue order (rowid) unlike id order: b-t1 first. Its lease ends in
    // the year 3000 (32503680000000 ms): still held after the migration.
    r#"INSERT INTO tasks (id, work_id, owner_kind, owner_id, lane, state, payload, attempt,
        failures, rescues, max_attempts, backoff_initial_ms, backoff_multiplier, backoff_max_ms,
        max_rescues, available_at, worker, lease_token, lease_expires_at, heartbeat_at,
        created_at, started_at)
       VALUES ('b-t1', 'b', 'contestant', 'b-c1', 'cloud', 'running', '{"n":1}', 1, 0, 0, 3, 100,
        2.0, 1000, 3, 1000, 'w-old', 'token-1', 32503680000000, 1500, 1000, 1500)"#,
    r#"INSERT INTO tasks (id, work_id, owner_kind, owner_id, lane, state, payload, attempt,
        max_attempts, backoff_initial_ms, backoff_multiplier, backoff_max_ms, max_rescues,
        available_at, worker, result, created_at, started_at, finished_at)
       VALUES ('b-t0', 'b', 'contestant', 'b-c0', 'local', 'completed', '{"n":0}', 1, 1, 0, 1.0,
        0, 3, 1000, 'w-old', '{"ok":true}', 1000, 1100, 1200)"#,
    r#"INSERT INTO tasks (id, work_id, owner_kind, owner_id, lane, state, payload,
        max_attempts, backoff_initial_ms, backoff_multiplier, backoff_max_ms, max_rescues,
        available_at, created_at)
       VALUES ('r-t0', 'r', 'step', 'r-s0', 'cloud', 'pending', '{}', 1, 0, 1.0, 0, 3, 0, 2000)"#,
    r#"INSERT INTO tasks (id, work_id, owner_kind, owner_id, lane, state, payload, attempt,
        failures, max_attempts, backoff_initial_ms, backoff_multiplier, backoff_max_ms,
        max_rescues, available_at, error, created_at, finished_at)
       VALUES ('r-t1', 'r', 'step', 'r-s0', 'cloud', 'failed', '{}', 1, 1, 1, 0, 1.0, 0, 3, 0,
        'boom', 2000, 2100)"#,
    r#"INSERT INTO events (kind, work_id, payload, created_at)
       VALUES ('battle_started', 'b', '{"battle_id":"b"}', 1000)"#,
    r#"INSERT INTO events (kind, work_id, owner_id, task_id, payload, created_at)
       VALUES ('contestant_updated', 'b', 'b-c0', 'b-t0', '{"status":"done"}', 1200)"#,
];

/// Every row of the four data tables, with its rowid, as text.
async fn sqlite_rows(pool: &sqlx::SqlitePool) -> Vec<String> {
    let tables = [
        (
            "works",
            "rowid, id, kind, status, data, created_at, updated_at",
        ),
        (
            "owners",
            "rowid, id, work_id, kind, status, data, ordinal, created_at, updated_at",
        ),
        (
            "tasks",
            "rowid, id, work_id, owner_kind, owner_id, lane, state, payload, attempt, failures, \
             rescues, max_attempts, backoff_initial_ms, backoff_multiplier, backoff_max_ms, \
             max_rescues, available_at, worker, lease_token, lease_expires_at, heartbeat_at, \
             result, error, created_at, started_at, finished_at",
        ),
        (
            "events",
            "seq, kind, work_id, owner_id, task_id, payload, created_at",
        ),
    ];
    let mut all = Vec::new();
    for (table, columns) in tables {
        let rows: Vec<(String,)> = sqlx::query_as(&format!(
            "SELECT '{table}:' || json_array({columns}) FROM {table} ORDER BY rowid"
        ))
        .fetch_all(pool)
        .await
        .unwrap();
        all.extend(rows.into_iter().map(|(row,)| row));
    }
    all
}

async fn sqlite_indexes(pool: &sqlx::SqlitePool) -> Vec<(String, String)> {
    sqlx::query_as(
        "SELECT tbl_name, name FROM sqlite_master \
         WHERE type IN ('index', 'trigger') AND tbl_name IN ('owners', 'tasks') \
         ORDER BY tbl_name, name",
    )
    .fetch_all(pool)
    .await
    .unwrap()
}

async fn sqlite_pool(path: &PathBuf) -> sqlx::SqlitePool {
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .foreign_keys(true)
        .busy_timeout(Duration::from_secs(30));
    sqlx::sqlite::SqlitePoolOptions::new()
        .max_connections(1)
        .connect_with(options)
        .await
        .unwrap()
}

async fn sqlite_from_0001() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    let (migrator, _folder) = migrator_0001("sqlite").await;
    let pool = sqlite_pool(&path).await;
    migrator.run(&pool).await.unwrap();
    for statement in SQLITE_SEED {
        sqlx::query(statement).execute(&pool).await.unwrap();
    }
    let rows_before = sqlite_rows(&pool).await;
    assert_eq!(rows_before.len(), 2 + 3 + 4 + 2);
    let indexes_before = sqlite_indexes(&pool).await;
    assert!(indexes_before.len() >= 7, "{indexes_before:?}");
    pool.close().await;

    // The store's open migrates 0002.
    let store = SqliteStore::open_file(&path).await.unwrap();
    let pool = sqlite_pool(&path).await;
    let versions: Vec<(i64,)> =
        sqlx::query_as("SELECT version FROM _sqlx_migrations ORDER BY version")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(versions, [(1,), (2,), (3,)]);
    assert_eq!(
        sqlite_rows(&pool).await,
        drivers_moved(
            &rows_before,
            r#""step","r-s0","cloud""#,
            r#""step","r-s0","driver""#
        ),
        "every row, unchanged but the step tasks' lane"
    );
    assert_eq!(
        sqlite_indexes(&pool).await,
        indexes_before,
        "every index back"
    );
    let listed: Vec<(String,)> =
        sqlx::query_as("SELECT name FROM sqlite_master WHERE name = 'works_listed'")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(listed.len(), 1);
    let parents: Vec<(String,)> = sqlx::query_as(
        "SELECT DISTINCT \"table\" FROM pragma_foreign_key_list('tasks') ORDER BY 1",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(
        parents,
        [("lanes".into(),), ("owners".into(),), ("works".into(),)]
    );
    let violations: Vec<(String,)> =
        sqlx::query_as("SELECT \"table\" FROM pragma_foreign_key_check")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert!(violations.is_empty(), "{violations:?}");
    let (integrity,): (String,) = sqlx::query_as("PRAGMA integrity_check")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(integrity, "ok");
    // The new CHECK is in force.
    let bogus = sqlx::query("INSERT INTO owners VALUES ('x', 'b', 'bogus', 's', '{}', 9, 0, 0)")
        .execute(&pool)
        .await;
    assert!(bogus.is_err());
    let capped = sqlx::query("UPDATE lanes SET capacity = 1 WHERE name = 'driver'")
        .execute(&pool)
        .await;
    assert!(capped.is_err(), "the driver lane cannot be capped");

    check_migrated_store(&store).await;

    // The rebuilt tables still cascade: deleting a work takes its owners
    // and their tasks (the tasks' key points at the new owners table).
    sqlx::query("DELETE FROM works WHERE id = 'r'")
        .execute(&pool)
        .await
        .unwrap();
    let (left,): (i64,) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM owners WHERE work_id = 'r') \
              + (SELECT count(*) FROM tasks WHERE work_id = 'r')",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(left, 0);
    pool.close().await;
    store.close().await;
}

/// `rows` with the step tasks' lane as 0003 leaves it (`from` → `to`, once
/// per step task: two in the seed).
fn drivers_moved(rows: &[String], from: &str, to: &str) -> Vec<String> {
    let moved: Vec<String> = rows.iter().map(|r| r.replace(from, to)).collect();
    let changed = rows.iter().zip(&moved).filter(|(a, b)| a != b).count();
    assert_eq!(changed, 2, "the seed's two step tasks: {rows:?}");
    moved
}

/// What both backends must show after the migration, through the store.
async fn check_migrated_store(store: &dyn Store) {
    let b = store.work("b").await.unwrap();
    assert_eq!(b.work.data, json!({"project": "/p"}));
    assert_eq!(b.work.created_at, 1000);
    let owners: Vec<&str> = b.owners.iter().map(|o| o.id.as_str()).collect();
    assert_eq!(owners, ["b-c0", "b-c1"], "ordinal order");
    let tasks: Vec<(&str, TaskState)> = b.tasks.iter().map(|t| (t.id.as_str(), t.state)).collect();
    assert_eq!(
        tasks,
        [("b-t1", TaskState::Running), ("b-t0", TaskState::Completed)],
        "queue order"
    );
    assert_eq!(b.tasks[1].result, Some(json!({"ok": true})));
    assert_eq!(
        b.tasks[0].retry,
        RetryPolicy::exponential(3, 100, 2.0, 1000)
    );
    let r = store.work("r").await.unwrap();
    assert_eq!(r.tasks[1].error.as_deref(), Some("boom"));
    assert_eq!(store.events_after(0, 100).await.unwrap().len(), 2);

    // The old lease still fences: its holder can heartbeat and complete.
    let fence = Fence {
        task_id: "b-t1".into(),
        lease_token: "token-1".into(),
    };
    store
        .heartbeat(&fence, Duration::from_secs(30))
        .await
        .unwrap();
    let done = store
        .complete(&fence, Completion::completed(json!({"late": true})))
        .await
        .unwrap();
    assert_eq!(done.state, TaskState::Completed);
    let claims = store
        .claim(&ClaimRequest::new("w-new").limit(10))
        .await
        .unwrap();
    let claimed: Vec<&str> = claims.iter().map(|c| c.task.id.as_str()).collect();
    assert_eq!(claimed, ["r-t0"], "the one pending task");
    assert_eq!(claims[0].task.lane, Lane::Driver, "a run driver's");
    let lanes: Vec<(Lane, Option<u32>)> = store
        .lanes()
        .await
        .unwrap()
        .iter()
        .map(|l| (l.lane, l.capacity))
        .collect();
    assert_eq!(
        lanes,
        [
            (Lane::Local, Some(1)),
            (Lane::Cloud, None),
            (Lane::Driver, None)
        ]
    );

    // The new kinds, on the migrated store.
    let judge = NewOwner {
        id: "b-judge".into(),
        kind: OwnerKind::Judge,
        status: "pending".into(),
        data: json!({}),
    };
    let task = TaskSpec::new(
        "b-judge-t",
        OwnerRef {
            kind: OwnerKind::Judge,
            id: "b-judge".into(),
        },
        Lane::Cloud,
    );
    store.add_owner("b", judge, vec![task], None).await.unwrap();
    let claims = store
        .claim(&ClaimRequest::new("w-new").owner_kinds(&[OwnerKind::Judge]))
        .await
        .unwrap();
    assert_eq!(claims[0].task.id, "b-judge-t");
    assert_eq!(store.owner("b-judge").await.unwrap().kind, OwnerKind::Judge);
    let listed = store
        .list_works(&WorkFilter::new(WorkKind::Battle).data_field("project", "/p"))
        .await
        .unwrap();
    assert_eq!(listed.works.len(), 1);
}

const PG_SEED: &[&str] = &[
    r#"INSERT INTO works (id, kind, status, data, created_at, updated_at)
       VALUES ('b', 'battle', 'running', '{"project":"/p"}', to_timestamp(1), to_timestamp(1.001))"#,
    "INSERT INTO works (id, kind, status, data, created_at, updated_at)
       VALUES ('r', 'run', 'running', '{}', to_timestamp(2), to_timestamp(2))",
    r#"INSERT INTO owners (id, work_id, kind, status, data, ordinal)
       VALUES ('b-c1', 'b', 'contestant', 'running', '{"identity":"b"}', 1)"#,
    r#"INSERT INTO owners (id, work_id, kind, status, data, ordinal)
       VALUES ('b-c0', 'b', 'contestant', 'done', '{"identity":"a"}', 0)"#,
    "INSERT INTO owners (id, work_id, kind, status, data, ordinal)
       VALUES ('r-s0', 'r', 'step', 'pending', '{}', 0)",
    r#"INSERT INTO tasks (id, work_id, owner_kind, owner_id, lane, state, payload, attempt,
        max_attempts, backoff_initial_ms, backoff_multiplier, backoff_max_ms, max_rescues,
        available_at, worker, lease_token, lease_expires_at, heartbeat_at, started_at)
       VALUES ('b-t1', 'b', 'contestant', 'b-c1', 'cloud', 'running', '{"n":1}', 1, 3, 100, 2.0,
        1000, 3, to_timestamp(1), 'w-old', 'token-1', to_timestamp(32503680000), now(), now())"#,
    r#"INSERT INTO tasks (id, work_id, owner_kind, owner_id, lane, state, payload, attempt,
        max_attempts, backoff_initial_ms, backoff_multiplier, backoff_max_ms, max_rescues,
        available_at, worker, result, started_at, finished_at)
       VALUES ('b-t0', 'b', 'contestant', 'b-c0', 'local', 'completed', '{"n":0}', 1, 1, 0, 1.0,
        0, 3, to_timestamp(1), 'w-old', '{"ok":true}', now(), now())"#,
    "INSERT INTO tasks (id, work_id, owner_kind, owner_id, lane, state, payload, max_attempts,
        backoff_initial_ms, backoff_multiplier, backoff_max_ms, max_rescues, available_at)
       VALUES ('r-t0', 'r', 'step', 'r-s0', 'cloud', 'pending', '{}', 1, 0, 1.0, 0, 3,
        to_timestamp(0))",
    "INSERT INTO tasks (id, work_id, owner_kind, owner_id, lane, state, payload, attempt,
        failures, max_attempts, backoff_initial_ms, backoff_multiplier, backoff_max_ms,
        max_rescues, available_at, error, finished_at)
       VALUES ('r-t1', 'r', 'step', 'r-s0', 'cloud', 'failed', '{}', 1, 1, 1, 0, 1.0, 0, 3,
        to_timestamp(0), 'boom', now())",
    r#"INSERT INTO events (kind, work_id, payload) VALUES ('battle_started', 'b', '{"battle_id":"b"}')"#,
    r#"INSERT INTO events (kind, work_id, owner_id, task_id, payload)
       VALUES ('contestant_updated', 'b', 'b-c0', 'b-t0', '{"status":"done"}')"#,
];

async fn postgres_rows(pool: &sqlx::PgPool) -> Vec<String> {
    let mut all = Vec::new();
    for (table, order) in [
        ("works", "id"),
        ("owners", "id"),
        ("tasks", "queue_seq"),
        ("events", "seq"),
    ] {
        let rows: Vec<(String,)> = sqlx::query_as(&format!(
            "SELECT '{table}:' || row_to_json(t)::text FROM {table} t ORDER BY {order}"
        ))
        .fetch_all(pool)
        .await
        .unwrap();
        all.extend(rows.into_iter().map(|(row,)| row));
    }
    all
}

async fn postgres_from_0001(url: &str) {
    let schema = format!("coderig_mig_{}_{}", std::process::id(), rand_suffix());
    let admin = sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .connect(url)
        .await
        .unwrap();
    sqlx::query(&format!("CREATE SCHEMA {schema}"))
        .execute(&admin)
        .await
        .unwrap();
    let options: sqlx::postgres::PgConnectOptions = url.parse().unwrap();
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(2)
        .connect_with(options.options([("search_path", schema.as_str())]))
        .await
        .unwrap();
    let (migrator, _folder) = migrator_0001("postgres").await;
    migrator.run(&pool).await.unwrap();
    for statement in PG_SEED {
        sqlx::query(statement).execute(&pool).await.unwrap();
    }
    let rows_before = postgres_rows(&pool).await;
    assert_eq!(rows_before.len(), 2 + 3 + 4 + 2);

    let store = PostgresStore::connect_with(
        url,
        PostgresOptions {
            schema: Some(schema.clone()),
            ..PostgresOptions::default()
        },
    )
    .await
    .unwrap();
    let versions: Vec<(i64,)> =
        sqlx::query_as("SELECT version FROM _sqlx_migrations ORDER BY version")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(versions, [(1,), (2,), (3,)]);
    assert_eq!(
        postgres_rows(&pool).await,
        drivers_moved(
            &rows_before,
            r#""owner_kind":"step","owner_id":"r-s0","lane":"cloud""#,
            r#""owner_kind":"step","owner_id":"r-s0","lane":"driver""#
        ),
        "every row, unchanged but the step tasks' lane"
    );
    let bogus = sqlx::query(
        "INSERT INTO owners (id, work_id, kind, status, data, ordinal) \
         VALUES ('x', 'b', 'bogus', 's', '{}', 9)",
    )
    .execute(&pool)
    .await;
    assert!(bogus.is_err(), "the new CHECK is in force");
    let capped = sqlx::query("UPDATE lanes SET capacity = 1 WHERE name = 'driver'")
        .execute(&pool)
        .await;
    assert!(capped.is_err(), "the driver lane cannot be capped");
    check_migrated_store(&store).await;

    store.close().await;
    pool.close().await;
    sqlx::query(&format!("DROP SCHEMA {schema} CASCADE"))
        .execute(&admin)
        .await
        .unwrap();
    admin.close().await;
}

fn rand_suffix() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos()
}
