//! `Rig`, `Turn` and `TurnEvents`: agent turns for JavaScript (the rig's
//! battles are in [`crate::battle`], its flow runs in [`crate::run`]).
//!
//! A `Rig` holds the core's [`Registry`] (built from a `coderig.toml`, from
//! `agents` in the file's JSON form, or from `./coderig.toml` when it
//! exists). `rig.runTurn(...)` starts a turn on napi's tokio runtime and
//! returns a `Turn` at once: `turn.events()` is an async iterator of the
//! core's events (`for await (const e of turn.events())`), `turn.wait()` a
//! Promise of the outcome, rejected with the one JS form of a
//! [`coderig::Error`] (`code` `AGENT` and `details.agent_error`,
//! `details.class`, ...) when the turn fails, and `turn.cancel()` stops it.
//! Events and outcomes are the core's serde JSON (snake_case keys), the
//! same objects on every face.
//!
//! The async iterator is napi's own (`#[napi(async_iterator)]` on
//! `TurnEvents`): no hand-written JS entry is needed.
//!
//! Thin: `Registry::open` chooses where the agents come from, the core's
//! `TurnOptions` decodes `runTurn`'s options (after the addon's JS → JSON
//! conversion), and the core's duration decoder reads `probeTimeout`, so a
//! bad option gets the same message and path as in Python
//! (`` `idle_timeout`: ... ``).
//!
//! At exit (`process.exit()` or the end of the script, also in a worker)
//! one `process.on('exit')` listener per environment, installed by its first
//! `Rig`, runs `Engine::shutdown` and `Arena::shutdown` on the engines and
//! arenas its rigs opened (runs and battle tasks left to lease rescue) and
//! `Registry::shutdown` on its rigs: turns
//! still running are cancelled and waited for, at most
//! `DEFAULT_SHUTDOWN_GRACE` in all,
//! blocking the exit that long, so no agent process group outlives Node.
//! (An env cleanup hook would not do: Node skips them on `process.exit()`.)
//! The listener holds the rigs weakly; a `Turn` holds its rig's registry,
//! so the turns of a collected `Rig` are stopped while their `Turn` lives.

use crate::helpers::{arg, decode_named, js, options, to_js_error, Res};
use crate::runtime::Runtime;
use coderig::agent::{
    Registry, TurnHandle, TurnOptions as CoreTurnOptions, DEFAULT_PROBE_TIMEOUT,
    DEFAULT_SHUTDOWN_GRACE,
};
use coderig::Error;
use napi::bindgen_prelude::{
    within_runtime_if_available, AsyncGenerator, FnArgs, Function, JsObjectValue, Object,
    PromiseRaw, Unknown,
};
use napi::Env;
use napi_derive::napi;
use serde::Deserialize;
use serde_json::Value;
use std::future::Future;
use std::path::Path;
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

/// `new Rig(options)`, decoded (`RigOptions`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RigArgs {
    data_dir: Option<String>,
    db: Option<String>,
    config: Option<String>,
    agents: Option<Value>,
    project_roots: Option<Vec<String>>,
    sandbox: Option<Value>,
}

/// The options of `rig.agents`, decoded (`AgentsOptions`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentsArgs {
    #[serde(
        default,
        deserialize_with = "coderig::agent::duration::deserialize_opt"
    )]
    probe_timeout: Option<Duration>,
}

/// The options object of a call as the JSON object the core decodes
/// (`null` fields left out, keys in snake_case).
pub(crate) fn options_json(env: &Env, value: Option<Unknown>) -> Res<Value> {
    Ok(Value::Object(options(env, value, "options")?))
}

/// What the exit listener stops of one rig: its turns and, once opened,
/// its arena and flow engine.
struct ExitTarget {
    registry: Weak<Registry>,
    runtime: Weak<Runtime>,
}

impl ExitTarget {
    fn alive(&self) -> bool {
        self.registry.strong_count() > 0 || self.runtime.strong_count() > 0
    }
}

/// The rigs of one Node environment (its instance data), shut down by its
/// `process.on('exit')` listener.
type Exits = Arc<std::sync::Mutex<Vec<ExitTarget>>>;

/// `process.on(event, listener)`.
type On<'env> = Function<'env, FnArgs<(&'static str, Function<'env, (), ()>)>, Unknown<'env>>;

/// Adds a rig (its `registry` and `runtime`) to what this environment
/// shuts down at exit, installing the environment's one
/// `process.on('exit')` listener with its first rig.
fn shut_down_at_exit(env: &Env, registry: &Arc<Registry>, runtime: &Arc<Runtime>) -> Res<()> {
    let target = ExitTarget {
        registry: Arc::downgrade(registry),
        runtime: Arc::downgrade(runtime),
    };
    if let Some(exits) = env.get_instance_data::<Exits>()? {
        let mut rigs = exits.lock().unwrap_or_else(|p| p.into_inner());
        rigs.retain(ExitTarget::alive);
        rigs.push(target);
        return Ok(());
    }
    let exits: Exits = Arc::new(std::sync::Mutex::new(vec![target]));
    env.set_instance_data(exits.clone(), (), |_| {})?;
    let listener = env.create_function_from_closure::<(), (), _>("coderigShutdown", move |_| {
        let rigs = std::mem::take(&mut *exits.lock().unwrap_or_else(|p| p.into_inner()));
        let registries = rigs.iter().filter_map(|r| r.registry.upgrade()).collect();
        // Only what a battle or run call opened: nothing is started at exit.
        let runtimes = rigs
            .iter()
            .filter_map(|r| r.runtime.upgrade())
            .filter(|r| r.opened())
            .collect();
        shutdown(registries, runtimes);
        Ok(())
    })?;
    let process: Object = env.get_global()?.get_named_property("process")?;
    let on: On = process.get_named_property("on")?;
    on.apply(process, ("exit", listener).into())?;
    Ok(())
}

/// Stops the flow engines' drivers (running steps cancelled, runs left to
/// be resumed by lease) and the arenas' workers (their agents cancelled,
/// their tasks left to lease rescue: the next process to open the store
/// finishes them), cancels the running turns of `rigs`, and blocks (at
/// most `DEFAULT_SHUTDOWN_GRACE` in all) until they ended.
fn shutdown(rigs: Vec<Arc<Registry>>, runtimes: Vec<Arc<Runtime>>) {
    let rigs: Vec<_> = rigs.into_iter().filter(|r| r.running_turns() > 0).collect();
    if rigs.is_empty() && runtimes.is_empty() {
        return;
    }
    rigs.iter().for_each(|r| r.cancel_all());
    let (done, ended) = std::sync::mpsc::channel();
    within_runtime_if_available(|| {
        tokio::spawn(async move {
            let deadline = tokio::time::Instant::now() + DEFAULT_SHUTDOWN_GRACE;
            for runtime in &runtimes {
                let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                runtime.shutdown(left).await;
            }
            for rig in &rigs {
                let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                rig.shutdown(left).await;
            }
            let _ = done.send(());
        })
    });
    let _ = ended.recv_timeout(DEFAULT_SHUTDOWN_GRACE + Duration::from_secs(1));
}

/// The core's JSON form of `value`.
pub(crate) fn to_value<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// The agents of a project and the turns they run.
#[napi]
pub struct Rig {
    registry: Arc<Registry>,
    pub(crate) runtime: Arc<Runtime>,
    data_dir: Option<String>,
    db: Option<String>,
    config: Option<String>,
}

#[napi]
impl Rig {
    /// A rig with the agents of `options.config` (a `coderig.toml` path) or
    /// `options.agents` (the file's `[agents]` table as an object), else of
    /// `./coderig.toml` when it exists, else none. The store (`db`, else
    /// SQLite in `dataDir`, default `./.coderig`) is opened by the first
    /// battle or run call, not here; the arena by the first battle call, the
    /// flow engine by the first run call. `projectRoots` confines coding
    /// battles' projects and flow steps' `cwd` / `workdir` (default: none,
    /// any path). A bad config throws
    /// `INVALID_INPUT` naming the file and the key
    /// (`agents.alice.script[0]: ...`); an unreadable file `IO`; both
    /// `config` and `agents` `INVALID_INPUT`.
    #[napi(constructor)]
    pub fn new(
        env: Env,
        #[napi(ts_arg_type = "RigOptions | null")] options: Option<Unknown>,
    ) -> napi::Result<Self> {
        js(&env, || {
            let args: RigArgs = decode_named("options", options_json(&env, options)?)?;
            let (mut registry, config) =
                Registry::open(args.config.as_deref().map(Path::new), args.agents)?;
            if let Some(sandbox) = args.sandbox {
                registry
                    .set_sandbox_mode(coderig::sandbox::SandboxConfig::from_json(sandbox)?.mode);
            }
            let runtime = Arc::new(Runtime::new(
                registry.clone(),
                args.data_dir.as_deref(),
                args.db.clone(),
                args.project_roots.unwrap_or_default(),
            ));
            let registry = Arc::new(registry);
            shut_down_at_exit(&env, &registry, &runtime)?;
            let config = config.map(|path| path.display().to_string());
            Ok(Rig {
                registry,
                runtime,
                data_dir: args.data_dir,
                db: args.db,
                config,
            })
        })
    }

    /// The `dataDir` the rig was given, or `null`.
    #[napi(getter)]
    pub fn data_dir(&self) -> Option<String> {
        self.data_dir.clone()
    }

    /// The `db` the rig was given, or `null`.
    #[napi(getter)]
    pub fn db(&self) -> Option<String> {
        self.db.clone()
    }

    /// The `coderig.toml` the agents came from (`config`, or
    /// `'coderig.toml'` when the default was read), or `null`.
    #[napi(getter)]
    pub fn config(&self) -> Option<String> {
        self.config.clone()
    }

    /// Every identity, sorted.
    #[napi(getter)]
    pub fn identities(&self) -> Vec<String> {
        self.registry.identities()
    }

    /// What every agent is: installed, reachable (HTTP agents are asked for
    /// their models, each for at most `options.probeTimeout`, default 2 s),
    /// its models. In the order of `identities`.
    #[napi(ts_return_type = "Promise<Array<AgentInfo>>")]
    pub fn agents<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "AgentsOptions | null")] options: Option<Unknown>,
    ) -> napi::Result<PromiseRaw<'env, Value>> {
        let args: AgentsArgs = js(env, || {
            Ok(coderig::json::decode_object(options_json(env, options)?)?)
        })?;
        let probe = args.probe_timeout.unwrap_or(DEFAULT_PROBE_TIMEOUT);
        let registry = Arc::clone(&self.registry);
        env.spawn_future(async move { Ok(to_value(&registry.info(probe).await)) })
    }

    /// Starts a turn of the agent `identity` with `model` (`null`: the
    /// agent's default) on `prompt`, and returns it at once. Throws
    /// `NOT_FOUND_ID` for an unknown identity (listing the known ones) and
    /// `INVALID_INPUT` for a bad argument or option (`options.access`,
    /// `options.idle_timeout`, ...).
    #[napi]
    pub fn run_turn(
        &self,
        env: Env,
        #[napi(ts_arg_type = "string")] identity: Unknown,
        #[napi(ts_arg_type = "string | null")] model: Option<Unknown>,
        #[napi(ts_arg_type = "string")] prompt: Unknown,
        #[napi(ts_arg_type = "TurnOptions | null")] options: Option<Unknown>,
    ) -> napi::Result<Turn> {
        js(&env, || {
            let identity: String = arg(&env, "identity", identity)?;
            let model: Option<String> = arg(&env, "model", model)?;
            let prompt: String = arg(&env, "prompt", prompt)?;
            let turn = CoreTurnOptions::from_json(options_json(&env, options)?)?
                .into_turn(prompt, model.clone());
            // start_turn spawns on the current tokio runtime: napi's.
            let handle = within_runtime_if_available(|| self.registry.start_turn(&identity, turn))?;
            Ok(Turn::new(
                handle,
                Arc::clone(&self.registry),
                identity,
                model,
            ))
        })
    }
}

/// What a `Turn` and its event iterators share.
struct Shared {
    handle: Mutex<TurnHandle>,
    cancel: CancellationToken,
    // Keeps the registry (and so its exit hook's target) alive while the
    // turn's objects live.
    _registry: Arc<Registry>,
}

/// A running turn: its events, its outcome, its cancel switch.
#[napi]
pub struct Turn {
    shared: Arc<Shared>,
    identity: String,
    model: Option<String>,
}

impl Turn {
    fn new(
        handle: TurnHandle,
        registry: Arc<Registry>,
        identity: String,
        model: Option<String>,
    ) -> Self {
        let cancel = handle.cancel_token();
        Turn {
            shared: Arc::new(Shared {
                handle: Mutex::new(handle),
                cancel,
                _registry: registry,
            }),
            identity,
            model,
        }
    }
}

#[napi]
impl Turn {
    /// The agent's identity.
    #[napi(getter)]
    pub fn identity(&self) -> String {
        self.identity.clone()
    }

    /// The model asked for (`null`: the agent's default).
    #[napi(getter)]
    pub fn model(&self) -> Option<String> {
        self.model.clone()
    }

    /// The turn's events, in order, as an async iterator: `for await
    /// (const event of turn.events())`. Each event is read once (two
    /// iterators share the stream); the iteration ends after the last event.
    /// Leaving the loop early does not stop the turn (`cancel` does).
    #[napi(ts_return_type = "AsyncIterable<AgentEvent>")]
    pub fn events(&self) -> TurnEvents {
        TurnEvents {
            shared: self.shared.clone(),
        }
    }

    /// The outcome, once the turn has ended. Events not yet read are
    /// dropped. A failed turn rejects with the core's error: `code` `AGENT`
    /// (`UNAVAILABLE` when the agent cannot do what the turn asks) and
    /// `details` a `TurnErrorDetails` (`agent_error`: `idle`, `cancelled`,
    /// `provider`, ...; `class`: `retry`, `fallback`, `stop` or `fatal`).
    /// Every call settles the same way. Like any pending I/O, a pending
    /// `wait()` keeps Node running until the turn ends.
    #[napi(ts_return_type = "Promise<TurnOutcome>")]
    pub fn wait<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, Value>> {
        let shared = self.shared.clone();
        env.spawn_future_with_callback(
            // The core's wait gives the same result every time.
            async move { Ok(shared.handle.lock().await.wait().await) },
            |env, outcome| match outcome {
                Ok(outcome) => Ok(to_value(&outcome)),
                Err(e) => Err(to_js_error(env, &Error::from(e))),
            },
        )
    }

    /// Asks the turn to stop: the agent ends with `agent_error`
    /// `cancelled`, its processes stopped. Idempotent.
    #[napi]
    pub fn cancel(&self) {
        self.shared.cancel.cancel();
    }

    /// Whether `cancel` was called.
    #[napi(getter)]
    pub fn cancelled(&self) -> bool {
        self.shared.cancel.is_cancelled()
    }
}

/// The events of a turn as an async iterator (what `turn.events()`
/// returns).
#[napi(async_iterator)]
pub struct TurnEvents {
    shared: Arc<Shared>,
}

#[napi]
impl AsyncGenerator for TurnEvents {
    // `turn.events()` declares the items as `AgentEvent`s.
    type Yield = Value;
    type Next = ();
    type Return = ();

    fn next(
        &mut self,
        _value: Option<Self::Next>,
    ) -> impl Future<Output = napi::Result<Option<Self::Yield>>> + Send + 'static {
        let shared = self.shared.clone();
        async move {
            let event = shared.handle.lock().await.next_event().await;
            Ok(event.map(|e| to_value(&e)))
        }
    }
}
