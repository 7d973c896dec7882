//! `coderig.Run` and `coderig.RunEvents`: a run of the core's flow engine
//! ([`coderig::flow::engine::Engine`]) as Python sees it, and the Python
//! callables of its `code` steps.
//!
//! Thin, like [`crate::battle`]: a `Rig` starts its `Engine` beside its
//! `Arena` (same store, registry, bus and data directory); every method
//! converts its arguments, calls the engine and returns the core's JSON
//! (`RunView`, `StepView`, the stored events) as dicts. Blocking calls
//! release the GIL. Ctrl-C during a blocking call raises
//! `KeyboardInterrupt` and leaves the run running, as for a battle: a run
//! is durable work in the store, and only `cancel()` ends it.
//!
//! Code steps: each callable is called on a thread of tokio's blocking
//! pool that takes the GIL (never on a runtime worker: Python code may
//! block), with the step's context as a dict. When it returns an awaitable
//! (an `async def` function, or anything returning a coroutine) the
//! awaitable runs on the module's own asyncio loop, on a daemon thread
//! started by the first one; a step that times out or is cancelled cancels
//! that task. A sync callable cannot be interrupted: it runs to its end on
//! its thread and its result is dropped.

use crate::battle::{call, ArenaHandle};
use crate::helpers::{to_json, to_py, to_py_err};
use crate::turn::to_dict;
use coderig::bus::{matches, BusEvent, EventSubscription};
use coderig::event::{Event, RunStatus, SseId, StoredEvent};
use coderig::flow::engine::{CodeStep, CodeSteps, Decision, RunView};
use coderig::flow::runspec::FlowSpec;
use coderig::flow::StepStatus;
use coderig::{Error, ErrorKind};
use pyo3::exceptions::{PyStopAsyncIteration, PyTimeoutError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyCFunction, PyDict, PyString, PyTuple};
use serde_json::Value;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// Registers `Run` and `RunEvents`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Run>()?;
    m.add_class::<RunEvents>()?;
    Ok(())
}

// ---------------------------------------------------------------------------
// The spec and the code steps of `Rig.run_flow`.

/// Whether a `str` spec is a file name rather than YAML or JSON text: one
/// line ending in `.json`, `.yaml` or `.yml`. No flow spec is such a line
/// (a spec is a mapping, so its one line would end with `}` or a value of
/// `steps`), so the guess never takes a spec for a path; a file that does
/// not exist is then an `IoError` naming it, not a puzzling YAML problem.
fn names_a_file(text: &str) -> bool {
    let text = text.trim();
    !text.contains('\n') && {
        let lower = text.to_ascii_lowercase();
        [".json", ".yaml", ".yml"]
            .iter()
            .any(|ext| lower.ends_with(ext))
    }
}

/// `run_flow`'s `spec`: a dict (the JSON shape), YAML or JSON text, or a
/// path (`os.PathLike`, or a `str` naming a `.yaml`/`.yml`/`.json` file)
/// read by `FlowSpec::load`. A bad spec is the core's `invalid_input` with
/// `path` and `problems`; another type is a `TypeError`.
pub fn flow_spec(py: Python<'_>, spec: &Bound<'_, PyAny>) -> PyResult<FlowSpec> {
    if let Ok(text) = spec.cast::<PyString>() {
        let text: String = text.extract()?;
        return py
            .detach(|| {
                if names_a_file(&text) || Path::new(text.trim()).is_file() {
                    FlowSpec::load(Path::new(text.trim()))
                } else {
                    FlowSpec::parse(&text)
                }
            })
            .map_err(to_py_err);
    }
    if spec.is_instance_of::<PyDict>() {
        return FlowSpec::from_json(&to_json(spec, "")?).map_err(to_py_err);
    }
    if spec.hasattr("keys")? {
        // Another mapping: as the dict it stands for.
        let dict = py.import("builtins")?.getattr("dict")?.call1((spec,))?;
        return FlowSpec::from_json(&to_json(&dict, "")?).map_err(to_py_err);
    }
    if let Ok(path) = spec.extract::<PathBuf>() {
        return py.detach(|| FlowSpec::load(&path)).map_err(to_py_err);
    }
    Err(PyTypeError::new_err(format!(
        "run_flow takes the spec as a dict, YAML or JSON text, or a path, not a {}",
        type_name(spec)
    )))
}

fn type_name(value: &Bound<'_, PyAny>) -> String {
    value
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_default()
}

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

// ---------------------------------------------------------------------------
// Run.

fn ended(view: &RunView) -> bool {
    !matches!(view.status, RunStatus::Running | RunStatus::Waiting)
}

/// The run ended and its driver has settled every step: a cancelled run is
/// `cancelled` at once, and its steps a moment later, when the driver has
/// stopped them.
fn settled(view: &RunView) -> bool {
    ended(view)
        && (view.finished_at.is_some()
            || view.steps.iter().all(|s| {
                !matches!(
                    s.status,
                    StepStatus::Pending | StepStatus::Running | StepStatus::Waiting
                )
            }))
}

/// Waits until run `id` is [`settled`] or `limit` passed, and returns it
/// as it stands then.
async fn wait_run(
    handle: &ArenaHandle,
    id: &str,
    limit: Option<Duration>,
) -> Result<RunView, Error> {
    let deadline = limit.map(|l| tokio::time::Instant::now() + l);
    let mut sub = Some(handle.arena().bus().subscribe());
    loop {
        let view = handle.engine().run(id).await?;
        if settled(&view) {
            return Ok(view);
        }
        let until = async {
            match deadline {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        let event = async {
            loop {
                match sub.as_mut() {
                    None => std::future::pending::<()>().await,
                    Some(s) => match s.next().await {
                        Some(BusEvent::Stored(e)) if matches(&e.event, None, Some(id)) => return,
                        Some(_) => {}
                        None => sub = None,
                    },
                }
            }
        };
        // The poll covers a subscription that lagged or a bus shut down.
        tokio::select! {
            () = event => {}
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
            () = until => return handle.engine().run(id).await,
        }
    }
}

fn still_running(limit: Option<Duration>, view: &RunView) -> PyErr {
    PyTimeoutError::new_err(format!(
        "run {} is still {} after {:?} (it goes on; wait again or cancel it)",
        view.id,
        view.status,
        limit.unwrap_or_default()
    ))
}

/// A decision's keyword arguments.
fn decision(by: Option<String>, comment: Option<String>) -> Decision {
    Decision { by, comment }
}

/// A run of a `Rig`'s flow engine (`Rig.run_flow`, `Rig.run`). Dropping it
/// changes nothing; `cancel()` ends the run.
#[pyclass(module = "coderig", frozen)]
pub struct Run {
    handle: Arc<ArenaHandle>,
    id: String,
}

impl Run {
    /// The run `id` of the handle's engine.
    pub fn new(handle: Arc<ArenaHandle>, id: String) -> Self {
        Run { handle, id }
    }
}

#[pymethods]
impl Run {
    /// The run's id.
    #[getter]
    fn id(&self) -> &str {
        &self.id
    }

    /// The run as it is now: the core's `RunView` as a dict (status, input,
    /// error, report, spec, timings, steps), the same JSON as
    /// `GET /api/runs/:id`.
    fn info(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let view = call(py, self.handle.engine().run(&self.id))?;
        to_dict(py, &view)
    }

    /// The run's status now: `running`, `waiting`, `completed`, `failed` or
    /// `cancelled`.
    #[getter]
    fn status(&self, py: Python<'_>) -> PyResult<&'static str> {
        let view = call(py, self.handle.engine().run(&self.id))?;
        Ok(view.status.as_str())
    }

    /// The rendered report (the flow's `report` template), once the run
    /// ended; `None` before, or when the flow has none.
    #[getter]
    fn report(&self, py: Python<'_>) -> PyResult<Option<String>> {
        let view = call(py, self.handle.engine().run(&self.id))?;
        Ok(view.report)
    }

    /// The steps now, in flow order: the core's `StepView` dicts (id,
    /// kind, status, attempt, iteration, skip_reason, output, error,
    /// exit_code, timings, switch, approval, attempts).
    fn steps(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let view = call(py, self.handle.engine().run(&self.id))?;
        to_dict(py, &view.steps)
    }

    /// Waits until the run ended (`completed`, `failed` or `cancelled`)
    /// and its steps settled, and returns its `RunView` dict. `timeout`
    /// (seconds or a duration string) bounds the wait: when it passes
    /// first, `TimeoutError` is raised and the run goes on. Blocking with
    /// the GIL released (code steps run meanwhile); Ctrl-C raises
    /// `KeyboardInterrupt` and the run goes on too (only `cancel()` ends
    /// it).
    #[pyo3(signature = (timeout=None))]
    fn wait(&self, py: Python<'_>, timeout: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let limit = crate::rig::duration(timeout, "timeout")?;
        let view = call(py, wait_run(&self.handle, &self.id, limit))?;
        if !ended(&view) {
            return Err(still_running(limit, &view));
        }
        to_dict(py, &view)
    }

    /// `wait()` as an awaitable (on the running asyncio loop).
    #[pyo3(signature = (timeout=None))]
    fn wait_async<'py>(
        &self,
        py: Python<'py>,
        timeout: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let limit = crate::rig::duration(timeout, "timeout")?;
        let handle = self.handle.clone();
        let id = self.id.clone();
        pyo3_async_runtimes::tokio::future_into_py(py, async move {
            let view = wait_run(&handle, &id, limit).await.map_err(to_py_err)?;
            if !ended(&view) {
                return Err(still_running(limit, &view));
            }
            Python::attach(|py| to_dict(py, &view))
        })
    }

    /// The run's events as dicts: both an iterator (`for`, blocking with
    /// the GIL released) and an async iterator (`async for`). Each call
    /// gives a new stream from the start: every stored event of the run
    /// (`run_updated`, `step_updated`, each with its `seq` and `epoch`),
    /// then live ones as they come (`agent_output` of its agent steps too,
    /// which has no `seq` and is never replayed). The stream ends after the
    /// `run_updated` that ends the run once its steps settled and every
    /// event stored until then was given (a cancelled run's steps marked
    /// `cancelled` after the run's update are included). It also ends when
    /// the `Rig`'s runtime is shut down.
    fn events(&self) -> RunEvents {
        RunEvents {
            handle: self.handle.clone(),
            id: self.id.clone(),
            state: Arc::new(tokio::sync::Mutex::new(Stream::default())),
        }
    }

    /// Cancels a live run (running steps are stopped, their processes
    /// killed and async code steps cancelled; the rest marked `cancelled`)
    /// and returns its `RunView` dict: `cancelled` at once, its steps
    /// settling a moment later (`wait()` returns when they did). A run
    /// that already ended raises `ConflictError` (HTTP 409).
    fn cancel(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let view = call(py, self.handle.engine().cancel(&self.id))?;
        to_dict(py, &view)
    }

    /// Approves the approval step `step`, which must be `waiting`
    /// (`ConflictError` otherwise, `NotFoundIdError` for an unknown step):
    /// it is `done`, with the decision (`by`, `comment`) as its output and
    /// in its `approval`. Returns the `StepView` dict.
    #[pyo3(signature = (step, by=None, comment=None))]
    fn approve(
        &self,
        py: Python<'_>,
        step: String,
        by: Option<String>,
        comment: Option<String>,
    ) -> PyResult<Py<PyAny>> {
        let view = call(
            py,
            self.handle
                .engine()
                .approve(&self.id, &step, decision(by, comment)),
        )?;
        to_dict(py, &view)
    }

    /// Rejects the approval step `step` (`waiting`, else `ConflictError`):
    /// it `failed` with the decision recorded, and the trigger rules decide
    /// what runs next. Returns the `StepView` dict.
    #[pyo3(signature = (step, by=None, comment=None))]
    fn reject(
        &self,
        py: Python<'_>,
        step: String,
        by: Option<String>,
        comment: Option<String>,
    ) -> PyResult<Py<PyAny>> {
        let view = call(
            py,
            self.handle
                .engine()
                .reject(&self.id, &step, decision(by, comment)),
        )?;
        to_dict(py, &view)
    }

    fn __repr__(&self) -> String {
        format!("Run(id={:?})", self.id)
    }
}

// ---------------------------------------------------------------------------
// Events.

/// Where one `events()` stream stands.
#[derive(Default)]
struct Stream {
    /// The bus subscription, made on the first `next`.
    sub: Option<EventSubscription>,
    /// Stored events of this run not delivered yet (the replay, then the
    /// final drain).
    replayed: VecDeque<StoredEvent>,
    /// The seq of the last stored event delivered.
    last_seq: u64,
    /// A `run_updated` that ends the run was delivered.
    seen_final: bool,
    /// The stored events after `last_seq` were read once the run settled.
    drained: bool,
    /// The stream has ended.
    done: bool,
}

fn is_final(status: RunStatus) -> bool {
    !matches!(status, RunStatus::Running | RunStatus::Waiting)
}

/// The stored events of run `id` after `after`, as a fresh subscription's
/// replay reads them.
async fn stored_after(
    handle: &ArenaHandle,
    id: &str,
    after: u64,
) -> Result<Vec<StoredEvent>, Error> {
    let mut sub = handle.arena().bus().subscribe();
    let from = SseId::new(handle.engine().store().epoch(), after)
        .map_err(|e| Error::internal(format!("the store's epoch: {e}")))?;
    let (_, events) = sub.replay(Some(&from)).await?;
    Ok(events
        .into_iter()
        .filter(|e| e.seq > after && matches(&e.event, None, Some(id)))
        .collect())
}

/// The next event of run `id` as JSON, or `None` at the end.
async fn next_event(
    handle: &ArenaHandle,
    id: &str,
    stream: &tokio::sync::Mutex<Stream>,
) -> Result<Option<Value>, Error> {
    let mut stream = stream.lock().await;
    if stream.done {
        return Ok(None);
    }
    if stream.sub.is_none() {
        // Subscribe first, then replay everything after seq 0: the bus
        // hands over from the replay to the live stream without a gap.
        let mut sub = handle.arena().bus().subscribe();
        let from_start = SseId::new(handle.engine().store().epoch(), 0)
            .map_err(|e| Error::internal(format!("the store's epoch: {e}")))?;
        let (_, events) = sub.replay(Some(&from_start)).await?;
        stream.replayed = events
            .into_iter()
            .filter(|e| matches(&e.event, None, Some(id)))
            .collect();
        stream.sub = Some(sub);
    }
    loop {
        // The end: the run's final update was delivered and nothing
        // replayed is left; once its driver settled the steps (a cancelled
        // run's come after the run's update), the events stored until then
        // that the live stream has not delivered yet are read and given
        // first.
        if stream.seen_final && stream.replayed.is_empty() {
            let view = handle.engine().run(id).await?;
            if settled(&view) {
                if stream.drained {
                    stream.done = true;
                    return Ok(None);
                }
                stream.drained = true;
                let rest = stored_after(handle, id, stream.last_seq).await?;
                stream.replayed = rest.into();
                continue;
            }
        }
        let next = match stream.replayed.pop_front() {
            Some(event) => Some(BusEvent::Stored(event)),
            None => match stream.sub.as_mut() {
                Some(sub) => sub.next().await,
                None => None,
            },
        };
        let Some(next) = next else {
            stream.done = true;
            return Ok(None);
        };
        let (event, json) = match &next {
            BusEvent::Stored(stored) => {
                // The drain and the live stream may both hold an event.
                if stored.seq <= stream.last_seq {
                    continue;
                }
                (&stored.event, serde_json::to_value(stored))
            }
            BusEvent::Live(event) => (event, serde_json::to_value(event)),
        };
        if !matches(event, None, Some(id)) {
            continue;
        }
        if let BusEvent::Stored(stored) = &next {
            stream.last_seq = stored.seq;
        }
        if let Event::RunUpdated(update) = event {
            if is_final(update.status) {
                stream.seen_final = true;
            }
        }
        return json
            .map(Some)
            .map_err(|e| Error::internal(format!("an event as JSON: {e}")));
    }
}

/// The events of a run as dicts (`{"type": "step_updated", "seq": 3,
/// "epoch": ..., "run_id": ..., "step_id": ..., "status": ..., "attempt":
/// 1}`): an iterator (blocking, the GIL released; Ctrl-C raises
/// `KeyboardInterrupt` and leaves the run running) and an async iterator.
/// See `Run.events`.
#[pyclass(module = "coderig", frozen)]
pub struct RunEvents {
    handle: Arc<ArenaHandle>,
    id: String,
    state: Arc<tokio::sync::Mutex<Stream>>,
}

#[pymethods]
impl RunEvents {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        match call(py, next_event(&self.handle, &self.id, &self.state))? {
            Some(event) => Ok(Some(to_py(py, &event)?.unbind())),
            None => Ok(None),
        }
    }

    fn __aiter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __anext__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let handle = self.handle.clone();
        let id = self.id.clone();
        let state = self.state.clone();
        pyo3_async_runtimes::tokio::future_into_py(py, async move {
            match next_event(&handle, &id, &state).await.map_err(to_py_err)? {
                Some(event) => Python::attach(|py| Ok(to_py(py, &event)?.unbind())),
                None => Err(PyStopAsyncIteration::new_err(())),
            }
        })
    }
}
