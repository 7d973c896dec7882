//! [`Watch`]: the one way to follow a battle or a run to its end.
//!
//! Every face that follows a subject — Python's and Node's `events()`
//! iterators and `wait()`, the CLI's live progress, `coderig run` and
//! `coderig battle run` — is an adapter over this type, so they all deliver
//! the same events in the same order and stop at the same place.
//!
//! How it follows, in order:
//! 1. **subscribe** to the bus at construction, so nothing committed after
//!    [`Watch::new`] returns can be missed;
//! 2. **replay** the subject's stored history from the store (only its own
//!    events, through the `events_by_work` index: a bounded number of
//!    reads, one per [`HISTORY_PAGE`] events, whatever the rest of the log
//!    holds);
//! 3. go **live**: the subject's stored events from the subscription and
//!    its live-only `agent_output`;
//! 4. **de-duplicate** by `seq`: an event both replayed and received live
//!    is delivered once.
//!
//! **The one end rule** ([`ends_subject`], [`history_is_final`]): the watch
//! ends right after it delivered a stored status event of the subject
//! (`battle_updated` / `run_updated`) whose status is final (`completed`,
//! `failed`, `cancelled`). For a subject whose history already ends final,
//! it ends after the whole history. Because a run or battle turns final in
//! the same store transaction as every step or contestant of it, with their
//! events stored before its own, the last event a watch delivers always
//! finds every step or contestant final: no follower sees a finished run
//! with a running step, and none stops before the steps' final updates.
//! A battle re-opened later (a forced re-analysis) is a new watch's
//! business.
//!
//! Reads: one existence check and the history pages at the start; nothing
//! per event (the subscription re-reads the log only when it lagged).

use crate::bus::{matches, BusEvent, EventBus, EventSubscription};
use crate::error::Error;
use crate::event::{BattleStatus, Event, RunStatus, StoredEvent};
use crate::store::{Store, WorkKind};
use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

/// How many stored events one history read returns.
pub const HISTORY_PAGE: u32 = 500;

/// What a [`Watch`] follows.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Subject {
    /// A battle, by id.
    Battle(String),
    /// A flow run, by id.
    Run(String),
}

impl Subject {
    /// The battle's or run's id.
    pub fn id(&self) -> &str {
        match self {
            Subject::Battle(id) | Subject::Run(id) => id,
        }
    }

    fn kind(&self) -> WorkKind {
        match self {
            Subject::Battle(_) => WorkKind::Battle,
            Subject::Run(_) => WorkKind::Run,
        }
    }

    /// True when `event` belongs to the subject.
    pub fn owns(&self, event: &Event) -> bool {
        match self {
            Subject::Battle(id) => matches(event, Some(id), None),
            Subject::Run(id) => matches(event, None, Some(id)),
        }
    }
}

/// For the subject's own status updates: whether this one makes it final.
/// `None` for every other event (a step's, a contestant's, another
/// subject's). Pure: the end rule, written once.
pub fn ends_subject(subject: &Subject, event: &Event) -> Option<bool> {
    if !subject.owns(event) {
        return None;
    }
    match (subject, event) {
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

/// Whether a stored history (in seq order) leaves its subject final: its
/// last status update is a final one. Pure.
pub fn history_is_final<'a>(
    subject: &Subject,
    history: impl DoubleEndedIterator<Item = &'a Event>,
) -> bool {
    history
        .rev()
        .find_map(|event| ends_subject(subject, event))
        .unwrap_or(false)
}

/// Where a watch stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Nothing read yet.
    Start,
    /// Handing out the history; `final_`: it ends the subject.
    History { final_: bool },
    /// Following the subject live.
    Live,
    /// Over.
    Ended,
}

/// Follows one battle or run: subscribe, replay, live, de-duplicate, end
/// by the one rule (see the [module docs](self)). Not `Clone`: one cursor.
pub struct Watch {
    store: Arc<dyn Store>,
    subject: Subject,
    subscription: EventSubscription,
    phase: Phase,
    history: VecDeque<StoredEvent>,
    /// The seqs the history delivered: the live stream skips them.
    replayed: HashSet<u64>,
    /// The stored events up to this seq were delivered or skipped.
    last_seq: u64,
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch")
            .field("subject", &self.subject)
            .field("phase", &self.phase)
            .field("last_seq", &self.last_seq)
            .finish_non_exhaustive()
    }
}

impl Watch {
    /// A watch of `subject`, subscribed to `bus` now: nothing committed
    /// after this returns is missed, however late the first
    /// [`Watch::next`] comes. Reads nothing yet.
    pub fn new(bus: &EventBus, subject: Subject) -> Watch {
        Watch {
            store: bus.store().clone(),
            subject,
            subscription: bus.subscribe(),
            phase: Phase::Start,
            history: VecDeque::new(),
            replayed: HashSet::new(),
            last_seq: 0,
        }
    }

    /// What it follows.
    pub fn subject(&self) -> &Subject {
        &self.subject
    }

    /// True once the end rule was met (or the watch failed for good):
    /// [`Watch::next`] returns `None` from then on.
    pub fn is_ended(&self) -> bool {
        self.phase == Phase::Ended
    }

    /// The next event of the subject: its stored history first (each with
    /// `seq`), then live — stored events and the live-only `agent_output`.
    /// `Ok(None)` once the end rule was met.
    ///
    /// Errors: `not_found_id` on the first call when there is no such
    /// battle or run (and the watch ends); the store's errors while reading
    /// the history (the watch may be asked again); `unavailable` when the
    /// bus was shut down before the subject ended (the watch ends).
    ///
    /// Cancel-safe between events: dropping a pending `next()` while it
    /// waits for a live event loses nothing.
    pub async fn next(&mut self) -> Result<Option<BusEvent>, Error> {
        loop {
            match self.phase {
                Phase::Ended => return Ok(None),
                Phase::Start => self.read_history().await?,
                Phase::History { final_ } => match self.history.pop_front() {
                    Some(event) => {
                        self.last_seq = self.last_seq.max(event.seq);
                        return Ok(Some(BusEvent::Stored(event)));
                    }
                    None if final_ => self.phase = Phase::Ended,
                    None => self.phase = Phase::Live,
                },
                Phase::Live => match self.subscription.next().await {
                    None => {
                        self.phase = Phase::Ended;
                        return Err(Error::unavailable(format!(
                            "the event bus was shut down while following {} {}",
                            kind_name(&self.subject),
                            self.subject.id()
                        )));
                    }
                    Some(BusEvent::Stored(event)) if self.subject.owns(&event.event) => {
                        if self.replayed.remove(&event.seq) {
                            continue;
                        }
                        self.last_seq = self.last_seq.max(event.seq);
                        if ends_subject(&self.subject, &event.event) == Some(true) {
                            self.phase = Phase::Ended;
                        }
                        return Ok(Some(BusEvent::Stored(event)));
                    }
                    Some(BusEvent::Live(event)) if self.subject.owns(&event) => {
                        return Ok(Some(BusEvent::Live(event)));
                    }
                    Some(_) => {}
                },
            }
        }
    }

    /// Drains the watch until its end; returns whether it ended (true) or
    /// `deadline` came first (false; the watch stays usable).
    pub async fn until_end(
        &mut self,
        deadline: Option<tokio::time::Instant>,
    ) -> Result<bool, Error> {
        let drain = async {
            while self.next().await?.is_some() {}
            Ok::<_, Error>(())
        };
        match deadline {
            None => drain.await.map(|()| true),
            Some(deadline) => match tokio::time::timeout_at(deadline, drain).await {
                Ok(result) => result.map(|()| true),
                Err(_) => Ok(false),
            },
        }
    }

    /// The subject's stored history, checked to exist first.
    async fn read_history(&mut self) -> Result<(), Error> {
        let snapshot = match self.store.work(self.subject.id()).await {
            Ok(snapshot) => snapshot,
            Err(e) if e.kind() == crate::ErrorKind::NotFoundId => {
                self.phase = Phase::Ended;
                return Err(not_found(&self.subject));
            }
            Err(e) => return Err(e),
        };
        if snapshot.work.kind != self.subject.kind() {
            self.phase = Phase::Ended;
            return Err(not_found(&self.subject));
        }
        let epoch = self.store.epoch().to_owned();
        let mut history = Vec::new();
        let mut after = 0i64;
        loop {
            let records = self
                .store
                .work_events(self.subject.id(), after, HISTORY_PAGE)
                .await?;
            let full = records.len() == HISTORY_PAGE as usize;
            if let Some(last) = records.last() {
                after = last.seq;
            }
            for record in &records {
                // An event this build cannot read (a newer server's) is
                // skipped, as the bus skips it.
                if let Ok(event) = record.to_stored(Some(&epoch)) {
                    history.push(event);
                }
            }
            if !full {
                break;
            }
        }
        let final_ = history_is_final(&self.subject, history.iter().map(|e| &e.event));
        self.replayed = history.iter().map(|e| e.seq).collect();
        self.history = history.into();
        self.phase = Phase::History { final_ };
        Ok(())
    }
}

fn kind_name(subject: &Subject) -> &'static str {
    match subject {
        Subject::Battle(_) => "battle",
        Subject::Run(_) => "run",
    }
}

fn not_found(subject: &Subject) -> Error {
    Error::new(
        crate::ErrorKind::NotFoundId,
        format!("no {} {:?}", kind_name(subject), subject.id()),
    )
    .with_detail("what", kind_name(subject))
    .with_detail("id", subject.id())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{BattleUpdated, RunUpdated, StepUpdated};
    use crate::flow::StepStatus;

    fn run(id: &str, status: RunStatus) -> Event {
        Event::RunUpdated(RunUpdated {
            run_id: id.into(),
            status,
            error: None,
        })
    }

    fn battle(id: &str, status: BattleStatus) -> Event {
        Event::BattleUpdated(BattleUpdated {
            battle_id: id.into(),
            status,
            winner_contestant_id: None,
            winner_source: None,
            analysis_ready: None,
            cross_exam_id: None,
            error: None,
        })
    }

    fn step(run_id: &str, status: StepStatus) -> Event {
        Event::StepUpdated(StepUpdated {
            run_id: run_id.into(),
            step_id: "s".into(),
            status,
            attempt: 1,
            skip_reason: None,
            error: None,
            sandbox: None,
        })
    }

    #[test]
    fn only_the_subjects_own_final_status_ends_it() {
        let r = Subject::Run("r1".into());
        let b = Subject::Battle("b1".into());
        let table: Vec<(&Subject, Event, Option<bool>)> = vec![
            (&r, run("r1", RunStatus::Running), Some(false)),
            (&r, run("r1", RunStatus::Waiting), Some(false)),
            (&r, run("r1", RunStatus::Completed), Some(true)),
            (&r, run("r1", RunStatus::Failed), Some(true)),
            (&r, run("r1", RunStatus::Cancelled), Some(true)),
            (&r, run("r2", RunStatus::Cancelled), None),
            (&r, step("r1", StepStatus::Cancelled), None),
            (&r, battle("r1", BattleStatus::Completed), None),
            (&b, battle("b1", BattleStatus::Running), Some(false)),
            (&b, battle("b1", BattleStatus::Judging), Some(false)),
            (&b, battle("b1", BattleStatus::Completed), Some(true)),
            (&b, battle("b1", BattleStatus::Failed), Some(true)),
            (&b, battle("b1", BattleStatus::Cancelled), Some(true)),
            (&b, battle("b2", BattleStatus::Completed), None),
            (&b, run("b1", RunStatus::Completed), None),
        ];
        for (subject, event, want) in table {
            assert_eq!(ends_subject(subject, &event), want, "{subject:?} {event:?}");
        }
    }

    #[test]
    fn a_history_is_final_by_its_last_status_update() {
        let b = Subject::Battle("b".into());
        let cases: Vec<(Vec<Event>, bool)> = vec![
            (vec![], false),
            (vec![battle("b", BattleStatus::Running)], false),
            (
                vec![
                    battle("b", BattleStatus::Running),
                    battle("b", BattleStatus::Completed),
                ],
                true,
            ),
            // Re-analysis re-opened it: not final.
            (
                vec![
                    battle("b", BattleStatus::Completed),
                    battle("b", BattleStatus::Judging),
                ],
                false,
            ),
            (
                vec![
                    battle("b", BattleStatus::Judging),
                    battle("b", BattleStatus::Completed),
                    battle("other", BattleStatus::Running),
                ],
                true,
            ),
        ];
        for (history, want) in cases {
            assert_eq!(history_is_final(&b, history.iter()), want, "{history:?}");
        }
    }
}
