//! The one place where Python values meet the core's contract: the
//! exception classes and the one mapping from [`coderig::Error`] to them,
//! the conversion of Python values to JSON for the core's `coderig::json`
//! decoders (and of JSON back to Python), and the parsing of names. Every
//! other module of the binding uses these and nothing else to raise or to
//! decode, so the Python face gives the same kind, code, message and
//! details as the server for the same mistake.

use coderig::names::ParseNameError;
use coderig::{Error, ErrorKind, GuardViolation};
use pyo3::conversion::FromPyObjectOwned;
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyTimeoutError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyFloat, PyIterator, PyList, PyString, PyTuple, PyType};
use pyo3::IntoPyObjectExt;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

// ---------------------------------------------------------------------------
// Exceptions.

/// The two base classes and `Violation`. Python source because a class per
/// kind needs several bases (`InvalidInputError` is also a `ValueError`,
/// `IoError` an `OSError`), which `create_exception!` cannot express; the
/// per-kind classes themselves are made from [`ErrorKind::ALL`] below, so
/// the list of kinds lives in the core only.
const BASES: &std::ffi::CStr = cr#"
import copy
from collections import namedtuple

Violation = namedtuple("Violation", ["kind", "message"])
Violation.__doc__ = (
    "One guard violation: kind is 'truncation', 'dropped_imports', "
    "'marker_leak' or 'conflict_marker'; message is written for a model."
)

# Defaults of the detail attributes an error built in Python has not been given.
_DEFAULTS = {"nearest": None, "count": 0, "lines": [], "violations": [], "remaps": {}}


class Error(Exception):
    """Base class of every error coderig raises.

    ``.kind`` (snake_case) and ``.code`` (UPPER_SNAKE) are stable;
    ``.message`` is written for a person or a model to act on; ``.details``
    is the core's details object (a dict, as HTTP sends it), and each detail
    is also an attribute (``.nearest``, ``.count``, ``.lines``,
    ``.violations``, ``.remaps``, ``.path``, ``.reason``, ...)."""

    kind = None
    code = None
    _attributes = ()

    def __init__(self, message="", details=None, **attributes):
        super().__init__(message)
        self.message = message
        self.details = dict(details or {})
        for name in self._attributes:
            setattr(self, name, copy.copy(_DEFAULTS[name]))
        for name, value in attributes.items():
            setattr(self, name, value)


class EditError(Error):
    """An edit request was refused: the text is not found, ambiguous, trips a
    guard, changes nothing, names stale hashline refs, or is malformed."""


for _cls in (Violation, Error, EditError):
    _cls.__module__ = "coderig"
del _cls
"#;

/// The exception classes, created once per interpreter.
struct Classes {
    module: Py<PyModule>,
    /// One class per kind, in the order of [`ErrorKind::ALL`].
    by_kind: Vec<Py<PyType>>,
}

static CLASSES: PyOnceLock<Classes> = PyOnceLock::new();

/// The class name of a kind: `not_found` → `NotFoundError`, `io` → `IoError`.
fn class_name(kind: ErrorKind) -> String {
    let mut name = String::new();
    for word in kind.as_str().split('_') {
        let mut chars = word.chars();
        if let Some(first) = chars.next() {
            name.push(first.to_ascii_uppercase());
            name.extend(chars);
        }
    }
    name + "Error"
}

/// The attributes an error of this kind always has (the edit errors' detail
/// attributes; defaults in `BASES`).
fn attributes(kind: ErrorKind) -> &'static [&'static str] {
    match kind {
        ErrorKind::NotFound => &["nearest"],
        ErrorKind::Ambiguous => &["count", "lines"],
        ErrorKind::Guard => &["violations"],
        ErrorKind::HashlineMismatch => &["remaps"],
        _ => &[],
    }
}

fn doc(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::NotFound => {
            "The text to replace was not found at any tier. ``.nearest`` is \
             ``(first_line, last_line, score)`` of the closest window, or None."
        }
        ErrorKind::Ambiguous => {
            "Two or more locations qualified. ``.count`` candidates at ``.lines``, \
             a list of 1-based inclusive ``(first_line, last_line)``."
        }
        ErrorKind::Guard => "The result tripped guards; ``.violations`` is a list of Violation.",
        ErrorKind::NoOp => "The edit would leave the content unchanged.",
        ErrorKind::HashlineMismatch => {
            "Hashline references are stale; ``.remaps`` maps each stale ref \
             (``\"12#VK\"``) to the fresh one."
        }
        ErrorKind::InvalidInput => {
            "The request is malformed; ``.details[\"path\"]`` (also ``.path``) names \
             the bad field when known."
        }
        ErrorKind::Conflict => {
            "The state of the thing does not allow the operation (e.g. completing a \
             step that is not in flight)."
        }
        ErrorKind::NotFoundId => "No step, run, battle, ... has this id (``.what``, ``.id``).",
        ErrorKind::Unavailable => "Something the operation needs is not there.",
        ErrorKind::Agent => "An agent turn failed (``.reason``, ``.class``, ...).",
        ErrorKind::Io => "Reading or writing a file failed.",
        ErrorKind::Internal => "A bug in coderig; the message says where.",
    }
}

fn classes(py: Python<'_>) -> PyResult<&Classes> {
    CLASSES.get_or_try_init(py, || {
        let module = PyModule::from_code(py, BASES, c"coderig/_errors.py", c"coderig._errors")?;
        let make_type = py.get_type::<PyType>();
        let error = module.getattr("Error")?;
        let edit_error = module.getattr("EditError")?;
        let mut by_kind = Vec::with_capacity(ErrorKind::ALL.len());
        for &kind in ErrorKind::ALL {
            let base = if kind.is_edit_refusal() || kind == ErrorKind::InvalidInput {
                &edit_error
            } else {
                &error
            };
            let mut bases = vec![base.clone()];
            match kind {
                ErrorKind::InvalidInput => bases.push(py.get_type::<PyValueError>().into_any()),
                ErrorKind::Io => bases.push(py.get_type::<PyOSError>().into_any()),
                _ => {}
            }
            let namespace = PyDict::new(py);
            namespace.set_item("kind", kind.as_str())?;
            namespace.set_item("code", kind.code())?;
            namespace.set_item("__doc__", doc(kind))?;
            namespace.set_item("__module__", "coderig")?;
            namespace.set_item("_attributes", PyTuple::new(py, attributes(kind))?)?;
            let name = class_name(kind);
            let class = make_type.call1((&name, PyTuple::new(py, bases)?, namespace))?;
            module.setattr(name.as_str(), &class)?;
            by_kind.push(class.cast_into::<PyType>()?.unbind());
        }
        Ok(Classes {
            module: module.unbind(),
            by_kind,
        })
    })
}

/// Adds `Error`, `EditError`, `Violation` and the class of every kind to
/// the native module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let classes = classes(m.py())?;
    let module = classes.module.bind(m.py());
    for name in ["Error", "EditError", "Violation"] {
        m.add(name, module.getattr(name)?)?;
    }
    for (&kind, class) in ErrorKind::ALL.iter().zip(&classes.by_kind) {
        m.add(class_name(kind), class.bind(m.py()))?;
    }
    Ok(())
}

/// Details that would shadow an exception's own attributes stay in
/// `.details` only.
const NOT_ATTRIBUTES: &[&str] = &["args", "details", "with_traceback", "add_note"];

/// A detail as its attribute: `nearest` as `(first_line, last_line,
/// score)`, `lines` as a list of tuples, `violations` as `Violation`s (the
/// forms the edit errors have always had); any other detail as its JSON.
fn attribute<'py>(py: Python<'py>, key: &str, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    match key {
        "nearest" => {
            if let Ok(Some(n)) = serde_json::from_value::<Option<coderig::Nearest>>(value.clone()) {
                return (n.first_line, n.last_line, n.score).into_bound_py_any(py);
            }
        }
        "lines" => {
            if let Ok(lines) = serde_json::from_value::<Vec<(usize, usize)>>(value.clone()) {
                return lines.into_bound_py_any(py);
            }
        }
        "violations" => {
            if let Ok(list) = serde_json::from_value::<Vec<Map<String, Value>>>(value.clone()) {
                let class = classes(py)?.module.bind(py).getattr("Violation")?;
                let text = |v: &Map<String, Value>, k: &str| {
                    v.get(k)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                };
                let items = list
                    .iter()
                    .map(|v| class.call1((text(v, "kind"), text(v, "message"))))
                    .collect::<PyResult<Vec<_>>>()?;
                return items.into_bound_py_any(py);
            }
        }
        _ => {}
    }
    to_py(py, value)
}

fn build(py: Python<'_>, e: &Error) -> PyResult<PyErr> {
    // `by_kind` follows `ErrorKind::ALL`, whose order is the discriminants'
    // (as `ErrorKind::code` relies on too).
    let class = classes(py)?
        .by_kind
        .get(e.kind() as usize)
        .ok_or_else(|| PyRuntimeError::new_err(format!("no class for {}", e.kind())))?
        .bind(py);
    let kwargs = PyDict::new(py);
    kwargs.set_item("details", to_py(py, &Value::Object(e.details().clone()))?)?;
    for (key, value) in e.details() {
        if !key.starts_with('_') && !NOT_ATTRIBUTES.contains(&key.as_str()) {
            kwargs.set_item(key, attribute(py, key, value)?)?;
        }
    }
    let instance = class.call((e.message(),), Some(&kwargs))?;
    Ok(PyErr::from_value(instance))
}

/// The Python exception for a core error: the class of its kind, with
/// `.message`, `.details` (the core's details as a dict) and each detail as
/// an attribute. Every error the binding raises for the core comes from
/// here.
pub fn to_py_err(e: impl Into<Error>) -> PyErr {
    let e = e.into();
    // A wait that ran out of time (the core's `wait_timed_out`): Python's
    // own `TimeoutError`, as `wait(timeout=...)` promises.
    if e.details().get("reason").and_then(Value::as_str) == Some("timeout") {
        return PyTimeoutError::new_err(e.message().to_owned());
    }
    Python::attach(|py| build(py, &e).unwrap_or_else(|failure| failure))
}

/// A guard violation as a `coderig.Violation(kind, message)`.
pub fn violation<'py>(py: Python<'py>, v: &GuardViolation) -> PyResult<Bound<'py, PyAny>> {
    classes(py)?
        .module
        .bind(py)
        .getattr("Violation")?
        .call1((v.kind.as_str(), v.message.as_str()))
}

// ---------------------------------------------------------------------------
// JSON.

/// `at` and a path inside it, as the core writes paths (`edits[0].old`).
fn join_path(at: &str, inner: &str) -> String {
    match (at, inner) {
        ("", "" | ".") => ".".to_owned(),
        (_, "" | ".") => at.to_owned(),
        ("", _) => inner.to_owned(),
        (_, _) if inner.starts_with('[') => format!("{at}{inner}"),
        _ => format!("{at}.{inner}"),
    }
}

/// A Python value as JSON, for the core's decoders: `None`, `bool`, `int`,
/// `float` (NaN and infinities become null), `str`, lists and tuples,
/// sets and frozensets (as arrays), dicts with `str` keys; an iterator is
/// read into a list first. Anything else is an `InvalidInputError` at the
/// path `at` (plus where inside the value).
pub fn to_json(value: &Bound<'_, PyAny>, at: &str) -> PyResult<Value> {
    let listed;
    let value = if value.is_instance_of::<PyIterator>() {
        listed = PyList::new(value.py(), value.try_iter()?.collect::<PyResult<Vec<_>>>()?)?;
        listed.as_any()
    } else {
        value
    };
    let mut depythonizer = pythonize::Depythonizer::from_object(value);
    serde_path_to_error::deserialize::<_, Value>(&mut depythonizer).map_err(|e| {
        let path = join_path(at, &e.path().to_string());
        to_py_err(Error::invalid_at(
            &path,
            format!(
                "not JSON-like ({}); use dicts with str keys, lists, tuples, sets, str, int, \
                 float, bool and None",
                e.inner()
            ),
        ))
    })
}

/// JSON as Python: objects become dicts, arrays lists.
pub fn to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(pythonize::pythonize(py, value)?)
}

/// A serializable core value as Python (dicts and lists, snake_case keys,
/// exactly the core's serde shape).
pub fn to_dict<T: Serialize>(py: Python<'_>, value: &T) -> PyResult<Py<PyAny>> {
    let json =
        serde_json::to_value(value).map_err(|e| to_py_err(Error::internal(e.to_string())))?;
    Ok(to_py(py, &json)?.unbind())
}

/// Decodes with one of the core's decoders; its error is raised as is.
pub fn decode<T>(value: Value, decoder: impl FnOnce(Value) -> Result<T, Error>) -> PyResult<T> {
    decoder(value).map_err(to_py_err)
}

/// A JSON object of named arguments, each converted by [`to_json`] at its
/// own name; absent ones are left out, so the decoder's defaults apply.
pub fn object(fields: &[(&str, Option<&Bound<'_, PyAny>>)]) -> PyResult<Value> {
    let mut object = Map::new();
    for (key, value) in fields {
        if let Some(value) = value {
            object.insert((*key).to_owned(), to_json(value, key)?);
        }
    }
    Ok(Value::Object(object))
}

/// The [`object`] of named arguments decoded strictly as `T` — the body of
/// the matching HTTP route, so a bad argument gets the server's message.
pub fn request<T: DeserializeOwned>(fields: &[(&str, Option<&Bound<'_, PyAny>>)]) -> PyResult<T> {
    decode(object(fields)?, coderig::json::decode_object)
}

/// A path argument as the `str` the JSON contract wants: an `os.PathLike`
/// is converted with `os.fspath`; anything else is left for the decoder to
/// judge.
pub fn fspath<'py>(value: &Bound<'py, PyAny>) -> Bound<'py, PyAny> {
    if value.is_instance_of::<PyString>() || value.is_none() {
        return value.clone();
    }
    match value.extract::<PathBuf>() {
        Ok(path) => PyString::new(value.py(), &path.to_string_lossy()).into_any(),
        Err(_) => value.clone(),
    }
}

// ---------------------------------------------------------------------------
// Names and collections.

/// Parses one of the core's names (trigger rule, lane, status, ...) with
/// its `FromStr`: aliases and any ASCII case accepted; an unknown name is
/// an `InvalidInputError` listing the valid ones.
pub fn name<T: FromStr<Err = ParseNameError>>(text: &str) -> PyResult<T> {
    text.parse().map_err(to_py_err)
}

/// Any iterable of `T` (list, tuple, set, generator, dict keys...), for the
/// arguments the API documents as collections of ids or names.
///
/// pyo3's `Vec<T>` accepts only sequences and its `HashSet<T>` only sets;
/// callers naturally pass either. A `str` or `bytes` is refused with a
/// `TypeError` although it is iterable: `deps="a"` is a mistake for
/// `deps=["a"]`, not the dependencies `"a"`.
pub struct Items<T>(pub Vec<T>);

impl<'py, T: FromPyObjectOwned<'py>> FromPyObject<'_, 'py> for Items<T> {
    type Error = PyErr;

    fn extract(obj: Borrowed<'_, 'py, PyAny>) -> PyResult<Self> {
        if obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyBytes>() {
            return Err(PyTypeError::new_err(format!(
                "expected a collection, not {}: wrap a single value in a list",
                obj.get_type().name()?
            )));
        }
        let mut items = Vec::with_capacity(obj.len().unwrap_or(0));
        for item in obj.try_iter()? {
            items.push(item?.extract::<T>().map_err(Into::into)?);
        }
        Ok(Items(items))
    }
}

// ---------------------------------------------------------------------------
// Durations.

/// A duration argument (seconds or a string like `"90s"`), decoded by the
/// core's duration decoder: a bad one is the core's `InvalidInputError` at
/// `at`. `None` is no duration.
pub fn duration(value: Option<&Bound<'_, PyAny>>, at: &str) -> PyResult<Option<Duration>> {
    #[derive(Deserialize)]
    struct Limit(
        #[serde(deserialize_with = "coderig::agent::duration::deserialize_opt")] Option<Duration>,
    );
    let Some(value) = value else {
        return Ok(None);
    };
    finite(value, at)?;
    let Limit(limit) = coderig::json::decode(to_json(value, at)?)
        .map_err(|e| to_py_err(Error::invalid_at(at, e.message())))?;
    Ok(limit)
}

/// Refuses a NaN or an infinity for a duration: JSON has none (pythonize
/// would make them `null`, "not given").
pub fn finite(value: &Bound<'_, PyAny>, at: &str) -> PyResult<()> {
    let Ok(f) = value.cast::<PyFloat>().map(|f| f.value()) else {
        return Ok(());
    };
    if f.is_finite() {
        return Ok(());
    }
    let shown = if f.is_nan() {
        "NaN"
    } else if f > 0.0 {
        "Infinity"
    } else {
        "-Infinity"
    };
    Err(to_py_err(Error::invalid_at(
        at,
        format!("must be a finite number, got {shown}"),
    )))
}
