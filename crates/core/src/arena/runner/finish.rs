//! The ends of a battle that no task's completion writes: a stop
//! ([`super::Arena::stop`]) and the reconcile's failure of a battle whose
//! judge cannot finish. Each is one `Store::finish_work`: the battle's
//! final status, and every contestant not yet settled (`queued`,
//! `running`) settled with its `contestant_updated` — before the battle's
//! `battle_updated` — so no reader sees a finished battle with a running
//! contestant, and a follower that stops at the battle's final event has
//! seen every contestant's. A stop also cancels every live task of the
//! battle in that transaction: their holders' next fenced write is a
//! `conflict`, on which they stop quietly ([`quiet_if_taken`]).

use super::data::{decode, now_ms, BattleData};
use super::events::{battle_event, contestant_event};
use super::Inner;
use crate::arena::ContestantStatus;
use crate::error::Error;
use crate::event::BattleStatus;
use crate::store::{ChangeEvent, Finish, OwnerChange, OwnerKind, WorkChange, WorkSnapshot};
use crate::task::TaskState;
use crate::ErrorKind;
use std::sync::Arc;
use std::time::Duration;

/// The reason a stop gives the contestants and tasks it cancels.
const STOPPED: &str = "the battle was stopped";

/// How many times a stop is tried again when an owner changed between the
/// read and the write (a holder moved on meanwhile).
const TRIES: u32 = 20;

/// The finish of the battle in `snapshot` from one of `from` to `status`
/// with `data`: every contestant `queued` or `running` becomes
/// `contestant` (with `reason` as its event's error), a judge that is
/// `pending` or `running` becomes `error`, and — with `cross_exams` — so do
/// such cross-examinations; each from the status read (one that changed
/// since is a `conflict`). The contestants' events come first, the
/// battle's last.
fn battle_finish(
    snapshot: &WorkSnapshot,
    from: &[&str],
    status: BattleStatus,
    data: &BattleData,
    contestant: ContestantStatus,
    reason: &str,
    cross_exams: bool,
) -> Result<Finish, Error> {
    let id = snapshot.work.id.as_str();
    let mut finish = Finish::new(
        WorkChange::new()
            .from(from)
            .status(status.as_str())
            .data(super::data::encode(data)),
    );
    for owner in &snapshot.owners {
        let live = match owner.kind {
            OwnerKind::Contestant => {
                matches!(owner.status.as_str(), "queued" | "running")
            }
            OwnerKind::Judge => matches!(owner.status.as_str(), "pending" | "running"),
            OwnerKind::CrossExam => {
                cross_exams && matches!(owner.status.as_str(), "pending" | "running")
            }
            OwnerKind::Step => false,
        };
        if !live {
            continue;
        }
        let change = OwnerChange::new(&owner.id).from(&[owner.status.as_str()]);
        if owner.kind == OwnerKind::Contestant {
            finish = finish
                .owner(change.status(contestant.as_str()))
                .event(ChangeEvent::about(
                    &owner.id,
                    contestant_event(id, &owner.id, contestant, None, Some(reason))?,
                ));
        } else {
            finish = finish.owner(change.status("error"));
        }
    }
    Ok(finish.event(ChangeEvent::of_work(battle_event(id, status, data, None)?)))
}

/// Stops the running or judging battle `id`: `cancelled` with its
/// unsettled contestants `cancelled`, its judge and cross-examinations in
/// progress `error`, every live task cancelled, in one transaction (read
/// again and retried while an owner changes under it); then this process's
/// holders of its tasks are stopped at once (other servers' at their next
/// fenced write or heartbeat). A battle in another status is a `conflict`
/// (with its `status`).
pub(crate) async fn stop_battle(
    inner: &Arc<Inner>,
    id: &str,
    ended_at_ms: i64,
) -> Result<(), Error> {
    let mut tries = 0;
    loop {
        let snapshot = inner.store.work(id).await?;
        let status = snapshot.work.status.clone();
        if !matches!(status.as_str(), "running" | "judging") {
            return Err(Error::conflict(format!(
                "battle {id:?} is {status}: only a running or judging battle can be stopped"
            ))
            .with_detail("status", status));
        }
        let mut data: BattleData = decode("battle", id, &snapshot.work.data)?;
        data.ended_at_ms = Some(ended_at_ms);
        let finish = battle_finish(
            &snapshot,
            &["running", "judging"],
            BattleStatus::Cancelled,
            &data,
            ContestantStatus::Cancelled,
            STOPPED,
            true,
        )?
        .cancel_tasks(STOPPED);
        match inner.store.finish_work(id, finish).await {
            Ok(_) => break,
            // An owner (or the battle) moved between the read and the
            // write: read again; a battle that ended shows then.
            Err(e) if e.kind() == ErrorKind::Conflict && tries + 1 < TRIES => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(u64::from(tries) * 2)).await;
            }
            Err(e) => return Err(e),
        }
    }
    inner.tasks.cancel_work(id);
    inner.bus.notify();
    Ok(())
}

/// The reconcile's `FailBattle`: a judging battle whose judge cannot
/// finish becomes `failed` with `error`, its judge `error` and any
/// contestant not yet settled `error`, in one transaction. Its tasks are
/// left alone (a cross-examination of an earlier analysis may still run).
/// A battle that is no longer judging is a `conflict`.
pub(crate) async fn fail_battle(
    inner: &Arc<Inner>,
    snapshot: &WorkSnapshot,
    error: String,
) -> Result<(), Error> {
    let id = snapshot.work.id.as_str();
    let mut data: BattleData = decode("battle", id, &snapshot.work.data)?;
    data.error = Some(error.clone());
    data.ended_at_ms = Some(now_ms());
    let finish = battle_finish(
        snapshot,
        &["judging"],
        BattleStatus::Failed,
        &data,
        ContestantStatus::Error,
        &error,
        false,
    )?;
    inner.store.finish_work(id, finish).await?;
    Ok(())
}

/// A holder's result after the battle may have taken its task away (a
/// stop cancels every live task in the transaction that ends the battle):
/// a `conflict` while the task is no longer this claim's running attempt
/// is the holder being fenced out — it stops quietly (`Ok`), writing and
/// logging nothing. Any other result is returned as it is.
pub(crate) async fn quiet_if_taken(
    inner: &Inner,
    task_id: &str,
    attempt: u32,
    result: Result<(), Error>,
) -> Result<(), Error> {
    match result {
        Err(e) if e.kind() == ErrorKind::Conflict => match inner.store.task(task_id).await {
            Ok(task) if task.state != TaskState::Running || task.attempt != attempt => Ok(()),
            _ => Err(e),
        },
        other => other,
    }
}
