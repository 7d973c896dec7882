//! `coderig.arena`: the arena decisions of [`coderig::arena`], one thin
//! function each.
//!
//! Enum arguments (battle type, lane, status, task state) are strings parsed
//! by the core (ASCII case-insensitive, e.g. `"Q&A"` or `"canceled"` are
//! accepted); an unknown name raises `coderig.InvalidInputError` whose
//! message lists the valid names. Contestant ids are returned as the very
//! objects the caller passed (any type).

use crate::helpers::{name, to_py_err, Items};
use coderig::arena::{self, BattleType, Benchmark, ContestantStatus, Lane, TaskState};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::IntoPyDict;
use std::collections::HashMap;

/// Registers every function of `coderig.arena` on `m`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(classify_lane, m)?)?;
    m.add_function(wrap_pyfunction!(next_local_contestant, m)?)?;
    m.add_function(wrap_pyfunction!(dispatch_now, m)?)?;
    m.add_function(wrap_pyfunction!(is_battle_complete, m)?)?;
    m.add_function(wrap_pyfunction!(compute_benchmark, m)?)?;
    m.add_function(wrap_pyfunction!(benchmark_line, m)?)?;
    m.add_function(wrap_pyfunction!(sanitize_slug, m)?)?;
    m.add_function(wrap_pyfunction!(battle_slug, m)?)?;
    m.add_function(wrap_pyfunction!(contestant_dir, m)?)?;
    m.add_function(wrap_pyfunction!(reconcile_contestant_resume, m)?)?;
    m.add_function(wrap_pyfunction!(reconcile_contestants, m)?)?;
    m.add_function(wrap_pyfunction!(build_digest_prompt, m)?)?;
    m.add_function(wrap_pyfunction!(build_judge_prompt, m)?)?;
    m.add_function(wrap_pyfunction!(should_name_winner, m)?)?;
    m.add_function(wrap_pyfunction!(extract_winner, m)?)?;
    m.add_function(wrap_pyfunction!(build_cross_exam_prompt, m)?)?;
    m.add_function(wrap_pyfunction!(extract_verdict, m)?)?;
    m.add_function(wrap_pyfunction!(bradley_terry, m)?)?;
    m.add("RESULT_CAP_CHARS", arena::RESULT_CAP_CHARS)?;
    m.add("DIFF_CAP_CHARS", arena::DIFF_CAP_CHARS)?;
    m.add(
        "ORIGINAL_PROMPT_CAP_CHARS",
        arena::ORIGINAL_PROMPT_CAP_CHARS,
    )?;
    m.add("ANALYSIS_CAP_CHARS", arena::ANALYSIS_CAP_CHARS)?;
    Ok(())
}

/// `(id, lane, status)` rows with the names parsed; ids stay Python objects.
type ContestantRows<'py> = Vec<(Bound<'py, PyAny>, Lane, ContestantStatus)>;

fn contestant_rows<'py>(
    rows: Items<(Bound<'py, PyAny>, String, String)>,
) -> PyResult<ContestantRows<'py>> {
    rows.0
        .into_iter()
        .map(|(id, lane, status)| Ok((id, name(&lane)?, name(&status)?)))
        .collect()
}

/// `"local"` or `"cloud"`: Q&A contestants are always local; a coding
/// contestant is local when `local_models` holds its model (or
/// `"<identity>/<model>"`).
#[pyfunction]
fn classify_lane(
    battle_type: &str,
    identity: &str,
    model: &str,
    local_models: Items<String>,
) -> PyResult<&'static str> {
    let battle_type: BattleType = name(battle_type)?;
    Ok(arena::classify_lane(battle_type, identity, model, &local_models.0).as_str())
}

/// The id of the first queued local contestant, in the given order, or None.
#[pyfunction]
fn next_local_contestant<'py>(
    rows: Items<(Bound<'py, PyAny>, String, String)>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    Ok(arena::next_local_contestant(&contestant_rows(rows)?))
}

/// The ids to start now, in the given order: capacities cap the number of
/// running contestants per lane (`cloud_capacity=None`: unbounded).
#[pyfunction]
#[pyo3(signature = (rows, local_capacity = 1, cloud_capacity = None))]
fn dispatch_now<'py>(
    rows: Items<(Bound<'py, PyAny>, String, String)>,
    local_capacity: usize,
    cloud_capacity: Option<usize>,
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    Ok(arena::dispatch_now(
        &contestant_rows(rows)?,
        local_capacity,
        cloud_capacity,
    ))
}

/// True when there is at least one status and every one is done or error.
#[pyfunction]
fn is_battle_complete(statuses: Items<String>) -> PyResult<bool> {
    let statuses = statuses
        .0
        .iter()
        .map(|s| name(s))
        .collect::<PyResult<Vec<ContestantStatus>>>()?;
    Ok(arena::is_battle_complete(&statuses))
}

/// `(duration_ms, tokens_per_sec or None)`; the duration is clamped at 0,
/// tokens/sec only for the local lane with known tokens and duration > 0.
#[pyfunction]
fn compute_benchmark(
    started_ms: i64,
    ended_ms: i64,
    cost_tokens: Option<u64>,
    lane: &str,
) -> PyResult<(u64, Option<f64>)> {
    let b = arena::compute_benchmark(started_ms, ended_ms, cost_tokens, name(lane)?);
    Ok((b.duration_ms, b.tokens_per_sec))
}

/// The one-line benchmark summary the prompts quote, from the
/// `(duration_ms, tokens_per_sec)` pair of `compute_benchmark`.
#[pyfunction]
fn benchmark_line(
    benchmark: (u64, Option<f64>),
    cost_tokens: Option<u64>,
    lane: &str,
) -> PyResult<String> {
    let (duration_ms, tokens_per_sec) = benchmark;
    let b = Benchmark {
        duration_ms,
        tokens_per_sec,
    };
    Ok(arena::benchmark_line(&b, cost_tokens, name(lane)?))
}

/// Lowercase ASCII slug: runs of other characters become one `-`, trimmed,
/// at most 64 characters.
#[pyfunction]
fn sanitize_slug(s: &str) -> String {
    arena::sanitize_slug(s)
}

/// `datetime.datetime`, `timezone.utc`, the Unix epoch and one millisecond.
struct DateTimeTools {
    datetime: Py<PyAny>,
    utc: Py<PyAny>,
    epoch: Py<PyAny>,
    one_ms: Py<PyAny>,
}

static DATETIME_TOOLS: PyOnceLock<DateTimeTools> = PyOnceLock::new();

/// Milliseconds since 1970-01-01T00:00:00Z of a `datetime` (floored): an
/// aware one is converted to UTC, a naive one is taken as UTC. Computed with
/// `timedelta` integer division, so no float rounding moves a date.
fn unix_ms(created_at: &Bound<'_, PyAny>) -> PyResult<i64> {
    let py = created_at.py();
    let tools = DATETIME_TOOLS.get_or_try_init(py, || -> PyResult<_> {
        let module = py.import("datetime")?;
        let datetime = module.getattr("datetime")?;
        let utc = module.getattr("timezone")?.getattr("utc")?;
        let epoch = datetime.call1((1970, 1, 1, 0, 0, 0, 0, &utc))?;
        let one_ms = module
            .getattr("timedelta")?
            .call((), Some(&[("milliseconds", 1)].into_py_dict(py)?))?;
        Ok(DateTimeTools {
            datetime: datetime.unbind(),
            utc: utc.unbind(),
            epoch: epoch.unbind(),
            one_ms: one_ms.unbind(),
        })
    })?;
    if !created_at.is_instance(tools.datetime.bind(py))? {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "created_at must be a datetime.datetime, not {}",
            created_at.get_type().name()?
        )));
    }
    let aware = if created_at.call_method0("utcoffset")?.is_none() {
        let kwargs = [("tzinfo", tools.utc.bind(py))].into_py_dict(py)?;
        created_at.call_method("replace", (), Some(&kwargs))?
    } else {
        created_at.clone()
    };
    aware
        .sub(tools.epoch.bind(py))?
        .floor_div(tools.one_ms.bind(py))?
        .extract()
}

/// `YYYY-MM-DD-<type>-<first 8 hex of the id without dashes>`, the date in
/// UTC (aware datetimes are converted, naive ones taken as UTC).
#[pyfunction]
fn battle_slug(
    battle_id: &str,
    battle_type: &str,
    created_at: &Bound<'_, PyAny>,
) -> PyResult<String> {
    let battle_type: BattleType = name(battle_type)?;
    arena::battle_slug(battle_id, battle_type, unix_ms(created_at)?).map_err(to_py_err)
}

/// The contestant's folder name, `sanitize_slug("<identity>-<model>")`;
/// InvalidInputError when that is empty.
#[pyfunction]
fn contestant_dir(identity: &str, model: &str) -> PyResult<String> {
    arena::contestant_dir(identity, model).map_err(to_py_err)
}

/// The resume action of one contestant: `"keep"`, `"re-dispatch"`,
/// `"mark-done"`, `"mark-error"` or `"mark-cancelled"`. `task_state=None`
/// means the task row is missing; an empty `task_id` counts as none.
#[pyfunction]
#[pyo3(signature = (status, task_id = None, task_state = None))]
fn reconcile_contestant_resume(
    status: &str,
    task_id: Option<&str>,
    task_state: Option<&str>,
) -> PyResult<&'static str> {
    let task_state = task_state.map(name::<TaskState>).transpose()?;
    Ok(arena::reconcile_contestant_resume(name(status)?, task_id, task_state).as_str())
}

/// `[(contestant_id, action)]` in row order for rows
/// `(contestant_id, task_id or None, status)`; a task id missing from
/// `task_states` is a missing task row.
#[pyfunction]
fn reconcile_contestants<'py>(
    rows: Items<(Bound<'py, PyAny>, Option<String>, String)>,
    task_states: HashMap<String, String>,
) -> PyResult<Vec<(Bound<'py, PyAny>, &'static str)>> {
    let rows = rows
        .0
        .into_iter()
        .map(|(id, task_id, status)| Ok((id, task_id, name(&status)?)))
        .collect::<PyResult<Vec<(Bound<'py, PyAny>, Option<String>, ContestantStatus)>>>()?;
    let task_states = task_states
        .into_iter()
        .map(|(task, state)| Ok((task, name(&state)?)))
        .collect::<PyResult<HashMap<String, TaskState>>>()?;
    Ok(arena::reconcile_contestants(&rows, &task_states)
        .into_iter()
        .map(|(id, action)| (id, action.as_str()))
        .collect())
}

/// `(system, user)` asking for a digest of one contestant; the result is
/// capped at 8,000 characters, the diff at 5,000 (`None`: no diff section).
#[pyfunction]
#[pyo3(signature = (identity, model, result_md, benchmark_line, diff_patch = None))]
fn build_digest_prompt(
    identity: &str,
    model: &str,
    result_md: &str,
    benchmark_line: &str,
    diff_patch: Option<&str>,
) -> (String, String) {
    arena::build_digest_prompt(identity, model, result_md, benchmark_line, diff_patch)
}

/// Digest rows `(identity, model, digest, benchmark_line)`.
type Digests = Items<(String, String, String, String)>;

/// `(system, user)` of the judge, from digests only; the original prompt is
/// capped at 2,000 characters.
#[pyfunction]
fn build_judge_prompt(original_prompt: &str, digests: Digests) -> (String, String) {
    arena::build_judge_prompt(original_prompt, &digests.0)
}

/// True from two successful contestants on.
#[pyfunction]
fn should_name_winner(succeeded_count: usize) -> bool {
    arena::should_name_winner(succeeded_count)
}

/// `(identity, model)` from the judge's last `WINNER:` line, or None
/// (`NO_WINNER`, no such line, or an invalid value).
#[pyfunction]
fn extract_winner(judge_output: &str) -> Option<(String, String)> {
    arena::extract_winner(judge_output)
}

/// `(system, user)` asking `examiner_identity/examiner_model` to check the
/// judge's analysis and `proposed_winner` `(identity, model)`; with
/// `proposed_winner=None` (the judge named none) the examiner is asked for
/// an independent verdict.
#[pyfunction]
fn build_cross_exam_prompt(
    original_prompt: &str,
    digests: Digests,
    analysis: &str,
    proposed_winner: Option<(String, String)>,
    examiner_identity: &str,
    examiner_model: &str,
) -> (String, String) {
    let proposed_winner = proposed_winner
        .as_ref()
        .map(|(identity, model)| (identity.as_str(), model.as_str()));
    arena::build_cross_exam_prompt(
        original_prompt,
        &digests.0,
        analysis,
        proposed_winner,
        examiner_identity,
        examiner_model,
    )
}

/// `(identity, model)` from the last `VERDICT:` line, or None.
#[pyfunction]
fn extract_verdict(text: &str) -> Option<(String, String)> {
    arena::extract_verdict(text)
}

/// `[(name, score, ci_low, ci_high)]`, best first, from battles
/// `(winner, [losers])`; Elo-scale scores, bootstrap 95 % intervals seeded
/// by `seed`. The GIL is released during the fit.
#[pyfunction]
#[pyo3(signature = (battles, bootstrap = 1000, seed = 0))]
fn bradley_terry(
    py: Python<'_>,
    battles: Items<(String, Items<String>)>,
    bootstrap: usize,
    seed: u64,
) -> Vec<(String, f64, f64, f64)> {
    let battles: Vec<(String, Vec<String>)> = battles
        .0
        .into_iter()
        .map(|(winner, losers)| (winner, losers.0))
        .collect();
    py.detach(|| arena::bradley_terry(&battles, bootstrap, seed))
        .into_iter()
        .map(|r| (r.name, r.score, r.ci_low, r.ci_high))
        .collect()
}
