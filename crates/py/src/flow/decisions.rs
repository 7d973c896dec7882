//! The pure decisions of `coderig.flow` as functions over a `Flow` and a
//! `State`.

use super::{with_conditions, PyFlow, PyState, PyStep};
use crate::helpers::{decode, name, to_json, to_py, Items};
use coderig::flow::{self, FailureKind, ResumeRow, StepStatus, TaskState, TriggerRule};
use coderig::json;
use pyo3::prelude::*;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Steps that may start now, in flow order (batch caps not applied).
#[pyfunction]
pub(super) fn ready_steps(f: PyRef<'_, PyFlow>, st: PyRef<'_, PyState>) -> Vec<String> {
    flow::ready_steps(&f.inner, &st.inner)
}

/// Whether `rule` lets a step with these `deps` run now in `st`.
#[pyfunction]
#[pyo3(signature = (deps, st, rule = "all_success"))]
pub(super) fn evaluate_trigger_rule(
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
pub(super) fn propagate_skips(
    f: PyRef<'_, PyFlow>,
    st: PyRef<'_, PyState>,
) -> Vec<(String, &'static str)> {
    flow::propagate_skips(&f.inner, &st.inner)
        .into_iter()
        .map(|(id, reason)| (id, reason.as_str()))
        .collect()
}

/// `{batch: (running: set, max_concurrent or None, join_rule)}` for every
/// batch group named by a step.
#[pyfunction]
pub(super) fn build_batch_state(
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
pub(super) fn ready_in_batch(
    f: PyRef<'_, PyFlow>,
    st: PyRef<'_, PyState>,
    ready_ids: Items<String>,
) -> Vec<String> {
    flow::ready_in_batch(&f.inner, &st.inner, &ready_ids.0)
}

/// Whether batch group `batch` as a whole satisfies the flow's join rule;
/// None when no step names that group.
#[pyfunction]
pub(super) fn is_batch_joined(
    f: PyRef<'_, PyFlow>,
    st: PyRef<'_, PyState>,
    batch: &str,
) -> Option<bool> {
    flow::is_batch_joined(&f.inner, &st.inner, batch)
}

/// `(chosen label or None, [excluded ids])`: the first case whose condition
/// holds on `ctx` wins.
#[pyfunction]
pub(super) fn resolve_switch(
    step: PyRef<'_, PyStep>,
    ctx: &Bound<'_, PyAny>,
) -> PyResult<(Option<String>, Vec<String>)> {
    let ctx = to_json(ctx, "ctx")?;
    with_conditions(|| flow::resolve_switch(&step.inner, &ctx))
}

/// Whether a do-while stops after `iterations` completed body runs.
#[pyfunction]
pub(super) fn is_loop_terminated(
    step: PyRef<'_, PyStep>,
    ctx: &Bound<'_, PyAny>,
    iterations: u32,
) -> PyResult<bool> {
    let ctx = to_json(ctx, "ctx")?;
    with_conditions(|| flow::is_loop_terminated(&step.inner, &ctx, iterations))
}

/// True when every step is settled and none is in flight.
#[pyfunction]
pub(super) fn is_run_complete(f: PyRef<'_, PyFlow>, st: PyRef<'_, PyState>) -> bool {
    flow::is_run_complete(&f.inner, &st.inner)
}

/// True when the run can make no progress.
#[pyfunction]
pub(super) fn is_stuck(f: PyRef<'_, PyFlow>, st: PyRef<'_, PyState>) -> bool {
    flow::is_stuck(&f.inner, &st.inner)
}

/// `retry_count < max_retries`; `max_retries=None` (no retry policy) is
/// never a retry.
#[pyfunction]
pub(super) fn should_retry(max_retries: Option<u32>, retry_count: u32) -> bool {
    flow::should_retry(max_retries, retry_count)
}

/// Whether a failure of this kind (`"timeout"`, `"rate_limited"`,
/// `"transient"`, `"crashed"`, `"validation"`, `"cancelled"`,
/// `"permanent"`) may succeed on a new attempt.
#[pyfunction]
pub(super) fn is_retriable(kind: &str) -> PyResult<bool> {
    Ok(flow::is_retriable(name::<FailureKind>(kind)?))
}

/// The set of steps whose `when` guard is false on the launch `ctx`.
#[pyfunction]
pub(super) fn manifest_steps(
    f: PyRef<'_, PyFlow>,
    ctx: &Bound<'_, PyAny>,
) -> PyResult<BTreeSet<String>> {
    let ctx = to_json(ctx, "ctx")?;
    with_conditions(|| flow::manifest_steps(&f.inner, &ctx))
}

/// The resume action of one step row: `"keep"`, `"re-dispatch"`,
/// `"mark-done"`, `"mark-failed"`, `"mark-cancelled"` or `"retry"`.
/// `task_state=None` means the task row is missing.
#[pyfunction]
#[pyo3(signature = (status, task_id = None, task_state = None, retry_count = 0, max_retries = None))]
pub(super) fn reconcile_resume_step(
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
pub(super) fn reconcile_run(
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
pub(super) fn validate<'py>(py: Python<'py>, f: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let errors = match f.cast::<PyFlow>() {
        Ok(f) => flow::validate(&f.get().inner),
        Err(_) => flow::validate(&decode(to_json(f, "")?, json::flow)?.flow),
    };
    to_py(
        py,
        &Value::Array(coderig::flow::validation_errors_json(&errors)),
    )
}
