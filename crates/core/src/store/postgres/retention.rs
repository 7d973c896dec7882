//! The PostgreSQL transaction of `Store::compact`. The works to delete are
//! locked first (`FOR UPDATE SKIP LOCKED`: one a writer holds now is not
//! idle, and waits for the next compaction), so a task enqueued for one of
//! them meanwhile waits on the lock and then finds its work gone, instead
//! of being deleted unseen.

use super::{is_retryable, PostgresStore, BACKEND, WRITE};
use crate::error::Error;
use crate::store::sql::*;
use crate::store::{check_retain, Compacted};
// The transaction macro names these types.
use sqlx::postgres::PgConnection;
use std::time::Duration;

pub(super) async fn compact(store: &PostgresStore, retain: Duration) -> Result<Compacted, Error> {
    check_retain(retain)?;
    let retain_ms = retain.as_millis() as f64;
    pg_tx!(store, WRITE, |tx| {
        let cutoff = "now() - ($1::float8 * interval '1 millisecond')";
        let victims: Vec<String> = sqlx::query_scalar(&format!(
            "SELECT id FROM works w \
             WHERE w.status IN ('completed', 'failed', 'cancelled') AND w.updated_at < {cutoff} \
             AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.work_id = w.id \
                             AND t.state IN ('pending', 'running', 'blocked')) \
             ORDER BY id FOR UPDATE SKIP LOCKED"
        ))
        .bind(retain_ms)
        .fetch_all(&mut *tx)
        .await?;
        let events = sqlx::query(&format!(
            "DELETE FROM events WHERE seq < (SELECT max(seq) FROM events) \
             AND (created_at < {cutoff} OR work_id = ANY($2))"
        ))
        .bind(retain_ms)
        .bind(&victims)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        let mut deleted = [0u64; 3];
        for (n, table) in ["tasks", "owners", "works"].iter().enumerate() {
            let column = if *table == "works" { "id" } else { "work_id" };
            deleted[n] = sqlx::query(&format!("DELETE FROM {table} WHERE {column} = ANY($1)"))
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
