//! `coderig.Battle` and `coderig.BattleEvents`: a battle of the core's
//! arena runtime ([`coderig::arena::runner::Arena`]) as Python sees it.
//!
//! Thin: a `Battle` holds the core [`Rig`] its `coderig.Rig` opened (a
//! cheap clone) and the battle's id; every method converts its arguments,
//! calls the rig's arena and returns the core's JSON (the `BattleView`
//! every face shows) as dicts. Blocking calls release the GIL
//! ([`block_on`]). Ctrl-C during a blocking call raises `KeyboardInterrupt`
//! and leaves the battle running: a battle is durable work in the store
//! (unlike a turn, nothing of it lives only in this call), so walking away
//! from a `wait` must not cost the contestants' work; `stop()` is the one
//! way to end it.
//!
//! `wait()` is the core's [`Rig::wait_battle`] and `events()` a core
//! [`Watch`](coderig::watch::Watch) ([`crate::watch`]): the core's one end
//! rule, nothing of the face's own.

use crate::blocking::call;
use crate::helpers::to_dict;
use crate::watch::Events;
use coderig::rig::{Rig, Subject};
use pyo3::prelude::*;

/// Registers `Battle` and `BattleEvents`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Battle>()?;
    m.add_class::<BattleEvents>()?;
    Ok(())
}

/// A battle of a `Rig` (`Rig.start_battle`, `Rig.battle`). Dropping it
/// changes nothing; `stop()` stops the battle.
#[pyclass(module = "coderig", frozen)]
pub struct Battle {
    rig: Rig,
    id: String,
}

impl Battle {
    /// The battle `id` of `rig`.
    pub fn new(rig: Rig, id: String) -> Self {
        Battle { rig, id }
    }

    fn subject(&self) -> Subject {
        Subject::Battle(self.id.clone())
    }
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
        let view = call(py, self.rig.arena().battle(&self.id))?;
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
        crate::watch::wait(py, &self.rig, self.subject(), timeout)
    }

    /// `wait()` as an awaitable (on the running asyncio loop).
    #[pyo3(signature = (timeout=None))]
    fn wait_async<'py>(
        &self,
        py: Python<'py>,
        timeout: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        crate::watch::wait_async(py, &self.rig, self.subject(), timeout)
    }

    /// The battle's events as dicts: both an iterator (`for`, blocking with
    /// the GIL released) and an async iterator (`async for`). Each call
    /// gives a new stream from the start, subscribed now: every stored
    /// event of the battle (`battle_started`, `contestant_updated`,
    /// `battle_updated`, each with its `seq` and `epoch`), then live ones as
    /// they come (`agent_output` too, which has no `seq` and is never
    /// replayed). The stream ends right after the `battle_updated` that
    /// finishes the battle (`completed`, `failed`, `cancelled`); every
    /// contestant's final update comes before it. A rig shut down before
    /// the battle ended raises `UnavailableError`.
    fn events(&self) -> BattleEvents {
        BattleEvents(Events::new(&self.rig, self.subject()))
    }

    /// Stops a running or judging battle (every contestant still working
    /// is cancelled) and returns its `BattleView` dict. A finished battle
    /// raises `ConflictError` (HTTP 409).
    fn stop(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let view = call(py, self.rig.arena().stop(&self.id))?;
        to_dict(py, &view)
    }

    /// Runs the analysis of a completed battle again (it is `judging` until
    /// it ends; `wait()` for it) and returns the `BattleView` dict. A
    /// human's winner is kept unless `force`. A battle not completed raises
    /// `ConflictError`.
    #[pyo3(signature = (force=false))]
    fn analyze(&self, py: Python<'_>, force: bool) -> PyResult<Py<PyAny>> {
        let view = call(py, self.rig.arena().analyze(&self.id, force))?;
        to_dict(py, &view)
    }

    /// The text of the battle's `analysis.md` (evidence table, judge
    /// verdicts, winner and why). `NotFoundIdError` until it is written.
    fn analysis(&self, py: Python<'_>) -> PyResult<String> {
        call(py, self.rig.arena().analysis(&self.id))
    }

    /// A human names the winner (a contestant id) or clears it (`None`) of
    /// a completed battle; returns the `BattleView` dict. A later
    /// `analyze()` keeps it unless forced. An unknown contestant raises
    /// `NotFoundIdError`, a battle not completed `ConflictError`.
    fn set_winner(&self, py: Python<'_>, contestant_id: Option<String>) -> PyResult<Py<PyAny>> {
        let view = call(
            py,
            self.rig
                .arena()
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
        call(py, self.rig.arena().cross_examine(&self.id, examiner))
    }

    /// The archived `diff.patch` of a contestant (`""`: it changed
    /// nothing); bytes that are not UTF-8 are replaced by U+FFFD.
    /// `NotFoundIdError` for an unknown contestant or one without a patch
    /// yet.
    fn diff(&self, py: Python<'_>, contestant_id: String) -> PyResult<String> {
        let bytes = call(py, self.rig.arena().diff(&self.id, &contestant_id))?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// A contestant's archived `result.md` (outcome, benchmark, usage,
    /// evidence and its answer). `NotFoundIdError` for an unknown
    /// contestant or one whose turn has not ended.
    fn result(&self, py: Python<'_>, contestant_id: String) -> PyResult<String> {
        call(py, self.rig.arena().result(&self.id, &contestant_id))
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
            self.rig.arena().apply(&self.id, contestant_id.as_deref()),
        )?;
        to_dict(py, &applied)
    }

    fn __repr__(&self) -> String {
        format!("Battle(id={:?})", self.id)
    }
}

crate::watch::events_class!(
    /// The events of a battle as dicts (`{"type": "battle_started", "seq": 1,
    /// "epoch": ..., "battle_id": ..., ...}`): an iterator (blocking, the GIL
    /// released; Ctrl-C raises `KeyboardInterrupt` and leaves the battle
    /// running) and an async iterator. See `Battle.events`.
    BattleEvents
);
