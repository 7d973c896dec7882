//! `State`: the state of one run, holding the core's `SchedulerState`.

use crate::helpers::{decode, object, to_json};
use coderig::flow::{SchedulerState, SkipReason};
use coderig::json;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PySet};
use pyo3::IntoPyObjectExt;
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// The state of one run, holding the core's state: `State(done=..., ...)`
/// or `State.from_dict(d)`, both decoded by the core (`skipped` given as a
/// collection of ids means reason `"condition_false"`).
///
/// The attributes return fresh copies (sets, dicts); assigning one
/// replaces that field (decoded as the constructor decodes it).
#[pyclass(module = "coderig.flow", name = "State")]
pub struct PyState {
    pub(super) inner: SchedulerState,
}

/// The field names of a state, in the order `repr` shows them.
const STATE_FIELDS: [&str; 8] = [
    "done",
    "skipped",
    "failed",
    "in_flight",
    "excluded",
    "timed_out",
    "switch_results",
    "loop_iterations",
];

impl PyState {
    /// Replaces one field by `value`, decoded as the field of a state.
    fn replace(&mut self, field: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let mut one = Map::new();
        one.insert(field.to_owned(), to_json(value, field)?);
        let new = decode(Value::Object(one), json::state)?;
        let st = &mut self.inner;
        match field {
            "done" => st.done = new.done,
            "skipped" => st.skipped = new.skipped,
            "failed" => st.failed = new.failed,
            "in_flight" => st.in_flight = new.in_flight,
            "excluded" => st.excluded = new.excluded,
            "timed_out" => st.timed_out = new.timed_out,
            "switch_results" => st.switch_results = new.switch_results,
            _ => st.loop_iterations = new.loop_iterations,
        }
        Ok(())
    }

    /// A fresh Python copy of one field.
    fn field<'py>(&self, py: Python<'py>, field: &str) -> PyResult<Bound<'py, PyAny>> {
        let st = &self.inner;
        let set = |ids: &BTreeSet<String>| Ok(PySet::new(py, ids)?.into_any());
        match field {
            "done" => set(&st.done),
            "failed" => set(&st.failed),
            "in_flight" => set(&st.in_flight),
            "excluded" => set(&st.excluded),
            "timed_out" => set(&st.timed_out),
            "skipped" => {
                let out = PyDict::new(py);
                for (id, reason) in &st.skipped {
                    out.set_item(id, reason.as_str())?;
                }
                Ok(out.into_any())
            }
            "switch_results" => {
                let out = PyDict::new(py);
                for (id, r) in &st.switch_results {
                    out.set_item(id, (r.chosen.as_deref(), PySet::new(py, &r.excluded)?))?;
                }
                Ok(out.into_any())
            }
            _ => st.loop_iterations.clone().into_bound_py_any(py),
        }
    }
}

#[pymethods]
impl PyState {
    #[new]
    #[pyo3(signature = (
        done = None, skipped = None, failed = None, in_flight = None, excluded = None,
        timed_out = None, switch_results = None, loop_iterations = None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        done: Option<&Bound<'_, PyAny>>,
        skipped: Option<&Bound<'_, PyAny>>,
        failed: Option<&Bound<'_, PyAny>>,
        in_flight: Option<&Bound<'_, PyAny>>,
        excluded: Option<&Bound<'_, PyAny>>,
        timed_out: Option<&Bound<'_, PyAny>>,
        switch_results: Option<&Bound<'_, PyAny>>,
        loop_iterations: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let values = [
            done,
            skipped,
            failed,
            in_flight,
            excluded,
            timed_out,
            switch_results,
            loop_iterations,
        ];
        let fields: Vec<_> = STATE_FIELDS.into_iter().zip(values).collect();
        let inner = decode(object(&fields)?, json::state)?;
        Ok(PyState { inner })
    }

    /// A state from its JSON form (every field optional; sets as lists,
    /// `skipped` as a list of ids or `{id: reason}`, `switch_results` as
    /// `{id: [chosen, [excluded]]}` or `{id: {"chosen", "excluded"}}`),
    /// decoded by the core.
    #[staticmethod]
    fn from_dict(d: &Bound<'_, PyAny>) -> PyResult<Self> {
        let inner = decode(to_json(d, "")?, json::state)?;
        Ok(PyState { inner })
    }

    /// The JSON form (`from_dict(st.to_dict()) == st`).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(pythonize::pythonize(py, &self.inner)?)
    }

    /// Steps that finished successfully (a copy).
    #[getter]
    fn done<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.field(py, "done")
    }

    #[setter]
    fn set_done(&mut self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.replace("done", value)
    }

    /// `{id: reason}` of steps that did not run (a copy).
    #[getter]
    fn skipped<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.field(py, "skipped")
    }

    #[setter]
    fn set_skipped(&mut self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.replace("skipped", value)
    }

    /// Steps that failed (a copy).
    #[getter]
    fn failed<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.field(py, "failed")
    }

    #[setter]
    fn set_failed(&mut self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.replace("failed", value)
    }

    /// Steps dispatched and not finished (a copy).
    #[getter]
    fn in_flight<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.field(py, "in_flight")
    }

    #[setter]
    fn set_in_flight(&mut self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.replace("in_flight", value)
    }

    /// Steps excluded at launch (a copy).
    #[getter]
    fn excluded<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.field(py, "excluded")
    }

    #[setter]
    fn set_excluded(&mut self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.replace("excluded", value)
    }

    /// Steps that timed out (a copy; they count as failed).
    #[getter]
    fn timed_out<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.field(py, "timed_out")
    }

    #[setter]
    fn set_timed_out(&mut self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.replace("timed_out", value)
    }

    /// `{switch_id: (chosen_label or None, set of excluded ids)}` (a copy).
    #[getter]
    fn switch_results<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.field(py, "switch_results")
    }

    #[setter]
    fn set_switch_results(&mut self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.replace("switch_results", value)
    }

    /// `{do_while_id: completed iterations}` (a copy).
    #[getter]
    fn loop_iterations<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.field(py, "loop_iterations")
    }

    #[setter]
    fn set_loop_iterations(&mut self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.replace("loop_iterations", value)
    }

    /// How `id` stands: `"pending"`, `"in_flight"`, `"done"`, `"failed"`,
    /// `"timed_out"` or `"skipped"` (precedence as in the core).
    fn outcome(&self, id: &str) -> &'static str {
        self.inner.outcome(id).as_str()
    }

    /// Why `id` was skipped (`"upstream_failed"`, `"branch_not_taken"`,
    /// `"condition_false"` or `"excluded"`), or `None` when its outcome is
    /// not `"skipped"`.
    fn skip_reason(&self, id: &str) -> Option<&'static str> {
        self.inner.outcome(id).skip_reason().map(SkipReason::as_str)
    }

    /// Equal when the core states are equal (another type: NotImplemented).
    fn __eq__(&self, other: PyRef<'_, PyState>) -> bool {
        self.inner == other.inner
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let mut parts = Vec::new();
        for name in STATE_FIELDS {
            let value = self.field(py, name)?;
            if value.len()? > 0 {
                parts.push(format!("{name}={}", value.repr()?));
            }
        }
        Ok(format!("State({})", parts.join(", ")))
    }
}
