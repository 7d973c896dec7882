//! Request bodies decoded by the core's strict decoders (required or
//! optional), and JSON answers.

use crate::error::ApiError;
use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;

/// A request body decoded by [`coderig::json::decode_str`]: the same
/// decoder, and so the same message for the same mistake, as the CLI's
/// `--json` and the Python and Node faces.
///
/// Refusals: a body over the size limit is a 413 `payload_too_large`; a
/// body not declared as JSON (`Content-Type: application/json` or
/// `application/*+json`), not UTF-8, not JSON, not an object or of the
/// wrong shape is a 400 `invalid_input` (the JSON path of a bad field in
/// `path` and at the start of the message).
#[derive(Debug, Clone, Copy, Default)]
pub struct Body<T>(pub T);

fn declares_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let essence = value.split(';').next().unwrap_or("").trim();
    let Some((kind, subtype)) = essence.split_once('/') else {
        return false;
    };
    kind.eq_ignore_ascii_case("application")
        && (subtype.eq_ignore_ascii_case("json") || subtype.to_ascii_lowercase().ends_with("+json"))
}

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let text = text_of(request, state).await?;
        Ok(Body(coderig::json::decode_str(&text)?))
    }
}

/// A request body parsed as any JSON value ([`coderig::json::parse_str`]),
/// for a route that hands it to a core decoder of its own
/// (`coderig::json::flow`), so that decoder's messages are the ones heard.
/// Refusals as for [`Body`].
#[derive(Debug, Clone, Default)]
pub struct RawBody(pub serde_json::Value);

impl<S: Send + Sync> FromRequest<S> for RawBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let text = text_of(request, state).await?;
        Ok(RawBody(coderig::json::parse_str(&text)?))
    }
}

/// A JSON body that may be left out: no body at all (no `Content-Type`, no
/// bytes) or a JSON `null` is `T::default()`; any other body is decoded as
/// [`Body`] decodes one (declared as JSON, strict).
pub(crate) struct OptionalBody<T>(pub(crate) T);

impl<S: Send + Sync, T: DeserializeOwned + Default> FromRequest<S> for OptionalBody<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        if !request.headers().contains_key(header::CONTENT_TYPE) {
            let bytes = Bytes::from_request(request, state)
                .await
                .map_err(|rejection| ApiError::from_body_rejection(&rejection))?;
            if bytes.is_empty() {
                return Ok(OptionalBody(T::default()));
            }
            return Err(coderig::Error::invalid_input(
                "the body must be JSON sent with `Content-Type: application/json` (or left out)",
            )
            .into());
        }
        let RawBody(value) = RawBody::from_request(request, state).await?;
        if value.is_null() {
            return Ok(OptionalBody(T::default()));
        }
        Ok(OptionalBody(coderig::json::decode_object(value)?))
    }
}

/// The body as text, when declared as JSON, within the size limit, UTF-8.
async fn text_of<S: Send + Sync>(request: Request, state: &S) -> Result<String, ApiError> {
    if !declares_json(request.headers()) {
        return Err(coderig::Error::invalid_input(
            "the body must be JSON sent with `Content-Type: application/json`",
        )
        .into());
    }
    let bytes = Bytes::from_request(request, state)
        .await
        .map_err(|rejection| ApiError::from_body_rejection(&rejection))?;
    String::from_utf8(bytes.into())
        .map_err(|e| coderig::Error::invalid_input(format!("the body is not UTF-8: {e}")).into())
}

/// A JSON answer (status 200).
#[derive(Debug, Clone, Copy, Default)]
pub struct ApiJson<T>(pub T);

impl<T: serde::Serialize> IntoResponse for ApiJson<T> {
    fn into_response(self) -> Response {
        axum::Json(self.0).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn json_content_types() {
        for (value, json) in [
            ("application/json", true),
            ("application/json; charset=utf-8", true),
            ("Application/JSON", true),
            ("application/problem+json", true),
            ("text/json", false),
            ("text/plain", false),
            ("application/jsonx", false),
            ("", false),
        ] {
            let mut headers = HeaderMap::new();
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(value));
            assert_eq!(declares_json(&headers), json, "{value:?}");
        }
        assert!(!declares_json(&HeaderMap::new()));
    }
}
