//! `coderig.flow`: the flow spec, the pure scheduling decisions and the
//! incremental scheduler of [`coderig::flow`], as thin Python wrappers.
//!
//! Conventions (the Python docs in `flow.pyi` say the same):
//!
//! - Names (step kind, trigger rule, skip reason, step status, task state,
//!   failure kind) are the core's snake_case strings; an unknown one raises
//!   `coderig.InvalidInputError` listing the valid names. So does every
//!   refusal of the core (an invalid flow given to `Scheduler`, an event that
//!   does not apply to a step).
//! - Conditions are Python callables `condition(ctx) -> truthy`. The core
//!   calls them through a [`Condition`] closure that re-acquires the GIL. The
//!   `ctx` must be JSON-like (dict with str keys, list, tuple, str, int,
//!   float, bool, None; tuples and sets arrive as lists, NaN and infinities
//!   as None, JSON having neither); each call receives a fresh copy of it. If a
//!   condition raises, no further condition is called during that core call
//!   (the failing one counts as false) and the exception is re-raised once
//!   the core call returns: an exception is never swallowed.
//!   The core's closures own their callables out of the GC's sight, so a
//!   reference cycle through a condition (a lambda that refers to its own
//!   `Flow`) is not collected by Python's cycle collector.
//! - `State` holds plain Python containers, so `st.done.add("a")` works; the
//!   containers are converted to the core's state on every call.

use crate::convert::{invalid, parse, Items};
use coderig::flow::{
    self, BatchConfig, Case, Condition, FailureKind, Flow, ResumeRow, Scheduler, SchedulerState,
    SkipReason, Step, StepKind, StepOutcome, StepStatus, SwitchResult, TaskState, TriggerRule,
};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PySet};
use pyo3::IntoPyObjectExt;
use serde_json::Value;
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
fn py_condition(callable: Py<PyAny>) -> Condition {
    Condition::new(move |ctx: &Value| {
        if CONDITION_ERROR.with(|slot| slot.borrow().is_some()) {
            return false;
        }
        Python::attach(|py| {
            let verdict = pythonize::pythonize(py, ctx)
                .map_err(PyErr::from)
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

/// A JSON-like Python value as the core's context.
fn ctx_value(ctx: &Bound<'_, PyAny>) -> PyResult<Value> {
    pythonize::depythonize(ctx).map_err(|e| {
        invalid(format!(
            "ctx must be JSON-like (dict with str keys, list, tuple, str, int, float, bool, None): {e}"
        ))
    })
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
        label: String,
        steps: Items<String>,
        condition: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let condition = callable_arg(condition, "condition")?;
        Ok(PyCase {
            inner: Case {
                label,
                steps: steps.0,
                condition: condition.as_ref().map(|c| py_condition(c.clone().unbind())),
            },
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

#[pymethods]
impl PyStep {
    #[new]
    #[pyo3(signature = (
        id, kind = "code", deps = None, trigger_rule = "all_success", batch = None,
        max_retries = 0, cases = None, default_branch = None, loop_body = None,
        loop_condition = None, loop_max_iterations = 100, *, timeout = None, when = None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        id: String,
        kind: &str,
        deps: Option<Items<String>>,
        trigger_rule: &str,
        batch: Option<String>,
        max_retries: u32,
        cases: Option<Items<Bound<'_, PyCase>>>,
        default_branch: Option<Items<String>>,
        loop_body: Option<Items<String>>,
        loop_condition: Option<Bound<'_, PyAny>>,
        loop_max_iterations: u32,
        timeout: Option<u64>,
        when: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let cases = cases.map(|c| c.0).unwrap_or_default();
        let loop_condition = callable_arg(loop_condition, "loop_condition")?;
        let when = callable_arg(when, "when")?;
        let inner = Step {
            id,
            kind: parse::<StepKind>(kind)?,
            deps: deps.map(|d| d.0).unwrap_or_default(),
            trigger_rule: parse::<TriggerRule>(trigger_rule)?,
            batch,
            max_retries,
            timeout,
            cases: cases.iter().map(|c| c.get().inner.clone()).collect(),
            default_branch: default_branch.map(|d| d.0).unwrap_or_default(),
            loop_body: loop_body.map(|b| b.0).unwrap_or_default(),
            loop_condition: loop_condition
                .as_ref()
                .map(|c| py_condition(c.clone().unbind())),
            loop_max_iterations,
            when: when.as_ref().map(|c| py_condition(c.clone().unbind())),
        };
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

/// A flow: `Flow(steps, batch_max_concurrent=None, batch_join_rule="all_success")`.
/// Not validated on construction (see `validate`); `Scheduler` validates.
#[pyclass(module = "coderig.flow", name = "Flow", frozen)]
pub struct PyFlow {
    inner: Flow,
    steps: Vec<Py<PyStep>>,
}

#[pymethods]
impl PyFlow {
    #[new]
    #[pyo3(signature = (steps, batch_max_concurrent = None, batch_join_rule = "all_success"))]
    fn new(
        steps: Items<Bound<'_, PyStep>>,
        batch_max_concurrent: Option<usize>,
        batch_join_rule: &str,
    ) -> PyResult<Self> {
        let inner = Flow::new(steps.0.iter().map(|s| s.get().inner.clone()).collect())
            .with_batch_config(BatchConfig {
                max_concurrent: batch_max_concurrent,
                join_rule: parse(batch_join_rule)?,
            });
        Ok(PyFlow {
            inner,
            steps: steps.0.into_iter().map(Bound::unbind).collect(),
        })
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

/// The state of one run, as plain, mutable Python containers:
/// `done`, `failed`, `in_flight`, `excluded`, `timed_out` are sets of ids;
/// `skipped` is a dict `{id: reason}`; `switch_results` is
/// `{switch_id: (chosen_label or None, set of excluded ids)}`;
/// `loop_iterations` is `{do_while_id: completed iterations}`.
///
/// `skipped` may be given as a dict or as any collection of ids, which are
/// then deliberate skips with reason `"condition_false"` (what
/// `Scheduler.skip` records).
#[pyclass(module = "coderig.flow", name = "State")]
pub struct PyState {
    done: Py<PySet>,
    skipped: Py<PyDict>,
    failed: Py<PySet>,
    in_flight: Py<PySet>,
    excluded: Py<PySet>,
    timed_out: Py<PySet>,
    switch_results: Py<PyDict>,
    loop_iterations: Py<PyDict>,
}

/// A fresh set of the ids of `items` (None: empty).
fn id_set(py: Python<'_>, items: Option<Items<String>>) -> PyResult<Py<PySet>> {
    Ok(PySet::new(py, items.map(|i| i.0).unwrap_or_default())?.unbind())
}

/// `{id: reason}` from a dict (reasons checked) or from a collection of ids
/// (reason `condition_false`).
fn skipped_dict(py: Python<'_>, skipped: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyDict>> {
    let out = PyDict::new(py);
    match skipped {
        None => {}
        Some(obj) if obj.is_none() => {}
        Some(obj) => {
            if let Ok(dict) = obj.cast::<PyDict>() {
                for (id, reason) in dict.iter() {
                    let reason: SkipReason = parse(&reason.extract::<String>()?)?;
                    out.set_item(id.extract::<String>()?, reason.as_str())?;
                }
            } else {
                for id in obj.extract::<Items<String>>()?.0 {
                    out.set_item(id, SkipReason::ConditionFalse.as_str())?;
                }
            }
        }
    }
    Ok(out.unbind())
}

/// `{switch: (chosen or None, set of excluded)}` from any such mapping.
fn switch_results_dict(py: Python<'_>, results: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyDict>> {
    let out = PyDict::new(py);
    if let Some(obj) = results.filter(|o| !o.is_none()) {
        let parsed: HashMap<String, (Option<String>, Items<String>)> = obj.extract()?;
        for (id, (chosen, excluded)) in parsed {
            out.set_item(id, (chosen, PySet::new(py, excluded.0)?))?;
        }
    }
    Ok(out.unbind())
}

/// `{do_while: iterations}` from any such mapping.
fn loop_iterations_dict(
    py: Python<'_>,
    iterations: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyDict>> {
    let out = PyDict::new(py);
    if let Some(obj) = iterations.filter(|o| !o.is_none()) {
        let parsed: HashMap<String, u32> = obj.extract()?;
        for (id, n) in parsed {
            out.set_item(id, n)?;
        }
    }
    Ok(out.unbind())
}

impl PyState {
    /// The core's state, read from the current contents of the containers.
    fn to_core(&self, py: Python<'_>) -> PyResult<SchedulerState> {
        let ids = |set: &Py<PySet>| -> PyResult<BTreeSet<String>> {
            Ok(set
                .bind(py)
                .extract::<Items<String>>()?
                .0
                .into_iter()
                .collect())
        };
        let mut skipped = BTreeMap::new();
        for (id, reason) in self.skipped.bind(py).iter() {
            skipped.insert(
                id.extract::<String>()?,
                parse(&reason.extract::<String>()?)?,
            );
        }
        let switch_results: HashMap<String, (Option<String>, Items<String>)> =
            self.switch_results.bind(py).extract()?;
        Ok(SchedulerState {
            done: ids(&self.done)?,
            skipped,
            failed: ids(&self.failed)?,
            in_flight: ids(&self.in_flight)?,
            excluded: ids(&self.excluded)?,
            timed_out: ids(&self.timed_out)?,
            switch_results: switch_results
                .into_iter()
                .map(|(id, (chosen, excluded))| {
                    let excluded = excluded.0.into_iter().collect();
                    (id, SwitchResult { chosen, excluded })
                })
                .collect(),
            loop_iterations: self.loop_iterations.bind(py).extract()?,
        })
    }

    /// Python containers holding a copy of the core's state.
    fn from_core(py: Python<'_>, st: &SchedulerState) -> PyResult<Self> {
        let set =
            |ids: &BTreeSet<String>| -> PyResult<Py<PySet>> { Ok(PySet::new(py, ids)?.unbind()) };
        let skipped = PyDict::new(py);
        for (id, reason) in &st.skipped {
            skipped.set_item(id, reason.as_str())?;
        }
        let switch_results = PyDict::new(py);
        for (id, r) in &st.switch_results {
            switch_results.set_item(id, (r.chosen.as_deref(), PySet::new(py, &r.excluded)?))?;
        }
        Ok(PyState {
            done: set(&st.done)?,
            skipped: skipped.unbind(),
            failed: set(&st.failed)?,
            in_flight: set(&st.in_flight)?,
            excluded: set(&st.excluded)?,
            timed_out: set(&st.timed_out)?,
            switch_results: switch_results.unbind(),
            loop_iterations: st.loop_iterations.clone().into_pyobject(py)?.unbind(),
        })
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
        py: Python<'_>,
        done: Option<Items<String>>,
        skipped: Option<Bound<'_, PyAny>>,
        failed: Option<Items<String>>,
        in_flight: Option<Items<String>>,
        excluded: Option<Items<String>>,
        timed_out: Option<Items<String>>,
        switch_results: Option<Bound<'_, PyAny>>,
        loop_iterations: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        Ok(PyState {
            done: id_set(py, done)?,
            skipped: skipped_dict(py, skipped.as_ref())?,
            failed: id_set(py, failed)?,
            in_flight: id_set(py, in_flight)?,
            excluded: id_set(py, excluded)?,
            timed_out: id_set(py, timed_out)?,
            switch_results: switch_results_dict(py, switch_results.as_ref())?,
            loop_iterations: loop_iterations_dict(py, loop_iterations.as_ref())?,
        })
    }

    /// Steps that finished successfully (a set, mutable in place).
    #[getter]
    fn done(&self, py: Python<'_>) -> Py<PySet> {
        self.done.clone_ref(py)
    }

    #[setter]
    fn set_done(&mut self, py: Python<'_>, ids: Items<String>) -> PyResult<()> {
        self.done = id_set(py, Some(ids))?;
        Ok(())
    }

    /// `{id: reason}` of steps that did not run (a dict, mutable in place).
    #[getter]
    fn skipped(&self, py: Python<'_>) -> Py<PyDict> {
        self.skipped.clone_ref(py)
    }

    #[setter]
    fn set_skipped(&mut self, value: Bound<'_, PyAny>) -> PyResult<()> {
        self.skipped = skipped_dict(value.py(), Some(&value))?;
        Ok(())
    }

    /// Steps that failed (a set).
    #[getter]
    fn failed(&self, py: Python<'_>) -> Py<PySet> {
        self.failed.clone_ref(py)
    }

    #[setter]
    fn set_failed(&mut self, py: Python<'_>, ids: Items<String>) -> PyResult<()> {
        self.failed = id_set(py, Some(ids))?;
        Ok(())
    }

    /// Steps dispatched and not finished (a set).
    #[getter]
    fn in_flight(&self, py: Python<'_>) -> Py<PySet> {
        self.in_flight.clone_ref(py)
    }

    #[setter]
    fn set_in_flight(&mut self, py: Python<'_>, ids: Items<String>) -> PyResult<()> {
        self.in_flight = id_set(py, Some(ids))?;
        Ok(())
    }

    /// Steps excluded at launch (a set).
    #[getter]
    fn excluded(&self, py: Python<'_>) -> Py<PySet> {
        self.excluded.clone_ref(py)
    }

    #[setter]
    fn set_excluded(&mut self, py: Python<'_>, ids: Items<String>) -> PyResult<()> {
        self.excluded = id_set(py, Some(ids))?;
        Ok(())
    }

    /// Steps that timed out (a set; they count as failed).
    #[getter]
    fn timed_out(&self, py: Python<'_>) -> Py<PySet> {
        self.timed_out.clone_ref(py)
    }

    #[setter]
    fn set_timed_out(&mut self, py: Python<'_>, ids: Items<String>) -> PyResult<()> {
        self.timed_out = id_set(py, Some(ids))?;
        Ok(())
    }

    /// `{switch_id: (chosen_label or None, set of excluded ids)}`.
    #[getter]
    fn switch_results(&self, py: Python<'_>) -> Py<PyDict> {
        self.switch_results.clone_ref(py)
    }

    #[setter]
    fn set_switch_results(&mut self, value: Bound<'_, PyAny>) -> PyResult<()> {
        self.switch_results = switch_results_dict(value.py(), Some(&value))?;
        Ok(())
    }

    /// `{do_while_id: completed iterations}`.
    #[getter]
    fn loop_iterations(&self, py: Python<'_>) -> Py<PyDict> {
        self.loop_iterations.clone_ref(py)
    }

    #[setter]
    fn set_loop_iterations(&mut self, value: Bound<'_, PyAny>) -> PyResult<()> {
        self.loop_iterations = loop_iterations_dict(value.py(), Some(&value))?;
        Ok(())
    }

    /// How `id` stands: `"pending"`, `"in_flight"`, `"done"`, `"failed"`,
    /// `"timed_out"` or `"skipped"` (precedence as in the core).
    fn outcome(&self, py: Python<'_>, id: &str) -> PyResult<&'static str> {
        Ok(outcome_name(self.to_core(py)?.outcome(id)))
    }

    /// Why `id` was skipped (`"upstream_failed"`, `"branch_not_taken"`,
    /// `"condition_false"` or `"excluded"`), or `None` when its outcome is
    /// not `"skipped"`.
    fn skip_reason(&self, py: Python<'_>, id: &str) -> PyResult<Option<&'static str>> {
        Ok(self
            .to_core(py)?
            .outcome(id)
            .skip_reason()
            .map(SkipReason::as_str))
    }

    /// Equal when the core states are equal (another type: NotImplemented).
    fn __eq__(&self, py: Python<'_>, other: PyRef<'_, PyState>) -> PyResult<bool> {
        Ok(self.to_core(py)? == other.to_core(py)?)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let fields: [(&str, &Bound<'_, PyAny>); 8] = [
            ("done", self.done.bind(py).as_any()),
            ("skipped", self.skipped.bind(py).as_any()),
            ("failed", self.failed.bind(py).as_any()),
            ("in_flight", self.in_flight.bind(py).as_any()),
            ("excluded", self.excluded.bind(py).as_any()),
            ("timed_out", self.timed_out.bind(py).as_any()),
            ("switch_results", self.switch_results.bind(py).as_any()),
            ("loop_iterations", self.loop_iterations.bind(py).as_any()),
        ];
        let mut parts = Vec::new();
        for (name, value) in fields {
            if value.len()? > 0 {
                parts.push(format!("{name}={}", value.repr()?));
            }
        }
        Ok(format!("State({})", parts.join(", ")))
    }
}

fn outcome_name(o: StepOutcome) -> &'static str {
    match o {
        StepOutcome::Pending => "pending",
        StepOutcome::InFlight => "in_flight",
        StepOutcome::Done => "done",
        StepOutcome::Failed => "failed",
        StepOutcome::TimedOut => "timed_out",
        StepOutcome::Skipped(_) => "skipped",
    }
}

// ---------------------------------------------------------------------------
// Pure decisions.

/// Steps that may start now, in flow order (batch caps not applied).
#[pyfunction]
fn ready_steps(
    py: Python<'_>,
    f: PyRef<'_, PyFlow>,
    st: PyRef<'_, PyState>,
) -> PyResult<Vec<String>> {
    Ok(flow::ready_steps(&f.inner, &st.to_core(py)?))
}

/// Whether `rule` lets a step with these `deps` run now in `st`.
#[pyfunction]
#[pyo3(signature = (deps, st, rule = "all_success"))]
fn evaluate_trigger_rule(
    py: Python<'_>,
    deps: Items<String>,
    st: PyRef<'_, PyState>,
    rule: &str,
) -> PyResult<bool> {
    let rule: TriggerRule = parse(rule)?;
    Ok(flow::evaluate_trigger_rule(&deps.0, &st.to_core(py)?, rule))
}

/// `[(id, reason)]` of every not-started step that can never run, in flow
/// order (transitively), plus launch/switch exclusions not yet recorded.
#[pyfunction]
fn propagate_skips(
    py: Python<'_>,
    f: PyRef<'_, PyFlow>,
    st: PyRef<'_, PyState>,
) -> PyResult<Vec<(String, &'static str)>> {
    Ok(flow::propagate_skips(&f.inner, &st.to_core(py)?)
        .into_iter()
        .map(|(id, reason)| (id, reason.as_str()))
        .collect())
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
    py: Python<'_>,
    f: PyRef<'_, PyFlow>,
    st: PyRef<'_, PyState>,
    ready_ids: Items<String>,
) -> PyResult<Vec<String>> {
    Ok(flow::ready_in_batch(
        &f.inner,
        &st.to_core(py)?,
        &ready_ids.0,
    ))
}

/// Whether batch group `batch` as a whole satisfies the flow's join rule;
/// None when no step names that group.
#[pyfunction]
fn is_batch_joined(
    py: Python<'_>,
    f: PyRef<'_, PyFlow>,
    st: PyRef<'_, PyState>,
    batch: &str,
) -> PyResult<Option<bool>> {
    Ok(flow::is_batch_joined(&f.inner, &st.to_core(py)?, batch))
}

/// `(chosen label or None, [excluded ids])`: the first case whose condition
/// holds on `ctx` wins.
#[pyfunction]
fn resolve_switch(
    step: PyRef<'_, PyStep>,
    ctx: &Bound<'_, PyAny>,
) -> PyResult<(Option<String>, Vec<String>)> {
    let ctx = ctx_value(ctx)?;
    with_conditions(|| flow::resolve_switch(&step.inner, &ctx))
}

/// Whether a do-while stops after `iterations` completed body runs.
#[pyfunction]
fn is_loop_terminated(
    step: PyRef<'_, PyStep>,
    ctx: &Bound<'_, PyAny>,
    iterations: u32,
) -> PyResult<bool> {
    let ctx = ctx_value(ctx)?;
    with_conditions(|| flow::is_loop_terminated(&step.inner, &ctx, iterations))
}

/// True when every step is settled and none is in flight.
#[pyfunction]
fn is_run_complete(py: Python<'_>, f: PyRef<'_, PyFlow>, st: PyRef<'_, PyState>) -> PyResult<bool> {
    Ok(flow::is_run_complete(&f.inner, &st.to_core(py)?))
}

/// True when the run can make no progress.
#[pyfunction]
fn is_stuck(py: Python<'_>, f: PyRef<'_, PyFlow>, st: PyRef<'_, PyState>) -> PyResult<bool> {
    Ok(flow::is_stuck(&f.inner, &st.to_core(py)?))
}

/// `retry_count < max_retries`.
#[pyfunction]
fn should_retry(max_retries: u32, retry_count: u32) -> bool {
    flow::should_retry(max_retries, retry_count)
}

/// Whether a failure of this kind (`"timeout"`, `"rate_limited"`,
/// `"transient"`, `"crashed"`, `"validation"`, `"cancelled"`,
/// `"permanent"`) may succeed on a new attempt.
#[pyfunction]
fn is_retriable(kind: &str) -> PyResult<bool> {
    Ok(flow::is_retriable(parse::<FailureKind>(kind)?))
}

/// The set of steps whose `when` guard is false on the launch `ctx`.
#[pyfunction]
fn manifest_steps(f: PyRef<'_, PyFlow>, ctx: &Bound<'_, PyAny>) -> PyResult<BTreeSet<String>> {
    let ctx = ctx_value(ctx)?;
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
    let status: StepStatus = parse(status)?;
    let task_state = task_state.map(parse::<TaskState>).transpose()?;
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
                status: parse(&status)?,
                retry_count,
                max_retries,
            })
        })
        .collect::<PyResult<Vec<ResumeRow>>>()?;
    let task_states = task_states
        .into_iter()
        .map(|(task, state)| Ok((task, parse(&state)?)))
        .collect::<PyResult<HashMap<String, TaskState>>>()?;
    Ok(flow::reconcile_run(&rows, &task_states)
        .into_iter()
        .map(|(id, action)| (id, action.as_str()))
        .collect())
}

/// Every problem of the flow spec as dicts `{"code": ..., "message": ...,
/// <the error's fields>}`; empty when the flow is valid.
#[pyfunction]
fn validate<'py>(py: Python<'py>, f: PyRef<'_, PyFlow>) -> PyResult<Vec<Bound<'py, PyAny>>> {
    flow::validate(&f.inner)
        .iter()
        .map(|e| {
            let dict = pythonize::pythonize(py, e)?;
            dict.set_item("message", e.to_string())?;
            Ok(dict)
        })
        .collect()
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
        let inner = Scheduler::with_excluded(f.get().inner.clone(), excluded).map_err(invalid)?;
        Ok(PyScheduler {
            inner,
            flow: f.unbind(),
        })
    }

    /// Starts the run; returns the steps ready at once.
    fn start(&mut self) -> PyResult<Vec<String>> {
        self.inner.start().map_err(invalid)
    }

    /// An in-flight step finished successfully (not for a switch).
    fn complete(&mut self, id: &str) -> PyResult<Vec<String>> {
        self.inner.complete(id).map_err(invalid)
    }

    /// An in-flight switch chose the case labelled `chosen` (None: no case
    /// matched); the untaken branches are skipped as `branch_not_taken`.
    #[pyo3(signature = (id, chosen = None))]
    fn complete_switch(&mut self, id: &str, chosen: Option<&str>) -> PyResult<Vec<String>> {
        self.inner.complete_switch(id, chosen).map_err(invalid)
    }

    /// `complete_switch` with the case chosen by `resolve_switch(step, ctx)`.
    /// If a condition raises, the exception propagates and the scheduler is
    /// unchanged.
    fn complete_switch_with(&mut self, id: &str, ctx: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
        let ctx = ctx_value(ctx)?;
        // Resolving first (rather than the core's `complete_switch_with`)
        // lets a raising condition abort before the event is applied. An
        // unknown id or a non-switch resolves to None and is refused below.
        let chosen = match self.inner.flow().step(id) {
            Some(step) => with_conditions(|| flow::resolve_switch(step, &ctx))?.0,
            None => None,
        };
        self.inner
            .complete_switch(id, chosen.as_deref())
            .map_err(invalid)
    }

    /// An in-flight step failed for good (dependents follow their rules).
    fn fail(&mut self, id: &str) -> PyResult<Vec<String>> {
        self.inner.fail(id).map_err(invalid)
    }

    /// An in-flight step timed out for good (counts as failed).
    fn timeout(&mut self, id: &str) -> PyResult<Vec<String>> {
        self.inner.timeout(id).map_err(invalid)
    }

    /// A deliberate skip (reason `condition_false`) of an unfinished step.
    fn skip(&mut self, id: &str) -> PyResult<Vec<String>> {
        self.inner.skip(id).map_err(invalid)
    }

    /// Another iteration of an in-flight do-while whose body has finished.
    fn next_iteration(&mut self, id: &str) -> PyResult<Vec<String>> {
        self.inner.next_iteration(id).map_err(invalid)
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
        self.inner.outcome(id).map(outcome_name).map_err(invalid)
    }

    /// Why `id` was skipped (`"upstream_failed"`, `"branch_not_taken"`,
    /// `"condition_false"` or `"excluded"`), or `None` when its outcome is
    /// not `"skipped"`; an unknown id is `InvalidInputError`.
    fn skip_reason(&self, id: &str) -> PyResult<Option<&'static str>> {
        self.inner
            .outcome(id)
            .map(|o| o.skip_reason().map(SkipReason::as_str))
            .map_err(invalid)
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
        self.inner.loop_iterations(id).map_err(invalid)
    }

    /// A snapshot as a new `State`.
    fn state(&self, py: Python<'_>) -> PyResult<PyState> {
        PyState::from_core(py, &self.inner.state())
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
