//! `battle.events()` and `run.events()`: the core's [`Watch`] as the state
//! behind an napi async iterator. Following (subscribe, replay, live,
//! de-duplicate) and the one end rule are the core's; this room only
//! converts each event to its JSON object (a stored one with its `seq` and
//! `epoch`, the live-only `agent_output` without) and a refusal to an
//! error.

use crate::rig::to_value;
use coderig::bus::BusEvent;
use coderig::rig::{Rig, Subject, Watch};
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::Mutex;

/// One iterator's watch, shared by its `next()` calls.
pub(crate) type Events = Arc<Mutex<Watch>>;

/// A watch of `subject`, subscribed now: nothing committed after this
/// call is missed, however late the first `next()` comes.
pub(crate) fn watch(rig: &Rig, subject: Subject) -> Events {
    Arc::new(Mutex::new(rig.watch(subject)))
}

/// The next event of the iterator `events`, as the `next()` of an napi
/// async iterator returns it (`None`: the watch ended).
pub(crate) async fn next_event(events: Events) -> napi::Result<Option<Value>> {
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
