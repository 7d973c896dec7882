//! `Scheduler`: the incremental scheduler of one run.

use super::{repr, with_conditions, PyFlow, PyState};
use crate::helpers::{to_json, to_py_err, Items};
use coderig::flow::{self, Scheduler, SkipReason};
use pyo3::prelude::*;

/// The incremental scheduler: `Scheduler(f, excluded=())` validates `f`
/// (InvalidInputError listing every problem) and skips the launch-excluded
/// steps at `start()`. Every event returns the steps that became ready
/// because of it, in flow order; every id returned counts as dispatched.
#[pyclass(module = "coderig.flow", name = "Scheduler")]
pub struct PyScheduler {
    pub(super) inner: Scheduler,
    pub(super) flow: Py<PyFlow>,
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
