//! `coderig.Rig`: the agents of a rig (a core [`Registry`]) and their turns.
//!
//! Thin: `Registry::open` chooses where the agents come from (`config=`,
//! `agents=`, else `./coderig.toml` when it exists), `TurnOptions` decodes
//! `run_turn`'s keyword arguments (converted to a JSON object), and the
//! core's duration decoder reads every duration argument, so a bad value
//! gets the core's message with its path (`` `idle_timeout`: ... ``), as in
//! every face. `data_dir` and `db` are kept for the store (opened by later
//! features); only their types are checked now.
//!
//! Battles: the first battle call (`start_battle`, `battle`, `battles`,
//! `leaderboard`) opens the store (`coderig::store::open(db, data_dir)`,
//! `data_dir` defaulting to `./.coderig`, as the CLI's) and starts the
//! core's `Arena` on it with this rig's agents, an `EventBus` and the
//! `project_roots` given, on the module's one tokio runtime
//! ([`crate::battle`] holds it).
//!
//! At interpreter exit an `atexit` hook shuts every live arena down and
//! runs `Registry::shutdown` on every registry that is still referenced or
//! still has turns running: their agents are cancelled and waited for (at
//! most `DEFAULT_SHUTDOWN_GRACE` in all), so no agent process group
//! outlives the interpreter.

use crate::battle::{call, ArenaHandle, Battle};
use crate::helpers::{fspath, name, object, to_json, to_py_err, Items};
use crate::run::{code_steps, flow_spec, Run};
use crate::turn::{block_on, runtime, to_dict, Turn};
use coderig::agent::{Registry, TurnOptions, DEFAULT_PROBE_TIMEOUT, DEFAULT_SHUTDOWN_GRACE};
use coderig::arena::runner::{Arena, ArenaConfig, BattleFilter};
use coderig::arena::BattleSpec;
use coderig::bus::EventBus;
use coderig::event::RunStatus;
use coderig::flow::engine::{Engine, EngineConfig, NewRun, RunFilter};
use coderig::Error;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFloat, PyList, PyString};
use serde::Deserialize;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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

/// The registries an exit must shut down: every `Rig`'s, kept while a `Rig`
/// refers to it or one of its turns runs (a turn whose `Rig` and `Turn`
/// were dropped still runs, and still must not outlive the interpreter).
static LIVE: Mutex<Vec<Arc<Registry>>> = Mutex::new(Vec::new());

fn live() -> std::sync::MutexGuard<'static, Vec<Arc<Registry>>> {
    LIVE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The `atexit` hook: shuts every live arena down (its agents stopped),
/// cancels every running turn, then waits (GIL released, at most
/// `DEFAULT_SHUTDOWN_GRACE` in all) until they ended.
#[pyfunction]
fn shutdown_at_exit(py: Python<'_>) {
    let deadline = Instant::now() + DEFAULT_SHUTDOWN_GRACE;
    py.detach(|| crate::battle::shutdown_arenas(deadline));
    let registries: Vec<_> = live().drain(..).filter(|r| r.running_turns() > 0).collect();
    if registries.is_empty() {
        return;
    }
    registries.iter().for_each(|r| r.cancel_all());
    py.detach(|| {
        runtime().block_on(async {
            for registry in &registries {
                let left = deadline.saturating_duration_since(Instant::now());
                registry.shutdown(left).await;
            }
        })
    });
}

/// A duration argument (seconds or a string like `"90s"`), decoded by the
/// core's duration decoder: a bad one is the core's `InvalidInputError` at
/// `at`. `None` is no duration.
pub fn duration(value: Option<&Bound<'_, PyAny>>, at: &str) -> PyResult<Option<Duration>> {
    #[derive(Deserialize)]
    struct Limit(
        #[serde(deserialize_with = "coderig::agent::duration::deserialize_opt")] Option<Duration>,
    );
    let Some(value) = value else {
        return Ok(None);
    };
    finite(value, at)?;
    let Limit(limit) = coderig::json::decode(to_json(value, at)?)
        .map_err(|e| to_py_err(Error::invalid_at(at, e.message())))?;
    Ok(limit)
}

/// Refuses a NaN or an infinity for a duration: JSON has none (pythonize
/// would make them `null`, "not given").
fn finite(value: &Bound<'_, PyAny>, at: &str) -> PyResult<()> {
    let Ok(f) = value.cast::<PyFloat>().map(|f| f.value()) else {
        return Ok(());
    };
    if f.is_finite() {
        return Ok(());
    }
    let shown = if f.is_nan() {
        "NaN"
    } else if f > 0.0 {
        "Infinity"
    } else {
        "-Infinity"
    };
    Err(to_py_err(Error::invalid_at(
        at,
        format!("must be a finite number, got {shown}"),
    )))
}

/// The agents of a rig, their turns, and its battles.
#[pyclass(module = "coderig", frozen)]
pub struct Rig {
    registry: Arc<Registry>,
    data_dir: Option<PathBuf>,
    db: Option<String>,
    config: Option<PathBuf>,
    /// Canonical; empty: any path.
    project_roots: Vec<PathBuf>,
    /// The arena, started by the first battle call.
    arena: tokio::sync::OnceCell<Arc<ArenaHandle>>,
}

/// The data directory of a rig given none: the CLI's default.
const DEFAULT_DATA_DIR: &str = ".coderig";

/// The `project_roots` argument, each root canonicalized (so the arena
/// compares canonical projects with canonical roots); a root that cannot
/// be resolved is an `InvalidInputError` at `project_roots[i]`.
fn project_roots(value: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<PathBuf>> {
    let Some(value) = value.filter(|v| !v.is_none()) else {
        return Ok(Vec::new());
    };
    let Items(items) = value.extract::<Items<Bound<'_, PyAny>>>()?;
    let mut roots = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let at = format!("project_roots[{i}]");
        let Some(path) = path_arg(Some(item), &at)? else {
            return Err(PyTypeError::new_err(format!(
                "{at} must be a path, not None"
            )));
        };
        let canonical = std::fs::canonicalize(&path).map_err(|e| {
            to_py_err(Error::invalid_at(
                &at,
                format!(
                    "the project root {} cannot be resolved: {e}",
                    path.display()
                ),
            ))
        })?;
        roots.push(canonical);
    }
    Ok(roots)
}

/// A battle spec's `project` as the absolute path string the spec wants:
/// an `os.PathLike` converted with `os.fspath`, a relative path taken from
/// the current directory (as every Python path argument is). Anything else
/// is left for the spec decoder to judge.
fn absolute_project(spec: &Bound<'_, PyDict>) -> PyResult<()> {
    let Some(project) = spec.get_item("project")? else {
        return Ok(());
    };
    let project = fspath(&project);
    if project.is_instance_of::<PyString>() {
        let text: String = project.extract()?;
        if !text.is_empty() {
            if let Ok(absolute) = std::path::absolute(&text) {
                spec.set_item("project", absolute.to_string_lossy().as_ref())?;
                return Ok(());
            }
        }
    }
    spec.set_item("project", project)
}

impl Rig {
    /// The runtime, opened on first use: the store, an event bus over it,
    /// the arena's worker loop and the flow engine's, on the module's
    /// runtime (GIL released meanwhile).
    fn arena(&self, py: Python<'_>) -> PyResult<Arc<ArenaHandle>> {
        if let Some(handle) = self.arena.get() {
            return Ok(handle.clone());
        }
        let data_dir = self
            .data_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR));
        let data_dir = std::path::absolute(&data_dir).map_err(|e| {
            to_py_err(Error::invalid_at(
                "data_dir",
                format!("cannot resolve {}: {e}", data_dir.display()),
            ))
        })?;
        let handle = call(
            py,
            self.arena.get_or_try_init(|| async {
                let db = self.db.as_deref().filter(|db| !db.is_empty());
                let store = coderig::store::open(db, &data_dir).await?;
                let bus = EventBus::start(store.clone());
                let mut config = ArenaConfig::new(&data_dir);
                config.project_roots = self.project_roots.clone();
                let arena =
                    Arena::start(store.clone(), (*self.registry).clone(), bus.clone(), config)
                        .await?;
                let mut config = EngineConfig::new(&data_dir);
                config.project_roots = self.project_roots.clone();
                let engine = match Engine::start(store, (*self.registry).clone(), bus, config).await
                {
                    Ok(engine) => engine,
                    Err(e) => {
                        arena.shutdown(Duration::ZERO).await;
                        return Err(e);
                    }
                };
                Ok::<_, Error>(ArenaHandle::new(arena, engine))
            }),
        )?;
        Ok(handle.clone())
    }
}

/// A path argument (`str` or `os.PathLike`); another type is a `TypeError`.
fn path_arg(value: Option<&Bound<'_, PyAny>>, at: &str) -> PyResult<Option<PathBuf>> {
    match value.filter(|v| !v.is_none()) {
        None => Ok(None),
        Some(v) => v.extract::<PathBuf>().map(Some).map_err(|_| {
            PyTypeError::new_err(format!(
                "{at} must be a str or os.PathLike path, not {}",
                v.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))
        }),
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
    /// it is opened by the first battle call, not here. `project_roots`:
    /// coding battles' projects must lie under one of these directories
    /// (each must exist: else `InvalidInputError` at `project_roots[i]`);
    /// none given: any path. `sandbox`: the mode every process the rig
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
        let project_roots = self::project_roots(project_roots)?;
        let db = match db.filter(|v| !v.is_none()) {
            None => None,
            Some(v) => Some(
                fspath(v)
                    .extract::<String>()
                    .map_err(|_| PyTypeError::new_err("db must be a str (a URL or a path)"))?,
            ),
        };
        let config = path_arg(config, "config")?;
        let agents = match agents.filter(|v| !v.is_none()) {
            Some(agents) => Some(to_json(agents, "agents")?),
            None => None,
        };
        let sandbox = match sandbox.filter(|v| !v.is_none()) {
            Some(sandbox) => Some(
                coderig::sandbox::SandboxConfig::from_json(to_json(sandbox, "sandbox")?)
                    .map_err(to_py_err)?,
            ),
            None => None,
        };
        // Registry::open may read a file: the GIL is released.
        let (mut registry, config) = py
            .detach(|| Registry::open(config.as_deref(), agents))
            .map_err(to_py_err)?;
        if let Some(sandbox) = sandbox {
            registry.set_sandbox_mode(sandbox.mode);
        }
        let registry = Arc::new(registry);
        let mut live = live();
        live.retain(|r| Arc::strong_count(r) > 1 || r.running_turns() > 0);
        live.push(registry.clone());
        drop(live);
        Ok(Rig {
            registry,
            data_dir,
            db,
            config,
            project_roots,
            arena: tokio::sync::OnceCell::new(),
        })
    }

    /// The project roots (canonical), empty when any path is accepted.
    #[getter]
    fn project_roots(&self) -> Vec<PathBuf> {
        self.project_roots.clone()
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
        let merged = PyDict::new(py);
        if let Some(spec) = spec.filter(|s| !s.is_none()) {
            let spec = spec.cast::<PyDict>().map_err(|_| {
                PyTypeError::new_err(format!(
                    "start_battle takes the spec as one dict or as keyword arguments, not a {}",
                    spec.get_type()
                        .name()
                        .map(|n| n.to_string())
                        .unwrap_or_default()
                ))
            })?;
            merged.update(spec.as_mapping())?;
        }
        if let Some(kwargs) = kwargs {
            for (key, value) in kwargs.iter() {
                if merged.contains(&key)? {
                    return Err(PyTypeError::new_err(format!(
                        "start_battle got {} both in the spec dict and as a keyword argument",
                        key.repr()?
                    )));
                }
                merged.set_item(key, value)?;
            }
        }
        absolute_project(&merged)?;
        let json: Value = to_json(merged.as_any(), "")?;
        let spec = BattleSpec::from_json(&json).map_err(to_py_err)?;
        let handle = self.arena(py)?;
        let view = call(py, handle.arena().start_battle(spec))?;
        Ok(Battle::new(handle, view.id))
    }

    /// The `Battle` of an existing battle id (any battle of the store,
    /// whichever process started it). `NotFoundIdError` when there is none.
    fn battle(&self, py: Python<'_>, id: String) -> PyResult<Battle> {
        let handle = self.arena(py)?;
        let view = call(py, handle.arena().battle(&id))?;
        Ok(Battle::new(handle, view.id))
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
        let handle = self.arena(py)?;
        let page = call(py, handle.arena().list_battles(&filter))?;
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
        let handle = self.arena(py)?;
        let boards = call(
            py,
            handle.arena().leaderboard(battle_type, project.as_deref()),
        )?;
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
        let handle = self.arena(py)?;
        let mut run = NewRun::spec(spec, input);
        run.code = code;
        let id = call(py, handle.engine().start_run(run))?;
        Ok(Run::new(handle, id))
    }

    /// The `Run` of an existing run id (any run of the store, whichever
    /// process started it). `NotFoundIdError` when there is none.
    fn run(&self, py: Python<'_>, run_id: String) -> PyResult<Run> {
        let handle = self.arena(py)?;
        let view = call(py, handle.engine().run(&run_id))?;
        Ok(Run::new(handle, view.id))
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
        let handle = self.arena(py)?;
        let page = call(py, handle.engine().list_runs(&filter))?;
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
        self.db.as_deref()
    }

    /// The `coderig.toml` the agents came from, or `None`.
    #[getter]
    fn config(&self) -> Option<&Path> {
        self.config.as_deref()
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
        let infos = block_on(py, self.registry.info(probe), || {})?;
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
        let registry = Arc::clone(&self.registry);
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
            .registry
            .start_turn(&identity, turn)
            .map_err(to_py_err)?;
        Ok(Turn::new(handle, identity, model))
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let identities = PyList::new(py, self.registry.identities())?;
        Ok(format!("Rig(agents={})", identities.repr()?))
    }
}
