//! Rebuilding a driver from the store: the scheduler restored from the
//! step rows, interrupted attempts started again, and a reload after a
//! change made elsewhere (cancel, approve, reject).

use super::*;

impl Driver {
    // ----- rebuilding -----

    pub(super) fn rebuild(&mut self, snapshot: &crate::store::WorkSnapshot) -> Result<(), Error> {
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
            // open is recorded as interrupted there (its processes are
            // killed) and is not followed by a new one.
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
    pub(super) async fn reload(&mut self) -> Result<bool, Error> {
        self.changes = Changes::default();
        self.dirty.clear();
        self.to_spawn.clear();
        let snapshot = self.inner.store.work(&self.run_id).await?;
        self.status = super::super::view::run_status(&snapshot.work)?;
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

    pub(super) fn rebuild_rows_only(
        &mut self,
        snapshot: &crate::store::WorkSnapshot,
    ) -> Result<(), Error> {
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

    pub(super) fn concerns_us(&self, event: &Event) -> bool {
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

    pub(super) async fn lease_lost(&self) -> bool {
        matches!(
            self.inner.store.heartbeat(&self.fence, self.inner.config.lease_ttl).await,
            Err(e) if e.kind() == ErrorKind::Conflict || e.kind() == ErrorKind::NotFoundId
        )
    }
}
