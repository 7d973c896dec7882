//! Argument conversions shared by the `flow` and `arena` bindings.

use crate::errors::to_py_err;
use coderig::EditError;
use pyo3::conversion::FromPyObjectOwned;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use std::fmt::Display;

/// `coderig.InvalidInputError` carrying the core's message.
pub fn invalid(e: impl Display) -> PyErr {
    to_py_err(EditError::invalid(e.to_string()))
}

/// Parses one of the core's names with its `FromStr`, whose error lists the
/// valid names; refused as `coderig.InvalidInputError`.
pub fn parse<T: std::str::FromStr>(s: &str) -> PyResult<T>
where
    T::Err: Display,
{
    s.parse().map_err(invalid)
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
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
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
