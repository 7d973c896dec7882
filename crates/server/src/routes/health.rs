//! `GET /api/health`.

use super::Route;
use crate::ApiJson;
use serde_json::{json, Value};

pub(super) fn routes() -> Vec<Route> {
    vec![Route::get("/api/health", health)]
}

/// Liveness plus the server's version, so a client can check what it talks to.
async fn health() -> ApiJson<Value> {
    ApiJson(json!({ "ok": true, "version": env!("CARGO_PKG_VERSION") }))
}
