//! `POST /api/edit` (one edit or an atomic batch) and `POST /api/locate`.

use super::{off_runtime, Route};
use crate::schema::{EditRefusal, InvalidInput, PayloadTooLarge};
use crate::{ApiError, ApiJson, Body};
use coderig::json::{EditRequest, EditResponse, LocateRequest, LocateResponse};

pub(super) fn routes() -> Vec<Route> {
    vec![
        Route::post("/api/edit", edit),
        Route::post("/api/locate", locate),
    ]
}

/// Applies one search/replace edit, or several atomically (`edits`), to the
/// given content. The server never reads or writes files.
#[utoipa::path(post, tag = "edit", path = "/api/edit", request_body = EditRequest, responses(
    (status = 200, description = "The edited content, the weakest tier used and the number of spans replaced.", body = EditResponse),
    (status = 400, description = "invalid_input: malformed, both forms or neither, an empty `old`, overlapping edits.", body = InvalidInput),
    (status = 413, description = "payload_too_large.", body = PayloadTooLarge),
    (status = 422, description = "The edit was refused: not_found, ambiguous, guard or no_op; nothing is applied.", body = EditRefusal),
))]
pub(crate) async fn edit(
    Body(request): Body<EditRequest>,
) -> Result<ApiJson<EditResponse>, ApiError> {
    Ok(ApiJson(off_runtime(move || request.apply()).await??))
}

/// Where a needle is in the content: tiered, and refusing to pick between
/// several locations. Every outcome is a 200 (`kind` says which).
#[utoipa::path(post, tag = "edit", path = "/api/locate", request_body = LocateRequest, responses(
    (status = 200, description = "The match (kind exact, whitespace, unicode, fuzzy, ambiguous or not_found); offsets are UTF-8 bytes.", body = LocateResponse),
    (status = 400, description = "invalid_input: malformed, or an empty needle.", body = InvalidInput),
    (status = 413, description = "payload_too_large.", body = PayloadTooLarge),
))]
pub(crate) async fn locate(
    Body(request): Body<LocateRequest>,
) -> Result<ApiJson<LocateResponse>, ApiError> {
    let found = off_runtime(move || {
        coderig::try_locate(&request.content, &request.needle)
            .map(|m| LocateResponse::new(&request.content, m))
    })
    .await??;
    Ok(ApiJson(found))
}
