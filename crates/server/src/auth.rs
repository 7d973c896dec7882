//! Bearer authentication (`coderig serve --token`): every route but `GET
//! /api/health` requires `Authorization: Bearer <token>`.

use crate::ApiError;
use axum::extract::{Request, State};
use axum::http::{header, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// The configured token (shared by every request).
#[derive(Clone)]
pub(crate) struct Token(Arc<[u8]>);

impl Token {
    pub(crate) fn new(token: &str) -> Self {
        Token(token.as_bytes().into())
    }

    /// Constant time in the content of `given` (its length aside, which a
    /// bearer token does not hide anyway): every byte is compared, so the
    /// time to refuse does not say how much of a guess was right.
    fn matches(&self, given: &[u8]) -> bool {
        let expected = &self.0;
        let mut difference = u8::from(expected.len() != given.len());
        for (i, byte) in given.iter().enumerate() {
            difference |= byte ^ expected.get(i).copied().unwrap_or(0);
        }
        difference == 0
    }
}

/// The token of an `Authorization: Bearer <token>` header (the scheme is
/// case-insensitive, RFC 7235), if there is one.
fn bearer(request: &Request) -> Option<&[u8]> {
    let value = request.headers().get(header::AUTHORIZATION)?.as_bytes();
    let (scheme, token) = value.split_at_checked(7)?;
    scheme
        .eq_ignore_ascii_case(b"bearer ")
        .then(|| token.trim_ascii())
}

/// The middleware: `GET /api/health` passes (liveness needs no secret), as
/// does a request with the right bearer token; anything else is a JSON 401
/// `unauthorized` with `WWW-Authenticate: Bearer`.
pub(crate) async fn require_bearer(
    State(token): State<Token>,
    request: Request,
    next: Next,
) -> Response {
    let open = request.method() == Method::GET && request.uri().path() == "/api/health";
    if open || bearer(&request).is_some_and(|given| token.matches(given)) {
        return next.run(request).await;
    }
    let message = if request.headers().contains_key(header::AUTHORIZATION) {
        "the bearer token is not this server's (Authorization: Bearer <token>, the token of --token / CODERIG_TOKEN)"
    } else {
        "this server requires a token: send Authorization: Bearer <token> (the token of --token / CODERIG_TOKEN)"
    };
    let mut response = ApiError::unauthorized(message).into_response();
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static("Bearer"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_token_matches() {
        let token = Token::new("s3cret");
        assert!(token.matches(b"s3cret"));
        for wrong in [
            &b""[..],
            b"s3cre",
            b"s3cret!",
            b"S3cret",
            b"x3cret",
            b"s3cres",
        ] {
            assert!(!token.matches(wrong), "{wrong:?}");
        }
    }
}
