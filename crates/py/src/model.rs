//! `coderig.model`: which served model a name means, what a failed model
//! call means, and fallback chains (the core's `coderig::model`).

use crate::helpers::to_dict;
use crate::helpers::{name, to_py_err, Items};
use coderig::model::{self, ErrorClass};
use pyo3::prelude::*;
use std::time::SystemTime;

/// Registers the functions and classes of `coderig.model`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(match_model, m)?)?;
    m.add_function(wrap_pyfunction!(normalize_model, m)?)?;
    m.add_function(wrap_pyfunction!(classify_error, m)?)?;
    m.add_function(wrap_pyfunction!(explain_error, m)?)?;
    m.add_function(wrap_pyfunction!(parse_retry_after, m)?)?;
    m.add_class::<FallbackChain>()?;
    Ok(())
}

/// The entry of `available` that `target` names, or `None`: compared
/// normalized, containment by whole tokens (`gpt-4` is in
/// `openai/gpt-4-turbo`, not in `gpt-40-mini`); exact > model part exact >
/// shortest containing, ties by name. `providers` keeps only ids whose part
/// before the first `/` is one of them.
#[pyfunction]
#[pyo3(signature = (target, available, providers=None))]
fn match_model(
    target: &str,
    available: Items<String>,
    providers: Option<Items<String>>,
) -> Option<String> {
    let providers = providers.map(|p| p.0).unwrap_or_default();
    let providers: Vec<&str> = providers.iter().map(String::as_str).collect();
    model::match_model(target, &available.0, &providers)
}

/// The form model names are compared in (trimmed, lower-case, Claude minor
/// versions with a dot: `claude-sonnet-4-5` → `claude-sonnet-4.5`).
#[pyfunction]
fn normalize_model(name: &str) -> String {
    model::normalize_model(name)
}

/// What a failed model call means: `"retry"` (same model, later),
/// `"fallback"` (the next model), `"stop"` (quota or billing: no other
/// model will work) or `"fatal"` (the request is wrong).
#[pyfunction]
#[pyo3(signature = (name=None, message=None, http_status=None))]
fn classify_error(name: Option<&str>, message: Option<&str>, http_status: Option<u16>) -> String {
    model::classify_error(name, message, http_status)
        .as_str()
        .to_owned()
}

/// `classify_error` with what decided it: `{"class", "evidence" ("name",
/// "message", "status" or "none"), "rule"}`.
#[pyfunction]
#[pyo3(signature = (name=None, message=None, http_status=None))]
fn explain_error(
    py: Python<'_>,
    name: Option<&str>,
    message: Option<&str>,
    http_status: Option<u16>,
) -> PyResult<Py<PyAny>> {
    to_dict(py, &model::explain_error(name, message, http_status))
}

/// The delay in seconds a `Retry-After` header value asks for (seconds or
/// an HTTP date, relative to now), or `None` when it is neither.
#[pyfunction]
fn parse_retry_after(value: &str) -> Option<f64> {
    model::parse_retry_after(value, SystemTime::now()).map(|d| d.as_secs_f64())
}

/// An ordered list of models to try (`["openai/gpt-5(high)", "qwen3-coder"]`).
/// A bad or repeated entry is an `InvalidInputError` with
/// `.details["index"]`, `["entry"]` and `["reason"]`.
#[pyclass(module = "coderig.model", frozen)]
struct FallbackChain(model::FallbackChain);

#[pymethods]
impl FallbackChain {
    #[new]
    fn new(entries: Items<String>) -> PyResult<Self> {
        model::FallbackChain::parse(entries.0)
            .map(FallbackChain)
            .map_err(to_py_err)
    }

    /// The entries in their canonical form (`provider/model(variant)`).
    #[getter]
    fn entries(&self) -> Vec<String> {
        self.0.entries().iter().map(ToString::to_string).collect()
    }

    /// The index to try after entry `current` failed with `error_class`
    /// (`retry`: the same; `fallback`: the next, or `None` at the end;
    /// `stop`, `fatal`: `None`).
    fn next(&self, current: usize, error_class: &str) -> PyResult<Option<usize>> {
        Ok(self.0.next(current, name::<ErrorClass>(error_class)?))
    }

    /// The index of the entry naming `model_id` most specifically (the
    /// longest whole-token prefix), or `None`.
    fn most_specific(&self, model_id: &str) -> Option<usize> {
        self.0.most_specific(model_id)
    }

    fn __len__(&self) -> usize {
        self.0.len()
    }

    fn __repr__(&self) -> String {
        format!("FallbackChain({:?})", self.entries())
    }
}
