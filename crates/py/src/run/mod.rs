//! `coderig.Run` and `coderig.RunEvents`: a run of the core's flow engine
//! ([`coderig::flow::engine::Engine`]) as Python sees it, and the spec of
//! `Rig.run_flow`.
//!
//! Thin, like [`crate::battle`]: a `Run` holds the core [`Rig`] its
//! `coderig.Rig` opened (a cheap clone) and the run's id; every method
//! converts its arguments, calls the rig's engine and returns the core's
//! JSON (`RunView`, `StepView`, the stored events) as dicts. Blocking calls
//! release the GIL. Ctrl-C during a blocking call raises
//! `KeyboardInterrupt` and leaves the run running, as for a battle: a run
//! is durable work in the store, and only `cancel()` ends it.
//!
//! `wait()` is the core's [`Rig::wait_run`] (the run read twice, not once
//! per event) and `events()` a core [`Watch`](coderig::watch::Watch)
//! ([`crate::watch`]): the core's one end rule. The Python callables of
//! `code` steps are `code.rs`'s.

mod code;

pub use code::code_steps;

use crate::blocking::call;
use crate::helpers::to_dict;
use crate::helpers::{to_json, to_py_err};
use crate::watch::Events;
use coderig::flow::engine::Decision;
use coderig::flow::runspec::FlowSpec;
use coderig::rig::{Rig, Subject};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use std::path::{Path, PathBuf};

/// Registers `Run` and `RunEvents`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Run>()?;
    m.add_class::<RunEvents>()?;
    Ok(())
}

// ---------------------------------------------------------------------------
// The spec of `Rig.run_flow`.

/// Whether a `str` spec is a file name rather than YAML or JSON text: one
/// line ending in `.json`, `.yaml` or `.yml`. No flow spec is such a line
/// (a spec is a mapping, so its one line would end with `}` or a value of
/// `steps`), so the guess never takes a spec for a path; a file that does
/// not exist is then an `IoError` naming it, not a puzzling YAML problem.
fn names_a_file(text: &str) -> bool {
    let text = text.trim();
    !text.contains('\n') && {
        let lower = text.to_ascii_lowercase();
        [".json", ".yaml", ".yml"]
            .iter()
            .any(|ext| lower.ends_with(ext))
    }
}

/// `run_flow`'s `spec`: a dict (the JSON shape), YAML or JSON text, or a
/// path (`os.PathLike`, or a `str` naming a `.yaml`/`.yml`/`.json` file)
/// read by `FlowSpec::load`. A bad spec is the core's `invalid_input` with
/// `path` and `problems`; another type is a `TypeError`.
pub fn flow_spec(py: Python<'_>, spec: &Bound<'_, PyAny>) -> PyResult<FlowSpec> {
    if let Ok(text) = spec.cast::<PyString>() {
        let text: String = text.extract()?;
        return py
            .detach(|| {
                if names_a_file(&text) || Path::new(text.trim()).is_file() {
                    FlowSpec::load(Path::new(text.trim()))
                } else {
                    FlowSpec::parse(&text)
                }
            })
            .map_err(to_py_err);
    }
    if spec.is_instance_of::<PyDict>() {
        return FlowSpec::from_json(&to_json(spec, "")?).map_err(to_py_err);
    }
    if spec.hasattr("keys")? {
        // Another mapping: as the dict it stands for.
        let dict = py.import("builtins")?.getattr("dict")?.call1((spec,))?;
        return FlowSpec::from_json(&to_json(&dict, "")?).map_err(to_py_err);
    }
    if let Ok(path) = spec.extract::<PathBuf>() {
        return py.detach(|| FlowSpec::load(&path)).map_err(to_py_err);
    }
    Err(PyTypeError::new_err(format!(
        "run_flow takes the spec as a dict, YAML or JSON text, or a path, not a {}",
        type_name(spec)
    )))
}

fn type_name(value: &Bound<'_, PyAny>) -> String {
    value
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------
// Run.

/// A decision's keyword arguments.
fn decision(by: Option<String>, comment: Option<String>) -> Decision {
    Decision { by, comment }
}

/// A run of a `Rig`'s flow engine (`Rig.run_flow`, `Rig.run`). Dropping it
/// changes nothing; `cancel()` ends the run.
#[pyclass(module = "coderig", frozen)]
pub struct Run {
    rig: Rig,
    id: String,
}

impl Run {
    /// The run `id` of `rig`.
    pub fn new(rig: Rig, id: String) -> Self {
        Run { rig, id }
    }

    fn subject(&self) -> Subject {
        Subject::Run(self.id.clone())
    }

    /// `approve` / `reject`: the step's `StepView` dict.
    fn decide(
        &self,
        py: Python<'_>,
        approve: bool,
        step: String,
        decision: Decision,
    ) -> PyResult<Py<PyAny>> {
        let engine = self.rig.engine();
        let view = if approve {
            call(py, engine.approve(&self.id, &step, decision))?
        } else {
            call(py, engine.reject(&self.id, &step, decision))?
        };
        to_dict(py, &view)
    }
}

#[pymethods]
impl Run {
    /// The run's id.
    #[getter]
    fn id(&self) -> &str {
        &self.id
    }

    /// The run as it is now: the core's `RunView` as a dict (status, input,
    /// error, report, spec, timings, steps), the same JSON as
    /// `GET /api/runs/:id`.
    fn info(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let view = call(py, self.rig.engine().run(&self.id))?;
        to_dict(py, &view)
    }

    /// The run's status now: `running`, `waiting`, `completed`, `failed` or
    /// `cancelled`.
    #[getter]
    fn status(&self, py: Python<'_>) -> PyResult<&'static str> {
        let view = call(py, self.rig.engine().run(&self.id))?;
        Ok(view.status.as_str())
    }

    /// The rendered report (the flow's `report` template), once the run
    /// ended; `None` before, or when the flow has none.
    #[getter]
    fn report(&self, py: Python<'_>) -> PyResult<Option<String>> {
        let view = call(py, self.rig.engine().run(&self.id))?;
        Ok(view.report)
    }

    /// The steps now, in flow order: the core's `StepView` dicts (id,
    /// kind, status, attempt, iteration, skip_reason, output, error,
    /// exit_code, timings, switch, approval, attempts).
    fn steps(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let view = call(py, self.rig.engine().run(&self.id))?;
        to_dict(py, &view.steps)
    }

    /// Waits until the run ended (`completed`, `failed` or `cancelled`,
    /// every step final with it: the core's end rule, the one `events()`
    /// ends by) and returns its `RunView` dict. `timeout`
    /// (seconds or a duration string) bounds the wait: when it passes
    /// first, `TimeoutError` is raised and the run goes on. Blocking with
    /// the GIL released (code steps run meanwhile); Ctrl-C raises
    /// `KeyboardInterrupt` and the run goes on too (only `cancel()` ends
    /// it).
    #[pyo3(signature = (timeout=None))]
    fn wait(&self, py: Python<'_>, timeout: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        crate::watch::wait(py, &self.rig, self.subject(), timeout)
    }

    /// `wait()` as an awaitable (on the running asyncio loop).
    #[pyo3(signature = (timeout=None))]
    fn wait_async<'py>(
        &self,
        py: Python<'py>,
        timeout: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        crate::watch::wait_async(py, &self.rig, self.subject(), timeout)
    }

    /// The run's events as dicts: both an iterator (`for`, blocking with
    /// the GIL released) and an async iterator (`async for`). Each call
    /// gives a new stream from the start, subscribed now: every stored
    /// event of the run (`run_updated`, `step_updated`, each with its `seq`
    /// and `epoch`), then live ones as they come (`agent_output` of its
    /// agent steps too, which has no `seq` and is never replayed). The
    /// stream ends right after the `run_updated` that ends the run
    /// (`completed`, `failed`, `cancelled`); every step's final update comes
    /// before it (a cancelled run: its steps' `cancelled` updates, then the
    /// run's). A rig shut down before the run ended raises
    /// `UnavailableError`.
    fn events(&self) -> RunEvents {
        RunEvents(Events::new(&self.rig, self.subject()))
    }

    /// Cancels a live run (running steps are stopped, their processes
    /// killed and async code steps cancelled; the rest marked `cancelled`)
    /// and returns its `RunView` dict: `cancelled`, every step final with
    /// it. A run that already ended raises `ConflictError` (HTTP 409).
    fn cancel(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let view = call(py, self.rig.engine().cancel(&self.id))?;
        to_dict(py, &view)
    }

    /// Approves the approval step `step`, which must be `waiting`
    /// (`ConflictError` otherwise, `NotFoundIdError` for an unknown step):
    /// it is `done`, with the decision (`by`, `comment`) as its output and
    /// in its `approval`. Returns the `StepView` dict.
    #[pyo3(signature = (step, by=None, comment=None))]
    fn approve(
        &self,
        py: Python<'_>,
        step: String,
        by: Option<String>,
        comment: Option<String>,
    ) -> PyResult<Py<PyAny>> {
        self.decide(py, true, step, decision(by, comment))
    }

    /// Rejects the approval step `step` (`waiting`, else `ConflictError`):
    /// it `failed` with the decision recorded, and the trigger rules decide
    /// what runs next. Returns the `StepView` dict.
    #[pyo3(signature = (step, by=None, comment=None))]
    fn reject(
        &self,
        py: Python<'_>,
        step: String,
        by: Option<String>,
        comment: Option<String>,
    ) -> PyResult<Py<PyAny>> {
        self.decide(py, false, step, decision(by, comment))
    }

    fn __repr__(&self) -> String {
        format!("Run(id={:?})", self.id)
    }
}

// ---------------------------------------------------------------------------
// Events.

crate::watch::events_class!(
    /// The events of a run as dicts (`{"type": "step_updated", "seq": 3,
    /// "epoch": ..., "run_id": ..., "step_id": ..., "status": ..., "attempt":
    /// 1}`): an iterator (blocking, the GIL released; Ctrl-C raises
    /// `KeyboardInterrupt` and leaves the run running) and an async iterator.
    /// See `Run.events`.
    RunEvents
);
