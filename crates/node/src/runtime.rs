//! What a `Rig` opens on first use: its store and event bus, and beside
//! them the arena (battles, [`crate::battle`]) and the flow engine (runs,
//! [`crate::run`]).
//!
//! Nothing is opened by `new Rig(...)`: the first battle call opens the
//! store and starts the arena, the first run call opens the store (once,
//! shared) and starts the engine. Both work on the same store, registry,
//! bus, data directory and project roots, so a rig's battles and runs land
//! in one store and one event log, as they do in a server. The process
//! `exit` listener of [`crate::rig`] shuts down what was opened.

use coderig::agent::Registry;
use coderig::arena::runner::{Arena, ArenaConfig};
use coderig::bus::EventBus;
use coderig::flow::engine::{Engine, EngineConfig};
use coderig::store::Store;
use coderig::Error;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::OnceCell;

/// The data directory of a rig given none (the CLI's and the server's
/// default too).
const DEFAULT_DATA_DIR: &str = ".coderig";

/// `path` made absolute against the current directory now, so that a later
/// `process.chdir` does not move the store or the roots.
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The store and the bus every part of a rig shares.
#[derive(Clone)]
struct Base {
    store: Arc<dyn Store>,
    bus: Arc<EventBus>,
}

/// What a rig needs to open its store, arena and engine, and each of them
/// once opened.
pub(crate) struct Runtime {
    registry: Registry,
    data_dir: PathBuf,
    db: Option<String>,
    project_roots: Vec<PathBuf>,
    base: OnceCell<Base>,
    arena: OnceCell<Arena>,
    engine: OnceCell<Engine>,
}

impl Runtime {
    /// The settings of a rig (nothing is opened yet).
    pub(crate) fn new(
        registry: Registry,
        data_dir: Option<&str>,
        db: Option<String>,
        project_roots: Vec<String>,
    ) -> Self {
        Runtime {
            registry,
            data_dir: absolute(Path::new(data_dir.unwrap_or(DEFAULT_DATA_DIR))),
            db,
            project_roots: project_roots
                .iter()
                .map(|r| absolute(Path::new(r)))
                .collect(),
            base: OnceCell::new(),
            arena: OnceCell::new(),
            engine: OnceCell::new(),
        }
    }

    /// The store and the bus, opened on first use (one opening even when
    /// calls race; a failed opening is retried by the next call).
    async fn base(&self) -> Result<Base, Error> {
        self.base
            .get_or_try_init(|| async {
                let store = coderig::store::open(self.db.as_deref(), &self.data_dir).await?;
                let bus = EventBus::start(store.clone());
                Ok(Base { store, bus })
            })
            .await
            .cloned()
    }

    /// The arena, starting it on first use. Must run on napi's tokio
    /// runtime: the bus and the worker loop are spawned there.
    pub(crate) async fn arena(&self) -> Result<Arena, Error> {
        self.arena
            .get_or_try_init(|| async {
                let base = self.base().await?;
                let mut config = ArenaConfig::new(&self.data_dir);
                config.project_roots = self.project_roots.clone();
                Arena::start(base.store, self.registry.clone(), base.bus, config).await
            })
            .await
            .cloned()
    }

    /// The flow engine, starting it (and its worker, which drives this
    /// rig's runs and any other run of the store it claims) on first use.
    /// Must run on napi's tokio runtime.
    pub(crate) async fn engine(&self) -> Result<Engine, Error> {
        self.engine
            .get_or_try_init(|| async {
                let base = self.base().await?;
                let mut config = EngineConfig::new(&self.data_dir);
                config.project_roots = self.project_roots.clone();
                Engine::start(base.store, self.registry.clone(), base.bus, config).await
            })
            .await
            .cloned()
    }

    /// The event bus, opening the store on first use.
    pub(crate) async fn bus(&self) -> Result<Arc<EventBus>, Error> {
        Ok(self.base().await?.bus)
    }

    /// True when a call opened the store (there is something to shut down).
    pub(crate) fn opened(&self) -> bool {
        self.base.initialized()
    }

    /// Stops what was opened: the engine's drivers (running steps
    /// cancelled, runs left to be resumed by lease), the arena's workers
    /// (battle tasks left to lease rescue), then the bus; at most `grace`
    /// in all.
    pub(crate) async fn shutdown(&self, grace: Duration) {
        let deadline = tokio::time::Instant::now() + grace;
        let left = || deadline.saturating_duration_since(tokio::time::Instant::now());
        if let Some(engine) = self.engine.get() {
            engine.shutdown(left()).await;
        }
        if let Some(arena) = self.arena.get() {
            arena.shutdown(left()).await;
        }
        if let Some(base) = self.base.get() {
            base.bus.shutdown();
        }
    }
}
