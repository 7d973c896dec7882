//! Python bindings of coderig: the native module `coderig._native`, which
//! the pure-Python package `coderig` (in `python/coderig/`) re-exports.
//!
//! One file per capability; this file only registers them. A binding is a
//! few lines that convert Python values, call the core, and turn a
//! [`coderig::EditError`] into the matching Python exception with
//! [`errors::to_py_err`]:
//!
//! ```ignore
//! #[pyfunction]
//! fn apply_edit(content: &str, old: &str, new: &str) -> PyResult<Applied> {
//!     coderig::apply_edit(content, &edit).map_err(to_py_err)
//! }
//! ```
//!
//! Submodules (`coderig.hashline`, `coderig.flow`, `coderig.arena`) follow
//! one pattern: `src/hashline.rs` has `pub fn register(m: &Bound<PyModule>)`;
//! the module function below does
//! `let sub = PyModule::new(m.py(), "hashline")?; hashline::register(&sub)?; m.add_submodule(&sub)?;`
//! and `python/coderig/hashline.py` re-exports the names explicitly
//! (`from ._native import hashline as _native_hashline`,
//! `line_hash = _native_hashline.line_hash`, ...) with a `hashline.pyi`
//! stub beside it, so `import coderig.hashline` and `from coderig import hashline` both work.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod arena;
mod convert;
pub mod edit;
pub mod errors;
pub mod flow;
pub mod hash;
pub mod hashline;

use pyo3::prelude::*;

/// The native module `coderig._native`.
#[pymodule]
#[pyo3(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    errors::register(m)?;
    hash::register(m)?;
    edit::register(m)?;
    let hashline_module = PyModule::new(m.py(), "hashline")?;
    hashline::register(&hashline_module)?;
    m.add_submodule(&hashline_module)?;
    let sub = PyModule::new(m.py(), "arena")?;
    arena::register(&sub)?;
    m.add_submodule(&sub)?;
    let sub = PyModule::new(m.py(), "flow")?;
    flow::register(&sub)?;
    m.add_submodule(&sub)?;
    Ok(())
}
