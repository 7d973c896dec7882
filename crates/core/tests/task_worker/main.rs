//! The task worker with both runtimes as its handlers, on a real SQLite file
//! (and a real PostgreSQL when `DATABASE_URL` is set): one
//! `TaskWorker` serves the arena (contestants, judges) and the flow engine
//! (run drivers), built with `Arena::build` / `Engine::build` as the `Rig`
//! builds them.
//!
//! - The driver lane: with `[lanes] cloud = 1` two runs are driven at once
//!   (their drivers are in the `driver` lane, which nothing caps).
//! - A lost lease stops the holder of either handler — its agent or its
//!   step cancelled — and it writes nothing.
//! - Expired leases of a dead worker are rescued and the work of both
//!   handlers finishes.
//! - Shutdown stops both handlers' holders, records the same reason for
//!   each ([`StopReason::Shutdown`]), writes nothing, and leaves the work
//!   to the next worker, which finishes it.
//!
//! The contestants are an in-process agent double ([`Probe`]) that counts
//! its turns and its cancellations; the steps are code steps that do the
//! same.

#![cfg(unix)]

#[path = "../common/mod.rs"]
mod common;
#[path = "../procs/mod.rs"]
mod procs;

use coderig::agent::config::AgentKind;
use coderig::agent::{
    Agent, AgentEntry, AgentError, AgentErrorKind, AgentEvent, Registry, Turn, TurnOutcome,
};
use coderig::arena::runner::{Arena, ArenaConfig, BattleView};
use coderig::arena::{BattleSpec, Lane};
use coderig::bus::EventBus;
use coderig::event::{BattleStatus, RunStatus};
use coderig::flow::engine::{CodeStep, Engine, EngineConfig, NewRun, RunView};
use coderig::flow::runspec::FlowSpec;
use coderig::store::{ClaimRequest, OwnerKind, Store};
use coderig::task::TaskState;
use coderig::worker::{Held, StopReason, TaskHandler, TaskSet, TaskWorker, WorkerConfig};
use coderig::Error;
use common::{Harness, Raw};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

common::on_both_stores!(
    "task_worker";
    with_cloud_capped_at_one_two_runs_are_driven_at_once,
    a_lost_lease_stops_the_holder_of_either_handler_and_it_writes_nothing,
    a_dead_workers_leases_are_rescued_and_both_handlers_finish_the_work,
    shutdown_stops_both_handlers_and_the_next_worker_finishes_their_work,
);

/// An agent double: `hang` waits for its cancellation; `hang-once` does so
/// on its first turn only; anything else answers at once.
#[derive(Default)]
struct Probe {
    started: AtomicU32,
    cancelled: AtomicU32,
    hung_once: AtomicU32,
}

#[async_trait::async_trait]
impl Agent for Probe {
    async fn run(
        &self,
        turn: Turn,
        _events: mpsc::Sender<AgentEvent>,
        cancel: CancellationToken,
    ) -> Result<TurnOutcome, AgentError> {
        self.started.fetch_add(1, Ordering::SeqCst);
        let model = turn.model.clone().unwrap_or_default();
        let hang = model == "hang"
            || (model == "hang-once" && self.hung_once.fetch_add(1, Ordering::SeqCst) == 0);
        if hang {
            cancel.cancelled().await;
            self.cancelled.fetch_add(1, Ordering::SeqCst);
            return Err(AgentError::new(AgentErrorKind::Cancelled, "cancelled"));
        }
        Ok(TurnOutcome {
            final_text: format!("the answer of {model}"),
            ..TurnOutcome::default()
        })
    }
}

/// A code step double: `hang` waits for its cancellation (the engine may
/// also drop the call) every time, `hang-once` the first time; then it
/// returns.
struct Wait {
    mode: &'static str,
    calls: AtomicU32,
    cancelled: AtomicU32,
}

impl Wait {
    fn new(mode: &'static str) -> Arc<Wait> {
        Arc::new(Wait {
            mode,
            calls: AtomicU32::new(0),
            cancelled: AtomicU32::new(0),
        })
    }
}

/// Counts one stop when dropped.
struct Stopped<'a>(&'a AtomicU32);

impl Drop for Stopped<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[async_trait::async_trait]
impl CodeStep for Wait {
    async fn call(&self, _ctx: Value, cancel: CancellationToken) -> Result<Value, Error> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        if self.mode == "hang" || (self.mode == "hang-once" && n == 0) {
            // Counted when the call ends, or when the engine drops it.
            let _stopped = Stopped(&self.cancelled);
            cancel.cancelled().await;
            return Err(Error::unavailable("cancelled"));
        }
        Ok(json!({"call": n + 1}))
    }
}

struct World {
    dir: tempfile::TempDir,
    store: Arc<dyn Store>,
    bus: Arc<EventBus>,
    arena: Arena,
    engine: Engine,
    worker: TaskWorker,
}

fn registry(probe: &Arc<Probe>, cloud: Option<u32>) -> Registry {
    let mut registry = Registry::new();
    registry.insert(
        "probe",
        AgentEntry::new(AgentKind::Scripted, probe.clone()).lane(Lane::Cloud),
    );
    if let Some(cloud) = cloud {
        registry.set_lane_capacity(Lane::Cloud, cloud);
    }
    registry
}

/// Arena and engine built without a worker of their own, one worker
/// serving both (the engine first: the shutdown's order).
async fn world(
    store: Arc<dyn Store>,
    dir: tempfile::TempDir,
    registry: Registry,
    lease_ttl: Duration,
) -> World {
    let bus = EventBus::start(store.clone());
    let data = dir.path().join("data");
    let mut ec = EngineConfig::new(&data);
    ec.run_worker = false;
    let engine = Engine::build(store.clone(), registry.clone(), bus.clone(), ec)
        .await
        .expect("engine");
    let mut ac = ArenaConfig::new(&data);
    ac.reconcile_every = Duration::from_millis(300);
    let arena = Arena::build(store.clone(), registry, bus.clone(), ac)
        .await
        .expect("arena");
    let worker = start_worker(&store, &bus, &arena, &engine, lease_ttl);
    World {
        dir,
        store,
        bus,
        arena,
        engine,
        worker,
    }
}

fn start_worker(
    store: &Arc<dyn Store>,
    bus: &Arc<EventBus>,
    arena: &Arena,
    engine: &Engine,
    lease_ttl: Duration,
) -> TaskWorker {
    let mut config = WorkerConfig::new();
    config.lease_ttl = lease_ttl;
    config.poll = Duration::from_millis(50);
    TaskWorker::start(
        store.clone(),
        bus.clone(),
        config,
        vec![engine.handler(), arena.handler()],
    )
}

fn qa(models: &[&str]) -> BattleSpec {
    let contestants: Vec<Value> = models
        .iter()
        .map(|m| json!({"identity": "probe", "model": m}))
        .collect();
    BattleSpec::from_json(&json!({
        "battle_type": "qa",
        "prompt": "Why is the sky blue?",
        "contestants": contestants,
        "judge": {"identity": "probe", "model": "judge"},
    }))
    .expect("spec")
}

/// A run of one code step `wait` running `step`.
fn one_step(step: Arc<dyn CodeStep>) -> NewRun {
    let spec = FlowSpec::from_json(&json!({"steps": [{"id": "wait", "kind": "code"}]})).unwrap();
    NewRun::spec(spec, json!({})).code("wait", step)
}

async fn until(what: &str, mut ok: impl FnMut() -> bool) {
    for _ in 0..400 {
        if ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("timed out waiting until {what}");
}

async fn run_done(w: &World, id: &str) -> RunView {
    let view = w
        .engine
        .wait(id, Some(Duration::from_secs(60)))
        .await
        .unwrap();
    assert_eq!(view.status, RunStatus::Completed, "{view:#?}");
    view
}

async fn battle_done(w: &World, id: &str) -> BattleView {
    let view = w
        .arena
        .wait(id, Some(Duration::from_secs(60)))
        .await
        .unwrap();
    assert_eq!(view.status, BattleStatus::Completed, "{view:#?}");
    view
}

/// Stored events of the battle or run `work`.
async fn event_count(store: &Arc<dyn Store>, work: &str) -> usize {
    store.work_events(work, 0, 100_000).await.unwrap().len()
}

/// Every task of `work` that is not finished, as (id, state, attempt).
async fn live_tasks(store: &Arc<dyn Store>, work: &str) -> Vec<(String, TaskState, u32)> {
    let snapshot = store.work(work).await.unwrap();
    snapshot
        .tasks
        .iter()
        .filter(|t| !t.is_finished())
        .map(|t| (t.id.clone(), t.state, t.attempt))
        .collect()
}

// A run's driver is in the `driver` lane, which no `[lanes]` caps: with the
// cloud lane capped at one, two runs whose steps can only finish together
// are driven at once — by the same worker that serves the arena.
async fn with_cloud_capped_at_one_two_runs_are_driven_at_once(h: &Harness) {
    let probe = Arc::new(Probe::default());
    let w = world(
        h.store.clone(),
        tempfile::tempdir().unwrap(),
        registry(&probe, Some(1)),
        Duration::from_secs(30),
    )
    .await;
    let lanes: BTreeMap<Lane, Option<u32>> = w
        .store
        .lanes()
        .await
        .unwrap()
        .iter()
        .map(|l| (l.lane, l.capacity))
        .collect();
    assert_eq!(lanes[&Lane::Cloud], Some(1), "{lanes:?}");
    assert_eq!(lanes[&Lane::Driver], None, "{lanes:?}");

    // Each step waits until both steps have started: one driver at a time
    // would leave the first waiting for ever (here: failing after 20 s).
    let arrived = Arc::new(AtomicU32::new(0));
    let meet = {
        let arrived = arrived.clone();
        coderig::flow::engine::code_fn(move |_| {
            let arrived = arrived.clone();
            async move {
                arrived.fetch_add(1, Ordering::SeqCst);
                for _ in 0..800 {
                    if arrived.load(Ordering::SeqCst) >= 2 {
                        return Ok(json!("met"));
                    }
                    tokio::time::sleep(Duration::from_millis(25)).await;
                }
                Err(Error::unavailable("the other run was not driven meanwhile"))
            }
        })
    };
    let spec = FlowSpec::from_json(&json!({"steps": [{"id": "meet", "kind": "code"}]})).unwrap();
    let mut ids = Vec::new();
    for _ in 0..2 {
        let run = NewRun::spec(spec.clone(), json!({})).code("meet", meet.clone());
        ids.push(w.engine.start_run(run).await.unwrap());
    }
    for id in &ids {
        let view = run_done(&w, id).await;
        assert_eq!(view.step("meet").unwrap().output, Some(json!("met")));
        let driver = w.store.task(&format!("{id}-driver")).await.unwrap();
        assert_eq!(driver.lane, Lane::Driver);
    }
    w.worker.shutdown(Duration::from_secs(5)).await;
    w.bus.shutdown();
    drop(w.dir);
}

/// Takes the leases of `tasks` away from their holder as another worker
/// would: a new token and worker, a lease that lasts a minute, the task
/// still `running`.
async fn steal(raw: &Raw, tasks: &[String]) {
    for task in tasks {
        match raw {
            Raw::Sqlite(pool) => {
                sqlx::query(
                    "UPDATE tasks SET lease_token = 'stolen', worker = 'thief', \
                     lease_expires_at = CAST(unixepoch('subsec') * 1000 AS INTEGER) + 60000 \
                     WHERE id = ?1 AND state = 'running'",
                )
                .bind(task)
                .execute(pool)
                .await
                .unwrap();
            }
            Raw::Postgres(pool) => {
                sqlx::query(
                    "UPDATE tasks SET lease_token = 'stolen', worker = 'thief', \
                     lease_expires_at = clock_timestamp() + interval '60 seconds' \
                     WHERE id = $1 AND state = 'running'",
                )
                .bind(task)
                .execute(pool)
                .await
                .unwrap();
            }
        }
    }
}

// Both handlers' holders lose their leases (another worker holds them
// now): within a few heartbeats each is stopped — the contestant's agent
// and the run's step cancelled — and neither writes anything more.
async fn a_lost_lease_stops_the_holder_of_either_handler_and_it_writes_nothing(h: &Harness) {
    let probe = Arc::new(Probe::default());
    let w = world(
        h.store.clone(),
        tempfile::tempdir().unwrap(),
        registry(&probe, None),
        Duration::from_millis(900),
    )
    .await;
    let step = Wait::new("hang");
    let run = w.engine.start_run(one_step(step.clone())).await.unwrap();
    let battle = w.arena.start_battle(qa(&["hang", "b"])).await.unwrap().id;
    until("the step and a contestant run", || {
        step.calls.load(Ordering::SeqCst) == 1 && probe.started.load(Ordering::SeqCst) >= 1
    })
    .await;
    until("both are held here", || {
        w.engine.driving() == [run.clone()] && w.arena.running_tasks() >= 1
    })
    .await;
    // Let the holders write what they write when they start.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut taken: Vec<String> = live_tasks(&w.store, &battle)
        .await
        .into_iter()
        .filter(|(_, state, _)| *state == TaskState::Running)
        .map(|(id, _, _)| id)
        .collect();
    taken.push(format!("{run}-driver"));
    let events_before = (
        event_count(&w.store, &run).await,
        event_count(&w.store, &battle).await,
    );
    let raw = h.raw().await;
    steal(&raw, &taken).await;

    let stopped = || {
        (
            step.cancelled.load(Ordering::SeqCst),
            probe.cancelled.load(Ordering::SeqCst),
        )
    };
    for _ in 0..400 {
        if stopped() == (1, 1) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(
        stopped(),
        (1, 1),
        "both holders stopped (step, agent); driving {:?}, arena tasks {}, taken {:?}: {:?}",
        w.engine.driving(),
        w.arena.running_tasks(),
        taken,
        {
            let mut t = Vec::new();
            for id in &taken {
                t.push(w.store.task(id).await.unwrap());
            }
            t
        }
    );
    until("the worker let both go", || {
        w.engine.driving().is_empty() && w.arena.running_tasks() == 0
    })
    .await;
    // Nothing written by either holder after the loss (nor by the ticks:
    // the tasks are still running, under the thief's lease).
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(
        (
            event_count(&w.store, &run).await,
            event_count(&w.store, &battle).await
        ),
        events_before,
        "no event after the lease was lost"
    );
    for task in &taken {
        let t = w.store.task(task).await.unwrap();
        assert_eq!(
            (t.state, t.worker.as_deref()),
            (TaskState::Running, Some("thief")),
            "{t:?}"
        );
    }
    let view = w.engine.run(&run).await.unwrap();
    assert_eq!(view.status, RunStatus::Running, "{view:#?}");
    assert_eq!(
        step.calls.load(Ordering::SeqCst),
        1,
        "no second attempt here"
    );
    w.worker.shutdown(Duration::from_secs(5)).await;
    w.bus.shutdown();
}

// A worker claims a contestant task and a run driver, then dies (it never
// heartbeats). The live worker rescues both expired leases and its two
// handlers finish the battle and the run, each task on its second attempt.
async fn a_dead_workers_leases_are_rescued_and_both_handlers_finish_the_work(h: &Harness) {
    let probe = Arc::new(Probe::default());
    let dir = tempfile::tempdir().unwrap();
    let bus = EventBus::start(h.store.clone());
    let data = dir.path().join("data");
    let registry = registry(&probe, None);
    let mut ec = EngineConfig::new(&data);
    ec.run_worker = false;
    let engine = Engine::build(h.store.clone(), registry.clone(), bus.clone(), ec)
        .await
        .unwrap();
    let mut ac = ArenaConfig::new(&data);
    ac.reconcile_every = Duration::from_millis(300);
    let arena = Arena::build(h.store.clone(), registry, bus.clone(), ac)
        .await
        .unwrap();
    let step = Wait::new("return");
    let run = engine.start_run(one_step(step.clone())).await.unwrap();
    let battle = arena.start_battle(qa(&["a", "b"])).await.unwrap().id;
    let dead = h
        .store
        .claim(
            &ClaimRequest::new("dead")
                .limit(10)
                .lease_ttl(Duration::from_millis(300))
                .owner_kinds(&[OwnerKind::Step, OwnerKind::Contestant]),
        )
        .await
        .unwrap();
    let held: Vec<(OwnerKind, String)> = dead
        .iter()
        .map(|c| (c.task.owner.kind, c.task.id.clone()))
        .collect();
    assert!(held.iter().any(|(k, _)| *k == OwnerKind::Step), "{held:?}");
    assert!(
        held.iter().any(|(k, _)| *k == OwnerKind::Contestant),
        "{held:?}"
    );
    tokio::time::sleep(Duration::from_millis(400)).await;

    let worker = start_worker(&h.store, &bus, &arena, &engine, Duration::from_secs(30));
    let w = World {
        dir,
        store: h.store.clone(),
        bus,
        arena,
        engine,
        worker,
    };
    run_done(&w, &run).await;
    battle_done(&w, &battle).await;
    for (_, id) in &held {
        let t = w.store.task(id).await.unwrap();
        assert_eq!(t.state, TaskState::Completed, "{t:?}");
        assert_eq!((t.rescues, t.attempt), (1, 2), "rescued once: {t:?}");
        assert_ne!(t.worker.as_deref(), Some("dead"), "{t:?}");
    }
    assert_eq!(
        step.calls.load(Ordering::SeqCst),
        1,
        "the dead driver ran nothing"
    );
    w.worker.shutdown(Duration::from_secs(5)).await;
    w.bus.shutdown();
}

// Shutdown stops the holders of both handlers (the step's process group
// killed, the agent's turn cancelled), writes nothing, and leaves the tasks
// running under their leases; the next process's worker rescues them when
// they expire and finishes the run and the battle.
async fn shutdown_stops_both_handlers_and_the_next_worker_finishes_their_work(h: &Harness) {
    let probe = Arc::new(Probe::default());
    let registry = registry(&probe, None);
    let w = world(
        h.store.clone(),
        tempfile::tempdir().unwrap(),
        registry.clone(),
        Duration::from_millis(900),
    )
    .await;
    let files = std::fs::canonicalize(w.dir.path()).unwrap().join("files");
    std::fs::create_dir_all(&files).unwrap();
    let marker = files.join("shutdown-marker").display().to_string();
    // The first attempt hangs (leaving `second` behind), the next one
    // answers.
    let spec = FlowSpec::from_json(&json!({"steps": [{
        "id": "wait", "kind": "command", "cwd": files.display().to_string(),
        "shell": format!(
            "if [ -e second ]; then echo second; exit 0; fi\n: > second\n\
             python3 -c 'import sys, time; time.sleep(120)' '{marker}'\n"
        ),
    }]}))
    .unwrap();
    let run = w
        .engine
        .start_run(NewRun::spec(spec, json!({})))
        .await
        .unwrap();
    let battle = w
        .arena
        .start_battle(qa(&["hang-once", "b"]))
        .await
        .unwrap()
        .id;
    until("the step and the hanging contestant run", || {
        !procs::processes_with(&marker).is_empty() && probe.hung_once.load(Ordering::SeqCst) == 1
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let events_before = (
        event_count(&w.store, &run).await,
        event_count(&w.store, &battle).await,
    );
    w.worker.shutdown(Duration::from_secs(10)).await;
    assert!(w.worker.is_shut_down());
    assert_eq!(
        procs::wait_none_with(&marker, Duration::from_secs(10)),
        Vec::<u32>::new(),
        "the step's process stopped"
    );
    assert_eq!(
        probe.cancelled.load(Ordering::SeqCst),
        1,
        "the agent stopped"
    );
    assert!(w.engine.driving().is_empty());
    assert_eq!(w.arena.running_tasks(), 0);
    assert_eq!(
        (
            event_count(&w.store, &run).await,
            event_count(&w.store, &battle).await
        ),
        events_before,
        "a shutdown writes nothing"
    );
    // The driver's and the hanging contestant's leases are left to expire.
    let mut left: Vec<String> = live_tasks(&w.store, &run)
        .await
        .into_iter()
        .chain(live_tasks(&w.store, &battle).await)
        .filter(|(_, s, _)| *s == TaskState::Running)
        .map(|(id, _, _)| id)
        .collect();
    left.sort();
    assert!(
        left.len() == 2 && left.contains(&format!("{run}-driver")),
        "the leases are left to expire: {left:?}"
    );

    // The next process on the same store: a new engine, arena and worker.
    let data = w.dir.path().join("data");
    let mut ec = EngineConfig::new(&data);
    ec.run_worker = false;
    let engine = Engine::build(h.store.clone(), registry.clone(), w.bus.clone(), ec)
        .await
        .unwrap();
    let mut ac = ArenaConfig::new(&data);
    ac.reconcile_every = Duration::from_millis(300);
    let arena = Arena::build(h.store.clone(), registry, w.bus.clone(), ac)
        .await
        .unwrap();
    let next = start_worker(&h.store, &w.bus, &arena, &engine, Duration::from_secs(30));
    let view = engine
        .wait(&run, Some(Duration::from_secs(60)))
        .await
        .unwrap();
    assert_eq!(view.status, RunStatus::Completed, "{view:#?}");
    let output = view.step("wait").unwrap().output.clone();
    assert_eq!(
        output.as_ref().and_then(Value::as_str).map(str::trim),
        Some("second"),
        "the next attempt ran: {output:?}"
    );
    let view = arena
        .wait(&battle, Some(Duration::from_secs(60)))
        .await
        .unwrap();
    assert_eq!(view.status, BattleStatus::Completed, "{view:#?}");
    for id in left {
        let t = w.store.task(&id).await.unwrap();
        assert_eq!((t.state, t.rescues), (TaskState::Completed, 1), "{t:?}");
    }
    next.shutdown(Duration::from_secs(5)).await;
    w.bus.shutdown();
}

// The rest of this test binary, by subject.
mod holders;
