//! SQLite's statements of the shared body (`store::body`): times are
//! integer milliseconds of the database clock ([`NOW`]), lists are read
//! with `json_each`, and no statement locks a row — `BEGIN IMMEDIATE`
//! holds the database's write lock from the first statement to commit.

use super::{EVENT_COLUMNS, NOW, TASK_COLUMNS};
use crate::store::body::{portable, sqlx_conn, Statements};
use sqlx::sqlite::{SqliteConnection, SqliteRow};
use std::sync::LazyLock;

sqlx_conn!(SqliteConnection, SqliteRow);

/// SQLite's claim of one lane (the backend's own, not the body's): `lane,
/// worker, ttl ms, limit, [owner kind, …], [work id, …]` (empty lists:
/// any) → up to `limit` of the lane's due pending tasks, oldest first, no
/// more than the lane's capacity leaves room for, now running under fresh
/// leases (`lease_token` beside the task's columns). The room is counted
/// in the same statement, under the write lock: the capped lane stays
/// exact; an unbounded lane's running tasks are not counted at all. (A
/// negative LIMIT means none in SQLite: clamped to 0.)
pub(super) static CLAIM_LANE: LazyLock<String> = LazyLock::new(|| {
    format!(
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
             ORDER BY available_at, rowid \
             LIMIT coalesce((SELECT CASE WHEN capacity IS NULL THEN ?4 \
                 ELSE max(0, min(?4, capacity - (SELECT count(*) FROM tasks \
                     WHERE lane = ?1 AND state = 'running'))) END \
                 FROM lanes WHERE name = ?1), ?4)) \
         RETURNING {TASK_COLUMNS}, lease_token"
    )
});

/// The statements, built once.
pub(super) static SQL: LazyLock<Statements> = LazyLock::new(|| Statements {
    insert_events: format!(
        "INSERT INTO events (kind, work_id, owner_id, task_id, payload, created_at) \
         SELECT value ->> 0, $1, value ->> 1, $2, value ->> 2, {NOW} \
         FROM json_each($3) ORDER BY key \
         RETURNING {EVENT_COLUMNS}"
    ),
    insert_work: format!(
        "INSERT INTO works (id, kind, status, data, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, {NOW}, {NOW})"
    ),
    insert_owners: format!(
        "INSERT INTO owners (id, work_id, kind, status, data, ordinal, created_at, updated_at) \
         SELECT value ->> 0, $1, value ->> 1, value ->> 2, value ->> 3, \
             (SELECT coalesce(max(ordinal) + 1, 0) FROM owners WHERE work_id = $1) \
                 + (value ->> 4), \
             {NOW}, {NOW} \
         FROM json_each($2) ORDER BY key"
    ),
    existing_owners: "SELECT id FROM owners WHERE id IN (SELECT value FROM json_each($1))".into(),
    insert_task: format!(
        "INSERT INTO tasks (id, work_id, owner_kind, owner_id, lane, state, payload, \
             max_attempts, backoff_initial_ms, backoff_multiplier, backoff_max_ms, max_rescues, \
             available_at, created_at) \
         SELECT $1, o.work_id, o.kind, o.id, $4, 'pending', $5, $6, $7, $8, $9, $10, \
             {NOW} + $11, {NOW} \
         FROM owners o WHERE o.id = $3 AND o.kind = $2 \
         RETURNING {TASK_COLUMNS}"
    ),
    fenced_task: format!(
        "SELECT {TASK_COLUMNS} FROM tasks WHERE id = $1 AND lease_token = $2 AND state = 'running'"
    ),
    fenced_work: format!(
        "WITH t AS (SELECT {TASK_COLUMNS} FROM tasks \
             WHERE id = $1 AND lease_token = $2 AND state = 'running') \
         SELECT t.*, w.kind AS work_kind, w.status AS work_status \
         FROM t JOIN works w ON w.id = t.work_id"
    ),
    task_state: portable::TASK_STATE.into(),
    work_row: "SELECT kind, status FROM works WHERE id = $1".into(),
    owner_rows: "SELECT id, work_id, kind, status FROM owners \
         WHERE id IN (SELECT value FROM json_each($1))"
        .into(),
    update_work: format!(
        "UPDATE works SET status = coalesce($2, status), data = coalesce($3, data), \
         updated_at = {NOW} WHERE id = $1"
    ),
    update_owners: format!(
        "UPDATE owners SET status = coalesce(w.value ->> 1, owners.status), \
             data = coalesce(w.value ->> 2, owners.data), updated_at = {NOW} \
         FROM json_each($1) AS w WHERE owners.id = w.value ->> 0 \
         RETURNING owners.work_id"
    ),
    cancel_work_tasks: format!(
        "UPDATE tasks SET state = 'cancelled', lease_token = NULL, \
             lease_expires_at = NULL, heartbeat_at = NULL, error = $2, finished_at = {NOW} \
         WHERE work_id = $1 AND state IN ('pending', 'running', 'blocked') \
         RETURNING {TASK_COLUMNS}"
    ),
    settle_task: format!(
        "UPDATE tasks SET state = $2, failures = $3, \
             available_at = CASE WHEN $4 IS NULL THEN available_at ELSE {NOW} + $4 END, \
             lease_token = NULL, lease_expires_at = NULL, heartbeat_at = NULL, \
             result = $5, error = $6, \
             finished_at = CASE WHEN $7 THEN {NOW} ELSE NULL END \
         WHERE id = $1 RETURNING {TASK_COLUMNS}"
    ),
    cancel_task: format!(
        "UPDATE tasks SET state = 'cancelled', lease_token = NULL, \
             lease_expires_at = NULL, heartbeat_at = NULL, error = $2, finished_at = {NOW} \
         WHERE id = $1 AND state IN ('pending', 'running', 'blocked') \
         RETURNING {TASK_COLUMNS}"
    ),
    work_status: "SELECT status, id AS work_id FROM works WHERE id = $1".into(),
    owner_status: "SELECT status, work_id FROM owners WHERE id = $1".into(),
    work_for_owner: "SELECT kind FROM works WHERE id = $1".into(),

    heartbeat: format!(
        "UPDATE tasks SET lease_expires_at = {NOW} + $3, heartbeat_at = {NOW} \
         WHERE id = $1 AND lease_token = $2 AND state = 'running' \
         RETURNING lease_expires_at"
    ),
    heartbeat_many: format!(
        "UPDATE tasks SET lease_expires_at = {NOW} + $2, heartbeat_at = {NOW} \
         WHERE state = 'running' AND (id, lease_token) IN \
             (SELECT value ->> 0, value ->> 1 FROM json_each($1)) \
         RETURNING id, lease_token, lease_expires_at"
    ),
    rescue_expired: format!(
        "UPDATE tasks SET \
             state = CASE WHEN rescues < max_rescues THEN 'pending' ELSE 'failed' END, \
             rescues = rescues + 1, available_at = {NOW}, \
             lease_token = NULL, lease_expires_at = NULL, heartbeat_at = NULL, \
             error = 'lease expired', \
             finished_at = CASE WHEN rescues < max_rescues THEN NULL ELSE {NOW} END \
         WHERE id IN (SELECT id FROM tasks \
                 WHERE state = 'running' AND lease_expires_at < {NOW} \
                 ORDER BY lease_expires_at LIMIT $1) \
             AND state = 'running' AND lease_expires_at < {NOW} \
         RETURNING {TASK_COLUMNS}"
    ),

    task: format!("SELECT {TASK_COLUMNS} FROM tasks WHERE id = $1"),
    work: "SELECT id, kind, status, data, created_at, updated_at FROM works WHERE id = $1".into(),
    work_owners: format!("SELECT {OWNER_COLUMNS} FROM owners WHERE work_id = $1 ORDER BY ordinal"),
    work_tasks: format!("SELECT {TASK_COLUMNS} FROM tasks WHERE work_id = $1 ORDER BY rowid"),
    owner: format!("SELECT {OWNER_COLUMNS} FROM owners WHERE id = $1"),
    // The key is [A-Za-z0-9_]+ (checked): quoted, it is one JSON path
    // label. json_type 'text' keeps numbers from matching their digits.
    list_works: "SELECT id, kind, status, data, created_at, updated_at FROM works \
         WHERE kind = $1 \
           AND (json_array_length($2) = 0 OR status IN (SELECT value FROM json_each($2))) \
           AND ($3 IS NULL OR (json_type(data, '$.\"' || $3 || '\"') = 'text' \
                AND json_extract(data, '$.\"' || $3 || '\"') = $4)) \
           AND ($5 IS NULL OR (created_at, id) < ($5, $6)) \
         ORDER BY created_at DESC, id DESC LIMIT $7"
        .into(),
    events_after: format!(
        "SELECT {EVENT_COLUMNS} FROM events WHERE seq > $1 ORDER BY seq LIMIT $2"
    ),
    work_events: format!(
        "SELECT {EVENT_COLUMNS} FROM events WHERE work_id = $1 AND seq > $2 \
         ORDER BY seq LIMIT $3"
    ),
    seq_range: "SELECT coalesce(min(seq), 0) AS oldest, coalesce(max(seq), 0) AS newest \
         FROM events"
        .into(),
    lanes: portable::LANES.into(),
    set_lane_capacity: portable::SET_LANE_CAPACITY.into(),
    clock: format!("SELECT {NOW} AS now"),

    compact_victims: format!(
        "SELECT id FROM works w \
         WHERE w.status IN ('completed', 'failed', 'cancelled') AND w.updated_at < {NOW} - $1 \
           AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.work_id = w.id \
                           AND t.state IN ('pending', 'running', 'blocked'))"
    ),
    compact_events: format!(
        "DELETE FROM events WHERE seq < (SELECT max(seq) FROM events) \
         AND (created_at < {NOW} - $1 OR work_id IN (SELECT value FROM json_each($2)))"
    ),
    compact_tasks: "DELETE FROM tasks WHERE work_id IN (SELECT value FROM json_each($1))".into(),
    compact_owners: "DELETE FROM owners WHERE work_id IN (SELECT value FROM json_each($1))".into(),
    compact_works: "DELETE FROM works WHERE id IN (SELECT value FROM json_each($1))".into(),
});

/// The owner columns `owner_from_row` reads.
const OWNER_COLUMNS: &str = "id, work_id, kind, status, data, updated_at";
