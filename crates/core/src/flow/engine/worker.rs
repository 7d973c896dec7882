//! The engine's worker loop: rescue expired leases, claim run drivers,
//! drive each in its own tokio task with a heartbeat.
//!
//! It claims only tasks of `step` owners, which are the flow runtime's
//! (the arena claims contestants, judges and cross-examinations), so an
//! arena and an engine share a store without taking each other's work.

use super::data::{driver_task_id, LIVE_RUN};
use super::driver;
use super::Inner;
use crate::error::Error;
use crate::event::RunStatus;
use crate::store::{ClaimRequest, OwnerKind, WorkFilter, WorkKind};
use crate::task::TaskState;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the worker looks for live runs whose driver task ended for
/// good (its holders kept dying until its rescues were spent).
const RECONCILE_EVERY: Duration = Duration::from_secs(5);

/// Rescues a driver task survives: a run whose driver keeps dying (the
/// process is killed mid-run again and again) fails after this many.
pub(crate) const DRIVER_MAX_RESCUES: u32 = 50;

pub(crate) fn default_worker_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "host".to_owned());
    format!(
        "{host}:{}:flow-{}",
        std::process::id(),
        &super::random_hex(4)
    )
}

pub(crate) async fn run(inner: Arc<Inner>) {
    let mut last_reconcile: Option<Instant> = None;
    loop {
        if inner.shutdown.is_cancelled() {
            break;
        }
        if last_reconcile.is_none_or(|t| t.elapsed() >= RECONCILE_EVERY) {
            if let Err(e) = fail_orphaned_runs(&inner).await {
                eprintln!("coderig flow: reconcile failed: {e}");
            }
            last_reconcile = Some(Instant::now());
        }
        match inner.store.rescue_expired(100).await {
            Ok(rescued) if !rescued.is_empty() => inner.bus.notify(),
            Ok(_) => {}
            Err(e) => eprintln!("coderig flow: rescue failed: {e}"),
        }
        let driving = inner.driving.lock().map(|m| m.len()).unwrap_or(0) as u32;
        let free = inner.config.max_runs.saturating_sub(driving);
        let mut claimed = 0;
        if free > 0 {
            let request = ClaimRequest::new(inner.config.worker.clone())
                .limit(free)
                .lease_ttl(inner.config.lease_ttl)
                .owner_kinds(&[OwnerKind::Step]);
            match inner.store.claim(&request).await {
                Ok(claims) => {
                    claimed = claims.len();
                    for claim in claims {
                        let run_id = claim.task.work_id.clone();
                        let attempt = claim.task.attempt;
                        let stop = inner.shutdown.child_token();
                        // A driver of this run may still be stopping here
                        // (its lease ran out while it lived and this claim
                        // is its successor's): the entry is the newest one's.
                        inner
                            .driving
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .insert(run_id.clone(), (attempt, stop.clone()));
                        let i = inner.clone();
                        inner.tracker.spawn(async move {
                            if let Err(e) = driver::drive(&i, claim, stop).await {
                                eprintln!("coderig flow: run {run_id}: {e}");
                            }
                            // Only its own entry, not a successor's.
                            let mut driving = i.driving.lock().unwrap_or_else(|e| e.into_inner());
                            if driving.get(&run_id).is_some_and(|(a, _)| *a == attempt) {
                                driving.remove(&run_id);
                            }
                            drop(driving);
                            i.wake.notify_one();
                        });
                    }
                }
                Err(e) => eprintln!("coderig flow: claim failed: {e}"),
            }
        }
        if claimed > 0 && claimed as u32 == free {
            continue;
        }
        tokio::select! {
            () = inner.shutdown.cancelled() => break,
            () = inner.wake.notified() => {}
            () = tokio::time::sleep(poll_interval(inner.config.poll)) => {}
        }
    }
}

/// A live run whose driver task failed or was cancelled can never move
/// again: it fails, with the driver's last error, and its steps not yet
/// final are cancelled in the same transaction.
async fn fail_orphaned_runs(inner: &Arc<Inner>) -> Result<(), Error> {
    let mut filter = WorkFilter::new(WorkKind::Run).statuses(LIVE_RUN).limit(500);
    loop {
        let page = inner.store.list_works(&filter).await?;
        for work in &page.works {
            let task = match inner.store.task(&driver_task_id(&work.id)).await {
                Ok(t) => t,
                Err(_) => continue,
            };
            if !matches!(task.state, TaskState::Failed | TaskState::Cancelled) {
                continue;
            }
            let error = Error::unavailable(format!(
                "the run's driver could not finish it: {}",
                task.error.as_deref().unwrap_or("its task ended")
            ))
            .to_json();
            // Failed with every step not yet final cancelled, in one
            // transaction (a conflict: it ended or moved meanwhile).
            let _ =
                super::finish::finish_run(inner, &work.id, RunStatus::Failed, Some(error)).await;
            inner.bus.notify();
        }
        match page.next_cursor {
            Some(c) => filter = filter.cursor(c),
            None => return Ok(()),
        }
    }
}

fn poll_interval(poll: Duration) -> Duration {
    poll.max(Duration::from_millis(10))
}
