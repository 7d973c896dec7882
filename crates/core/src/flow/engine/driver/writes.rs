//! Staging row changes and writing them, fenced, in one transaction per
//! batch, with the run's status (`running` / `waiting`) kept current and
//! checked: a batch is written only while the run is live.

use super::*;

impl Driver {
    // ----- writes -----

    pub(super) fn touch(&mut self, i: usize) {
        self.dirty.insert(i);
        self.ctx_cache = None;
    }

    pub(super) fn stage(&mut self) -> Result<(), Error> {
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

    pub(super) async fn flush(&mut self) -> Result<(), Error> {
        if self.clock.stale() {
            self.clock = DbClock::sample(&*self.inner.store).await?;
        }
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
        // Only while the run is live: a cancel (or a reconcile's failure)
        // settles every step in the transaction that ends the run, and a
        // batch decided before this driver saw it must not rewrite them
        // (the `conflict` makes it reload and wind up).
        self.changes
            .work
            .get_or_insert_with(|| WorkChange::new().from(LIVE_RUN));
        let changes = std::mem::take(&mut self.changes);
        let work_changed = changes.work.as_ref().is_some_and(|w| w.status.is_some());
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

    pub(super) fn desired_status(&self) -> RunStatus {
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
}
