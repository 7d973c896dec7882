//! `coderig.xxhash32`.

use crate::errors::to_py_err;
use coderig::EditError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyInt, PyString};

/// Registers the hashing functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(xxhash32, m)?)
}

/// xxHash32 of `data` (a `str` is hashed as UTF-8, `bytes` as is) with
/// `seed` in `0..=4294967295` (default 0); another integer raises
/// `InvalidInputError`.
#[pyfunction]
#[pyo3(signature = (data, seed = None))]
fn xxhash32(data: &Bound<'_, PyAny>, seed: Option<&Bound<'_, PyAny>>) -> PyResult<u32> {
    let Some(seed) = seed else {
        return hash_data(data, 0);
    };
    let seed = match seed.extract::<u32>() {
        Ok(seed) => seed,
        Err(_) if seed.is_instance_of::<PyInt>() => {
            return Err(to_py_err(EditError::invalid(format!(
                "seed must be an integer in 0..=4294967295, got {seed}"
            ))))
        }
        Err(e) => return Err(e),
    };
    hash_data(data, seed)
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
