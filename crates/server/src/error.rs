//! The one error type of the HTTP face and its JSON body.

use axum::extract::rejection::JsonRejection;
use axum::http::{Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use coderig::EditError;
use serde_json::{json, Map, Value};

/// An error answered as JSON:
/// `{"ok": false, "error": {"kind", "code", "message", ...details}}`.
///
/// `kind` is stable snake_case, `code` is the same word in upper case (the
/// code the Python and Node faces use), `details` are flattened next to them.
///
/// Status mapping (an edit *refusal* is not a missing resource, hence 422):
///
/// | kind | status |
/// |---|---|
/// | `invalid_input` (bad JSON, wrong types, bad values) | 400, or 415 / 422 as axum's JSON extractor classifies it |
/// | `not_found`, `ambiguous`, `guard`, `no_op`, `hashline_mismatch` (edit refusals) | 422 |
/// | `not_found` (unknown route) | 404 |
/// | `method_not_allowed` | 405 |
/// | `payload_too_large` | 413 |
/// | `io` (a real read/write failure) | 500 |
/// | `internal` (a bug: a caught panic) | 500 |
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// HTTP status of the response.
    pub status: StatusCode,
    /// Stable snake_case kind.
    pub kind: &'static str,
    /// Human/model-readable explanation.
    pub message: String,
    /// Extra fields of the error object (`nearest`, `count`, `lines`,
    /// `violations`, `remaps`, ...).
    pub details: Map<String, Value>,
}

impl ApiError {
    /// An error without details.
    pub fn new(status: StatusCode, kind: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            kind,
            message: message.into(),
            details: Map::new(),
        }
    }

    /// A 400 `invalid_input` error: the request is malformed.
    pub fn invalid_input(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid_input", message)
    }

    /// The stable upper-case code (`kind` in upper case, e.g. `NOT_FOUND`).
    pub fn code(&self) -> String {
        self.kind.to_ascii_uppercase()
    }

    /// The JSON body this error is answered with.
    pub fn body(&self) -> Value {
        let mut error = Map::new();
        error.insert("kind".into(), json!(self.kind));
        error.insert("code".into(), json!(self.code()));
        error.insert("message".into(), json!(self.message));
        for (key, value) in &self.details {
            error.insert(key.clone(), value.clone());
        }
        json!({ "ok": false, "error": error })
    }

    fn with_detail(mut self, key: &str, value: Value) -> Self {
        self.details.insert(key.to_owned(), value);
        self
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, axum::Json(self.body())).into_response()
    }
}

impl From<EditError> for ApiError {
    fn from(e: EditError) -> Self {
        let status = match &e {
            EditError::InvalidInput { .. } => StatusCode::BAD_REQUEST,
            EditError::Io { .. } => StatusCode::INTERNAL_SERVER_ERROR,
            EditError::NotFound { .. }
            | EditError::Ambiguous { .. }
            | EditError::Guard { .. }
            | EditError::NoOp { .. }
            | EditError::HashlineMismatch { .. } => StatusCode::UNPROCESSABLE_ENTITY,
        };
        let error = ApiError::new(status, e.kind(), e.message());
        match e {
            EditError::NotFound { nearest, .. } => error.with_detail(
                "nearest",
                nearest.map_or(Value::Null, |n| {
                    json!({"first_line": n.first_line, "last_line": n.last_line, "score": n.score})
                }),
            ),
            EditError::Ambiguous { count, lines, .. } => error
                .with_detail("count", json!(count))
                .with_detail("lines", json!(lines)),
            EditError::Guard { violations, .. } => error.with_detail(
                "violations",
                Value::Array(
                    violations
                        .iter()
                        .map(|v| json!({"kind": v.kind.as_str(), "message": v.message}))
                        .collect(),
                ),
            ),
            EditError::HashlineMismatch { remaps, .. } => error.with_detail("remaps", json!(remaps)),
            EditError::NoOp { .. } | EditError::InvalidInput { .. } | EditError::Io { .. } => error,
        }
    }
}

impl From<JsonRejection> for ApiError {
    fn from(rejection: JsonRejection) -> Self {
        let status = rejection.status();
        let kind = if status == StatusCode::PAYLOAD_TOO_LARGE {
            "payload_too_large"
        } else {
            "invalid_input"
        };
        ApiError::new(status, kind, rejection.body_text())
    }
}

/// Fallback for unknown routes: a JSON 404.
pub(crate) async fn route_not_found(method: Method, uri: Uri) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "not_found",
        format!(
            "no route for {method} {}; the API lives under /api (try GET /api/health)",
            uri.path()
        ),
    )
}

/// Fallback for a known route called with the wrong method: a JSON 405.
pub(crate) async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!("{} does not accept {method}", uri.path()),
    )
}

/// Turns a caught panic into a JSON 500 (a bug, never the client's fault).
pub(crate) fn panic_response(panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
    let detail = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("unknown panic");
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal",
        format!("internal error: {detail}"),
    )
    .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use coderig::{GuardViolation, Nearest, ViolationKind};
    use std::collections::BTreeMap;

    fn error_of(e: EditError) -> (StatusCode, Value) {
        let api = ApiError::from(e);
        (api.status, api.body()["error"].clone())
    }

    #[test]
    fn edit_errors_map_to_status_kind_code_and_details() {
        let cases: Vec<(EditError, StatusCode, &str, Value)> = vec![
            (
                EditError::NotFound {
                    message: "m".into(),
                    nearest: Some(Nearest {
                        first_line: 3,
                        last_line: 5,
                        score: 0.5,
                    }),
                },
                StatusCode::UNPROCESSABLE_ENTITY,
                "not_found",
                json!({"nearest": {"first_line": 3, "last_line": 5, "score": 0.5}}),
            ),
            (
                EditError::NotFound {
                    message: "m".into(),
                    nearest: None,
                },
                StatusCode::UNPROCESSABLE_ENTITY,
                "not_found",
                json!({"nearest": null}),
            ),
            (
                EditError::Ambiguous {
                    message: "m".into(),
                    count: 2,
                    lines: vec![(1, 2), (7, 8)],
                },
                StatusCode::UNPROCESSABLE_ENTITY,
                "ambiguous",
                json!({"count": 2, "lines": [[1, 2], [7, 8]]}),
            ),
            (
                EditError::Guard {
                    message: "m".into(),
                    violations: vec![GuardViolation {
                        kind: ViolationKind::DroppedImports,
                        message: "lost import".into(),
                    }],
                },
                StatusCode::UNPROCESSABLE_ENTITY,
                "guard",
                json!({"violations": [{"kind": "dropped_imports", "message": "lost import"}]}),
            ),
            (
                EditError::NoOp {
                    message: "m".into(),
                },
                StatusCode::UNPROCESSABLE_ENTITY,
                "no_op",
                json!({}),
            ),
            (
                EditError::HashlineMismatch {
                    message: "m".into(),
                    remaps: BTreeMap::from([("3#ZZ".to_owned(), "3#VK".to_owned())]),
                },
                StatusCode::UNPROCESSABLE_ENTITY,
                "hashline_mismatch",
                json!({"remaps": {"3#ZZ": "3#VK"}}),
            ),
            (
                EditError::InvalidInput {
                    message: "m".into(),
                },
                StatusCode::BAD_REQUEST,
                "invalid_input",
                json!({}),
            ),
            (
                EditError::Io {
                    message: "m".into(),
                },
                StatusCode::INTERNAL_SERVER_ERROR,
                "io",
                json!({}),
            ),
        ];
        for (edit_error, status, kind, details) in cases {
            let code = edit_error.code();
            let (got_status, body) = error_of(edit_error);
            assert_eq!(got_status, status, "{kind}");
            assert_eq!(body["kind"], kind);
            assert_eq!(
                body["code"], code,
                "HTTP code must equal the core's stable code"
            );
            assert_eq!(body["message"], "m");
            for (key, value) in details.as_object().unwrap() {
                assert_eq!(&body[key], value, "{kind}.{key}");
            }
            // kind, code, message + the details, nothing else
            assert_eq!(
                body.as_object().unwrap().len(),
                3 + details.as_object().unwrap().len()
            );
        }
    }

    #[test]
    fn body_is_wrapped_with_ok_false() {
        let body = ApiError::invalid_input("bad").body();
        assert_eq!(
            body,
            json!({"ok": false, "error": {"kind": "invalid_input", "code": "INVALID_INPUT", "message": "bad"}})
        );
    }
}
