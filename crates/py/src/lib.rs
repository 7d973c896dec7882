//! Python bindings of coderig: the native module `coderig._native`, which
//! the pure-Python package `coderig` (in `python/coderig/`) re-exports.
//!
//! One file per capability, plus [`helpers`], the one place that converts
//! Python values for the core's JSON decoders and turns a
//! [`coderig::Error`] into the Python exception of its kind. A binding is a
//! few lines that convert its arguments, call the core, and map the error:
//!
//! ```ignore
//! #[pyfunction]
//! fn apply_edit(py: Python<'_>, content: &Bound<'_, PyAny>, ...) -> PyResult<Applied> {
//!     let req: EditRequest = request(&[("content", Some(content)), ...])?;
//!     py.detach(|| req.apply()).map(Applied::from).map_err(to_py_err)
//! }
//! ```
//!
//! Submodules (`coderig.hashline`, `coderig.flow`, `coderig.arena`,
//! `coderig.model`) follow
//! one pattern: `src/hashline.rs` has `pub fn register(m: &Bound<PyModule>)`;
//! the module function below adds it as a submodule, and
//! `python/coderig/hashline.py` re-exports the names explicitly with a
//! `hashline.pyi` stub beside it, so `import coderig.hashline` and
//! `from coderig import hashline` both work.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod arena;
pub mod battle;
pub mod blocking;
pub mod edit;
pub mod flow;
pub mod hashline;
pub mod helpers;
pub mod model;
pub mod rig;
pub mod run;
pub mod turn;
pub mod watch;

use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Every list of names that crosses the Python face, as the core defines
/// it: what the stubs' `Literal[...]` types must equal.
const NAMES: &[(&str, &[&str])] = coderig::names::LISTS;

/// `{list name: [names]}` of every enum crossing the Python face (tiers,
/// match kinds, trigger rules, statuses, lanes, error kinds and codes,
/// ...), in the core's declaration order; a fresh dict each call.
#[pyfunction]
fn names(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let out = PyDict::new(py);
    for (key, list) in NAMES {
        out.set_item(key, list.to_vec())?;
    }
    Ok(out)
}

/// The native module `coderig._native`. `Rig`, `Turn` and `TurnEvents`
/// ([`rig`], [`turn`]) run agent turns, `Battle` and `BattleEvents`
/// ([`battle`]) and `Run` and `RunEvents` ([`run`]) the battles and runs
/// of the core rig a `Rig` opens, followed by the core's watch
/// ([`watch`]), on one shared tokio runtime.
#[pymodule]
#[pyo3(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(names, m)?)?;
    helpers::register(m)?;
    edit::register(m)?;
    rig::register(m)?;
    for (sub_name, register) in [
        (
            "hashline",
            hashline::register as fn(&Bound<'_, PyModule>) -> PyResult<()>,
        ),
        ("arena", arena::register),
        ("flow", flow::register),
        ("model", model::register),
    ] {
        let sub = PyModule::new(m.py(), sub_name)?;
        register(&sub)?;
        m.add_submodule(&sub)?;
    }
    Ok(())
}
