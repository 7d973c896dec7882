//! What the faces show of a run: one snapshot of the store, decoded.

use super::data::{
    decode, driver_owner_id, step_of_owner, ApprovalRecord, AttemptRecord, RunData, StepData,
    SwitchRecord,
};
use crate::error::Error;
use crate::event::RunStatus;
use crate::flow::{SkipReason, StepStatus};
use crate::store::{Millis, Work, WorkSnapshot};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A run as a list shows it (no steps).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RunSummary {
    /// The run's id (32 hex).
    pub id: String,
    /// The flow's name, when it has one.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub name: Option<String>,
    /// `running`, `waiting`, `completed`, `failed` or `cancelled`.
    pub status: RunStatus,
    /// Why it failed (an error object).
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    #[cfg_attr(feature = "openapi", schema(required))]
    pub error: Option<Value>,
    /// When it was created (ms since the epoch, database clock).
    pub created_at: Millis,
    /// When it last changed.
    pub updated_at: Millis,
}

/// One step of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StepView {
    /// The step's id in the flow.
    pub id: String,
    /// `agent`, `command`, `code`, `approval`, `switch` or `do_while`
    /// (a [`crate::flow::RunStepKind`]'s name: the driver records
    /// `StepAction::kind`).
    #[cfg_attr(feature = "openapi", schema(value_type = crate::flow::RunStepKind))]
    pub kind: String,
    /// `pending`, `running`, `waiting`, `done`, `failed`, `skipped`,
    /// `timed_out` or `cancelled`.
    pub status: StepStatus,
    /// The current (or last) attempt, 1 for the first; 0 before any.
    pub attempt: u32,
    /// The loop iteration the status belongs to, from 1 (0 outside loops;
    /// for a `do_while`: the iterations completed before the current one).
    pub iteration: u32,
    /// Why it was skipped.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub skip_reason: Option<SkipReason>,
    /// Its result, any JSON value: text for agents and commands, a code
    /// step's value, an approval's decision, a switch's label, a loop's
    /// iteration count.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub output: Option<Value>,
    /// The last attempt's error (an error object).
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    #[cfg_attr(feature = "openapi", schema(required))]
    pub error: Option<Value>,
    /// A command's exit code.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub exit_code: Option<i32>,
    /// When the current attempt started.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub started_at: Option<Millis>,
    /// When the step settled.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub finished_at: Option<Millis>,
    /// When the running attempt times out.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub deadline_at: Option<Millis>,
    /// A retry waits until then.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub available_at: Option<Millis>,
    /// A switch's decision.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub switch: Option<SwitchRecord>,
    /// An approval step's message.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub message: Option<String>,
    /// An approval's decision.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub approval: Option<ApprovalRecord>,
    /// Finished attempts, oldest first.
    pub attempts: Vec<AttemptRecord>,
}

/// A run with its steps (`GET /api/runs/{id}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RunView {
    /// The run's id.
    pub id: String,
    /// The flow's name.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub name: Option<String>,
    /// The run's status.
    pub status: RunStatus,
    /// Its input.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub input: Value,
    /// Why it failed.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    #[cfg_attr(feature = "openapi", schema(required))]
    pub error: Option<Value>,
    /// The rendered report, once it ended (when the flow has one).
    #[cfg_attr(feature = "openapi", schema(required))]
    pub report: Option<String>,
    /// The spec it runs.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub spec: Value,
    /// When it was created.
    pub created_at: Millis,
    /// When it last changed.
    pub updated_at: Millis,
    /// When it ended.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub finished_at: Option<Millis>,
    /// Its steps, in flow order.
    pub steps: Vec<StepView>,
}

impl RunView {
    /// The step `id`, if the flow has one.
    pub fn step(&self, id: &str) -> Option<&StepView> {
        self.steps.iter().find(|s| s.id == id)
    }
}

/// One page of runs, newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RunPage {
    /// The runs.
    pub runs: Vec<RunSummary>,
    /// The cursor of the next page (`None`: this is the last).
    #[cfg_attr(feature = "openapi", schema(required))]
    pub next_cursor: Option<String>,
}

/// Which runs `Engine::list_runs` returns: what every face's list of runs
/// takes (`GET /api/runs`'s query, `rig.runs(filter)`), decoded strictly —
/// an unknown key is refused.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema, utoipa::IntoParams))]
#[cfg_attr(feature = "openapi", into_params(parameter_in = Query))]
pub struct RunFilter {
    /// Only runs in this status.
    pub status: Option<RunStatus>,
    /// At most this many (1–500, default 50).
    #[cfg_attr(feature = "openapi", param(minimum = 1, maximum = 500))]
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 500))]
    pub limit: Option<u32>,
    /// The `next_cursor` of the previous page, unchanged.
    pub cursor: Option<String>,
}

pub(crate) fn run_status(work: &Work) -> Result<RunStatus, Error> {
    work.status.parse::<RunStatus>().map_err(|_| {
        Error::internal(format!(
            "run {:?} has the unknown status {:?}",
            work.id, work.status
        ))
    })
}

/// The summary of a stored run.
pub fn run_summary(work: &Work) -> Result<RunSummary, Error> {
    let data: RunData = decode("run", &work.id, &work.data)?;
    Ok(RunSummary {
        id: work.id.clone(),
        name: data.name,
        status: run_status(work)?,
        error: data.error,
        created_at: work.created_at,
        updated_at: work.updated_at,
    })
}

/// The view of one stored run with its steps (the driver's row left out).
pub fn run_view(snapshot: &WorkSnapshot) -> Result<RunView, Error> {
    let work = &snapshot.work;
    let data: RunData = decode("run", &work.id, &work.data)?;
    let driver = driver_owner_id(&work.id);
    let mut steps = Vec::with_capacity(snapshot.owners.len());
    for owner in &snapshot.owners {
        if owner.id == driver || step_of_owner(&work.id, &owner.id).is_none() {
            continue;
        }
        let d: StepData = decode("step", &owner.id, &owner.data)?;
        let status = owner.status.parse::<StepStatus>().map_err(|_| {
            Error::internal(format!(
                "step {:?} has the unknown status {:?}",
                owner.id, owner.status
            ))
        })?;
        steps.push(StepView {
            id: d.step_id,
            kind: d.kind,
            status,
            attempt: d.attempt,
            iteration: d.iteration,
            skip_reason: d.skip_reason,
            output: d.output,
            error: d.error,
            exit_code: d.exit_code,
            started_at: d.started_at,
            finished_at: d.finished_at,
            deadline_at: d.deadline_at,
            available_at: d.available_at,
            switch: d.switch,
            message: d.message,
            approval: d.approval,
            attempts: d.attempts,
        });
    }
    Ok(RunView {
        id: work.id.clone(),
        name: data.name,
        status: run_status(work)?,
        input: data.input,
        error: data.error,
        report: data.report,
        spec: data.spec,
        created_at: work.created_at,
        updated_at: work.updated_at,
        finished_at: data.finished_at,
        steps,
    })
}
