//! Events (pure): what the runtime tells every face, and the SSE replay
//! decision.
//!
//! # Events
//!
//! One JSON object per event, `{"type": "<event type>", ...fields}`;
//! optional fields are omitted when absent (`null` is read as absent).
//! Readers ignore unknown fields, so an older reader can read a newer
//! store.
//!
//! | type | fields | stored |
//! |---|---|---|
//! | `battle_started` | `battle_id, battle_type, prompt, contestants: [{id, identity, model, lane}]` | yes |
//! | `contestant_updated` | `battle_id, contestant_id, status, duration_ms?, ttft_ms?, usage?, tokens_per_sec?, evidence?, error?` | yes |
//! | `battle_updated` | `battle_id, status, winner_contestant_id?, winner_source?, analysis_ready?, cross_exam_id?, error?` | yes |
//! | `run_updated` | `run_id, status, error?` | yes |
//! | `step_updated` | `run_id, step_id, status, attempt, skip_reason?, error?` | yes |
//! | `agent_output` | `battle_id, contestant_id` or `run_id, step_id`; `kind: text\|reasoning\|tool_call\|tool_result, text` | no: live only |
//!
//! Every stored event has a `seq` from the store ([`StoredEvent`]);
//! `agent_output` has none and is forwarded live as it comes, outside the
//! replay below.
//!
//! # SSE ids and replay
//!
//! An SSE event's id is `<epoch>:<seq>` ([`SseId`]): the epoch is the
//! store's instance id, so a cursor from another store (or a store that was
//! recreated) is recognized. A client resumes with `Last-Event-ID` (or
//! `?after=`); the server subscribes to live events **first**, then reads
//! the store's [`StoreWindow`] (epoch, oldest retained seq, newest seq),
//! asks [`decide_replay`], replays from the store, and sends
//! [`merge_replay`] of the replay and what the live subscription buffered
//! meanwhile. The decision:
//!
//! | cursor | condition | decision | the server then |
//! |---|---|---|---|
//! | none | — | `Live` | streams live events only |
//! | `e:s`, `e` ≠ store epoch | — | `Reset` | sends `event: reset`, replays every retained event |
//! | `e:s`, same epoch | `s > newest` | `Reset` | the same: the cursor is from a history this store does not have (restored from an older backup) |
//! | `e:s`, same epoch | `oldest − 1 ≤ s ≤ newest` | `Replay { after: s }` | replays `seq > s` (nothing when `s = newest`) |
//! | `e:s`, same epoch | `s < oldest − 1` | `Gap { after: s, oldest }` | tells the client that `s+1 ..= oldest−1` were compacted away (it should re-read the state it shows), replays `seq ≥ oldest` |
//!
//! `oldest` is the oldest retained seq, read as at most `newest + 1` (a
//! store retaining nothing has `oldest = newest + 1`). Seqs start at 1; a
//! cursor `e:0` means "before the first event".
//!
//! Guarantees (property-tested): a cursor from another epoch always
//! resets; a same-epoch cursor inside the retained range replays exactly
//! the events after it; no decision but `Reset` replays an event at or
//! before the cursor; with [`merge_replay`], the client receives every
//! event after its cursor that the store still has, once each, in seq
//! order.

use crate::arena::{BattleType, ContestantStatus, Lane};
use crate::flow::{SkipReason, StepStatus};
use crate::names::macros::named_enum;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

/// The `type` of an [`Event`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventType {
    /// A battle was created and its contestants are known.
    BattleStarted,
    /// A contestant's status or results changed.
    ContestantUpdated,
    /// A battle's status, winner, analysis or cross-examination changed.
    BattleUpdated,
    /// A flow run's status changed.
    RunUpdated,
    /// A flow step's status changed.
    StepUpdated,
    /// Output of an agent while it works (live only, never stored).
    AgentOutput,
    /// A worker's lease on a task expired and the store took the task back.
    TaskRescued,
}
named_enum!(EventType, "event type", {
    BattleStarted => "battle_started",
    ContestantUpdated => "contestant_updated",
    BattleUpdated => "battle_updated",
    RunUpdated => "run_updated",
    StepUpdated => "step_updated",
    AgentOutput => "agent_output",
    TaskRescued => "task_rescued",
});

impl EventType {
    /// True for every type but `agent_output`: the types the store keeps
    /// (with a seq) and replays.
    pub fn is_stored(self) -> bool {
        self != EventType::AgentOutput
    }
}

/// Where a battle stands (DESIGN "arena runtime": `running` → `judging` →
/// `completed` | `failed` | `cancelled`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BattleStatus {
    /// Contestants are working.
    Running,
    /// Every contestant settled; the oracle and the judge are deciding.
    Judging,
    /// Finished (with or without a winner).
    Completed,
    /// The battle itself failed.
    Failed,
    /// Stopped.
    Cancelled,
}
named_enum!(BattleStatus, "battle status", {
    Running => "running",
    Judging => "judging",
    Completed => "completed",
    Failed => "failed",
    Cancelled => "cancelled" | "canceled",
});

/// Where a flow run stands (DESIGN "flow runtime").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RunStatus {
    /// Steps are running or ready.
    Running,
    /// Waiting on an approval.
    Waiting,
    /// Every step settled and the run succeeded.
    Completed,
    /// The run failed.
    Failed,
    /// Stopped.
    Cancelled,
}
named_enum!(RunStatus, "run status", {
    Running => "running",
    Waiting => "waiting",
    Completed => "completed",
    Failed => "failed",
    Cancelled => "cancelled" | "canceled",
});

/// Who named a battle's winner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WinnerSource {
    /// The test runs alone decided.
    Oracle,
    /// The LLM judge decided among the top evidence tier.
    Judge,
    /// A person set it (never overwritten by a re-analysis).
    Human,
}
named_enum!(WinnerSource, "winner source", {
    Oracle => "oracle",
    Judge => "judge",
    Human => "human",
});

/// What an `agent_output` event carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OutputKind {
    /// Answer text.
    Text,
    /// Reasoning ("thinking") text.
    Reasoning,
    /// A tool call (the text describes it).
    ToolCall,
    /// A tool's result.
    ToolResult,
}
named_enum!(OutputKind, "output kind", {
    Text => "text",
    Reasoning => "reasoning",
    ToolCall => "tool_call",
    ToolResult => "tool_result",
});

/// One contestant as `battle_started` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ContestantInfo {
    /// The contestant's id.
    pub id: String,
    /// The agent identity (`claude`, `local`, ...).
    pub identity: String,
    /// The model.
    pub model: String,
    /// The lane it runs in.
    pub lane: Lane,
}

/// `battle_started`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BattleStarted {
    /// The battle.
    pub battle_id: String,
    /// `coding` or `qa`.
    pub battle_type: BattleType,
    /// The prompt every contestant gets.
    pub prompt: String,
    /// The contestants, in the battle's order.
    pub contestants: Vec<ContestantInfo>,
}

/// `contestant_updated`.
///
/// `usage`, `evidence` and `error` are JSON objects: the usage split of the
/// agent's turn, the oracle's evidence, and the error object of
/// [`crate::Error::to_json`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ContestantUpdated {
    /// The battle.
    pub battle_id: String,
    /// The contestant.
    pub contestant_id: String,
    /// Its status now.
    pub status: ContestantStatus,
    /// Wall time of its turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// Time to the first token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<u64>,
    /// Token usage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub usage: Option<Value>,
    /// Generated tokens per second (local lane).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_per_sec: Option<f64>,
    /// The oracle's evidence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub evidence: Option<Value>,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub error: Option<Value>,
}

/// `battle_updated`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BattleUpdated {
    /// The battle.
    pub battle_id: String,
    /// Its status now.
    pub status: BattleStatus,
    /// The winner, when one is named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub winner_contestant_id: Option<String>,
    /// Who named the winner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub winner_source: Option<WinnerSource>,
    /// True once `analysis.md` can be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub analysis_ready: Option<bool>,
    /// The cross-examination this update is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cross_exam_id: Option<String>,
    /// Why it failed (the error object of [`crate::Error::to_json`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub error: Option<Value>,
}

/// `run_updated`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RunUpdated {
    /// The run.
    pub run_id: String,
    /// Its status now.
    pub status: RunStatus,
    /// Why it failed (the error object of [`crate::Error::to_json`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub error: Option<Value>,
}

/// `step_updated`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StepUpdated {
    /// The run.
    pub run_id: String,
    /// The step.
    pub step_id: String,
    /// Its status now.
    pub status: StepStatus,
    /// The attempt this status belongs to (1 for the first).
    pub attempt: u32,
    /// Why it was skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip_reason: Option<SkipReason>,
    /// Why it failed (the error object of [`crate::Error::to_json`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub error: Option<Value>,
    /// Present only when the attempt this status ends ran with part of its
    /// sandbox not enforced (mode `auto` on a kernel that lacks a feature,
    /// or mode `off`): the report's one-line summary, naming what was not
    /// enforced and why (`auto: filesystem unconfined, …; not enforced:
    /// …`). The attempt's full report is in the run's step `attempts`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
}

/// `task_rescued`: the lease of the worker holding a task expired (the
/// worker died, hung or lost the database) and a rescue took the task back
/// in the same transaction as this event — queued again for any worker,
/// or failed (`lease expired`) once its rescues are spent. The contestant,
/// judge, examination or step keeps its own status until a worker (or the
/// arena's or engine's reconcile) moves it; this says why nothing moved
/// for a while and that something will.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TaskRescued {
    /// The battle, when the task is a battle's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub battle_id: Option<String>,
    /// The run, when the task is a run's (its driver or a step).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// What the task works for: `contestant`, `judge`, `cross_exam` or
    /// `step`.
    pub owner_kind: String,
    /// Its id (the contestant's, the step's, …).
    pub owner_id: String,
    /// The task.
    pub task_id: String,
    /// The worker whose lease expired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<String>,
    /// How many times the task has been rescued, this time included.
    pub rescues: u32,
    /// True when the task is queued again; false when it failed, its
    /// rescues spent.
    pub requeued: bool,
}

/// Whose agent an `agent_output` comes from: a battle's contestant or a
/// run's step (exactly one pair of ids).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum OutputSource {
    /// A contestant of a battle.
    Contestant {
        /// The battle.
        battle_id: String,
        /// The contestant.
        contestant_id: String,
    },
    /// A step of a flow run.
    Step {
        /// The run.
        run_id: String,
        /// The step.
        step_id: String,
    },
}

/// `agent_output` (live only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AgentOutput {
    /// Whose agent.
    #[serde(flatten)]
    pub source: OutputSource,
    /// What the text is.
    pub kind: OutputKind,
    /// The text (a delta: concatenate in order).
    pub text: String,
}

/// An event of the runtime. Serde form: `{"type": "<EventType>", ...fields}`
/// (see the [module docs](self)).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// `battle_started`.
    BattleStarted(BattleStarted),
    /// `contestant_updated`.
    ContestantUpdated(ContestantUpdated),
    /// `battle_updated`.
    BattleUpdated(BattleUpdated),
    /// `run_updated`.
    RunUpdated(RunUpdated),
    /// `step_updated`.
    StepUpdated(StepUpdated),
    /// `agent_output` (live only).
    AgentOutput(AgentOutput),
    /// `task_rescued`.
    TaskRescued(TaskRescued),
}

impl Event {
    /// The event's type: the `type` of its JSON.
    pub fn event_type(&self) -> EventType {
        match self {
            Event::BattleStarted(_) => EventType::BattleStarted,
            Event::ContestantUpdated(_) => EventType::ContestantUpdated,
            Event::BattleUpdated(_) => EventType::BattleUpdated,
            Event::RunUpdated(_) => EventType::RunUpdated,
            Event::StepUpdated(_) => EventType::StepUpdated,
            Event::AgentOutput(_) => EventType::AgentOutput,
            Event::TaskRescued(_) => EventType::TaskRescued,
        }
    }

    /// True for every event but `agent_output`: the store keeps it with a
    /// seq, and a resuming client gets it again.
    pub fn is_stored(&self) -> bool {
        self.event_type().is_stored()
    }

    /// The battle the event belongs to, if any (the `battle_id` filter of
    /// `GET /api/events`).
    pub fn battle_id(&self) -> Option<&str> {
        match self {
            Event::BattleStarted(e) => Some(&e.battle_id),
            Event::ContestantUpdated(e) => Some(&e.battle_id),
            Event::BattleUpdated(e) => Some(&e.battle_id),
            Event::TaskRescued(e) => e.battle_id.as_deref(),
            Event::AgentOutput(AgentOutput {
                source: OutputSource::Contestant { battle_id, .. },
                ..
            }) => Some(battle_id),
            _ => None,
        }
    }

    /// The run the event belongs to, if any (the `run_id` filter).
    pub fn run_id(&self) -> Option<&str> {
        match self {
            Event::RunUpdated(e) => Some(&e.run_id),
            Event::StepUpdated(e) => Some(&e.run_id),
            Event::TaskRescued(e) => e.run_id.as_deref(),
            Event::AgentOutput(AgentOutput {
                source: OutputSource::Step { run_id, .. },
                ..
            }) => Some(run_id),
            _ => None,
        }
    }
}

macro_rules! event_from {
    ($($ty:ident),+) => {$(
        impl From<$ty> for Event {
            fn from(e: $ty) -> Event {
                Event::$ty(e)
            }
        }
    )+};
}
event_from!(
    BattleStarted,
    ContestantUpdated,
    BattleUpdated,
    RunUpdated,
    StepUpdated,
    AgentOutput,
    TaskRescued
);

/// A stored event: its seq in the store, the store's epoch when it is sent
/// to a client, and the event. Serde form: the event's object with `seq`
/// (and `epoch`, when known) beside its fields.
///
/// The store holds only events for which [`Event::is_stored`] is true;
/// seqs are ≥ 1 and increase in commit order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredEvent {
    /// The position in the store's event log.
    pub seq: u64,
    /// The store's instance id, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epoch: Option<String>,
    /// The event.
    #[serde(flatten)]
    pub event: Event,
}

impl StoredEvent {
    /// The SSE id `<epoch>:<seq>`; `None` without an epoch or with an epoch
    /// that is not a valid one.
    pub fn sse_id(&self) -> Option<SseId> {
        SseId::new(self.epoch.as_deref()?, self.seq).ok()
    }
}

/// Why an SSE id (`Last-Event-ID`, `?after=`) did not parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SseIdErrorReason {
    /// Nothing was given.
    Empty,
    /// No `:` between the epoch and the seq.
    MissingSeparator,
    /// The epoch is empty, longer than 128 characters, or has a character
    /// other than ASCII letters, digits, `-`, `_` and `.`.
    BadEpoch,
    /// The seq is not a decimal number without sign or leading zeros that
    /// fits in 64 bits.
    BadSeq,
}
named_enum!(SseIdErrorReason, "sse id error reason", {
    Empty => "empty",
    MissingSeparator => "missing_separator",
    BadEpoch => "bad_epoch",
    BadSeq => "bad_seq",
});

/// An SSE id that did not parse.
///
/// Converts into [`crate::Error`] as `invalid_input` with the details
/// `given` and `reason`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("event id {given:?} is not <epoch>:<seq> ({}); send back the `id` of the last event received", .reason.as_str())]
pub struct SseIdError {
    /// The text given.
    pub given: String,
    /// Why it did not parse.
    pub reason: SseIdErrorReason,
}

impl From<SseIdError> for crate::Error {
    fn from(e: SseIdError) -> Self {
        crate::Error::invalid_input(e.to_string())
            .with_detail("given", e.given.as_str())
            .with_detail("reason", e.reason.as_str())
    }
}

/// The longest epoch an [`SseId`] accepts.
pub const MAX_EPOCH_LEN: usize = 128;

/// An SSE event id, `<epoch>:<seq>`.
///
/// Guarantees: the epoch is 1–[`MAX_EPOCH_LEN`] ASCII letters, digits, `-`,
/// `_` or `.` (so the id never holds a `:` but the one separator, nor a
/// newline); `SseId::parse(&id.to_string()) == Ok(id)`, and
/// `SseId::parse(s).map(|id| id.to_string()) == Ok(s.trim())` for every
/// accepted `s` (one canonical spelling).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SseId {
    epoch: String,
    seq: u64,
}

fn valid_epoch(epoch: &str) -> bool {
    !epoch.is_empty()
        && epoch.len() <= MAX_EPOCH_LEN
        && epoch
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

fn parse_seq(text: &str) -> Option<u64> {
    let canonical = !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_digit())
        && (text == "0" || !text.starts_with('0'));
    if canonical {
        text.parse().ok()
    } else {
        None
    }
}

impl SseId {
    /// The id of `seq` in the store `epoch`; refused when the epoch is not
    /// valid (see the type's guarantees).
    pub fn new(epoch: impl Into<String>, seq: u64) -> Result<SseId, SseIdError> {
        let epoch = epoch.into();
        if !valid_epoch(&epoch) {
            return Err(SseIdError {
                given: format!("{epoch}:{seq}"),
                reason: SseIdErrorReason::BadEpoch,
            });
        }
        Ok(SseId { epoch, seq })
    }

    /// Parses `<epoch>:<seq>` (surrounding whitespace ignored).
    pub fn parse(text: &str) -> Result<SseId, SseIdError> {
        let fail = |reason| {
            Err(SseIdError {
                given: text.to_owned(),
                reason,
            })
        };
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return fail(SseIdErrorReason::Empty);
        }
        let Some((epoch, seq)) = trimmed.split_once(':') else {
            return fail(SseIdErrorReason::MissingSeparator);
        };
        if !valid_epoch(epoch) {
            return fail(SseIdErrorReason::BadEpoch);
        }
        match parse_seq(seq) {
            Some(seq) => Ok(SseId {
                epoch: epoch.to_owned(),
                seq,
            }),
            None => fail(SseIdErrorReason::BadSeq),
        }
    }

    /// Parses a resume cursor: `<epoch>:<seq>`, or a bare `<seq>` (as a
    /// person writes `?after=120`), which is taken as a seq of
    /// `store_epoch`.
    pub fn parse_cursor(text: &str, store_epoch: &str) -> Result<SseId, SseIdError> {
        let trimmed = text.trim();
        if !trimmed.is_empty() && !trimmed.contains(':') {
            return match parse_seq(trimmed) {
                Some(seq) => SseId::new(store_epoch, seq),
                None => Err(SseIdError {
                    given: text.to_owned(),
                    reason: SseIdErrorReason::BadSeq,
                }),
            };
        }
        SseId::parse(text)
    }

    /// The store's epoch.
    pub fn epoch(&self) -> &str {
        &self.epoch
    }

    /// The seq.
    pub fn seq(&self) -> u64 {
        self.seq
    }
}

impl fmt::Display for SseId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.epoch, self.seq)
    }
}

impl std::str::FromStr for SseId {
    type Err = SseIdError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SseId::parse(s)
    }
}

/// What the store has, as the replay decision needs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreWindow {
    /// The store's instance id.
    pub epoch: String,
    /// The oldest seq still retained (older ones were compacted away).
    /// Read as at most `newest + 1`: a store retaining nothing.
    pub oldest_retained: u64,
    /// The newest seq committed (0 for an empty store).
    pub newest: u64,
}

impl StoreWindow {
    /// `oldest_retained`, clamped to `1..=newest + 1`.
    pub fn oldest(&self) -> u64 {
        self.oldest_retained.clamp(1, self.newest.saturating_add(1))
    }
}

/// What to send a subscribing client before live events (see the table in
/// the [module docs](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum ReplayDecision {
    /// Replay the events with `seq > after`, then go live.
    Replay {
        /// The client's seq.
        after: u64,
    },
    /// No cursor: live events only.
    Live,
    /// The events `after + 1 ..= oldest − 1` are gone: say so, replay
    /// `seq ≥ oldest`, then go live.
    Gap {
        /// The client's seq.
        after: u64,
        /// The oldest retained seq.
        oldest: u64,
    },
    /// The cursor is not from this store's history: send `event: reset`,
    /// replay every retained event, then go live.
    Reset,
}

impl ReplayDecision {
    /// The seq to replay after (`SELECT … WHERE seq > after`), or `None`
    /// for no replay (`Live`). `Reset` replays everything retained
    /// (`window.oldest() − 1`).
    pub fn replay_after(self, window: &StoreWindow) -> Option<u64> {
        match self {
            ReplayDecision::Replay { after } => Some(after),
            ReplayDecision::Gap { oldest, .. } => Some(oldest - 1),
            ReplayDecision::Reset => Some(window.oldest() - 1),
            ReplayDecision::Live => None,
        }
    }

    /// The seq the client already has everything up to: the `after` of
    /// [`merge_replay`]. `None` for `Live` (no cursor) and `Reset` (the
    /// client's seqs are from another history).
    pub fn delivered_after(self) -> Option<u64> {
        match self {
            ReplayDecision::Replay { after } | ReplayDecision::Gap { after, .. } => Some(after),
            ReplayDecision::Live | ReplayDecision::Reset => None,
        }
    }
}

/// The replay decision for a client at `cursor` (see the table in the
/// [module docs](self)). Total: every cursor and window gives a decision.
pub fn decide_replay(cursor: Option<&SseId>, window: &StoreWindow) -> ReplayDecision {
    let Some(cursor) = cursor else {
        return ReplayDecision::Live;
    };
    if cursor.epoch != window.epoch || cursor.seq > window.newest {
        return ReplayDecision::Reset;
    }
    let oldest = window.oldest();
    if cursor.seq + 1 >= oldest {
        ReplayDecision::Replay { after: cursor.seq }
    } else {
        ReplayDecision::Gap {
            after: cursor.seq,
            oldest,
        }
    }
}

/// What to send after the replay decision: the `replayed` events (read
/// from the store) and the `live_buffer` (what the live subscription
/// received since it started, which may overlap the replay and may even
/// start before the client's cursor), merged.
///
/// Returns the events with `seq > after` (all of them for `None`), each seq
/// once (the replayed copy when both have it), in increasing seq order.
/// `after` is [`ReplayDecision::delivered_after`]: without it, an event
/// committed between the subscription and the store read could reach a
/// client that already has it.
pub fn merge_replay(
    after: Option<u64>,
    live_buffer: Vec<StoredEvent>,
    replayed: Vec<StoredEvent>,
) -> Vec<StoredEvent> {
    let mut all: Vec<StoredEvent> = replayed
        .into_iter()
        .chain(live_buffer)
        .filter(|e| after.is_none_or(|a| e.seq > a))
        .collect();
    // A stable sort keeps the replayed copy first among equal seqs.
    all.sort_by_key(|e| e.seq);
    all.dedup_by_key(|e| e.seq);
    all
}
