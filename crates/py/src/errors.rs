//! Python exception classes and the one conversion from the core's error.
//!
//! The classes are written in Python (`errors.py`, compiled into the native
//! module) because `InvalidInputError` must also be a `ValueError` and
//! `EditIOError` an `OSError`: multiple bases, which `create_exception!`
//! cannot express.

use coderig::{EditError, GuardViolation};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyModule};

/// Every class defined by `errors.py` that the package exports.
pub const EXPORTED: [&str; 9] = [
    "EditError",
    "NotFoundError",
    "AmbiguousError",
    "GuardError",
    "NoOpError",
    "HashlineMismatchError",
    "InvalidInputError",
    "EditIOError",
    "Violation",
];

static ERRORS_MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

/// The module holding the classes, created once per interpreter.
fn errors_module(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    ERRORS_MODULE
        .get_or_try_init(py, || {
            PyModule::from_code(
                py,
                pyo3::ffi::c_str!(include_str!("errors.py")),
                c"coderig/errors.py",
                c"coderig._errors",
            )
            .map(Bound::unbind)
        })
        .map(|module| module.bind(py))
}

/// Adds every class of [`EXPORTED`] to the native module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let errors = errors_module(m.py())?;
    for name in EXPORTED {
        m.add(name, errors.getattr(name)?)?;
    }
    Ok(())
}

/// A guard violation as a Python `coderig.Violation(kind, message)`.
pub fn violation_to_py<'py>(py: Python<'py>, v: &GuardViolation) -> PyResult<Bound<'py, PyAny>> {
    errors_module(py)?
        .getattr("Violation")?
        .call1((v.kind.as_str(), v.message.as_str()))
}

/// The Python exception for a core error: the subclass matching the
/// variant, with `.message`, `.code` and the variant's details as
/// attributes (`nearest`, `count` + `lines`, `violations`, `remaps`).
pub fn to_py_err(e: EditError) -> PyErr {
    Python::attach(|py| build(py, &e).unwrap_or_else(|failure| failure))
}

fn build(py: Python<'_>, e: &EditError) -> PyResult<PyErr> {
    let errors = errors_module(py)?;
    let kwargs = PyDict::new(py);
    let class = match e {
        EditError::NotFound { nearest, .. } => {
            kwargs.set_item(
                "nearest",
                nearest.map(|n| (n.first_line, n.last_line, n.score)),
            )?;
            "NotFoundError"
        }
        EditError::Ambiguous { count, lines, .. } => {
            kwargs.set_item("count", count)?;
            kwargs.set_item("lines", lines)?;
            "AmbiguousError"
        }
        EditError::Guard { violations, .. } => {
            let list = violations
                .iter()
                .map(|v| violation_to_py(py, v))
                .collect::<PyResult<Vec<_>>>()?;
            kwargs.set_item("violations", list)?;
            "GuardError"
        }
        EditError::NoOp { .. } => "NoOpError",
        EditError::HashlineMismatch { remaps, .. } => {
            kwargs.set_item("remaps", remaps)?;
            "HashlineMismatchError"
        }
        EditError::InvalidInput { .. } => "InvalidInputError",
        EditError::Io { .. } => "EditIOError",
    };
    let instance = errors.getattr(class)?.call((e.message(),), Some(&kwargs))?;
    Ok(PyErr::from_value(instance))
}

#[cfg(test)]
mod tests {
    use super::*;
    use coderig::{Nearest, ViolationKind};
    use std::collections::BTreeMap;

    fn raised(e: EditError) -> (String, String, String, Py<PyAny>) {
        let code = e.code().to_owned();
        Python::attach(|py| {
            let err = to_py_err(e);
            let value = err.value(py).clone();
            let class: String = value.get_type().name().unwrap().extract().unwrap();
            let got_code: String = value.getattr("code").unwrap().extract().unwrap();
            assert_eq!(got_code, code, "{class}.code");
            let message: String = value.getattr("message").unwrap().extract().unwrap();
            (class, got_code, message, value.into_any().unbind())
        })
    }

    #[test]
    fn every_variant_becomes_its_class_with_details() {
        let (class, _, message, value) = raised(EditError::NotFound {
            message: "look at line 3".into(),
            nearest: Some(Nearest {
                first_line: 3,
                last_line: 4,
                score: 0.75,
            }),
        });
        assert_eq!(
            (class.as_str(), message.as_str()),
            ("NotFoundError", "look at line 3")
        );
        Python::attach(|py| {
            let nearest: (usize, usize, f64) = value
                .bind(py)
                .getattr("nearest")
                .unwrap()
                .extract()
                .unwrap();
            assert_eq!(nearest, (3, 4, 0.75));
        });

        let (class, _, _, value) = raised(EditError::NotFound {
            message: "m".into(),
            nearest: None,
        });
        assert_eq!(class, "NotFoundError");
        Python::attach(|py| assert!(value.bind(py).getattr("nearest").unwrap().is_none()));

        let (class, _, _, value) = raised(EditError::Ambiguous {
            message: "m".into(),
            count: 2,
            lines: vec![(1, 1), (9, 10)],
        });
        assert_eq!(class, "AmbiguousError");
        Python::attach(|py| {
            let value = value.bind(py);
            assert_eq!(
                value.getattr("count").unwrap().extract::<usize>().unwrap(),
                2
            );
            let lines: Vec<(usize, usize)> = value.getattr("lines").unwrap().extract().unwrap();
            assert_eq!(lines, vec![(1, 1), (9, 10)]);
        });

        let (class, _, _, value) = raised(EditError::Guard {
            message: "m".into(),
            violations: vec![GuardViolation {
                kind: ViolationKind::MarkerLeak,
                message: "leak".into(),
            }],
        });
        assert_eq!(class, "GuardError");
        Python::attach(|py| {
            let first = value
                .bind(py)
                .getattr("violations")
                .unwrap()
                .get_item(0)
                .unwrap();
            let kind: String = first.getattr("kind").unwrap().extract().unwrap();
            let message: String = first.getattr("message").unwrap().extract().unwrap();
            assert_eq!((kind.as_str(), message.as_str()), ("marker_leak", "leak"));
        });

        let (class, _, _, value) = raised(EditError::HashlineMismatch {
            message: "m".into(),
            remaps: BTreeMap::from([("2#ZZ".to_owned(), "2#VK".to_owned())]),
        });
        assert_eq!(class, "HashlineMismatchError");
        Python::attach(|py| {
            let remaps: BTreeMap<String, String> =
                value.bind(py).getattr("remaps").unwrap().extract().unwrap();
            assert_eq!(remaps.get("2#ZZ").map(String::as_str), Some("2#VK"));
        });

        for (error, expected) in [
            (
                EditError::NoOp {
                    message: "m".into(),
                },
                "NoOpError",
            ),
            (EditError::invalid("m"), "InvalidInputError"),
            (
                EditError::Io {
                    message: "m".into(),
                },
                "EditIOError",
            ),
        ] {
            assert_eq!(raised(error).0, expected);
        }
    }

    #[test]
    fn invalid_input_is_a_value_error_and_io_an_os_error() {
        Python::attach(|py| {
            let invalid = to_py_err(EditError::invalid("bad"));
            assert!(invalid.is_instance_of::<pyo3::exceptions::PyValueError>(py));
            let io = to_py_err(EditError::Io {
                message: "disk".into(),
            });
            assert!(io.is_instance_of::<pyo3::exceptions::PyOSError>(py));
        });
    }
}
