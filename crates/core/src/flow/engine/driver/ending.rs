//! The end of a run: completed or failed when nothing can run any more,
//! cancelled (every running step stopped, the rest marked), or abandoned to
//! another driver (lease lost, shutdown).

use super::*;

impl Driver {
    // ----- endings -----

    pub(super) async fn check_end(&mut self) -> Result<Next, Error> {
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
        if !never_ran.is_empty() {
            // A run ends with every step final: the ones no rule will ever
            // start are cancelled in the transaction that fails the run.
            let now = self.clock.now();
            for i in 0..self.rows.len() {
                let row = &mut self.rows[i];
                if row.status == StepStatus::Pending {
                    row.status = StepStatus::Cancelled;
                    row.data.finished_at = Some(now);
                    row.data.deadline_at = None;
                    row.data.available_at = None;
                    self.touch(i);
                }
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

    pub(super) async fn end_run(
        &mut self,
        status: RunStatus,
        error: Option<Value>,
    ) -> Result<(), Error> {
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
        data.finished_at = Some(self.clock.now());
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

    pub(super) fn ctx_full(&mut self) -> Value {
        if self.rows.is_empty() {
            return context(&self.input, self.results.clone(), Default::default(), 0);
        }
        let mut c = self.ctx(0);
        c["iteration"] = json!(0);
        c
    }

    /// The run was cancelled: stop what runs here, kill what a dead driver
    /// left on this host and record those attempts as interrupted, mark
    /// any step not yet final `cancelled` (a cancel settles them all in
    /// its own transaction; this covers runs cancelled before it did), and
    /// end the driver task. Writes only data of steps already `cancelled`
    /// (their attempt history), so it adds no event to a finished run.
    pub(super) async fn finish_cancelled(&mut self) -> Result<(), Error> {
        let was_live: BTreeSet<usize> = self.live.keys().copied().collect();
        for l in self.live.values_mut() {
            l.stop = Some(StopCause::Cancelled);
            l.cancel.cancel();
        }
        self.drain_live().await;
        for i in 0..self.rows.len() {
            if !was_live.contains(&i) && self.open_attempt(i) {
                self.kill_orphans(i);
            }
        }
        for attempt in 0..3 {
            let now = self.clock.now();
            let mut changes = Changes::default();
            for i in 0..self.rows.len() {
                // An attempt whose process died with its driver: recorded
                // as interrupted (one that ran here was stopped by the
                // cancel and is not).
                let interrupted = !was_live.contains(&i) && self.open_attempt(i);
                if interrupted {
                    self.interrupted(i);
                }
                let id = self.compiled.spec().steps[i].id.clone();
                let row = &mut self.rows[i];
                let live = matches!(
                    row.status,
                    StepStatus::Pending | StepStatus::Running | StepStatus::Waiting
                );
                if !live && !interrupted {
                    continue;
                }
                let from = vec![row.status.as_str().to_string()];
                if live {
                    row.status = StepStatus::Cancelled;
                    row.data.finished_at = Some(now);
                    row.data.deadline_at = None;
                    row.data.available_at = None;
                }
                changes.owners.push(OwnerChange {
                    id: step_owner_id(&self.run_id, &id),
                    from,
                    status: live.then(|| StepStatus::Cancelled.as_str().into()),
                    data: Some(encode(&row.data)),
                });
                if live {
                    changes.events.push(ChangeEvent {
                        owner_id: Some(step_owner_id(&self.run_id, &id)),
                        event: step_event(&self.run_id, &id, row)?,
                    });
                }
            }
            let mut data = self.data.clone();
            let stamp = data.finished_at.is_none();
            data.finished_at.get_or_insert(now);
            changes.work = Some(WorkChange {
                from: vec![RunStatus::Cancelled.as_str().into()],
                status: None,
                data: stamp.then(|| encode(&data)),
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
                    self.data = decode("run", &self.run_id, &snapshot.work.data)?;
                    self.rebuild_rows_only(&snapshot)?;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// True when step `i` (an agent, command or code step, running or
    /// cancelled) has a started attempt whose ending is not in its history:
    /// the attempt was running when its driver stopped or died.
    pub(super) fn open_attempt(&self, i: usize) -> bool {
        let row = &self.rows[i];
        matches!(row.status, StepStatus::Running | StepStatus::Cancelled)
            && matches!(row.data.kind.as_str(), "agent" | "command" | "code")
            && row.data.attempt > 0
            && !row
                .data
                .attempts
                .iter()
                .any(|a| a.attempt == row.data.attempt && a.iteration == row.data.iteration)
    }

    pub(super) async fn complete_driver(&mut self) -> Result<(), Error> {
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

    pub(super) async fn status_now(&self) -> String {
        match self.inner.store.work(&self.run_id).await {
            Ok(s) => s.work.status,
            Err(_) => String::new(),
        }
    }

    /// Leaves the run to another driver: stops every execution, writes
    /// nothing.
    pub(super) async fn abandon(&mut self) {
        for l in self.live.values_mut() {
            l.stop = Some(StopCause::Abandon);
            l.cancel.cancel();
        }
        self.drain_live().await;
    }

    pub(super) async fn drain_live(&mut self) {
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
