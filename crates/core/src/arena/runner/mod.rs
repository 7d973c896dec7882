//! The arena runtime (features `runtime` and `git`, Unix): battles of real
//! coding agents, dispatched through the store's leased claims, each
//! contestant in its own worktree, won by the oracle's test runs first and
//! the judge second.
//!
//! [`Arena`] is the one handle every face holds (the server, the CLI,
//! Python's and Node's `Rig`). It owns nothing a crash could lose: every
//! state change is a store transaction with its event. The arena is a
//! [`TaskHandler`] of the [task worker](crate::worker): a worker — its own
//! ([`Arena::start`]) or one shared with the flow engine ([`Arena::build`]
//! and [`Arena::handler`]) — claims its tasks (contestants, judge analyses,
//! cross-examinations) with a lease, heartbeats them, rescues expired
//! leases of any server, and on its tick the arena reconciles live battles
//! with the pure [`crate::arena::lifecycle::next_battle_actions`]. Two
//! `Arena`s on one PostgreSQL share the work: the claim enforces the lanes'
//! global capacities and no task is held by two workers.
//!
//! # A battle's life
//!
//! 1. [`Arena::start_battle`] checks the spec (2–6 unique contestants,
//!    known identities, a git project under a project root for coding) and
//!    creates the battle, its contestants, its judge row, one task per
//!    contestant and `battle_started` in one transaction.
//! 2. A worker claims a contestant task (global lane capacity), marks it
//!    `running`, creates its worktree (the intent recorded first), runs the
//!    agent (`Edit` for coding, `ReadOnly` for qa) with the battle's
//!    `contestant_timeout`, forwarding its output as live `agent_output`.
//!    Whatever the outcome it archives `diff.patch` and `result.md`,
//!    removes the worktree (unless `keep_worktrees`), runs the oracle on a
//!    fresh checkout of the base with the patch — sandboxed under the
//!    registry's [`Registry::sandbox_mode`] (see [`crate::arena::oracle`];
//!    a refusal under `enforce` is the contestant's oracle error) — and
//!    completes the task with the benchmark and evidence
//!    (`contestant_updated`).
//! 3. When every contestant settled the battle goes `judging`; a judge
//!    task runs the oracle on the base once, digests and pairwise judging
//!    in both orders where the evidence does not decide, writes
//!    `analysis.md` and `manifest.json`, and completes the battle.
//!
//! Cancel ([`Arena::stop`]) marks the battle cancelled, its unsettled
//! contestants cancelled and cancels every live task, in one transaction;
//! holders see it at their next fenced write or heartbeat (at once in this
//! process), stop their agents' process groups and write nothing more.

mod contestant;
pub mod data;
mod events;
mod finish;
pub mod folder;
mod judge;
mod leaderboard;
mod root;
mod start;
pub mod view;
mod worker;

pub use view::{AgentView, BattleView, ContestantView, CrossExamView};

use crate::agent::Registry;
use crate::arena::{AgentRef, BattleSpec, BattleType, Lane, WinnerSource};
use crate::bus::EventBus;
use crate::error::Error;
use crate::event::BattleStatus;
use crate::store::{OwnerKind, Store, Target, Transition, WorkFilter, WorkKind};
use crate::worker::{TaskHandler, TaskSet, TaskWorker, WorkerConfig};
use crate::workspace::{GitWorkspace, GitWorkspaceConfig, Patch, Workspace};
use data::{decode, encode, now_ms, BattleData, JudgeData, WinnerRecord};
use events::battle_event;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// How an [`Arena`] runs.
#[derive(Debug, Clone)]
pub struct ArenaConfig {
    /// The data directory: worktrees under `worktrees/`, qa results
    /// without a project under `Arena/`.
    pub data_dir: PathBuf,
    /// Coding battles' projects must lie under one of these (canonical).
    /// Empty: the filesystem root (library use; the server always sets it).
    pub project_roots: Vec<PathBuf>,
    /// Its own worker's name in the store (`host:pid:random` by default;
    /// a shared worker has its own, [`WorkerConfig::name`]).
    pub worker: String,
    /// Lease length of every task its own worker claims (30 s by default);
    /// holders heartbeat every third of it
    /// ([`crate::worker::heartbeat_interval`]).
    pub lease_ttl: Duration,
    /// How often its own worker looks for work when nothing wakes it.
    pub poll: Duration,
    /// How often it reconciles live battles (a crash, another server).
    pub reconcile_every: Duration,
    /// At most this many tasks run in this process at once.
    pub max_concurrent: u32,
    /// Attempts of each judge, digest or cross-examination call whose error
    /// is retryable (`ErrorClass::Retry`), 3 by default.
    pub judge_attempts: u32,
    /// Each judge, digest or cross-examination call's wall-clock limit.
    pub judge_timeout: Duration,
    /// Run battles (false: this handle only creates and reads battles;
    /// another process runs them): [`Arena::start`] starts a worker, and
    /// the lanes are set and leftover worktrees swept. [`Arena::build`]
    /// leaves the worker to the caller (a shared one).
    pub run_worker: bool,
    /// Each battle this handle starts is added here before it is created
    /// (the scope of a worker that claims only its own process's work:
    /// [`crate::worker::WorkScope`]).
    pub scope: Option<crate::worker::WorkScope>,
}

impl ArenaConfig {
    /// The defaults for a data directory.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        ArenaConfig {
            data_dir: data_dir.into(),
            project_roots: Vec::new(),
            worker: default_worker_name(),
            lease_ttl: crate::store::DEFAULT_LEASE_TTL,
            poll: Duration::from_millis(500),
            reconcile_every: Duration::from_secs(2),
            max_concurrent: 16,
            judge_attempts: 3,
            judge_timeout: Duration::from_secs(10 * 60),
            run_worker: true,
            scope: None,
        }
    }
}

fn default_worker_name() -> String {
    crate::worker::default_worker_name("")
}

/// Which battles [`Arena::list_battles`] returns: what every face's list
/// of battles takes (`GET /api/battles`'s query, `rig.battles(filter)`),
/// decoded strictly — an unknown key is refused.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema, utoipa::IntoParams))]
#[cfg_attr(feature = "openapi", into_params(parameter_in = Query))]
pub struct BattleFilter {
    /// Only battles of this project (confined to the project roots like a
    /// spec's `project`, canonicalized before comparing).
    pub project: Option<String>,
    /// Only battles in this status.
    pub status: Option<BattleStatus>,
    /// At most this many (1–500, default 50).
    #[cfg_attr(feature = "openapi", param(minimum = 1, maximum = 500))]
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 500))]
    pub limit: Option<u32>,
    /// The `next_cursor` of the previous page, unchanged.
    pub cursor: Option<String>,
}

/// Which boards [`Arena::leaderboard`] rates: what every face's leaderboard
/// takes (`GET /api/leaderboard`'s query, `rig.leaderboard(options)`),
/// decoded strictly — an unknown key is refused.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema, utoipa::IntoParams))]
#[cfg_attr(feature = "openapi", into_params(parameter_in = Query))]
pub struct LeaderboardFilter {
    /// Only this battle type's board.
    pub battle_type: Option<BattleType>,
    /// Only battles of this project (confined to the project roots).
    pub project: Option<String>,
}

/// One page of battles, newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BattlePage {
    /// The battles.
    pub battles: Vec<BattleView>,
    /// The cursor of the next page, `null` on the last.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub next_cursor: Option<String>,
}

/// One contestant (`identity/model`) on the leaderboard.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LeaderboardEntry {
    /// `identity/model`.
    pub name: String,
    /// Bradley–Terry score on the Elo scale.
    pub score: f64,
    /// Lower end of the 95 % bootstrap interval.
    pub ci_low: f64,
    /// Upper end of the 95 % bootstrap interval.
    pub ci_high: f64,
    /// Completed battles with a winner it took part in.
    pub n_battles: u32,
}

/// The ratings of one battle type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Leaderboard {
    /// `coding` or `qa`.
    pub battle_type: BattleType,
    /// Completed battles with a winner counted.
    pub n_battles: u32,
    /// Best first.
    pub entries: Vec<LeaderboardEntry>,
}

/// What [`Arena::apply`] applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Applied {
    /// The battle.
    pub battle_id: String,
    /// The contestant whose patch was applied.
    pub contestant_id: String,
    /// The project it was applied to.
    pub project: String,
    /// The patch's size in bytes (0: nothing to apply).
    pub patch_bytes: u64,
}

pub(crate) struct Inner {
    store: Arc<dyn Store>,
    registry: Registry,
    bus: Arc<EventBus>,
    workspace: Arc<dyn Workspace>,
    config: ArenaConfig,
    /// Its tasks running in this process (whichever worker claimed them).
    tasks: TaskSet,
    /// Held while this arena runs work: see [`root`].
    _root: Option<root::RootHold>,
}

/// The arena runtime: start, watch, stop and judge battles (see the
/// [module docs](self)). Cheap to clone; every clone is the same runtime.
#[derive(Clone)]
pub struct Arena {
    inner: Arc<Inner>,
    /// Its own worker ([`Arena::start`]); `None` without one.
    worker: Option<TaskWorker>,
}

impl std::fmt::Debug for Arena {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Arena")
            .field("worker", &self.inner.config.worker)
            .finish_non_exhaustive()
    }
}

impl Arena {
    /// Starts the runtime on the current tokio runtime: everything
    /// [`Arena::build`] does, then — unless `config.run_worker` is false —
    /// a [`TaskWorker`] of its own with the arena as its one handler (named
    /// `config.worker`, leases of `config.lease_ttl`, polling every
    /// `config.poll`). To share one worker with the flow engine, use
    /// [`Arena::build`] and [`Arena::handler`] instead.
    ///
    /// Errors: those of [`Arena::build`].
    pub async fn start(
        store: Arc<dyn Store>,
        registry: Registry,
        bus: Arc<EventBus>,
        config: ArenaConfig,
    ) -> Result<Arena, Error> {
        let mut arena = Arena::build(store.clone(), registry, bus.clone(), config).await?;
        let c = &arena.inner.config;
        if c.run_worker {
            let worker = WorkerConfig {
                name: c.worker.clone(),
                lease_ttl: c.lease_ttl,
                poll: c.poll,
                scope: c.scope.clone(),
            };
            arena.worker = Some(TaskWorker::start(store, bus, worker, vec![arena.handler()]));
        }
        Ok(arena)
    }

    /// Builds the runtime without a worker of its own: the git workspace
    /// under `config.data_dir` and, when `config.run_worker` is true, the
    /// lanes' capacities from the registry's `[lanes]` (local 1 unless
    /// configured; the `driver` lane is never capped) set in the store for
    /// every server and a sweep of leftover worktrees (interrupted
    /// creations undone, oracle checkouts a crash left removed). With
    /// `config.run_worker` false only the workspace is made: the lanes, the
    /// sweep and the work are left to the servers that run battles.
    ///
    /// Its battles run once [`Arena::handler`] is given to a
    /// [`TaskWorker`] (one shared with the flow engine: see
    /// [`crate::worker`]).
    ///
    /// Errors: `invalid_input` for a project root that does not exist,
    /// `io` when the data directory cannot be created, the store's errors.
    pub async fn build(
        store: Arc<dyn Store>,
        registry: Registry,
        bus: Arc<EventBus>,
        config: ArenaConfig,
    ) -> Result<Arena, Error> {
        std::fs::create_dir_all(&config.data_dir)
            .map_err(|e| Error::io(format!("cannot create {}: {e}", config.data_dir.display())))?;
        let roots = if config.project_roots.is_empty() {
            vec![PathBuf::from("/")]
        } else {
            config.project_roots.clone()
        };
        let workspace: Arc<dyn Workspace> = Arc::new(GitWorkspace::new(GitWorkspaceConfig::new(
            config.data_dir.clone(),
            roots,
        ))?);
        // A handle that only reads and writes battles (run_worker false:
        // `coderig battle list`, a face beside a server) must not reset
        // the lanes other servers run under, nor sweep a worktree root a
        // running server uses.
        // The run drivers' lane is the flow engine's and never capped.
        for &lane in Lane::ALL
            .iter()
            .filter(|l| config.run_worker && l.takes_capacity())
        {
            let configured = registry.lanes().get(&lane).copied();
            let capacity = match lane {
                Lane::Local => Some(configured.unwrap_or(1)),
                _ => configured,
            };
            store.set_lane_capacity(lane, capacity).await?;
        }
        // The sweep of leftovers only when no other live process works in
        // this worktree root (a server beside `coderig run` on one data
        // directory): see `root`.
        let mut hold = match config.run_worker {
            true => Some(root::RootHold::take(&config.data_dir)?),
            false => None,
        };
        if let Some(hold) = hold.as_mut().filter(|hold| hold.alone()) {
            worker::sweep_checkouts(&workspace).await;
            hold.share()?;
        }
        let inner = Arc::new(Inner {
            store,
            registry,
            bus,
            workspace,
            config,
            tasks: TaskSet::new(),
            _root: hold,
        });
        Ok(Arena {
            inner,
            worker: None,
        })
    }

    /// The arena as a [`TaskHandler`] (contestant, judge and
    /// cross-examination tasks, lanes `local` and `cloud`, at most
    /// `config.max_concurrent` at once, live battles reconciled every
    /// `config.reconcile_every`), for a worker shared with other runtimes:
    /// `TaskWorker::start(store, bus, config, vec![engine.handler(),
    /// arena.handler()])`. Build the arena with [`Arena::build`] (and
    /// `run_worker` true) so that no second worker claims its tasks.
    pub fn handler(&self) -> Arc<dyn TaskHandler> {
        Arc::new(worker::ArenaHandler(self.inner.clone()))
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.inner.store
    }

    /// The event bus every state change of this runtime is published on.
    pub fn bus(&self) -> &Arc<EventBus> {
        &self.inner.bus
    }

    /// The agents.
    pub fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// The configuration.
    pub fn config(&self) -> &ArenaConfig {
        &self.inner.config
    }

    /// Checks and creates a battle (see the [module docs](self)) and
    /// returns it, `running`. Nothing is created when it fails.
    ///
    /// Errors (`invalid_input` unless said): an unknown identity (contestant
    /// or judge), fewer than 2 or more than 6 contestants, a repeated
    /// (identity, model), a coding battle without a project, a project that
    /// is not a git repository or lies outside the project roots, a base
    /// that does not resolve; the store's errors.
    pub async fn start_battle(&self, spec: BattleSpec) -> Result<BattleView, Error> {
        let id = start::create(&self.inner, spec).await?;
        self.inner.bus.notify();
        self.inner.tasks.wake();
        self.battle(&id).await
    }

    /// The battle `id` (`not_found_id` when there is none).
    pub async fn battle(&self, id: &str) -> Result<BattleView, Error> {
        let snapshot = self.snapshot(id).await?;
        view::battle_view(&snapshot)
    }

    async fn snapshot(&self, id: &str) -> Result<crate::store::WorkSnapshot, Error> {
        let snapshot = self.inner.store.work(id).await?;
        if snapshot.work.kind != WorkKind::Battle {
            return Err(Error::not_found_id("battle", id));
        }
        Ok(snapshot)
    }

    /// Battles, newest first, one page at a time.
    pub async fn list_battles(&self, filter: &BattleFilter) -> Result<BattlePage, Error> {
        let mut query = WorkFilter::new(WorkKind::Battle).limit(filter.limit.unwrap_or(50));
        if let Some(status) = filter.status {
            query = query.statuses(&[status.as_str()]);
        }
        if let Some(project) = &filter.project {
            let canonical = std::fs::canonicalize(project)
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| project.clone());
            query = query.data_field("project", &canonical);
        }
        if let Some(cursor) = &filter.cursor {
            query = query.cursor(cursor);
        }
        let page = self.inner.store.list_works(&query).await?;
        let mut battles = Vec::with_capacity(page.works.len());
        for work in &page.works {
            match self.battle(&work.id).await {
                Ok(view) => battles.push(view),
                // Deleted between the list and the read.
                Err(e) if e.kind() == crate::ErrorKind::NotFoundId => {}
                Err(e) => return Err(e),
            }
        }
        Ok(BattlePage {
            battles,
            next_cursor: page.next_cursor,
        })
    }

    /// Stops a running or judging battle: in one transaction it becomes
    /// `cancelled`, every contestant not yet settled `cancelled` (their
    /// `contestant_updated` before the battle's `battle_updated`), a judge
    /// or cross-examination in progress `error`, and every live task
    /// cancelled — so the first read after this returns shows no running
    /// contestant. Every agent of it in this process is stopped at once
    /// (other servers' at their next fenced write or heartbeat); the
    /// processes may still be dying when this returns. A finished battle
    /// is a `conflict` (HTTP 409).
    pub async fn stop(&self, id: &str) -> Result<BattleView, Error> {
        self.snapshot(id).await?;
        finish::stop_battle(&self.inner, id, now_ms()).await?;
        self.battle(id).await
    }

    /// Runs the analysis again (the judge's task is queued; the battle is
    /// `judging` until it ends). `force` lets it replace a human's winner.
    /// Only a completed battle can be analyzed again (`conflict`).
    pub async fn analyze(&self, id: &str, force: bool) -> Result<BattleView, Error> {
        let snapshot = self.snapshot(id).await?;
        if snapshot.work.status != BattleStatus::Completed.as_str() {
            return Err(Error::conflict(format!(
                "battle {id:?} is {}: only a completed battle can be analyzed again",
                snapshot.work.status
            ))
            .with_detail("status", snapshot.work.status.clone()));
        }
        let judge = snapshot
            .owners
            .iter()
            .find(|o| o.kind == OwnerKind::Judge)
            .ok_or_else(|| Error::internal(format!("battle {id:?} has no judge row")))?;
        let mut judge_data: JudgeData = decode("judge", &judge.id, &judge.data)?;
        judge_data.force = force;
        self.inner
            .store
            .transition(Transition {
                target: Target::Owner(judge.id.clone()),
                from: vec!["idle".into(), "done".into(), "error".into()],
                to: "pending".into(),
                data: Some(encode(&judge_data)),
                event: None,
            })
            .await
            .map_err(|e| busy(id, e))?;
        let data: BattleData = decode("battle", id, &snapshot.work.data)?;
        self.inner
            .store
            .transition(Transition {
                target: Target::Work(id.to_owned()),
                from: vec!["completed".into()],
                to: "judging".into(),
                data: None,
                event: Some(battle_event(id, BattleStatus::Judging, &data, None)?),
            })
            .await
            .map_err(|e| busy(id, e))?;
        self.inner.bus.notify();
        self.inner.tasks.wake();
        self.battle(id).await
    }

    /// The text of `analysis.md`; `not_found_id` until it is written.
    pub async fn analysis(&self, id: &str) -> Result<String, Error> {
        let view = self.battle(id).await?;
        if !view.analysis_ready {
            return Err(
                Error::not_found_id("analysis", id).with_detail("status", view.status.as_str())
            );
        }
        let path = PathBuf::from(&view.results_dir).join("analysis.md");
        std::fs::read_to_string(&path)
            .map_err(|e| Error::io(format!("cannot read {}: {e}", path.display())))
    }

    /// A human names the winner (`Some(contestant id)`) or clears it
    /// (`None`) of a completed battle; a later analysis keeps a human's
    /// winner unless forced. `manifest.json` is rewritten. An unknown
    /// contestant is `not_found_id`; a battle not completed a `conflict`.
    pub async fn set_winner(
        &self,
        id: &str,
        contestant: Option<&str>,
    ) -> Result<BattleView, Error> {
        let snapshot = self.snapshot(id).await?;
        if let Some(cid) = contestant {
            if !snapshot
                .owners
                .iter()
                .any(|o| o.kind == OwnerKind::Contestant && o.id == cid)
            {
                return Err(Error::not_found_id("contestant", cid).with_detail("battle_id", id));
            }
        }
        if snapshot.work.status != BattleStatus::Completed.as_str() {
            return Err(Error::conflict(format!(
                "battle {id:?} is {}: a winner can be named once it is completed",
                snapshot.work.status
            ))
            .with_detail("status", snapshot.work.status.clone()));
        }
        let mut data: BattleData = decode("battle", id, &snapshot.work.data)?;
        data.winner = contestant.map(|cid| WinnerRecord {
            contestant_id: cid.to_owned(),
            source: WinnerSource::Human,
        });
        self.inner
            .store
            .transition(Transition {
                target: Target::Work(id.to_owned()),
                from: vec!["completed".into()],
                to: "completed".into(),
                data: Some(encode(&data)),
                event: Some(battle_event(id, BattleStatus::Completed, &data, None)?),
            })
            .await
            .map_err(|e| busy(id, e))?;
        self.inner.bus.notify();
        let snapshot = self.snapshot(id).await?;
        let report = folder::battle_report(&snapshot)?;
        let judge = judge::judge_data(&snapshot)?;
        let analysis = folder::analysis_report(&report, &judge);
        folder::write_summary(
            std::path::Path::new(&data.results_dir),
            &report,
            analysis.as_ref(),
            false,
        )?;
        view::battle_view(&snapshot)
    }

    /// Asks `examiner` to cross-examine the analysis of a completed battle;
    /// returns the cross-examination's id (its row is `pending`, its task
    /// queued). A battle whose analysis is not written is a `conflict`; an
    /// unknown identity `invalid_input`.
    pub async fn cross_examine(&self, id: &str, examiner: AgentRef) -> Result<String, Error> {
        judge::request_cross_exam(&self.inner, id, examiner).await
    }

    /// The archived `diff.patch` of a coding contestant (`not_found_id`
    /// for an unknown contestant or one without an archived patch yet).
    pub async fn diff(&self, id: &str, contestant: &str) -> Result<Vec<u8>, Error> {
        self.archived(id, contestant, "diff.patch", "diff").await
    }

    /// A contestant's `result.md` as archived when its turn ended (who,
    /// outcome, benchmark, usage, evidence and the answer; `not_found_id`
    /// for an unknown contestant or one whose turn has not ended).
    pub async fn result(&self, id: &str, contestant: &str) -> Result<String, Error> {
        let bytes = self.archived(id, contestant, "result.md", "result").await?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// The file `name` of a contestant's results folder.
    async fn archived(
        &self,
        id: &str,
        contestant: &str,
        name: &str,
        what: &str,
    ) -> Result<Vec<u8>, Error> {
        let view = self.battle(id).await?;
        let c = view.contestant(contestant).ok_or_else(|| {
            Error::not_found_id("contestant", contestant).with_detail("battle_id", id)
        })?;
        let path = PathBuf::from(&view.results_dir).join(&c.dir).join(name);
        match std::fs::read(&path) {
            Ok(bytes) => Ok(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Err(Error::not_found_id(what, contestant)
                    .with_detail("battle_id", id)
                    .with_detail("status", c.status.as_str()))
            }
            Err(e) => Err(Error::io(format!("cannot read {}: {e}", path.display()))),
        }
    }

    /// Applies the winner's patch (or `contestant`'s) to the project's
    /// working tree. `conflict`, changing nothing: a patch that does not
    /// apply cleanly, a battle without a winner and no contestant named, a
    /// qa battle, a contestant without an archived patch. An unknown
    /// contestant is `not_found_id`.
    pub async fn apply(&self, id: &str, contestant: Option<&str>) -> Result<Applied, Error> {
        let view = self.battle(id).await?;
        // A qa battle has no patches: the request is sound, the battle's
        // kind refuses it.
        let project = match (&view.project, view.battle_type) {
            (Some(p), BattleType::Coding) => p.clone(),
            _ => {
                return Err(Error::conflict(format!(
                    "battle {id:?} is a {} battle: it has no patch to apply",
                    view.battle_type
                ))
                .with_detail("status", view.status.as_str()))
            }
        };
        let cid = match contestant {
            Some(c) => c.to_owned(),
            None => view.winner_contestant_id.clone().ok_or_else(|| {
                Error::conflict(format!(
                    "battle {id:?} has no winner: name the contestant whose patch to apply"
                ))
            })?,
        };
        let bytes = self.diff(id, &cid).await.map_err(|e| {
            // A contestant without an archived patch (cancelled before it
            // ran, or still running): the battle's state, not a missing
            // resource of the request.
            if e.kind() == crate::ErrorKind::NotFoundId
                && e.details().get("what").and_then(|w| w.as_str()) == Some("diff")
            {
                let status = e.details().get("status").cloned().unwrap_or_default();
                Error::conflict(format!(
                    "{}: that contestant has no archived patch to apply",
                    e.message()
                ))
                .with_detail("status", status)
            } else {
                e
            }
        })?;
        let patch_bytes = bytes.len() as u64;
        let patch = Patch::new(bytes, view.base_commit.clone());
        let workspace = self.inner.workspace.clone();
        let target = PathBuf::from(&project);
        tokio::task::spawn_blocking(move || workspace.apply(&patch, &target))
            .await
            .map_err(|e| Error::internal(format!("the apply task failed: {e}")))??;
        Ok(Applied {
            battle_id: id.to_owned(),
            contestant_id: cid,
            project,
            patch_bytes,
        })
    }

    /// Bradley–Terry ratings over completed battles with a winner, one
    /// board per battle type (only `battle_type` when given), of one
    /// project when given.
    pub async fn leaderboard(
        &self,
        battle_type: Option<BattleType>,
        project: Option<&str>,
    ) -> Result<Vec<Leaderboard>, Error> {
        leaderboard::leaderboard(self, battle_type, project).await
    }

    /// Waits until the battle is finished (`completed`, `failed` or
    /// `cancelled`, by the [`Watch`] end rule: every contestant final in
    /// the same transaction) or `timeout` passes, and returns it as it is
    /// then (check [`BattleView::is_finished`]). Reads the battle's history
    /// once and the battle once more, never per event. After the bus was
    /// shut down it returns the battle as it is. `not_found_id` for an
    /// unknown battle.
    ///
    /// [`Watch`]: crate::watch::Watch
    pub async fn wait(&self, id: &str, timeout: Option<Duration>) -> Result<BattleView, Error> {
        let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
        let mut watch = crate::watch::Watch::new(
            &self.inner.bus,
            crate::watch::Subject::Battle(id.to_owned()),
        );
        match watch.until_end(deadline).await {
            Ok(_) => {}
            Err(e) if e.kind() == crate::ErrorKind::Unavailable => {}
            Err(e) => return Err(e),
        }
        self.battle(id).await
    }

    /// Stops its worker (its own, when [`Arena::start`] made one) and its
    /// tasks: every agent this process runs for it is cancelled
    /// ([`crate::worker::StopReason::Shutdown`]) and its task left to be
    /// rescued by lease (another server, or this one restarted, finishes
    /// it); waits up to `grace` for them to end. On a handle without its
    /// own worker only the arena's tasks stop, and the shared worker
    /// claims none for it any more.
    pub async fn shutdown(&self, grace: Duration) {
        match &self.worker {
            Some(worker) => worker.shutdown(grace).await,
            None => self.inner.tasks.shutdown(grace).await,
        }
    }

    /// Tasks this process runs now.
    pub fn running_tasks(&self) -> usize {
        self.inner.tasks.len()
    }

    #[doc(hidden)]
    pub fn cancel_local(&self, battle_id: &str) {
        self.inner.tasks.cancel_work(battle_id);
    }
}

fn busy(id: &str, e: Error) -> Error {
    if e.kind() == crate::ErrorKind::Conflict {
        Error::conflict(format!(
            "battle {id:?} changed meanwhile (an analysis is already running?): try again"
        ))
    } else {
        e
    }
}
