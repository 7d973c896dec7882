//! `GET /api/agents`.

use super::Route;
use crate::{ApiJson, AppState};
use axum::extract::State;
use coderig::agent::AgentInfo;

pub(super) fn routes() -> Vec<Route> {
    vec![Route::get("/api/agents", agents)]
}

/// Every agent of the server's `coderig.toml`: its kind, lane, whether it is
/// installed (CLIs: the binary on `PATH`) and reachable (HTTP agents: their
/// model list answered within the probe timeout, the core's 2 s), and its models.
#[utoipa::path(get, tag = "agents", path = "/api/agents", responses(
    (status = 200, description = "One entry per configured identity, sorted by identity (empty when none are configured).", body = Vec<AgentInfo>),
))]
pub(crate) async fn agents(State(state): State<AppState>) -> ApiJson<Vec<AgentInfo>> {
    ApiJson(state.registry().info(state.probe_timeout()).await)
}
