//! Running the core's futures from Python: the module's one tokio runtime,
//! and the blocking call every synchronous method makes — the GIL released,
//! Python's signal handlers run between polls so Ctrl-C interrupts it, the
//! core's error raised as the coderig exception of its kind.

use crate::helpers::to_py_err;
use coderig::Error;
use pyo3::prelude::*;
use std::future::Future;
use std::time::Duration;
use tokio::runtime::Runtime;

/// How often a blocking call looks for a pending signal (Ctrl-C).
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// The module's tokio runtime: the one pyo3-async-runtimes drives the async
/// twins on, so blocking and async calls share tasks and timers.
pub fn runtime() -> &'static Runtime {
    pyo3_async_runtimes::tokio::get_runtime()
}

/// Runs `fut` to completion on [`runtime`] with the GIL released, looking
/// for signals every [`SIGNAL_POLL`]; a signal handler's exception (Ctrl-C's
/// `KeyboardInterrupt`) is raised after `on_interrupt` ran.
pub fn block_on<F>(py: Python<'_>, fut: F, on_interrupt: impl FnOnce()) -> PyResult<F::Output>
where
    F: Future + Send,
    F::Output: Send,
{
    let mut fut = Box::pin(fut);
    loop {
        let step = py.detach(|| {
            runtime().block_on(async { tokio::time::timeout(SIGNAL_POLL, &mut fut).await })
        });
        match step {
            Ok(done) => return Ok(done),
            Err(_elapsed) => {
                if let Err(e) = py.check_signals() {
                    on_interrupt();
                    return Err(e);
                }
            }
        }
    }
}

/// Runs one call of the core's runtime with the GIL released; its error is
/// raised as the coderig exception of its kind.
pub fn call<T, F>(py: Python<'_>, fut: F) -> PyResult<T>
where
    F: std::future::Future<Output = Result<T, Error>> + Send,
    T: Send,
{
    block_on(py, fut, || {})?.map_err(to_py_err)
}
