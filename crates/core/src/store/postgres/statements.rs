//! PostgreSQL's statements of the shared body (`store::body`): times are
//! `timestamptz` of the server's clock read back as milliseconds
//! (`coderig_ms`), JSON is `jsonb`, lists are read with
//! `jsonb_array_elements`, and every row a compare-and-set or fence
//! depends on is locked `FOR UPDATE` to commit. Events are appended under
//! the schema's advisory lock, so seq order is commit order.

use super::{ms, EVENT_COLUMNS, EVENT_LOCK_CLASS, TASK_COLUMNS};
use crate::store::body::{portable, sqlx_conn, Statements};
use sqlx::postgres::{PgConnection, PgRow};

sqlx_conn!(PgConnection, PgRow, before_append: {
    // The commit carries events: `pg_tx!` announces it to listeners.
    let _ = super::tx::APPENDED.try_with(|appended| appended.set(true));
});

/// The statements of a store whose event log is locked with `event_lock`
/// (a key of its schema).
pub(super) fn statements(event_lock: i32) -> Statements {
    Statements {
        // The advisory lock joins every row, so it is taken before the sort
        // hands the insert its first row (its first seq), and held to commit.
        insert_events: format!(
            "WITH held AS (SELECT pg_advisory_xact_lock({EVENT_LOCK_CLASS}, {event_lock})) \
             INSERT INTO events (kind, work_id, owner_id, task_id, payload, created_at) \
             SELECT e.value ->> 0, $1, e.value ->> 1, $2, (e.value ->> 2)::jsonb, \
                 clock_timestamp() \
             FROM held, jsonb_array_elements($3::jsonb) WITH ORDINALITY AS e(value, n) \
             ORDER BY e.n \
             RETURNING {EVENT_COLUMNS}"
        ),
        insert_work: "INSERT INTO works (id, kind, status, data) VALUES ($1, $2, $3, $4::jsonb)"
            .into(),
        insert_owners: "INSERT INTO owners (id, work_id, kind, status, data, ordinal) \
             SELECT o.value ->> 0, $1, o.value ->> 1, o.value ->> 2, (o.value ->> 3)::jsonb, \
                 (SELECT coalesce(max(ordinal) + 1, 0) FROM owners WHERE work_id = $1) \
                     + (o.value ->> 4)::bigint \
             FROM jsonb_array_elements($2::jsonb) AS o(value)"
            .into(),
        existing_owners: "SELECT id FROM owners \
             WHERE id IN (SELECT jsonb_array_elements_text($1::jsonb))"
            .into(),
        insert_task: format!(
            "INSERT INTO tasks (id, work_id, owner_kind, owner_id, lane, state, payload, \
                 max_attempts, backoff_initial_ms, backoff_multiplier, backoff_max_ms, \
                 max_rescues, available_at, created_at) \
             SELECT $1, o.work_id, o.kind, o.id, $4, 'pending', $5::jsonb, $6, $7, $8, $9, \
                 $10, clock_timestamp() + {}, clock_timestamp() \
             FROM owners o WHERE o.id = $3 AND o.kind = $2 \
             RETURNING {TASK_COLUMNS}",
            ms(11)
        ),
        fenced_task: format!(
            "SELECT {TASK_COLUMNS} FROM tasks \
             WHERE id = $1 AND lease_token = $2 AND state = 'running' FOR UPDATE"
        ),
        // The task's row is locked in the CTE, the work's by the outer
        // lock, on the joined row: task first, then work (the order of
        // every fenced write and finish).
        fenced_work: format!(
            "WITH t AS (SELECT {TASK_COLUMNS} FROM tasks \
                 WHERE id = $1 AND lease_token = $2 AND state = 'running' FOR UPDATE) \
             SELECT t.*, w.kind AS work_kind, w.status AS work_status \
             FROM t JOIN works w ON w.id = t.work_id FOR UPDATE OF w"
        ),
        task_state: portable::TASK_STATE.into(),
        work_row: "SELECT kind, status FROM works WHERE id = $1 FOR UPDATE".into(),
        owner_rows: "SELECT id, work_id, kind, status FROM owners \
             WHERE id IN (SELECT jsonb_array_elements_text($1::jsonb)) \
             ORDER BY id FOR UPDATE"
            .into(),
        update_work: "UPDATE works SET status = coalesce($2, status), \
             data = coalesce($3::jsonb, data), updated_at = clock_timestamp() WHERE id = $1"
            .into(),
        update_owners: "UPDATE owners SET status = coalesce(w.value ->> 1, owners.status), \
                 data = coalesce((w.value ->> 2)::jsonb, owners.data), \
                 updated_at = clock_timestamp() \
             FROM jsonb_array_elements($1::jsonb) AS w(value) \
             WHERE owners.id = ANY(ARRAY(SELECT jsonb_array_elements($1::jsonb) ->> 0)) \
                 AND owners.id = w.value ->> 0 \
             RETURNING owners.work_id"
            .into(),
        cancel_work_tasks: format!(
            "UPDATE tasks SET state = 'cancelled', lease_token = NULL, \
                 lease_expires_at = NULL, heartbeat_at = NULL, error = $2, \
                 finished_at = clock_timestamp() \
             WHERE id IN (SELECT id FROM tasks \
                     WHERE work_id = $1 AND state IN ('pending', 'running', 'blocked') \
                     ORDER BY id FOR UPDATE) \
                 AND state IN ('pending', 'running', 'blocked') \
             RETURNING {TASK_COLUMNS}"
        ),
        settle_task: format!(
            "UPDATE tasks SET state = $2, failures = $3, \
                 available_at = CASE WHEN $4::bigint IS NULL THEN available_at \
                     ELSE clock_timestamp() + {} END, \
                 lease_token = NULL, lease_expires_at = NULL, heartbeat_at = NULL, \
                 result = $5::jsonb, error = $6, \
                 finished_at = CASE WHEN $7 THEN clock_timestamp() ELSE NULL END \
             WHERE id = $1 RETURNING {TASK_COLUMNS}",
            ms(4)
        ),
        cancel_task: format!(
            "UPDATE tasks SET state = 'cancelled', lease_token = NULL, \
                 lease_expires_at = NULL, heartbeat_at = NULL, error = $2, \
                 finished_at = clock_timestamp() \
             WHERE id = $1 AND state IN ('pending', 'running', 'blocked') \
             RETURNING {TASK_COLUMNS}"
        ),
        work_status: "SELECT status, id AS work_id FROM works WHERE id = $1 FOR UPDATE".into(),
        owner_status: "SELECT status, work_id FROM owners WHERE id = $1 FOR UPDATE".into(),
        work_for_owner: "SELECT kind FROM works WHERE id = $1 FOR UPDATE".into(),

        heartbeat: format!(
            "UPDATE tasks SET lease_expires_at = clock_timestamp() + {}, \
                 heartbeat_at = clock_timestamp() \
             WHERE id = $1 AND lease_token = $2 AND state = 'running' \
             RETURNING coderig_ms(lease_expires_at) AS lease_expires_at",
            ms(3)
        ),
        // Rows locked in id order: two batches over the same tasks cannot
        // deadlock.
        heartbeat_many: format!(
            "UPDATE tasks SET lease_expires_at = clock_timestamp() + {}, \
                 heartbeat_at = clock_timestamp() \
             FROM (SELECT t.id FROM tasks t \
                   JOIN jsonb_array_elements($1::jsonb) AS f(pair) \
                     ON t.id = f.pair ->> 0 AND t.lease_token = f.pair ->> 1 \
                   WHERE t.state = 'running' ORDER BY t.id FOR UPDATE OF t) AS held \
             WHERE tasks.id = held.id \
             RETURNING tasks.id, tasks.lease_token, \
                 coderig_ms(tasks.lease_expires_at) AS lease_expires_at",
            ms(2)
        ),
        // The outer predicate is re-checked on the newest row version after
        // the lock: a task completed meanwhile is left alone.
        rescue_expired: format!(
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
        ),

        task: format!("SELECT {TASK_COLUMNS} FROM tasks WHERE id = $1"),
        work: format!("SELECT {WORK_COLUMNS} FROM works WHERE id = $1"),
        work_owners: format!(
            "SELECT {OWNER_COLUMNS} FROM owners WHERE work_id = $1 ORDER BY ordinal"
        ),
        work_tasks: format!(
            "SELECT {TASK_COLUMNS} FROM tasks WHERE work_id = $1 ORDER BY queue_seq"
        ),
        owner: format!("SELECT {OWNER_COLUMNS} FROM owners WHERE id = $1"),
        // Ordered by the milliseconds (coderig_ms_key, migration 0002), the
        // value `created_at` shows and the cursor carries, so the cursor is
        // exact. jsonb_typeof 'string' keeps numbers from matching their
        // digits, as on SQLite.
        list_works: format!(
            "SELECT {WORK_COLUMNS} FROM works \
             WHERE kind = $1 \
               AND (jsonb_array_length($2::jsonb) = 0 \
                    OR status IN (SELECT jsonb_array_elements_text($2::jsonb))) \
               AND ($3::text IS NULL OR (jsonb_typeof(data -> $3::text) = 'string' \
                    AND data ->> $3::text = $4::text)) \
               AND ($5::bigint IS NULL \
                    OR (coderig_ms_key(created_at), id) < ($5::bigint, $6::text)) \
             ORDER BY coderig_ms_key(created_at) DESC, id DESC LIMIT $7"
        ),
        events_after: format!(
            "SELECT {EVENT_COLUMNS} FROM events WHERE seq > $1 ORDER BY seq LIMIT $2"
        ),
        work_events: format!(
            "SELECT {EVENT_COLUMNS} FROM events WHERE work_id = $1 AND seq > $2 \
             ORDER BY seq LIMIT $3"
        ),
        seq_range: "SELECT coalesce(min(seq), 0)::int8 AS oldest, \
                 coalesce(max(seq), 0)::int8 AS newest FROM events"
            .into(),
        lanes: portable::LANES.into(),
        set_lane_capacity: portable::SET_LANE_CAPACITY.into(),
        clock: "SELECT coderig_ms(clock_timestamp()) AS now".into(),

        compact_victims: "SELECT id FROM works w \
             WHERE w.status IN ('completed', 'failed', 'cancelled') \
               AND w.updated_at < now() - ($1::float8 * interval '1 millisecond') \
               AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.work_id = w.id \
                               AND t.state IN ('pending', 'running', 'blocked')) \
             ORDER BY id FOR UPDATE SKIP LOCKED"
            .into(),
        compact_events: "DELETE FROM events WHERE seq < (SELECT max(seq) FROM events) \
             AND (created_at < now() - ($1::float8 * interval '1 millisecond') \
                  OR work_id IN (SELECT jsonb_array_elements_text($2::jsonb)))"
            .into(),
        compact_tasks: "DELETE FROM tasks \
             WHERE work_id IN (SELECT jsonb_array_elements_text($1::jsonb))"
            .into(),
        compact_owners: "DELETE FROM owners \
             WHERE work_id IN (SELECT jsonb_array_elements_text($1::jsonb))"
            .into(),
        compact_works:
            "DELETE FROM works WHERE id IN (SELECT jsonb_array_elements_text($1::jsonb))".into(),
    }
}

/// The work columns `work_from_row` reads.
const WORK_COLUMNS: &str = "id, kind, status, data::text AS data, \
    coderig_ms(created_at) AS created_at, coderig_ms(updated_at) AS updated_at";

/// The owner columns `owner_from_row` reads.
const OWNER_COLUMNS: &str = "id, work_id, kind, status, data::text AS data, \
    coderig_ms(updated_at) AS updated_at";
