//! `Rig`: the runtime for JavaScript. Its agent turns are in
//! [`crate::turn`], its battles in [`crate::battle`], its flow runs in
//! [`crate::run`]; what happens at process exit in `exit.rs`.
//!
//! A `Rig` holds the core's [`Registry`] (built from a `coderig.toml`, from
//! `agents` in the file's JSON form, or from `./coderig.toml` when it
//! exists), the [`RigConfig`] of its core [`coderig::rig::Rig`] and, once
//! a battle or run call opened it, that core rig — nothing else of the
//! runtime's wiring: the core rig opens the store, the bus, the arena and
//! the flow engine, once, on napi's tokio runtime. A rig that only runs
//! turns opens no store.
//!
//! Project roots are the core's policy ([`resolve_project_roots`]),
//! resolved when the `Rig` is built (so a later `process.chdir` moves
//! nothing): each canonicalized, none given meaning the current directory.
//!
//! Thin: `Registry::open` chooses where the agents come from, the core's
//! decoders read the options (after the addon's JS → JSON conversion), so
//! a bad option gets the same message and path as in Python.

use crate::exit::{shut_down_at_exit, Opened};
use crate::helpers::{decode_named, js, options, Res};
use coderig::agent::{AgentsOptions, Registry, DEFAULT_SHUTDOWN_GRACE};
use coderig::rig::{Rig as CoreRig, RigConfig, RigOptions};
use coderig::Error;
use napi::bindgen_prelude::{PromiseRaw, Unknown};
use napi::Env;
use napi_derive::napi;
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// The options object of a call as the JSON object the core decodes
/// (`null` fields left out, keys in snake_case).
pub(crate) fn options_json(env: &Env, value: Option<Unknown>) -> Res<Value> {
    Ok(Value::Object(options(env, value, "options")?))
}

/// The core's JSON form of `value`.
pub(crate) fn to_value<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// The agents of a project, the turns they run, and its battles and runs.
#[napi]
pub struct Rig {
    registry: Arc<Registry>,
    settings: Arc<RigConfig>,
    core: Opened,
    data_dir: Option<String>,
    db: Option<String>,
    config: Option<String>,
}

impl Rig {
    /// The core rig, opened by the first call that needs it (one opening
    /// even when calls race; a failed opening is retried by the next call).
    /// The future must run on napi's tokio runtime (`promise` spawns it
    /// there): the bus and the workers are spawned on it.
    pub(crate) fn open(&self) -> impl Future<Output = Result<CoreRig, Error>> + Send + 'static {
        let (settings, core) = (self.settings.clone(), self.core.clone());
        async move {
            let rig = core
                .get_or_try_init(|| CoreRig::open((*settings).clone()))
                .await?;
            if rig.is_shut_down() {
                return Err(Error::unavailable(
                    "this Rig is closed: open a new Rig for more battles and runs",
                ));
            }
            Ok(rig.clone())
        }
    }

    /// The agents (what turns run on).
    pub(crate) fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }
}

#[napi]
impl Rig {
    /// A rig with the agents of `options.config` (a `coderig.toml` path) or
    /// `options.agents` (the file's `[agents]` table as an object), else of
    /// `./coderig.toml` when it exists, else none. The store (`db`, else
    /// SQLite in `dataDir`, default `./.coderig`), the arena and the flow
    /// engine are opened by the first battle or run call, not here.
    /// `projectRoots` confines coding battles' projects and flow steps'
    /// `cwd` / `workdir`; none given: the current directory. A bad config
    /// throws `INVALID_INPUT` naming the file and the key
    /// (`agents.alice.script[0]: ...`); an unreadable file `IO`; both
    /// `config` and `agents` `INVALID_INPUT`; a project root that does not
    /// exist or is not a directory `INVALID_INPUT` at `project_roots[i]`.
    #[napi(constructor)]
    pub fn new(
        env: Env,
        #[napi(ts_arg_type = "RigOptions | null")] options: Option<Unknown>,
    ) -> napi::Result<Self> {
        js(&env, || {
            let given: RigOptions = decode_named("options", options_json(&env, options)?)?;
            let (data_dir, db) = (given.data_dir.clone(), given.db.clone());
            let (settings, config) = given.into_config()?;
            // A clone shares the turns (their cancel token and tracker):
            // the core rig's shutdown stops the turns of `run_turn` too.
            let registry = settings.agents.clone();
            let registry = Arc::new(registry);
            let core = Opened::default();
            shut_down_at_exit(&env, &registry, &core)?;
            Ok(Rig {
                registry,
                settings: Arc::new(settings),
                core,
                data_dir: data_dir.map(|d| d.display().to_string()),
                db,
                config: config.map(|path| path.display().to_string()),
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
        let given: AgentsOptions = js(env, || {
            Ok(coderig::json::decode_object(options_json(env, options)?)?)
        })?;
        let probe = given.probe();
        let registry = Arc::clone(&self.registry);
        env.spawn_future(async move { Ok(to_value(&registry.info(probe).await)) })
    }

    /// Stops what this rig runs, in the core's order: its runs' drivers
    /// and battle tasks (left in the store, resumed by the next rig on it
    /// through their leases), its agent turns (process groups stopped), the
    /// event bus last — waiting at most `graceMs` (default 10 s) before the
    /// rest is killed. Resolves when all of it ended. Later battle and run
    /// calls reject with `UNAVAILABLE`; closing twice is a no-op. What a
    /// rig left open is stopped when Node exits anyway.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn close<'env>(
        &self,
        env: &'env Env,
        grace_ms: Option<f64>,
    ) -> napi::Result<PromiseRaw<'env, ()>> {
        let grace = match grace_ms {
            None => DEFAULT_SHUTDOWN_GRACE,
            Some(ms) if ms.is_finite() && ms >= 0.0 => Duration::from_secs_f64(ms / 1000.0),
            Some(ms) => {
                return Err(napi::Error::new(
                    napi::Status::InvalidArg,
                    format!("graceMs must be a number of milliseconds >= 0, not {ms}"),
                ))
            }
        };
        let (core, registry) = (self.core.clone(), Arc::clone(&self.registry));
        env.spawn_future(async move {
            match core.get() {
                Some(rig) => rig.shutdown(grace).await,
                None => {
                    registry.shutdown(grace).await;
                }
            }
            Ok(())
        })
    }
}
