//! The PostgreSQL transaction of `Store::record_changes` (kept out of
//! `postgres.rs` to keep it readable). The decisions are the shared
//! planner's (`store::changes`); this locks and reads the rows it needs,
//! then writes one prepared statement per changed row and per event, the
//! events under one take of the event log's advisory lock.

use super::{
    fenced_task, insert_event_locked, is_retryable, lock_events, PostgresStore, BACKEND, WRITE,
};
use crate::error::Error;
use crate::store::changes::{check_changes, named_owners, plan, OwnerRow};
use crate::store::records::*;
use crate::store::sql::*;
use std::collections::HashMap;
// The transaction macro names these types.
use sqlx::postgres::PgConnection;
use std::time::Duration;

pub(super) async fn record_changes(
    store: &PostgresStore,
    fence: &Fence,
    changes: &Changes,
) -> Result<Vec<EventRecord>, Error> {
    check_changes(changes)?;
    let mut named: Vec<String> = named_owners(changes)
        .into_iter()
        .map(String::from)
        .collect();
    // Locked in id order: two calls naming the same owners cannot deadlock
    // on them.
    named.sort_unstable();
    let named = &named;
    let lock = store.event_lock;
    pg_tx!(store, WRITE, |tx| {
        // Locks: the task row (the fence), then the work, then the owners,
        // each held to commit, so every compare-and-set below stays true
        // against concurrent transitions and fenced writes.
        let task = fenced_task(tx, fence).await?;
        let work = match &changes.work {
            None => None,
            Some(_) => sqlx::query("SELECT kind, status FROM works WHERE id = $1 FOR UPDATE")
                .bind(&task.work_id)
                .fetch_optional(&mut *tx)
                .await?
                .map(|row| Ok::<_, Error>((row.name::<WorkKind>("kind")?, row.text("status")?)))
                .transpose()?,
        };
        let mut owners = HashMap::new();
        if !named.is_empty() {
            let found = sqlx::query(
                "SELECT id, work_id, kind, status FROM owners \
                 WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE",
            )
            .bind(named)
            .fetch_all(&mut *tx)
            .await?;
            for row in &found {
                owners.insert(
                    row.text("id")?,
                    OwnerRow {
                        work_id: row.text("work_id")?,
                        kind: row.name("kind")?,
                        status: row.text("status")?,
                    },
                );
            }
        }
        let work = work.as_ref().map(|(kind, status)| (*kind, status.as_str()));
        let plan = plan(&task.work_id, &task.id, work, &owners, changes)?;
        if let Some(w) = &plan.work {
            sqlx::query(
                "UPDATE works SET status = coalesce($2, status), \
                 data = coalesce($3::jsonb, data), updated_at = clock_timestamp() WHERE id = $1",
            )
            .bind(w.id)
            .bind(w.status)
            .bind(w.data.as_deref())
            .execute(&mut *tx)
            .await?;
        }
        for o in &plan.owners {
            sqlx::query(
                "UPDATE owners SET status = coalesce($2, status), \
                 data = coalesce($3::jsonb, data), updated_at = clock_timestamp() WHERE id = $1",
            )
            .bind(o.id)
            .bind(o.status)
            .bind(o.data.as_deref())
            .execute(&mut *tx)
            .await?;
        }
        let mut appended = Vec::with_capacity(changes.events.len());
        if !changes.events.is_empty() {
            // Once for all the events (a re-take would be a round trip per
            // event for a lock already held).
            lock_events(tx, lock).await?;
        }
        for e in &changes.events {
            appended.push(
                insert_event_locked(
                    tx,
                    &task.work_id,
                    e.owner_id.as_deref(),
                    Some(&task.id),
                    &e.event,
                )
                .await?,
            );
        }
        appended
    })
}
