//! The ends of a run that its driver does not write: a cancel
//! ([`super::Engine::cancel`]) and the failure of a run whose driver can
//! never run again (the worker's reconcile). Each is one
//! `Store::finish_work`: the run's final status, and every step that is not
//! final (`pending`, `running`, `waiting`) `cancelled`, the steps'
//! `step_updated` before the run's `run_updated` — so no reader sees a
//! finished run with a live step, and a follower that stops at the run's
//! final event has seen every step's.
//!
//! The driver task is left alone: its holder (or, when it died, the next
//! engine to claim it) winds the run up — stops the running steps'
//! processes, kills what a dead driver left on its host and records those
//! attempts as interrupted (`driver::ending`). Every write of a driver
//! checks that the run is still live, so a driver that has not yet seen the
//! finish rewrites no step of it.

use super::data::{decode, encode, step_of_owner, RunData, StepData, LIVE_RUN};
use super::Inner;
use crate::error::Error;
use crate::event::{Event, RunStatus, RunUpdated, StepUpdated};
use crate::flow::StepStatus;
use crate::store::{
    ChangeEvent, Finish, Finished, Millis, NewEvent, OwnerChange, WorkChange, WorkSnapshot,
};
use serde_json::Value;
use std::time::Duration;

/// How many times a finish is tried again when a step changed between the
/// read and the write (its driver moved on meanwhile).
const TRIES: u32 = 20;

/// True for a step status that is not final: `pending`, `running`,
/// `waiting`.
pub(crate) fn is_live(status: StepStatus) -> bool {
    matches!(
        status,
        StepStatus::Pending | StepStatus::Running | StepStatus::Waiting
    )
}

/// The finish of the run in `snapshot` to `status` (with `error` in its
/// data and event): every step not yet final `cancelled` from the status
/// read (a step that changed since is a `conflict`), `finished_at` set on
/// the run and those steps, the steps' events in order, the run's last.
pub(crate) fn run_finish(
    snapshot: &WorkSnapshot,
    status: RunStatus,
    error: Option<Value>,
    now: Millis,
) -> Result<Finish, Error> {
    let run_id = snapshot.work.id.as_str();
    let mut data: RunData = decode("run", run_id, &snapshot.work.data)?;
    data.finished_at = Some(now);
    if error.is_some() {
        data.error = error.clone();
    }
    let mut finish = Finish::new(
        WorkChange::new()
            .from(LIVE_RUN)
            .status(status.as_str())
            .data(encode(&data)),
    );
    for owner in &snapshot.owners {
        let Some(step_id) = step_of_owner(run_id, &owner.id) else {
            continue;
        };
        let Ok(step_status) = owner.status.parse::<StepStatus>() else {
            continue;
        };
        if !is_live(step_status) {
            continue;
        }
        let mut d: StepData = decode("step", &owner.id, &owner.data)?;
        d.finished_at = Some(now);
        d.deadline_at = None;
        d.available_at = None;
        let event = NewEvent::from_event(&Event::StepUpdated(StepUpdated {
            run_id: run_id.to_owned(),
            step_id: step_id.to_owned(),
            status: StepStatus::Cancelled,
            attempt: d.attempt,
            skip_reason: None,
            error: None,
            sandbox: None,
        }))?;
        finish = finish
            .owner(
                OwnerChange::new(&owner.id)
                    .from(&[owner.status.as_str()])
                    .status(StepStatus::Cancelled.as_str())
                    .data(encode(&d)),
            )
            .event(ChangeEvent::about(&owner.id, event));
    }
    let event = NewEvent::from_event(&Event::RunUpdated(RunUpdated {
        run_id: run_id.to_owned(),
        status,
        error,
    }))?;
    Ok(finish.event(ChangeEvent::of_work(event)))
}

/// Ends the live run `run_id` with `status` (`cancelled`, or `failed` with
/// `error`) in one transaction with its steps (see the [module docs](self)),
/// reading it again and retrying while a step changes under it. A run that
/// already ended is a `conflict` (with its `status`); an unknown one
/// `not_found_id`.
pub(crate) async fn finish_run(
    inner: &Inner,
    run_id: &str,
    status: RunStatus,
    error: Option<Value>,
) -> Result<Finished, Error> {
    let mut tries = 0;
    loop {
        let snapshot = inner.store.work(run_id).await?;
        if !LIVE_RUN.contains(&snapshot.work.status.as_str()) {
            return Err(Error::conflict(format!(
                "run {run_id:?} already ended ({})",
                snapshot.work.status
            ))
            .with_detail("status", snapshot.work.status.clone()));
        }
        let now = inner.store.clock_ms().await?;
        let finish = run_finish(&snapshot, status, error.clone(), now)?;
        match inner.store.finish_work(run_id, finish).await {
            Ok(finished) => {
                inner.bus.notify();
                return Ok(finished);
            }
            // A step (or the run) moved between the read and the write:
            // read again. The run's own end shows at the next read.
            Err(e) if e.kind() == crate::ErrorKind::Conflict && tries + 1 < TRIES => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(u64::from(tries) * 2)).await;
            }
            Err(e) => return Err(e),
        }
    }
}
