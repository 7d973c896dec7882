//! A JSON extractor/response whose rejections are [`ApiError`]s.

use crate::error::ApiError;
use axum::extract::FromRequest;
use axum::response::{IntoResponse, Response};

/// Like [`axum::Json`], but a body that is missing, not JSON, of the wrong
/// shape or too large is answered with a JSON [`ApiError`] (400, 415, 422 or
/// 413) instead of axum's plain-text rejection. Handlers take and return it.
#[derive(Debug, Clone, Copy, Default, FromRequest)]
#[from_request(via(axum::Json), rejection(ApiError))]
pub struct ApiJson<T>(pub T);

impl<T: serde::Serialize> IntoResponse for ApiJson<T> {
    fn into_response(self) -> Response {
        axum::Json(self.0).into_response()
    }
}
