//! Agent turns for JavaScript: `rig.runTurn(...)` → `Turn`.
//!
//! `rig.runTurn(...)` starts a turn on napi's tokio runtime and returns a
//! `Turn` at once: `turn.events()` is an async iterator of the core's
//! events (`for await (const e of turn.events())`), `turn.wait()` a Promise
//! of the outcome, rejected with the one JS form of a [`coderig::Error`]
//! (`code` `AGENT` and `details.agent_error`, `details.class`, ...) when
//! the turn fails, and `turn.cancel()` stops it. Events and outcomes are
//! the core's serde JSON (snake_case keys), the same objects on every face.
//!
//! The async iterator is napi's own (`#[napi(async_iterator)]` on
//! `TurnEvents`): no hand-written JS entry is needed. The core's
//! `TurnOptions` decodes `runTurn`'s options, so a bad option gets the same
//! message and path as in Python (`` `idle_timeout`: ... ``).

use crate::helpers::{arg, js, to_js_error};
use crate::rig::{options_json, to_value, Rig};
use coderig::agent::{Registry, TurnHandle, TurnOptions as CoreTurnOptions};
use coderig::Error;
use napi::bindgen_prelude::{within_runtime_if_available, AsyncGenerator, PromiseRaw, Unknown};
use napi::Env;
use napi_derive::napi;
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

#[napi]
impl Rig {
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
            let handle =
                within_runtime_if_available(|| self.registry().start_turn(&identity, turn))?;
            Ok(Turn::new(
                handle,
                Arc::clone(self.registry()),
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
