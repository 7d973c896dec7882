//! The task worker (feature `runtime`): the one loop that claims the
//! store's tasks, heartbeats their leases, rescues expired ones and shuts
//! down in order — for every runtime that queues tasks.
//!
//! A runtime is a [`TaskHandler`]: it names the owner kinds and lanes it
//! serves and how many of its tasks may run in this process, and runs one
//! claimed task to its end. The arena is the handler of contestant, judge
//! and cross-examination owners (lanes `local` and `cloud`); the flow
//! engine the handler of step owners — its run drivers — in the `driver`
//! lane, which no capacity limits. A [`TaskWorker`] serves one or more
//! handlers:
//!
//! 1. Each pass it **rescues** expired leases of any server
//!    ([`Store::rescue_expired`]: `pending` again, or `failed` once the
//!    task's rescues are spent), then **ticks** each handler that asks for
//!    it ([`TaskHandler::tick_every`]; at once on the first pass and after
//!    a rescue of one of its tasks: the arena reconciles its live battles
//!    there, the engine fails runs whose driver can never run again), then
//!    **claims** for each handler as many tasks as it has room for
//!    (`max_concurrent` minus what runs), only of its owner kinds and lanes.
//!    It sleeps until a handler wakes it ([`TaskSet::wake`]: new work, a
//!    finished task) or `poll` passes.
//! 2. Each claim runs in its own tokio task, as a [`Held`], beside **one
//!    heartbeat** ([`heartbeat_interval`]: a third of the lease, at least
//!    [`HEARTBEAT_FLOOR`]). A heartbeat the store refuses (`conflict` or
//!    `not_found_id`: the task was rescued, cancelled or finished) is a
//!    **lost lease**: the holder's [`Held::cancel`] fires and
//!    [`Held::stopped`] says [`StopReason::LeaseLost`] — it stops its agent
//!    or process and writes nothing. A failed heartbeat of another kind (a
//!    database hiccup) is tried again at the next beat; the lease has two
//!    more before it expires.
//! 3. **Shutdown** ([`TaskWorker::shutdown`]) stops the loop first (no
//!    claim, rescue or tick after it), then each handler's tasks in the
//!    order the handlers were given: every holder's `cancel` fires with
//!    [`StopReason::Shutdown`] — the same record for every handler — and
//!    the worker waits for them within the grace. The tasks keep their
//!    leases, which expire; another server (or this one restarted)
//!    finishes them. A handler may also be shut down alone
//!    ([`TaskSet::shutdown`]): the worker claims nothing more for it.
//!
//! # One worker for both runtimes
//!
//! [`Arena::start`](crate::arena::runner::Arena::start) and
//! [`Engine::start`](crate::flow::engine::Engine::start) each start a worker
//! of their own (one handler). To serve both from one worker — one claim
//! loop, one rescue pass, one ordered shutdown — build them without one and
//! hand their handlers to [`TaskWorker::start`]:
//!
//! ```no_run
//! # async fn demo(store: std::sync::Arc<dyn coderig::store::Store>,
//! #               registry: coderig::agent::Registry) -> Result<(), coderig::Error> {
//! use coderig::arena::runner::{Arena, ArenaConfig};
//! use coderig::flow::engine::{Engine, EngineConfig};
//! use coderig::worker::{TaskWorker, WorkerConfig};
//! let bus = coderig::bus::EventBus::start(store.clone());
//! let engine = Engine::build(store.clone(), registry.clone(), bus.clone(), EngineConfig::new("data")).await?;
//! let arena = Arena::build(store.clone(), registry, bus.clone(), ArenaConfig::new("data")).await?;
//! // The order is the shutdown's: the engine's drivers stop first.
//! let worker = TaskWorker::start(store, bus, WorkerConfig::new(), vec![engine.handler(), arena.handler()]);
//! // ... battles and runs ...
//! worker.shutdown(std::time::Duration::from_secs(5)).await;
//! # Ok(()) }
//! ```
//!
//! `build` does everything `start` does (the arena sets the lanes and sweeps
//! leftover worktrees when [`ArenaConfig::run_worker`] is true) except
//! starting the worker. `Arena::shutdown` / `Engine::shutdown` on a handle
//! without its own worker shut its handler down (its tasks stopped, the
//! shared worker claims nothing more for it).
//!
//! [`ArenaConfig::run_worker`]: crate::arena::runner::ArenaConfig::run_worker

use crate::bus::EventBus;
use crate::error::Error;
use crate::store::{Claim, ClaimRequest, Fence, OwnerKind, Store};
use crate::task::Lane;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use crate::store::{heartbeat_interval, DEFAULT_LEASE_TTL, HEARTBEAT_FLOOR};

mod beats;
use beats::Beats;

/// How many expired leases one rescue pass puts back at most.
pub const RESCUE_BATCH: u32 = 100;

/// The shortest sleep of the loop between two passes, whatever `poll` says.
const POLL_FLOOR: Duration = Duration::from_millis(10);

/// Why a held task was stopped by the worker: what its holder may still
/// write (nothing, in both cases).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// The lease is gone (expired and rescued, or the task cancelled or
    /// finished in the store): write nothing.
    LeaseLost,
    /// This process shuts down: write nothing; the lease expires and
    /// another worker finishes the task.
    Shutdown,
}

type Reason = Arc<Mutex<Option<StopReason>>>;

fn stop(cancel: &CancellationToken, reason: &Reason, why: StopReason) {
    // The reason first: a holder that sees the cancellation finds it set.
    lock(reason).get_or_insert(why);
    cancel.cancel();
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A claimed task in its holder's hands: the claim (its task and the lease
/// that fences every write), the token that stops it, and why it stopped.
///
/// `cancel` fires when the worker stops the task ([`Held::stopped`] then
/// says why), and also when its handler cancels it without a reason
/// ([`TaskSet::cancel_work`]: the store already settled it, e.g. a stopped
/// battle).
pub struct Held {
    /// The claim: the task (`running`, its attempt counted) and its lease.
    pub claim: Claim,
    /// Fires when the task must stop.
    pub cancel: CancellationToken,
    reason: Reason,
    lease_ttl: Duration,
}

impl std::fmt::Debug for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Held")
            .field("task", &self.claim.task.id)
            .field("attempt", &self.claim.task.attempt)
            .field("stopped", &self.stopped())
            .finish()
    }
}

impl Held {
    /// Why the worker stopped the task, `None` while it was not (or when
    /// its handler cancelled it without a reason).
    pub fn stopped(&self) -> Option<StopReason> {
        *lock(&self.reason)
    }

    /// The fence of the claim's writes.
    pub fn fence(&self) -> Fence {
        self.claim.fence()
    }

    /// The lease's length (the worker's; each heartbeat extends it by as
    /// much).
    pub fn lease_ttl(&self) -> Duration {
        self.lease_ttl
    }

    /// A held task outside a worker (tests of a handler's `run`): nobody
    /// heartbeats it.
    #[doc(hidden)]
    pub fn detached(claim: Claim, lease_ttl: Duration) -> Held {
        Held {
            claim,
            cancel: CancellationToken::new(),
            reason: Arc::default(),
            lease_ttl,
        }
    }
}

struct Entry {
    work_id: String,
    cancel: CancellationToken,
    reason: Reason,
}

/// The tasks one handler runs in this process: what the worker counts
/// against [`TaskHandler::max_concurrent`], what a stop of a battle or a
/// shutdown reaches, and the wake-up of the worker serving it. Every
/// handler owns one ([`TaskHandler::tasks`]).
pub struct TaskSet {
    running: Mutex<HashMap<(String, u32), Entry>>,
    shutdown: CancellationToken,
    tracker: TaskTracker,
    /// The serving worker's wake-up (a private one until a worker
    /// attaches: nobody waits on it).
    wake: Mutex<Arc<Notify>>,
}

impl Default for TaskSet {
    fn default() -> Self {
        TaskSet::new()
    }
}

impl std::fmt::Debug for TaskSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskSet")
            .field("running", &self.len())
            .field("shut_down", &self.is_shut_down())
            .finish()
    }
}

impl TaskSet {
    /// An empty set, not shut down, served by no worker yet.
    pub fn new() -> Self {
        TaskSet {
            running: Mutex::new(HashMap::new()),
            shutdown: CancellationToken::new(),
            tracker: TaskTracker::new(),
            wake: Mutex::new(Arc::new(Notify::new())),
        }
    }

    /// How many tasks run now.
    pub fn len(&self) -> usize {
        lock(&self.running).len()
    }

    /// True when none runs.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The battles or runs (work ids) of the tasks that run now, sorted,
    /// each once.
    pub fn works(&self) -> Vec<String> {
        let mut ids: Vec<String> = lock(&self.running)
            .values()
            .map(|e| e.work_id.clone())
            .collect();
        ids.sort();
        ids.dedup();
        ids
    }

    /// Stops this process's tasks of work `work_id` without a reason
    /// ([`Held::stopped`] stays `None`): the store already settled them (a
    /// stopped battle cancelled its tasks), their holders stop their agents
    /// at once instead of at their next heartbeat.
    pub fn cancel_work(&self, work_id: &str) {
        for e in lock(&self.running)
            .values()
            .filter(|e| e.work_id == work_id)
        {
            e.cancel.cancel();
        }
    }

    /// Wakes the worker serving this set (new work was queued, a task
    /// ended): it claims now instead of at its next poll.
    pub fn wake(&self) {
        lock(&self.wake).notify_one();
    }

    /// True once [`TaskSet::shutdown`] was called (by its handle or by the
    /// worker's shutdown).
    pub fn is_shut_down(&self) -> bool {
        self.shutdown.is_cancelled()
    }

    /// Shuts the set down: no worker claims for it again, every task it
    /// runs is stopped with [`StopReason::Shutdown`], and this waits up to
    /// `grace` for them to end. Idempotent.
    pub async fn shutdown(&self, grace: Duration) {
        self.shutdown.cancel();
        for e in lock(&self.running).values() {
            stop(&e.cancel, &e.reason, StopReason::Shutdown);
        }
        self.tracker.close();
        let _ = tokio::time::timeout(grace, self.tracker.wait()).await;
    }

    fn attach(&self, wake: Arc<Notify>) {
        *lock(&self.wake) = wake;
    }

    fn insert(&self, key: (String, u32), entry: Entry) {
        let (cancel, reason) = (entry.cancel.clone(), entry.reason.clone());
        let shut = {
            let mut running = lock(&self.running);
            running.insert(key, entry);
            // Under the lock: a shutdown either sees this entry or was
            // already signalled before it went in.
            self.shutdown.is_cancelled()
        };
        if shut {
            stop(&cancel, &reason, StopReason::Shutdown);
        }
    }

    fn remove(&self, key: &(String, u32)) {
        lock(&self.running).remove(key);
    }
}

/// A runtime whose tasks a [`TaskWorker`] claims and runs (see the
/// [module docs](self)). The arena and the flow engine are two; a
/// worker serves any number.
#[async_trait::async_trait]
pub trait TaskHandler: Send + Sync + 'static {
    /// Its name in the worker's messages (`"arena"`, `"flow"`).
    fn name(&self) -> &str;

    /// The owner kinds whose tasks it runs (no two handlers of one worker
    /// should share one).
    fn owner_kinds(&self) -> &[OwnerKind];

    /// The lanes its tasks run in (claims visit them in this order).
    fn lanes(&self) -> &[Lane];

    /// At most this many of its tasks run in this process at once.
    fn max_concurrent(&self) -> u32;

    /// Its running tasks in this process.
    fn tasks(&self) -> &TaskSet;

    /// How often the worker calls [`TaskHandler::tick`] (`None`: never).
    fn tick_every(&self) -> Option<Duration> {
        None
    }

    /// Its periodic work, on the worker's loop (the arena reconciles its
    /// live battles): at once on the worker's first pass (`first`), every
    /// [`TaskHandler::tick_every`], and after a rescue of one of its tasks.
    /// An error is reported and the next tick tries again.
    async fn tick(&self, first: bool) -> Result<(), Error> {
        let _ = first;
        Ok(())
    }

    /// Runs one claimed task to its end: its completion (fenced) is the
    /// handler's to write. It must stop soon after `held.cancel` fires and
    /// then write nothing when [`Held::stopped`] says why. An error is
    /// reported (unless the task was stopped); the task stays as the store
    /// has it (its lease expires and it is rescued) unless the handler
    /// settled it.
    async fn run(&self, held: &Held) -> Result<(), Error>;
}

/// How a [`TaskWorker`] runs.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// The worker's name in the store (`host:pid:random` by default).
    pub name: String,
    /// The lease of every claim (30 s by default); heartbeats every
    /// [`heartbeat_interval`] of it.
    pub lease_ttl: Duration,
    /// How often the loop looks for work when nothing wakes it (500 ms by
    /// default; at least 10 ms).
    pub poll: Duration,
    /// `Some`: claim only the tasks of the works in this scope (none while
    /// it is empty); `None` (the default): any task of the store.
    pub scope: Option<WorkScope>,
}

/// The works (battles, runs) a worker may claim tasks of: the ones its own
/// process started, so that a CLI's `battle run` or `run` beside a server
/// on one store runs its own work and leaves the server's alone. Cheap to
/// clone; every clone is the same set. The arena and the engine add each
/// work they create before they create it.
#[derive(Debug, Clone, Default)]
pub struct WorkScope(Arc<std::sync::Mutex<std::collections::BTreeSet<String>>>);

impl WorkScope {
    /// An empty scope: nothing is claimed until a work is added.
    pub fn new() -> Self {
        WorkScope::default()
    }

    /// Adds a work by id.
    pub fn add(&self, work_id: &str) {
        self.lock().insert(work_id.to_owned());
    }

    /// Every work in the scope, in id order.
    pub fn ids(&self) -> Vec<String> {
        self.lock().iter().cloned().collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, std::collections::BTreeSet<String>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl WorkerConfig {
    /// The defaults: a fresh name, [`DEFAULT_LEASE_TTL`], a 500 ms poll.
    pub fn new() -> Self {
        WorkerConfig {
            name: default_worker_name(""),
            lease_ttl: DEFAULT_LEASE_TTL,
            poll: Duration::from_millis(500),
            scope: None,
        }
    }
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig::new()
    }
}

/// A worker name unique to this process and call: `host:pid:<tag>random`.
pub fn default_worker_name(tag: &str) -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "host".to_owned());
    format!("{host}:{}:{tag}{}", std::process::id(), random_hex(4))
}

fn random_hex(bytes: usize) -> String {
    use rand_pcg::rand_core::{RngCore, SeedableRng};
    use std::sync::atomic::AtomicU64;
    static N: AtomicU64 = AtomicU64::new(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let seed = now
        ^ (u64::from(std::process::id()) << 32)
        ^ N.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed);
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
    let mut buf = vec![0u8; bytes];
    rng.fill_bytes(&mut buf);
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

struct Inner {
    store: Arc<dyn Store>,
    /// Every held task's heartbeat, batched into one write when several
    /// fall due together.
    beats: Beats,
    bus: Arc<EventBus>,
    config: WorkerConfig,
    handlers: Vec<Arc<dyn TaskHandler>>,
    wake: Arc<Notify>,
    stop: CancellationToken,
    tracker: TaskTracker,
    shut_down: AtomicBool,
}

/// The task worker: one claim / heartbeat / rescue loop serving one or more
/// [`TaskHandler`]s (see the [module docs](self)). Cheap to clone; every
/// clone is the same worker.
#[derive(Clone)]
pub struct TaskWorker {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for TaskWorker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskWorker")
            .field("name", &self.inner.config.name)
            .field(
                "handlers",
                &self
                    .inner
                    .handlers
                    .iter()
                    .map(|h| h.name().to_owned())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl TaskWorker {
    /// Starts the loop on the current tokio runtime (it must be called
    /// inside one), serving `handlers` — in this order for ticks, claims and
    /// the shutdown. Each handler's [`TaskSet::wake`] wakes this worker from
    /// now on.
    pub fn start(
        store: Arc<dyn Store>,
        bus: Arc<EventBus>,
        config: WorkerConfig,
        handlers: Vec<Arc<dyn TaskHandler>>,
    ) -> TaskWorker {
        let wake = Arc::new(Notify::new());
        for h in &handlers {
            h.tasks().attach(wake.clone());
        }
        let inner = Arc::new(Inner {
            beats: Beats::start(store.clone()),
            store,
            bus,
            config,
            handlers,
            wake,
            stop: CancellationToken::new(),
            tracker: TaskTracker::new(),
            shut_down: AtomicBool::new(false),
        });
        inner.tracker.spawn(run_loop(inner.clone()));
        TaskWorker { inner }
    }

    /// The configuration.
    pub fn config(&self) -> &WorkerConfig {
        &self.inner.config
    }

    /// Wakes the loop: it claims now instead of at its next poll.
    pub fn wake(&self) {
        self.inner.wake.notify_one();
    }

    /// Tasks of every handler running in this process now.
    pub fn running(&self) -> usize {
        self.inner.handlers.iter().map(|h| h.tasks().len()).sum()
    }

    /// True once [`TaskWorker::shutdown`] was called.
    pub fn is_shut_down(&self) -> bool {
        self.inner.shut_down.load(Ordering::SeqCst)
    }

    /// Shuts down within `grace` in all: the loop first (nothing claimed,
    /// rescued or ticked after it), then each handler's tasks in the order
    /// the handlers were given, each stopped with [`StopReason::Shutdown`]
    /// and waited for; their leases expire and whoever runs next finishes
    /// them. A second call does nothing more.
    pub async fn shutdown(&self, grace: Duration) {
        if self.inner.shut_down.swap(true, Ordering::SeqCst) {
            return;
        }
        let deadline = tokio::time::Instant::now() + grace;
        let left = || deadline.saturating_duration_since(tokio::time::Instant::now());
        self.inner.stop.cancel();
        self.inner.tracker.close();
        let _ = tokio::time::timeout(left(), self.inner.tracker.wait()).await;
        for h in &self.inner.handlers {
            h.tasks().shutdown(left()).await;
        }
    }
}

async fn run_loop(w: Arc<Inner>) {
    let n = w.handlers.len();
    let mut first = vec![true; n];
    let mut last_tick: Vec<Option<Instant>> = vec![None; n];
    let poll = w.config.poll.max(POLL_FLOOR);
    loop {
        if w.stop.is_cancelled() {
            break;
        }
        let mut rescued_for = vec![false; n];
        match w.store.rescue_expired(RESCUE_BATCH).await {
            Ok(rescued) if !rescued.is_empty() => {
                w.bus.notify();
                for r in &rescued {
                    for (i, h) in w.handlers.iter().enumerate() {
                        if h.owner_kinds().contains(&r.task.owner.kind) {
                            rescued_for[i] = true;
                        }
                    }
                }
            }
            Ok(_) => {}
            Err(e) => eprintln!("coderig worker {}: rescue failed: {e}", w.config.name),
        }
        for (i, h) in w.handlers.iter().enumerate() {
            if w.stop.is_cancelled() {
                return;
            }
            let Some(every) = h.tick_every() else {
                continue;
            };
            if h.tasks().is_shut_down() {
                continue;
            }
            if first[i] || rescued_for[i] || last_tick[i].is_none_or(|t| t.elapsed() >= every) {
                if let Err(e) = h.tick(first[i]).await {
                    eprintln!("coderig {}: reconcile failed: {e}", h.name());
                }
                first[i] = false;
                last_tick[i] = Some(Instant::now());
            }
        }
        for h in &w.handlers {
            if w.stop.is_cancelled() {
                return;
            }
            if h.tasks().is_shut_down() {
                continue;
            }
            let free = h.max_concurrent().saturating_sub(h.tasks().len() as u32);
            if free == 0 {
                continue;
            }
            let mut request = ClaimRequest::new(w.config.name.clone())
                .limit(free)
                .lease_ttl(w.config.lease_ttl)
                .owner_kinds(h.owner_kinds())
                .lanes(h.lanes());
            if let Some(scope) = &w.config.scope {
                request.work_ids = scope.ids();
                if request.work_ids.is_empty() {
                    continue;
                }
            }
            match w.store.claim(&request).await {
                Ok(claims) => {
                    for claim in claims {
                        spawn_task(&w, h, claim);
                    }
                }
                Err(e) => eprintln!("coderig {}: claim failed: {e}", h.name()),
            }
        }
        tokio::select! {
            () = w.wake.notified() => {}
            () = tokio::time::sleep(poll) => {}
            () = w.stop.cancelled() => break,
        }
    }
}

fn spawn_task(w: &Arc<Inner>, h: &Arc<dyn TaskHandler>, claim: Claim) {
    let key = (claim.task.id.clone(), claim.task.attempt);
    let held = Held {
        cancel: CancellationToken::new(),
        reason: Arc::default(),
        lease_ttl: w.config.lease_ttl,
        claim,
    };
    // A task whose lease ran out while its holder lived may be claimed
    // again here before that holder stopped: the entry of each is its own
    // (the attempt is in the key).
    h.tasks().insert(
        key.clone(),
        Entry {
            work_id: held.claim.task.work_id.clone(),
            cancel: held.cancel.clone(),
            reason: held.reason.clone(),
        },
    );
    let beats = w.beats.clone();
    let handler = h.clone();
    let wake = w.wake.clone();
    h.tasks().tracker.spawn(async move {
        let done = CancellationToken::new();
        let work = async {
            let result = handler.run(&held).await;
            done.cancel();
            result
        };
        let (result, ()) = tokio::join!(work, heartbeat(beats, &held, &done));
        if let Err(e) = result {
            if held.stopped().is_none() {
                eprintln!(
                    "coderig {}: task {} ({} {}) failed: {e}",
                    handler.name(),
                    held.claim.task.id,
                    held.claim.task.owner.kind,
                    held.claim.task.owner.id
                );
            }
        }
        handler.tasks().remove(&key);
        wake.notify_one();
    });
}

/// The one heartbeat: every [`heartbeat_interval`] of the lease until the
/// holder is done or stopped (sent through the worker's batched [`Beats`]);
/// a refused beat stops the holder with [`StopReason::LeaseLost`].
async fn heartbeat(beats: Beats, held: &Held, done: &CancellationToken) {
    let fence = held.fence();
    let every = heartbeat_interval(held.lease_ttl);
    loop {
        tokio::select! {
            () = done.cancelled() => return,
            () = held.cancel.cancelled() => return,
            () = tokio::time::sleep(every) => {}
        }
        match beats.beat(fence.clone(), held.lease_ttl).await {
            Ok(_) => {}
            Err(e)
                if e.kind() == crate::ErrorKind::Conflict
                    || e.kind() == crate::ErrorKind::NotFoundId =>
            {
                stop(&held.cancel, &held.reason, StopReason::LeaseLost);
                return;
            }
            Err(e) => eprintln!(
                "coderig worker: heartbeat of task {} failed (trying again): {e}",
                fence.task_id
            ),
        }
    }
}
