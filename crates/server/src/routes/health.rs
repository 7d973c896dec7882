//! `GET /api/health`.

use crate::ApiJson;
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};

pub(crate) fn routes() -> Router {
    Router::new().route("/api/health", get(health))
}

/// Liveness plus the server's version, so a client can check what it talks to.
async fn health() -> ApiJson<Value> {
    ApiJson(json!({ "ok": true, "version": env!("CARGO_PKG_VERSION") }))
}
