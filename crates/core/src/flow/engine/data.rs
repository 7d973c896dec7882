//! The engine's stored shapes: what a run's work row and each step's owner
//! row hold in their `data`. The store keeps them opaque; these types are
//! the one place that reads and writes them, so a restarted engine (or
//! another server) reads exactly what the last holder wrote.

use crate::error::Error;
use crate::flow::{AttemptOutcome, SkipReason, StepStatus};
use crate::sandbox::SandboxReport;
use crate::store::{Millis, Store};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A run's `data`: its spec, its input, and what it ended with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunData {
    /// The flow's name (`None` for an unnamed inline spec).
    #[serde(default)]
    pub name: Option<String>,
    /// The spec as `FlowSpec::to_json` wrote it (decoded again on resume).
    pub spec: Value,
    /// The run's input (`input` of templates and conditions).
    #[serde(default)]
    pub input: Value,
    /// The ids of its `code` steps: they run only in a process that holds
    /// their callables.
    #[serde(default)]
    pub code_steps: Vec<String>,
    /// The rendered report, once the run ended.
    #[serde(default)]
    pub report: Option<String>,
    /// Why the run failed (an error object).
    #[serde(default)]
    pub error: Option<Value>,
    /// When it ended (wall clock of the driver).
    #[serde(default)]
    pub finished_at: Option<Millis>,
}

/// One finished attempt of a step, kept in its history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AttemptRecord {
    /// The attempt's number (1 for the first) within its iteration.
    pub attempt: u32,
    /// The loop iteration it ran in (0 outside loops).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required))]
    pub iteration: u32,
    /// How it ended: `done`, `failed`, `timed_out`, `cancelled` or
    /// `interrupted` (its holder died).
    pub outcome: AttemptOutcome,
    /// Its error, when it did not succeed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub error: Option<Value>,
    /// What the sandbox of a command step's attempt enforced, as the
    /// kernel applied it: mode, whether everything was `confined`, the
    /// Landlock ABI, writable paths, network, limits, and what `auto`
    /// could not enforce (`unenforced`, with why). Absent when no process
    /// started (another kind of step, a refusal, an interrupted attempt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxReport>,
    /// When it started (ms since the epoch).
    pub started_at: Millis,
    /// When it ended.
    pub finished_at: Millis,
}

/// A human's decision on an approval step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApprovalRecord {
    /// Approved (`true`) or rejected.
    pub approved: bool,
    /// Who decided (as the caller said).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required))]
    pub by: Option<String>,
    /// Their comment.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required))]
    pub comment: Option<String>,
    /// When.
    pub at: Millis,
}

/// A step owner's `data`: everything a driver needs to rebuild its part
/// of the scheduler, and everything a view shows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StepData {
    /// The step's id in the flow.
    pub step_id: String,
    /// Its kind (`agent`, `command`, `code`, `approval`, `switch`,
    /// `do_while`).
    pub kind: String,
    /// The current (or last) attempt's number; 0 before the first.
    #[serde(default)]
    pub attempt: u32,
    /// The loop iteration its status belongs to, from 1 (0 outside loops;
    /// for a `do_while` itself: the iterations completed before the
    /// current one).
    #[serde(default)]
    pub iteration: u32,
    /// Why it was skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip_reason: Option<SkipReason>,
    /// Its result: an agent's final text, a command's stdout, a code
    /// step's value, an approval's decision, a switch's chosen label, a
    /// loop's iteration count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// The last attempt's error (an error object).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
    /// A command's exit code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// When the current attempt started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Millis>,
    /// When the step settled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<Millis>,
    /// When the running attempt times out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_at: Option<Millis>,
    /// A retry's attempt does not start before this (backoff with jitter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_at: Option<Millis>,
    /// A switch's choice (`None` inside: no case matched) and the steps it
    /// excluded; present once the switch decided, never re-evaluated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switch: Option<SwitchRecord>,
    /// An approval step's message, once it waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// An approval's decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalRecord>,
    /// Finished attempts, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<AttemptRecord>,
}

/// A switch's persisted decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SwitchRecord {
    /// The chosen case's label (`None`: no case matched).
    #[cfg_attr(feature = "openapi", schema(required))]
    pub chosen: Option<String>,
    /// The steps it skipped as `branch_not_taken`.
    pub excluded: Vec<String>,
}

/// The statuses of a run that is not over.
pub const LIVE_RUN: &[&str] = &["running", "waiting"];

/// True for a step status nothing changes any more within its iteration.
pub fn is_settled(status: StepStatus) -> bool {
    matches!(
        status,
        StepStatus::Done
            | StepStatus::Failed
            | StepStatus::Skipped
            | StepStatus::TimedOut
            | StepStatus::Cancelled
    )
}

/// Decodes a stored shape, naming the row when it is not one.
pub fn decode<T: DeserializeOwned>(what: &str, id: &str, data: &Value) -> Result<T, Error> {
    serde_json::from_value(data.clone())
        .map_err(|e| Error::internal(format!("the stored {what} {id:?} is unreadable: {e}")))
}

/// Encodes a stored shape.
pub fn encode<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// The local wall clock in ms since the epoch: for seeds, never timers.
pub fn now_ms() -> Millis {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as Millis)
        .unwrap_or(0)
}

/// The store's clock ([`Store::clock_ms`]) as a driver reads it for its
/// timers (deadlines, backoff, started/finished times): sampled from the
/// database, then carried forward by the local monotonic clock, so a
/// deadline one server persisted falls due at the same moment for the
/// server that takes the run over after a crash, whatever the skew of
/// their wall clocks (leases already live on this clock), and a wall clock
/// stepped meanwhile changes nothing. Resampled every
/// [`DbClock::RESAMPLE`] to follow the database's own drift.
#[derive(Debug, Clone, Copy)]
pub struct DbClock {
    /// The database clock at `sampled`.
    at: Millis,
    sampled: std::time::Instant,
}

impl DbClock {
    /// How old a sample may get before the driver reads the database again.
    pub const RESAMPLE: std::time::Duration = std::time::Duration::from_secs(60);

    /// Reads the store's clock once (half the round trip counted as the
    /// read's moment).
    pub async fn sample(store: &dyn Store) -> Result<DbClock, Error> {
        let before = std::time::Instant::now();
        let at = store.clock_ms().await?;
        let trip = before.elapsed();
        Ok(DbClock {
            at,
            sampled: before + trip / 2,
        })
    }

    /// The database clock now, in ms.
    pub fn now(&self) -> Millis {
        self.at + self.sampled.elapsed().as_millis() as Millis
    }

    /// True when the sample is older than [`DbClock::RESAMPLE`].
    pub fn stale(&self) -> bool {
        self.sampled.elapsed() > Self::RESAMPLE
    }
}

/// The owner id of step `step_id` of run `run_id` (step ids have no `:`).
pub fn step_owner_id(run_id: &str, step_id: &str) -> String {
    format!("{run_id}:{step_id}")
}

/// The owner id of a run's driver (the row its driver task belongs to).
pub fn driver_owner_id(run_id: &str) -> String {
    format!("{run_id}:~driver")
}

/// The task id of a run's driver.
pub fn driver_task_id(run_id: &str) -> String {
    format!("{run_id}-driver")
}

/// The step id of a step owner's id, `None` for the driver's.
pub fn step_of_owner<'a>(run_id: &str, owner_id: &'a str) -> Option<&'a str> {
    let rest = owner_id.strip_prefix(run_id)?.strip_prefix(':')?;
    (!rest.starts_with('~')).then_some(rest)
}
