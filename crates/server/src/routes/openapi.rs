//! `GET /api/openapi.json`.

use super::Route;
use crate::ApiJson;
use serde_json::Value;

pub(super) fn routes() -> Vec<Route> {
    vec![Route::get("/api/openapi.json", openapi)]
}

async fn openapi() -> ApiJson<Value> {
    ApiJson(crate::openapi::document())
}
