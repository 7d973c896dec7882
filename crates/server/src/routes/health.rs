//! `GET /api/health`.

use super::Route;
use crate::{ApiJson, AppState};
use axum::extract::State;
use serde::Serialize;

pub(super) fn routes() -> Vec<Route> {
    vec![Route::get("/api/health", health)]
}

/// Liveness.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct Health {
    /// Always `true`.
    ok: bool,
    /// The server's version, so a client can check what it talks to.
    version: &'static str,
    /// The store's backend: `sqlite` (embedded) or `postgres` (shared).
    #[schema(pattern = "^(sqlite|postgres)$")]
    store: &'static str,
}

/// Liveness, the server's version and its store's backend. Open to anyone,
/// also on a server with a token.
#[utoipa::path(get, tag = "meta", path = "/api/health", security(()), responses(
    (status = 200, description = "Alive.", body = Health),
))]
pub(crate) async fn health(State(state): State<AppState>) -> ApiJson<Health> {
    ApiJson(Health {
        ok: true,
        version: env!("CARGO_PKG_VERSION"),
        store: state.store().backend(),
    })
}
