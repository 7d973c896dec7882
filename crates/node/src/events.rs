//! The events of one battle or one run, as the state behind an async
//! iterator (`battle.events()`, `run.events()`).
//!
//! First the stored history (replayed from the start of the store's log,
//! each event with its `seq` and `epoch`), then what happens live (stored
//! events and the live-only `agent_output`), de-duplicated by seq by the
//! core's subscription. The iteration ends after the status update that
//! finishes the subject (`battle_updated` / `run_updated` to a final
//! status); for a subject already finished, after its history.

use crate::rig::to_value;
use coderig::bus::{matches, BusEvent, EventBus, EventSubscription};
use coderig::event::{BattleStatus, Event, RunStatus, SseId, StoredEvent};
use coderig::store::Store;
use coderig::Error;
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::Arc;
use tokio::sync::Mutex;

/// Whose events an iterator follows.
pub(crate) enum Subject {
    /// A battle, by id.
    Battle(String),
    /// A flow run, by id.
    Run(String),
}

impl Subject {
    /// True when `event` belongs to the subject.
    fn owns(&self, event: &Event) -> bool {
        match self {
            Subject::Battle(id) => matches(event, Some(id), None),
            Subject::Run(id) => matches(event, None, Some(id)),
        }
    }

    /// For the subject's own status updates (`battle_updated`,
    /// `run_updated`): whether it finishes the subject. `None` for every
    /// other event.
    fn finishes(&self, event: &Event) -> Option<bool> {
        match (self, event) {
            (Subject::Battle(_), Event::BattleUpdated(u)) => Some(matches!(
                u.status,
                BattleStatus::Completed | BattleStatus::Failed | BattleStatus::Cancelled
            )),
            (Subject::Run(_), Event::RunUpdated(u)) => Some(matches!(
                u.status,
                RunStatus::Completed | RunStatus::Failed | RunStatus::Cancelled
            )),
            _ => None,
        }
    }
}

/// Where an iterator stands.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// The history is not read yet.
    Start,
    /// Handing out the history; `finished`: its last status update
    /// finished the subject, so the iteration ends with it.
    History { finished: bool },
    /// Following the subject live.
    Live,
    /// Over.
    Ended,
}

/// The state of one iterator (shared by its `next()` calls).
pub(crate) struct EventsState {
    store: Arc<dyn Store>,
    subject: Subject,
    subscription: EventSubscription,
    phase: Phase,
    queue: VecDeque<StoredEvent>,
}

impl EventsState {
    /// An iterator over `subject`'s events, subscribed to `bus` now, so
    /// nothing committed after this call is missed even when the first
    /// `next()` comes later.
    pub(crate) fn new(store: Arc<dyn Store>, bus: &EventBus, subject: Subject) -> Self {
        EventsState {
            store,
            subject,
            subscription: bus.subscribe(),
            phase: Phase::Start,
            queue: VecDeque::new(),
        }
    }

    /// Reads the subject's stored history (subscribe-first replay from the
    /// start of the log: the core merges it with what the subscription
    /// received meanwhile, each seq once).
    async fn read_history(&mut self) -> Result<(), Error> {
        let start = SseId::new(self.store.epoch().to_owned(), 0).map_err(Error::from)?;
        let (_, events) = self.subscription.replay(Some(&start)).await?;
        self.queue = events
            .into_iter()
            .filter(|e| self.subject.owns(&e.event))
            .collect();
        let finished = self
            .queue
            .iter()
            .rev()
            .find_map(|e| self.subject.finishes(&e.event))
            .unwrap_or(false);
        self.phase = Phase::History { finished };
        Ok(())
    }

    async fn next(&mut self) -> Result<Option<Value>, Error> {
        loop {
            match self.phase {
                Phase::Ended => return Ok(None),
                Phase::Start => self.read_history().await?,
                Phase::History { finished } => match self.queue.pop_front() {
                    Some(event) => return Ok(Some(to_value(&event))),
                    None if finished => self.phase = Phase::Ended,
                    None => self.phase = Phase::Live,
                },
                Phase::Live => match self.subscription.next().await {
                    None => self.phase = Phase::Ended,
                    Some(BusEvent::Stored(e)) if self.subject.owns(&e.event) => {
                        if self.subject.finishes(&e.event) == Some(true) {
                            self.phase = Phase::Ended;
                        }
                        return Ok(Some(to_value(&e)));
                    }
                    Some(BusEvent::Live(e)) if self.subject.owns(&e) => {
                        return Ok(Some(to_value(&e)))
                    }
                    Some(_) => {}
                },
            }
        }
    }
}

/// The next event of the iterator `state`, as the `next()` of an napi
/// async iterator returns it.
pub(crate) async fn next_event(state: Arc<Mutex<EventsState>>) -> napi::Result<Option<Value>> {
    // The store's refusal (an unreadable log) has no Env here to become
    // the taxonomy's JS error; its code leads the message.
    state.lock().await.next().await.map_err(|e| {
        napi::Error::new(
            napi::Status::GenericFailure,
            format!("{}: {}", e.code(), e.message()),
        )
    })
}
