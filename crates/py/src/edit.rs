//! `coderig.locate`, `apply_edit`, `apply_edits`, `check_guards`,
//! `xxhash32` and the file helpers `edit_file`, `edits_file`,
//! `hashline_edit_file`.
//!
//! Conventions: the arguments of a function with an HTTP route are decoded
//! as that route's body by the core (`apply_edit(content, old, new, ...)`
//! is `POST /api/edit {"content", "old", "new", ...}`), so a bad argument
//! gets the server's message; offsets handed to Python are code-point
//! indices into the caller's `str` (the core works in bytes); the core runs
//! with the GIL released.

use crate::helpers::{decode, fspath, request, to_json, to_py_err, violation};
use coderig::json::{self, EditRequest, EditResponse, LocateRequest, XxhashRequest};
use coderig::{ApplyOptions, Error, MatchKind, Nearest, Tier};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};
use std::path::PathBuf;

/// Registers the classes and functions of this file.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Match>()?;
    m.add_class::<Applied>()?;
    m.add_function(wrap_pyfunction!(locate, m)?)?;
    m.add_function(wrap_pyfunction!(apply_edit, m)?)?;
    m.add_function(wrap_pyfunction!(apply_edits, m)?)?;
    m.add_function(wrap_pyfunction!(check_guards, m)?)?;
    m.add_function(wrap_pyfunction!(xxhash32, m)?)?;
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
    kind: MatchKind,
    span: Option<(usize, usize)>,
    score: Option<f64>,
    count: usize,
    candidates: Vec<(usize, usize)>,
    nearest: Option<Nearest>,
}

#[pymethods]
impl Match {
    /// `"exact"`, `"whitespace"`, `"unicode"`, `"fuzzy"`, `"ambiguous"` or `"not_found"`.
    #[getter]
    fn kind(&self) -> &'static str {
        self.kind.as_str()
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
        self.nearest.map(|n| (n.first_line, n.last_line, n.score))
    }

    fn __repr__(&self) -> String {
        let kind = self.kind.as_str();
        match (self.span, self.score, self.nearest) {
            (Some((start, end)), Some(score), _) => {
                format!("Match(kind='{kind}', start={start}, end={end}, score={score:.3})")
            }
            _ if self.kind == MatchKind::Ambiguous => format!(
                "Match(kind='{kind}', count={}, candidates={:?})",
                self.count, self.candidates
            ),
            (_, _, Some(n)) => format!(
                "Match(kind='{kind}', nearest=({}, {}, {:.3}))",
                n.first_line, n.last_line, n.score
            ),
            _ => format!("Match(kind='{kind}', nearest=None)"),
        }
    }
}

/// A successful application: `coderig.Applied`.
#[pyclass(frozen, module = "coderig", name = "Applied")]
pub struct Applied {
    content: String,
    tier: Tier,
    replacements: usize,
}

impl From<EditResponse> for Applied {
    fn from(r: EditResponse) -> Self {
        Applied {
            content: r.content,
            tier: r.tier,
            replacements: r.replacements,
        }
    }
}

impl From<coderig::Applied> for Applied {
    fn from(a: coderig::Applied) -> Self {
        EditResponse::from(a).into()
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
        self.tier.as_str()
    }

    /// Number of spans replaced.
    #[getter]
    fn replacements(&self) -> usize {
        self.replacements
    }

    fn __repr__(&self) -> String {
        format!(
            "Applied(tier='{}', replacements={}, content=<{} chars>)",
            self.tier.as_str(),
            self.replacements,
            self.content.chars().count()
        )
    }
}

/// The code-point offsets of the byte span `start..end` of `content`.
fn code_point_span(content: &str, start: usize, end: usize) -> Result<(usize, usize), Error> {
    match (content.get(..start), content.get(start..end)) {
        (Some(before), Some(matched)) => {
            let first = before.chars().count();
            Ok((first, first + matched.chars().count()))
        }
        _ => Err(Error::internal(format!(
            "the core returned the span {start}..{end}, not on character boundaries"
        ))),
    }
}

/// Finds `needle` in `content` (see DESIGN.md: exact → whitespace → unicode
/// → fuzzy, refusing as ambiguous when two locations qualify). An empty
/// needle is `InvalidInputError`; any other pair of strings gets a `Match`.
#[pyfunction]
fn locate(
    py: Python<'_>,
    content: &Bound<'_, PyAny>,
    needle: &Bound<'_, PyAny>,
) -> PyResult<Match> {
    let req: LocateRequest = request(&[("content", Some(content)), ("needle", Some(needle))])?;
    py.detach(|| {
        let found = coderig::try_locate(&req.content, &req.needle)?;
        let span = match &found.span {
            Some(s) => Some(code_point_span(&req.content, s.start, s.end)?),
            None => None,
        };
        Ok::<_, Error>(Match {
            kind: found.kind,
            span,
            score: found.score,
            count: found.count,
            candidates: found.candidates,
            nearest: found.nearest,
        })
    })
    .map_err(to_py_err)
}

/// Applies a decoded `POST /api/edit` body with the GIL released.
fn apply_request(py: Python<'_>, req: EditRequest) -> PyResult<Applied> {
    py.detach(|| req.apply())
        .map(Applied::from)
        .map_err(to_py_err)
}

/// Replaces `old` by `new` in `content`; raises `NotFoundError`,
/// `AmbiguousError`, `GuardError`, `NoOpError` or `InvalidInputError`.
/// `None` for `replace_all`, `path` or `guards` means the default.
#[pyfunction]
#[pyo3(
    signature = (content, old, new, replace_all = None, path = None, guards = None),
    text_signature = "(content, old, new, replace_all=False, path=None, guards=True)"
)]
fn apply_edit(
    py: Python<'_>,
    content: &Bound<'_, PyAny>,
    old: &Bound<'_, PyAny>,
    new: &Bound<'_, PyAny>,
    replace_all: Option<&Bound<'_, PyAny>>,
    path: Option<&Bound<'_, PyAny>>,
    guards: Option<&Bound<'_, PyAny>>,
) -> PyResult<Applied> {
    let path = path.map(fspath);
    let req: EditRequest = request(&[
        ("content", Some(content)),
        ("old", Some(old)),
        ("new", Some(new)),
        ("replace_all", replace_all),
        ("path", path.as_ref()),
        ("guards", guards),
    ])?;
    apply_request(py, req)
}

/// Applies several edits atomically (all located in the one original
/// content, overlaps refused, all or nothing). Each edit is `(old, new)`,
/// `(old, new, replace_all)` or `{"old", "new", "replace_all"?}`; the list
/// is decoded by `json::edits` (paths `edits[1].old`), the other arguments
/// as the fields of `POST /api/edit`.
#[pyfunction]
#[pyo3(
    signature = (content, edits, path = None, guards = None),
    text_signature = "(content, edits, path=None, guards=True)"
)]
fn apply_edits(
    py: Python<'_>,
    content: &Bound<'_, PyAny>,
    edits: &Bound<'_, PyAny>,
    path: Option<&Bound<'_, PyAny>>,
    guards: Option<&Bound<'_, PyAny>>,
) -> PyResult<Applied> {
    let path = path.map(fspath);
    // An empty batch stands in for `edits` so that the request decodes the
    // other fields; the edits themselves go through `json::edits`.
    let no_edits = PyList::empty(py);
    let req: EditRequest = request(&[
        ("content", Some(content)),
        ("edits", Some(no_edits.as_any())),
        ("path", path.as_ref()),
        ("guards", guards),
    ])?;
    let edits = decode(to_json(edits, "edits")?, json::edits)?;
    let opts = ApplyOptions {
        path: req.path,
        guards: req.guards,
    };
    py.detach(|| coderig::apply_edits(&req.content, &edits, &opts))
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
    violations.iter().map(|v| violation(py, v)).collect()
}

/// xxHash32 of `data` (a `str` is hashed as UTF-8, `bytes` as is) with
/// `seed` in `0..=4294967295` (default 0), both decoded as the body of
/// `POST /api/xxhash32` (bytes aside, which JSON lacks).
#[pyfunction]
#[pyo3(signature = (data, seed = None), text_signature = "(data, seed=0)")]
fn xxhash32(data: &Bound<'_, PyAny>, seed: Option<&Bound<'_, PyAny>>) -> PyResult<u32> {
    let bytes = data.cast::<PyBytes>().ok();
    let empty = PyString::new(data.py(), "");
    let text = if bytes.is_some() {
        empty.as_any()
    } else {
        data
    };
    let req: XxhashRequest = request(&[("data", Some(text)), ("seed", seed)])?;
    let seed = req.seed.unwrap_or(0);
    Ok(match bytes {
        Some(bytes) => coderig::xxhash32(bytes.as_bytes(), seed),
        None => coderig::xxhash32(req.data.as_bytes(), seed),
    })
}

/// `{"old", "new", "replace_all"}` decoded as one edit by the core.
fn one_edit(
    old: &Bound<'_, PyAny>,
    new: &Bound<'_, PyAny>,
    replace_all: Option<&Bound<'_, PyAny>>,
) -> PyResult<coderig::Edit> {
    let fields = PyDict::new(old.py());
    fields.set_item("old", old)?;
    fields.set_item("new", new)?;
    if let Some(replace_all) = replace_all {
        fields.set_item("replace_all", replace_all)?;
    }
    decode(to_json(fields.as_any(), "")?, json::edit)
}

fn options(guards: bool) -> ApplyOptions {
    ApplyOptions { path: None, guards }
}

/// Applies one edit to the file at `path` and writes it back atomically; on
/// any error the file is untouched (`IoError` for IO failures).
#[pyfunction]
#[pyo3(
    signature = (path, old, new, replace_all = None, guards = true),
    text_signature = "(path, old, new, replace_all=False, guards=True)"
)]
fn edit_file(
    py: Python<'_>,
    path: PathBuf,
    old: &Bound<'_, PyAny>,
    new: &Bound<'_, PyAny>,
    replace_all: Option<&Bound<'_, PyAny>>,
    guards: bool,
) -> PyResult<Applied> {
    let edit = one_edit(old, new, replace_all)?;
    py.detach(|| coderig::edit_file(&path, &edit, &options(guards)))
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
    let edits = decode(to_json(edits, "edits")?, json::edits)?;
    py.detach(|| coderig::edits_file(&path, &edits, &options(guards)))
        .map(Applied::from)
        .map_err(to_py_err)
}

/// Applies hashline edits (dicts, as `coderig.hashline.apply`) to the file at
/// `path`, writes it back atomically and returns the new content.
#[pyfunction]
fn hashline_edit_file(py: Python<'_>, path: PathBuf, edits: &Bound<'_, PyAny>) -> PyResult<String> {
    let edits = decode(to_json(edits, "edits")?, json::hashline_edits)?;
    py.detach(|| coderig::hashline_edit_file(&path, &edits))
        .map_err(to_py_err)
}
