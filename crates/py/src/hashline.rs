//! `coderig.hashline`: `LINE#HH` anchors.
//!
//! `validate(content, refs)` and `apply(content, edits)` decode their
//! arguments as the bodies of `POST /api/hashline/validate` and
//! `/api/hashline/apply`, so a bad ref list or edit gets the server's
//! message (`edits[0].pos`: ...).

use crate::helpers::{request, to_py_err};
use coderig::json::{HashlineApplyRequest, HashlineFormatRequest, HashlineValidateRequest};
use coderig::Error;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::PyInt;

/// Registers the functions of `coderig.hashline`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(line_hash, m)?)?;
    m.add_function(wrap_pyfunction!(legacy_line_hash, m)?)?;
    m.add_function(wrap_pyfunction!(format, m)?)?;
    m.add_function(wrap_pyfunction!(parse_ref, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(apply, m)?)?;
    Ok(())
}

/// A 1-based line number; another integer is `InvalidInputError`, another
/// type a `TypeError`.
fn line_number(value: &Bound<'_, PyAny>) -> PyResult<usize> {
    match value.extract::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        Err(e) if !value.is_instance_of::<PyInt>() => Err(e),
        _ => Err(to_py_err(Error::invalid_at(
            "line_no",
            format!("must be a 1-based line number, got {value}"),
        ))),
    }
}

/// The two-letter hash of line `line_no` (1-based) whose text is `text`.
#[pyfunction]
fn line_hash(line_no: &Bound<'_, PyAny>, text: PyBackedStr) -> PyResult<String> {
    Ok(coderig::hashline::line_hash(line_number(line_no)?, &text))
}

/// The legacy hash (all whitespace removed), also accepted by `validate`/`apply`.
#[pyfunction]
fn legacy_line_hash(line_no: &Bound<'_, PyAny>, text: PyBackedStr) -> PyResult<String> {
    Ok(coderig::hashline::legacy_line_hash(
        line_number(line_no)?,
        &text,
    ))
}

/// `content` as `LINE#HH|text` lines joined by `\n`.
#[pyfunction]
fn format(py: Python<'_>, content: &Bound<'_, PyAny>) -> PyResult<String> {
    let req: HashlineFormatRequest = request(&[("content", Some(content))])?;
    Ok(py.detach(|| coderig::hashline::format(&req.content)))
}

/// `"12#VK"` (leniently: `">>> 12 # VK|text"`, `"+12#VK"`) → `(12, "VK")`.
#[pyfunction]
fn parse_ref(s: PyBackedStr) -> PyResult<(usize, String)> {
    coderig::hashline::parse_ref(&s)
        .map(|r| (r.line, r.hash))
        .map_err(to_py_err)
}

/// Checks every ref against `content`: `HashlineMismatchError` (with
/// `.remaps`) for stale ones, `InvalidInputError` for malformed or
/// out-of-range ones.
#[pyfunction]
fn validate(py: Python<'_>, content: &Bound<'_, PyAny>, refs: &Bound<'_, PyAny>) -> PyResult<()> {
    let req: HashlineValidateRequest =
        request(&[("content", Some(content)), ("refs", Some(refs))])?;
    py.detach(|| {
        let refs: Vec<&str> = req.refs.iter().map(String::as_str).collect();
        coderig::hashline::validate_strs(&req.content, &refs)
    })
    .map_err(to_py_err)
}

/// Applies hashline edits (dicts) to `content` and returns the new content.
#[pyfunction]
fn apply(py: Python<'_>, content: &Bound<'_, PyAny>, edits: &Bound<'_, PyAny>) -> PyResult<String> {
    let req: HashlineApplyRequest = request(&[("content", Some(content)), ("edits", Some(edits))])?;
    py.detach(|| {
        let edits = req.core_edits()?;
        coderig::hashline::apply(&req.content, &edits).map_err(Error::from)
    })
    .map_err(to_py_err)
}
