//! `Store::compact`, once for every SQL backend: the works to delete are
//! chosen first — final, untouched for the retention age, with no task
//! left to do (PostgreSQL: locked `FOR UPDATE SKIP LOCKED`, so a task
//! enqueued for one meanwhile waits and then finds its work gone; on
//! SQLite the write lock holds them) — then their events and every event
//! older than the age (never the newest: the next seq stays above every
//! cursor handed out), their tasks, owners and rows.

use super::{args, Conn, Statements};
use crate::store::sql::TxError;
use crate::store::Compacted;
use serde_json::Value;

/// Compacts what is older than `retain_ms` (checked by the caller).
pub(crate) async fn compact<C: Conn>(
    tx: &mut C,
    sql: &Statements,
    retain_ms: i64,
) -> Result<Compacted, TxError> {
    let victims = tx.fetch_all(&sql.compact_victims, args![retain_ms]).await?;
    let victims: Vec<String> = victims
        .iter()
        .map(|row| crate::store::sql::RowExt::text(row, "id"))
        .collect::<Result<_, _>>()?;
    let victims = Value::from(victims).to_string();
    let events = tx
        .execute(&sql.compact_events, args![retain_ms, victims.as_str()])
        .await?;
    let tasks = tx
        .execute(&sql.compact_tasks, args![victims.as_str()])
        .await?;
    tx.execute(&sql.compact_owners, args![victims.as_str()])
        .await?;
    let works = tx
        .execute(&sql.compact_works, args![victims.as_str()])
        .await?;
    Ok(Compacted {
        works,
        tasks,
        events,
    })
}
