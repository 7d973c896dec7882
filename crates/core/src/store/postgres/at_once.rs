//! A fenced batch in one autocommit statement: what the flow driver writes
//! after every step (its endings and starts, their events, the run's
//! liveness checked) costs one round trip instead of `BEGIN`, the fenced
//! read, the owner write, the event insert and `COMMIT` — five on a
//! loopback socket, most of a chain step's dispatch latency.
//!
//! The statement writes everything or nothing: the task's lease, the
//! work's status and that every named owner is the work's own are checked
//! before any write, and each write joins their result. When it writes
//! nothing the caller runs the batch through the transactional path,
//! whose planner finds the precise refusal (or, if the rows changed in
//! between, writes it). Rows are locked in the order of every fenced
//! write: the task, the work, the owners, then the event log's advisory
//! lock — each step reads the one before it, which is what makes
//! PostgreSQL run them in that order (data-modifying CTEs otherwise run
//! in no stated order). Once `ok` has counted every named owner as the
//! work's own, the owner update finds them by id alone.

use super::{EVENT_COLUMNS, EVENT_LOCK_CLASS};
use crate::store::changes::AtOnce;
use crate::store::records::{EventRecord, Fence};
use crate::store::sql::{event_from_row, RowExt, TxError};
use serde_json::Value;
use sqlx::postgres::PgPool;

/// The statement, for the schema whose event log is locked with
/// `event_lock`. Parameters: task id, lease token, the work's `from`
/// (JSON array), its new status and data, the owner writes (JSON array of
/// `[id, status, data]`), their count, the events (JSON array of `[kind,
/// owner, payload]`), the owners' ids (an array: owners are found by
/// primary key — a join on the work's id let the planner scan all of a
/// 10,000-step run's owners per batch). One row per event appended (or one row of nulls
/// when there are none), each with `written`: 0 when nothing was written.
/// Should the owners the statement counted not all be written (they
/// cannot change work, so only a bug could do it), the final cast fails
/// and the statement, its own transaction, rolls back.
pub(super) fn statement(event_lock: i32) -> String {
    format!(
        "WITH t AS MATERIALIZED (SELECT work_id FROM tasks \
             WHERE id = $1 AND lease_token = $2 AND state = 'running' FOR UPDATE), \
         w AS MATERIALIZED (SELECT works.id FROM works, t WHERE works.id = t.work_id \
             AND (jsonb_array_length($3::jsonb) = 0 \
                  OR works.status IN (SELECT jsonb_array_elements_text($3::jsonb))) \
             FOR UPDATE OF works), \
         named AS MATERIALIZED (SELECT x.value ->> 0 AS id, x.value ->> 1 AS status, \
                 (x.value ->> 2)::jsonb AS data \
             FROM jsonb_array_elements($6::jsonb) AS x(value)), \
         ok AS MATERIALIZED (SELECT w.id AS work_id FROM w \
             WHERE (SELECT count(*) FILTER (WHERE o.work_id = w.id) FROM owners o \
                    WHERE o.id = ANY($9::text[])) = $7), \
         wu AS (UPDATE works SET status = coalesce($4::text, works.status), \
                 data = coalesce($5::jsonb, works.data), updated_at = clock_timestamp() \
             FROM ok WHERE works.id = ok.work_id \
                 AND ($4::text IS NOT NULL OR $5::text IS NOT NULL) \
             RETURNING works.id), \
         ou AS (UPDATE owners SET status = coalesce(n.status, owners.status), \
                 data = coalesce(n.data, owners.data), updated_at = clock_timestamp() \
             FROM ok, named n WHERE owners.id = ANY($9::text[]) AND owners.id = n.id \
             RETURNING owners.id), \
         held AS MATERIALIZED (SELECT ok.work_id, \
                 pg_advisory_xact_lock({EVENT_LOCK_CLASS}, {event_lock}) AS locked \
             FROM ok, (SELECT count(*) AS n FROM ou) AS changed, \
                 (SELECT count(*) AS n FROM wu) AS work_changed \
             WHERE changed.n = $7 AND work_changed.n >= 0), \
         ev AS (INSERT INTO events (kind, work_id, owner_id, task_id, payload, created_at) \
             SELECT e.value ->> 0, held.work_id, e.value ->> 1, $1, (e.value ->> 2)::jsonb, \
                 clock_timestamp() \
             FROM held, jsonb_array_elements($8::jsonb) WITH ORDINALITY AS e(value, n) \
             ORDER BY e.n \
             RETURNING {EVENT_COLUMNS}) \
         SELECT CASE WHEN (SELECT count(*) FROM held) = (SELECT count(*) FROM ok) \
                 THEN (SELECT count(*) FROM held) \
                 ELSE ('store: owners written without their batch, ' \
                     || (SELECT count(*) FROM ok))::int8 END AS written, ev.* \
         FROM (SELECT 1) AS one LEFT JOIN ev ON true"
    )
}

/// Runs `batch` under `fence` as one statement: `Some(events)` (in seq
/// order) when it was written, `None` when it was not — nothing was, and
/// the transactional path decides.
pub(super) async fn write(
    pool: &PgPool,
    sql: &str,
    fence: &Fence,
    batch: &AtOnce,
) -> Result<Option<Vec<EventRecord>>, TxError> {
    let rows = sqlx::query(sql)
        .bind(&fence.task_id)
        .bind(&fence.lease_token)
        .bind(Value::from(batch.work_from.clone()).to_string())
        .bind(&batch.work_status)
        .bind(&batch.work_data)
        .bind(Value::from(batch.owners.clone()).to_string())
        .bind(batch.owners.len() as i64)
        .bind(Value::from(batch.events.clone()).to_string())
        .bind(&batch.owner_ids)
        .fetch_all(pool)
        .await?;
    let written = match rows.first() {
        Some(row) => row.int("written")? > 0,
        None => false,
    };
    if !written {
        return Ok(None);
    }
    let mut events = Vec::with_capacity(batch.events.len());
    for row in &rows {
        if row.opt_int("seq")?.is_some() {
            events.push(event_from_row(row)?);
        }
    }
    if events.len() != batch.events.len() {
        // Cannot happen (every event joins the one `held` row); were it
        // to, the writes are committed and the caller must not retry.
        return Err(crate::error::Error::internal(format!(
            "store: {} events appended in one statement, {} returned",
            batch.events.len(),
            events.len()
        ))
        .into());
    }
    events.sort_by_key(|e| e.seq);
    Ok(Some(events))
}

/// Against the PostgreSQL of `DATABASE_URL` (skipped without one unless
/// `CODERIG_REQUIRE_POSTGRES` is set): the conformance suite shows what
/// `record_changes` answers; this shows the batches it should write at
/// once are written at once, and that the statement's refusals write
/// nothing before the transactional path decides.
#[cfg(test)]
mod tests {
    use super::super::{test_store, PostgresStore};
    use crate::arena::Lane;
    use crate::event::EventType;
    use crate::store::*;
    use serde_json::json;

    fn run(id: &str, steps: usize) -> NewWork {
        NewWork {
            id: id.into(),
            kind: WorkKind::Run,
            status: "running".into(),
            data: json!({}),
            owners: (0..steps)
                .map(|i| NewOwner {
                    id: format!("{id}-s{i}"),
                    kind: OwnerKind::Step,
                    status: "pending".into(),
                    data: json!({}),
                })
                .collect(),
            tasks: Vec::new(),
            event: NewEvent::new(EventType::RunUpdated, json!({"run_id": id})),
        }
    }

    fn step(id: &str, status: &str) -> OwnerChange {
        OwnerChange::new(id)
            .status(status)
            .data(json!({"at": status}))
    }

    fn event(owner: &str) -> ChangeEvent {
        ChangeEvent::about(
            owner,
            NewEvent::new(EventType::StepUpdated, json!({"step_id": owner})),
        )
    }

    async fn statuses(store: &PostgresStore, work: &str) -> Vec<String> {
        let snapshot = store.work(work).await.unwrap();
        let mut all = vec![snapshot.work.status];
        all.extend(snapshot.owners.into_iter().map(|o| o.status));
        all
    }

    #[tokio::test]
    async fn a_driver_batch_is_one_statement_and_its_refusals_write_nothing() {
        let Some(store) = test_store("at_once_unit").await else {
            return;
        };
        store.create_work(run("r", 3)).await.unwrap();
        store.create_work(run("o", 1)).await.unwrap();
        let task = TaskSpec::new(
            "r-driver",
            OwnerRef {
                kind: OwnerKind::Step,
                id: "r-s0".into(),
            },
            Lane::Cloud,
        );
        store.enqueue(vec![task], None).await.unwrap();
        let claim = store
            .claim(&ClaimRequest::new("w").lease_ttl(std::time::Duration::from_secs(30)))
            .await
            .unwrap()
            .remove(0);
        let live = || WorkChange::new().from(&["running", "waiting"]);
        let before = statuses(&store, "r").await;
        let stale = Fence {
            task_id: claim.task.id.clone(),
            lease_token: "stale".into(),
        };
        let refusals = [
            (
                "a stale lease",
                stale.clone(),
                Changes::new().work(live()).owner(step("r-s1", "done")),
            ),
            (
                "another work's owner",
                claim.fence(),
                Changes::new()
                    .work(live())
                    .owner(step("r-s1", "done"))
                    .owner(step("o-s0", "done")),
            ),
            (
                "an unknown owner",
                claim.fence(),
                Changes::new()
                    .work(live())
                    .owner(step("r-s1", "done"))
                    .owner(step("r-s9", "done")),
            ),
            (
                "the work not live",
                claim.fence(),
                Changes::new()
                    .work(WorkChange::new().from(&["waiting"]))
                    .owner(step("r-s1", "done")),
            ),
        ];
        let commits = store.commits();
        for (name, fence, changes) in &refusals {
            let answer = store.record_changes_at_once(fence, changes).await.unwrap();
            assert!(answer.is_none(), "{name}");
            assert_eq!(statuses(&store, "r").await, before, "{name} wrote nothing");
            assert_eq!(statuses(&store, "o").await[1], "pending", "{name}");
        }
        assert_eq!(store.commits(), commits, "a refusal is no commit");

        // A chain step: one ending, one start, their events, the run
        // checked live and moved to waiting.
        let changes = Changes::new()
            .work(live().status("waiting"))
            .owner(step("r-s0", "running"))
            .owner(step("r-s1", "running"))
            .owner(step("r-s0", "done"))
            .event(event("r-s0"))
            .event(event("r-s1"));
        let events = store
            .record_changes_at_once(&claim.fence(), &changes)
            .await
            .unwrap()
            .expect("written at once");
        assert_eq!(store.commits(), commits + 1);
        let owners: Vec<_> = events.iter().map(|e| e.owner_id.as_deref()).collect();
        assert_eq!(owners, [Some("r-s0"), Some("r-s1")]);
        assert!(events[0].seq < events[1].seq);
        assert!(events
            .iter()
            .all(|e| e.task_id.as_deref() == Some("r-driver")));
        assert_eq!(
            statuses(&store, "r").await,
            ["waiting", "done", "running", "pending"]
        );
        let snapshot = store.work("r").await.unwrap();
        assert_eq!(
            snapshot.owners[0].data,
            json!({"at": "done"}),
            "the last data wins"
        );
        let stored = store.events_after(0, 100).await.unwrap();
        assert_eq!(stored[stored.len() - 2..], events[..]);

        // What the statement cannot check goes to the transaction.
        let compared = Changes::new().work(live()).owner(
            OwnerChange::new("r-s2")
                .from(&["pending"])
                .status("running"),
        );
        assert!(store
            .record_changes_at_once(&claim.fence(), &compared)
            .await
            .unwrap()
            .is_none());
        assert_eq!(statuses(&store, "r").await[3], "pending");
        store.close().await;
    }
}
