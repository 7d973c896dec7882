//! Leases, once for every SQL backend: a heartbeat (alone or batched,
//! each lease fenced on its own) and the rescue of expired ones.

use super::writes::{append, lease_lost};
use super::{args, Conn, Statements};
use crate::error::Error;
use crate::event::{Event, TaskRescued};
use crate::store::records::*;
use crate::store::sql::*;
use crate::task::TaskState;
use serde_json::{json, Value};

/// `Store::heartbeat`: the lease under `fence` extended by `ttl_ms` from
/// the database clock; the error of a lost lease otherwise.
pub(crate) async fn heartbeat<C: Conn>(
    tx: &mut C,
    sql: &Statements,
    fence: &Fence,
    ttl_ms: i64,
) -> Result<Millis, TxError> {
    let row = tx
        .fetch_optional(
            &sql.heartbeat,
            args![&fence.task_id, &fence.lease_token, ttl_ms],
        )
        .await?;
    match row {
        Some(row) => Ok(row.int("lease_expires_at")?),
        None => Err(lease_lost(tx, sql, &fence.task_id).await?.into()),
    }
}

/// `Store::heartbeat_many`: every lease still held extended in one
/// statement; per fence its new expiry or why it was not renewed.
pub(crate) async fn heartbeat_many<C: Conn>(
    tx: &mut C,
    sql: &Statements,
    fences: &[Fence],
    ttl_ms: i64,
) -> Result<Vec<Result<Millis, Error>>, TxError> {
    let pairs: Vec<Value> = fences
        .iter()
        .map(|f| json!([f.task_id, f.lease_token]))
        .collect();
    let renewed = tx
        .fetch_all(
            &sql.heartbeat_many,
            args![Value::from(pairs).to_string(), ttl_ms],
        )
        .await?;
    let mut answers = Vec::with_capacity(fences.len());
    for (fence, renewed) in fences.iter().zip(renewed_in_order(fences, &renewed)?) {
        answers.push(match renewed {
            Some(at) => Ok(at),
            None => Err(lease_lost(tx, sql, &fence.task_id).await?),
        });
    }
    Ok(answers)
}

/// `Store::rescue_expired`: up to `limit` running tasks whose lease
/// expired go back to `pending` (or `failed` once their rescues are
/// spent), each with its `task_rescued` event in the same transaction.
pub(crate) async fn rescue_expired<C: Conn>(
    tx: &mut C,
    sql: &Statements,
    limit: u32,
) -> Result<Vec<Rescued>, TxError> {
    let found = tx
        .fetch_all(&sql.rescue_expired, args![i64::from(limit)])
        .await?;
    let rescued = rows(&found, |row| {
        let task = task_from_row(row)?;
        Ok(Rescued {
            worker: task.worker.clone(),
            task,
        })
    })?;
    for r in &rescued {
        let event = ChangeEvent {
            owner_id: Some(r.task.owner.id.clone()),
            event: NewEvent::from_event(&Event::TaskRescued(rescue_event(r)))?,
        };
        append(tx, sql, &r.task.work_id, Some(&r.task.id), &[event]).await?;
    }
    Ok(rescued)
}

/// The `task_rescued` of a rescue.
fn rescue_event(r: &Rescued) -> TaskRescued {
    let work = Some(r.task.work_id.clone());
    let battle = r.task.owner.kind.work_kind() == WorkKind::Battle;
    TaskRescued {
        battle_id: if battle { work.clone() } else { None },
        run_id: if battle { None } else { work },
        owner_kind: r.task.owner.kind.as_str().to_owned(),
        owner_id: r.task.owner.id.clone(),
        task_id: r.task.id.clone(),
        worker: r.worker.clone(),
        rescues: r.task.rescues,
        requeued: r.task.state == TaskState::Pending,
    }
}
