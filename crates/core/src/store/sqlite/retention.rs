//! The SQLite transaction of `Store::compact`. `BEGIN IMMEDIATE` holds the
//! write lock, so the works chosen in the first statement are still the
//! ones deleted by the last.

use super::{is_busy, SqliteStore, BACKEND, NOW};
use crate::error::Error;
use crate::store::sql::*;
use crate::store::{check_retain, Compacted};
// The transaction macro names these types.
use sqlx::sqlite::SqliteConnection;
use std::time::{Duration, Instant};

/// The works to delete: final, untouched since `?1` (ms), nothing to do.
const VICTIMS: &str = "SELECT id FROM works w \
    WHERE w.status IN ('completed', 'failed', 'cancelled') AND w.updated_at < ?1 \
    AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.work_id = w.id \
                    AND t.state IN ('pending', 'running', 'blocked'))";

pub(super) async fn compact(store: &SqliteStore, retain: Duration) -> Result<Compacted, Error> {
    check_retain(retain)?;
    let retain_ms = i64::try_from(retain.as_millis()).unwrap_or(i64::MAX);
    write_tx!(store, |tx| {
        let cutoff: i64 = sqlx::query_scalar(&format!("SELECT {NOW} - ?1"))
            .bind(retain_ms)
            .fetch_one(&mut *tx)
            .await?;
        let victims: Vec<String> = sqlx::query_scalar(VICTIMS)
            .bind(cutoff)
            .fetch_all(&mut *tx)
            .await?;
        let victims = serde_json::Value::from(victims).to_string();
        let events = sqlx::query(
            "DELETE FROM events WHERE seq < (SELECT max(seq) FROM events) \
             AND (created_at < ?1 OR work_id IN (SELECT value FROM json_each(?2)))",
        )
        .bind(cutoff)
        .bind(&victims)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        let mut deleted = [0u64; 3];
        for (n, table) in ["tasks", "owners", "works"].iter().enumerate() {
            let column = if *table == "works" { "id" } else { "work_id" };
            deleted[n] = sqlx::query(&format!(
                "DELETE FROM {table} WHERE {column} IN (SELECT value FROM json_each(?1))"
            ))
            .bind(&victims)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        }
        let [tasks, _, works] = deleted;
        Compacted {
            works,
            tasks,
            events,
        }
    })
}
