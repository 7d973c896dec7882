//! `coderig.Rig`: a core [`coderig::rig::Rig`] opened on first use, and
//! the turns of its agents.
//!
//! Thin: `Registry::open` chooses where the agents come from (`config=`,
//! `agents=`, else `./coderig.toml` when it exists), `TurnOptions` decodes
//! `run_turn`'s keyword arguments (converted to a JSON object), the core's
//! duration decoder reads every duration argument, and the core's
//! [`resolve_project_roots`](coderig::rig::resolve_project_roots) resolves
//! the project roots when the `Rig` is made (`args.rs`), so a bad value gets
//! the core's message with its path (`` `idle_timeout`: ... ``,
//! `project_roots[1]`), as in every face.
//!
//! The runtime is the core's: a `Rig` keeps the [`RigConfig`] it will open
//! and, from its first runtime call on (`start_battle`, `battle`,
//! `battles`, `leaderboard`, `run_flow`, `run`, `runs`), the core
//! [`CoreRig`] [`CoreRig::open`] made of it on the module's one tokio
//! runtime — store, bus, arena and flow engine opened once, by the core.
//! Every `Battle` and `Run` holds a clone of it and its id. Turns need no
//! store: they run on the config's agents (the same registry the opened
//! rig shares) whether the runtime was opened or not.
//!
//! At interpreter exit an `atexit` hook runs [`CoreRig::shutdown`] of every
//! rig that was opened (engine, arena, their agent turns, bus, in the
//! core's order), then `Registry::shutdown` of every registry that still
//! has turns running (a `Rig` that never opened its runtime): their agents
//! are cancelled and waited for (at most `DEFAULT_SHUTDOWN_GRACE` in all),
//! so no agent process group outlives the interpreter.

mod args;

pub use crate::helpers::duration;

use crate::battle::Battle;
use crate::blocking::call;
use crate::blocking::{block_on, runtime};
use crate::helpers::finite;
use crate::helpers::to_dict;
use crate::helpers::{fspath, name, object, to_json, to_py_err};
use crate::run::{code_steps, flow_spec, Run};
use crate::turn::Turn;
use args::{db_arg, path_arg};
use coderig::agent::{Registry, TurnOptions, DEFAULT_PROBE_TIMEOUT, DEFAULT_SHUTDOWN_GRACE};
use coderig::arena::runner::BattleFilter;
use coderig::event::RunStatus;
use coderig::flow::engine::{NewRun, RunFilter};
use coderig::rig::{Rig as CoreRig, RigConfig, RigOptions};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;
use tokio::sync::OnceCell;

/// Registers `Rig`, `Turn`, `TurnEvents`, `Battle`, `BattleEvents`, `Run`
/// and `RunEvents`, and the exit hook.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Rig>()?;
    crate::battle::register(m)?;
    crate::run::register(m)?;
    m.add_class::<Turn>()?;
    m.add_class::<crate::turn::TurnEvents>()?;
    let hook = wrap_pyfunction!(shutdown_at_exit, m)?;
    m.py().import("atexit")?.call_method1("register", (hook,))?;
    Ok(())
}

/// Every core rig a `Rig` opened: the exit hook shuts each down.
static OPENED: Mutex<Vec<CoreRig>> = Mutex::new(Vec::new());

/// The configs of the `Rig`s, for their agents' turns: each kept while a
/// `Rig` refers to it or one of its turns runs (a turn whose `Rig` and
/// `Turn` were dropped still runs, and still must not outlive the
/// interpreter).
static LIVE: Mutex<Vec<Arc<RigConfig>>> = Mutex::new(Vec::new());

fn lock<T>(list: &'static Mutex<Vec<T>>) -> MutexGuard<'static, Vec<T>> {
    list.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The `atexit` hook: shuts every opened rig down (its engine, arena,
/// agent turns and bus), cancels every other running turn, then waits (GIL
/// released, at most `DEFAULT_SHUTDOWN_GRACE` in all) until they ended.
#[pyfunction]
fn shutdown_at_exit(py: Python<'_>) {
    let deadline = Instant::now() + DEFAULT_SHUTDOWN_GRACE;
    let rigs: Vec<CoreRig> = lock(&OPENED).drain(..).collect();
    let registries: Vec<Registry> = lock(&LIVE)
        .drain(..)
        .filter(|config| config.agents.running_turns() > 0)
        .map(|config| config.agents.clone())
        .collect();
    if rigs.is_empty() && registries.is_empty() {
        return;
    }
    registries.iter().for_each(Registry::cancel_all);
    py.detach(|| {
        runtime().block_on(async {
            for rig in &rigs {
                rig.shutdown(deadline.saturating_duration_since(Instant::now()))
                    .await;
            }
            for registry in &registries {
                registry
                    .shutdown(deadline.saturating_duration_since(Instant::now()))
                    .await;
            }
        })
    });
}

/// The agents of a rig, their turns, and its runtime (battles and runs).
#[pyclass(module = "coderig", frozen)]
pub struct Rig {
    /// What the first runtime call opens; its agents run the turns.
    config: Arc<RigConfig>,
    /// The runtime, opened by the first runtime call.
    rig: OnceCell<CoreRig>,
    /// The `data_dir` given, for its getter.
    data_dir: Option<PathBuf>,
    /// The `coderig.toml` the agents came from.
    config_file: Option<PathBuf>,
}

impl Rig {
    /// The core rig, opened on first use on the module's runtime (GIL
    /// released meanwhile) and listed for the exit hook.
    fn rig(&self, py: Python<'_>) -> PyResult<CoreRig> {
        if let Some(rig) = self.rig.get() {
            if rig.is_shut_down() {
                return Err(to_py_err(coderig::Error::unavailable(
                    "this Rig is closed: open a new Rig for more battles and runs",
                )));
            }
            return Ok(rig.clone());
        }
        let rig = call(
            py,
            self.rig.get_or_try_init(|| async {
                let rig = CoreRig::open((*self.config).clone()).await?;
                lock(&OPENED).push(rig.clone());
                Ok(rig)
            }),
        )?;
        Ok(rig.clone())
    }

    /// The agents (the registry the opened rig shares).
    fn registry(&self) -> &Registry {
        &self.config.agents
    }
}

#[pymethods]
impl Rig {
    /// `config`: a `coderig.toml` path; `agents`: the JSON form of its
    /// `agents` table (`{"alice": {"kind": "scripted", "script": [...]}}`);
    /// not both. With neither, `./coderig.toml` when it exists, else no
    /// agents. A bad file or table is an `InvalidInputError` naming the key
    /// (`agents.alice.kind`); an unreadable file an `IoError`.
    ///
    /// Battles keep their state in the store `db` names (a
    /// `postgres://…` URL, or an SQLite file), by default
    /// `<data_dir>/coderig.db` with `data_dir` defaulting to `./.coderig`;
    /// it is opened by the first battle or run call, not here.
    /// `project_roots`: coding battles' projects, command steps' `cwd` and
    /// agent steps' `workdir` must lie under one of these directories (each
    /// must be one: else `InvalidInputError` at `project_roots[i]`); none
    /// given: the current directory (the core's policy, resolved now). `sandbox`: the mode every process the rig
    /// starts runs under — `"enforce"` (default: refuse what the kernel
    /// cannot confine), `"auto"` or `"off"` — or the `[sandbox]` table as a
    /// dict (`{"mode": "auto"}`); it replaces the config file's.
    #[new]
    #[pyo3(signature = (data_dir=None, db=None, config=None, agents=None, project_roots=None, sandbox=None))]
    fn new(
        py: Python<'_>,
        data_dir: Option<&Bound<'_, PyAny>>,
        db: Option<&Bound<'_, PyAny>>,
        config: Option<&Bound<'_, PyAny>>,
        agents: Option<&Bound<'_, PyAny>>,
        project_roots: Option<&Bound<'_, PyAny>>,
        sandbox: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let data_dir = path_arg(data_dir, "data_dir")?;
        let json = |value: Option<&Bound<'_, PyAny>>, at: &str| -> PyResult<Option<Value>> {
            value
                .filter(|v| !v.is_none())
                .map(|v| to_json(v, at))
                .transpose()
        };
        let given = RigOptions {
            data_dir: data_dir.clone(),
            db: db_arg(db)?,
            config: path_arg(config, "config")?,
            agents: json(agents, "agents")?,
            project_roots: Some(args::project_roots(project_roots)?),
            sandbox: json(sandbox, "sandbox")?,
        };
        // It may read a file: the GIL is released.
        let (config, config_file) = py.detach(|| given.into_config()).map_err(to_py_err)?;
        let config = Arc::new(config);
        let mut live = lock(&LIVE);
        live.retain(|c| Arc::strong_count(c) > 1 || c.agents.running_turns() > 0);
        live.push(config.clone());
        drop(live);
        Ok(Rig {
            config,
            rig: OnceCell::new(),
            data_dir,
            config_file,
        })
    }

    /// The project roots, canonical: the ones given, or the current
    /// directory when none were (the core's policy).
    #[getter]
    fn project_roots(&self) -> Vec<PathBuf> {
        self.config.project_roots.clone()
    }

    /// Starts a battle and returns its `Battle` at once (it runs in the
    /// background, on this rig's arena). The spec is DESIGN's `BattleSpec`
    /// JSON: as keyword arguments (`battle_type=`, `prompt=`, `project=`,
    /// `base=`, `contestants=`, `judge=`, `oracle=`, `contestant_timeout=`,
    /// `keep_worktrees=`), as one dict, or both (a key given twice is a
    /// `TypeError`). It is decoded by the core's strict decoder: a bad spec
    /// is an `InvalidInputError` whose `.path` names the field
    /// (`contestants[1].model`), and nothing is created. `project` may be
    /// an `os.PathLike`; a relative one is taken from the current
    /// directory.
    #[pyo3(signature = (spec=None, **kwargs))]
    fn start_battle(
        &self,
        py: Python<'_>,
        spec: Option<&Bound<'_, PyAny>>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Battle> {
        let spec = args::battle_spec(py, spec, kwargs)?;
        let rig = self.rig(py)?;
        let view = call(py, rig.arena().start_battle(spec))?;
        Ok(Battle::new(rig, view.id))
    }

    /// The `Battle` of an existing battle id (any battle of the store,
    /// whichever process started it). `NotFoundIdError` when there is none.
    fn battle(&self, py: Python<'_>, id: String) -> PyResult<Battle> {
        let rig = self.rig(py)?;
        let view = call(py, rig.arena().battle(&id))?;
        Ok(Battle::new(rig, view.id))
    }

    /// One page of battles, newest first, as `{"battles": [BattleView
    /// dicts], "next_cursor": str | None}` (pass `next_cursor` as `cursor`
    /// for the next page). `project` (a path) and `status` (`running`,
    /// `judging`, `completed`, `failed`, `cancelled`) filter; `limit` is
    /// 1–500 (default 50).
    #[pyo3(signature = (project=None, status=None, limit=None, cursor=None))]
    fn battles(
        &self,
        py: Python<'_>,
        project: Option<&Bound<'_, PyAny>>,
        status: Option<&str>,
        limit: Option<u32>,
        cursor: Option<String>,
    ) -> PyResult<Py<PyAny>> {
        let filter = BattleFilter {
            project: path_arg(project, "project")?.map(|p| p.display().to_string()),
            status: status.map(name).transpose()?,
            limit,
            cursor,
        };
        let rig = self.rig(py)?;
        let page = call(py, rig.arena().list_battles(&filter))?;
        to_dict(py, &page)
    }

    /// Bradley–Terry ratings over completed battles with a winner: a list
    /// of boards `{"battle_type", "n_battles", "entries": [{"name":
    /// "identity/model", "score", "ci_low", "ci_high", "n_battles"}]}`,
    /// best first, one per battle type (only `battle_type`'s when given),
    /// of one `project` when given.
    #[pyo3(signature = (battle_type=None, project=None))]
    fn leaderboard(
        &self,
        py: Python<'_>,
        battle_type: Option<&str>,
        project: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let battle_type = battle_type.map(name).transpose()?;
        let project = path_arg(project, "project")?.map(|p| p.display().to_string());
        let rig = self.rig(py)?;
        let boards = call(py, rig.arena().leaderboard(battle_type, project.as_deref()))?;
        to_dict(py, &boards)
    }

    /// Starts a run of a flow on this rig's engine and returns its `Run` at
    /// once (it runs in the background). `spec` is the runtime `FlowSpec`
    /// (DESIGN "flow runtime"): a dict of its JSON shape, YAML or JSON
    /// text, or a path (`os.PathLike`, or a `str` naming a `.yaml`, `.yml`
    /// or `.json` file). `input` (a dict or `None`) is the `input` of its
    /// templates and conditions. `code` maps each `code` step's id to a
    /// callable: sync or `async def`, called with the step's context dict
    /// (`{"input", "results", "steps", "iteration"}`, `results` and
    /// `steps` holding its dependencies) and returning a JSON-like value,
    /// the step's result; an exception fails the attempt with its message
    /// (retried by the step's `retry`). Callables run only in this process.
    ///
    /// A bad spec (unknown field, cycle, unknown dependency, bad CEL or
    /// template, duplicate id), an input that is not a dict, an agent step
    /// naming an unknown identity, a code step without a callable or a
    /// callable for no code step is an `InvalidInputError` whose
    /// `.details["problems"]` lists every problem with its `path`, and
    /// nothing is created; a spec file that cannot be read is an `IoError`.
    #[pyo3(signature = (spec, input=None, code=None))]
    fn run_flow(
        &self,
        py: Python<'_>,
        spec: &Bound<'_, PyAny>,
        input: Option<&Bound<'_, PyAny>>,
        code: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Run> {
        let spec = flow_spec(py, spec)?;
        let input = match input.filter(|i| !i.is_none()) {
            Some(input) => to_json(input, "input")?,
            None => Value::Null,
        };
        let code = code_steps(code)?;
        let rig = self.rig(py)?;
        let mut run = NewRun::spec(spec, input);
        run.code = code;
        let id = call(py, rig.engine().start_run(run))?;
        Ok(Run::new(rig, id))
    }

    /// The `Run` of an existing run id (any run of the store, whichever
    /// process started it). `NotFoundIdError` when there is none.
    fn run(&self, py: Python<'_>, run_id: String) -> PyResult<Run> {
        let rig = self.rig(py)?;
        let view = call(py, rig.engine().run(&run_id))?;
        Ok(Run::new(rig, view.id))
    }

    /// One page of runs, newest first, as `{"runs": [RunSummary dicts
    /// (id, name, status, error, created_at, updated_at)], "next_cursor":
    /// str | None}` (pass `next_cursor` as `cursor` for the next page).
    /// `status` (`running`, `waiting`, `completed`, `failed`, `cancelled`)
    /// filters; `limit` is 1–500 (default 50).
    #[pyo3(signature = (status=None, limit=None, cursor=None))]
    fn runs(
        &self,
        py: Python<'_>,
        status: Option<&str>,
        limit: Option<u32>,
        cursor: Option<String>,
    ) -> PyResult<Py<PyAny>> {
        let filter = RunFilter {
            status: status.map(name::<RunStatus>).transpose()?,
            limit,
            cursor,
        };
        let rig = self.rig(py)?;
        let page = call(py, rig.engine().list_runs(&filter))?;
        to_dict(py, &page)
    }

    /// The data directory given (for the store), or `None`.
    #[getter]
    fn data_dir(&self) -> Option<&Path> {
        self.data_dir.as_deref()
    }

    /// The database URL or path given (for the store), or `None`.
    #[getter]
    fn db(&self) -> Option<&str> {
        self.config.db.as_deref()
    }

    /// The `coderig.toml` the agents came from, or `None`.
    #[getter]
    fn config(&self) -> Option<&Path> {
        self.config_file.as_deref()
    }

    /// Every agent (the core's `AgentInfo` as dicts, sorted by identity):
    /// identity, kind, preset?, lane, command?, installed, reachable (bool,
    /// or None when it cannot be known without a turn), models, error?.
    /// HTTP agents are asked for their models, each for at most
    /// `probe_timeout` (seconds or a duration string). Blocking, GIL
    /// released.
    #[pyo3(signature = (probe_timeout=None))]
    fn agents(
        &self,
        py: Python<'_>,
        probe_timeout: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let probe = duration(probe_timeout, "probe_timeout")?.unwrap_or(DEFAULT_PROBE_TIMEOUT);
        let infos = block_on(py, self.registry().info(probe), || {})?;
        to_dict(py, &infos)
    }

    /// `agents()` as an awaitable.
    #[pyo3(signature = (probe_timeout=None))]
    fn agents_async<'py>(
        &self,
        py: Python<'py>,
        probe_timeout: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let probe = duration(probe_timeout, "probe_timeout")?.unwrap_or(DEFAULT_PROBE_TIMEOUT);
        let registry = self.registry().clone();
        pyo3_async_runtimes::tokio::future_into_py(py, async move {
            let infos = registry.info(probe).await;
            Python::attach(|py| to_dict(py, &infos))
        })
    }

    /// Starts a turn of `identity` and returns its `Turn` at once.
    ///
    /// `model` may be None (the agent's default); the options are the
    /// core's `TurnOptions`: `access` is `read_only` (default), `edit` or
    /// `full`; `timeout` and `idle_timeout` are seconds or duration strings
    /// (None: the agent's defaults); `env` adds environment variables;
    /// `artifacts` is a directory for the turn's records (the native
    /// agent's transcript and cut tool outputs). An
    /// unknown identity is a `NotFoundIdError` (`.details["known"]` lists
    /// the configured ones); a bad option an `InvalidInputError` naming it
    /// (`` `idle_timeout`: bad duration ... ``).
    #[pyo3(signature = (identity, model, prompt, workdir=None, access=None,
                        timeout=None, idle_timeout=None, system=None, env=None,
                        artifacts=None))]
    #[allow(clippy::too_many_arguments)]
    fn run_turn(
        &self,
        identity: String,
        model: Option<String>,
        prompt: String,
        workdir: Option<&Bound<'_, PyAny>>,
        access: Option<&Bound<'_, PyAny>>,
        timeout: Option<&Bound<'_, PyAny>>,
        idle_timeout: Option<&Bound<'_, PyAny>>,
        system: Option<&Bound<'_, PyAny>>,
        env: Option<&Bound<'_, PyAny>>,
        artifacts: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Turn> {
        let workdir = workdir.map(fspath);
        let artifacts = artifacts.map(fspath);
        for (at, value) in [("timeout", timeout), ("idle_timeout", idle_timeout)] {
            value.map(|v| finite(v, at)).transpose()?;
        }
        let options = object(&[
            ("workdir", workdir.as_ref()),
            ("access", access),
            ("timeout", timeout),
            ("idle_timeout", idle_timeout),
            ("system", system),
            ("env", env),
            ("artifacts", artifacts.as_ref()),
        ])?;
        let turn = TurnOptions::from_json(options)
            .map_err(to_py_err)?
            .into_turn(prompt, model.clone());
        // start_turn spawns the agent's task on the current runtime.
        let _entered = runtime().enter();
        let handle = self
            .registry()
            .start_turn(&identity, turn)
            .map_err(to_py_err)?;
        Ok(Turn::new(handle, identity, model))
    }

    /// Stops what this rig runs, in the core's order: its runs' drivers and
    /// battle tasks (left in the store, resumed by the next rig on it
    /// through their leases), its agent turns (process groups stopped), the
    /// event bus last — waiting at most `grace` (seconds or `"10s"`,
    /// default 10 s; GIL released) before the rest is killed. Later battle
    /// and run calls raise `UnavailableError`; closing twice does nothing.
    /// `with Rig(...) as rig:` closes it at the end of the block. What a rig
    /// left open is stopped at interpreter exit anyway.
    #[pyo3(signature = (grace=None))]
    fn close(&self, py: Python<'_>, grace: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let grace = duration(grace, "grace")?.unwrap_or(DEFAULT_SHUTDOWN_GRACE);
        let rig = self.rig.get().cloned();
        let registry = self.registry().clone();
        py.detach(|| {
            runtime().block_on(async {
                match &rig {
                    Some(rig) => rig.shutdown(grace).await,
                    None => {
                        registry.shutdown(grace).await;
                    }
                }
            })
        });
        lock(&OPENED).retain(|rig| !rig.is_shut_down());
        Ok(())
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// Closes the rig (default grace); an exception in the block goes on.
    fn __exit__(
        &self,
        py: Python<'_>,
        _kind: Option<&Bound<'_, PyAny>>,
        _value: Option<&Bound<'_, PyAny>>,
        _traceback: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.close(py, None)?;
        Ok(false)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let identities = PyList::new(py, self.registry().identities())?;
        Ok(format!("Rig(agents={})", identities.repr()?))
    }
}
