//! `coderig.flow`: the flow spec, the pure scheduling decisions and the
//! incremental scheduler of [`coderig::flow`], as thin Python wrappers.
//!
//! Conventions (the Python docs in `flow.pyi` say the same):
//!
//! - `Step`, `Case`, `Flow` and `State` are handles: each holds the core's
//!   value, built once by the core's decoders (`json::step`, `json::flow`,
//!   `json::state`) from the constructor's arguments or from the JSON forms
//!   (`Flow.from_spec`, `State.from_dict`). A decision converts only its own
//!   arguments, never a whole flow or state again.
//! - Names (step kind, trigger rule, skip reason, step status, task state,
//!   failure kind) are the core's snake_case strings; an unknown one raises
//!   `coderig.InvalidInputError` listing the valid names. A scheduler event
//!   that does not apply raises `ConflictError`, an unknown step id
//!   `NotFoundIdError`, an invalid flow `InvalidInputError` (details: every
//!   problem).
//! - Conditions are Python callables `condition(ctx) -> truthy`. The core
//!   calls them through a [`Condition`] closure that re-acquires the GIL. The
//!   `ctx` must be JSON-like (dict with str keys, list, tuple, set, str,
//!   int, float, bool, None; tuples and sets arrive as lists, NaN and
//!   infinities as None); each call receives a fresh copy of it. If a
//!   condition raises, no further condition is called during that core call
//!   (the failing one counts as false) and the exception is re-raised once
//!   the core call returns: an exception is never swallowed. The core's
//!   closures own their callables out of the GC's sight, so a reference
//!   cycle through a condition (a lambda that refers to its own `Flow`) is
//!   not collected by Python's cycle collector.

use crate::helpers::{decode, name, object, to_json, to_py, to_py_err, Items};
use coderig::flow::{
    self, Case, Condition, FailureKind, Flow, ResumeRow, Scheduler, SchedulerState, SkipReason,
    Step, StepStatus, TaskState, TriggerRule,
};
use coderig::json;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PySet};
use pyo3::IntoPyObjectExt;
use serde_json::{Map, Value};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Registers the classes and functions of `coderig.flow` on `m`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyStep>()?;
    m.add_class::<PyCase>()?;
    m.add_class::<PyFlow>()?;
    m.add_class::<PyState>()?;
    m.add_class::<PyScheduler>()?;
    m.add_function(wrap_pyfunction!(ready_steps, m)?)?;
    m.add_function(wrap_pyfunction!(evaluate_trigger_rule, m)?)?;
    m.add_function(wrap_pyfunction!(propagate_skips, m)?)?;
    m.add_function(wrap_pyfunction!(build_batch_state, m)?)?;
    m.add_function(wrap_pyfunction!(ready_in_batch, m)?)?;
    m.add_function(wrap_pyfunction!(is_batch_joined, m)?)?;
    m.add_function(wrap_pyfunction!(resolve_switch, m)?)?;
    m.add_function(wrap_pyfunction!(is_loop_terminated, m)?)?;
    m.add_function(wrap_pyfunction!(is_run_complete, m)?)?;
    m.add_function(wrap_pyfunction!(is_stuck, m)?)?;
    m.add_function(wrap_pyfunction!(should_retry, m)?)?;
    m.add_function(wrap_pyfunction!(is_retriable, m)?)?;
    m.add_function(wrap_pyfunction!(manifest_steps, m)?)?;
    m.add_function(wrap_pyfunction!(reconcile_resume_step, m)?)?;
    m.add_function(wrap_pyfunction!(reconcile_run, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    Ok(())
}

/// Python's `repr()` of a value, for the `__repr__`s.
fn repr<'py>(py: Python<'py>, value: impl IntoPyObjectExt<'py>) -> PyResult<String> {
    Ok(value.into_bound_py_any(py)?.repr()?.to_string())
}

// ---------------------------------------------------------------------------
// Conditions: Python callables behind the core's closures.

thread_local! {
    /// The first exception raised by a condition during the current core
    /// call on this thread. Core calls are synchronous and run on the
    /// caller's thread, so a thread-local slot is exactly "this call".
    static CONDITION_ERROR: RefCell<Option<PyErr>> = const { RefCell::new(None) };
}

/// A [`Condition`] calling `callable(ctx)` under the GIL. Once a condition
/// has raised in the current core call, later ones are not called (false).
fn py_condition(callable: &Bound<'_, PyAny>) -> Condition {
    let callable = callable.clone().unbind();
    Condition::new(move |ctx: &Value| {
        if CONDITION_ERROR.with(|slot| slot.borrow().is_some()) {
            return false;
        }
        Python::attach(|py| {
            let verdict = to_py(py, ctx)
                .and_then(|arg| callable.bind(py).call1((arg,)))
                .and_then(|result| result.is_truthy());
            verdict.unwrap_or_else(|e| {
                CONDITION_ERROR.with(|slot| *slot.borrow_mut() = Some(e));
                false
            })
        })
    })
}

/// Runs a core call that may evaluate conditions and re-raises the first
/// exception a condition raised during it.
fn with_conditions<T>(call: impl FnOnce() -> T) -> PyResult<T> {
    CONDITION_ERROR.with(|slot| slot.borrow_mut().take());
    let result = call();
    match CONDITION_ERROR.with(|slot| slot.borrow_mut().take()) {
        Some(e) => Err(e),
        None => Ok(result),
    }
}

/// A condition argument: None or a callable (checked now, not at first use).
fn callable_arg<'py>(
    arg: Option<Bound<'py, PyAny>>,
    name: &str,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    match arg {
        Some(f) if f.is_none() => Ok(None),
        Some(f) if !f.is_callable() => Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "{name} must be a callable taking the context, not {}",
            f.get_type().name()?
        ))),
        other => Ok(other),
    }
}

// ---------------------------------------------------------------------------
// The spec: Case, Step, Flow.

/// One branch of a switch step: `Case(label, steps, condition=None)`.
/// `condition(ctx)` decides whether the case matches; a case without a
/// condition never matches.
#[pyclass(module = "coderig.flow", name = "Case", frozen)]
pub struct PyCase {
    inner: Case,
    condition: Option<Py<PyAny>>,
}

#[pymethods]
impl PyCase {
    #[new]
    #[pyo3(signature = (label, steps, condition = None))]
    fn new(
        label: &Bound<'_, PyAny>,
        steps: &Bound<'_, PyAny>,
        condition: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let condition = callable_arg(condition, "condition")?;
        let fields = object(&[("label", Some(label)), ("steps", Some(steps))])?;
        let mut inner: Case = decode(fields, json::decode_object)?;
        inner.condition = condition.as_ref().map(py_condition);
        Ok(PyCase {
            inner,
            condition: condition.map(Bound::unbind),
        })
    }

    /// The case's label (reported as the switch's choice).
    #[getter]
    fn label(&self) -> &str {
        &self.inner.label
    }

    /// Every step of the branch.
    #[getter]
    fn steps(&self) -> Vec<String> {
        self.inner.steps.clone()
    }

    /// The callable, or None.
    #[getter]
    fn condition(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.condition.as_ref().map(|c| c.clone_ref(py))
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "Case({}, {}, condition={})",
            repr(py, &self.inner.label)?,
            repr(py, &self.inner.steps)?,
            repr(py, self.condition(py))?
        ))
    }
}

/// One node of a flow. Every argument but `id` has the core's default; see
/// `flow.pyi` for the signature.
#[pyclass(module = "coderig.flow", name = "Step", frozen)]
pub struct PyStep {
    inner: Step,
    cases: Vec<Py<PyCase>>,
    loop_condition: Option<Py<PyAny>>,
    when: Option<Py<PyAny>>,
}

impl PyStep {
    /// A handle on a core step without conditions (decoded from JSON).
    fn from_core(py: Python<'_>, inner: Step) -> PyResult<Py<PyStep>> {
        let cases = inner
            .cases
            .iter()
            .map(|case| {
                let inner = case.clone();
                Py::new(
                    py,
                    PyCase {
                        inner,
                        condition: None,
                    },
                )
            })
            .collect::<PyResult<_>>()?;
        Py::new(
            py,
            PyStep {
                inner,
                cases,
                loop_condition: None,
                when: None,
            },
        )
    }
}

#[pymethods]
impl PyStep {
    #[new]
    #[pyo3(
        signature = (
            id, kind = None, deps = None, trigger_rule = None, batch = None, max_retries = None,
            cases = None, default_branch = None, loop_body = None, loop_condition = None,
            loop_max_iterations = None, *, timeout = None, when = None
        ),
        text_signature = "(id, kind='code', deps=None, trigger_rule='all_success', batch=None, \
            max_retries=0, cases=None, default_branch=None, loop_body=None, loop_condition=None, \
            loop_max_iterations=100, *, timeout=None, when=None)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        id: &Bound<'_, PyAny>,
        kind: Option<&Bound<'_, PyAny>>,
        deps: Option<&Bound<'_, PyAny>>,
        trigger_rule: Option<&Bound<'_, PyAny>>,
        batch: Option<&Bound<'_, PyAny>>,
        max_retries: Option<&Bound<'_, PyAny>>,
        cases: Option<Items<Bound<'_, PyCase>>>,
        default_branch: Option<&Bound<'_, PyAny>>,
        loop_body: Option<&Bound<'_, PyAny>>,
        loop_condition: Option<Bound<'_, PyAny>>,
        loop_max_iterations: Option<&Bound<'_, PyAny>>,
        timeout: Option<&Bound<'_, PyAny>>,
        when: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let loop_condition = callable_arg(loop_condition, "loop_condition")?;
        let when = callable_arg(when, "when")?;
        let code = "code".into_bound_py_any(py)?;
        let mut inner = decode(
            object(&[
                ("id", Some(id)),
                ("kind", Some(kind.unwrap_or(&code))),
                ("deps", deps),
                ("trigger_rule", trigger_rule),
                ("batch", batch),
                ("max_retries", max_retries),
                ("timeout", timeout),
                ("default_branch", default_branch),
                ("loop_body", loop_body),
                ("loop_max_iterations", loop_max_iterations),
            ])?,
            json::step,
        )?;
        let cases = cases.map(|c| c.0).unwrap_or_default();
        inner.cases = cases.iter().map(|c| c.get().inner.clone()).collect();
        inner.loop_condition = loop_condition.as_ref().map(py_condition);
        inner.when = when.as_ref().map(py_condition);
        Ok(PyStep {
            inner,
            cases: cases.into_iter().map(Bound::unbind).collect(),
            loop_condition: loop_condition.map(Bound::unbind),
            when: when.map(Bound::unbind),
        })
    }

    /// The step's id.
    #[getter]
    fn id(&self) -> &str {
        &self.inner.id
    }

    /// `"agent"`, `"code"`, `"approval"`, `"switch"` or `"do_while"`.
    #[getter]
    fn kind(&self) -> &'static str {
        self.inner.kind.as_str()
    }

    /// Ids of the steps this one waits for.
    #[getter]
    fn deps(&self) -> Vec<String> {
        self.inner.deps.clone()
    }

    /// The trigger rule's name.
    #[getter]
    fn trigger_rule(&self) -> &'static str {
        self.inner.trigger_rule.as_str()
    }

    /// The batch group, or None.
    #[getter]
    fn batch(&self) -> Option<&str> {
        self.inner.batch.as_deref()
    }

    /// Retries allowed after the first attempt.
    #[getter]
    fn max_retries(&self) -> u32 {
        self.inner.max_retries
    }

    /// Seconds per attempt, or None.
    #[getter]
    fn timeout(&self) -> Option<u64> {
        self.inner.timeout
    }

    /// The switch's cases (the `Case` objects given).
    #[getter]
    fn cases(&self, py: Python<'_>) -> Vec<Py<PyCase>> {
        self.cases.iter().map(|c| c.clone_ref(py)).collect()
    }

    /// The switch's default branch.
    #[getter]
    fn default_branch(&self) -> Vec<String> {
        self.inner.default_branch.clone()
    }

    /// The do-while's body.
    #[getter]
    fn loop_body(&self) -> Vec<String> {
        self.inner.loop_body.clone()
    }

    /// The do-while's condition callable, or None.
    #[getter]
    fn loop_condition(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.loop_condition.as_ref().map(|c| c.clone_ref(py))
    }

    /// The do-while's iteration cap.
    #[getter]
    fn loop_max_iterations(&self) -> u32 {
        self.inner.loop_max_iterations
    }

    /// The launch guard callable, or None.
    #[getter]
    fn when(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.when.as_ref().map(|c| c.clone_ref(py))
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let s = &self.inner;
        let mut out = format!(
            "Step({}, kind={}",
            repr(py, &s.id)?,
            repr(py, s.kind.as_str())?
        );
        if !s.deps.is_empty() {
            out.push_str(&format!(", deps={}", repr(py, &s.deps)?));
        }
        if s.trigger_rule != TriggerRule::AllSuccess {
            out.push_str(&format!(
                ", trigger_rule={}",
                repr(py, s.trigger_rule.as_str())?
            ));
        }
        if let Some(b) = &s.batch {
            out.push_str(&format!(", batch={}", repr(py, b)?));
        }
        if s.max_retries != 0 {
            out.push_str(&format!(", max_retries={}", s.max_retries));
        }
        if !s.cases.is_empty() {
            let labels: Vec<&str> = s.cases.iter().map(|c| c.label.as_str()).collect();
            out.push_str(&format!(", cases=<{}>", labels.join(", ")));
        }
        if !s.default_branch.is_empty() {
            out.push_str(&format!(
                ", default_branch={}",
                repr(py, &s.default_branch)?
            ));
        }
        if !s.loop_body.is_empty() {
            out.push_str(&format!(", loop_body={}", repr(py, &s.loop_body)?));
        }
        out.push(')');
        Ok(out)
    }
}

/// A flow: `Flow(steps, batch_max_concurrent=None, batch_join_rule="all_success")`
/// or `Flow.from_spec(spec)`. Not validated on construction (see
/// `validate`); `Scheduler` validates.
#[pyclass(module = "coderig.flow", name = "Flow", frozen)]
pub struct PyFlow {
    inner: Flow,
    steps: Vec<Py<PyStep>>,
}

#[pymethods]
impl PyFlow {
    #[new]
    #[pyo3(
        signature = (steps, batch_max_concurrent = None, batch_join_rule = None),
        text_signature = "(steps, batch_max_concurrent=None, batch_join_rule='all_success')"
    )]
    fn new(
        steps: Items<Bound<'_, PyStep>>,
        batch_max_concurrent: Option<&Bound<'_, PyAny>>,
        batch_join_rule: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let config = object(&[
            ("max_concurrent", batch_max_concurrent),
            ("join_rule", batch_join_rule),
        ])?;
        let spec = serde_json::json!({"steps": [], "batch_config": config});
        let config = decode(spec, json::flow)?.flow.batch_config;
        let inner = Flow::new(steps.0.iter().map(|s| s.get().inner.clone()).collect())
            .with_batch_config(config);
        Ok(PyFlow {
            inner,
            steps: steps.0.into_iter().map(Bound::unbind).collect(),
        })
    }

    /// A flow from its JSON form `{"steps": [...], "batch_config"?}`,
    /// decoded strictly by the core as the server decodes one (the same
    /// message for the same mistake). Conditions have no JSON form: fields
    /// holding them are set aside, so such a case never matches, such a
    /// do-while runs once and such a `when` excludes nothing.
    #[staticmethod]
    fn from_spec(py: Python<'_>, spec: &Bound<'_, PyAny>) -> PyResult<Self> {
        let inner = decode(to_json(spec, "")?, json::flow)?.flow;
        let steps = inner
            .steps
            .iter()
            .map(|s| PyStep::from_core(py, s.clone()))
            .collect::<PyResult<_>>()?;
        Ok(PyFlow { inner, steps })
    }

    /// The steps, in flow order.
    #[getter]
    fn steps(&self, py: Python<'_>) -> Vec<Py<PyStep>> {
        self.steps.iter().map(|s| s.clone_ref(py)).collect()
    }

    /// Cap on running steps per batch group (None: unbounded).
    #[getter]
    fn batch_max_concurrent(&self) -> Option<usize> {
        self.inner.batch_config.max_concurrent
    }

    /// The rule judging a batch group as a whole.
    #[getter]
    fn batch_join_rule(&self) -> &'static str {
        self.inner.batch_config.join_rule.as_str()
    }

    /// The first step with this id, or None.
    fn step(&self, py: Python<'_>, id: &str) -> Option<Py<PyStep>> {
        self.steps
            .iter()
            .find(|s| s.get().inner.id == id)
            .map(|s| s.clone_ref(py))
    }

    fn __len__(&self) -> usize {
        self.steps.len()
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let ids: Vec<&str> = self.inner.steps.iter().map(|s| s.id.as_str()).collect();
        Ok(format!(
            "Flow(<{} steps: {}>, batch_max_concurrent={}, batch_join_rule={})",
            ids.len(),
            ids.join(", "),
            repr(py, self.inner.batch_config.max_concurrent)?,
            repr(py, self.inner.batch_config.join_rule.as_str())?
        ))
    }
}

// ---------------------------------------------------------------------------
// State.

/// The state of one run, holding the core's state: `State(done=..., ...)`
/// or `State.from_dict(d)`, both decoded by the core (`skipped` given as a
/// collection of ids means reason `"condition_false"`).
///
/// The attributes return fresh copies (sets, dicts); assigning one
/// replaces that field (decoded as the constructor decodes it).
#[pyclass(module = "coderig.flow", name = "State")]
pub struct PyState {
    inner: SchedulerState,
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

// ---------------------------------------------------------------------------
// Pure decisions.

/// Steps that may start now, in flow order (batch caps not applied).
#[pyfunction]
fn ready_steps(f: PyRef<'_, PyFlow>, st: PyRef<'_, PyState>) -> Vec<String> {
    flow::ready_steps(&f.inner, &st.inner)
}

/// Whether `rule` lets a step with these `deps` run now in `st`.
#[pyfunction]
#[pyo3(signature = (deps, st, rule = "all_success"))]
fn evaluate_trigger_rule(
    deps: Items<String>,
    st: PyRef<'_, PyState>,
    rule: &str,
) -> PyResult<bool> {
    let rule: TriggerRule = name(rule)?;
    Ok(flow::evaluate_trigger_rule(&deps.0, &st.inner, rule))
}

/// `[(id, reason)]` of every not-started step that can never run, in flow
/// order (transitively), plus launch/switch exclusions not yet recorded.
#[pyfunction]
fn propagate_skips(f: PyRef<'_, PyFlow>, st: PyRef<'_, PyState>) -> Vec<(String, &'static str)> {
    flow::propagate_skips(&f.inner, &st.inner)
        .into_iter()
        .map(|(id, reason)| (id, reason.as_str()))
        .collect()
}

/// `{batch: (running: set, max_concurrent or None, join_rule)}` for every
/// batch group named by a step.
#[pyfunction]
fn build_batch_state(
    f: PyRef<'_, PyFlow>,
    in_flight: Items<String>,
) -> BTreeMap<String, (BTreeSet<String>, Option<usize>, &'static str)> {
    let in_flight: BTreeSet<String> = in_flight.0.into_iter().collect();
    flow::build_batch_state(&f.inner, &in_flight)
        .into_iter()
        .map(|(name, g)| (name, (g.running, g.max_concurrent, g.join_rule.as_str())))
        .collect()
}

/// The subset of `ready_ids` to dispatch now: each batch group admits at
/// most `max_concurrent - running`; ids that are not steps are dropped.
#[pyfunction]
fn ready_in_batch(
    f: PyRef<'_, PyFlow>,
    st: PyRef<'_, PyState>,
    ready_ids: Items<String>,
) -> Vec<String> {
    flow::ready_in_batch(&f.inner, &st.inner, &ready_ids.0)
}

/// Whether batch group `batch` as a whole satisfies the flow's join rule;
/// None when no step names that group.
#[pyfunction]
fn is_batch_joined(f: PyRef<'_, PyFlow>, st: PyRef<'_, PyState>, batch: &str) -> Option<bool> {
    flow::is_batch_joined(&f.inner, &st.inner, batch)
}

/// `(chosen label or None, [excluded ids])`: the first case whose condition
/// holds on `ctx` wins.
#[pyfunction]
fn resolve_switch(
    step: PyRef<'_, PyStep>,
    ctx: &Bound<'_, PyAny>,
) -> PyResult<(Option<String>, Vec<String>)> {
    let ctx = to_json(ctx, "ctx")?;
    with_conditions(|| flow::resolve_switch(&step.inner, &ctx))
}

/// Whether a do-while stops after `iterations` completed body runs.
#[pyfunction]
fn is_loop_terminated(
    step: PyRef<'_, PyStep>,
    ctx: &Bound<'_, PyAny>,
    iterations: u32,
) -> PyResult<bool> {
    let ctx = to_json(ctx, "ctx")?;
    with_conditions(|| flow::is_loop_terminated(&step.inner, &ctx, iterations))
}

/// True when every step is settled and none is in flight.
#[pyfunction]
fn is_run_complete(f: PyRef<'_, PyFlow>, st: PyRef<'_, PyState>) -> bool {
    flow::is_run_complete(&f.inner, &st.inner)
}

/// True when the run can make no progress.
#[pyfunction]
fn is_stuck(f: PyRef<'_, PyFlow>, st: PyRef<'_, PyState>) -> bool {
    flow::is_stuck(&f.inner, &st.inner)
}

/// `retry_count < max_retries`; `max_retries=None` (no retry policy) is
/// never a retry.
#[pyfunction]
fn should_retry(max_retries: Option<u32>, retry_count: u32) -> bool {
    flow::should_retry(max_retries, retry_count)
}

/// Whether a failure of this kind (`"timeout"`, `"rate_limited"`,
/// `"transient"`, `"crashed"`, `"validation"`, `"cancelled"`,
/// `"permanent"`) may succeed on a new attempt.
#[pyfunction]
fn is_retriable(kind: &str) -> PyResult<bool> {
    Ok(flow::is_retriable(name::<FailureKind>(kind)?))
}

/// The set of steps whose `when` guard is false on the launch `ctx`.
#[pyfunction]
fn manifest_steps(f: PyRef<'_, PyFlow>, ctx: &Bound<'_, PyAny>) -> PyResult<BTreeSet<String>> {
    let ctx = to_json(ctx, "ctx")?;
    with_conditions(|| flow::manifest_steps(&f.inner, &ctx))
}

/// The resume action of one step row: `"keep"`, `"re-dispatch"`,
/// `"mark-done"`, `"mark-failed"`, `"mark-cancelled"` or `"retry"`.
/// `task_state=None` means the task row is missing.
#[pyfunction]
#[pyo3(signature = (status, task_id = None, task_state = None, retry_count = 0, max_retries = None))]
fn reconcile_resume_step(
    status: &str,
    task_id: Option<&str>,
    task_state: Option<&str>,
    retry_count: u32,
    max_retries: Option<u32>,
) -> PyResult<&'static str> {
    let status: StepStatus = name(status)?;
    let task_state = task_state.map(name::<TaskState>).transpose()?;
    Ok(flow::reconcile_resume_step(status, task_id, task_state, retry_count, max_retries).as_str())
}

/// One persisted step row: `(step_id, task_id, status, retry_count, max_retries)`.
type RunRow = (String, Option<String>, String, u32, Option<u32>);

/// `[(step_id, action)]` in row order; a task id absent from `task_states`
/// is a missing task row.
#[pyfunction]
fn reconcile_run(
    rows: Items<RunRow>,
    task_states: HashMap<String, String>,
) -> PyResult<Vec<(String, &'static str)>> {
    let rows = rows
        .0
        .into_iter()
        .map(|(step_id, task_id, status, retry_count, max_retries)| {
            Ok(ResumeRow {
                step_id,
                task_id,
                status: name(&status)?,
                retry_count,
                max_retries,
            })
        })
        .collect::<PyResult<Vec<ResumeRow>>>()?;
    let task_states = task_states
        .into_iter()
        .map(|(task, state)| Ok((task, name(&state)?)))
        .collect::<PyResult<HashMap<String, TaskState>>>()?;
    Ok(flow::reconcile_run(&rows, &task_states)
        .into_iter()
        .map(|(id, action)| (id, action.as_str()))
        .collect())
}

/// Every problem of a flow (a `Flow`, or a spec dict decoded as
/// `Flow.from_spec` does) as dicts `{"code": ..., "message": ..., <the
/// problem's fields>}`, as `/api/flows/validate` lists them; empty when
/// the flow is valid.
#[pyfunction]
fn validate<'py>(py: Python<'py>, f: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let errors = match f.cast::<PyFlow>() {
        Ok(f) => flow::validate(&f.get().inner),
        Err(_) => flow::validate(&decode(to_json(f, "")?, json::flow)?.flow),
    };
    to_py(
        py,
        &Value::Array(coderig::error::validation_errors_json(&errors)),
    )
}

// ---------------------------------------------------------------------------
// Scheduler.

/// The incremental scheduler: `Scheduler(f, excluded=())` validates `f`
/// (InvalidInputError listing every problem) and skips the launch-excluded
/// steps at `start()`. Every event returns the steps that became ready
/// because of it, in flow order; every id returned counts as dispatched.
#[pyclass(module = "coderig.flow", name = "Scheduler")]
pub struct PyScheduler {
    inner: Scheduler,
    flow: Py<PyFlow>,
}

#[pymethods]
impl PyScheduler {
    #[new]
    #[pyo3(signature = (f, excluded = None))]
    fn new(f: Bound<'_, PyFlow>, excluded: Option<Items<String>>) -> PyResult<Self> {
        let excluded = excluded.map(|e| e.0).unwrap_or_default();
        let inner = Scheduler::with_excluded(f.get().inner.clone(), excluded).map_err(to_py_err)?;
        Ok(PyScheduler {
            inner,
            flow: f.unbind(),
        })
    }

    /// Starts the run; returns the steps ready at once.
    fn start(&mut self) -> PyResult<Vec<String>> {
        self.inner.start().map_err(to_py_err)
    }

    /// An in-flight step finished successfully (not for a switch).
    fn complete(&mut self, id: &str) -> PyResult<Vec<String>> {
        self.inner.complete(id).map_err(to_py_err)
    }

    /// An in-flight switch chose the case labelled `chosen` (None: no case
    /// matched); the untaken branches are skipped as `branch_not_taken`.
    #[pyo3(signature = (id, chosen = None))]
    fn complete_switch(&mut self, id: &str, chosen: Option<&str>) -> PyResult<Vec<String>> {
        self.inner.complete_switch(id, chosen).map_err(to_py_err)
    }

    /// `complete_switch` with the case chosen by `resolve_switch(step, ctx)`.
    /// If a condition raises, the exception propagates and the scheduler is
    /// unchanged.
    fn complete_switch_with(&mut self, id: &str, ctx: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
        let ctx = to_json(ctx, "ctx")?;
        // Resolving first (rather than the core's `complete_switch_with`)
        // lets a raising condition abort before the event is applied. An
        // unknown id or a non-switch resolves to None and is refused below.
        let chosen = match self.inner.flow().step(id) {
            Some(step) => with_conditions(|| flow::resolve_switch(step, &ctx))?.0,
            None => None,
        };
        self.inner
            .complete_switch(id, chosen.as_deref())
            .map_err(to_py_err)
    }

    /// An in-flight step failed for good (dependents follow their rules).
    fn fail(&mut self, id: &str) -> PyResult<Vec<String>> {
        self.inner.fail(id).map_err(to_py_err)
    }

    /// An in-flight step timed out for good (counts as failed).
    fn timeout(&mut self, id: &str) -> PyResult<Vec<String>> {
        self.inner.timeout(id).map_err(to_py_err)
    }

    /// A deliberate skip (reason `condition_false`) of an unfinished step.
    fn skip(&mut self, id: &str) -> PyResult<Vec<String>> {
        self.inner.skip(id).map_err(to_py_err)
    }

    /// Another iteration of an in-flight do-while whose body has finished.
    fn next_iteration(&mut self, id: &str) -> PyResult<Vec<String>> {
        self.inner.next_iteration(id).map_err(to_py_err)
    }

    /// `[(id, reason)]` of the skips recorded since the last call
    /// (propagated ones included), in the order they happened.
    fn take_skipped(&mut self) -> Vec<(String, &'static str)> {
        self.inner
            .take_skipped()
            .into_iter()
            .map(|(id, reason)| (id, reason.as_str()))
            .collect()
    }

    /// How `id` stands: `"pending"` (held steps too), `"in_flight"`,
    /// `"done"`, `"failed"`, `"timed_out"` or `"skipped"`.
    fn outcome(&self, id: &str) -> PyResult<&'static str> {
        self.inner
            .outcome(id)
            .map(|o| o.as_str())
            .map_err(to_py_err)
    }

    /// Why `id` was skipped (`"upstream_failed"`, `"branch_not_taken"`,
    /// `"condition_false"` or `"excluded"`), or `None` when its outcome is
    /// not `"skipped"`; an unknown id is `NotFoundIdError`.
    fn skip_reason(&self, id: &str) -> PyResult<Option<&'static str>> {
        self.inner
            .outcome(id)
            .map(|o| o.skip_reason().map(SkipReason::as_str))
            .map_err(to_py_err)
    }

    /// Steps ready but waiting for a batch slot, in flow order.
    fn held(&self) -> Vec<String> {
        self.inner.held()
    }

    /// Steps in flight, in flow order.
    fn in_flight(&self) -> Vec<String> {
        self.inner.in_flight()
    }

    /// True when every step is done, failed, timed out or skipped.
    fn is_complete(&self) -> bool {
        self.inner.is_complete()
    }

    /// Completed iterations of a do-while (0 for other steps).
    fn loop_iterations(&self, id: &str) -> PyResult<u32> {
        self.inner.loop_iterations(id).map_err(to_py_err)
    }

    /// A snapshot as a new `State`.
    fn state(&self) -> PyState {
        PyState {
            inner: self.inner.state(),
        }
    }

    /// The flow being scheduled.
    #[getter]
    fn flow(&self, py: Python<'_>) -> Py<PyFlow> {
        self.flow.clone_ref(py)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "Scheduler(<{} steps>, in_flight={}, complete={})",
            self.inner.flow().steps.len(),
            repr(py, self.inner.in_flight())?,
            repr(py, self.inner.is_complete())?
        ))
    }
}
