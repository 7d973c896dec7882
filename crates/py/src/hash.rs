//! `coderig.xxhash32`.

use crate::errors::to_py_err;
use coderig::EditError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyInt, PyString};

/// Registers the hashing functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(xxhash32, m)?)
}

/// An xxHash32 seed: any `int` in `0..=4294967295`; another `int` is
/// `InvalidInputError` (pyo3's `u32` would raise `OverflowError`), a
/// non-integer a `TypeError`.
struct Seed(u32);

impl FromPyObject<'_, '_> for Seed {
    type Error = PyErr;

    fn extract(obj: Borrowed<'_, '_, PyAny>) -> PyResult<Self> {
        match obj.extract::<u32>() {
            Ok(seed) => Ok(Seed(seed)),
            Err(_) if obj.is_instance_of::<PyInt>() => Err(to_py_err(EditError::invalid(format!(
                "seed must be an integer in 0..=4294967295, got {}",
                obj.as_any()
            )))),
            Err(e) => Err(e),
        }
    }
}

/// xxHash32 of `data` (a `str` is hashed as UTF-8, `bytes` as is) with
/// `seed` in `0..=4294967295` (default 0); another integer raises
/// `InvalidInputError`.
#[pyfunction]
#[pyo3(signature = (data, seed = Seed(0)), text_signature = "(data, seed=0)")]
fn xxhash32(data: &Bound<'_, PyAny>, seed: Seed) -> PyResult<u32> {
    hash_data(data, seed.0)
}

fn hash_data(data: &Bound<'_, PyAny>, seed: u32) -> PyResult<u32> {
    if let Ok(bytes) = data.cast::<PyBytes>() {
        Ok(coderig::xxhash32(bytes.as_bytes(), seed))
    } else if let Ok(text) = data.cast::<PyString>() {
        Ok(coderig::xxhash32(text.to_cow()?.as_bytes(), seed))
    } else {
        Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "data must be str or bytes, not {}",
            data.get_type().name()?
        )))
    }
}
