//! The end of an attempt: timers (deadlines, backoff starts), results
//! turned into done / retry / failed / timed out, artifacts, and a loop's
//! next iteration.

use super::*;
use crate::flow::AttemptOutcome;

impl Driver {
    pub(super) fn on_timers(&mut self) -> Result<(), Error> {
        let now = self.clock.now();
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

    pub(super) fn on_ended(&mut self, ended: Ended) -> Result<(), Error> {
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
        let (result_ok, error, output, exit_code, stderr, sandbox) = match ended.result {
            ExecResult::Done {
                output,
                exit_code,
                stderr,
                sandbox,
            } => (!timed_out, None, Some(output), exit_code, stderr, sandbox),
            ExecResult::Failed {
                error,
                output,
                exit_code,
                stderr,
                sandbox,
            } => (false, Some(error), output, exit_code, stderr, sandbox),
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
        let now = self.clock.now();
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
                    AttemptOutcome::Done
                } else if timed_out {
                    AttemptOutcome::TimedOut
                } else {
                    AttemptOutcome::Failed
                },
                error: error.clone(),
                sandbox,
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
            .filter(|a| a.iteration == iteration && a.outcome.uses_a_retry())
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

    pub(super) fn settle_failed(
        &mut self,
        i: usize,
        error: Value,
        timed_out: bool,
    ) -> Result<(), Error> {
        let step_id = self.compiled.spec().steps[i].id.clone();
        let row = &mut self.rows[i];
        row.status = if timed_out {
            StepStatus::TimedOut
        } else {
            StepStatus::Failed
        };
        row.data.error = Some(error);
        row.data.finished_at = Some(self.clock.now());
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

    pub(super) fn write_artifacts(&self, i: usize, output: Option<&Value>, stderr: Option<&str>) {
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
    pub(super) fn maybe_iterate(&mut self, l: usize) -> Result<(), Error> {
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
            row.data.finished_at = Some(self.clock.now());
            row.data.output = Some(json!(completed));
            self.results.insert(loop_id.clone(), json!(completed));
            self.touch(l);
            let ready = self.sched.complete(&loop_id).map_err(flow_error)?;
            self.after_event(ready, l)
        }
    }
}
