//! The one error type of the HTTP face: the core's [`coderig::Error`], or
//! one of the three failures only HTTP has.

use axum::extract::rejection::BytesRejection;
use axum::http::{Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

/// An error answered as JSON:
/// `{"ok": false, "error": {"kind", "code", "message", ...details}}`.
///
/// A core error keeps its kind, code, message and details verbatim
/// ([`coderig::Error::body`]) and is answered with
/// [`coderig::ErrorKind::http_status`]: 400 `invalid_input` (a body that is
/// not JSON, not declared as JSON, or of the wrong shape included), 422 the
/// edit refusals, 409 `conflict`, 404 `not_found_id`, 503 `unavailable`, 502
/// `agent`, 500 `io` and `internal`. The kinds only HTTP has:
/// `route_not_found` 404, `method_not_allowed` 405, `payload_too_large` 413,
/// `unauthorized` 401 (a missing or wrong bearer token, `--token`).
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    status: StatusCode,
    body: Value,
}

impl ApiError {
    /// An error of a kind only HTTP has (`route_not_found`,
    /// `method_not_allowed`, `payload_too_large`, `unauthorized`); `code`
    /// is the kind in upper case.
    fn http(status: StatusCode, kind: &str, message: String) -> Self {
        ApiError {
            status,
            body: json!({"ok": false, "error": {
                "kind": kind, "code": kind.to_ascii_uppercase(), "message": message}}),
        }
    }

    /// 401 `unauthorized`: the request lacks the server's bearer token.
    pub(crate) fn unauthorized(message: &str) -> Self {
        ApiError::http(StatusCode::UNAUTHORIZED, "unauthorized", message.to_owned())
    }

    /// The HTTP status of the answer.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The JSON body of the answer.
    pub fn body(&self) -> &Value {
        &self.body
    }

    /// Why reading a request body failed: too large (413
    /// `payload_too_large`), or the client broke off (400 `invalid_input`).
    pub(crate) fn from_body_rejection(rejection: &BytesRejection) -> Self {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::http(
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                format!(
                    "the request body is over the server's limit (--max-body): {}",
                    rejection.body_text()
                ),
            )
        } else {
            coderig::Error::invalid_input(format!(
                "the request body could not be read: {}",
                rejection.body_text()
            ))
            .into()
        }
    }
}

impl From<coderig::Error> for ApiError {
    fn from(e: coderig::Error) -> Self {
        ApiError {
            status: StatusCode::from_u16(e.kind().http_status())
                .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            body: e.body(),
        }
    }
}

impl From<coderig::EditError> for ApiError {
    fn from(e: coderig::EditError) -> Self {
        coderig::Error::from(e).into()
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, axum::Json(self.body)).into_response()
    }
}

/// Fallback for unknown routes: a JSON 404 `route_not_found`.
pub(crate) async fn route_not_found(method: Method, uri: Uri) -> ApiError {
    ApiError::http(
        StatusCode::NOT_FOUND,
        "route_not_found",
        format!(
            "no route for {method} {}; the API lives under /api (try GET /api/health)",
            uri.path()
        ),
    )
}

/// Fallback for a known route called with the wrong method: a JSON 405.
pub(crate) async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::http(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!("{} does not accept {method}", uri.path()),
    )
}

/// Turns a caught panic into a JSON 500 `internal` (a bug, never the
/// client's fault).
pub(crate) fn panic_response(panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
    let detail = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("unknown panic");
    ApiError::from(coderig::Error::internal(format!(
        "internal error: {detail}"
    )))
    .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use coderig::{EditError, ErrorKind};

    #[test]
    fn core_errors_keep_their_body_and_take_the_core_status() {
        let cases: Vec<(coderig::Error, u16)> = vec![
            (EditError::invalid("m").into(), 400),
            (
                EditError::NotFound {
                    message: "m".into(),
                    nearest: None,
                }
                .into(),
                422,
            ),
            (coderig::Error::conflict("m"), 409),
            (coderig::Error::not_found_id("battle", "b"), 404),
            (coderig::Error::unavailable("m"), 503),
            (coderig::Error::new(ErrorKind::Agent, "m"), 502),
            (coderig::Error::io("m"), 500),
            (coderig::Error::internal("m"), 500),
        ];
        for (error, status) in cases {
            let api = ApiError::from(error.clone());
            assert_eq!(api.status().as_u16(), status, "{}", error.kind());
            assert_eq!(api.body(), &error.body());
        }
    }

    #[test]
    fn http_only_kinds_have_the_same_shape() {
        let e = ApiError::http(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            "m".into(),
        );
        assert_eq!(
            e.body(),
            &json!({"ok": false, "error": {"kind": "method_not_allowed", "code": "METHOD_NOT_ALLOWED", "message": "m"}})
        );
    }
}
