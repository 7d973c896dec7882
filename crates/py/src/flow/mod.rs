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
//!
//! Rooms: `spec.rs` (`Case`, `Step`, `Flow`), `state.rs` (`State`),
//! `decisions.rs` (the pure functions), `scheduler.rs` (`Scheduler`); this
//! file registers them and holds the conditions they share.

mod decisions;
mod scheduler;
mod spec;
mod state;

pub use scheduler::PyScheduler;
pub use spec::{PyCase, PyFlow, PyStep};
pub use state::PyState;

use crate::helpers::to_py;
use coderig::flow::Condition;
use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;
use serde_json::Value;
use std::cell::RefCell;

/// Registers the classes and functions of `coderig.flow` on `m`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyStep>()?;
    m.add_class::<PyCase>()?;
    m.add_class::<PyFlow>()?;
    m.add_class::<PyState>()?;
    m.add_class::<PyScheduler>()?;
    m.add_function(wrap_pyfunction!(decisions::ready_steps, m)?)?;
    m.add_function(wrap_pyfunction!(decisions::evaluate_trigger_rule, m)?)?;
    m.add_function(wrap_pyfunction!(decisions::propagate_skips, m)?)?;
    m.add_function(wrap_pyfunction!(decisions::build_batch_state, m)?)?;
    m.add_function(wrap_pyfunction!(decisions::ready_in_batch, m)?)?;
    m.add_function(wrap_pyfunction!(decisions::is_batch_joined, m)?)?;
    m.add_function(wrap_pyfunction!(decisions::resolve_switch, m)?)?;
    m.add_function(wrap_pyfunction!(decisions::is_loop_terminated, m)?)?;
    m.add_function(wrap_pyfunction!(decisions::is_run_complete, m)?)?;
    m.add_function(wrap_pyfunction!(decisions::is_stuck, m)?)?;
    m.add_function(wrap_pyfunction!(decisions::should_retry, m)?)?;
    m.add_function(wrap_pyfunction!(decisions::is_retriable, m)?)?;
    m.add_function(wrap_pyfunction!(decisions::manifest_steps, m)?)?;
    m.add_function(wrap_pyfunction!(decisions::reconcile_resume_step, m)?)?;
    m.add_function(wrap_pyfunction!(decisions::reconcile_run, m)?)?;
    m.add_function(wrap_pyfunction!(decisions::validate, m)?)?;
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
