//! `POST /api/edit` (one edit or an atomic batch) and `POST /api/locate`.

use super::{off_runtime, Route};
use crate::wire::{EditRequest, EditResponse, LocateRequest, LocateResponse};
use crate::{ApiError, ApiJson};

pub(super) fn routes() -> Vec<Route> {
    vec![
        Route::post("/api/edit", edit),
        Route::post("/api/locate", locate),
    ]
}

async fn edit(ApiJson(request): ApiJson<EditRequest>) -> Result<ApiJson<EditResponse>, ApiError> {
    off_runtime(move || request.apply()).await?.map(ApiJson)
}

async fn locate(
    ApiJson(request): ApiJson<LocateRequest>,
) -> Result<ApiJson<LocateResponse>, ApiError> {
    off_runtime(move || {
        let found = coderig::locate(&request.content, &request.needle);
        ApiJson(LocateResponse::new(&request.content, found))
    })
    .await
}
