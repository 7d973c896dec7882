//! The event bus (feature `runtime`): the one in-process fan-out of the
//! store's events that every face subscribes to — the server's SSE route,
//! the arena runner, the Python and Node `events()` iterators.
//!
//! # How it works
//!
//! One **tailer** task per [`EventBus`] reads `Store::events_after` from the
//! last seq it saw, whenever [`EventBus::notify`] says a write committed,
//! whenever the store's commit feed says another handle committed
//! ([`Store::watch_commits`]: PostgreSQL's `LISTEN`, so events that *other*
//! servers commit to a shared database arrive within milliseconds), and at
//! least every [`BusOptions::poll`] without a feed or every
//! [`BusOptions::backstop`] with one; and it broadcasts each event as
//! [`BusEvent::Stored`], in seq order, each once. It starts after the
//! store's newest seq at start: the bus keeps no history — a subscriber that
//! needs the past replays it from the store ([`EventSubscription::replay`]).
//! Live-only events (`agent_output`) go straight to the subscribers
//! ([`EventBus::publish_live`]).
//!
//! # Guarantees of a subscription
//!
//! - Stored events arrive in increasing seq order, each at most once, and
//!   none committed after the subscription's start is skipped — even when
//!   the subscriber is slow and the broadcast channel overflowed: the
//!   subscription knows the last seq it delivered and re-reads the missed
//!   ones from the store (only live events lost in such a lag are dropped;
//!   they are live-only by contract).
//! - [`EventSubscription::replay`] (subscribe first, then read the store)
//!   hands over from the replay to the live stream without a gap or a
//!   duplicate, per [`crate::event::decide_replay`] and
//!   [`crate::event::merge_replay`].
//! - After [`EventBus::shutdown`] (or once the last `Arc<EventBus>` is
//!   dropped) the tailer stops and [`EventSubscription::next`] returns
//!   `None`.
//!
//! A stored event whose payload is not an event of its type (the store
//! keeps payloads opaque) cannot be typed as a [`StoredEvent`]: the tailer
//! and the replays skip it, and move past it.

use crate::error::Error;
use crate::event::{decide_replay, merge_replay, Event, ReplayDecision, SseId, StoredEvent};
use crate::store::{CommitFeed, EventRecord, Store};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{broadcast, watch, Notify};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How many events one store read takes (the tailer's and the replays' page).
const PAGE: u32 = 500;

/// What a subscription delivers.
#[derive(Debug, Clone, PartialEq)]
pub enum BusEvent {
    /// An event of the store's log, with its seq and the store's epoch.
    Stored(StoredEvent),
    /// A live-only event (`agent_output`): no seq, never replayed.
    Live(Event),
}

/// Settings of an [`EventBus`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BusOptions {
    /// The longest the tailer waits between two reads of the store when
    /// nobody calls [`EventBus::notify`] and the store has no commit feed
    /// (SQLite: another process's commits).
    pub poll: Duration,
    /// The same when the store's commit feed is live (PostgreSQL
    /// `LISTEN`): a backstop only, for a notification lost in a way the
    /// feed did not notice.
    pub backstop: Duration,
    /// The broadcast channel's capacity: how far a subscriber may fall
    /// behind before it recovers from the store (stored events) or loses
    /// them (live events).
    pub capacity: usize,
}

impl Default for BusOptions {
    /// `poll` 250 ms, `backstop` 5 s, `capacity` 4096.
    fn default() -> Self {
        BusOptions {
            poll: Duration::from_millis(250),
            backstop: Duration::from_secs(5),
            capacity: 4096,
        }
    }
}

/// What the tailer and the subscribers share.
struct Shared {
    store: Arc<dyn Store>,
    epoch: String,
    /// The last seq broadcast, or `None` before the tailer's first read of
    /// the store. Held while a stored event is sent and while a receiver is
    /// created, so a new subscription knows exactly which stored events its
    /// receiver will get (those above this seq).
    tail: Mutex<Option<u64>>,
    tx: broadcast::Sender<BusEvent>,
    /// The seq the tailer started after, once it read it.
    start: watch::Receiver<Option<u64>>,
    /// How the tailer learns of other handles' commits, once it asked the
    /// store.
    feed: watch::Receiver<Option<CommitFeed>>,
    wake: Arc<Notify>,
    stop: CancellationToken,
}

/// The in-process fan-out of the store's events (see the [module docs](self)).
pub struct EventBus {
    shared: Arc<Shared>,
}

impl EventBus {
    /// [`EventBus::start_with`] the default [`BusOptions`] (poll 250 ms,
    /// capacity 4096). Must be called inside a tokio runtime.
    pub fn start(store: Arc<dyn Store>) -> Arc<EventBus> {
        EventBus::start_with(store, BusOptions::default())
    }

    /// Starts the tailer on the current tokio runtime (so it must be called
    /// inside one): it reads `store.events_after(last, 500)` whenever
    /// [`EventBus::notify`] is called and at least every `options.poll`,
    /// and broadcasts each event as [`BusEvent::Stored`], in seq order,
    /// each once. It starts after the store's newest seq at start (no
    /// history: subscribers replay from the store); that first read happens
    /// on the tailer task, [`EventBus::started`] waits for it. A capacity
    /// of 0 is taken as 1; a zero poll as 1 ms.
    pub fn start_with(store: Arc<dyn Store>, options: BusOptions) -> Arc<EventBus> {
        let (tx, _) = broadcast::channel(options.capacity.max(1));
        let (start_tx, start) = watch::channel(None);
        let (feed_tx, feed) = watch::channel(None);
        let shared = Arc::new(Shared {
            epoch: store.epoch().to_owned(),
            store,
            tail: Mutex::new(None),
            tx,
            start,
            feed,
            wake: Arc::new(Notify::new()),
            stop: CancellationToken::new(),
        });
        let polls = Polls {
            without_feed: options.poll.max(Duration::from_millis(1)),
            with_feed: options.backstop.max(Duration::from_millis(1)),
        };
        tokio::spawn(tail(shared.clone(), start_tx, feed_tx, polls));
        Arc::new(EventBus { shared })
    }

    /// Waits until the tailer has read where the store's log ends — the
    /// bus's start: events committed before it are history (replay them),
    /// every one after it is broadcast — and returns that seq; `None` when
    /// the bus was shut down first. [`EventBus::start`] returns before this
    /// read completes (it cannot wait), so a caller that writes right after
    /// starting the bus and expects its subscribers to see those writes
    /// live awaits this first.
    pub async fn started(&self) -> Option<u64> {
        let mut start = self.shared.start.clone();
        let stop = self.shared.stop.clone();
        tokio::select! {
            () = stop.cancelled() => None,
            started = start.wait_for(Option::is_some) => started.ok().and_then(|s| *s),
        }
    }

    /// How the tailer learns of other handles' commits
    /// ([`Store::watch_commits`]); waits until it has asked the store (right
    /// after [`EventBus::started`]). `None` when the bus was shut down
    /// first. A server says this at start, so an operator behind a pooler
    /// that drops `LISTEN` knows its buses poll.
    pub async fn commit_feed(&self) -> Option<CommitFeed> {
        let mut feed = self.shared.feed.clone();
        let stop = self.shared.stop.clone();
        if stop.is_cancelled() {
            return None;
        }
        tokio::select! {
            biased;
            () = stop.cancelled() => None,
            feed = feed.wait_for(Option::is_some) => feed.ok().and_then(|f| f.clone()),
        }
    }

    /// Says that a write just committed: the tailer reads the store now
    /// instead of at its next poll. Cheap; calls while a read is under way
    /// cause one more read after it.
    pub fn notify(&self) {
        self.shared.wake.notify_one();
    }

    /// Delivers a live-only event (`agent_output`) to every current
    /// subscriber, without a seq; dropped silently when nobody listens.
    pub fn publish_live(&self, event: Event) {
        let _ = self.shared.tx.send(BusEvent::Live(event));
    }

    /// A new subscription: it receives every stored event the tailer
    /// broadcasts from now on, and live events published from now on (call
    /// [`EventSubscription::replay`] for the past).
    pub fn subscribe(&self) -> EventSubscription {
        let (rx, position) = {
            let tail = lock(&self.shared.tail);
            (self.shared.tx.subscribe(), *tail)
        };
        EventSubscription {
            shared: self.shared.clone(),
            rx,
            delivered: position,
            pending: VecDeque::new(),
            catch_up: None,
            reading: None,
        }
    }

    /// The store the bus tails.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.shared.store
    }

    /// Stops the tailer; every subscription's `next()` then returns `None`.
    /// Also happens when the last `Arc<EventBus>` is dropped. Idempotent.
    pub fn shutdown(&self) {
        self.shared.stop.cancel();
    }
}

impl Drop for EventBus {
    fn drop(&mut self) {
        self.shared.stop.cancel();
    }
}

impl std::fmt::Debug for EventBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventBus")
            .field("store", &self.shared.store.backend())
            .field("epoch", &self.shared.epoch)
            .field("tail", &*lock(&self.shared.tail))
            .field("subscribers", &self.shared.tx.receiver_count())
            .finish()
    }
}

/// The guarded value even when a holder panicked: the tail is a plain
/// number, always consistent.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The typed events of `records` (undecodable ones skipped) and the last
/// seq of the page (moved past, decodable or not).
fn decode(records: &[EventRecord], epoch: &str) -> (Vec<StoredEvent>, Option<u64>) {
    let last = records.last().map(|r| u64::try_from(r.seq).unwrap_or(0));
    let events = records
        .iter()
        .filter_map(|r| r.to_stored(Some(epoch)).ok())
        .collect();
    (events, last)
}

fn as_i64(seq: u64) -> i64 {
    i64::try_from(seq).unwrap_or(i64::MAX)
}

/// The tailer's longest waits between two reads of the store.
#[derive(Debug, Clone, Copy)]
struct Polls {
    without_feed: Duration,
    with_feed: Duration,
}

/// The tailer: find where the log ends, open the store's commit feed, then
/// read and broadcast whatever follows, on every wake-up and poll, until
/// stopped.
async fn tail(
    shared: Arc<Shared>,
    start: watch::Sender<Option<u64>>,
    feed: watch::Sender<Option<CommitFeed>>,
    polls: Polls,
) {
    let stop = shared.stop.clone();
    let poll = polls.without_feed;
    let mut after = loop {
        match shared.store.event_window().await {
            Ok(window) => break window.newest,
            // The store is unreachable for now: try again at the next poll.
            Err(_) => tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(poll) => {}
            },
        }
    };
    *lock(&shared.tail) = Some(after);
    let _ = start.send(Some(after));
    let commits = shared
        .store
        .watch_commits(shared.wake.clone(), stop.clone())
        .await;
    let poll = match commits {
        CommitFeed::Listening => polls.with_feed,
        CommitFeed::Polling { .. } => polls.without_feed,
    };
    let _ = feed.send(Some(commits));
    loop {
        // Read until the log is exhausted, then wait.
        loop {
            if stop.is_cancelled() {
                return;
            }
            let records = match shared.store.events_after(as_i64(after), PAGE).await {
                Ok(records) => records,
                Err(_) => break,
            };
            let full = records.len() == PAGE as usize;
            for record in &records {
                let seq = u64::try_from(record.seq).unwrap_or(0);
                let mut tail = lock(&shared.tail);
                if let Ok(event) = record.to_stored(Some(&shared.epoch)) {
                    let _ = shared.tx.send(BusEvent::Stored(event));
                }
                *tail = Some(seq);
                after = seq;
            }
            if !full {
                break;
            }
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = shared.wake.notified() => {}
            () = tokio::time::sleep(poll) => {}
        }
    }
}

/// One subscriber's view of an [`EventBus`] (see the [module docs](self)):
/// it never silently loses a stored event — when the broadcast lagged, it
/// re-reads the missed stored events from the store (it knows the last seq
/// it delivered); live events lost in a lag are dropped (they are live-only
/// by contract).
pub struct EventSubscription {
    shared: Arc<Shared>,
    rx: broadcast::Receiver<BusEvent>,
    /// Every stored event up to this seq was delivered (or is in
    /// `pending`), or is not to be delivered; `None` until the tailer's
    /// start is known.
    delivered: Option<u64>,
    /// Events to deliver before the receiver's.
    pending: VecDeque<BusEvent>,
    /// After a lag: the seq to re-read the store from.
    catch_up: Option<u64>,
    /// That re-read, in flight on a task of its own: `next()` is awaited
    /// inside `select!`s that drop it, and a store read dropped halfway
    /// can leave its connection inside a half-begun transaction (sqlx
    /// 0.8's `begin` is not cancel-safe on PostgreSQL). The task always
    /// finishes its read; the next `next()` picks the answer up.
    reading: Option<JoinHandle<Result<Vec<EventRecord>, Error>>>,
}

impl std::fmt::Debug for EventSubscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventSubscription")
            .field("delivered", &self.delivered)
            .field("pending", &self.pending.len())
            .field("catching_up", &self.catch_up.is_some())
            .finish()
    }
}

impl EventSubscription {
    /// The subscription's position once the tailer has started: a
    /// subscription made before that receives every broadcast event, so it
    /// stands where the tailer started. `None` when the bus stopped first.
    async fn position(&mut self) -> Option<u64> {
        if self.delivered.is_none() {
            let mut start = self.shared.start.clone();
            let stop = self.shared.stop.clone();
            let started = tokio::select! {
                () = stop.cancelled() => return None,
                started = start.wait_for(Option::is_some) => started.ok().and_then(|s| *s),
            };
            self.delivered = started;
        }
        self.delivered
    }

    /// The next event: stored ones in seq order, each once; `None` after
    /// the bus was shut down (or dropped).
    pub async fn next(&mut self) -> Option<BusEvent> {
        let stop = self.shared.stop.clone();
        loop {
            if stop.is_cancelled() {
                return None;
            }
            let delivered = self.position().await?;
            if let Some(event) = self.pending.pop_front() {
                match &event {
                    BusEvent::Stored(e) if e.seq <= delivered => continue,
                    BusEvent::Stored(e) => self.delivered = Some(e.seq),
                    BusEvent::Live(_) => {}
                }
                return Some(event);
            }
            if let Some(from) = self.catch_up {
                let store = &self.shared.store;
                let reading = self.reading.get_or_insert_with(|| {
                    let store = store.clone();
                    tokio::spawn(async move { store.events_after(as_i64(from), PAGE).await })
                });
                let read = tokio::select! {
                    () = stop.cancelled() => return None,
                    read = reading => read,
                };
                self.reading = None;
                match read {
                    Ok(Ok(records)) => {
                        let full = records.len() == PAGE as usize;
                        let (events, last) = decode(&records, &self.shared.epoch);
                        self.pending
                            .extend(events.into_iter().map(BusEvent::Stored));
                        self.catch_up = if full { last } else { None };
                    }
                    // Keep the place and try again shortly: the store is
                    // the only copy of what the broadcast dropped.
                    Ok(Err(_)) | Err(_) => tokio::select! {
                        () = stop.cancelled() => return None,
                        () = tokio::time::sleep(Duration::from_millis(100)) => {}
                    },
                }
                continue;
            }
            let received = tokio::select! {
                () = stop.cancelled() => return None,
                received = self.rx.recv() => received,
            };
            match received {
                Ok(BusEvent::Stored(e)) if e.seq <= delivered => {}
                Ok(BusEvent::Stored(e)) => {
                    self.delivered = Some(e.seq);
                    return Some(BusEvent::Stored(e));
                }
                Ok(live) => return Some(live),
                Err(broadcast::error::RecvError::Lagged(_)) => self.catch_up = Some(delivered),
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }

    /// Subscribe-first replay for a resume `cursor` (`Last-Event-ID` /
    /// `?after=`): reads the store's window, decides with
    /// [`decide_replay`], reads the events to replay (up to the window's
    /// newest seq), merges them with what the subscription already buffered
    /// ([`merge_replay`]) and returns the decision — the caller sends
    /// `event: reset` for [`ReplayDecision::Reset`] — and the stored events
    /// to send first, in seq order. Afterwards [`EventSubscription::next`]
    /// continues after them without a gap or a duplicate. Live events the
    /// subscription had buffered are kept for `next()`.
    ///
    /// Call it before the first `next()`. Errors: the store's (`io`, ...),
    /// the subscription unchanged; `unavailable` when the bus was shut down.
    pub async fn replay(
        &mut self,
        cursor: Option<&SseId>,
    ) -> Result<(ReplayDecision, Vec<StoredEvent>), Error> {
        let position = match self.position().await {
            Some(position) if !self.shared.stop.is_cancelled() => position,
            _ => return Err(Error::unavailable("the event bus was shut down")),
        };
        let store = self.shared.store.clone();
        let window = store.event_window().await?;
        let decision = decide_replay(cursor, &window);
        let Some(mut from) = decision.replay_after(&window) else {
            return Ok((decision, Vec::new()));
        };
        let mut replayed = Vec::new();
        while from < window.newest {
            let records = store.events_after(as_i64(from), PAGE).await?;
            let full = records.len() == PAGE as usize;
            let (events, last) = decode(&records, &self.shared.epoch);
            replayed.extend(events.into_iter().filter(|e| e.seq <= window.newest));
            match last {
                Some(last) if full => from = last,
                _ => break,
            }
        }
        // What the receiver already holds: its stored events merge with the
        // replay; its live events wait for next().
        let mut buffered = Vec::new();
        let mut kept = VecDeque::new();
        let mut lagged = false;
        loop {
            match self.rx.try_recv() {
                Ok(BusEvent::Stored(e)) => buffered.push(e),
                Ok(live) => kept.push_back(live),
                Err(broadcast::error::TryRecvError::Lagged(_)) => lagged = true,
                Err(_) => break,
            }
        }
        if lagged {
            // The buffer has holes: keep none of it (the replay has every
            // event up to the window's newest) and let next() re-read the
            // store from there, in order.
            buffered.clear();
            self.catch_up = Some(window.newest.max(position));
        }
        let events = merge_replay(decision.delivered_after(), buffered, replayed);
        // The receiver delivers everything above `position`; everything up
        // to the window's newest (and the buffer merged in, which follows on
        // from `position` without a hole) is in this answer or before the
        // cursor, so next() skips it.
        let last = events.last().map_or(0, |e| e.seq);
        self.delivered = Some(position.max(window.newest).max(last));
        self.pending.extend(kept);
        Ok((decision, events))
    }
}

/// The `battle_id` / `run_id` filter of `GET /api/events` and of the
/// faces' `events()`: true when `event` belongs to the battle `battle_id`
/// (when given) and to the run `run_id` (when given) — both filters must
/// hold, so giving both matches nothing (an event belongs to a battle or a
/// run, never both). No filter matches every event.
pub fn matches(event: &Event, battle_id: Option<&str>, run_id: Option<&str>) -> bool {
    battle_id.is_none_or(|b| event.battle_id() == Some(b))
        && run_id.is_none_or(|r| event.run_id() == Some(r))
}
