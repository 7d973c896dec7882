//! `POST /api/xxhash32`.

use super::Route;
use crate::ApiJson;
use serde::{Deserialize, Serialize};

pub(super) fn routes() -> Vec<Route> {
    vec![Route::post("/api/xxhash32", xxhash32)]
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
