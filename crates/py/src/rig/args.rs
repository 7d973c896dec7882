//! The arguments of `coderig.Rig` and of its runtime calls, converted for
//! the core: durations by the core's duration decoder, paths as `str` or
//! `os.PathLike`, project roots as paths for the core's one policy.

use crate::helpers::{fspath, to_json, to_py_err, Items};
use coderig::arena::BattleSpec;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use serde_json::Value;
use std::path::PathBuf;

/// A path argument (`str` or `os.PathLike`); another type is a `TypeError`.
pub fn path_arg(value: Option<&Bound<'_, PyAny>>, at: &str) -> PyResult<Option<PathBuf>> {
    match value.filter(|v| !v.is_none()) {
        None => Ok(None),
        Some(v) => v.extract::<PathBuf>().map(Some).map_err(|_| {
            PyTypeError::new_err(format!(
                "{at} must be a str or os.PathLike path, not {}",
                v.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))
        }),
    }
}

/// The `project_roots` argument as paths, for the core's policy
/// (`resolve_project_roots`, applied when the `Rig` is made: each root
/// canonical; none given, the current directory; a root that cannot be
/// resolved or is not a directory is `InvalidInputError` at
/// `project_roots[i]`). A value that is not a collection of paths is a
/// `TypeError`.
pub fn project_roots(value: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<PathBuf>> {
    let mut given = Vec::new();
    if let Some(value) = value.filter(|v| !v.is_none()) {
        let Items(items) = value.extract::<Items<Bound<'_, PyAny>>>()?;
        for (i, item) in items.iter().enumerate() {
            let at = format!("project_roots[{i}]");
            let Some(path) = path_arg(Some(item), &at)? else {
                return Err(PyTypeError::new_err(format!(
                    "{at} must be a path, not None"
                )));
            };
            given.push(path);
        }
    }
    Ok(given)
}

/// The `db` argument: a URL or a path (`str` or `os.PathLike`).
pub fn db_arg(value: Option<&Bound<'_, PyAny>>) -> PyResult<Option<String>> {
    match value.filter(|v| !v.is_none()) {
        None => Ok(None),
        Some(v) => fspath(v)
            .extract::<String>()
            .map(Some)
            .map_err(|_| PyTypeError::new_err("db must be a str (a URL or a path)")),
    }
}

/// A battle spec's `project` as the absolute path string the spec wants:
/// an `os.PathLike` converted with `os.fspath`, a relative path taken from
/// the current directory (as every Python path argument is). Anything else
/// is left for the spec decoder to judge.
fn absolute_project(spec: &Bound<'_, PyDict>) -> PyResult<()> {
    let Some(project) = spec.get_item("project")? else {
        return Ok(());
    };
    let project = fspath(&project);
    if project.is_instance_of::<PyString>() {
        let text: String = project.extract()?;
        if !text.is_empty() {
            if let Ok(absolute) = std::path::absolute(&text) {
                spec.set_item("project", absolute.to_string_lossy().as_ref())?;
                return Ok(());
            }
        }
    }
    spec.set_item("project", project)
}

/// `start_battle`'s spec from one dict, keyword arguments, or both (a key
/// given twice is a `TypeError`), `project` made absolute, decoded by the
/// core's strict decoder (a bad spec: `InvalidInputError` with the path of
/// the field).
pub fn battle_spec(
    py: Python<'_>,
    spec: Option<&Bound<'_, PyAny>>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<BattleSpec> {
    let merged = PyDict::new(py);
    if let Some(spec) = spec.filter(|s| !s.is_none()) {
        let spec = spec.cast::<PyDict>().map_err(|_| {
            PyTypeError::new_err(format!(
                "start_battle takes the spec as one dict or as keyword arguments, not a {}",
                spec.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))
        })?;
        merged.update(spec.as_mapping())?;
    }
    if let Some(kwargs) = kwargs {
        for (key, value) in kwargs.iter() {
            if merged.contains(&key)? {
                return Err(PyTypeError::new_err(format!(
                    "start_battle got {} both in the spec dict and as a keyword argument",
                    key.repr()?
                )));
            }
            merged.set_item(key, value)?;
        }
    }
    absolute_project(&merged)?;
    let json: Value = to_json(merged.as_any(), "")?;
    BattleSpec::from_json(&json).map_err(to_py_err)
}
