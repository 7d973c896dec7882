//! The Python callables of a run's `code` steps (`Rig.run_flow(code=...)`)
//! as the core's [`CodeStep`].
//!
//! Each callable is called on a thread of tokio's blocking pool that takes
//! the GIL (never on a runtime worker: Python code may block), with the
//! step's context as a dict. When it returns an awaitable (an `async def`
//! function, or anything returning a coroutine) the awaitable runs on the
//! module's own asyncio loop, on a daemon thread started by the first one;
//! a step that times out or is cancelled cancels that task. A sync callable
//! cannot be interrupted: it runs to its end on its thread and its result
//! is dropped.

use super::type_name;
use crate::helpers::{to_json, to_py};
use coderig::flow::engine::{CodeStep, CodeSteps};
use coderig::{Error, ErrorKind};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyCFunction, PyDict, PyTuple};
use serde_json::Value;
use std::sync::{Arc, Mutex, OnceLock};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// `run_flow`'s `code`: a mapping of step ids to callables. Which ids the
/// flow's code steps need is the engine's to judge (`invalid_input` with
/// `problems`); a key that is not a `str` or a value that is not callable
/// is a `TypeError`.
pub fn code_steps(code: Option<&Bound<'_, PyAny>>) -> PyResult<CodeSteps> {
    let mut steps = CodeSteps::new();
    let Some(code) = code.filter(|c| !c.is_none()) else {
        return Ok(steps);
    };
    let items = code.call_method0("items").map_err(|_| {
        PyTypeError::new_err(format!(
            "code must be a dict of step ids to callables, not a {}",
            type_name(code)
        ))
    })?;
    for item in items.try_iter()? {
        let (key, value): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item?.extract()?;
        let id: String = key.extract().map_err(|_| {
            PyTypeError::new_err(format!(
                "code's keys are step ids (str), not {}",
                type_name(&key)
            ))
        })?;
        if !value.is_callable() {
            return Err(PyTypeError::new_err(format!(
                "code[{id:?}] must be a callable (a function or an async function), not a {}",
                type_name(&value)
            )));
        }
        steps.insert(
            id,
            Arc::new(PyCode {
                callable: Arc::new(value.unbind()),
            }),
        );
    }
    Ok(steps)
}

/// The Python side of code steps: the module's asyncio loop (started on a
/// daemon thread by the first awaitable) and the submission of an
/// awaitable to it as a task whose end calls `done(future)`.
const CODE_LOOP: &std::ffi::CStr = cr#"
import asyncio
import threading

_loop = None
_lock = threading.Lock()


def _get_loop():
    global _loop
    with _lock:
        if _loop is None:
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="coderig-code-steps",
                             daemon=True).start()
            _loop = loop
        return _loop


async def _await(awaitable):
    return await awaitable


def submit(awaitable, done):
    future = asyncio.run_coroutine_threadsafe(_await(awaitable), _get_loop())
    future.add_done_callback(done)
    return future
"#;

/// The helper module of [`CODE_LOOP`], made once.
fn code_loop(py: Python<'_>) -> PyResult<Bound<'_, PyModule>> {
    static MODULE: OnceLock<Py<PyModule>> = OnceLock::new();
    if let Some(module) = MODULE.get() {
        return Ok(module.bind(py).clone());
    }
    let module = PyModule::from_code(
        py,
        CODE_LOOP,
        c"coderig_code_steps.py",
        c"coderig._code_steps",
    )?;
    // Two threads racing here each made a module; the first one set is
    // the one every later call uses (the other's loop was never started).
    let _ = MODULE.set(module.clone().unbind());
    Ok(MODULE.get().map_or(module, |m| m.bind(py).clone()))
}

/// A Python exception as the error of a failed attempt. A `coderig.Error`
/// keeps its kind, message and details; any other exception is kind
/// `agent` (the step's worker failed, as a failing command is) with the
/// exception's message (its class name when the message is empty) and
/// details `exception` (the class) and `traceback`.
fn exception_error(py: Python<'_>, err: &PyErr) -> Error {
    let value = err.value(py);
    if let Some(e) = coderig_error(py, value) {
        return e;
    }
    let class = value.get_type();
    let class_name = match (class.module(), class.qualname()) {
        (Ok(module), Ok(name)) if module != "builtins" => format!("{module}.{name}"),
        (_, Ok(name)) => name.to_string(),
        _ => "Exception".to_owned(),
    };
    let text = value.str().map(|s| s.to_string()).unwrap_or_default();
    let message = if text.is_empty() {
        class_name.clone()
    } else {
        text
    };
    let mut error = Error::new(ErrorKind::Agent, message).with_detail("exception", class_name);
    let traceback = py.import("traceback").and_then(|tb| {
        // The PyErr holds the traceback; the value's `__traceback__` may
        // not be set yet.
        let lines = tb.call_method1(
            "format_exception",
            (value.get_type(), value, err.traceback(py)),
        )?;
        let parts: Vec<String> = lines.extract()?;
        Ok(parts.concat())
    });
    if let Ok(traceback) = traceback {
        error = error.with_detail("traceback", traceback);
    }
    error
}

/// A `coderig.Error` raised in a code step (say, by a binding it called)
/// as the core error it stands for.
fn coderig_error(py: Python<'_>, value: &Bound<'_, PyAny>) -> Option<Error> {
    let class = py.import("coderig._native").ok()?.getattr("Error").ok()?;
    if !value.is_instance(&class).ok()? {
        return None;
    }
    let kind: String = value.getattr("kind").ok()?.extract().ok()?;
    let kind: ErrorKind = kind.parse().ok()?;
    let message: String = value.getattr("message").ok()?.extract().ok()?;
    let mut error = Error::new(kind, message);
    if let Ok(Value::Object(details)) = value
        .getattr("details")
        .map_err(|_| ())
        .and_then(|d| to_json(&d, "details").map_err(|_| ()))
    {
        for (key, detail) in details {
            error = error.with_detail(&key, detail);
        }
    }
    Some(error)
}

/// A code step's return value as its result: JSON-like values only.
fn result_json(py: Python<'_>, value: &Bound<'_, PyAny>) -> Result<Value, Error> {
    to_json(value, "result").map_err(|e| exception_error(py, &e))
}

/// A Python callable as a code step.
struct PyCode {
    callable: Arc<Py<PyAny>>,
}

/// The end of one call, sent from the asyncio loop's thread.
type Ending = Result<Value, Error>;

/// How a call started: done at once (a sync callable), or an awaitable
/// running on the loop.
enum Started {
    Done(Ending),
    Awaiting(Pending),
}

/// An awaitable running as a task of the code steps' loop. Dropped before
/// it ended (the step timed out, the run was cancelled, the driver
/// stopped), it cancels the task.
struct Pending {
    ending: oneshot::Receiver<Ending>,
    /// The `concurrent.futures.Future` of the task; `None` once it ended.
    future: Option<Py<PyAny>>,
}

impl Pending {
    async fn ended(mut self) -> Ending {
        let ending = (&mut self.ending).await;
        self.future = None;
        ending.unwrap_or_else(|_| Err(Error::internal("a code step's task ended without a result")))
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        let Some(future) = self.future.take() else {
            return;
        };
        // Taking the GIL may wait for other Python threads: not on a
        // runtime worker.
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn_blocking(move || {
                Python::attach(|py| {
                    let _ = future.bind(py).call_method0("cancel");
                })
            });
        }
    }
}

/// Calls the callable with the context (the GIL held, on a blocking
/// thread); an awaitable it returns is submitted to the loop.
fn start(py: Python<'_>, callable: &Py<PyAny>, ctx: &Value) -> Started {
    let outcome = (|| -> PyResult<Started> {
        let ctx = to_py(py, ctx)?;
        let returned = match callable.bind(py).call1((ctx,)) {
            Ok(returned) => returned,
            Err(e) => return Ok(Started::Done(Err(exception_error(py, &e)))),
        };
        let inspect = py.import("inspect")?;
        if !inspect
            .call_method1("isawaitable", (&returned,))?
            .is_truthy()?
        {
            return Ok(Started::Done(result_json(py, &returned)));
        }
        let (tx, rx) = oneshot::channel::<Ending>();
        let tx = Mutex::new(Some(tx));
        let done = PyCFunction::new_closure(
            py,
            None,
            None,
            move |args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, PyDict>>| {
                let py = args.py();
                let future = args.get_item(0)?;
                let ending = if future.call_method0("cancelled")?.is_truthy()? {
                    Err(Error::conflict("the code step was cancelled"))
                } else {
                    match future.call_method0("result") {
                        Ok(value) => result_json(py, &value),
                        Err(e) => Err(exception_error(py, &e)),
                    }
                };
                if let Some(tx) = tx.lock().unwrap_or_else(|p| p.into_inner()).take() {
                    let _ = tx.send(ending);
                }
                Ok::<_, PyErr>(())
            },
        )?;
        let future = code_loop(py)?.call_method1("submit", (returned, done))?;
        Ok(Started::Awaiting(Pending {
            ending: rx,
            future: Some(future.unbind()),
        }))
    })();
    outcome.unwrap_or_else(|e| Started::Done(Err(exception_error(py, &e))))
}

#[async_trait::async_trait]
impl CodeStep for PyCode {
    async fn call(&self, ctx: Value, _cancel: CancellationToken) -> Result<Value, Error> {
        // The engine drops this future when the step is cancelled; the
        // blocking thread cannot be stopped, a Pending cancels its task.
        let callable = self.callable.clone();
        let started =
            tokio::task::spawn_blocking(move || Python::attach(|py| start(py, &callable, &ctx)))
                .await
                .map_err(|e| Error::internal(format!("a code step's thread failed: {e}")))?;
        match started {
            Started::Done(ending) => ending,
            Started::Awaiting(pending) => pending.ended().await,
        }
    }
}
