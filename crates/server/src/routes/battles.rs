//! The battle routes over the arena runtime (`coderig::arena::runner`):
//! start, list, read, stop, analyze, name the winner, read diffs and the
//! analysis, cross-examine, apply, and the leaderboard.
//!
//! Every route is a thin call of [`coderig::arena::runner::Arena`]: the
//! spec is decoded by the core's strict `BattleSpec::from_json` (the
//! decoder every face uses), projects are confined to the server's
//! `--project-root`s by [`AppState::confine_project`] before the arena sees
//! them, and the arena's errors keep their kinds (400 `invalid_input`, 404
//! `not_found_id`, 409 `conflict`).

use super::{bad_query, ApiPath, Route};
use crate::json::OptionalBody;
use crate::schema::{BattleInvalidInput, Conflict, NotFoundId, PayloadTooLarge};
use crate::{ApiError, ApiJson, AppState, RawBody};
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use coderig::arena::runner::{
    Applied, BattleFilter, BattlePage, BattleView, Leaderboard, LeaderboardFilter,
};
use coderig::arena::{AgentRef, BattleSpec};
use serde::{Deserialize, Deserializer, Serialize};

pub(super) fn routes() -> Vec<Route> {
    vec![
        Route::post("/api/battles", create_battle),
        Route::get("/api/battles", list_battles),
        Route::get("/api/battles/{id}", get_battle),
        Route::post("/api/battles/{id}/stop", stop_battle),
        Route::post("/api/battles/{id}/analyze", analyze_battle),
        Route::get("/api/battles/{id}/analysis", get_analysis),
        Route::patch("/api/battles/{id}/winner", set_winner),
        Route::get("/api/battles/{id}/contestants/{cid}/diff", get_diff),
        Route::get("/api/battles/{id}/contestants/{cid}/result", get_result),
        Route::post("/api/battles/{id}/cross-examine", cross_examine),
        Route::post("/api/battles/{id}/apply", apply_battle),
        Route::get("/api/leaderboard", leaderboard),
    ]
}

/// A project a request names, confined to the server's project roots and
/// canonical (see [`AppState::confine_project`]).
fn confine(state: &AppState, project: &str) -> Result<String, ApiError> {
    Ok(state.confine_project(project)?.display().to_string())
}

/// `POST /api/battles`: the battle and its id.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct BattleCreated {
    /// The new battle's id.
    battle_id: String,
    /// The battle as it is now (`running`, every contestant `queued` or
    /// already `running`).
    battle: BattleView,
}

/// Starts a battle. The body is a battle spec (DESIGN "arena runtime"),
/// decoded by the core's strict `BattleSpec::from_json`: every problem is
/// reported at once (`details.problems`, each `{path, message}`; `path` is
/// the first one's). A `project` is confined to the server's
/// `--project-root`s (relative paths are relative to the first) and must
/// be the top level of a git repository for a coding battle. Nothing is
/// created when the answer is an error.
#[utoipa::path(post, tag = "battles", path = "/api/battles", request_body = BattleSpec,
    responses(
        (status = 201, description = "Created: its id and the battle (`running`).", body = BattleCreated),
        (status = 400, description = "invalid_input: a bad spec (every problem in `details.problems`), an unknown identity, 1 or 7 contestants, a duplicate, a project outside the project roots or not a git repository, a base that does not resolve.", body = BattleInvalidInput),
        (status = 413, description = "payload_too_large.", body = PayloadTooLarge),
    ))]
pub(crate) async fn create_battle(
    State(state): State<AppState>,
    RawBody(value): RawBody,
) -> Result<Response, ApiError> {
    let arena = state.arena();
    let mut spec = BattleSpec::from_json(&value)?;
    if let Some(project) = &spec.project {
        spec.project = Some(confine(&state, project)?);
    }
    let battle = arena.start_battle(spec).await?;
    Ok((
        StatusCode::CREATED,
        ApiJson(BattleCreated {
            battle_id: battle.id.clone(),
            battle,
        }),
    )
        .into_response())
}

/// Battles, newest first, one page at a time (`next_cursor` is `null` on
/// the last page).
#[utoipa::path(get, tag = "battles", path = "/api/battles", params(BattleFilter),
    responses(
        (status = 200, description = "One page of battles.", body = BattlePage),
        (status = 400, description = "invalid_input: a bad filter, a limit outside 1–500, a cursor that is not an earlier page's next_cursor, a project outside the project roots.", body = BattleInvalidInput),
    ))]
pub(crate) async fn list_battles(
    State(state): State<AppState>,
    query: Result<Query<BattleFilter>, QueryRejection>,
) -> Result<ApiJson<BattlePage>, ApiError> {
    let Query(mut filter) = query.map_err(|e| {
        bad_query(
            "/api/battles",
            "project, status, limit (1–500) and cursor",
            e,
        )
    })?;
    if let Some(p) = &filter.project {
        filter.project = Some(confine(&state, p)?);
    }
    let page = state.arena().list_battles(&filter).await?;
    Ok(ApiJson(page))
}

/// The battle's id in the path.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct BattleId {
    /// The battle's id (`battle_id` of `POST /api/battles`): 32 hex digits.
    /// Any other text names no battle (404).
    #[param(pattern = "^[0-9a-f]{32}$")]
    id: String,
}

/// The battle's and a contestant's ids in the path.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct ContestantPath {
    /// The battle's id: 32 hex digits.
    #[param(pattern = "^[0-9a-f]{32}$")]
    id: String,
    /// The contestant's id (`contestants[].id` of the battle): the battle's
    /// id, `-c` and its place in the spec (1–6).
    #[param(pattern = "^[0-9a-f]{32}-c[1-6]$")]
    cid: String,
}

/// One battle with its contestants and cross-examinations.
#[utoipa::path(get, tag = "battles", path = "/api/battles/{id}", params(BattleId),
    responses(
        (status = 200, description = "The battle.", body = BattleView),
        (status = 404, description = "not_found_id: no such battle.", body = NotFoundId),
    ))]
pub(crate) async fn get_battle(
    State(state): State<AppState>,
    ApiPath(BattleId { id }): ApiPath<BattleId>,
) -> Result<ApiJson<BattleView>, ApiError> {
    Ok(ApiJson(state.arena().battle(&id).await?))
}

/// Stops a running or judging battle: it is `cancelled`, its agents
/// stopped (their process groups), its unfinished contestants `cancelled`.
#[utoipa::path(post, tag = "battles", path = "/api/battles/{id}/stop", params(BattleId),
    responses(
        (status = 200, description = "Stopped: the battle, `cancelled`.", body = BattleView),
        (status = 404, description = "not_found_id: no such battle.", body = NotFoundId),
        (status = 409, description = "conflict: the battle is already finished (`details.status`).", body = Conflict),
    ))]
pub(crate) async fn stop_battle(
    State(state): State<AppState>,
    ApiPath(BattleId { id }): ApiPath<BattleId>,
) -> Result<ApiJson<BattleView>, ApiError> {
    Ok(ApiJson(state.arena().stop(&id).await?))
}

/// The body of `POST /api/battles/{id}/analyze` (optional).
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AnalyzeRequest {
    /// Let the new analysis replace a winner a human named (default false:
    /// a human's winner is kept).
    #[serde(default)]
    force: bool,
}

/// Runs the analysis of a completed battle again: the battle is `judging`
/// until the judge's task ends (follow `GET /api/events?battle_id=`).
#[utoipa::path(post, tag = "battles", path = "/api/battles/{id}/analyze", params(BattleId),
    request_body(content = Option<AnalyzeRequest>, description = "Optional; `{}` or no body is `{\"force\": false}`."),
    responses(
        (status = 202, description = "Accepted: the battle, `judging`.", body = BattleView),
        (status = 400, description = "invalid_input: a bad body.", body = BattleInvalidInput),
        (status = 404, description = "not_found_id: no such battle.", body = NotFoundId),
        (status = 409, description = "conflict: the battle is not completed (running, already judging, failed, cancelled).", body = Conflict),
        (status = 413, description = "payload_too_large.", body = PayloadTooLarge),
    ))]
pub(crate) async fn analyze_battle(
    State(state): State<AppState>,
    ApiPath(BattleId { id }): ApiPath<BattleId>,
    OptionalBody(body): OptionalBody<AnalyzeRequest>,
) -> Result<Response, ApiError> {
    let view = state.arena().analyze(&id, body.force).await?;
    Ok((StatusCode::ACCEPTED, ApiJson(view)).into_response())
}

/// The text of a battle's analysis.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct AnalysisText {
    /// `analysis.md` as written (Markdown).
    text: String,
}

/// The battle's `analysis.md` (the evidence table, the digests and judge
/// verdicts when they ran, the winner and why).
#[utoipa::path(get, tag = "battles", path = "/api/battles/{id}/analysis", params(BattleId),
    responses(
        (status = 200, description = "The analysis.", body = AnalysisText),
        (status = 404, description = "not_found_id: no such battle, or its analysis is not written yet (`details.status`).", body = NotFoundId),
    ))]
pub(crate) async fn get_analysis(
    State(state): State<AppState>,
    ApiPath(BattleId { id }): ApiPath<BattleId>,
) -> Result<ApiJson<AnalysisText>, ApiError> {
    let text = state.arena().analysis(&id).await?;
    Ok(ApiJson(AnalysisText { text }))
}

/// `Some(value)` for a field that is present (even `null`), so a required
/// nullable field can be told from a missing one.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

/// The body of `PATCH /api/battles/{id}/winner`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WinnerRequest {
    /// The winner's contestant id, or `null` to clear the winner. Required.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, required = true)]
    contestant_id: Option<Option<String>>,
}

/// A human names the winner of a completed battle (or clears it with
/// `null`); a later analysis keeps it unless forced. `manifest.json` and
/// `analysis.md` are rewritten.
#[utoipa::path(patch, tag = "battles", path = "/api/battles/{id}/winner", params(BattleId),
    request_body = WinnerRequest,
    responses(
        (status = 200, description = "The battle with its winner (`winner_source` `human`).", body = BattleView),
        (status = 400, description = "invalid_input: a bad body (`contestant_id` missing).", body = BattleInvalidInput),
        (status = 404, description = "not_found_id: no such battle, or no such contestant in it.", body = NotFoundId),
        (status = 409, description = "conflict: the battle is not completed.", body = Conflict),
        (status = 413, description = "payload_too_large.", body = PayloadTooLarge),
    ))]
pub(crate) async fn set_winner(
    State(state): State<AppState>,
    ApiPath(BattleId { id }): ApiPath<BattleId>,
    crate::Body(body): crate::Body<WinnerRequest>,
) -> Result<ApiJson<BattleView>, ApiError> {
    let Some(contestant) = body.contestant_id else {
        return Err(coderig::Error::invalid_input(
            "`contestant_id`: required: the winner's contestant id, or null to clear the winner",
        )
        .with_detail("path", "contestant_id")
        .into());
    };
    let view = state.arena().set_winner(&id, contestant.as_deref()).await?;
    Ok(ApiJson(view))
}

/// The archived `diff.patch` of a coding contestant, as `text/x-diff`:
/// the exact bytes (`git apply` reads them; empty when the contestant
/// changed nothing).
#[utoipa::path(get, tag = "battles", path = "/api/battles/{id}/contestants/{cid}/diff", params(ContestantPath),
    responses(
        (status = 200, description = "The patch (git's unified diff, binary changes included).", content_type = "text/x-diff", body = String),
        (status = 404, description = "not_found_id: no such battle or contestant, or no patch archived yet (`details.status`).", body = NotFoundId),
    ))]
pub(crate) async fn get_diff(
    State(state): State<AppState>,
    ApiPath(ContestantPath { id, cid }): ApiPath<ContestantPath>,
) -> Result<Response, ApiError> {
    let bytes = state.arena().diff(&id, &cid).await?;
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/x-diff"),
    );
    Ok((headers, bytes).into_response())
}

/// A contestant's archived `result.md`, as `text/markdown`: who, outcome,
/// benchmark, usage, evidence and its answer (a qa contestant's answer is
/// read here once the turn has ended; the live stream carries it only
/// while it runs).
#[utoipa::path(get, tag = "battles", path = "/api/battles/{id}/contestants/{cid}/result", params(ContestantPath),
    responses(
        (status = 200, description = "`result.md` (Markdown).", content_type = "text/markdown", body = String),
        (status = 404, description = "not_found_id: no such battle or contestant, or its turn has not ended yet (`details.status`).", body = NotFoundId),
    ))]
pub(crate) async fn get_result(
    State(state): State<AppState>,
    ApiPath(ContestantPath { id, cid }): ApiPath<ContestantPath>,
) -> Result<Response, ApiError> {
    let text = state.arena().result(&id, &cid).await?;
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/markdown; charset=utf-8"),
    );
    Ok((headers, text).into_response())
}

/// The body of `POST /api/battles/{id}/cross-examine`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CrossExamRequest {
    /// The examiner: a configured agent's identity.
    #[schema(pattern = r"\S")]
    identity: String,
    /// Its model.
    #[schema(pattern = r"\S")]
    model: String,
}

/// The id of a requested cross-examination.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct CrossExamStarted {
    /// Its id (`cross_exams[].id` of the battle; `battle_updated` events
    /// carry it as `cross_exam_id`).
    cross_exam_id: String,
}

/// Asks an examiner to cross-examine a completed battle's analysis; the
/// cross-examination runs in the background (its row `pending`, then
/// `running`, `done` or `error`, in `GET /api/battles/{id}`).
#[utoipa::path(post, tag = "battles", path = "/api/battles/{id}/cross-examine", params(BattleId),
    request_body = CrossExamRequest,
    responses(
        (status = 202, description = "Accepted: the cross-examination's id.", body = CrossExamStarted),
        (status = 400, description = "invalid_input: a bad body, an unknown identity, a blank model.", body = BattleInvalidInput),
        (status = 404, description = "not_found_id: no such battle.", body = NotFoundId),
        (status = 409, description = "conflict: the battle is not completed with its analysis.", body = Conflict),
        (status = 413, description = "payload_too_large.", body = PayloadTooLarge),
    ))]
pub(crate) async fn cross_examine(
    State(state): State<AppState>,
    ApiPath(BattleId { id }): ApiPath<BattleId>,
    crate::Body(body): crate::Body<CrossExamRequest>,
) -> Result<Response, ApiError> {
    let cross_exam_id = state
        .arena()
        .cross_examine(
            &id,
            AgentRef {
                identity: body.identity,
                model: body.model,
            },
        )
        .await?;
    Ok((
        StatusCode::ACCEPTED,
        ApiJson(CrossExamStarted { cross_exam_id }),
    )
        .into_response())
}

/// The body of `POST /api/battles/{id}/apply` (optional).
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ApplyRequest {
    /// Whose patch to apply (default: the winner's).
    #[serde(default)]
    contestant_id: Option<String>,
}

/// Applies the winner's patch (or `contestant_id`'s) to the project's
/// working tree, as `coderig battle apply` does. A patch that does not
/// apply cleanly changes nothing.
#[utoipa::path(post, tag = "battles", path = "/api/battles/{id}/apply", params(BattleId),
    request_body(content = Option<ApplyRequest>, description = "Optional; no body applies the winner's patch."),
    responses(
        (status = 200, description = "Applied.", body = Applied),
        (status = 400, description = "invalid_input: a bad body.", body = BattleInvalidInput),
        (status = 404, description = "not_found_id: no such battle, or no such contestant in it.", body = NotFoundId),
        (status = 409, description = "conflict: no patch to apply: a qa battle, a contestant without an archived patch, no winner and no contestant named, or a patch that does not apply cleanly.", body = Conflict),
        (status = 413, description = "payload_too_large.", body = PayloadTooLarge),
    ))]
pub(crate) async fn apply_battle(
    State(state): State<AppState>,
    ApiPath(BattleId { id }): ApiPath<BattleId>,
    OptionalBody(body): OptionalBody<ApplyRequest>,
) -> Result<ApiJson<Applied>, ApiError> {
    let arena = state.arena();
    // The core refuses a qa battle and a contestant without an archived
    // patch with `conflict` (409), as every face sees it.
    let applied = arena.apply(&id, body.contestant_id.as_deref()).await?;
    Ok(ApiJson(applied))
}

/// Bradley–Terry ratings over completed battles with a winner, one board
/// per battle type, best first (an empty list when none is rated yet).
#[utoipa::path(get, tag = "battles", path = "/api/leaderboard", params(LeaderboardFilter),
    responses(
        (status = 200, description = "The boards.", body = Vec<Leaderboard>),
        (status = 400, description = "invalid_input: a bad filter, a project outside the project roots.", body = BattleInvalidInput),
    ))]
pub(crate) async fn leaderboard(
    State(state): State<AppState>,
    query: Result<Query<LeaderboardFilter>, QueryRejection>,
) -> Result<ApiJson<Vec<Leaderboard>>, ApiError> {
    let Query(query) = query.map_err(|e| {
        bad_query(
            "/api/leaderboard",
            "battle_type (coding, qa) and project",
            e,
        )
    })?;
    let project = match &query.project {
        Some(p) => Some(confine(&state, p)?),
        None => None,
    };
    let boards = state
        .arena()
        .leaderboard(query.battle_type, project.as_deref())
        .await?;
    Ok(ApiJson(boards))
}
