//! `coderig.locate`, `apply_edit`, `apply_edits`, `check_guards` and the
//! file helpers `edit_file`, `edits_file`, `hashline_edit_file`.
//!
//! Conventions: offsets handed to Python are code-point indices into the
//! caller's `str` (the core works in bytes); a request of the wrong shape is
//! an `InvalidInputError` naming the offending item and field; the core
//! runs with the GIL released.

use crate::errors::{to_py_err, violation_to_py};
use crate::hashline::hashline_edits;
use coderig::{ApplyOptions, Edit, EditError};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::{PyBytes, PyList, PyMapping, PyString, PyTuple};
use std::path::PathBuf;

/// Registers the classes and functions of this file.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Match>()?;
    m.add_class::<Applied>()?;
    m.add_function(wrap_pyfunction!(locate, m)?)?;
    m.add_function(wrap_pyfunction!(apply_edit, m)?)?;
    m.add_function(wrap_pyfunction!(apply_edits, m)?)?;
    m.add_function(wrap_pyfunction!(check_guards, m)?)?;
    m.add_function(wrap_pyfunction!(edit_file, m)?)?;
    m.add_function(wrap_pyfunction!(edits_file, m)?)?;
    m.add_function(wrap_pyfunction!(hashline_edit_file, m)?)?;
    Ok(())
}

/// Where a needle is in a content: `coderig.Match`.
///
/// `start`/`end` are code-point offsets (so `content[m.start:m.end]` is the
/// matched text) and, like `score`, are `None` unless a tier found it.
#[pyclass(frozen, module = "coderig", name = "Match")]
pub struct Match {
    kind: &'static str,
    span: Option<(usize, usize)>,
    score: Option<f64>,
    count: usize,
    candidates: Vec<(usize, usize)>,
    nearest: Option<(usize, usize, f64)>,
}

#[pymethods]
impl Match {
    /// `"exact"`, `"whitespace"`, `"unicode"`, `"fuzzy"`, `"ambiguous"` or `"not_found"`.
    #[getter]
    fn kind(&self) -> &'static str {
        self.kind
    }

    /// Code-point offset of the first matched character, or `None`.
    #[getter]
    fn start(&self) -> Option<usize> {
        self.span.map(|(start, _)| start)
    }

    /// Code-point offset just past the match, or `None`.
    #[getter]
    fn end(&self) -> Option<usize> {
        self.span.map(|(_, end)| end)
    }

    /// Similarity in `[0, 1]` (1.0 outside the fuzzy tier), or `None`.
    #[getter]
    fn score(&self) -> Option<f64> {
        self.score
    }

    /// Candidate locations: 1 when found, ≥ 2 when ambiguous, 0 when not found.
    #[getter]
    fn count(&self) -> usize {
        self.count
    }

    /// 1-based inclusive `(first_line, last_line)` of each candidate, when ambiguous.
    #[getter]
    fn candidates(&self) -> Vec<(usize, usize)> {
        self.candidates.clone()
    }

    /// `(first_line, last_line, score)` of the closest window, when not found.
    #[getter]
    fn nearest(&self) -> Option<(usize, usize, f64)> {
        self.nearest
    }

    fn __repr__(&self) -> String {
        match (self.span, self.score) {
            (Some((start, end)), Some(score)) => format!(
                "Match(kind='{}', start={start}, end={end}, score={score:.3})",
                self.kind
            ),
            _ if self.kind == "ambiguous" => format!(
                "Match(kind='ambiguous', count={}, candidates={:?})",
                self.count, self.candidates
            ),
            _ => match self.nearest {
                Some((first, last, score)) => format!(
                    "Match(kind='{}', nearest=({first}, {last}, {score:.3}))",
                    self.kind
                ),
                None => format!("Match(kind='{}', nearest=None)", self.kind),
            },
        }
    }
}

/// A successful application: `coderig.Applied`.
#[pyclass(frozen, module = "coderig", name = "Applied")]
pub struct Applied {
    content: String,
    tier: &'static str,
    replacements: usize,
}

impl From<coderig::Applied> for Applied {
    fn from(a: coderig::Applied) -> Self {
        Applied {
            content: a.content,
            tier: a.tier.as_str(),
            replacements: a.replacements,
        }
    }
}

#[pymethods]
impl Applied {
    /// The new content.
    #[getter]
    fn content(&self) -> &str {
        &self.content
    }

    /// The weakest tier any edit needed: `"exact"`, `"whitespace"`, `"unicode"` or `"fuzzy"`.
    #[getter]
    fn tier(&self) -> &'static str {
        self.tier
    }

    /// Number of spans replaced.
    #[getter]
    fn replacements(&self) -> usize {
        self.replacements
    }

    fn __repr__(&self) -> String {
        format!(
            "Applied(tier='{}', replacements={}, content=<{} chars>)",
            self.tier,
            self.replacements,
            self.content.chars().count()
        )
    }
}

/// The code-point offsets of the byte span `start..end` of `content`.
fn code_point_span(content: &str, start: usize, end: usize) -> PyResult<(usize, usize)> {
    match (content.get(..start), content.get(start..end)) {
        (Some(before), Some(matched)) => {
            let first = before.chars().count();
            Ok((first, first + matched.chars().count()))
        }
        _ => Err(PyRuntimeError::new_err(format!(
            "coderig core returned the span {start}..{end}, not on character boundaries"
        ))),
    }
}

/// Finds `needle` in `content` (see DESIGN.md: exact → whitespace → unicode
/// → fuzzy, refusing as ambiguous when two locations qualify). Never raises
/// for any pair of strings; an empty needle is `not_found`.
#[pyfunction]
fn locate(py: Python<'_>, content: PyBackedStr, needle: PyBackedStr) -> PyResult<Match> {
    let (found, span) = py.detach(|| {
        let found = coderig::locate(&content, &needle);
        let span = found
            .span
            .clone()
            .map(|s| code_point_span(&content, s.start, s.end));
        (found, span)
    });
    Ok(Match {
        kind: match found.kind {
            coderig::MatchKind::Exact => "exact",
            coderig::MatchKind::Whitespace => "whitespace",
            coderig::MatchKind::Unicode => "unicode",
            coderig::MatchKind::Fuzzy => "fuzzy",
            coderig::MatchKind::Ambiguous => "ambiguous",
            coderig::MatchKind::NotFound => "not_found",
        },
        span: span.transpose()?,
        score: found.score,
        count: found.count,
        candidates: found.candidates,
        nearest: found.nearest.map(|n| (n.first_line, n.last_line, n.score)),
    })
}

/// A guard's path: `str` or `os.PathLike`, used only to pick the language.
fn options(path: Option<PathBuf>, guards: bool) -> ApplyOptions {
    ApplyOptions {
        path: path.map(|p| p.to_string_lossy().into_owned()),
        guards,
    }
}

/// Replaces `old` by `new` in `content`; raises `NotFoundError`,
/// `AmbiguousError`, `GuardError`, `NoOpError` or `InvalidInputError`.
#[pyfunction]
#[pyo3(signature = (content, old, new, replace_all = false, path = None, guards = true))]
fn apply_edit(
    py: Python<'_>,
    content: PyBackedStr,
    old: String,
    new: String,
    replace_all: bool,
    path: Option<PathBuf>,
    guards: bool,
) -> PyResult<Applied> {
    let edit = Edit {
        old,
        new,
        replace_all,
    };
    let opts = options(path, guards);
    py.detach(|| coderig::apply_edit_with(&content, &edit, &opts))
        .map(Applied::from)
        .map_err(to_py_err)
}

/// Applies several edits atomically (all located in the one original
/// content, overlaps refused, all or nothing).
#[pyfunction]
#[pyo3(signature = (content, edits, path = None, guards = true))]
fn apply_edits(
    py: Python<'_>,
    content: PyBackedStr,
    edits: &Bound<'_, PyAny>,
    path: Option<PathBuf>,
    guards: bool,
) -> PyResult<Applied> {
    let edits = search_replace_edits(edits)?;
    let opts = options(path, guards);
    py.detach(|| coderig::apply_edits(&content, &edits, &opts))
        .map(Applied::from)
        .map_err(to_py_err)
}

/// The guard violations of going from `original` to `updated`, as a list of
/// `coderig.Violation(kind, message)`; empty when the change looks safe.
#[pyfunction]
#[pyo3(signature = (original, updated, path = None))]
fn check_guards<'py>(
    py: Python<'py>,
    original: PyBackedStr,
    updated: PyBackedStr,
    path: Option<PathBuf>,
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let path = path.map(|p| p.to_string_lossy().into_owned());
    let violations = py.detach(|| coderig::check_guards(&original, &updated, path.as_deref()));
    violations.iter().map(|v| violation_to_py(py, v)).collect()
}

/// Applies one edit to the file at `path` and writes it back atomically; on
/// any error the file is untouched (`EditIOError` for IO failures).
#[pyfunction]
#[pyo3(signature = (path, old, new, replace_all = false, guards = true))]
fn edit_file(
    py: Python<'_>,
    path: PathBuf,
    old: String,
    new: String,
    replace_all: bool,
    guards: bool,
) -> PyResult<Applied> {
    let edit = Edit {
        old,
        new,
        replace_all,
    };
    let opts = options(None, guards);
    py.detach(|| coderig::edit_file(&path, &edit, &opts))
        .map(Applied::from)
        .map_err(to_py_err)
}

/// Applies several edits to the file at `path` atomically, as
/// [`apply_edits`], and writes it back atomically.
#[pyfunction]
#[pyo3(signature = (path, edits, guards = true))]
fn edits_file(
    py: Python<'_>,
    path: PathBuf,
    edits: &Bound<'_, PyAny>,
    guards: bool,
) -> PyResult<Applied> {
    let edits = search_replace_edits(edits)?;
    let opts = options(None, guards);
    py.detach(|| coderig::edits_file(&path, &edits, &opts))
        .map(Applied::from)
        .map_err(to_py_err)
}

/// Applies hashline edits (dicts, as `coderig.hashline.apply`) to the file at
/// `path`, writes it back atomically and returns the new content.
#[pyfunction]
fn hashline_edit_file(py: Python<'_>, path: PathBuf, edits: &Bound<'_, PyAny>) -> PyResult<String> {
    let edits = hashline_edits(edits)?;
    py.detach(|| coderig::hashline_edit_file(&path, &edits))
        .map_err(to_py_err)
}

/// An `InvalidInputError` with `message`.
pub(crate) fn invalid(message: String) -> PyErr {
    to_py_err(EditError::invalid(message))
}

/// The Python type name of `value`, for error messages.
pub(crate) fn type_name(value: &Bound<'_, PyAny>) -> String {
    value
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".to_owned())
}

/// The items of a list of edits: any iterable except a string, bytes or a
/// single mapping (which would silently iterate characters or keys).
pub(crate) fn edit_items<'py>(edits: &Bound<'py, PyAny>) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let not_a_list = edits.is_instance_of::<PyString>()
        || edits.is_instance_of::<PyBytes>()
        || edits.cast::<PyMapping>().is_ok();
    let iter = match edits.try_iter() {
        Ok(iter) if !not_a_list => iter,
        _ => {
            return Err(invalid(format!(
                "edits must be a list of edits (wrap a single edit in a list), got {}",
                type_name(edits)
            )))
        }
    };
    iter.collect()
}

/// A required or optional `str` field of an edit.
pub(crate) fn str_field(value: &Bound<'_, PyAny>, name: &str) -> PyResult<String> {
    value
        .extract::<String>()
        .map_err(|_| invalid(format!("{name} must be a str, got {}", type_name(value))))
}

/// `(old, new)`, `(old, new, replace_all)` or `{"old", "new", "replace_all"?}`.
fn search_replace_edit(item: &Bound<'_, PyAny>, index: usize) -> PyResult<Edit> {
    let at = format!("edits[{index}]");
    let (old, new, replace_all) = if let Ok(map) = item.cast::<PyMapping>() {
        let (mut old, mut new, mut replace_all) = (None, None, None);
        for pair in map.items()?.iter() {
            let (key, value): (Bound<'_, PyAny>, Bound<'_, PyAny>) = pair.extract()?;
            let slot = match key.extract::<String>().as_deref() {
                Ok("old") => &mut old,
                Ok("new") => &mut new,
                Ok("replace_all") => &mut replace_all,
                _ => {
                    return Err(invalid(format!(
                        "{at} has an unknown field {}; allowed: \"old\", \"new\", \"replace_all\"",
                        key.repr()?
                    )))
                }
            };
            *slot = Some(value);
        }
        let lacks = |name: &str| invalid(format!("{at} lacks the required field \"{name}\""));
        (
            old.ok_or_else(|| lacks("old"))?,
            new.ok_or_else(|| lacks("new"))?,
            replace_all,
        )
    } else if item.is_instance_of::<PyTuple>() || item.is_instance_of::<PyList>() {
        let fields: Vec<Bound<'_, PyAny>> = item.try_iter()?.collect::<PyResult<_>>()?;
        match <[_; 3]>::try_from(fields) {
            Ok([old, new, replace_all]) => (old, new, Some(replace_all)),
            Err(fields) => match <[_; 2]>::try_from(fields) {
                Ok([old, new]) => (old, new, None),
                Err(fields) => {
                    return Err(invalid(format!(
                        "{at} must be (old, new) or (old, new, replace_all), got {} items",
                        fields.len()
                    )))
                }
            },
        }
    } else {
        return Err(invalid(format!(
            "{at} must be an (old, new[, replace_all]) tuple or a {{\"old\", \"new\", \
             \"replace_all\"}} dict, got {}",
            type_name(item)
        )));
    };
    let replace_all = match replace_all {
        None => false,
        Some(value) => value.extract::<bool>().map_err(|_| {
            invalid(format!(
                "{at}.replace_all must be a bool, got {}",
                type_name(&value)
            ))
        })?,
    };
    Ok(Edit {
        old: str_field(&old, &format!("{at}.old"))?,
        new: str_field(&new, &format!("{at}.new"))?,
        replace_all,
    })
}

/// Every edit of a Python list of search/replace edits.
fn search_replace_edits(edits: &Bound<'_, PyAny>) -> PyResult<Vec<Edit>> {
    edit_items(edits)?
        .iter()
        .enumerate()
        .map(|(index, item)| search_replace_edit(item, index))
        .collect()
}
