//! `battle.events()` and `run.events()`: the core's [`Watch`] as the state
//! behind one napi async iterator ([`WatchEvents`]). Following (subscribe, replay, live,
//! de-duplicate) and the one end rule are the core's; this room only
//! converts each event to its JSON object (a stored one with its `seq` and
//! `epoch`, the live-only `agent_output` without) and a refusal to the one
//! JS form of the core's error (the Promise of `next()` rejects with it).

use crate::helpers::{arg, promise, to_js_error, with_args, Count};
use crate::rig::to_value;
use coderig::bus::BusEvent;
use coderig::rig::{Rig, Subject, Watch};
use coderig::Error;
use napi::bindgen_prelude::{AsyncGenerator, PromiseRaw, ToNapiValue, Unknown};
use napi::{sys, Env};
use napi_derive::napi;
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Mutex;

/// `wait(timeoutMs)` of a battle or a run: a Promise of its view once it
/// is finished — the core's [`Rig::wait_battle`] or [`Rig::wait_run`],
/// whose end rule is the watch's; a timeout rejects with the core's
/// `wait_timed_out` (a `TimeoutError` by name).
pub(crate) fn wait<'env>(
    env: &'env Env,
    rig: &Rig,
    subject: Subject,
    timeout_ms: Option<Unknown>,
) -> napi::Result<PromiseRaw<'env, Value>> {
    let rig = rig.clone();
    with_args(
        env,
        || Ok(arg::<Option<Count>>(env, "timeoutMs", timeout_ms)?.map(|c| c.0)),
        |timeout_ms| {
            let limit = timeout_ms.map(Duration::from_millis);
            let work = async move {
                Ok(match &subject {
                    Subject::Battle(id) => to_value(&rig.wait_battle(id, limit).await?),
                    Subject::Run(id) => to_value(&rig.wait_run(id, limit).await?),
                })
            };
            promise(env, work, |view| view)
        },
    )
}

/// The events of a battle or a run as an async iterator: what
/// `battle.events()` and `run.events()` return (typed there as
/// `AsyncIterable<BattleEvent>` and `AsyncIterable<RunEvent>`).
#[napi(async_iterator)]
pub struct WatchEvents {
    // Shared by the iterator's `next()` calls.
    watch: Arc<Mutex<Watch>>,
}

impl WatchEvents {
    /// A watch of `subject`, subscribed now: nothing committed after this
    /// call is missed, however late the first `next()` comes.
    pub(crate) fn new(rig: &Rig, subject: Subject) -> Self {
        WatchEvents {
            watch: Arc::new(Mutex::new(rig.watch(subject))),
        }
    }
}

/// One `next()` of the iterator (typed `WatchEvent` in index.d.ts: a
/// `BattleEvent` or a `RunEvent`): an event, or the core's refusal (the
/// subject is gone, the rig was shut down). The refusal becomes the one JS
/// form of the core's error ([`to_js_error`]: `code`, `details`, ...) when
/// napi converts the item on the JS thread — the first place with an `Env`
/// — so the Promise of `next()` rejects with it, as every Promise of the
/// addon does.
pub enum WatchEvent {
    Event(Value),
    Failed(Error),
}

// The one `unsafe` of the addon: napi's conversion trait is an unsafe fn
// of a raw env. napi calls it on the JS thread with that thread's live env,
// which is all `Value`'s own conversion needs.
#[allow(unsafe_code)]
impl ToNapiValue for WatchEvent {
    unsafe fn to_napi_value(env: sys::napi_env, item: Self) -> napi::Result<sys::napi_value> {
        match item {
            // SAFETY: `env` is the live env napi passed in, on its thread.
            WatchEvent::Event(value) => unsafe { Value::to_napi_value(env, value) },
            WatchEvent::Failed(e) => Err(to_js_error(&Env::from_raw(env), &e)),
        }
    }
}

#[napi]
impl AsyncGenerator for WatchEvents {
    type Yield = WatchEvent;
    type Next = ();
    type Return = ();

    fn next(
        &mut self,
        _value: Option<Self::Next>,
    ) -> impl Future<Output = napi::Result<Option<Self::Yield>>> + Send + 'static {
        let watch = self.watch.clone();
        async move {
            Ok(match watch.lock().await.next().await {
                Ok(None) => None,
                Ok(Some(BusEvent::Stored(stored))) => Some(WatchEvent::Event(to_value(&stored))),
                Ok(Some(BusEvent::Live(live))) => Some(WatchEvent::Event(to_value(&live))),
                Err(e) => Some(WatchEvent::Failed(e)),
            })
        }
    }
}
