//! The Python face of [`coderig::watch::Watch`]: what `Battle.events()`
//! and `Run.events()` return iterate one core watch, nothing more.
//!
//! The watch decides everything — what is replayed, what comes live, what
//! is de-duplicated, where the stream ends (right after the subject's final
//! status event, every contestant or step final before it) — and this
//! adapter only turns each event into the dict the core serializes
//! (`{"type": ..., "seq": ..., "epoch": ..., ...}` for a stored one, no
//! `seq` for a live `agent_output`) and `None` into the end of the
//! iteration. A blocking `next` releases the GIL; Ctrl-C raises
//! `KeyboardInterrupt` and the watch loses nothing (it is cancel-safe
//! between events). Its errors are the core's: `NotFoundIdError` for a
//! subject that is gone, `UnavailableError` when the rig was shut down
//! before the subject ended.

use crate::blocking::call;
use crate::helpers::{to_py, to_py_err};
use coderig::bus::BusEvent;
use coderig::rig::{Rig, Subject, Watch};
use coderig::Error;
use pyo3::exceptions::PyStopAsyncIteration;
use pyo3::prelude::*;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Mutex;

/// One `events()` stream: a core [`Watch`], subscribed when the stream was
/// made (so nothing stored after `events()` returned is missed, however
/// late the first `next` comes), shared by the sync and the async
/// iterator of one Python object.
pub struct Events {
    watch: Arc<Mutex<Watch>>,
}

impl Events {
    /// A stream of `subject` on `rig`, from the subject's start.
    pub fn new(rig: &Rig, subject: Subject) -> Self {
        Events {
            watch: Arc::new(Mutex::new(rig.watch(subject))),
        }
    }

    /// The next event as a dict; `None` at the end (blocking, GIL
    /// released).
    pub fn next_blocking(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        match call(py, next(&self.watch))? {
            Some(event) => Ok(Some(to_py(py, &event)?.unbind())),
            None => Ok(None),
        }
    }

    /// The next event as an awaitable of a dict; `StopAsyncIteration` at
    /// the end.
    pub fn next_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let watch = self.watch.clone();
        pyo3_async_runtimes::tokio::future_into_py(py, async move {
            match next(&watch).await.map_err(to_py_err)? {
                Some(event) => Python::attach(|py| Ok(to_py(py, &event)?.unbind())),
                None => Err(PyStopAsyncIteration::new_err(())),
            }
        })
    }
}

/// The watch's next event as the core's JSON, or `None` at its end.
async fn next(watch: &Mutex<Watch>) -> Result<Option<Value>, Error> {
    let json = match watch.lock().await.next().await? {
        None => return Ok(None),
        Some(BusEvent::Stored(event)) => serde_json::to_value(&event),
        Some(BusEvent::Live(event)) => serde_json::to_value(&event),
    };
    json.map(Some)
        .map_err(|e| Error::internal(format!("an event as JSON: {e}")))
}

/// `wait(timeout)` of a battle or a run: the core's [`Rig::wait_battle`]
/// or [`Rig::wait_run`] (its end rule is the watch's), the view as a dict;
/// blocking with the GIL released. A timeout is the core's
/// `wait_timed_out`, raised as `TimeoutError`.
pub fn wait(
    py: Python<'_>,
    rig: &Rig,
    subject: Subject,
    timeout: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let limit = crate::helpers::duration(timeout, "timeout")?;
    let view = call(py, view_at_end(rig.clone(), subject, limit))?;
    Ok(to_py(py, &view)?.unbind())
}

/// [`wait`] as an awaitable (on the running asyncio loop).
pub fn wait_async<'py>(
    py: Python<'py>,
    rig: &Rig,
    subject: Subject,
    timeout: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let limit = crate::helpers::duration(timeout, "timeout")?;
    let rig = rig.clone();
    pyo3_async_runtimes::tokio::future_into_py(py, async move {
        let view = view_at_end(rig, subject, limit).await.map_err(to_py_err)?;
        Python::attach(|py| Ok(to_py(py, &view)?.unbind()))
    })
}

/// The subject's view once it is finished, as the core's JSON.
async fn view_at_end(rig: Rig, subject: Subject, limit: Option<Duration>) -> Result<Value, Error> {
    let json = match &subject {
        Subject::Battle(id) => serde_json::to_value(rig.wait_battle(id, limit).await?),
        Subject::Run(id) => serde_json::to_value(rig.wait_run(id, limit).await?),
    };
    json.map_err(|e| Error::internal(format!("a view as JSON: {e}")))
}

/// Declares a Python class of one `events()` stream: a sync iterator
/// (blocking, the GIL released) and an async iterator over one [`Events`].
/// `Battle.events()` and `Run.events()` each return their own class, so
/// the stubs can type each one's items.
macro_rules! events_class {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[pyclass(module = "coderig", frozen)]
        pub struct $name(pub(crate) $crate::watch::Events);

        #[pymethods]
        impl $name {
            fn __iter__(slf: Py<Self>) -> Py<Self> {
                slf
            }

            fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
                self.0.next_blocking(py)
            }

            fn __aiter__(slf: Py<Self>) -> Py<Self> {
                slf
            }

            fn __anext__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
                self.0.next_async(py)
            }
        }
    };
}
pub(crate) use events_class;
