//! `coderig.Turn` and `coderig.TurnEvents`: a running agent turn, its
//! events as dicts (a sync and an async iterator in one object), its
//! outcome, and its cancel switch.
//!
//! Everything runs on the module's one tokio runtime (pyo3-async-runtimes'
//! shared runtime). A blocking call ([`crate::blocking`]) releases the GIL
//! and wakes every few milliseconds to run Python's signal handlers, so
//! Ctrl-C interrupts it; an interrupted blocking call cancels the turn
//! before the `KeyboardInterrupt` propagates (a turn nobody waits for any
//! more should not go on editing files).

use crate::blocking::{block_on, runtime};
use crate::helpers::{duration, to_dict, to_py_err};
use coderig::agent::{AgentError, AgentEvent, TurnHandle, TurnOutcome};
use pyo3::exceptions::{PyStopAsyncIteration, PyTimeoutError};
use pyo3::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{watch, Mutex};
use tokio_util::sync::CancellationToken;

type Ending = Result<TurnOutcome, AgentError>;

/// What the Python objects of one turn share.
struct Shared {
    handle: Mutex<TurnHandle>,
    cancel: CancellationToken,
    /// `None` until the turn ended and its outcome was taken from the core.
    ending: watch::Sender<Option<Ending>>,
    /// Whether the task that takes the outcome was started.
    waiting: AtomicBool,
}

impl Shared {
    /// The outcome, waited for at most `limit` (`None`: when it took
    /// longer). The core's `TurnHandle::wait` gives the same result every
    /// time, but a wait dropped midway (a waiter giving up) would lose the
    /// turn's task; so one task waits to the end and publishes the outcome,
    /// waiters watch for it, and a waiter that gives up loses nothing.
    async fn ending(self: Arc<Self>, limit: Option<Duration>) -> Option<Ending> {
        if !self.waiting.swap(true, Ordering::SeqCst) {
            let shared = self.clone();
            runtime().spawn(async move {
                let ending = shared.handle.lock().await.wait().await;
                shared.ending.send_replace(Some(ending));
            });
        }
        let mut seen = self.ending.subscribe();
        let ended = seen.wait_for(Option::is_some);
        let ended = match limit {
            None => ended.await,
            Some(limit) => tokio::time::timeout(limit, ended).await.ok()?,
        };
        // `self` holds the sender, so the channel cannot close.
        ended.ok().and_then(|ending| ending.clone())
    }

    async fn next_event(self: Arc<Self>) -> Option<AgentEvent> {
        self.handle.lock().await.next_event().await
    }
}

/// The outcome as a dict, or the coderig error of a failed turn.
fn ending_to_py(py: Python<'_>, ending: &Ending) -> PyResult<Py<PyAny>> {
    match ending {
        Ok(outcome) => to_dict(py, outcome),
        Err(e) => Err(to_py_err(e.clone())),
    }
}

/// A running agent turn (`Rig.run_turn`). Dropping it does not stop the
/// turn; `cancel()` does.
#[pyclass(module = "coderig", frozen)]
pub struct Turn {
    shared: Arc<Shared>,
    identity: String,
    model: Option<String>,
}

impl Turn {
    /// Wraps a started core turn.
    pub fn new(handle: TurnHandle, identity: String, model: Option<String>) -> Self {
        let cancel = handle.cancel_token();
        Turn {
            shared: Arc::new(Shared {
                handle: Mutex::new(handle),
                cancel,
                ending: watch::channel(None).0,
                waiting: AtomicBool::new(false),
            }),
            identity,
            model,
        }
    }
}

#[pymethods]
impl Turn {
    /// The agent's identity.
    #[getter]
    fn identity(&self) -> &str {
        &self.identity
    }

    /// The model asked for (`None`: the agent's default).
    #[getter]
    fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// The event stream: iterate it with `for` (blocking, GIL released) or
    /// `async for`. Every `events()` reads the same stream, and each event
    /// is delivered once; the stream ends with the turn (or when `wait`
    /// starts: events not read by then are dropped).
    fn events(&self) -> TurnEvents {
        TurnEvents {
            shared: self.shared.clone(),
        }
    }

    /// Waits for the end of the turn and returns the outcome dict (the
    /// core's `TurnOutcome`). A failed turn raises its coderig error
    /// (`AgentError`, `UnavailableError`) with `.details`. `timeout`
    /// (seconds or a duration string) bounds this wait only: when it passes,
    /// `TimeoutError` is raised and the turn goes on.
    #[pyo3(signature = (timeout=None))]
    fn wait(&self, py: Python<'_>, timeout: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let limit = duration(timeout, "timeout")?;
        let cancel = self.shared.cancel.clone();
        let ending = block_on(py, self.shared.clone().ending(limit), || cancel.cancel())?;
        match ending {
            Some(ending) => ending_to_py(py, &ending),
            None => Err(still_running(limit)),
        }
    }

    /// `wait()` as an awaitable (on the running asyncio loop).
    #[pyo3(signature = (timeout=None))]
    fn wait_async<'py>(
        &self,
        py: Python<'py>,
        timeout: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let limit = duration(timeout, "timeout")?;
        let shared = self.shared.clone();
        pyo3_async_runtimes::tokio::future_into_py(py, async move {
            match shared.ending(limit).await {
                Some(ending) => Python::attach(|py| ending_to_py(py, &ending)),
                None => Err(still_running(limit)),
            }
        })
    }

    /// Asks the turn to stop: it ends with an `AgentError` whose
    /// `details["agent_error"]` is `"cancelled"`. Safe from any thread;
    /// a no-op once the turn ended.
    fn cancel(&self) {
        self.shared.cancel.cancel();
    }

    /// The outcome dict once a `wait` returned it, else `None` (still
    /// running, not waited for, or failed).
    #[getter]
    fn outcome(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        match &*self.shared.ending.borrow() {
            Some(Ok(outcome)) => to_dict(py, outcome).map(Some),
            _ => Ok(None),
        }
    }

    fn __repr__(&self) -> String {
        let state = match &*self.shared.ending.borrow() {
            None if self.shared.cancel.is_cancelled() => "cancelling",
            None => "running",
            Some(Ok(_)) => "finished",
            Some(Err(_)) => "failed",
        };
        format!(
            "Turn(identity={:?}, model={:?}, {state})",
            self.identity, self.model
        )
    }
}

fn still_running(limit: Option<Duration>) -> PyErr {
    let limit = limit.unwrap_or_default();
    PyTimeoutError::new_err(format!(
        "the turn is still running after {limit:?} (it goes on; wait again or cancel it)"
    ))
}

/// The events of a turn, as dicts (`{"type": "text_delta", "text": ...}`):
/// both an iterator (`for e in turn.events()`, blocking with the GIL
/// released) and an async iterator (`async for e in turn.events()`).
#[pyclass(module = "coderig", frozen)]
pub struct TurnEvents {
    shared: Arc<Shared>,
}

#[pymethods]
impl TurnEvents {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let cancel = self.shared.cancel.clone();
        match block_on(py, self.shared.clone().next_event(), || cancel.cancel())? {
            Some(event) => to_dict(py, &event).map(Some),
            None => Ok(None),
        }
    }

    fn __aiter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __anext__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let shared = self.shared.clone();
        pyo3_async_runtimes::tokio::future_into_py(py, async move {
            match shared.next_event().await {
                Some(event) => Python::attach(|py| to_dict(py, &event)),
                None => Err(PyStopAsyncIteration::new_err(())),
            }
        })
    }
}
