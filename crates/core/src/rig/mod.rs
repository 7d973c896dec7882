//! [`Rig`]: the runtime's one front door.
//!
//! A rig opens the store, the event bus and the agent registry **once**,
//! and starts the arena (battles) and the flow engine (runs) on that same
//! store and bus. The server's state, every CLI subcommand and Python's and
//! Node's `Rig` hold one and nothing else of the runtime's wiring, so every
//! face runs the same runtime the same way:
//!
//! ```no_run
//! # async fn demo() -> Result<(), coderig::Error> {
//! use coderig::rig::{Rig, RigConfig, Subject};
//! let rig = Rig::open(RigConfig::new(".coderig")).await?;
//! let runs = rig.engine().list_runs(&Default::default()).await?;
//! # let id = String::new();
//! let mut watch = rig.watch(Subject::Run(id));
//! while let Some(event) = watch.next().await? { /* … */ }
//! rig.shutdown(std::time::Duration::from_secs(5)).await;
//! # Ok(()) }
//! ```
//!
//! **Project roots**, one policy for every face ([`resolve_project_roots`]):
//! battles' projects, command steps' `cwd` and agent steps' `workdir` must
//! lie under one of the roots, each canonicalized when the rig opens (a
//! root that does not exist or is not a directory is `invalid_input`
//! naming it). **Empty means the current directory** at the moment the rig
//! opens — never "anywhere": a rig that runs a model's code confines it by
//! default. Give `/` to allow every path on purpose.
//!
//! **One task worker** ([`crate::worker::TaskWorker`]) serves both
//! runtimes: the arena and the engine are built without workers of their
//! own, and the rig's worker claims battles' tasks and runs' drivers (the
//! latter in the `driver` lane, which `[lanes]` never caps), heartbeats,
//! rescues expired leases and reconciles — one loop, one set of lease
//! rules.
//!
//! **Shutdown** ([`Rig::shutdown`]) is ordered: the worker stops claiming,
//! then the flow engine's drivers stop (running steps cancelled, runs left
//! to be resumed by lease), then the arena's tasks (left to lease rescue),
//! then every agent turn the registry started (their process groups
//! stopped), then the bus.
//!
//! Following a battle or a run is [`Watch`]'s job (one end rule for every
//! face; see [`crate::watch`]).

use crate::agent::Registry;
use crate::arena::runner::{Arena, ArenaConfig, BattleView};
use crate::arena::Lane;
use crate::bus::EventBus;
use crate::error::Error;
use crate::event::RunStatus;
use crate::flow::engine::{Engine, EngineConfig, RunView};
use crate::flow::runspec::FlowSpec;
use crate::sandbox::SandboxMode;
use crate::store::Store;
pub use crate::watch::{Subject, Watch};
use crate::worker::{TaskWorker, WorkerConfig};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

mod options;
pub use options::RigOptions;
mod retention;
pub use retention::COMPACT_EVERY;
use std::time::Duration;

/// The data directory of a rig given none: `./.coderig` (the CLI's
/// `--data-dir` default).
pub const DEFAULT_DATA_DIR: &str = ".coderig";

/// How a [`Rig`] is opened. Build it with [`RigConfig::new`] and set what
/// differs from the defaults.
#[derive(Debug, Clone)]
pub struct RigConfig {
    /// Where the embedded store (`<data_dir>/coderig.db`), worktrees, run
    /// artifacts and battle results live; created when missing; made
    /// absolute against the current directory when the rig opens.
    pub data_dir: PathBuf,
    /// The store: `postgres://…` / `postgresql://…` to share one PostgreSQL
    /// between servers, `sqlite:///path.db`, `sqlite:path` or a plain path
    /// for an SQLite file; `None` (or empty): SQLite in `data_dir`.
    pub db: Option<String>,
    /// The project roots; empty means the current directory (see the
    /// [module docs](self)).
    pub project_roots: Vec<PathBuf>,
    /// The agents (from a `coderig.toml` or built in code:
    /// [`Registry::open`]).
    pub agents: Registry,
    /// The sandbox of every process the rig starts, when it overrides the
    /// config's `[sandbox] mode`.
    pub sandbox: Option<SandboxMode>,
    /// Lane capacities that override the config's `[lanes]`.
    pub lanes: BTreeMap<Lane, u32>,
    /// How often the rig's task worker looks for work when nothing wakes
    /// it (the worker's default, 500 ms, when `None`).
    pub poll: Option<Duration>,
    /// The lease of every battle task and run driver the workers claim
    /// (the store's default when `None`; a short one rescues a killed
    /// process's work sooner).
    pub lease_ttl: Option<Duration>,
    /// Flows registered by name (`coderig serve --flows DIR`).
    pub flows: Vec<FlowSpec>,
    /// Run the workers that claim and run battles and runs. False: the rig
    /// only creates, reads and changes them, and another process (a server
    /// on the same store) runs them — `coderig battle list`, say.
    pub run_workers: bool,
    /// How long the store keeps finished battles and runs and old events,
    /// over the config's `[store] retain` (`None`: the config's, else
    /// forever). A rig that runs workers compacts at open and every
    /// [`COMPACT_EVERY`] ([`Store::compact`]; under a minute is
    /// `invalid_input` at open).
    pub retain: Option<Duration>,
    /// Claim only the tasks of the battles and runs started through this
    /// rig, not every task of the store: a process that runs its own work
    /// beside a server on the same store (the CLI's `battle run` and
    /// `run`) neither takes the server's work nor runs it with its own
    /// agents. False (the default): any task (a server, a worker pool).
    pub only_own_work: bool,
}

impl RigConfig {
    /// The defaults, with the store in `data_dir`: no agents, the current
    /// directory as the project root, the workers on.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        RigConfig {
            data_dir: data_dir.into(),
            db: None,
            project_roots: Vec::new(),
            agents: Registry::new(),
            sandbox: None,
            lanes: BTreeMap::new(),
            poll: None,
            lease_ttl: None,
            flows: Vec::new(),
            run_workers: true,
            retain: None,
            only_own_work: false,
        }
    }
}

impl Default for RigConfig {
    fn default() -> Self {
        RigConfig::new(DEFAULT_DATA_DIR)
    }
}

/// The project-roots policy of every face: each root canonicalized; none
/// given means the current directory. Errors: `invalid_input` with `path`
/// `project_roots[i]` for a root that cannot be resolved or is not a
/// directory, `io` when the current directory cannot be read.
pub fn resolve_project_roots(roots: &[PathBuf]) -> Result<Vec<PathBuf>, Error> {
    if roots.is_empty() {
        let cwd = std::env::current_dir().map_err(|e| {
            Error::io(format!(
                "cannot read the current directory (the default project root): {e}"
            ))
        })?;
        return resolve_project_roots(&[cwd]);
    }
    roots
        .iter()
        .enumerate()
        .map(|(i, root)| {
            let at = format!("project_roots[{i}]");
            let canonical = std::fs::canonicalize(root).map_err(|e| {
                Error::invalid_at(
                    &at,
                    format!(
                        "the project root {} cannot be resolved: {e}",
                        root.display()
                    ),
                )
            })?;
            if !canonical.is_dir() {
                return Err(Error::invalid_at(
                    &at,
                    format!("the project root {} is not a directory", root.display()),
                ));
            }
            Ok(canonical)
        })
        .collect()
}

/// Where a store is, for a start-up line: a URL with its password replaced
/// by `***`, or the SQLite file.
pub fn store_location(db: Option<&str>, data_dir: &Path) -> String {
    match db.filter(|db| !db.is_empty()) {
        Some(url) if url.contains("://") => redact(url),
        Some(path) => path.to_string(),
        None => data_dir.join("coderig.db").display().to_string(),
    }
}

/// A store's refusal to open, naming where the store is (its password
/// hidden): `cannot open the store at LOCATION: …`, kind and details kept.
fn at_store(e: Error, location: &str) -> Error {
    let mut named = Error::new(
        e.kind(),
        format!("cannot open the store at {location}: {}", e.message()),
    );
    for (key, value) in e.details() {
        named = named.with_detail(key, value.clone());
    }
    named
}

/// `url` with the password of its user info (`user:secret@`) replaced by `***`.
fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((user_info, host)) => {
            let user = user_info.split(':').next().unwrap_or_default();
            let hidden = if user_info.contains(':') { ":***" } else { "" };
            format!("{scheme}://{user}{hidden}@{host}{tail}")
        }
        None => url.to_string(),
    }
}

struct Inner {
    store: Arc<dyn Store>,
    bus: Arc<EventBus>,
    registry: Registry,
    data_dir: PathBuf,
    project_roots: Vec<PathBuf>,
    location: String,
    arena: Arena,
    engine: Engine,
    /// The one worker of both (`None` without workers).
    worker: Option<TaskWorker>,
    /// The compaction loop (`None` without workers or `retain`).
    compactor: Mutex<Option<tokio::task::JoinHandle<()>>>,
    stop: CancellationToken,
    shut_down: AtomicBool,
}

/// The runtime: store, bus, agents, arena and flow engine, opened once
/// (see the [module docs](self)). Cheap to clone; every clone is the same
/// rig.
#[derive(Clone)]
pub struct Rig {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Rig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rig")
            .field("store", &self.inner.location)
            .field("data_dir", &self.inner.data_dir)
            .field("project_roots", &self.inner.project_roots)
            .finish_non_exhaustive()
    }
}

impl Rig {
    /// Opens the rig on the current tokio runtime: resolves the project
    /// roots, creates the data directory, opens (and migrates) the store,
    /// starts its event bus, then the arena and the flow engine on them.
    /// Nothing is left running when it fails.
    ///
    /// Errors: `invalid_input` for a bad project root, a store URL of
    /// another database or a registered flow that does not compile; `io`
    /// when the data directory or the store cannot be opened. A store's
    /// refusal names where it is (`cannot open the store at LOCATION: …`,
    /// a URL's password hidden).
    pub async fn open(config: RigConfig) -> Result<Rig, Error> {
        let RigConfig {
            data_dir,
            db,
            project_roots,
            mut agents,
            sandbox,
            lanes,
            poll,
            lease_ttl,
            flows,
            run_workers,
            retain,
            only_own_work,
        } = config;
        let data_dir = std::path::absolute(&data_dir).unwrap_or(data_dir);
        let project_roots = resolve_project_roots(&project_roots)?;
        if let Some(mode) = sandbox {
            agents.set_sandbox_mode(mode);
        }
        for (lane, capacity) in lanes {
            agents.set_lane_capacity(lane, capacity);
        }
        if retain.is_some() {
            agents.set_retain(retain);
        }
        if let Some(retain) = agents.retain() {
            crate::store::check_retain(retain)?;
        }
        std::fs::create_dir_all(&data_dir)
            .map_err(|e| Error::io(format!("cannot create {}: {e}", data_dir.display())))?;
        let db = db.filter(|db| !db.is_empty());
        let location = store_location(db.as_deref(), &data_dir);
        let store = crate::store::open(db.as_deref(), &data_dir)
            .await
            .map_err(|e| at_store(e, &location))?;
        let bus = EventBus::start(store.clone());

        let mut engine_config = EngineConfig::new(&data_dir);
        engine_config.project_roots = project_roots.clone();
        engine_config.run_worker = run_workers;
        engine_config.flows = flows;
        let mut arena_config = ArenaConfig::new(&data_dir);
        arena_config.project_roots = project_roots.clone();
        arena_config.run_worker = run_workers;
        if let Some(poll) = poll {
            engine_config.poll = poll;
            arena_config.poll = poll;
        }
        let scope = only_own_work.then(crate::worker::WorkScope::new);
        engine_config.scope = scope.clone();
        arena_config.scope = scope.clone();
        if let Some(lease_ttl) = lease_ttl {
            engine_config.lease_ttl = lease_ttl;
            arena_config.lease_ttl = lease_ttl;
        }
        // The engine first: it compiles the registered flows, the likeliest
        // refusal, before the arena sweeps worktrees and sets lanes. Neither
        // starts a worker of its own: one worker serves both (below).
        let engine =
            match Engine::build(store.clone(), agents.clone(), bus.clone(), engine_config).await {
                Ok(engine) => engine,
                Err(e) => {
                    bus.shutdown();
                    return Err(e);
                }
            };
        let arena =
            match Arena::build(store.clone(), agents.clone(), bus.clone(), arena_config).await {
                Ok(arena) => arena,
                Err(e) => {
                    bus.shutdown();
                    return Err(e);
                }
            };
        // One task worker for both runtimes: one claim loop, one rescue
        // pass, one heartbeat, and its shutdown stops the engine's drivers
        // first, then the arena's tasks.
        let worker = run_workers.then(|| {
            let mut config = WorkerConfig::new();
            if let Some(poll) = poll {
                config.poll = poll;
            }
            if let Some(lease_ttl) = lease_ttl {
                config.lease_ttl = lease_ttl;
            }
            config.scope = scope;
            TaskWorker::start(
                store.clone(),
                bus.clone(),
                config,
                vec![engine.handler(), arena.handler()],
            )
        });
        let stop = CancellationToken::new();
        let compactor = agents
            .retain()
            .filter(|_| run_workers)
            .map(|retain| retention::start(store.clone(), retain, stop.clone()));
        Ok(Rig {
            inner: Arc::new(Inner {
                store,
                bus,
                registry: agents,
                data_dir,
                project_roots,
                location,
                arena,
                engine,
                worker,
                compactor: Mutex::new(compactor),
                stop,
                shut_down: AtomicBool::new(false),
            }),
        })
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.inner.store
    }

    /// The event bus tailing the store (every face's live events).
    pub fn bus(&self) -> &Arc<EventBus> {
        &self.inner.bus
    }

    /// The agents.
    pub fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// The arena: start, read, stop and judge battles.
    pub fn arena(&self) -> &Arena {
        &self.inner.arena
    }

    /// The flow engine: start, read, cancel and approve runs.
    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    /// The absolute data directory.
    pub fn data_dir(&self) -> &Path {
        &self.inner.data_dir
    }

    /// The canonical project roots (never empty).
    pub fn project_roots(&self) -> &[PathBuf] {
        &self.inner.project_roots
    }

    /// Where the store is, its password hidden (for a start-up line).
    pub fn store_location(&self) -> &str {
        &self.inner.location
    }

    /// A [`Watch`] of a battle or run, subscribed now.
    pub fn watch(&self, subject: Subject) -> Watch {
        Watch::new(&self.inner.bus, subject)
    }

    /// Waits until battle `id` is finished (the watch's end rule) and
    /// returns it, as [`Arena::wait`]. When `timeout` passes first: the
    /// error every face raises for it ([`wait_timed_out`]); the battle goes
    /// on. `not_found_id` for an unknown battle.
    pub async fn wait_battle(
        &self,
        id: &str,
        timeout: Option<Duration>,
    ) -> Result<BattleView, Error> {
        let view = self.inner.arena.wait(id, timeout).await?;
        if view.is_finished() {
            return Ok(view);
        }
        Err(wait_timed_out(
            &Subject::Battle(view.id),
            view.status.as_str(),
            timeout,
        ))
    }

    /// Waits until run `id` is finished (the watch's end rule: every step
    /// final too) and returns it, as [`Engine::wait`]. When `timeout`
    /// passes first: the error every face raises for it
    /// ([`wait_timed_out`]); the run goes on. `not_found_id` for an unknown
    /// run.
    pub async fn wait_run(&self, id: &str, timeout: Option<Duration>) -> Result<RunView, Error> {
        let view = self.inner.engine.wait(id, timeout).await?;
        if !matches!(view.status, RunStatus::Running | RunStatus::Waiting) {
            return Ok(view);
        }
        Err(wait_timed_out(
            &Subject::Run(view.id),
            view.status.as_str(),
            timeout,
        ))
    }

    /// Stops the rig, in order, within `grace` in all: the compactor (a
    /// compaction under way finishes), the worker's claims, the engine's drivers
    /// (running steps cancelled; the runs are resumed by lease by whoever
    /// runs next), the arena's tasks (left to lease rescue), every agent
    /// turn the registry started (their processes stopped), then the bus.
    /// A second call does nothing.
    pub async fn shutdown(&self, grace: Duration) {
        if self.inner.shut_down.swap(true, Ordering::SeqCst) {
            return;
        }
        let deadline = tokio::time::Instant::now() + grace;
        let left = || deadline.saturating_duration_since(tokio::time::Instant::now());
        self.inner.stop.cancel();
        let compactor = self
            .inner
            .compactor
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(compactor) = compactor {
            // A compaction under way finishes (or is left to finish).
            let _ = tokio::time::timeout(left(), compactor).await;
        }
        if let Some(worker) = &self.inner.worker {
            worker.shutdown(left()).await;
        }
        // Without a worker (or after it) this only marks them shut down.
        self.inner.engine.shutdown(left()).await;
        self.inner.arena.shutdown(left()).await;
        self.inner.registry.shutdown(left()).await;
        self.inner.bus.shutdown();
    }

    /// True once [`Rig::shutdown`] was called.
    pub fn is_shut_down(&self) -> bool {
        self.inner.shut_down.load(Ordering::SeqCst)
    }
}

/// The error of a wait whose `timeout` passed before `subject` finished:
/// `unavailable`, its details `{reason: "timeout", battle_id | run_id,
/// status, timeout_ms}`, its message saying the subject goes on. Python
/// raises it as `TimeoutError`, Node rejects with it named `TimeoutError`.
pub fn wait_timed_out(subject: &Subject, status: &str, timeout: Option<Duration>) -> Error {
    let (what, id, end) = match subject {
        Subject::Battle(id) => ("battle", id, "stop it"),
        Subject::Run(id) => ("run", id, "cancel it"),
    };
    let ms = timeout.unwrap_or_default().as_millis() as u64;
    Error::unavailable(format!(
        "{what} {id} is still {status} after {ms} ms (it goes on; wait again or {end})"
    ))
    .with_detail("reason", "timeout")
    .with_detail(&format!("{what}_id"), id.clone())
    .with_detail("status", status)
    .with_detail("timeout_ms", ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_redacted() {
        for (url, shown) in [
            ("postgres://u:pw@h:5432/db", "postgres://u:***@h:5432/db"),
            ("postgres://u@h/db", "postgres://u@h/db"),
            ("postgres://h/db?x=a@b", "postgres://h/db?x=a@b"),
            ("postgresql://u:p@ss@h/db", "postgresql://u:***@h/db"),
        ] {
            assert_eq!(redact(url), shown, "{url}");
        }
    }

    #[test]
    fn project_roots_are_canonical_and_default_to_the_current_directory() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("p");
        std::fs::create_dir(&sub).unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "").unwrap();
        let canonical = std::fs::canonicalize(&sub).unwrap();
        assert_eq!(
            resolve_project_roots(&[sub.join("..").join("p")]).unwrap(),
            vec![canonical]
        );
        assert_eq!(
            resolve_project_roots(&[]).unwrap(),
            vec![std::fs::canonicalize(std::env::current_dir().unwrap()).unwrap()]
        );
        for (roots, at) in [
            (
                vec![sub.clone(), dir.path().join("missing")],
                "project_roots[1]",
            ),
            (vec![file.clone()], "project_roots[0]"),
        ] {
            let e = resolve_project_roots(&roots).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::InvalidInput, "{roots:?}");
            assert_eq!(e.details()["path"], at, "{roots:?}");
        }
    }
}
