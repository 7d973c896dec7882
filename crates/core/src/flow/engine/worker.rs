//! The engine as a task handler: its run drivers (tasks of `step` owners,
//! in the `driver` lane, which no capacity limits) run by a
//! [`crate::worker::TaskWorker`] — the engine's own ([`super::Engine::start`])
//! or one shared with the arena — and, on the worker's tick, the runs whose
//! driver can never run again failed. Claiming, heartbeats, lease loss,
//! rescue and shutdown are the worker's: a lost lease or a shutdown fires
//! the driver's [`Held::cancel`] and the driver abandons the run, writing
//! nothing.
//!
//! It claims only tasks of `step` owners, which are the flow runtime's
//! (the arena claims contestants, judges and cross-examinations), so an
//! arena and an engine share a store — and a worker — without taking each
//! other's work.

use super::data::{driver_task_id, LIVE_RUN};
use super::driver;
use super::Inner;
use crate::error::Error;
use crate::event::RunStatus;
use crate::store::{OwnerKind, WorkFilter, WorkKind};
use crate::task::{Lane, TaskState};
use crate::worker::{Held, TaskHandler, TaskSet};
use std::sync::Arc;
use std::time::Duration;

/// How often the worker looks for live runs whose driver task ended for
/// good (its holders kept dying until its rescues were spent).
const RECONCILE_EVERY: Duration = Duration::from_secs(5);

/// Rescues a driver task survives: a run whose driver keeps dying (the
/// process is killed mid-run again and again) fails after this many.
pub(crate) const DRIVER_MAX_RESCUES: u32 = 50;

pub(crate) fn default_worker_name() -> String {
    crate::worker::default_worker_name("flow-")
}

/// The engine's [`TaskHandler`] (what [`super::Engine::handler`] returns).
pub(crate) struct EngineHandler(pub(crate) Arc<Inner>);

#[async_trait::async_trait]
impl TaskHandler for EngineHandler {
    fn name(&self) -> &str {
        "flow"
    }

    fn owner_kinds(&self) -> &[OwnerKind] {
        &[OwnerKind::Step]
    }

    fn lanes(&self) -> &[Lane] {
        &[Lane::Driver]
    }

    fn max_concurrent(&self) -> u32 {
        self.0.config.max_runs
    }

    fn tasks(&self) -> &TaskSet {
        &self.0.tasks
    }

    fn tick_every(&self) -> Option<Duration> {
        Some(RECONCILE_EVERY)
    }

    async fn tick(&self, _first: bool) -> Result<(), Error> {
        fail_orphaned_runs(&self.0).await
    }

    async fn run(&self, held: &Held) -> Result<(), Error> {
        driver::drive(&self.0, held).await
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
