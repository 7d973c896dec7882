//! The flow engine (feature `runtime`): durable runs of [`FlowSpec`]s —
//! agent, command, code, approval, switch and do-while steps — driven by
//! the incremental [`crate::flow::Scheduler`], every state change one store
//! transaction with its event.
//!
//! # How a run lives
//!
//! [`Engine::start_run`] compiles the spec (CEL conditions and templates
//! included: a bad one is `invalid_input` with its path and nothing is
//! created), then creates the run, one owner row per step (`pending`), the
//! run's **driver** task and `run_updated` in one transaction.
//!
//! A [task worker](crate::worker) serving any engine on the store — the
//! engine's own ([`Engine::start`]) or one shared with the arena
//! ([`Engine::build`] + [`Engine::handler`]) — claims the driver task with
//! a lease and becomes the run's only driver. Driver tasks run in the `driver`
//! lane, which no capacity limits (`[lanes] cloud = N` caps contestants, never
//! how many runs are driven). It rebuilds the scheduler from the step rows
//! ([`crate::flow::Scheduler::restore`]: no switch re-evaluated, no loop
//! counter reset, no finished step re-run), then moves data: ready steps are
//! started (their row `running`, attempt counted, deadline persisted, in one
//! transaction with `step_updated`), run as tokio tasks (agent turns through
//! the [`Registry`], commands as process groups, native callables), and their
//! endings fed back to the scheduler, whose consequences (newly ready steps,
//! skips with their reasons, a switch's choice, a loop's next iteration) are
//! written in one transaction per ending. Every write is fenced by the driver's
//! lease ([`Store::record_changes`]): a driver that lost its lease stops its
//! steps and writes nothing.
//!
//! - **Timeouts** are real timers on the persisted `deadline_at`; a timed
//!   out attempt is cancelled (its process group killed) and awaited
//!   before a retry starts.
//! - **Retries** follow the step's `retry` (`on: [failure, timeout]`):
//!   exponential backoff with a jitter seeded by run, step and attempt,
//!   persisted as the step's `available_at`.
//! - **Failures** let the trigger rules decide: a failed step fails the run
//!   only when nothing can run any more and a leaf step (one nothing
//!   depends on) did not succeed.
//! - **Approvals** wait (`waiting`; the run is `waiting` when nothing else
//!   runs) until [`Engine::approve`] / [`Engine::reject`] — from any
//!   process on the store — decide.
//! - **Cancel** ([`Engine::cancel`]) marks the run and every step not yet
//!   final `cancelled` in one transaction (the steps' `step_updated`
//!   before the run's `run_updated`); its driver then stops the running
//!   steps' processes. Every driver write checks that the run is still
//!   live, so a driver that has not seen the cancel yet changes nothing.
//! - **Crashes**: the driver's lease expires and another engine (or this
//!   one restarted) claims it, rebuilds, and starts interrupted attempts
//!   again as new attempts (a crash does not use up the retry budget).
//!
//! - **Orphans**: every process a step starts carries
//!   `CODERIG_ATTEMPT=<run>/<step>/<iteration>/<attempt>`; after a crash
//!   the next driver on the host kills what is left of the interrupted
//!   attempt before it starts the next one.
//!
//! - **Sandbox**: a command step runs in the sandbox of
//!   [`crate::flow::command`] — writable only its `cwd` and a private
//!   `TMPDIR`, no network but its own loopback — widened or narrowed by
//!   its `sandbox:`, under its `sandbox.mode` or else the registry's
//!   ([`Registry::sandbox_mode`]). Its paths are checked by
//!   [`Engine::start_run`]. What each attempt's sandbox enforced is stored
//!   with the attempt ([`data::AttemptRecord::sandbox`]); an attempt that
//!   ran with part of it not enforced (`auto` fell back, or `off`) says so
//!   in the `step_updated` of its ending too (its `sandbox` summary). An
//!   `enforce` refusal fails the attempt with `unavailable` before
//!   anything starts.
//!
//! Artifacts go under `<data_dir>/runs/<run_id>/`: per step
//! `<step_id>/output.txt` (and a command's `stderr.txt`), and the run's
//! rendered `report.md`.

mod artifacts;
mod context;
pub use context::{CodeContext, StepState};
pub mod data;
mod driver;
mod exec;
mod finish;
mod orphans;
mod retry;
pub mod view;
mod worker;

pub use view::{RunFilter, RunPage, RunSummary, RunView, StepView};

use crate::agent::Registry;
use crate::bus::EventBus;
use crate::error::Error;
use crate::event::{Event, RunStatus, RunUpdated, StepUpdated};
use crate::flow::runspec::{CompiledFlow, FlowSpec, StepAction};
use crate::flow::StepStatus;
use crate::store::{
    NewEvent, NewOwner, NewWork, OwnerKind, OwnerRef, Store, Target, TaskSpec, Transition,
    WorkFilter, WorkKind,
};
use crate::worker::{TaskHandler, TaskSet, TaskWorker, WorkerConfig};
use data::{
    driver_owner_id, driver_task_id, encode, now_ms, step_owner_id, ApprovalRecord, RunData,
    StepData, LIVE_RUN,
};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// A native `code` step: a Rust closure, or a Python or Node callable
/// behind a binding.
///
/// It gets the context `{input, results, steps, iteration}` where
/// `results` and `steps` hold the step's own dependencies (templates and
/// conditions see every step), and a token cancelled when the step times
/// out or the run is cancelled. Its `Ok` value is the step's result; an
/// `Err` fails the attempt (retried by the step's policy).
#[async_trait::async_trait]
pub trait CodeStep: Send + Sync {
    /// Runs one attempt.
    async fn call(&self, ctx: Value, cancel: CancellationToken) -> Result<Value, Error>;
}

struct CodeFn<F>(F);

#[async_trait::async_trait]
impl<F, Fut> CodeStep for CodeFn<F>
where
    F: Fn(Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, Error>> + Send + 'static,
{
    async fn call(&self, ctx: Value, _cancel: CancellationToken) -> Result<Value, Error> {
        (self.0)(ctx).await
    }
}

/// A [`CodeStep`] from an async closure (it is dropped, not awaited to its
/// end, when the step is cancelled).
pub fn code_fn<F, Fut>(f: F) -> Arc<dyn CodeStep>
where
    F: Fn(Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, Error>> + Send + 'static,
{
    Arc::new(CodeFn(f))
}

/// Callables of a run's `code` steps, by step id.
pub type CodeSteps = HashMap<String, Arc<dyn CodeStep>>;

/// How an [`Engine`] runs.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Artifacts go under `<data_dir>/runs/`.
    pub data_dir: PathBuf,
    /// Commands' `cwd` and agents' `workdir` must lie under one of these
    /// (canonical). Empty: no confinement (library use; the server sets
    /// it).
    pub project_roots: Vec<PathBuf>,
    /// Its own worker's name in the store (a shared worker has its own,
    /// [`WorkerConfig::name`]).
    pub worker: String,
    /// The driver lease's length when its own worker claims (30 s by
    /// default); heartbeats every third
    /// ([`crate::worker::heartbeat_interval`]).
    pub lease_ttl: Duration,
    /// How often its own worker looks for runs when nothing wakes it.
    pub poll: Duration,
    /// At most this many runs driven by this process at once.
    pub max_runs: u32,
    /// Run a worker of its own in [`Engine::start`] (false: this handle
    /// creates, reads, cancels and approves runs; another process — or a
    /// shared worker given [`Engine::handler`] — drives them).
    pub run_worker: bool,
    /// Flows registered by name (`--flows DIR`).
    pub flows: Vec<FlowSpec>,
    /// Each run this handle starts is added here before it is created
    /// (the scope of a worker that claims only its own process's work:
    /// [`crate::worker::WorkScope`]).
    pub scope: Option<crate::worker::WorkScope>,
}

impl EngineConfig {
    /// The defaults for a data directory.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        EngineConfig {
            data_dir: data_dir.into(),
            project_roots: Vec::new(),
            worker: worker::default_worker_name(),
            lease_ttl: crate::store::DEFAULT_LEASE_TTL,
            poll: Duration::from_millis(500),
            max_runs: 64,
            run_worker: true,
            flows: Vec::new(),
            scope: None,
        }
    }
}

/// Where a run's spec comes from.
#[derive(Debug, Clone)]
pub enum FlowSource {
    /// A flow registered with the engine ([`EngineConfig::flows`]).
    Named(String),
    /// An inline spec.
    Spec(FlowSpec),
}

/// A run to start.
#[derive(Clone)]
pub struct NewRun {
    /// The flow.
    pub flow: FlowSource,
    /// Its input (`input` of templates and conditions); an object or null.
    pub input: Value,
    /// Callables of its `code` steps (every code step needs one).
    pub code: CodeSteps,
}

impl NewRun {
    /// A run of `spec` with `input` and no code steps.
    pub fn spec(spec: FlowSpec, input: Value) -> Self {
        NewRun {
            flow: FlowSource::Spec(spec),
            input,
            code: HashMap::new(),
        }
    }

    /// A run of the registered flow `name` with `input`.
    pub fn named(name: impl Into<String>, input: Value) -> Self {
        NewRun {
            flow: FlowSource::Named(name.into()),
            input,
            code: HashMap::new(),
        }
    }

    /// The same run with the callable of code step `step`.
    pub fn code(mut self, step: impl Into<String>, code: Arc<dyn CodeStep>) -> Self {
        self.code.insert(step.into(), code);
        self
    }
}

/// Who decided an approval, and why: what every face's approve and reject
/// take (the body of `POST .../approve`, `run.approve(step, decision)`),
/// decoded strictly — an unknown key is refused.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Decision {
    /// Who decides (free text, recorded).
    #[serde(default)]
    pub by: Option<String>,
    /// Why (recorded; a rejection's error message carries it).
    #[serde(default)]
    pub comment: Option<String>,
}

pub(crate) struct Inner {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) registry: Registry,
    pub(crate) bus: Arc<EventBus>,
    pub(crate) config: EngineConfig,
    pub(crate) flows: BTreeMap<String, CompiledFlow>,
    /// Callables by run id (the runs this process started with code).
    pub(crate) code: Mutex<HashMap<String, Arc<CodeSteps>>>,
    /// The drivers this process runs now (whichever worker claimed them).
    pub(crate) tasks: TaskSet,
}

/// The flow engine: one handle per process (server, CLI, `Rig`), cheap to
/// clone. See the [module docs](self).
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
    /// Its own worker ([`Engine::start`]); `None` without one.
    worker: Option<TaskWorker>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("worker", &self.inner.config.worker)
            .finish()
    }
}

fn random_hex(bytes: usize) -> String {
    use rand_pcg::rand_core::{RngCore, SeedableRng};
    let seed = (now_ms() as u64) ^ (u64::from(std::process::id()) << 32) ^ counter();
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
    let mut buf = vec![0u8; bytes];
    rng.fill_bytes(&mut buf);
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

fn counter() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed)
}

impl Engine {
    /// Starts an engine on `store`: everything [`Engine::build`] does,
    /// then — unless [`EngineConfig::run_worker`] is false — a
    /// [`TaskWorker`] of its own with the engine as its one handler (named
    /// `config.worker`, leases of `config.lease_ttl`, polling every
    /// `config.poll`). To share one worker with the arena, use
    /// [`Engine::build`] and [`Engine::handler`] instead.
    pub async fn start(
        store: Arc<dyn Store>,
        registry: Registry,
        bus: Arc<EventBus>,
        config: EngineConfig,
    ) -> Result<Engine, Error> {
        let mut engine = Engine::build(store.clone(), registry, bus.clone(), config).await?;
        let c = &engine.inner.config;
        if c.run_worker {
            let worker = WorkerConfig {
                name: c.worker.clone(),
                lease_ttl: c.lease_ttl,
                poll: c.poll,
                scope: c.scope.clone(),
            };
            engine.worker = Some(TaskWorker::start(
                store,
                bus,
                worker,
                vec![engine.handler()],
            ));
        }
        Ok(engine)
    }

    /// Builds an engine on `store` without a worker of its own: compiles
    /// the registered flows (a bad one is `invalid_input` naming it) and
    /// creates the data directory. Its runs are driven once
    /// [`Engine::handler`] is given to a [`TaskWorker`] (one shared with
    /// the arena: see [`crate::worker`]), or by another process.
    pub async fn build(
        store: Arc<dyn Store>,
        registry: Registry,
        bus: Arc<EventBus>,
        config: EngineConfig,
    ) -> Result<Engine, Error> {
        std::fs::create_dir_all(config.data_dir.join("runs")).map_err(|e| {
            Error::io(format!(
                "cannot create {}: {e}",
                config.data_dir.join("runs").display()
            ))
        })?;
        let mut flows = BTreeMap::new();
        for spec in &config.flows {
            let Some(name) = spec.name.clone() else {
                return Err(Error::invalid_input(
                    "a registered flow needs a `name` (runs name it in POST /api/runs)",
                ));
            };
            let compiled = spec
                .compile()
                .map_err(|e| Error::invalid_input(format!("flow {name:?}: {e}")))?;
            if flows.insert(name.clone(), compiled).is_some() {
                return Err(Error::invalid_input(format!(
                    "two registered flows are named {name:?}"
                )));
            }
        }
        let inner = Arc::new(Inner {
            store,
            registry,
            bus,
            config,
            flows,
            code: Mutex::new(HashMap::new()),
            tasks: TaskSet::new(),
        });
        Ok(Engine {
            inner,
            worker: None,
        })
    }

    /// The engine as a [`TaskHandler`] (run drivers: tasks of step owners
    /// in the `driver` lane, at most `config.max_runs` at once; runs whose
    /// driver can never run again failed every 5 s), for a worker shared
    /// with other runtimes: `TaskWorker::start(store, bus, config,
    /// vec![engine.handler(), arena.handler()])`. Build the engine with
    /// [`Engine::build`] so that no second worker claims its drivers.
    pub fn handler(&self) -> Arc<dyn TaskHandler> {
        Arc::new(worker::EngineHandler(self.inner.clone()))
    }

    /// The registered flows, by name.
    pub fn flows(&self) -> Vec<FlowSpec> {
        self.inner
            .flows
            .values()
            .map(|c| c.spec().clone())
            .collect()
    }

    /// The store this engine works on.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.inner.store
    }

    /// Creates a run (see the [module docs](self)) and returns its id.
    /// `invalid_input` (nothing created) for a bad spec, an unknown flow
    /// name, an input that is not an object, an agent step naming an
    /// unknown identity, a code step without a callable, or a command
    /// step's `sandbox` naming a path that does not exist, or a writable
    /// path outside [`EngineConfig::project_roots`] (when there are any),
    /// each with its path (`steps[2].sandbox.writable[0]`).
    pub async fn start_run(&self, run: NewRun) -> Result<String, Error> {
        let compiled = match &run.flow {
            FlowSource::Named(name) => self.inner.flows.get(name).cloned().ok_or_else(|| {
                Error::invalid_input(format!(
                    "no flow named {name:?} is registered (known: {})",
                    self.inner
                        .flows
                        .keys()
                        .map(|k| format!("{k:?}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
                .with_detail("path", "flow")
            })?,
            FlowSource::Spec(spec) => spec.compile()?,
        };
        let input = match &run.input {
            Value::Null => json!({}),
            Value::Object(_) => run.input.clone(),
            other => {
                return Err(Error::invalid_at(
                    "input",
                    format!("the input must be an object, got {other}"),
                ))
            }
        };
        let mut problems = Vec::new();
        let known = self.inner.registry.identities();
        let mut code_steps = Vec::new();
        for (i, step) in compiled.spec().steps.iter().enumerate() {
            match &step.action {
                StepAction::Agent(a) if !known.contains(&a.agent) => problems.push(json!({
                    "path": format!("steps[{i}].agent"),
                    "message": format!("no agent {:?} is configured (known: {})", a.agent, known.join(", ")),
                })),
                StepAction::Command(c) => {
                    // The sandbox's paths: absolute, existing, writable
                    // ones under the project roots (when the engine has
                    // some) — refused here, before anything is written.
                    let at = format!("steps[{i}].sandbox");
                    let roots = &self.inner.config.project_roots;
                    let roots = (!roots.is_empty()).then_some(roots.as_slice());
                    if let Err(e) = c.sandbox.validate(&at, roots) {
                        let path = e.details().get("path").cloned().unwrap_or(json!(at));
                        problems.push(json!({"path": path, "message": e.message()}));
                    }
                }
                StepAction::Code => {
                    code_steps.push(step.id.clone());
                    if !run.code.contains_key(&step.id) {
                        problems.push(json!({
                            "path": format!("steps[{i}]"),
                            "message": format!("code step {:?} has no callable: pass one for it (code={{{:?}: ...}}); code steps run only through the Rust, Python and Node APIs", step.id, step.id),
                        }));
                    }
                }
                _ => {}
            }
        }
        for name in run.code.keys() {
            if !code_steps.contains(name) {
                problems.push(json!({
                    "path": format!("code.{name}"),
                    "message": format!("{name:?} is no code step of this flow"),
                }));
            }
        }
        if let Some(first) = problems.first() {
            let message = problems
                .iter()
                .map(|p| {
                    format!(
                        "`{}`: {}",
                        p["path"].as_str().unwrap_or(""),
                        p["message"].as_str().unwrap_or("")
                    )
                })
                .collect::<Vec<_>>()
                .join("; ");
            return Err(Error::invalid_input(message)
                .with_detail("path", first["path"].clone())
                .with_detail("problems", Value::Array(problems)));
        }

        let run_id = random_hex(16);
        let spec = compiled.spec();
        let data = RunData {
            name: spec.name.clone(),
            spec: spec.to_json(),
            input,
            code_steps,
            report: None,
            error: None,
            finished_at: None,
        };
        let mut owners = Vec::with_capacity(spec.steps.len() + 1);
        owners.push(NewOwner {
            id: driver_owner_id(&run_id),
            kind: OwnerKind::Step,
            status: "driver".into(),
            data: json!({"role": "driver"}),
        });
        for step in &spec.steps {
            owners.push(NewOwner {
                id: step_owner_id(&run_id, &step.id),
                kind: OwnerKind::Step,
                status: StepStatus::Pending.as_str().into(),
                data: encode(&StepData {
                    step_id: step.id.clone(),
                    kind: step.action.kind().into(),
                    ..StepData::default()
                }),
            });
        }
        let driver = TaskSpec::new(
            driver_task_id(&run_id),
            OwnerRef {
                kind: OwnerKind::Step,
                id: driver_owner_id(&run_id),
            },
            crate::task::Lane::Driver,
        )
        .with_max_rescues(worker::DRIVER_MAX_RESCUES);
        if !run.code.is_empty() {
            self.inner
                .code
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(run_id.clone(), Arc::new(run.code.clone()));
        }
        let event = NewEvent::from_event(&Event::RunUpdated(RunUpdated {
            run_id: run_id.clone(),
            status: RunStatus::Running,
            error: None,
        }))?;
        if let Some(scope) = &self.inner.config.scope {
            scope.add(&run_id);
        }
        let created = self
            .inner
            .store
            .create_work(NewWork {
                id: run_id.clone(),
                kind: WorkKind::Run,
                status: RunStatus::Running.as_str().into(),
                data: encode(&data),
                owners,
                tasks: vec![driver],
                event,
            })
            .await;
        if let Err(e) = created {
            self.inner
                .code
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&run_id);
            return Err(e);
        }
        self.inner.bus.notify();
        self.inner.tasks.wake();
        Ok(run_id)
    }

    /// The run `id` with its steps (`not_found_id` when there is none).
    pub async fn run(&self, id: &str) -> Result<RunView, Error> {
        let snapshot = self
            .inner
            .store
            .work(id)
            .await
            .map_err(|e| not_a_run(e, id))?;
        if snapshot.work.kind != WorkKind::Run {
            return Err(Error::not_found_id("run", id));
        }
        view::run_view(&snapshot)
    }

    /// A page of runs, newest first.
    pub async fn list_runs(&self, filter: &RunFilter) -> Result<RunPage, Error> {
        let mut f = WorkFilter::new(WorkKind::Run);
        if let Some(status) = filter.status {
            f = f.statuses(&[status.as_str()]);
        }
        if let Some(limit) = filter.limit {
            f = f.limit(limit);
        }
        if let Some(cursor) = &filter.cursor {
            f = f.cursor(cursor.clone());
        }
        let page = self.inner.store.list_works(&f).await?;
        Ok(RunPage {
            runs: page
                .works
                .iter()
                .map(view::run_summary)
                .collect::<Result<_, _>>()?,
            next_cursor: page.next_cursor,
        })
    }

    /// Cancels a live run: it becomes `cancelled` now, and so does every
    /// step of it that is not final (`pending`, `running`, `waiting`), in
    /// one transaction — the steps' `step_updated` first, the run's
    /// `run_updated` last — so the first read after this returns shows no
    /// live step. The running steps' processes may still be dying: the
    /// run's driver stops them (and, when the driver died, the next engine
    /// to take it kills what is left on its host). `conflict` when the run
    /// already ended, `not_found_id` when there is none.
    pub async fn cancel(&self, id: &str) -> Result<RunView, Error> {
        let view = self.run(id).await?;
        if !LIVE_RUN.contains(&view.status.as_str()) {
            return Err(finished_run(Error::conflict("ended"), id));
        }
        finish::finish_run(&self.inner, id, RunStatus::Cancelled, None)
            .await
            .map_err(|e| finished_run(e, id))?;
        self.run(id).await
    }

    /// Approves the approval step `step` of run `run`, which must be
    /// `waiting` (`conflict` otherwise; `not_found_id` for an unknown run
    /// or step): the step is `done` with the decision as its output.
    pub async fn approve(
        &self,
        run: &str,
        step: &str,
        decision: Decision,
    ) -> Result<StepView, Error> {
        self.decide(run, step, true, decision).await
    }

    /// Rejects the approval step: it `failed` (the trigger rules decide
    /// what runs next), with the decision recorded.
    pub async fn reject(
        &self,
        run: &str,
        step: &str,
        decision: Decision,
    ) -> Result<StepView, Error> {
        self.decide(run, step, false, decision).await
    }

    async fn decide(
        &self,
        run: &str,
        step: &str,
        approved: bool,
        decision: Decision,
    ) -> Result<StepView, Error> {
        let view = self.run(run).await?;
        if view.step(step).is_none() {
            return Err(Error::not_found_id("step", step).with_detail("run_id", run));
        }
        let owner_id = step_owner_id(run, step);
        let owner = self.inner.store.owner(&owner_id).await?;
        let mut d: StepData = data::decode("step", &owner_id, &owner.data)?;
        if d.kind != "approval" {
            return Err(Error::conflict(format!(
                "step {step:?} is a {} step, not an approval",
                d.kind
            )));
        }
        if owner.status != StepStatus::Waiting.as_str() {
            return Err(Error::conflict(format!(
                "step {step:?} is {}, not waiting for a decision",
                owner.status
            ))
            .with_detail("status", owner.status.clone()));
        }
        let now = self.inner.store.clock_ms().await?;
        let record = ApprovalRecord {
            approved,
            by: decision.by.clone(),
            comment: decision.comment.clone(),
            at: now,
        };
        d.approval = Some(record.clone());
        d.output = Some(encode(&record));
        d.finished_at = Some(now);
        let status = if approved {
            StepStatus::Done
        } else {
            StepStatus::Failed
        };
        let error = (!approved).then(|| {
            let who = decision.by.as_deref().unwrap_or("someone");
            let mut msg = format!("rejected by {who}");
            if let Some(c) = &decision.comment {
                msg.push_str(&format!(": {c}"));
            }
            Error::conflict(msg).with_detail("rejected", true).to_json()
        });
        d.error = error.clone();
        let event = NewEvent::from_event(&Event::StepUpdated(StepUpdated {
            run_id: run.to_string(),
            step_id: step.to_string(),
            status,
            attempt: d.attempt,
            skip_reason: None,
            error,
            sandbox: None,
        }))?;
        self.inner
            .store
            .transition(Transition {
                target: Target::Owner(owner_id),
                from: vec![StepStatus::Waiting.as_str().into()],
                to: status.as_str().into(),
                data: Some(encode(&d)),
                event: Some(event),
            })
            .await?;
        self.inner.bus.notify();
        let view = self.run(run).await?;
        view.step(step)
            .cloned()
            .ok_or_else(|| Error::not_found_id("step", step))
    }

    /// Waits until run `id` is finished — by the [`Watch`] end rule: its
    /// final `run_updated`, with every step final in the same transaction —
    /// or `timeout` passes, and returns the run as it stands then.
    ///
    /// Reads the run's history once and the run itself once more at the
    /// end, never per event (a read is the whole run, n step rows decoded:
    /// a read per `step_updated` made waiting on an n-step run O(n²),
    /// `benches/RESULTS-flow.md`). After the bus was shut down it returns
    /// the run as it is. `not_found_id` for an unknown run.
    ///
    /// [`Watch`]: crate::watch::Watch
    pub async fn wait(&self, id: &str, timeout: Option<Duration>) -> Result<RunView, Error> {
        let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
        let mut watch =
            crate::watch::Watch::new(&self.inner.bus, crate::watch::Subject::Run(id.to_owned()));
        match watch.until_end(deadline).await {
            Ok(_) => {}
            Err(e) if e.kind() == crate::ErrorKind::Unavailable => {}
            Err(e) => return Err(e),
        }
        self.run(id).await
    }

    /// The runs this process drives now, sorted.
    pub fn driving(&self) -> Vec<String> {
        self.inner.tasks.works()
    }

    /// Stops its worker (its own, when [`Engine::start`] made one) and
    /// every driver of this process ([`crate::worker::StopReason::Shutdown`]):
    /// running steps are cancelled (their processes killed) and the runs
    /// left to be resumed by lease (another engine, or this one
    /// restarted); waits up to `grace` for them to end. On a handle
    /// without its own worker only the engine's drivers stop, and the
    /// shared worker claims none for it any more.
    pub async fn shutdown(&self, grace: Duration) {
        match &self.worker {
            Some(worker) => worker.shutdown(grace).await,
            None => self.inner.tasks.shutdown(grace).await,
        }
    }
}

fn not_a_run(e: Error, id: &str) -> Error {
    if e.kind() == crate::ErrorKind::NotFoundId {
        Error::not_found_id("run", id)
    } else {
        e
    }
}

fn finished_run(e: Error, id: &str) -> Error {
    if e.kind() == crate::ErrorKind::Conflict {
        Error::conflict(format!(
            "run {id:?} already ended; only a live run can be cancelled"
        ))
    } else {
        e
    }
}
