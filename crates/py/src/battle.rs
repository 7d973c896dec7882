//! `coderig.Battle` and `coderig.BattleEvents`: a battle of the core's
//! arena runtime ([`coderig::arena::runner::Arena`]) as Python sees it.
//!
//! Thin: a `Rig` opens its store and starts its `Arena` on the first battle
//! call ([`ArenaHandle`]); every method converts its arguments, calls the
//! arena and returns the core's JSON (the `BattleView` every face shows) as
//! dicts. Blocking calls release the GIL ([`block_on`]). Ctrl-C during a
//! blocking call raises `KeyboardInterrupt` and leaves the battle running:
//! a battle is durable work in the store (unlike a turn, nothing of it
//! lives only in this call), so walking away from a `wait` must not cost
//! the contestants' work; `stop()` is the one way to end it.
//!
//! Events: `events()` subscribes to the arena's bus first, then replays
//! every stored event of the battle from the store, so nothing between the
//! replay and the live stream is lost or doubled (the bus's guarantee);
//! live `agent_output` of the battle follows as it comes.

use crate::helpers::to_py_err;
use crate::turn::{block_on, runtime, to_dict};
use coderig::arena::runner::{Arena, BattleView};
use coderig::bus::{matches, BusEvent, EventSubscription};
use coderig::event::{BattleStatus, Event, SseId};
use coderig::flow::engine::Engine;
use coderig::Error;
use pyo3::exceptions::{PyStopAsyncIteration, PyTimeoutError};
use pyo3::prelude::*;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// How long the exit hook and a dropped `Rig` give the arena's running
/// agents to stop (the same grace as turns get).
const GRACE: Duration = coderig::agent::DEFAULT_SHUTDOWN_GRACE;

/// Registers `Battle` and `BattleEvents`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Battle>()?;
    m.add_class::<BattleEvents>()?;
    Ok(())
}

/// The runtime of a `Rig`: a started [`Arena`] and, beside it on the same
/// store, registry and event bus, the flow [`Engine`]; shared by the `Rig`
/// and every `Battle`, `Run` and event stream of it. When the last of them
/// is dropped both are shut down (running agents, commands and code steps
/// stopped, their tasks left in the store for the next process on that
/// store to rescue by lease): a runtime nobody can reach any more would
/// otherwise poll its store until the interpreter exits.
pub struct ArenaHandle {
    arena: Arena,
    engine: Engine,
}

/// Every live arena, for the exit hook (weak: the list must not keep one
/// alive).
static ARENAS: Mutex<Vec<Weak<ArenaHandle>>> = Mutex::new(Vec::new());

impl ArenaHandle {
    /// Wraps a started arena and engine and lists them for the exit hook.
    pub fn new(arena: Arena, engine: Engine) -> Arc<Self> {
        let handle = Arc::new(ArenaHandle { arena, engine });
        let mut live = ARENAS.lock().unwrap_or_else(|p| p.into_inner());
        live.retain(|w| w.strong_count() > 0);
        live.push(Arc::downgrade(&handle));
        handle
    }

    /// The arena.
    pub fn arena(&self) -> &Arena {
        &self.arena
    }

    /// The flow engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Stops the engine's drivers and the arena's workers, waiting for them
    /// until `deadline` at most in all, then the bus they share.
    async fn shutdown(engine: &Engine, arena: &Arena, deadline: Instant) {
        engine
            .shutdown(deadline.saturating_duration_since(Instant::now()))
            .await;
        arena
            .shutdown(deadline.saturating_duration_since(Instant::now()))
            .await;
        arena.bus().shutdown();
    }
}

impl Drop for ArenaHandle {
    fn drop(&mut self) {
        let arena = self.arena.clone();
        let engine = self.engine.clone();
        let deadline = Instant::now() + GRACE;
        runtime().spawn(async move { ArenaHandle::shutdown(&engine, &arena, deadline).await });
    }
}

/// The exit hook's part for arenas and flow engines: every live one is
/// shut down (its agents' and commands' process groups stopped, its code
/// steps cancelled), waiting at most until `deadline` in all. Called with
/// the GIL released.
pub fn shutdown_arenas(deadline: Instant) {
    let arenas: Vec<Arc<ArenaHandle>> = ARENAS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .drain(..)
        .filter_map(|w| w.upgrade())
        .collect();
    if arenas.is_empty() {
        return;
    }
    runtime().block_on(async {
        for handle in &arenas {
            ArenaHandle::shutdown(&handle.engine, &handle.arena, deadline).await;
        }
    });
}

/// Runs one arena call with the GIL released; its error is raised as the
/// coderig exception of its kind.
pub fn call<T, F>(py: Python<'_>, fut: F) -> PyResult<T>
where
    F: std::future::Future<Output = Result<T, Error>> + Send,
    T: Send,
{
    block_on(py, fut, || {})?.map_err(to_py_err)
}

/// A battle of a `Rig` (`Rig.start_battle`, `Rig.battle`). Dropping it
/// changes nothing; `stop()` stops the battle.
#[pyclass(module = "coderig", frozen)]
pub struct Battle {
    handle: Arc<ArenaHandle>,
    id: String,
}

impl Battle {
    /// The battle `id` of the arena.
    pub fn new(handle: Arc<ArenaHandle>, id: String) -> Self {
        Battle { handle, id }
    }
}

fn not_finished(limit: Option<Duration>, view: &BattleView) -> PyErr {
    PyTimeoutError::new_err(format!(
        "battle {} is still {} after {:?} (it goes on; wait again or stop it)",
        view.id,
        view.status,
        limit.unwrap_or_default()
    ))
}

#[pymethods]
impl Battle {
    /// The battle's id.
    #[getter]
    fn id(&self) -> &str {
        &self.id
    }

    /// The battle as it is now: the core's `BattleView` as a dict (status,
    /// contestants, winner, ...), the same JSON as `GET /api/battles/:id`.
    fn info(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let view = call(py, self.handle.arena.battle(&self.id))?;
        to_dict(py, &view)
    }

    /// Waits until the battle is finished (`completed`, `failed` or
    /// `cancelled`) and returns its `BattleView` dict. `timeout` (seconds
    /// or a duration string) bounds the wait: when it passes first,
    /// `TimeoutError` is raised and the battle goes on. Blocking with the
    /// GIL released; Ctrl-C raises `KeyboardInterrupt` and the battle goes
    /// on too (only `stop()` ends it).
    #[pyo3(signature = (timeout=None))]
    fn wait(&self, py: Python<'_>, timeout: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let limit = crate::rig::duration(timeout, "timeout")?;
        let view = call(py, self.handle.arena.wait(&self.id, limit))?;
        if !view.is_finished() {
            return Err(not_finished(limit, &view));
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
            let view = handle.arena.wait(&id, limit).await.map_err(to_py_err)?;
            if !view.is_finished() {
                return Err(not_finished(limit, &view));
            }
            Python::attach(|py| to_dict(py, &view))
        })
    }

    /// The battle's events as dicts: both an iterator (`for`, blocking with
    /// the GIL released) and an async iterator (`async for`). Each call
    /// gives a new stream from the start: every stored event of the battle
    /// (`battle_started`, `contestant_updated`, `battle_updated`, each with
    /// its `seq` and `epoch`), then live ones as they come (`agent_output`
    /// too, which has no `seq` and is never replayed). The stream ends after
    /// the `battle_updated` that finishes the battle (`completed`, `failed`,
    /// `cancelled`) once no event stored before the stream started follows
    /// it and the battle is still finished; events stored after that
    /// update while the stream was live (a stopped battle's contestants
    /// settling) are not waited for. It also ends when the `Rig`'s arena is
    /// shut down.
    fn events(&self) -> BattleEvents {
        BattleEvents {
            handle: self.handle.clone(),
            id: self.id.clone(),
            state: Arc::new(tokio::sync::Mutex::new(Stream::default())),
        }
    }

    /// Stops a running or judging battle (every contestant still working
    /// is cancelled) and returns its `BattleView` dict. A finished battle
    /// raises `ConflictError` (HTTP 409).
    fn stop(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let view = call(py, self.handle.arena.stop(&self.id))?;
        to_dict(py, &view)
    }

    /// Runs the analysis of a completed battle again (it is `judging` until
    /// it ends; `wait()` for it) and returns the `BattleView` dict. A
    /// human's winner is kept unless `force`. A battle not completed raises
    /// `ConflictError`.
    #[pyo3(signature = (force=false))]
    fn analyze(&self, py: Python<'_>, force: bool) -> PyResult<Py<PyAny>> {
        let view = call(py, self.handle.arena.analyze(&self.id, force))?;
        to_dict(py, &view)
    }

    /// The text of the battle's `analysis.md` (evidence table, judge
    /// verdicts, winner and why). `NotFoundIdError` until it is written.
    fn analysis(&self, py: Python<'_>) -> PyResult<String> {
        call(py, self.handle.arena.analysis(&self.id))
    }

    /// A human names the winner (a contestant id) or clears it (`None`) of
    /// a completed battle; returns the `BattleView` dict. A later
    /// `analyze()` keeps it unless forced. An unknown contestant raises
    /// `NotFoundIdError`, a battle not completed `ConflictError`.
    fn set_winner(&self, py: Python<'_>, contestant_id: Option<String>) -> PyResult<Py<PyAny>> {
        let view = call(
            py,
            self.handle
                .arena
                .set_winner(&self.id, contestant_id.as_deref()),
        )?;
        to_dict(py, &view)
    }

    /// Asks the agent `identity` running `model` to cross-examine the
    /// analysis; returns the cross-examination's id (its progress is in
    /// `info()["cross_exams"]`). A battle without an analysis raises
    /// `ConflictError`, an unknown identity `InvalidInputError`.
    fn cross_examine(&self, py: Python<'_>, identity: String, model: String) -> PyResult<String> {
        let examiner = coderig::arena::AgentRef { identity, model };
        call(py, self.handle.arena.cross_examine(&self.id, examiner))
    }

    /// The archived `diff.patch` of a contestant (`""`: it changed
    /// nothing); bytes that are not UTF-8 are replaced by U+FFFD.
    /// `NotFoundIdError` for an unknown contestant or one without a patch
    /// yet.
    fn diff(&self, py: Python<'_>, contestant_id: String) -> PyResult<String> {
        let bytes = call(py, self.handle.arena.diff(&self.id, &contestant_id))?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Applies the winner's patch (or `contestant_id`'s) to the project's
    /// working tree; returns `{"battle_id", "contestant_id", "project",
    /// "patch_bytes"}`. A patch that does not apply cleanly raises
    /// `ConflictError` and changes nothing, as does a battle without a
    /// winner when no contestant is named.
    #[pyo3(signature = (contestant_id=None))]
    fn apply(&self, py: Python<'_>, contestant_id: Option<String>) -> PyResult<Py<PyAny>> {
        let applied = call(
            py,
            self.handle.arena.apply(&self.id, contestant_id.as_deref()),
        )?;
        to_dict(py, &applied)
    }

    fn __repr__(&self) -> String {
        format!("Battle(id={:?})", self.id)
    }
}

/// Where one `events()` stream stands.
#[derive(Default)]
struct Stream {
    /// The bus subscription, made on the first `next`.
    sub: Option<EventSubscription>,
    /// Replayed stored events of this battle not delivered yet.
    replayed: VecDeque<BusEvent>,
    /// The last `battle_updated` delivered finished the battle.
    seen_final: bool,
    /// The stream has ended.
    done: bool,
}

fn is_final(status: BattleStatus) -> bool {
    matches!(
        status,
        BattleStatus::Completed | BattleStatus::Failed | BattleStatus::Cancelled
    )
}

/// The next event of battle `id` as JSON, or `None` at the end.
async fn next_event(
    handle: &ArenaHandle,
    id: &str,
    stream: &tokio::sync::Mutex<Stream>,
) -> Result<Option<serde_json::Value>, Error> {
    let mut stream = stream.lock().await;
    if stream.done {
        return Ok(None);
    }
    if stream.sub.is_none() {
        // Subscribe first, then replay everything after seq 0: the bus
        // hands over from the replay to the live stream without a gap.
        let mut sub = handle.arena.bus().subscribe();
        let from_start = SseId::new(handle.arena.store().epoch(), 0)
            .map_err(|e| Error::internal(format!("the store's epoch: {e}")))?;
        let (_, events) = sub.replay(Some(&from_start)).await?;
        stream.replayed = events
            .into_iter()
            .filter(|e| matches(&e.event, Some(id), None))
            .map(BusEvent::Stored)
            .collect();
        stream.sub = Some(sub);
    }
    loop {
        // The end: a finishing update was delivered, no replayed event
        // follows it (trailing contestant updates of a stopped battle, a
        // human's winner, a re-analysis), and the battle is still finished
        // (a re-analysis started since goes on with the stream).
        if stream.seen_final && stream.replayed.is_empty() {
            if handle.arena.battle(id).await?.is_finished() {
                stream.done = true;
                return Ok(None);
            }
            stream.seen_final = false;
        }
        let next = match stream.replayed.pop_front() {
            Some(event) => Some(event),
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
            BusEvent::Stored(stored) => (&stored.event, serde_json::to_value(stored)),
            BusEvent::Live(event) => (event, serde_json::to_value(event)),
        };
        if !matches(event, Some(id), None) {
            continue;
        }
        if let Event::BattleUpdated(update) = event {
            stream.seen_final = is_final(update.status);
        }
        return json
            .map(Some)
            .map_err(|e| Error::internal(format!("an event as JSON: {e}")));
    }
}

/// The events of a battle as dicts (`{"type": "battle_started", "seq": 1,
/// "epoch": ..., "battle_id": ..., ...}`): an iterator (blocking, the GIL
/// released; Ctrl-C raises `KeyboardInterrupt` and leaves the battle
/// running) and an async iterator. See `Battle.events`.
#[pyclass(module = "coderig", frozen)]
pub struct BattleEvents {
    handle: Arc<ArenaHandle>,
    id: String,
    state: Arc<tokio::sync::Mutex<Stream>>,
}

#[pymethods]
impl BattleEvents {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        match call(py, next_event(&self.handle, &self.id, &self.state))? {
            Some(event) => Ok(Some(crate::helpers::to_py(py, &event)?.unbind())),
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
                Some(event) => Python::attach(|py| Ok(crate::helpers::to_py(py, &event)?.unbind())),
                None => Err(PyStopAsyncIteration::new_err(())),
            }
        })
    }
}
