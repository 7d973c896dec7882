//! The registry (feature `runtime`): identities → agents, their lanes and
//! defaults; built from `coderig.toml` or in code.

use super::config::{AgentKind, AgentSpec, ConfigFile};
use super::{Agent, AgentError, AgentErrorKind, AgentEvent, ScriptedAgent, Turn, TurnOutcome};
use crate::error::{Error, ErrorKind};
use crate::sandbox::SandboxMode;
use crate::task::Lane;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// One registered agent: the agent and what the registry knows of it.
#[derive(Clone)]
pub struct AgentEntry {
    /// What it is.
    pub kind: AgentKind,
    /// The CLI preset (`claude`, ...) for kind `cli`.
    pub preset: Option<String>,
    /// The lane its turns run in.
    pub lane: Lane,
    /// The agent.
    pub agent: Arc<dyn Agent>,
    /// The binary, for CLI agents (what "installed" checks).
    pub command: Option<PathBuf>,
    /// The `PATH` the binary is looked up on (the entry's own `env.PATH`,
    /// else the process's).
    pub path_env: Option<String>,
    /// Models declared in the config (listed when the backend cannot say).
    pub models: Vec<String>,
    /// Default wall-clock timeout of a turn.
    pub timeout: Option<Duration>,
    /// Default idle timeout of a turn.
    pub idle_timeout: Option<Duration>,
}

impl AgentEntry {
    /// An entry for `agent` of `kind` in the cloud lane, no defaults.
    pub fn new(kind: AgentKind, agent: Arc<dyn Agent>) -> Self {
        AgentEntry {
            kind,
            preset: None,
            lane: Lane::Cloud,
            agent,
            command: None,
            path_env: None,
            models: vec![],
            timeout: None,
            idle_timeout: None,
        }
    }

    /// Sets the lane.
    pub fn lane(mut self, lane: Lane) -> Self {
        self.lane = lane;
        self
    }
}

impl std::fmt::Debug for AgentEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentEntry")
            .field("kind", &self.kind)
            .field("preset", &self.preset)
            .field("lane", &self.lane)
            .field("command", &self.command)
            .finish_non_exhaustive()
    }
}

/// What `agents()` / `GET /api/agents` / `coderig agents` report of one agent.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AgentInfo {
    /// The identity (`claude`, `local`, ...).
    pub identity: String,
    /// `cli`, `openai`, `scripted` or `native` (an [`AgentKind`]'s name).
    #[cfg_attr(feature = "openapi", schema(value_type = AgentKind))]
    pub kind: String,
    /// The CLI preset, for kind `cli`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// `local` or `cloud` (a [`Lane`]'s name).
    #[cfg_attr(feature = "openapi", schema(value_type = Lane))]
    pub lane: String,
    /// The binary as resolved on `PATH` (CLI agents).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Whether the agent can be started: the CLI's binary exists and is
    /// executable; always true for HTTP and scripted agents.
    pub installed: bool,
    /// Whether the backend answered just now (`/v1/models` for HTTP
    /// agents); `null` when it cannot be known without running a turn (CLIs).
    #[cfg_attr(feature = "openapi", schema(required))]
    pub reachable: Option<bool>,
    /// The models it serves (the backend's list, else the config's).
    pub models: Vec<String>,
    /// Why it is not installed or not reachable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What confines the processes its turns start: the rig's sandbox
    /// mode (`enforce`, `auto` or `off`, the config's `[sandbox] mode`)
    /// for the agents that start processes (a CLI agent's CLI, the native
    /// agent's `run` commands); `none` for those that start none (HTTP and
    /// scripted agents work inside coderig's own process).
    #[cfg_attr(feature = "openapi", schema(pattern = "^(enforce|auto|off|none)$"))]
    pub sandbox: String,
}

/// The file [`Registry::open`] reads when given neither a file nor agents.
pub const DEFAULT_CONFIG: &str = "coderig.toml";

/// How long `agents()` waits for an HTTP agent's model list by default.
pub const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// What a face's `agents()` takes ([`Registry::info`]'s probe), decoded
/// strictly — an unknown key is refused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AgentsOptions {
    /// How long an HTTP agent may take to list its models (seconds or a
    /// duration string; default 2 s).
    #[serde(default, deserialize_with = "super::duration::deserialize_opt")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<crate::json::schema::DurationInput>))]
    pub probe_timeout: Option<Duration>,
}

impl AgentsOptions {
    /// The probe's limit: the one given, else [`DEFAULT_PROBE_TIMEOUT`].
    pub fn probe(&self) -> Duration {
        self.probe_timeout.unwrap_or(DEFAULT_PROBE_TIMEOUT)
    }
}

/// How long [`Registry::shutdown`] waits by default for the cancelled
/// turns to end: a CLI's kill grace (5 s from SIGTERM to SIGKILL) and a
/// margin, so a face exiting waits until its agents' process groups are gone.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(6);

/// Identities → agents. Cheap to clone (entries are shared).
#[derive(Debug, Clone, Default)]
pub struct Registry {
    entries: BTreeMap<String, AgentEntry>,
    lanes: BTreeMap<Lane, u32>,
    sandbox: SandboxMode,
    retain: Option<Duration>,
    // The parent of every turn's token: `cancel_all` stops them at once
    // (a binding's interpreter exit, a server's shutdown).
    turns: CancellationToken,
    // Every turn's task, so `shutdown` can wait until they have ended.
    tasks: TaskTracker,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers (or replaces) `identity`.
    pub fn insert(&mut self, identity: impl Into<String>, entry: AgentEntry) -> &mut Self {
        self.entries.insert(identity.into(), entry);
        self
    }

    /// The registry a validated config describes. Errors: `invalid_input`
    /// for a config [`ConfigFile::validate`] refuses; `unavailable` for a
    /// kind this build lacks (kind `openai` without the `http` feature).
    pub fn from_config(config: &ConfigFile) -> Result<Registry, Error> {
        config.validate()?;
        let mut registry = Registry {
            lanes: config.lanes.clone(),
            sandbox: config.sandbox.mode,
            retain: config.store.retain,
            ..Registry::default()
        };
        for (identity, spec) in &config.agents {
            registry.insert(identity.clone(), build_entry(identity, spec)?);
        }
        Ok(registry)
    }

    /// Reads and validates a `coderig.toml`.
    pub fn from_toml_str(text: &str) -> Result<Registry, Error> {
        Registry::from_config(&ConfigFile::from_toml_str(text)?)
    }

    /// Reads `path` (a `coderig.toml`). Errors: `io` when it cannot be read
    /// (the message names the path), then as [`Registry::from_toml_str`].
    pub fn load(path: &Path) -> Result<Registry, Error> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::io(format!("cannot read {}: {e}", path.display())))?;
        Registry::from_toml_str(&text).map_err(|e| e.in_file(&path.display().to_string()))
    }

    /// The registry every face opens: from the `config` file, or from
    /// `agents` (the JSON form of the file's `agents` table), or — with
    /// neither — from `./coderig.toml` when it exists, else empty. Returns
    /// the file it read, if any. Errors: `invalid_input` when both are
    /// given; then as [`Registry::load`] / [`ConfigFile::from_json`].
    pub fn open(
        config: Option<&Path>,
        agents: Option<serde_json::Value>,
    ) -> Result<(Registry, Option<PathBuf>), Error> {
        match (config, agents) {
            (Some(_), Some(_)) => Err(Error::invalid_input(
                "give either a config file or an agents table, not both",
            )),
            (Some(path), None) => Ok((Registry::load(path)?, Some(path.to_path_buf()))),
            (None, Some(agents)) => {
                let config = ConfigFile::from_json(serde_json::json!({ "agents": agents }))?;
                Ok((Registry::from_config(&config)?, None))
            }
            (None, None) => {
                let default = Path::new(DEFAULT_CONFIG);
                if default.is_file() {
                    Ok((Registry::load(default)?, Some(default.to_path_buf())))
                } else {
                    Ok((Registry::new(), None))
                }
            }
        }
    }

    /// The sandbox mode of every process this registry's runtime starts —
    /// agent turns that set none, the arena's oracle, flow command steps
    /// (the config's `[sandbox] mode`, `enforce` by default).
    pub fn sandbox_mode(&self) -> SandboxMode {
        self.sandbox
    }

    /// Sets [`Registry::sandbox_mode`].
    pub fn set_sandbox_mode(&mut self, mode: SandboxMode) -> &mut Self {
        self.sandbox = mode;
        self
    }

    /// How long the store keeps finished battles and runs and old events
    /// (the config's `[store] retain`; `None`: forever).
    pub fn retain(&self) -> Option<Duration> {
        self.retain
    }

    /// Sets [`Registry::retain`]. Checked where it is used
    /// ([`crate::store::Store::compact`] refuses under a minute).
    pub fn set_retain(&mut self, retain: Option<Duration>) -> &mut Self {
        self.retain = retain;
        self
    }

    /// Lane capacities the config set.
    pub fn lanes(&self) -> &BTreeMap<Lane, u32> {
        &self.lanes
    }

    /// Sets `lane`'s capacity, over the config's `[lanes]` (what the arena
    /// writes to the store at start for every server sharing it). The
    /// `driver` lane takes none: the arena never writes one for it (the
    /// config refuses `[lanes] driver`).
    pub fn set_lane_capacity(&mut self, lane: Lane, capacity: u32) -> &mut Self {
        self.lanes.insert(lane, capacity);
        self
    }

    /// Every identity, sorted.
    pub fn identities(&self) -> Vec<String> {
        self.entries.keys().cloned().collect()
    }

    /// The entry of `identity`. Errors: `not_found_id` listing the known
    /// identities.
    pub fn get(&self, identity: &str) -> Result<&AgentEntry, Error> {
        self.entries.get(identity).ok_or_else(|| {
            let known = if self.entries.is_empty() {
                "none are configured (add [agents.<identity>] to coderig.toml)".to_string()
            } else {
                format!("configured: {}", self.identities().join(", "))
            };
            Error::new(
                ErrorKind::NotFoundId,
                format!("no agent {identity:?}; {known}"),
            )
            .with_detail("what", "agent")
            .with_detail("id", identity)
            .with_detail("known", self.identities())
        })
    }

    /// Starts a turn of `identity` on the current tokio runtime, with the
    /// entry's default timeouts where the turn sets none. The handle
    /// streams the events and gives the outcome; dropping the handle does
    /// not stop the turn, [`TurnHandle::cancel`] does.
    pub fn start_turn(&self, identity: &str, mut turn: Turn) -> Result<TurnHandle, Error> {
        let entry = self.get(identity)?;
        turn.timeout = turn.timeout.or(entry.timeout);
        turn.idle_timeout = turn.idle_timeout.or(entry.idle_timeout);
        turn.sandbox = turn.sandbox.or(Some(self.sandbox));
        let agent = entry.agent.clone();
        let (tx, rx) = mpsc::channel(256);
        let cancel = self.turns.child_token();
        let token = cancel.clone();
        let join = self
            .tasks
            .spawn(async move { agent.run(turn, tx, token).await });
        Ok(TurnHandle {
            events: rx,
            cancel,
            join: Some(join),
            outcome: None,
        })
    }

    /// Cancels every turn this registry (or a clone of it) started and has
    /// not finished: their agents end with `cancelled` and stop their
    /// processes. Turns started afterwards are cancelled at once, so call
    /// it at shutdown only.
    pub fn cancel_all(&self) {
        self.turns.cancel();
    }

    /// How many turns this registry (or a clone of it) started are still
    /// running.
    pub fn running_turns(&self) -> usize {
        self.tasks.len()
    }

    /// [`Registry::cancel_all`], then waits until every turn has ended (its
    /// agent's processes stopped), at most `grace`
    /// ([`DEFAULT_SHUTDOWN_GRACE`] outlasts a CLI's kill grace). Returns
    /// whether they all ended in time. What a face runs at exit, so no agent
    /// process group outlives it.
    pub async fn shutdown(&self, grace: Duration) -> bool {
        self.cancel_all();
        self.tasks.close();
        tokio::time::timeout(grace, self.tasks.wait()).await.is_ok()
    }

    /// What every agent is: installed, reachable, its models. HTTP agents
    /// are asked for their models concurrently, each for at most
    /// `probe_timeout`.
    pub async fn info(&self, probe_timeout: Duration) -> Vec<AgentInfo> {
        let mut probes = tokio::task::JoinSet::new();
        for (i, (identity, entry)) in self.entries.iter().enumerate() {
            let (identity, entry) = (identity.clone(), entry.clone());
            let sandbox = match entry.kind {
                AgentKind::Cli | AgentKind::Native => self.sandbox.as_str(),
                AgentKind::Openai | AgentKind::Scripted => "none",
            };
            probes.spawn(async move {
                let mut info = probe(identity, entry, probe_timeout).await;
                info.sandbox = sandbox.to_owned();
                (i, info)
            });
        }
        let mut out = vec![];
        while let Some(done) = probes.join_next().await {
            if let Ok(found) = done {
                out.push(found);
            }
        }
        out.sort_by_key(|(i, _)| *i);
        out.into_iter().map(|(_, info)| info).collect()
    }
}

async fn probe(identity: String, entry: AgentEntry, probe_timeout: Duration) -> AgentInfo {
    let mut info = AgentInfo {
        identity,
        kind: entry.kind.as_str().to_string(),
        preset: entry.preset.clone(),
        lane: entry.lane.as_str().to_string(),
        command: None,
        installed: true,
        reachable: None,
        models: entry.models.clone(),
        error: None,
        sandbox: String::new(),
    };
    match entry.kind {
        AgentKind::Cli => {
            let command = entry.command.clone().unwrap_or_default();
            match find_executable(&command, entry.path_env.as_deref()) {
                Some(found) => info.command = Some(found.display().to_string()),
                None => {
                    info.installed = false;
                    info.error = Some(format!(
                        "{} not found on PATH or not executable",
                        command.display()
                    ));
                }
            }
        }
        AgentKind::Openai | AgentKind::Scripted | AgentKind::Native => {
            match tokio::time::timeout(probe_timeout, entry.agent.models()).await {
                Ok(Ok(models)) => {
                    info.reachable = Some(true);
                    if !models.is_empty() {
                        info.models = models;
                    }
                }
                Ok(Err(e)) => {
                    info.reachable = Some(false);
                    info.error = Some(e.message);
                }
                Err(_) => {
                    info.reachable = Some(false);
                    info.error = Some(format!("no answer within {probe_timeout:?}"));
                }
            }
        }
    }
    info
}

/// A running turn: its events, its cancel switch, its outcome.
#[derive(Debug)]
pub struct TurnHandle {
    events: mpsc::Receiver<AgentEvent>,
    cancel: CancellationToken,
    join: Option<JoinHandle<Result<TurnOutcome, AgentError>>>,
    outcome: Option<Result<TurnOutcome, AgentError>>,
}

impl TurnHandle {
    /// The next event; `None` once the turn has sent its last.
    pub async fn next_event(&mut self) -> Option<AgentEvent> {
        self.events.recv().await
    }

    /// Asks the turn to stop (the agent ends with `cancelled`, its
    /// processes stopped).
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// A clone of the turn's cancellation token.
    pub fn cancel_token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// Waits for the outcome (events not yet read are dropped). Every
    /// later call gives the same result; a turn whose task panicked is an
    /// `AgentError` of kind `protocol`.
    pub async fn wait(&mut self) -> Result<TurnOutcome, AgentError> {
        if let Some(done) = &self.outcome {
            return done.clone();
        }
        self.events.close();
        while self.events.recv().await.is_some() {}
        let done = match self.join.take() {
            Some(join) => join.await.unwrap_or_else(|e| {
                Err(AgentError::new(
                    AgentErrorKind::Protocol,
                    format!("the turn's task failed: {e}"),
                ))
            }),
            None => Err(AgentError::new(
                AgentErrorKind::Protocol,
                "the turn has no task",
            )),
        };
        self.outcome = Some(done.clone());
        done
    }
}

/// The entry one `[agents.<identity>]` table describes.
fn build_entry(identity: &str, spec: &AgentSpec) -> Result<AgentEntry, Error> {
    let agent: Arc<dyn Agent> = match spec.kind {
        AgentKind::Scripted => {
            let mut agent = ScriptedAgent::new(spec.script.clone().unwrap_or_default());
            for (model, script) in &spec.scripts {
                agent = agent.with_model_script(model.clone(), script.clone());
            }
            Arc::new(agent)
        }
        AgentKind::Cli => super::build_cli_agent(identity, spec)?,
        AgentKind::Openai => super::build_openai_agent(identity, spec)?,
        AgentKind::Native => super::build_native_agent(identity, spec)?,
    };
    let mut entry = AgentEntry::new(spec.kind, agent);
    // A native agent on a server of this machine shares the local lane:
    // one GPU serves one generation at a time, whatever the battle.
    let local = spec.kind == AgentKind::Native
        && spec
            .base_url
            .as_deref()
            .is_some_and(super::native::config::is_loopback_url);
    entry.lane = spec
        .lane
        .unwrap_or(if local { Lane::Local } else { Lane::Cloud });
    entry.preset = spec.preset.clone();
    entry.models = spec.models.clone();
    entry.timeout = spec.timeout;
    entry.idle_timeout = spec.idle_timeout;
    entry.path_env = spec.env.get("PATH").cloned();
    if spec.kind == AgentKind::Cli {
        let default = spec.preset.as_deref().unwrap_or_default();
        entry.command = Some(
            spec.command
                .clone()
                .unwrap_or_else(|| PathBuf::from(default)),
        );
    }
    Ok(entry)
}

/// `command` when it names an executable file (a path with a `/`), else
/// the first executable `command` on `path_env` (or the process's `PATH`).
pub fn find_executable(command: &Path, path_env: Option<&str>) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if command.as_os_str().is_empty() {
        return None;
    }
    if command.components().count() > 1 {
        return executable(command).then(|| command.to_path_buf());
    }
    let path = path_env
        .map(str::to_string)
        .or_else(|| std::env::var("PATH").ok())?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(command))
        .find(|p| executable(p))
}
