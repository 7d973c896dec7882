//! `battle.events()` and `run.events()`: the core's [`Watch`] as the state
//! behind one napi async iterator ([`WatchEvents`]). Following (subscribe, replay, live,
//! de-duplicate) and the one end rule are the core's; this room only
//! converts each event to its JSON object (a stored one with its `seq` and
//! `epoch`, the live-only `agent_output` without) and a refusal to an
//! error.

use crate::helpers::{arg, promise, with_args, Count};
use crate::rig::to_value;
use coderig::bus::BusEvent;
use coderig::rig::{Rig, Subject, Watch};
use napi::bindgen_prelude::{AsyncGenerator, PromiseRaw, Unknown};
use napi::Env;
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

#[napi]
impl AsyncGenerator for WatchEvents {
    type Yield = Value;
    type Next = ();
    type Return = ();

    fn next(
        &mut self,
        _value: Option<Self::Next>,
    ) -> impl Future<Output = napi::Result<Option<Self::Yield>>> + Send + 'static {
        next_event(self.watch.clone())
    }
}

/// The watch's next event as the `next()` of an napi async iterator
/// returns it (`None`: the watch ended).
async fn next_event(events: Arc<Mutex<Watch>>) -> napi::Result<Option<Value>> {
    let event = events.lock().await.next().await.map_err(|e| {
        // No Env here to build the taxonomy's JS error: the code leads
        // the message.
        napi::Error::new(
            napi::Status::GenericFailure,
            format!("{}: {}", e.code(), e.message()),
        )
    })?;
    Ok(event.map(|event| match event {
        BusEvent::Stored(stored) => to_value(&stored),
        BusEvent::Live(live) => to_value(&live),
    }))
}
