//! `Rig`, `Turn` and `TurnEvents`: agent turns for JavaScript.
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

use crate::helpers::{arg, decode_named, js, options, to_js_error, Res};
use coderig::agent::config::RigConfig;
use coderig::agent::duration::{parse_duration, seconds};
use coderig::agent::{Access, AgentError, Registry, TurnHandle, TurnOutcome};
use coderig::Error;
use napi::bindgen_prelude::{within_runtime_if_available, AsyncGenerator, PromiseRaw, Unknown};
use napi::Env;
use napi_derive::napi;
use serde::de::{self, Deserializer};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Mutex, OnceCell};
use tokio_util::sync::CancellationToken;

/// How long `rig.agents()` waits for an HTTP agent's model list by default.
/// (Python's `Rig.agents` waits as long.)
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// The config a rig reads when given neither `config` nor `agents`.
const DEFAULT_CONFIG: &str = "coderig.toml";

/// A duration as the runtime's options spell it: seconds (a number) or a
/// string with a unit, read by the core's [`parse_duration`] / [`seconds`].
struct Span(Duration);

impl<'de> Deserialize<'de> for Span {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::Number(n) => n.as_f64().and_then(seconds).map(Span).ok_or_else(|| {
                de::Error::custom(format!(
                    "bad duration {n}: expected a non-negative number of seconds"
                ))
            }),
            Value::String(text) => parse_duration(&text).map(Span).map_err(de::Error::custom),
            other => Err(de::Error::custom(format!(
                "invalid type: {}, expected a number of seconds or a duration string (\"90s\")",
                coderig::json::describe(&other)
            ))),
        }
    }
}

/// `new Rig(options)`, decoded (`RigOptions`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RigArgs {
    data_dir: Option<String>,
    db: Option<String>,
    config: Option<String>,
    agents: Option<Value>,
}

/// The options of `rig.runTurn`, decoded (`TurnOptions`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TurnArgs {
    workdir: Option<PathBuf>,
    access: Option<Access>,
    timeout: Option<Span>,
    idle_timeout: Option<Span>,
    system: Option<String>,
    env: Option<BTreeMap<String, String>>,
}

/// The options of `rig.agents`, decoded (`AgentsOptions`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentsArgs {
    probe_timeout: Option<Span>,
}

/// An options object decoded strictly as a `T` (paths read
/// `options.idle_timeout`).
fn options_of<T: for<'de> Deserialize<'de>>(env: &Env, value: Option<Unknown>) -> Res<T> {
    decode_named("options", Value::Object(options(env, value, "options")?))
}

/// The registry `args` name and the file it came from: a `coderig.toml`,
/// the `agents` table, or `./coderig.toml` when it exists (else none).
fn registry(args: &RigArgs) -> Res<(Registry, Option<String>)> {
    let registry = match (&args.config, &args.agents) {
        (Some(_), Some(_)) => {
            return Err(Error::invalid_input(
                "`options.config` and `options.agents` are both given; a rig takes its agents from one of them",
            )
            .into())
        }
        (Some(path), None) => (Registry::load(Path::new(path))?, Some(path.clone())),
        (None, Some(agents)) => (
            Registry::from_config(&RigConfig::from_json(json!({ "agents": agents }))?)?,
            None,
        ),
        (None, None) if Path::new(DEFAULT_CONFIG).is_file() => (
            Registry::load(Path::new(DEFAULT_CONFIG))?,
            Some(DEFAULT_CONFIG.to_owned()),
        ),
        (None, None) => (Registry::new(), None),
    };
    Ok(registry)
}

/// The core's JSON form of `value`.
fn to_value<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// The agents of a project and the turns they run.
#[napi]
pub struct Rig {
    registry: Registry,
    data_dir: Option<String>,
    db: Option<String>,
    config: Option<String>,
}

#[napi]
impl Rig {
    /// A rig with the agents of `options.config` (a `coderig.toml` path) or
    /// `options.agents` (the file's `[agents]` table as an object), else of
    /// `./coderig.toml` when it exists, else none. `dataDir` and `db` are
    /// kept for the store. A bad config throws `INVALID_INPUT` naming the
    /// file and the key (`agents.alice.script[0]: ...`); an unreadable file
    /// `IO`; both `config` and `agents` `INVALID_INPUT`.
    #[napi(constructor)]
    pub fn new(
        env: Env,
        #[napi(ts_arg_type = "RigOptions | null")] options: Option<Unknown>,
    ) -> napi::Result<Self> {
        js(&env, || {
            let args: RigArgs = options_of(&env, options)?;
            let (registry, config) = registry(&args)?;
            Ok(Rig {
                registry,
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
        let args: AgentsArgs = js(env, || options_of(env, options))?;
        let probe = args.probe_timeout.map_or(PROBE_TIMEOUT, |s| s.0);
        let registry = self.registry.clone();
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
            let mut turn = coderig::agent::Turn::new(arg::<String>(&env, "prompt", prompt)?);
            turn.model = model.clone();
            let o: TurnArgs = options_of(&env, options)?;
            turn.workdir = o.workdir;
            turn.access = o.access.unwrap_or_default();
            turn.timeout = o.timeout.map(|s| s.0);
            turn.idle_timeout = o.idle_timeout.map(|s| s.0);
            turn.system = o.system;
            turn.env = o.env.unwrap_or_default();
            // start_turn spawns on the current tokio runtime: napi's.
            let handle = within_runtime_if_available(|| self.registry.start_turn(&identity, turn))?;
            Ok(Turn::new(handle, identity, model))
        })
    }
}

/// What a `Turn` and its event iterators share.
struct Shared {
    handle: Mutex<TurnHandle>,
    cancel: CancellationToken,
    outcome: OnceCell<Result<TurnOutcome, AgentError>>,
}

/// A running turn: its events, its outcome, its cancel switch.
#[napi]
pub struct Turn {
    shared: Arc<Shared>,
    identity: String,
    model: Option<String>,
}

impl Turn {
    fn new(handle: TurnHandle, identity: String, model: Option<String>) -> Self {
        let cancel = handle.cancel_token();
        Turn {
            shared: Arc::new(Shared {
                handle: Mutex::new(handle),
                cancel,
                outcome: OnceCell::new(),
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
            async move {
                let outcome = shared
                    .outcome
                    .get_or_init(|| async { shared.handle.lock().await.wait().await })
                    .await;
                Ok(outcome.clone())
            },
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
