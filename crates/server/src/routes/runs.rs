//! The flow and run routes over the flow engine (`coderig::flow::engine`):
//! the registered flows, start a run (a registered flow by name or an
//! inline spec), list and read runs, cancel one, approve or reject its
//! approval steps.
//!
//! Every route is a thin call of [`coderig::flow::engine::Engine`]: an
//! inline spec is decoded by the core's strict `FlowSpec::from_json` (the
//! decoder every face uses) and compiled by the engine (CEL conditions and
//! templates included), and the engine's errors keep their kinds, details
//! and paths (400 `invalid_input` with every problem, 404 `not_found_id`,
//! 409 `conflict`), so the HTTP face answers as the CLI, Python and Node do.
//! Follow a run's progress on `GET /api/events?run_id=`.

use super::{bad_query, ApiPath, Route};
use crate::json::OptionalBody;
use crate::schema::{PayloadTooLarge, RunConflict, RunInvalidInput, RunNotFoundId};
use crate::{ApiError, ApiJson, AppState, RawBody};
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use coderig::flow::engine::{Decision, FlowSource, NewRun, RunFilter, RunPage, RunView, StepView};
use coderig::flow::runspec::FlowSpec;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub(super) fn routes() -> Vec<Route> {
    vec![
        Route::get("/api/flows", list_flows),
        Route::post("/api/runs", create_run),
        Route::get("/api/runs", list_runs),
        Route::get("/api/runs/{id}", get_run),
        Route::post("/api/runs/{id}/cancel", cancel_run),
        Route::post("/api/runs/{id}/steps/{step}/approve", approve_step),
        Route::post("/api/runs/{id}/steps/{step}/reject", reject_step),
    ]
}

/// `GET /api/flows`: the registered flows.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct FlowList {
    /// Every flow of `coderig serve --flows DIR`, by name, each in the
    /// canonical JSON form (`FlowSpec::to_json`: defaults filled in,
    /// durations in seconds), which `POST /api/runs {spec}` takes back.
    #[schema(value_type = Vec<FlowSpec>)]
    flows: Vec<Value>,
}

/// The flows this server runs by name (`coderig serve --flows DIR`; a
/// file's stem names a spec that has no `name`), sorted by name; empty
/// when it registered none.
#[utoipa::path(get, tag = "runs", path = "/api/flows",
    responses(
        (status = 200, description = "The registered flows.", body = FlowList),
    ))]
pub(crate) async fn list_flows(
    State(state): State<AppState>,
) -> Result<ApiJson<FlowList>, ApiError> {
    let flows = state
        .engine()
        .flows()
        .iter()
        .map(FlowSpec::to_json)
        .collect();
    Ok(ApiJson(FlowList { flows }))
}

/// The body of `POST /api/runs`, decoded before the spec (whose own
/// decoder reports its problems).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RunRequest {
    /// A registered flow's name (`null`: not given).
    #[serde(default)]
    flow: Option<String>,
    /// An inline spec (`null`: not given).
    #[serde(default)]
    spec: Option<Value>,
    /// The run's input (`null`: `{}`).
    #[serde(default)]
    input: Option<Value>,
}

/// `POST /api/runs`: the new run's id.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct RunCreated {
    /// The run's id (32 hex digits): `GET /api/runs/{id}`, and the
    /// `run_id` of its events.
    #[schema(pattern = "^[0-9a-f]{32}$")]
    run_id: String,
}

/// Starts a run: of a registered flow (`{"flow": NAME}`) or of an inline
/// spec (`{"spec": {...}}`, DESIGN "flow runtime"), exactly one of them,
/// with an optional `input` object (templates' and conditions' `input`).
///
/// The spec is decoded strictly and compiled before anything is created:
/// unknown fields, duplicate ids, unknown dependencies, cycles, bad CEL
/// conditions and bad templates are all reported at once (`details.problems`,
/// each `{path, message}` with its path in the spec, `steps[2].when`;
/// `details.path` is the first one's), as are agent steps naming an agent
/// this server does not configure and `code` steps (they need a callable,
/// which only the Rust, Python and Node APIs can pass). The run is
/// `running` when this answers; follow it on `GET /api/events?run_id=`.
#[utoipa::path(post, tag = "runs", path = "/api/runs", request_body = crate::schema::RunRequestBody,
    responses(
        (status = 201, description = "Created: the run's id (the run is `running`).", body = RunCreated),
        (status = 400, description = "invalid_input, nothing created: both or neither of `flow` and `spec`, an unknown flow name (path `flow`), a spec the decoder or the compiler refuses — also a schema-valid one that breaks a rule no schema states (a dependency on an unknown step, a cycle, a duplicate id, a bad CEL expression or template, an unknown agent, a `code` step) — or an `input` that is not an object.", body = RunInvalidInput),
        (status = 413, description = "payload_too_large.", body = PayloadTooLarge),
    ))]
pub(crate) async fn create_run(
    State(state): State<AppState>,
    RawBody(value): RawBody,
) -> Result<Response, ApiError> {
    let engine = state.engine();
    let body: RunRequest = coderig::json::decode_object(value)?;
    let flow = match (body.flow, body.spec) {
        (Some(name), None) => FlowSource::Named(name),
        (None, Some(spec)) => FlowSource::Spec(FlowSpec::from_json(&spec)?),
        (Some(_), Some(_)) => {
            return Err(coderig::Error::invalid_at(
                "spec",
                "give `flow` (a registered flow's name) or `spec` (an inline spec), not both",
            )
            .into())
        }
        (None, None) => {
            return Err(coderig::Error::invalid_at(
                "flow",
                "required: `flow` (a registered flow's name, GET /api/flows) or `spec` (an inline spec)",
            )
            .into())
        }
    };
    let run_id = engine
        .start_run(NewRun {
            flow,
            input: body.input.unwrap_or(Value::Null),
            code: Default::default(),
        })
        .await?;
    Ok((StatusCode::CREATED, ApiJson(RunCreated { run_id })).into_response())
}

/// Runs, newest first, one page at a time (`next_cursor` is `null` on the
/// last page).
#[utoipa::path(get, tag = "runs", path = "/api/runs", params(RunFilter),
    responses(
        (status = 200, description = "One page of runs.", body = RunPage),
        (status = 400, description = "invalid_input: an unknown status, a limit outside 1–500, a cursor that is not an earlier page's next_cursor, an unknown parameter.", body = RunInvalidInput),
    ))]
pub(crate) async fn list_runs(
    State(state): State<AppState>,
    query: Result<Query<RunFilter>, QueryRejection>,
) -> Result<ApiJson<RunPage>, ApiError> {
    let Query(filter) = query.map_err(|e| {
        bad_query(
            "/api/runs",
            "status (running, waiting, completed, failed, cancelled), limit (1–500) and cursor",
            e,
        )
    })?;
    let page = state.engine().list_runs(&filter).await?;
    Ok(ApiJson(page))
}

/// The run's id in the path.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct RunId {
    /// The run's id (`run_id` of `POST /api/runs`): 32 hex digits. Any
    /// other text names no run (404).
    #[param(pattern = "^[0-9a-f]{32}$")]
    id: String,
}

/// The run's and a step's ids in the path.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct StepPath {
    /// The run's id: 32 hex digits.
    #[param(pattern = "^[0-9a-f]{32}$")]
    id: String,
    /// The step's id in the run's flow (`steps[].id`).
    #[param(pattern = "^[A-Za-z0-9_-]{1,100}$")]
    step: String,
}

/// One run with its steps: status, attempt, skip reason, output, error and
/// timings of each, in flow order.
#[utoipa::path(get, tag = "runs", path = "/api/runs/{id}", params(RunId),
    responses(
        (status = 200, description = "The run.", body = RunView),
        (status = 404, description = "not_found_id: no such run.", body = RunNotFoundId),
    ))]
pub(crate) async fn get_run(
    State(state): State<AppState>,
    ApiPath(RunId { id }): ApiPath<RunId>,
) -> Result<ApiJson<RunView>, ApiError> {
    Ok(ApiJson(state.engine().run(&id).await?))
}

/// Cancels a live run (`running` or `waiting`): it is `cancelled` at once;
/// its driver stops the running steps (their process groups killed) and
/// marks the unfinished ones `cancelled`.
#[utoipa::path(post, tag = "runs", path = "/api/runs/{id}/cancel", params(RunId),
    responses(
        (status = 200, description = "Cancelled: the run, `cancelled` (its steps follow as the driver stops them).", body = RunView),
        (status = 404, description = "not_found_id: no such run.", body = RunNotFoundId),
        (status = 409, description = "conflict: the run already ended.", body = RunConflict),
    ))]
pub(crate) async fn cancel_run(
    State(state): State<AppState>,
    ApiPath(RunId { id }): ApiPath<RunId>,
) -> Result<ApiJson<RunView>, ApiError> {
    Ok(ApiJson(state.engine().cancel(&id).await?))
}

/// Approves a `waiting` approval step: it is `done`, the decision (who,
/// comment, when) its output, and the run goes on.
#[utoipa::path(post, tag = "runs", path = "/api/runs/{id}/steps/{step}/approve", params(StepPath),
    request_body(content = Option<Decision>, description = "Optional; no body records no name and no comment."),
    responses(
        (status = 200, description = "Approved: the step, `done`.", body = StepView),
        (status = 400, description = "invalid_input: a bad body.", body = RunInvalidInput),
        (status = 404, description = "not_found_id: no such run, or no such step in it.", body = RunNotFoundId),
        (status = 409, description = "conflict: the step is not an approval waiting for a decision (`details.status`: decided already, not reached yet, or the run ended).", body = RunConflict),
        (status = 413, description = "payload_too_large.", body = PayloadTooLarge),
    ))]
pub(crate) async fn approve_step(
    State(state): State<AppState>,
    ApiPath(StepPath { id, step }): ApiPath<StepPath>,
    OptionalBody(body): OptionalBody<Decision>,
) -> Result<ApiJson<StepView>, ApiError> {
    let view = state.engine().approve(&id, &step, body).await?;
    Ok(ApiJson(view))
}

/// Rejects a `waiting` approval step: it `failed` (its error says who
/// rejected it and why), and the trigger rules of the steps after it
/// decide what runs next.
#[utoipa::path(post, tag = "runs", path = "/api/runs/{id}/steps/{step}/reject", params(StepPath),
    request_body(content = Option<Decision>, description = "Optional; no body records no name and no comment."),
    responses(
        (status = 200, description = "Rejected: the step, `failed`.", body = StepView),
        (status = 400, description = "invalid_input: a bad body.", body = RunInvalidInput),
        (status = 404, description = "not_found_id: no such run, or no such step in it.", body = RunNotFoundId),
        (status = 409, description = "conflict: the step is not an approval waiting for a decision (`details.status`: decided already, not reached yet, or the run ended).", body = RunConflict),
        (status = 413, description = "payload_too_large.", body = PayloadTooLarge),
    ))]
pub(crate) async fn reject_step(
    State(state): State<AppState>,
    ApiPath(StepPath { id, step }): ApiPath<StepPath>,
    OptionalBody(body): OptionalBody<Decision>,
) -> Result<ApiJson<StepView>, ApiError> {
    let view = state.engine().reject(&id, &step, body).await?;
    Ok(ApiJson(view))
}
