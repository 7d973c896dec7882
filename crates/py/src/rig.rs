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
//! At interpreter exit an `atexit` hook runs `Registry::shutdown` on every
//! registry that is still referenced or still has turns running: their
//! turns are cancelled and waited for (at most `DEFAULT_SHUTDOWN_GRACE`),
//! so no agent process group outlives the interpreter.

use crate::helpers::{fspath, object, to_json, to_py_err};
use crate::turn::{block_on, runtime, to_dict, Turn};
use coderig::agent::{Registry, TurnOptions, DEFAULT_PROBE_TIMEOUT, DEFAULT_SHUTDOWN_GRACE};
use coderig::Error;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyFloat, PyList};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Registers `Rig`, `Turn` and `TurnEvents`, and the exit hook.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Rig>()?;
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

/// The `atexit` hook: cancels every running turn, then waits (GIL
/// released, at most `DEFAULT_SHUTDOWN_GRACE` in all) until they ended.
#[pyfunction]
fn shutdown_at_exit(py: Python<'_>) {
    let registries: Vec<_> = live().drain(..).filter(|r| r.running_turns() > 0).collect();
    if registries.is_empty() {
        return;
    }
    registries.iter().for_each(|r| r.cancel_all());
    let deadline = Instant::now() + DEFAULT_SHUTDOWN_GRACE;
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

/// The agents of a rig and their turns.
#[pyclass(module = "coderig", frozen)]
pub struct Rig {
    registry: Arc<Registry>,
    data_dir: Option<PathBuf>,
    db: Option<String>,
    config: Option<PathBuf>,
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
    #[new]
    #[pyo3(signature = (data_dir=None, db=None, config=None, agents=None))]
    fn new(
        py: Python<'_>,
        data_dir: Option<&Bound<'_, PyAny>>,
        db: Option<&Bound<'_, PyAny>>,
        config: Option<&Bound<'_, PyAny>>,
        agents: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let data_dir = path_arg(data_dir, "data_dir")?;
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
        // Registry::open may read a file: the GIL is released.
        let (registry, config) = py
            .detach(|| Registry::open(config.as_deref(), agents))
            .map_err(to_py_err)?;
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
        })
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
    /// (None: the agent's defaults); `env` adds environment variables. An
    /// unknown identity is a `NotFoundIdError` (`.details["known"]` lists
    /// the configured ones); a bad option an `InvalidInputError` naming it
    /// (`` `idle_timeout`: bad duration ... ``).
    #[pyo3(signature = (identity, model, prompt, workdir=None, access=None,
                        timeout=None, idle_timeout=None, system=None, env=None))]
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
    ) -> PyResult<Turn> {
        let workdir = workdir.map(fspath);
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
