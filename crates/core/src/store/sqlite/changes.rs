//! The SQLite transaction of `Store::record_changes` (kept out of
//! `sqlite.rs` to keep it readable). The decisions are the shared planner's
//! (`store::changes`); this reads the rows it needs in two statements and
//! writes one prepared statement per changed row and per event.

use super::{fenced_task, insert_event, is_busy, SqliteStore, BACKEND, NOW};
use crate::error::Error;
use crate::store::changes::{check_changes, named_owners, plan, OwnerRow};
use crate::store::records::*;
use crate::store::sql::*;
use std::collections::HashMap;
// The transaction macro names these types.
use sqlx::sqlite::SqliteConnection;
use std::time::{Duration, Instant};

pub(super) async fn record_changes(
    store: &SqliteStore,
    fence: &Fence,
    changes: &Changes,
) -> Result<Vec<EventRecord>, Error> {
    check_changes(changes)?;
    let named = named_owners(changes);
    let named = serde_json::Value::from(named).to_string();
    let named = &named;
    write_tx!(store, |tx| {
        // BEGIN IMMEDIATE holds the write lock: what is read here stays
        // true until commit, so the compare-and-sets need no row locks.
        let task = fenced_task(tx, fence).await?;
        let work = match &changes.work {
            None => None,
            Some(_) => sqlx::query("SELECT kind, status FROM works WHERE id = ?1")
                .bind(&task.work_id)
                .fetch_optional(&mut *tx)
                .await?
                .map(|row| Ok::<_, Error>((row.name::<WorkKind>("kind")?, row.text("status")?)))
                .transpose()?,
        };
        let mut owners = HashMap::new();
        if named != "[]" {
            let found = sqlx::query(
                "SELECT id, work_id, kind, status FROM owners \
                 WHERE id IN (SELECT value FROM json_each(?1))",
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
            sqlx::query(&format!(
                "UPDATE works SET status = coalesce(?2, status), data = coalesce(?3, data), \
                 updated_at = {NOW} WHERE id = ?1"
            ))
            .bind(w.id)
            .bind(w.status)
            .bind(w.data.as_deref())
            .execute(&mut *tx)
            .await?;
        }
        let update_owner = format!(
            "UPDATE owners SET status = coalesce(?2, status), data = coalesce(?3, data), \
             updated_at = {NOW} WHERE id = ?1"
        );
        for o in &plan.owners {
            sqlx::query(&update_owner)
                .bind(o.id)
                .bind(o.status)
                .bind(o.data.as_deref())
                .execute(&mut *tx)
                .await?;
        }
        let mut appended = Vec::with_capacity(changes.events.len());
        for e in &changes.events {
            appended.push(
                insert_event(
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
