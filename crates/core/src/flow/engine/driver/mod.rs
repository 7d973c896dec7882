//! One run's driver: the holder of the run's driver lease rebuilds the
//! scheduler from the step rows, then moves data between the scheduler,
//! the store and the step executions until the run ends, the lease is
//! lost or the process shuts down.
//!
//! Invariants:
//! - Every row change is written (fenced, one transaction per batch)
//!   *before* the process, turn or callable it announces starts, so a
//!   driver that lost its lease never runs a step.
//! - Rows only this driver writes (every step but an approval that waits)
//!   are written without a compare-and-set; the run row and waiting
//!   approvals, which other processes change (cancel, approve, reject),
//!   only with one.
//! - An ending is acted on once: an execution's result carries its
//!   attempt, and a result for an attempt that is no longer live is
//!   dropped.

use super::artifacts;
use super::context::{context, step_entry};
use super::data::{
    decode, encode, step_of_owner, step_owner_id, AttemptRecord, DbClock, RunData, StepData,
    SwitchRecord, LIVE_RUN,
};
use super::exec::{self, AgentCall, CommandCall, ExecResult};
use super::{CodeSteps, Inner};
use crate::agent::Turn;
use crate::bus::BusEvent;
use crate::error::Error;
use crate::event::{Event, RunStatus, RunUpdated, StepUpdated};
use crate::flow::runspec::{CompiledFlow, FlowSpec, RenderedAction, RetryOn, StepAction};
use crate::flow::{Scheduler, SchedulerState, SkipReason, StepOutcome, StepStatus, SwitchResult};
use crate::store::{
    ChangeEvent, Changes, Claim, Completion, Fence, Millis, NewEvent, OwnerChange, WorkChange,
};
use crate::worker::Held;
use crate::ErrorKind;
use serde_json::{json, Map, Value};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

mod attempts;
mod ending;
mod rebuild;
mod steps;
mod writes;

use super::retry::{retry_delay, seed};

/// Why a live execution was stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StopCause {
    Timeout,
    Cancelled,
    Abandon,
}

struct Live {
    attempt: u32,
    cancel: CancellationToken,
    stop: Option<StopCause>,
    timeout: Option<Duration>,
}

struct Ended {
    idx: usize,
    attempt: u32,
    result: ExecResult,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Timer {
    /// A retry (or a delayed first attempt) may start.
    Start,
    /// The attempt times out.
    Deadline(u32),
}

struct Row {
    status: StepStatus,
    data: StepData,
}

/// Where the driver stands after a pass of its loop.
enum Next {
    Continue,
    Finished,
}

/// Drives the run of a claimed driver task until it ends or the worker
/// stops it: the worker heartbeats the lease, and a lost lease or a
/// shutdown fires `held.cancel` ([`Held::stopped`] says which), on which
/// the driver abandons the run, writing nothing.
pub(crate) async fn drive(inner: &Arc<Inner>, held: &Held) -> Result<(), Error> {
    Driver::run(inner, held.claim.clone(), held.fence(), held.cancel.clone()).await
}

struct Driver {
    inner: Arc<Inner>,
    run_id: String,
    fence: Fence,
    compiled: CompiledFlow,
    sched: Scheduler,
    input: Value,
    data: RunData,
    status: RunStatus,
    rows: Vec<Row>,
    index: HashMap<String, usize>,
    has_dependents: Vec<bool>,
    loop_of: Vec<Option<usize>>,
    results: Map<String, Value>,
    live: HashMap<usize, Live>,
    timers: BTreeSet<(Millis, usize, Timer)>,
    code: Option<Arc<CodeSteps>>,
    ended_tx: mpsc::UnboundedSender<Ended>,
    ended_rx: mpsc::UnboundedReceiver<Ended>,
    changes: Changes,
    dirty: BTreeSet<usize>,
    to_spawn: Vec<usize>,
    ctx_cache: Option<Value>,
    /// Steps whose row is `waiting` (approvals).
    waiting: BTreeSet<usize>,
    /// The store's clock: every timer and time the driver persists.
    clock: DbClock,
}

fn step_event(run_id: &str, step_id: &str, row: &Row) -> Result<NewEvent, Error> {
    NewEvent::from_event(&Event::StepUpdated(StepUpdated {
        run_id: run_id.to_string(),
        step_id: step_id.to_string(),
        status: row.status,
        attempt: row.data.attempt,
        skip_reason: row.data.skip_reason,
        error: if matches!(row.status, StepStatus::Failed | StepStatus::TimedOut) {
            row.data.error.clone()
        } else {
            None
        },
        sandbox: unconfined_note(row),
    }))
}

/// The one place an event says a step ran without its whole sandbox:
/// the `step_updated` of the status an attempt ended with (done, failed,
/// timed out, or pending for a retry) carries the report's summary when
/// that attempt's sandbox was not fully enforced (`auto` fell back, or
/// mode `off`). The full report is stored with the attempt
/// ([`AttemptRecord::sandbox`]).
fn unconfined_note(row: &Row) -> Option<String> {
    if row.status == StepStatus::Running {
        return None;
    }
    let last = row.data.attempts.last()?;
    if last.attempt != row.data.attempt || last.iteration != row.data.iteration {
        return None;
    }
    last.sandbox
        .as_ref()
        .filter(|r| !r.confined)
        .map(|r| r.summary())
}

impl Driver {
    async fn run(
        inner: &Arc<Inner>,
        claim: Claim,
        fence: Fence,
        stop: CancellationToken,
    ) -> Result<(), Error> {
        let run_id = claim.task.work_id.clone();
        // Subscribe before reading, so no decision made after the read is
        // missed.
        let mut sub = inner.bus.subscribe();
        let snapshot = inner.store.work(&run_id).await?;
        let data: RunData = decode("run", &run_id, &snapshot.work.data)?;
        let status = super::view::run_status(&snapshot.work)?;
        let spec = FlowSpec::from_json(&data.spec)?;
        let compiled = spec.compile()?;
        let (ended_tx, ended_rx) = mpsc::unbounded_channel();
        let code = inner
            .code
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&run_id)
            .cloned();
        let steps = &compiled.spec().steps;
        let index: HashMap<String, usize> = steps
            .iter()
            .enumerate()
            .map(|(i, s)| (s.id.clone(), i))
            .collect();
        let mut has_dependents = vec![false; steps.len()];
        let mut loop_of = vec![None; steps.len()];
        for (i, s) in steps.iter().enumerate() {
            for d in &s.deps {
                if let Some(&j) = index.get(d) {
                    has_dependents[j] = true;
                }
            }
            if let StepAction::DoWhile(dw) = &s.action {
                for b in &dw.body {
                    if let Some(&j) = index.get(b) {
                        loop_of[j] = Some(i);
                        has_dependents[i] = true;
                    }
                }
            }
        }
        let mut d = Driver {
            inner: inner.clone(),
            run_id: run_id.clone(),
            fence,
            sched: Scheduler::new(compiled.flow().clone()).map_err(flow_error)?,
            compiled,
            input: data.input.clone(),
            data,
            status,
            rows: Vec::new(),
            index,
            has_dependents,
            loop_of,
            results: Map::new(),
            live: HashMap::new(),
            timers: BTreeSet::new(),
            code,
            ended_tx,
            ended_rx,
            changes: Changes::default(),
            dirty: BTreeSet::new(),
            to_spawn: Vec::new(),
            ctx_cache: None,
            waiting: BTreeSet::new(),
            clock: DbClock::sample(&*inner.store).await?,
        };
        if !LIVE_RUN.contains(&d.status.as_str()) {
            if d.status == RunStatus::Cancelled {
                d.rebuild(&snapshot)?;
                return d.finish_cancelled().await;
            }
            return d.complete_driver().await;
        }
        d.rebuild(&snapshot)?;
        loop {
            match d.flush().await {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::Conflict => {
                    if d.lease_lost().await {
                        d.abandon().await;
                        return Ok(());
                    }
                    if d.reload().await? {
                        return d.finish_cancelled().await;
                    }
                    continue;
                }
                Err(e) => {
                    d.abandon().await;
                    return Err(e);
                }
            }
            d.spawn_pending();
            if let Next::Finished = d.check_end().await? {
                return Ok(());
            }
            let next_timer = d.timers.first().copied();
            let now = d.clock.now();
            let sleep = async {
                match next_timer {
                    Some((at, _, _)) => {
                        let wait = (at - now).max(0) as u64;
                        tokio::time::sleep(Duration::from_millis(wait)).await
                    }
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = stop.cancelled() => {
                    d.abandon().await;
                    return Ok(());
                }
                Some(ended) = d.ended_rx.recv() => {
                    d.on_ended(ended)?;
                    // Every ending already in: one transaction for all of
                    // them, not one each (a fan-in of n steps that end
                    // together while a write is slow was n writes in a row).
                    while let Ok(more) = d.ended_rx.try_recv() {
                        d.on_ended(more)?;
                    }
                }
                () = sleep => d.on_timers()?,
                ev = sub.next() => match ev {
                    Some(BusEvent::Stored(s)) => {
                        if d.concerns_us(&s.event) && d.reload().await? {
                            return d.finish_cancelled().await;
                        }
                    }
                    Some(BusEvent::Live(_)) => {}
                    None => {
                        d.abandon().await;
                        return Ok(());
                    }
                },
            }
        }
    }
}

enum Prepared {
    Agent(AgentCall),
    Command(CommandCall),
    Code(Arc<dyn super::CodeStep>, Value),
}

fn i_of(index: &HashMap<String, usize>, id: &str) -> Result<usize, Error> {
    index
        .get(id)
        .copied()
        .ok_or_else(|| Error::internal(format!("the scheduler named unknown step {id:?}")))
}

fn flow_error(e: crate::flow::FlowError) -> Error {
    Error::internal(format!("flow scheduler: {e}"))
}
