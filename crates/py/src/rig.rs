//! `coderig.Rig`: the agents of a rig (a core [`Registry`]) and their turns.
//!
//! `Rig(config=path)` reads a `coderig.toml` with `Registry::load`;
//! `Rig(agents={...})` decodes the JSON form of the file's `agents` table
//! with `RigConfig::from_json`; with neither, `./coderig.toml` is read when
//! it exists. `data_dir` and `db` are kept for the store (opened by later
//! features); only their types are checked now.

use crate::helpers::{fspath, name, to_json, to_py_err};
use crate::turn::{block_on, runtime, to_dict, Turn};
use coderig::agent::config::RigConfig;
use coderig::agent::duration::parse_duration;
use coderig::agent::{Access, Registry, Turn as CoreTurn};
use coderig::Error;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyList, PyString};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long `agents()` waits for each HTTP agent's model list by default.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// Registers `Rig`, `Turn` and `TurnEvents`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Rig>()?;
    m.add_class::<Turn>()?;
    m.add_class::<crate::turn::TurnEvents>()?;
    Ok(())
}

/// A duration argument: seconds (`int` or `float`) or a duration string
/// (`"90s"`, `"500ms"`, `"20m"`), parsed by the core's `parse_duration`
/// (a number as its decimal text), so a bad one gets the core's message as
/// an `InvalidInputError` at `at`. `None` is no duration; another type
/// (`bool` included) is a `TypeError`.
pub fn duration(value: Option<&Bound<'_, PyAny>>, at: &str) -> PyResult<Option<Duration>> {
    let Some(value) = value.filter(|v| !v.is_none()) else {
        return Ok(None);
    };
    let text = if let Ok(text) = value.cast::<PyString>() {
        text.to_cow()?.into_owned()
    } else if value.is_instance_of::<PyBool>() {
        return Err(type_error(at, value));
    } else if value.is_instance_of::<PyInt>() {
        // Rust's integer text has no exponent; a huge int is out of range.
        match value.extract::<i128>() {
            Ok(n) => n.to_string(),
            Err(_) => value.str()?.to_cow()?.into_owned(),
        }
    } else if value.is_instance_of::<PyFloat>() {
        // Rust's float text has no exponent either (1e-3 is "0.001").
        value.extract::<f64>()?.to_string()
    } else {
        return Err(type_error(at, value));
    };
    parse_duration(&text)
        .map(Some)
        .map_err(|message| to_py_err(Error::invalid_at(at, message)))
}

fn type_error(at: &str, value: &Bound<'_, PyAny>) -> PyErr {
    let given = value
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_default();
    PyTypeError::new_err(format!(
        "{at} must be seconds (int or float) or a duration string like \"90s\", not {given}"
    ))
}

/// The agents of a rig and their turns.
#[pyclass(module = "coderig", frozen)]
pub struct Rig {
    registry: Registry,
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
        let agents = agents.filter(|v| !v.is_none());
        let (registry, config) = match (config, agents) {
            (Some(_), Some(_)) => {
                return Err(to_py_err(Error::invalid_input(
                    "give config= (a coderig.toml) or agents= (its agents table), not both",
                )))
            }
            (None, Some(agents)) => {
                let agents = to_json(agents, "agents")?;
                let config =
                    RigConfig::from_json(json!({ "agents": agents })).map_err(to_py_err)?;
                (Registry::from_config(&config).map_err(to_py_err)?, None)
            }
            (Some(path), None) => (load(py, &path)?, Some(path)),
            (None, None) => {
                let default = Path::new("coderig.toml");
                if default.is_file() {
                    (load(py, default)?, Some(default.to_path_buf()))
                } else {
                    (Registry::new(), None)
                }
            }
        };
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
        let probe = duration(probe_timeout, "probe_timeout")?.unwrap_or(PROBE_TIMEOUT);
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
        let probe = duration(probe_timeout, "probe_timeout")?.unwrap_or(PROBE_TIMEOUT);
        let registry = self.registry.clone();
        pyo3_async_runtimes::tokio::future_into_py(py, async move {
            let infos = registry.info(probe).await;
            Python::attach(|py| to_dict(py, &infos))
        })
    }

    /// Starts a turn of `identity` and returns its `Turn` at once.
    ///
    /// `model` may be None (the agent's default); `access` is `read_only`,
    /// `edit` or `full`; `timeout` and `idle_timeout` are seconds or
    /// duration strings (None: the agent's defaults); `env` adds
    /// environment variables. An unknown identity is a `NotFoundIdError`
    /// (`.details["known"]` lists the configured ones); a bad access name
    /// or duration an `InvalidInputError`.
    #[pyo3(signature = (identity, model, prompt, workdir=None, access="read_only",
                        timeout=None, idle_timeout=None, system=None, env=None))]
    #[allow(clippy::too_many_arguments)]
    fn run_turn(
        &self,
        identity: String,
        model: Option<String>,
        prompt: String,
        workdir: Option<&Bound<'_, PyAny>>,
        access: &str,
        timeout: Option<&Bound<'_, PyAny>>,
        idle_timeout: Option<&Bound<'_, PyAny>>,
        system: Option<String>,
        env: Option<BTreeMap<String, String>>,
    ) -> PyResult<Turn> {
        let turn = CoreTurn {
            prompt,
            system,
            model: model.clone(),
            workdir: path_arg(workdir, "workdir")?,
            access: name::<Access>(access)?,
            timeout: duration(timeout, "timeout")?,
            idle_timeout: duration(idle_timeout, "idle_timeout")?,
            env: env.unwrap_or_default(),
        };
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

/// `Registry::load` with the GIL released (it reads a file).
fn load(py: Python<'_>, path: &Path) -> PyResult<Registry> {
    py.detach(|| Registry::load(path)).map_err(to_py_err)
}
