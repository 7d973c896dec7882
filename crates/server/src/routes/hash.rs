//! `POST /api/xxhash32`.

use crate::ApiJson;
use axum::routing::post;
use axum::Router;
use serde::{Deserialize, Serialize};

pub(crate) fn routes() -> Router {
    Router::new().route("/api/xxhash32", post(xxhash32))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HashRequest {
    /// Hashed as UTF-8.
    data: String,
    #[serde(default)]
    seed: u32,
}

#[derive(Serialize)]
struct HashResponse {
    ok: bool,
    hash: u32,
}

async fn xxhash32(ApiJson(request): ApiJson<HashRequest>) -> ApiJson<HashResponse> {
    ApiJson(HashResponse {
        ok: true,
        hash: coderig::xxhash32(request.data.as_bytes(), request.seed),
    })
}
