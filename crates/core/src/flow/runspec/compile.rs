//! `FlowSpec::compile`: CEL conditions and minijinja templates compiled,
//! the scheduler's `Flow` built and validated, every problem with its path.

use super::expr::{add_template, render, template_env, Cel};
use super::*;
use crate::error::Error;
use crate::flow::{validate, Case, Condition, Flow, Step, StepKind, ValidationError};
use crate::json::problems::Problems;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// A [`FlowSpec`] whose conditions and templates compiled and whose
/// scheduler [`Flow`] validated ([`FlowSpec::compile`]).
///
/// Cheap to clone (one `Arc`), `Send + Sync`.
#[derive(Clone)]
pub struct CompiledFlow {
    inner: Arc<Inner>,
}

struct Inner {
    spec: FlowSpec,
    flow: Flow,
    /// Step id -> index in `spec.steps` (ids are unique once compiled).
    index: HashMap<String, usize>,
    templates: minijinja::Environment<'static>,
    whens: HashMap<usize, Arc<Cel>>,
    cases: HashMap<usize, Vec<Arc<Cel>>>,
    loops: HashMap<usize, Arc<Cel>>,
}

// What the engine relies on: a compiled flow crosses threads and tasks.
const _: fn() = || {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<CompiledFlow>();
};

impl std::fmt::Debug for CompiledFlow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledFlow")
            .field("name", &self.inner.spec.name)
            .field("steps", &self.inner.spec.steps.len())
            .finish_non_exhaustive()
    }
}

/// A step's action with every template rendered ([`CompiledFlow::render_action`]).
#[derive(Debug, Clone, PartialEq)]
pub enum RenderedAction {
    /// An agent turn to run.
    Agent {
        /// The agent's identity.
        agent: String,
        /// The model, when given.
        model: Option<String>,
        /// The rendered prompt.
        prompt: String,
        /// What the agent may do.
        access: Access,
        /// The rendered work dir.
        workdir: Option<String>,
    },
    /// A process to run.
    Command {
        /// The rendered argv or shell line.
        program: CommandProgram,
        /// The rendered working directory.
        cwd: Option<String>,
        /// The rendered environment.
        env: BTreeMap<String, String>,
    },
    /// A native callable (nothing to render).
    Code,
    /// An approval to wait for.
    Approval {
        /// The rendered message.
        message: Option<String>,
    },
    /// A switch (decided by [`CompiledFlow::switch_choice`]).
    Switch,
    /// A do-while (iterated by [`CompiledFlow::loop_continues`]).
    DoWhile,
}

impl FlowSpec {
    /// Compiles every CEL condition (`when`, case conditions, do-while
    /// conditions) and every template (`prompt`, `workdir`, `argv[i]`,
    /// `shell`, `cwd`, `env.K`, `message`, `report`), builds the scheduler's
    /// [`Flow`] with the conditions attached and validates it.
    ///
    /// Guarantees: every problem of the whole spec — the per-field rules of
    /// [`FlowSpec::from_json`] (for a spec built by hand), a bad expression
    /// or template with the parser's message, a duplicate id, an unknown
    /// dependency, case, default or body step, a cycle, a do-while in its
    /// own body, a step in two loop bodies — is in one `invalid_input` error,
    /// each with its path (`steps[3].condition`, `steps[1].deps[0]`,
    /// `steps` for a cycle), as [`FlowSpec::from_json`] reports them.
    pub fn compile(&self) -> Result<CompiledFlow, Error> {
        let mut p = Problems::default();
        // A spec built by hand gets the decoder's per-field checks too.
        if let Err(e) = FlowSpec::from_json(&self.to_json()) {
            absorb(&mut p, &e);
        }
        let cel_env = Arc::new(cel::Env::stdlib());
        let mut templates = template_env();
        let mut whens = HashMap::new();
        let mut cases = HashMap::new();
        let mut loops = HashMap::new();
        let cel = |p: &mut Problems, source: &str, path: String| -> Option<Arc<Cel>> {
            match Cel::compile(&cel_env, source, &path) {
                Ok(c) => Some(Arc::new(c)),
                Err(message) => {
                    p.add(path, message);
                    None
                }
            }
        };
        let mut template = |p: &mut Problems, source: &str, path: String| {
            if let Err(message) = add_template(&mut templates, &path, source) {
                p.add(path, message);
            }
        };
        let mut steps = Vec::with_capacity(self.steps.len());
        for (i, s) in self.steps.iter().enumerate() {
            let at = format!("steps[{i}]");
            let kind = match &s.action {
                StepAction::Agent(_) => StepKind::Agent,
                StepAction::Command(_) | StepAction::Code => StepKind::Code,
                StepAction::Approval(_) => StepKind::Approval,
                StepAction::Switch(_) => StepKind::Switch,
                StepAction::DoWhile(_) => StepKind::DoWhile,
            };
            let mut step = Step::new(s.id.clone(), kind)
                .deps(s.deps.iter().cloned())
                .trigger_rule(s.trigger_rule)
                .max_retries(s.retry.max_attempts.saturating_sub(1));
            step.batch = s.batch.clone();
            // The scheduler counts whole seconds; a fraction rounds up so a
            // step never gets less time than its spec gives.
            step.timeout = s
                .timeout
                .map(|d| d.as_secs() + u64::from(d.subsec_nanos() > 0));
            if let Some(w) = &s.when {
                if let Some(c) = cel(&mut p, w, format!("{at}.when")) {
                    step.when = Some(condition(&c));
                    whens.insert(i, c);
                }
            }
            match &s.action {
                StepAction::Agent(a) => {
                    template(&mut p, &a.prompt, format!("{at}.prompt"));
                    if let Some(w) = &a.workdir {
                        template(&mut p, w, format!("{at}.workdir"));
                    }
                }
                StepAction::Command(c) => {
                    match &c.program {
                        CommandProgram::Argv(argv) => {
                            for (k, arg) in argv.iter().enumerate() {
                                template(&mut p, arg, format!("{at}.argv[{k}]"));
                            }
                        }
                        CommandProgram::Shell(sh) => template(&mut p, sh, format!("{at}.shell")),
                    }
                    if let Some(cwd) = &c.cwd {
                        template(&mut p, cwd, format!("{at}.cwd"));
                    }
                    for (k, v) in &c.env {
                        template(&mut p, v, format!("{at}.env.{k}"));
                    }
                }
                StepAction::Code => {}
                StepAction::Approval(a) => {
                    if let Some(m) = &a.message {
                        template(&mut p, m, format!("{at}.message"));
                    }
                }
                StepAction::Switch(sw) => {
                    let mut compiled = Vec::with_capacity(sw.cases.len());
                    for (k, case) in sw.cases.iter().enumerate() {
                        let c = cel(
                            &mut p,
                            &case.condition,
                            format!("{at}.cases[{k}].condition"),
                        );
                        step.cases.push(Case {
                            label: case.label.clone(),
                            steps: case.steps.clone(),
                            condition: c.as_ref().map(condition),
                        });
                        if let Some(c) = c {
                            compiled.push(c);
                        }
                    }
                    step.default_branch = sw.default.clone();
                    cases.insert(i, compiled);
                }
                StepAction::DoWhile(d) => {
                    step.loop_body = d.body.clone();
                    step.loop_max_iterations = d.max_iterations;
                    if let Some(c) = cel(&mut p, &d.condition, format!("{at}.condition")) {
                        step.loop_condition = Some(condition(&c));
                        loops.insert(i, c);
                    }
                }
            }
            steps.push(step);
        }
        if let Some(r) = &self.report {
            template(&mut p, r, "report".to_owned());
        }
        let flow = Flow::new(steps).with_batch_config(self.batch_config.clone());
        for e in validate(&flow) {
            validation_problem(&mut p, self, &e);
        }
        loop_bodies(&mut p, self);
        p.into_result()?;
        let index = self
            .steps
            .iter()
            .enumerate()
            .map(|(i, s)| (s.id.clone(), i))
            .collect();
        Ok(CompiledFlow {
            inner: Arc::new(Inner {
                spec: self.clone(),
                flow,
                index,
                templates,
                whens,
                cases,
                loops,
            }),
        })
    }
}

/// The scheduler's closure over a compiled condition: an evaluation error
/// counts as false there (fail closed); the engine uses the `Result`
/// methods of [`CompiledFlow`] to report it.
fn condition(c: &Arc<Cel>) -> Condition {
    let c = Arc::clone(c);
    Condition::new(move |ctx| c.eval(ctx).unwrap_or(false))
}

/// Copies the problems of a decoder error into `p`.
fn absorb(p: &mut Problems, e: &Error) {
    match e.details().get("problems").and_then(Value::as_array) {
        Some(list) => {
            for item in list {
                let path = item["path"].as_str().unwrap_or(".");
                let message = item["message"].as_str().unwrap_or_default();
                p.add(path, message);
            }
        }
        None => p.add(".", e.message()),
    }
}

/// Finds, in step order, the first path made by `paths` that was not
/// reported yet: with duplicate ids one error per occurrence.
struct Finder<'a> {
    spec: &'a FlowSpec,
    used: HashSet<String>,
}

impl Finder<'_> {
    fn find(
        &mut self,
        id: &str,
        paths: impl Fn(usize, &StepSpec) -> Vec<String>,
    ) -> Option<String> {
        for (i, s) in self
            .spec
            .steps
            .iter()
            .enumerate()
            .filter(|(_, s)| s.id == id)
        {
            if let Some(path) = paths(i, s).into_iter().find(|p| !self.used.contains(p)) {
                self.used.insert(path.clone());
                return Some(path);
            }
        }
        None
    }
}

fn positions(items: &[String], wanted: &str, at: impl Fn(usize) -> String) -> Vec<String> {
    items
        .iter()
        .enumerate()
        .filter(|(_, x)| *x == wanted)
        .map(|(m, _)| at(m))
        .collect()
}

fn validation_problem(p: &mut Problems, spec: &FlowSpec, e: &ValidationError) {
    let mut finder = Finder {
        spec,
        used: p.0.iter().map(|(path, _)| path.clone()).collect(),
    };
    let (path, message) = match e {
        ValidationError::EmptyId { index } => (format!("steps[{index}].id"), e.to_string()),
        ValidationError::DuplicateId { id } => {
            let first = spec.steps.iter().position(|s| &s.id == id).unwrap_or(0);
            let path = spec
                .steps
                .iter()
                .enumerate()
                .skip(first + 1)
                .filter(|(_, s)| &s.id == id)
                .map(|(i, _)| format!("steps[{i}].id"))
                .find(|path| !finder.used.contains(path));
            (
                path.unwrap_or_else(|| "steps".into()),
                format!("duplicate step id {id:?} (steps[{first}] has it)"),
            )
        }
        ValidationError::UnknownDependency { step, dep } => (
            finder
                .find(step, |i, s| {
                    positions(&s.deps, dep, |j| format!("steps[{i}].deps[{j}]"))
                })
                .unwrap_or_else(|| "steps".into()),
            format!("unknown step {dep:?}"),
        ),
        ValidationError::Cycle { steps } => (
            "steps".into(),
            format!("dependency cycle: {}", steps.join(" -> ")),
        ),
        ValidationError::UnknownCaseStep { step, case, target } => (
            finder
                .find(step, |i, s| match &s.action {
                    StepAction::Switch(sw) => sw
                        .cases
                        .iter()
                        .enumerate()
                        .filter(|(_, c)| &c.label == case)
                        .flat_map(|(k, c)| {
                            positions(&c.steps, target, |m| {
                                format!("steps[{i}].cases[{k}].steps[{m}]")
                            })
                        })
                        .collect(),
                    _ => Vec::new(),
                })
                .unwrap_or_else(|| "steps".into()),
            format!("case {case:?} names unknown step {target:?}"),
        ),
        ValidationError::UnknownDefaultBranchStep { target, step } => (
            finder
                .find(step, |i, s| match &s.action {
                    StepAction::Switch(sw) => {
                        positions(&sw.default, target, |m| format!("steps[{i}].default[{m}]"))
                    }
                    _ => Vec::new(),
                })
                .unwrap_or_else(|| "steps".into()),
            format!("the default branch names unknown step {target:?}"),
        ),
        ValidationError::DuplicateCaseLabel { step, label } => (
            finder
                .find(step, |i, s| match &s.action {
                    StepAction::Switch(sw) => sw
                        .cases
                        .iter()
                        .enumerate()
                        .filter(|(_, c)| &c.label == label)
                        .skip(1)
                        .map(|(k, _)| format!("steps[{i}].cases[{k}].label"))
                        .collect(),
                    _ => Vec::new(),
                })
                .unwrap_or_else(|| "steps".into()),
            format!("two cases are labelled {label:?}"),
        ),
        ValidationError::UnknownLoopBodyStep { step, target } => (
            finder
                .find(step, |i, s| match &s.action {
                    StepAction::DoWhile(d) => {
                        positions(&d.body, target, |m| format!("steps[{i}].body[{m}]"))
                    }
                    _ => Vec::new(),
                })
                .unwrap_or_else(|| "steps".into()),
            format!("the loop body names unknown step {target:?}"),
        ),
        ValidationError::CasesOnNonSwitch { step } | ValidationError::LoopOnNonDoWhile { step } => {
            (
                finder
                    .find(step, |i, _| vec![format!("steps[{i}].kind")])
                    .unwrap_or_else(|| "steps".into()),
                e.to_string(),
            )
        }
        ValidationError::ZeroBatchCap => (
            "batch_config.max_concurrent".into(),
            "0, so no batched step could ever run".into(),
        ),
    };
    p.add(path, message);
}

/// A do-while cannot be in its own body, and a step belongs to one loop
/// body at most (its iterations would be counted by two loops).
fn loop_bodies(p: &mut Problems, spec: &FlowSpec) {
    let mut owner: HashMap<&str, &str> = HashMap::new();
    for (i, s) in spec.steps.iter().enumerate() {
        let StepAction::DoWhile(d) = &s.action else {
            continue;
        };
        for (m, b) in d.body.iter().enumerate() {
            let at = format!("steps[{i}].body[{m}]");
            if *b == s.id {
                p.add(at, format!("do_while {:?} cannot be in its own body", s.id));
            } else if let Some(other) = owner.get(b.as_str()) {
                if *other != s.id {
                    p.add(
                        at,
                        format!("step {b:?} is already in the body of do_while {other:?}"),
                    );
                }
            } else {
                owner.insert(b, &s.id);
            }
        }
    }
}

impl CompiledFlow {
    /// The spec it was compiled from.
    pub fn spec(&self) -> &FlowSpec {
        &self.inner.spec
    }

    /// The scheduler's flow: one [`Step`] per spec step in the same order,
    /// conditions attached (an evaluation error counts as false there).
    pub fn flow(&self) -> &Flow {
        &self.inner.flow
    }

    /// The step with this id.
    pub fn step(&self, id: &str) -> Option<&StepSpec> {
        self.inner.index.get(id).map(|&i| &self.inner.spec.steps[i])
    }

    fn index(&self, step: &str) -> Result<usize, Error> {
        self.inner
            .index
            .get(step)
            .copied()
            .ok_or_else(|| Error::not_found_id("step", step))
    }

    /// The step's `when` over `ctx`; true when it has none. An unknown step
    /// is `not_found_id`; an evaluation error or a non-bool value is
    /// `invalid_input` naming the condition's path.
    pub fn when(&self, step: &str, ctx: &Value) -> Result<bool, Error> {
        let i = self.index(step)?;
        match self.inner.whens.get(&i) {
            None => Ok(true),
            Some(c) => c.eval(ctx),
        }
    }

    /// The label of the switch's first true case, `None` when none is (the
    /// default branch runs). Cases are evaluated in order and the first
    /// error stops the choice. A step that is no switch is `invalid_input`.
    pub fn switch_choice(&self, step: &str, ctx: &Value) -> Result<Option<String>, Error> {
        let i = self.index(step)?;
        let StepAction::Switch(sw) = &self.inner.spec.steps[i].action else {
            return Err(not_kind(step, "switch"));
        };
        let compiled = self.inner.cases.get(&i).map_or(&[][..], Vec::as_slice);
        for (case, c) in sw.cases.iter().zip(compiled) {
            if c.eval(ctx)? {
                return Ok(Some(case.label.clone()));
            }
        }
        Ok(None)
    }

    /// The do-while's condition over `ctx` (with `iteration` the number of
    /// iterations done): true to iterate again. The iteration cap is the
    /// scheduler's ([`crate::flow::is_loop_terminated`]), not checked here.
    pub fn loop_continues(&self, step: &str, ctx: &Value) -> Result<bool, Error> {
        let i = self.index(step)?;
        match self.inner.loops.get(&i) {
            Some(c) => c.eval(ctx),
            None => Err(not_kind(step, "do_while")),
        }
    }

    /// Every template of the step rendered over `ctx`. A strict-undefined
    /// or other render failure is `invalid_input` with the template's path
    /// and the details `step` and `field`.
    pub fn render_action(&self, step: &str, ctx: &Value) -> Result<RenderedAction, Error> {
        let i = self.index(step)?;
        let s = &self.inner.spec.steps[i];
        let at = format!("steps[{i}]");
        let r = |field: String| render(&self.inner.templates, &field, Some(step), ctx);
        let opt = |field: &str, v: &Option<String>| -> Result<Option<String>, Error> {
            v.as_ref().map(|_| r(format!("{at}.{field}"))).transpose()
        };
        Ok(match &s.action {
            StepAction::Agent(a) => RenderedAction::Agent {
                agent: a.agent.clone(),
                model: a.model.clone(),
                prompt: r(format!("{at}.prompt"))?,
                access: a.access,
                workdir: opt("workdir", &a.workdir)?,
            },
            StepAction::Command(c) => RenderedAction::Command {
                program: match &c.program {
                    CommandProgram::Argv(argv) => CommandProgram::Argv(
                        (0..argv.len())
                            .map(|k| r(format!("{at}.argv[{k}]")))
                            .collect::<Result<_, _>>()?,
                    ),
                    CommandProgram::Shell(_) => CommandProgram::Shell(r(format!("{at}.shell"))?),
                },
                cwd: opt("cwd", &c.cwd)?,
                env: c
                    .env
                    .keys()
                    .map(|k| Ok((k.clone(), r(format!("{at}.env.{k}"))?)))
                    .collect::<Result<_, Error>>()?,
            },
            StepAction::Code => RenderedAction::Code,
            StepAction::Approval(a) => RenderedAction::Approval {
                message: opt("message", &a.message)?,
            },
            StepAction::Switch(_) => RenderedAction::Switch,
            StepAction::DoWhile(_) => RenderedAction::DoWhile,
        })
    }

    /// The report template rendered over `ctx`; `None` when the spec has
    /// none. A render failure is `invalid_input` at `report`.
    pub fn render_report(&self, ctx: &Value) -> Result<Option<String>, Error> {
        match &self.inner.spec.report {
            None => Ok(None),
            Some(_) => render(&self.inner.templates, "report", None, ctx).map(Some),
        }
    }
}

fn not_kind(step: &str, kind: &str) -> Error {
    Error::invalid_input(format!("step {step:?} is not a {kind} step")).with_detail("step", step)
}
