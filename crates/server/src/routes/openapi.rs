//! `GET /api/openapi.json`.

use super::Route;
use crate::ApiJson;
use serde_json::Value;
use std::sync::OnceLock;

pub(super) fn routes() -> Vec<Route> {
    vec![Route::get("/api/openapi.json", openapi)]
}

/// This document.
#[utoipa::path(get, tag = "meta", path = "/api/openapi.json", responses(
    (status = 200, description = "The OpenAPI 3.1 document of this API.", body = Object),
))]
pub(crate) async fn openapi() -> ApiJson<&'static Value> {
    static DOCUMENT: OnceLock<Value> = OnceLock::new();
    ApiJson(DOCUMENT.get_or_init(crate::openapi::document))
}
