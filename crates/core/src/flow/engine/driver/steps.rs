//! The scheduler's decisions acted on: skips recorded, ready steps
//! dispatched (`when`, switch, do-while, approval) or started as attempts,
//! contexts built for templates and code steps.

use super::*;
use std::collections::BTreeMap;

impl Driver {
    // ----- the scheduler's decisions -----

    /// Writes the scheduler's new skips; returns the loops whose body
    /// lost a step to them.
    pub(super) fn record_skips(&mut self) -> BTreeSet<usize> {
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
            row.data.finished_at = Some(self.clock.now());
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

    pub(super) fn after_event(&mut self, ready: Vec<String>, settled: usize) -> Result<(), Error> {
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

    pub(super) fn ctx(&mut self, i: usize) -> Value {
        let iteration = self.iteration_of(i);
        if self.ctx_cache.is_none() {
            let mut steps = BTreeMap::new();
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
    pub(super) fn deps_ctx(&self, i: usize) -> Value {
        let step = &self.compiled.spec().steps[i];
        let mut results = Map::new();
        let mut steps = BTreeMap::new();
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
    pub(super) fn iteration_of(&self, i: usize) -> u32 {
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
    pub(super) fn dispatch(&mut self, i: usize) -> Result<(), Error> {
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
                    self.rows[i].data.finished_at = Some(self.clock.now());
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
                        let now = self.clock.now();
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
                let now = self.clock.now();
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
                    row.data.started_at = Some(self.clock.now());
                    row.data.message = message;
                    self.touch(i);
                }
                Ok(())
            }
            StepAction::Agent(_) | StepAction::Command(_) | StepAction::Code => {
                match self.rows[i].data.available_at {
                    Some(at) if at > self.clock.now() => {
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
    pub(super) fn kill_orphans(&self, i: usize) {
        let row = &self.rows[i];
        let tag = super::super::orphans::attempt_tag(
            &self.run_id,
            &row.data.step_id,
            row.data.iteration,
            row.data.attempt,
        );
        let n = super::super::orphans::kill_tagged(&tag);
        if n > 0 {
            eprintln!("coderig flow: killed {n} process(es) left by attempt {tag}");
        }
    }

    pub(super) fn interrupted(&mut self, i: usize) {
        let row = &mut self.rows[i];
        let now = self.clock.now();
        row.data.attempts.push(AttemptRecord {
            attempt: row.data.attempt,
            iteration: row.data.iteration,
            outcome: crate::flow::AttemptOutcome::Interrupted,
            error: Some(
                Error::unavailable("the process that ran this attempt ended before it did")
                    .to_json(),
            ),
            sandbox: None,
            started_at: row.data.started_at.unwrap_or(now),
            finished_at: now,
        });
    }

    /// Marks a new attempt running; it is spawned once that is written.
    pub(super) fn start_attempt(&mut self, i: usize) -> Result<(), Error> {
        let timeout = self.compiled.spec().steps[i].timeout;
        let now = self.clock.now();
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

    pub(super) fn spawn_pending(&mut self) {
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
                    Err(e) => ExecResult::failed(e),
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

    pub(super) fn prepare(&mut self, i: usize) -> Result<Prepared, Error> {
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
                        turn.env
                            .insert(super::super::orphans::ATTEMPT_VAR.into(), tag);
                        turn.model = model;
                        turn.workdir = Some(dir);
                        turn.access = access;
                        turn.timeout = step.timeout;
                        // Beside the step's dir, never inside a workdir: the
                        // native agent's transcript and cut outputs (attempts
                        // append; `.agents` is no step id).
                        turn.artifacts = Some(
                            artifacts::run_dir(&self.inner.config.data_dir, &self.run_id)
                                .join(".agents")
                                .join(&step.id),
                        );
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
                        env.insert(super::super::orphans::ATTEMPT_VAR.into(), self.tag(i));
                        let dir = crate::flow::command::confine_dir(cwd.as_deref(), &base, &roots)?;
                        let sandbox = match &step.action {
                            StepAction::Command(c) => c.sandbox.clone(),
                            _ => Default::default(),
                        };
                        Ok(Prepared::Command(CommandCall {
                            program,
                            cwd: dir,
                            env,
                            timeout: step.timeout,
                            sandbox,
                            mode: self.inner.registry.sandbox_mode(),
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

    pub(super) fn tag(&self, i: usize) -> String {
        let row = &self.rows[i];
        super::super::orphans::attempt_tag(
            &self.run_id,
            &row.data.step_id,
            row.data.iteration,
            row.data.attempt,
        )
    }
}
