//! `GET /api/health`.

use super::Route;
use crate::ApiJson;
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
}

/// Liveness and the server's version.
#[utoipa::path(get, tag = "meta", path = "/api/health", responses(
    (status = 200, description = "Alive.", body = Health),
))]
pub(crate) async fn health() -> ApiJson<Health> {
    ApiJson(Health {
        ok: true,
        version: env!("CARGO_PKG_VERSION"),
    })
}
