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
    decode, encode, now_ms, step_of_owner, step_owner_id, AttemptRecord, RunData, StepData,
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
use crate::ErrorKind;
use serde_json::{json, Map, Value};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

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

pub(crate) async fn drive(
    inner: &Arc<Inner>,
    claim: Claim,
    stop: CancellationToken,
) -> Result<(), Error> {
    let fence = claim.fence();
    let lost = CancellationToken::new();
    let hb = {
        let store = inner.store.clone();
        let fence = fence.clone();
        let lost = lost.clone();
        let ttl = inner.config.lease_ttl;
        let stop = stop.clone();
        tokio::spawn(async move {
            let every = (ttl / 3).max(Duration::from_millis(50));
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = lost.cancelled() => return,
                    () = tokio::time::sleep(every) => {}
                }
                match store.heartbeat(&fence, ttl).await {
                    Ok(_) => {}
                    Err(e)
                        if e.kind() == ErrorKind::Conflict || e.kind() == ErrorKind::NotFoundId =>
                    {
                        lost.cancel();
                        return;
                    }
                    Err(e) => eprintln!("coderig flow: heartbeat failed: {e}"),
                }
            }
        })
    };
    let result = Driver::run(inner, claim, fence, stop, lost.clone()).await;
    lost.cancel();
    hb.abort();
    result
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
    }))
}

impl Driver {
    async fn run(
        inner: &Arc<Inner>,
        claim: Claim,
        fence: Fence,
        stop: CancellationToken,
        lost: CancellationToken,
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
            let sleep = async {
                match next_timer {
                    Some((at, _, _)) => {
                        let wait = (at - now_ms()).max(0) as u64;
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
                () = lost.cancelled() => {
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

    // ----- rebuilding -----

    fn rebuild(&mut self, snapshot: &crate::store::WorkSnapshot) -> Result<(), Error> {
        let n = self.compiled.spec().steps.len();
        let mut rows: Vec<Option<Row>> = (0..n).map(|_| None).collect();
        for owner in &snapshot.owners {
            let Some(step_id) = step_of_owner(&self.run_id, &owner.id) else {
                continue;
            };
            let Some(&i) = self.index.get(step_id) else {
                continue;
            };
            let status = owner.status.parse::<StepStatus>().map_err(|_| {
                Error::internal(format!(
                    "step {:?} has the unknown status {:?}",
                    owner.id, owner.status
                ))
            })?;
            rows[i] = Some(Row {
                status,
                data: decode("step", &owner.id, &owner.data)?,
            });
        }
        let rows: Vec<Row> = rows
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
                r.ok_or_else(|| {
                    Error::internal(format!(
                        "run {:?} has no row for step {:?}",
                        self.run_id,
                        self.compiled.spec().steps[i].id
                    ))
                })
            })
            .collect::<Result<_, _>>()?;
        let mut state = SchedulerState::new();
        self.results.clear();
        for (i, row) in rows.iter().enumerate() {
            let id = self.compiled.spec().steps[i].id.clone();
            if let Some(out) = &row.data.output {
                self.results.insert(id.clone(), out.clone());
            }
            match row.status {
                StepStatus::Done => {
                    state.done.insert(id.clone());
                }
                StepStatus::Failed | StepStatus::Cancelled => {
                    state.failed.insert(id.clone());
                }
                StepStatus::TimedOut => {
                    state.timed_out.insert(id.clone());
                }
                StepStatus::Skipped => {
                    state.skipped.insert(
                        id.clone(),
                        row.data.skip_reason.unwrap_or(SkipReason::ConditionFalse),
                    );
                }
                StepStatus::Running | StepStatus::Waiting => {
                    state.in_flight.insert(id.clone());
                }
                StepStatus::Pending => {}
            }
            if let Some(sw) = &row.data.switch {
                if row.status == StepStatus::Done {
                    state.switch_results.insert(
                        id.clone(),
                        SwitchResult {
                            chosen: sw.chosen.clone(),
                            excluded: sw.excluded.iter().cloned().collect(),
                        },
                    );
                }
            }
            if row.data.kind == "do_while"
                && row.data.iteration > 0
                && matches!(row.status, StepStatus::Running | StepStatus::Done)
            {
                state.loop_iterations.insert(id, row.data.iteration);
            }
        }
        self.rows = rows;
        let (sched, ready) =
            Scheduler::restore(self.compiled.flow().clone(), &state).map_err(flow_error)?;
        self.sched = sched;
        self.timers.clear();
        self.ctx_cache = None;
        self.waiting = (0..self.rows.len())
            .filter(|&i| self.rows[i].status == StepStatus::Waiting)
            .collect();
        if self.status == RunStatus::Cancelled {
            // The run is only wound up (`finish_cancelled`): nothing is
            // decided or started any more. An attempt a dead driver left
            // running is recorded as interrupted (its processes are killed
            // there) and is not followed by a new one.
            for i in 0..self.rows.len() {
                let kind = self.rows[i].data.kind.as_str();
                if self.rows[i].status == StepStatus::Running
                    && !self.live.contains_key(&i)
                    && !matches!(kind, "do_while" | "switch")
                {
                    self.interrupted(i);
                }
            }
            return Ok(());
        }
        let mut loops: Vec<usize> = self.record_skips().into_iter().collect();
        // Steps in flight in the store: keep what runs here, start again
        // what ran in a process that is gone.
        for i in 0..self.rows.len() {
            match (self.rows[i].status, self.rows[i].data.kind.as_str()) {
                (StepStatus::Running, "do_while") => loops.push(i),
                (StepStatus::Running, "switch") => self.dispatch(i)?,
                (StepStatus::Running, _) => {
                    let attempt = self.rows[i].data.attempt;
                    if self.live.get(&i).is_some_and(|l| l.attempt == attempt) {
                        if let Some(at) = self.rows[i].data.deadline_at {
                            self.timers.insert((at, i, Timer::Deadline(attempt)));
                        }
                    } else {
                        self.interrupted(i);
                        self.kill_orphans(i);
                        self.start_attempt(i)?;
                    }
                }
                _ => {}
            }
        }
        // Executions of steps that are no longer running in the store
        // (cancelled, or decided elsewhere) are stopped.
        let stale: Vec<usize> = self
            .live
            .keys()
            .copied()
            .filter(|&i| {
                self.rows[i].status != StepStatus::Running
                    || self.live[&i].attempt != self.rows[i].data.attempt
            })
            .collect();
        for i in stale {
            if let Some(l) = self.live.get_mut(&i) {
                l.stop = Some(StopCause::Abandon);
                l.cancel.cancel();
            }
        }
        for i in ready {
            self.dispatch(i_of(&self.index, &i)?)?;
        }
        loops.sort_unstable();
        loops.dedup();
        for l in loops {
            self.maybe_iterate(l)?;
        }
        Ok(())
    }

    /// Re-reads the run after a change made elsewhere (cancel, approve,
    /// reject) and rebuilds. Returns true when the run was cancelled.
    async fn reload(&mut self) -> Result<bool, Error> {
        self.changes = Changes::default();
        self.dirty.clear();
        self.to_spawn.clear();
        let snapshot = self.inner.store.work(&self.run_id).await?;
        self.status = super::view::run_status(&snapshot.work)?;
        self.data = decode("run", &self.run_id, &snapshot.work.data)?;
        if self.status == RunStatus::Cancelled {
            self.rebuild_rows_only(&snapshot)?;
            return Ok(true);
        }
        if !LIVE_RUN.contains(&self.status.as_str()) {
            return Ok(true);
        }
        self.rebuild(&snapshot)?;
        Ok(false)
    }

    fn rebuild_rows_only(&mut self, snapshot: &crate::store::WorkSnapshot) -> Result<(), Error> {
        for owner in &snapshot.owners {
            let Some(step_id) = step_of_owner(&self.run_id, &owner.id) else {
                continue;
            };
            let Some(&i) = self.index.get(step_id) else {
                continue;
            };
            if let Ok(status) = owner.status.parse::<StepStatus>() {
                if let Some(row) = self.rows.get_mut(i) {
                    row.status = status;
                    row.data = decode("step", &owner.id, &owner.data)?;
                }
            }
        }
        Ok(())
    }

    fn concerns_us(&self, event: &Event) -> bool {
        match event {
            Event::RunUpdated(r) => r.run_id == self.run_id && r.status != self.status,
            Event::StepUpdated(s) if s.run_id == self.run_id => {
                matches!(s.status, StepStatus::Done | StepStatus::Failed)
                    && self
                        .index
                        .get(&s.step_id)
                        .is_some_and(|&i| self.rows[i].status == StepStatus::Waiting)
            }
            _ => false,
        }
    }

    async fn lease_lost(&self) -> bool {
        matches!(
            self.inner.store.heartbeat(&self.fence, self.inner.config.lease_ttl).await,
            Err(e) if e.kind() == ErrorKind::Conflict || e.kind() == ErrorKind::NotFoundId
        )
    }

    // ----- writes -----

    fn touch(&mut self, i: usize) {
        self.dirty.insert(i);
        self.ctx_cache = None;
    }

    fn stage(&mut self) -> Result<(), Error> {
        for i in std::mem::take(&mut self.dirty) {
            let id = self.compiled.spec().steps[i].id.clone();
            let row = &self.rows[i];
            if row.status == StepStatus::Waiting {
                self.waiting.insert(i);
            } else {
                self.waiting.remove(&i);
            }
            let from = if row.data.kind == "approval" {
                // Approvals are the rows other processes decide.
                match row.status {
                    StepStatus::Waiting => vec!["pending".to_string(), "running".to_string()],
                    StepStatus::Cancelled | StepStatus::Skipped => vec![
                        "pending".to_string(),
                        "running".to_string(),
                        "waiting".to_string(),
                    ],
                    _ => Vec::new(),
                }
            } else {
                Vec::new()
            };
            self.changes.owners.push(OwnerChange {
                id: step_owner_id(&self.run_id, &id),
                from,
                status: Some(row.status.as_str().to_string()),
                data: Some(encode(&row.data)),
            });
            self.changes.events.push(ChangeEvent {
                owner_id: Some(step_owner_id(&self.run_id, &id)),
                event: step_event(&self.run_id, &id, row)?,
            });
        }
        Ok(())
    }

    async fn flush(&mut self) -> Result<(), Error> {
        self.stage()?;
        let desired = self.desired_status();
        if desired != self.status && LIVE_RUN.contains(&self.status.as_str()) {
            self.changes.work = Some(WorkChange {
                from: LIVE_RUN.iter().map(|s| s.to_string()).collect(),
                status: Some(desired.as_str().to_string()),
                data: None,
            });
            self.changes.events.push(ChangeEvent {
                owner_id: None,
                event: NewEvent::from_event(&Event::RunUpdated(RunUpdated {
                    run_id: self.run_id.clone(),
                    status: desired,
                    error: None,
                }))?,
            });
        }
        if self.changes.owners.is_empty()
            && self.changes.work.is_none()
            && self.changes.events.is_empty()
        {
            return Ok(());
        }
        let changes = std::mem::take(&mut self.changes);
        let work_changed = changes.work.is_some();
        self.inner
            .store
            .record_changes(&self.fence, changes)
            .await?;
        if work_changed {
            self.status = desired;
        }
        self.inner.bus.notify();
        Ok(())
    }

    fn desired_status(&self) -> RunStatus {
        let busy = !self.live.is_empty()
            || !self.to_spawn.is_empty()
            || self.timers.iter().any(|t| t.2 == Timer::Start);
        let waiting = !self.waiting.is_empty();
        if !busy && waiting {
            RunStatus::Waiting
        } else {
            RunStatus::Running
        }
    }

    // ----- the scheduler's decisions -----

    /// Writes the scheduler's new skips; returns the loops whose body
    /// lost a step to them.
    fn record_skips(&mut self) -> BTreeSet<usize> {
        let mut loops = BTreeSet::new();
        for (id, reason) in self.sched.take_skipped() {
            let Some(&i) = self.index.get(&id) else {
                continue;
            };
            let row = &mut self.rows[i];
            if row.status == StepStatus::Skipped && row.data.skip_reason == Some(reason) {
                continue;
            }
            row.status = StepStatus::Skipped;
            row.data.skip_reason = Some(reason);
            row.data.finished_at = Some(now_ms());
            row.data.deadline_at = None;
            row.data.available_at = None;
            self.results.remove(&id);
            self.touch(i);
            if let Some(l) = self.loop_of[i] {
                loops.insert(l);
            }
        }
        loops
    }

    fn after_event(&mut self, ready: Vec<String>, settled: usize) -> Result<(), Error> {
        // A loop whose body just settled (or lost steps to skips) decides
        // its next iteration.
        let mut loops = self.record_skips();
        if let Some(l) = self.loop_of[settled] {
            loops.insert(l);
        }
        for id in ready {
            let i = i_of(&self.index, &id)?;
            self.dispatch(i)?;
        }
        for l in loops {
            self.maybe_iterate(l)?;
        }
        Ok(())
    }

    fn ctx(&mut self, i: usize) -> Value {
        let iteration = self.iteration_of(i);
        if self.ctx_cache.is_none() {
            let mut steps = Map::new();
            for (j, row) in self.rows.iter().enumerate() {
                steps.insert(
                    self.compiled.spec().steps[j].id.clone(),
                    step_entry(
                        row.status.as_str(),
                        row.data.attempt,
                        row.data.exit_code,
                        row.data.error.as_ref(),
                    ),
                );
            }
            self.ctx_cache = Some(context(&self.input, self.results.clone(), steps, 0));
        }
        let mut ctx = self.ctx_cache.clone().unwrap_or(Value::Null);
        ctx["iteration"] = json!(iteration);
        ctx
    }

    /// The context of a code step: its dependencies only (see `CodeStep`).
    fn deps_ctx(&self, i: usize) -> Value {
        let step = &self.compiled.spec().steps[i];
        let mut results = Map::new();
        let mut steps = Map::new();
        for d in &step.deps {
            if let Some(&j) = self.index.get(d) {
                if let Some(out) = self.results.get(d) {
                    results.insert(d.clone(), out.clone());
                }
                let row = &self.rows[j];
                steps.insert(
                    d.clone(),
                    step_entry(
                        row.status.as_str(),
                        row.data.attempt,
                        row.data.exit_code,
                        row.data.error.as_ref(),
                    ),
                );
            }
        }
        context(&self.input, results, steps, self.iteration_of(i))
    }

    /// The 1-based iteration of the innermost loop `i` is in (for a loop:
    /// its own current iteration), 0 outside loops.
    fn iteration_of(&self, i: usize) -> u32 {
        let l = if self.rows[i].data.kind == "do_while" {
            Some(i)
        } else {
            self.loop_of[i]
        };
        match l {
            Some(l) => {
                self.sched
                    .loop_iterations(&self.compiled.spec().steps[l].id)
                    .unwrap_or(0)
                    + 1
            }
            None => 0,
        }
    }

    /// A step the scheduler handed out: decide or start it.
    fn dispatch(&mut self, i: usize) -> Result<(), Error> {
        let step = self.compiled.spec().steps[i].clone();
        if self.loop_of[i].is_some() && self.rows[i].data.attempt == 0 {
            self.rows[i].data.iteration = self.iteration_of(i);
        }
        // `when` is judged once per iteration, when the step first becomes
        // ready: a retry or a restarted driver does not judge it again.
        if step.when.is_some() && self.rows[i].data.attempt == 0 {
            let ctx = self.ctx(i);
            match self.compiled.when(&step.id, &ctx) {
                Ok(true) => {}
                Ok(false) => {
                    let ready = self.sched.skip(&step.id).map_err(flow_error)?;
                    self.rows[i].status = StepStatus::Skipped;
                    self.rows[i].data.skip_reason = Some(SkipReason::ConditionFalse);
                    self.rows[i].data.finished_at = Some(now_ms());
                    self.touch(i);
                    return self.after_event(ready, i);
                }
                Err(e) => return self.settle_failed(i, e.to_json(), false),
            }
        }
        match &step.action {
            StepAction::Switch(_) => {
                let ctx = self.ctx(i);
                match self.compiled.switch_choice(&step.id, &ctx) {
                    Ok(chosen) => {
                        let ready = self
                            .sched
                            .complete_switch(&step.id, chosen.as_deref())
                            .map_err(flow_error)?;
                        let excluded = self
                            .sched
                            .state()
                            .switch_results
                            .get(&step.id)
                            .map(|r| r.excluded.iter().cloned().collect())
                            .unwrap_or_default();
                        let now = now_ms();
                        let row = &mut self.rows[i];
                        row.status = StepStatus::Done;
                        row.data.attempt = row.data.attempt.max(1);
                        row.data.started_at.get_or_insert(now);
                        row.data.finished_at = Some(now);
                        row.data.output =
                            Some(chosen.clone().map(Value::String).unwrap_or(Value::Null));
                        row.data.switch = Some(SwitchRecord { chosen, excluded });
                        if let Some(out) = row.data.output.clone() {
                            self.results.insert(step.id.clone(), out);
                        }
                        self.touch(i);
                        self.after_event(ready, i)
                    }
                    Err(e) => self.settle_failed(i, e.to_json(), false),
                }
            }
            StepAction::DoWhile(_) => {
                let now = now_ms();
                let row = &mut self.rows[i];
                if row.status != StepStatus::Running {
                    row.status = StepStatus::Running;
                    row.data.attempt = 1;
                    row.data.started_at = Some(now);
                    self.touch(i);
                }
                Ok(())
            }
            StepAction::Approval(_) => {
                let ctx = self.ctx(i);
                let message = match self.compiled.render_action(&step.id, &ctx) {
                    Ok(RenderedAction::Approval { message }) => message,
                    Ok(_) => None,
                    Err(e) => return self.settle_failed(i, e.to_json(), false),
                };
                let row = &mut self.rows[i];
                if row.status != StepStatus::Waiting {
                    row.status = StepStatus::Waiting;
                    row.data.attempt = row.data.attempt.max(1);
                    row.data.started_at = Some(now_ms());
                    row.data.message = message;
                    self.touch(i);
                }
                Ok(())
            }
            StepAction::Agent(_) | StepAction::Command(_) | StepAction::Code => {
                match self.rows[i].data.available_at {
                    Some(at) if at > now_ms() => {
                        self.timers.insert((at, i, Timer::Start));
                        Ok(())
                    }
                    _ => self.start_attempt(i),
                }
            }
        }
    }

    /// Kills what is left on this host of step `i`'s current attempt (its
    /// driver died; see `orphans`).
    fn kill_orphans(&self, i: usize) {
        let row = &self.rows[i];
        let tag = super::orphans::attempt_tag(
            &self.run_id,
            &row.data.step_id,
            row.data.iteration,
            row.data.attempt,
        );
        let n = super::orphans::kill_tagged(&tag);
        if n > 0 {
            eprintln!("coderig flow: killed {n} process(es) left by attempt {tag}");
        }
    }

    fn interrupted(&mut self, i: usize) {
        let row = &mut self.rows[i];
        let now = now_ms();
        row.data.attempts.push(AttemptRecord {
            attempt: row.data.attempt,
            iteration: row.data.iteration,
            outcome: "interrupted".into(),
            error: Some(
                Error::unavailable("the process that ran this attempt ended before it did")
                    .to_json(),
            ),
            started_at: row.data.started_at.unwrap_or(now),
            finished_at: now,
        });
    }

    /// Marks a new attempt running; it is spawned once that is written.
    fn start_attempt(&mut self, i: usize) -> Result<(), Error> {
        let timeout = self.compiled.spec().steps[i].timeout;
        let now = now_ms();
        let row = &mut self.rows[i];
        row.status = StepStatus::Running;
        row.data.attempt += 1;
        row.data.started_at = Some(now);
        row.data.finished_at = None;
        row.data.available_at = None;
        row.data.deadline_at = timeout.map(|t| now + t.as_millis() as Millis);
        row.data.skip_reason = None;
        let attempt = row.data.attempt;
        if let Some(at) = row.data.deadline_at {
            self.timers.insert((at, i, Timer::Deadline(attempt)));
        }
        self.touch(i);
        self.to_spawn.push(i);
        Ok(())
    }

    fn spawn_pending(&mut self) {
        for i in std::mem::take(&mut self.to_spawn) {
            if self.rows[i].status != StepStatus::Running {
                continue;
            }
            let attempt = self.rows[i].data.attempt;
            let step = self.compiled.spec().steps[i].clone();
            let cancel = CancellationToken::new();
            let token = cancel.clone();
            let tx = self.ended_tx.clone();
            let prepared = self.prepare(i);
            self.live.insert(
                i,
                Live {
                    attempt,
                    cancel,
                    stop: None,
                    timeout: step.timeout,
                },
            );
            let inner = self.inner.clone();
            tokio::spawn(async move {
                let result = match prepared {
                    Err(e) => ExecResult::Failed {
                        error: e.to_json(),
                        output: None,
                        exit_code: None,
                        stderr: None,
                    },
                    Ok(Prepared::Agent(call)) => {
                        exec::agent(&inner.registry, &inner.bus, call, token).await
                    }
                    Ok(Prepared::Command(call)) => exec::command(call, token).await,
                    Ok(Prepared::Code(f, ctx)) => exec::code(f, ctx, token).await,
                };
                let _ = tx.send(Ended {
                    idx: i,
                    attempt,
                    result,
                });
            });
        }
    }

    fn prepare(&mut self, i: usize) -> Result<Prepared, Error> {
        let step = self.compiled.spec().steps[i].clone();
        let mut roots = self.inner.config.project_roots.clone();
        if !roots.is_empty() {
            roots.push(artifacts::run_dir(
                &self.inner.config.data_dir,
                &self.run_id,
            ));
        }
        match &step.action {
            StepAction::Code => {
                let f = self
                    .code
                    .as_ref()
                    .and_then(|c| c.get(&step.id))
                    .cloned()
                    .ok_or_else(|| {
                        Error::unavailable(format!(
                            "no callable for code step {:?} in this process: code steps run only in the process that passed them to run_flow",
                            step.id
                        ))
                    })?;
                Ok(Prepared::Code(f, self.deps_ctx(i)))
            }
            _ => {
                let base =
                    artifacts::step_dir(&self.inner.config.data_dir, &self.run_id, &step.id)?;
                let ctx = self.ctx(i);
                match self.compiled.render_action(&step.id, &ctx)? {
                    RenderedAction::Agent {
                        agent,
                        model,
                        prompt,
                        access,
                        workdir,
                    } => {
                        let dir =
                            crate::flow::command::confine_dir(workdir.as_deref(), &base, &roots)?;
                        let tag = self.tag(i);
                        let mut turn = Turn::new(prompt);
                        turn.env.insert(super::orphans::ATTEMPT_VAR.into(), tag);
                        turn.model = model;
                        turn.workdir = Some(dir);
                        turn.access = access;
                        turn.timeout = step.timeout;
                        Ok(Prepared::Agent(AgentCall {
                            run_id: self.run_id.clone(),
                            step_id: step.id.clone(),
                            agent,
                            turn,
                        }))
                    }
                    RenderedAction::Command {
                        program,
                        cwd,
                        mut env,
                    } => {
                        env.insert(super::orphans::ATTEMPT_VAR.into(), self.tag(i));
                        let dir = crate::flow::command::confine_dir(cwd.as_deref(), &base, &roots)?;
                        Ok(Prepared::Command(CommandCall {
                            program,
                            cwd: dir,
                            env,
                            timeout: step.timeout,
                        }))
                    }
                    _ => Err(Error::internal(format!(
                        "step {:?} has nothing to run",
                        step.id
                    ))),
                }
            }
        }
    }

    fn tag(&self, i: usize) -> String {
        let row = &self.rows[i];
        super::orphans::attempt_tag(
            &self.run_id,
            &row.data.step_id,
            row.data.iteration,
            row.data.attempt,
        )
    }

    fn on_timers(&mut self) -> Result<(), Error> {
        let now = now_ms();
        while let Some(&(at, i, timer)) = self.timers.first() {
            if at > now {
                break;
            }
            self.timers.remove(&(at, i, timer));
            match timer {
                Timer::Start => {
                    if self.rows[i].status == StepStatus::Pending && !self.live.contains_key(&i) {
                        self.start_attempt(i)?;
                    }
                }
                Timer::Deadline(attempt) => {
                    if let Some(l) = self.live.get_mut(&i) {
                        if l.attempt == attempt && l.stop.is_none() {
                            l.stop = Some(StopCause::Timeout);
                            l.cancel.cancel();
                        }
                    }
                }
            }
        }
        Ok(())
    }

    fn on_ended(&mut self, ended: Ended) -> Result<(), Error> {
        let Some(live) = self.live.get(&ended.idx) else {
            return Ok(());
        };
        if live.attempt != ended.attempt {
            return Ok(());
        }
        let live = self.live.remove(&ended.idx).expect("checked above");
        let i = ended.idx;
        if let Some(at) = self.rows[i].data.deadline_at {
            self.timers.remove(&(at, i, Timer::Deadline(live.attempt)));
        }
        if matches!(live.stop, Some(StopCause::Cancelled | StopCause::Abandon)) {
            return Ok(());
        }
        let step_id = self.compiled.spec().steps[i].id.clone();
        let timed_out = live.stop == Some(StopCause::Timeout);
        let (result_ok, error, output, exit_code, stderr) = match ended.result {
            ExecResult::Done {
                output,
                exit_code,
                stderr,
            } if !timed_out => (true, None, Some(output), exit_code, stderr),
            ExecResult::Done {
                output,
                exit_code,
                stderr,
            } => (false, None, Some(output), exit_code, stderr),
            ExecResult::Failed {
                error,
                output,
                exit_code,
                stderr,
            } => (false, Some(error), output, exit_code, stderr),
        };
        let error = if timed_out {
            let t = live
                .timeout
                .map(|t| format!("{} s", t.as_secs_f64()))
                .unwrap_or_default();
            Some(
                Error::unavailable(format!("step {step_id:?} timed out after {t}"))
                    .with_detail("timed_out", true)
                    .to_json(),
            )
        } else {
            error
        };
        self.write_artifacts(i, output.as_ref(), stderr.as_deref());
        let now = now_ms();
        {
            let row = &mut self.rows[i];
            row.data.output = output.clone();
            row.data.exit_code = exit_code;
            row.data.error = error.clone();
            row.data.deadline_at = None;
            row.data.attempts.push(AttemptRecord {
                attempt: row.data.attempt,
                iteration: row.data.iteration,
                outcome: if result_ok {
                    "done"
                } else if timed_out {
                    "timed_out"
                } else {
                    "failed"
                }
                .into(),
                error: error.clone(),
                started_at: row.data.started_at.unwrap_or(now),
                finished_at: now,
            });
        }
        match &output {
            Some(out) => {
                self.results.insert(step_id.clone(), out.clone());
            }
            None => {
                self.results.remove(&step_id);
            }
        }
        if result_ok {
            let row = &mut self.rows[i];
            row.status = StepStatus::Done;
            row.data.finished_at = Some(now);
            self.touch(i);
            let ready = self.sched.complete(&step_id).map_err(flow_error)?;
            return self.after_event(ready, i);
        }
        let retry = &self.compiled.spec().steps[i].retry;
        let on = if timed_out {
            RetryOn::Timeout
        } else {
            RetryOn::Failure
        };
        let attempt = self.rows[i].data.attempt;
        // Attempts lost to a crash (`interrupted`) do not use up the budget.
        let iteration = self.rows[i].data.iteration;
        let failures = self.rows[i]
            .data
            .attempts
            .iter()
            .filter(|a| {
                a.iteration == iteration && (a.outcome == "failed" || a.outcome == "timed_out")
            })
            .count() as u32;
        if failures < retry.max_attempts && retry.on.contains(&on) {
            let delay = retry_delay(
                retry.initial,
                retry.multiplier,
                retry.max,
                failures,
                seed(&self.run_id, &step_id, iteration, attempt),
            );
            let at = now + delay.as_millis() as Millis;
            let row = &mut self.rows[i];
            row.status = StepStatus::Pending;
            row.data.available_at = Some(at);
            self.timers.insert((at, i, Timer::Start));
            self.touch(i);
            return Ok(());
        }
        let error = error.unwrap_or_else(|| Error::internal("the step failed").to_json());
        self.settle_failed(i, error, timed_out)
    }

    fn settle_failed(&mut self, i: usize, error: Value, timed_out: bool) -> Result<(), Error> {
        let step_id = self.compiled.spec().steps[i].id.clone();
        let row = &mut self.rows[i];
        row.status = if timed_out {
            StepStatus::TimedOut
        } else {
            StepStatus::Failed
        };
        row.data.error = Some(error);
        row.data.finished_at = Some(now_ms());
        row.data.attempt = row.data.attempt.max(1);
        row.data.deadline_at = None;
        row.data.available_at = None;
        self.touch(i);
        let ready = if timed_out {
            self.sched.timeout(&step_id)
        } else {
            self.sched.fail(&step_id)
        }
        .map_err(flow_error)?;
        self.after_event(ready, i)
    }

    fn write_artifacts(&self, i: usize, output: Option<&Value>, stderr: Option<&str>) {
        let step = &self.compiled.spec().steps[i];
        if matches!(step.action, StepAction::Code) {
            return;
        }
        let Ok(dir) = artifacts::step_dir(&self.inner.config.data_dir, &self.run_id, &step.id)
        else {
            return;
        };
        if let Some(out) = output {
            let text = match out {
                Value::String(s) => s.clone(),
                other => serde_json::to_string_pretty(other).unwrap_or_default(),
            };
            let _ = artifacts::write(&dir, "output.txt", text.as_bytes(), false);
        }
        if let Some(err) = stderr {
            let _ = artifacts::write(&dir, "stderr.txt", err.as_bytes(), false);
        }
    }

    /// After the last body step of loop `l` settled: another iteration, or
    /// the loop is done.
    fn maybe_iterate(&mut self, l: usize) -> Result<(), Error> {
        if self.rows[l].status != StepStatus::Running {
            return Ok(());
        }
        let StepAction::DoWhile(dw) = self.compiled.spec().steps[l].action.clone() else {
            return Ok(());
        };
        let loop_id = self.compiled.spec().steps[l].id.clone();
        for b in &dw.body {
            let outcome = self.sched.outcome(b).map_err(flow_error)?;
            if !outcome.is_settled() {
                return Ok(());
            }
            if matches!(outcome, StepOutcome::Pending | StepOutcome::InFlight) {
                return Ok(());
            }
        }
        let completed = self.sched.loop_iterations(&loop_id).map_err(flow_error)? + 1;
        let mut ctx = self.ctx(l);
        ctx["iteration"] = json!(completed);
        let again = match self.compiled.loop_continues(&loop_id, &ctx) {
            Ok(again) => again,
            Err(e) => return self.settle_failed(l, e.to_json(), false),
        };
        if again && completed < dw.max_iterations {
            // The body's endings of this iteration are written (and
            // announced) before the rows start over in the same batch.
            self.stage()?;
            let ready = self.sched.next_iteration(&loop_id).map_err(flow_error)?;
            self.rows[l].data.iteration = completed;
            self.touch(l);
            for b in &dw.body {
                let j = i_of(&self.index, b)?;
                // Every body step starts the iteration afresh (the ready
                // ones are already in flight in the scheduler).
                if !matches!(
                    self.sched.outcome(b).map_err(flow_error)?,
                    StepOutcome::Skipped(SkipReason::Excluded)
                ) {
                    let row = &mut self.rows[j];
                    row.status = StepStatus::Pending;
                    row.data.attempt = 0;
                    row.data.iteration = completed + 1;
                    row.data.skip_reason = None;
                    row.data.started_at = None;
                    row.data.finished_at = None;
                    row.data.available_at = None;
                    row.data.deadline_at = None;
                    row.data.switch = None;
                    self.touch(j);
                }
            }
            self.after_event(ready, l)
        } else {
            let row = &mut self.rows[l];
            row.status = StepStatus::Done;
            row.data.finished_at = Some(now_ms());
            row.data.output = Some(json!(completed));
            self.results.insert(loop_id.clone(), json!(completed));
            self.touch(l);
            let ready = self.sched.complete(&loop_id).map_err(flow_error)?;
            self.after_event(ready, l)
        }
    }

    // ----- endings -----

    async fn check_end(&mut self) -> Result<Next, Error> {
        if !self.live.is_empty() || !self.timers.is_empty() || !self.to_spawn.is_empty() {
            return Ok(Next::Continue);
        }
        if self
            .rows
            .iter()
            .any(|r| matches!(r.status, StepStatus::Waiting | StepStatus::Running))
        {
            return Ok(Next::Continue);
        }
        // Nothing runs, nothing waits: the run is over (complete, or stuck
        // with steps no rule will ever start).
        let spec = self.compiled.spec().clone();
        let mut failed_leaves = Vec::new();
        let mut first_error = None;
        let mut never_ran = Vec::new();
        for (i, row) in self.rows.iter().enumerate() {
            let id = &spec.steps[i].id;
            let bad = matches!(row.status, StepStatus::Failed | StepStatus::TimedOut)
                || (row.status == StepStatus::Skipped
                    && row.data.skip_reason == Some(SkipReason::UpstreamFailed));
            if matches!(row.status, StepStatus::Failed | StepStatus::TimedOut)
                && first_error.is_none()
            {
                first_error = row.data.error.clone().map(|e| (id.clone(), e));
            }
            if row.status == StepStatus::Pending {
                never_ran.push(id.clone());
            }
            if bad && !self.has_dependents[i] {
                failed_leaves.push(id.clone());
            }
        }
        let (status, error) = if !never_ran.is_empty() {
            (
                RunStatus::Failed,
                Some(
                    Error::conflict(format!(
                        "no step can run any more, and these never ran: {}",
                        never_ran.join(", ")
                    ))
                    .with_detail("steps", never_ran)
                    .to_json(),
                ),
            )
        } else if failed_leaves.is_empty() {
            (RunStatus::Completed, None)
        } else {
            let mut e = match first_error {
                Some((step, Value::Object(mut m))) => {
                    m.insert("step".into(), json!(step));
                    Value::Object(m)
                }
                _ => Error::conflict("a step failed").to_json(),
            };
            e["failed_steps"] = json!(failed_leaves);
            (RunStatus::Failed, Some(e))
        };
        self.end_run(status, error).await?;
        Ok(Next::Finished)
    }

    async fn end_run(&mut self, status: RunStatus, error: Option<Value>) -> Result<(), Error> {
        let ctx = self.ctx_full();
        let report = match self.compiled.render_report(&ctx) {
            Ok(r) => r,
            Err(e) => Some(format!("(the report could not be rendered: {e})")),
        };
        let dir = artifacts::run_dir(&self.inner.config.data_dir, &self.run_id);
        if let Some(r) = &report {
            if let Err(e) = artifacts::write(&dir, "report.md", r.as_bytes(), true) {
                eprintln!("coderig flow: run {}: {e}", self.run_id);
            }
        }
        let mut data = self.data.clone();
        data.report = report;
        data.error = error.clone();
        data.finished_at = Some(now_ms());
        self.stage()?;
        self.changes.work = Some(WorkChange {
            from: LIVE_RUN.iter().map(|s| s.to_string()).collect(),
            status: Some(status.as_str().into()),
            data: Some(encode(&data)),
        });
        self.changes.events.push(ChangeEvent {
            owner_id: None,
            event: NewEvent::from_event(&Event::RunUpdated(RunUpdated {
                run_id: self.run_id.clone(),
                status,
                error,
            }))?,
        });
        let changes = std::mem::take(&mut self.changes);
        match self.inner.store.record_changes(&self.fence, changes).await {
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::Conflict => {
                if self.lease_lost().await {
                    return Ok(());
                }
                if self.reload().await? {
                    return Box::pin(self.finish_cancelled()).await;
                }
                return Ok(());
            }
            Err(e) => return Err(e),
        }
        self.inner.bus.notify();
        self.complete_driver().await
    }

    fn ctx_full(&mut self) -> Value {
        if self.rows.is_empty() {
            return context(&self.input, self.results.clone(), Map::new(), 0);
        }
        let mut c = self.ctx(0);
        c["iteration"] = json!(0);
        c
    }

    /// The run was cancelled: stop what runs, mark the rest cancelled.
    async fn finish_cancelled(&mut self) -> Result<(), Error> {
        for l in self.live.values_mut() {
            l.stop = Some(StopCause::Cancelled);
            l.cancel.cancel();
        }
        self.drain_live().await;
        for i in 0..self.rows.len() {
            if self.rows[i].status == StepStatus::Running && !self.live.contains_key(&i) {
                self.kill_orphans(i);
            }
        }
        for attempt in 0..3 {
            let now = now_ms();
            let mut changes = Changes::default();
            for (i, row) in self.rows.iter_mut().enumerate() {
                if matches!(
                    row.status,
                    StepStatus::Pending | StepStatus::Running | StepStatus::Waiting
                ) {
                    let from = vec![row.status.as_str().to_string()];
                    row.status = StepStatus::Cancelled;
                    row.data.finished_at = Some(now);
                    row.data.deadline_at = None;
                    row.data.available_at = None;
                    let id = self.compiled.spec().steps[i].id.clone();
                    changes.owners.push(OwnerChange {
                        id: step_owner_id(&self.run_id, &id),
                        from,
                        status: Some(StepStatus::Cancelled.as_str().into()),
                        data: Some(encode(&row.data)),
                    });
                    changes.events.push(ChangeEvent {
                        owner_id: Some(step_owner_id(&self.run_id, &id)),
                        event: step_event(&self.run_id, &id, row)?,
                    });
                }
            }
            let mut data = self.data.clone();
            data.finished_at = Some(now);
            changes.work = Some(WorkChange {
                from: vec![RunStatus::Cancelled.as_str().into()],
                status: None,
                data: Some(encode(&data)),
            });
            match self.inner.store.record_changes(&self.fence, changes).await {
                Ok(_) => {
                    self.inner.bus.notify();
                    return self.complete_driver().await;
                }
                Err(e) if e.kind() == ErrorKind::Conflict && attempt < 2 => {
                    if self.lease_lost().await {
                        return Ok(());
                    }
                    let snapshot = self.inner.store.work(&self.run_id).await?;
                    self.rebuild_rows_only(&snapshot)?;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    async fn complete_driver(&mut self) -> Result<(), Error> {
        // The run is over: its callables are not needed any more.
        self.inner
            .code
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.run_id);
        match self
            .inner
            .store
            .complete(
                &self.fence,
                Completion::completed(json!({"run_status": self.status_now().await})),
            )
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if e.kind() == ErrorKind::Conflict => Ok(()),
            Err(e) => Err(e),
        }
    }

    async fn status_now(&self) -> String {
        match self.inner.store.work(&self.run_id).await {
            Ok(s) => s.work.status,
            Err(_) => String::new(),
        }
    }

    /// Leaves the run to another driver: stops every execution, writes
    /// nothing.
    async fn abandon(&mut self) {
        for l in self.live.values_mut() {
            l.stop = Some(StopCause::Abandon);
            l.cancel.cancel();
        }
        self.drain_live().await;
    }

    async fn drain_live(&mut self) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
        while !self.live.is_empty() {
            match tokio::time::timeout_at(deadline, self.ended_rx.recv()).await {
                Ok(Some(ended)) => {
                    if self
                        .live
                        .get(&ended.idx)
                        .is_some_and(|l| l.attempt == ended.attempt)
                    {
                        self.live.remove(&ended.idx);
                    }
                }
                _ => break,
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

/// The seed of a retry's jitter: the same run, step, iteration and attempt
/// always wait the same time (a restarted driver agrees with the one
/// before it).
pub(crate) fn seed(run_id: &str, step_id: &str, iteration: u32, attempt: u32) -> u64 {
    let key = format!("{run_id}/{step_id}/{iteration}/{attempt}");
    let lo = xxhash_rust::xxh32::xxh32(key.as_bytes(), 0) as u64;
    let hi = xxhash_rust::xxh32::xxh32(key.as_bytes(), 0x9e37_79b9) as u64;
    (hi << 32) | lo
}

/// The wait before the attempt after `failures` failed ones: `initial ·
/// multiplier^(failures−1)` capped at `max`, then a seeded jitter of ±10 %
/// (never above `max`).
pub fn retry_delay(
    initial: Duration,
    multiplier: f64,
    max: Duration,
    failures: u32,
    seed: u64,
) -> Duration {
    let m = if multiplier.is_finite() && multiplier >= 1.0 {
        multiplier
    } else {
        1.0
    };
    let exp = failures.saturating_sub(1).min(1024) as i32;
    let base = initial.as_secs_f64() * m.powi(exp);
    let cap = max.max(initial).as_secs_f64();
    let base = if base.is_finite() { base.min(cap) } else { cap };
    // A value in [-1, 1) from the seed's top 53 bits.
    let u = (seed >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
    let jittered = (base * (1.0 + 0.1 * u)).clamp(0.0, cap);
    Duration::from_secs_f64(jittered)
}
