//! `coderig.hashline`: `LINE#HH` anchors.
//!
//! Edits arrive as dicts (`{"op": "replace", "pos": "3#NT", "end": "5#WN",
//! "lines": [...]}`) and are converted field by field, so a wrong shape is an
//! `InvalidInputError` that names the edit and the field.

use crate::edit::{edit_items, invalid, str_field, type_name};
use crate::errors::to_py_err;
use coderig::hashline::{HashlineEdit, Lines};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::{PyInt, PyList, PyMapping, PyString, PyTuple};

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
        _ => Err(invalid(format!(
            "line_no must be a 1-based line number, got {value}"
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
fn format(py: Python<'_>, content: PyBackedStr) -> String {
    py.detach(|| coderig::hashline::format(&content))
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
fn validate(py: Python<'_>, content: PyBackedStr, refs: &Bound<'_, PyAny>) -> PyResult<()> {
    if refs.is_instance_of::<PyString>() {
        return Err(invalid(
            "refs must be a list of LINE#HH strings (wrap a single ref in a list)".to_owned(),
        ));
    }
    let refs: Vec<String> = refs
        .try_iter()
        .map_err(|_| {
            invalid(format!(
                "refs must be a list of str, got {}",
                type_name(refs)
            ))
        })?
        .enumerate()
        .map(|(i, r)| str_field(&r?, &format!("refs[{i}]")))
        .collect::<PyResult<_>>()?;
    py.detach(|| {
        let refs: Vec<&str> = refs.iter().map(String::as_str).collect();
        coderig::hashline::validate_strs(&content, &refs)
    })
    .map_err(to_py_err)
}

/// Applies hashline edits (dicts) to `content` and returns the new content.
#[pyfunction]
fn apply(py: Python<'_>, content: PyBackedStr, edits: &Bound<'_, PyAny>) -> PyResult<String> {
    let edits = hashline_edits(edits)?;
    py.detach(|| coderig::hashline::apply(&content, &edits))
        .map_err(to_py_err)
}

/// `"text"` or `["line", ...]`.
fn lines_field(value: &Bound<'_, PyAny>, at: &str) -> PyResult<Lines> {
    if value.is_instance_of::<PyString>() {
        return str_field(value, at).map(Lines::One);
    }
    if !(value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>()) {
        return Err(invalid(format!(
            "{at} must be a str or a list of str, got {}",
            type_name(value)
        )));
    }
    value
        .try_iter()?
        .enumerate()
        .map(|(i, line)| str_field(&line?, &format!("{at}[{i}]")))
        .collect::<PyResult<Vec<_>>>()
        .map(Lines::Many)
}

/// One hashline edit from its dict.
fn hashline_edit(item: &Bound<'_, PyAny>, index: usize) -> PyResult<HashlineEdit> {
    let at = format!("edits[{index}]");
    let Ok(map) = item.cast::<PyMapping>() else {
        return Err(invalid(format!(
            "{at} must be a dict like {{\"op\": \"replace\", \"pos\": \"3#NT\", \"lines\": \
             [...]}}, got {}",
            type_name(item)
        )));
    };
    let (mut op, mut pos, mut end, mut lines) = (None, None, None, None);
    for pair in map.items()?.iter() {
        let (key, value): (Bound<'_, PyAny>, Bound<'_, PyAny>) = pair.extract()?;
        let slot = match key.extract::<String>().as_deref() {
            Ok("op") => &mut op,
            Ok("pos") => &mut pos,
            Ok("end") => &mut end,
            Ok("lines") => &mut lines,
            _ => {
                return Err(invalid(format!(
                    "{at} has an unknown field {}; allowed: \"op\", \"pos\", \"end\", \"lines\"",
                    key.repr()?
                )))
            }
        };
        *slot = Some(value);
    }
    let optional_ref = |value: Option<Bound<'_, PyAny>>, name: &str| match value {
        Some(v) if !v.is_none() => str_field(&v, &format!("{at}.{name}")).map(Some),
        _ => Ok(None),
    };
    let op = match op {
        Some(op) => str_field(&op, &format!("{at}.op"))?,
        None => {
            return Err(invalid(format!(
                "{at} lacks \"op\": one of \"replace\", \"append\", \"prepend\""
            )))
        }
    };
    let lines = match lines {
        Some(lines) => lines_field(&lines, &format!("{at}.lines"))?,
        None => {
            return Err(invalid(format!(
                "{at} lacks \"lines\" (a str or a list of str; [] deletes with replace)"
            )))
        }
    };
    let pos = optional_ref(pos, "pos")?;
    let end = optional_ref(end, "end")?;
    match op.as_str() {
        "replace" => Ok(HashlineEdit::Replace {
            pos: pos.ok_or_else(|| {
                invalid(format!(
                    "{at}: \"replace\" needs \"pos\", the LINE#HH ref of the first line replaced"
                ))
            })?,
            end,
            lines,
        }),
        "append" | "prepend" if end.is_some() => Err(invalid(format!(
            "{at}: \"end\" is only for \"replace\", not \"{op}\""
        ))),
        "append" => Ok(HashlineEdit::Append { pos, lines }),
        "prepend" => Ok(HashlineEdit::Prepend { pos, lines }),
        other => Err(invalid(format!(
            "{at}.op must be \"replace\", \"append\" or \"prepend\", got {other:?}"
        ))),
    }
}

/// Every edit of a Python list of hashline edit dicts.
pub(crate) fn hashline_edits(edits: &Bound<'_, PyAny>) -> PyResult<Vec<HashlineEdit>> {
    edit_items(edits)?
        .iter()
        .enumerate()
        .map(|(index, item)| hashline_edit(item, index))
        .collect()
}
