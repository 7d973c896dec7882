//! Authentication (`coderig serve --token`): every route but `GET
//! /api/health` and the dashboard's page, assets and login requires
//! `Authorization: Bearer <token>` or the dashboard's session cookie; and
//! the cross-site guard every server has, token or not.

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

/// Where the dashboard asks for the token (open: the login itself).
pub(crate) const SESSION_PATH: &str = "/ui/session";

/// The dashboard's session cookie: the token itself, `HttpOnly` (no script
/// reads it) and `SameSite=Strict` (no other site's page sends it).
pub(crate) const SESSION_COOKIE: &str = "coderig_session";

/// The header the dashboard sends with every state-changing request it
/// authenticates by cookie. Another site's page cannot send a custom
/// header without a CORS preflight, which this server never grants: a
/// cross-site form or `fetch` riding on the cookie is refused.
pub(crate) const DASHBOARD_HEADER: &str = "x-coderig-dashboard";

/// The session cookie's value as text, if the request carries one.
pub(crate) fn session_of(request: &Request) -> Option<&str> {
    session_cookie(request).and_then(|c| std::str::from_utf8(c).ok())
}

/// The value of the session cookie, if the request carries one.
fn session_cookie(request: &Request) -> Option<&[u8]> {
    request
        .headers()
        .get_all(header::COOKIE)
        .iter()
        .flat_map(|value| value.as_bytes().split(|b| *b == b';'))
        .find_map(|pair| {
            let pair = pair.trim_ascii();
            let (name, value) = pair.split_at_checked(SESSION_COOKIE.len() + 1)?;
            (name.strip_suffix(b"=")? == SESSION_COOKIE.as_bytes()).then_some(value)
        })
}

/// True for a request that changes nothing (`GET`, `HEAD`, `OPTIONS`).
fn is_safe(request: &Request) -> bool {
    matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    )
}

/// What needs no token: liveness, and the dashboard's page, assets and
/// login (which asks for the token).
fn is_open(request: &Request) -> bool {
    let path = request.uri().path();
    (request.method() == Method::GET
        && (path == "/api/health" || path == "/" || path.starts_with("/ui/")))
        || (request.method() == Method::POST && path == SESSION_PATH)
}

/// The middleware: an open request passes ([`is_open`]), as does one with
/// the right bearer token, or with the dashboard's session cookie — a
/// state-changing one only with the dashboard's header
/// ([`DASHBOARD_HEADER`]). Anything else is a JSON 401 `unauthorized`
/// with `WWW-Authenticate: Bearer`.
pub(crate) async fn require_bearer(
    State(token): State<Token>,
    request: Request,
    next: Next,
) -> Response {
    if is_open(&request) || bearer(&request).is_some_and(|given| token.matches(given)) {
        return next.run(request).await;
    }
    let cookie = session_cookie(&request).is_some_and(|given| token.matches(given));
    if cookie && (is_safe(&request) || request.headers().contains_key(DASHBOARD_HEADER)) {
        return next.run(request).await;
    }
    let message = if cookie {
        "a state-changing request authenticated by the dashboard's cookie must come from the dashboard (header X-Coderig-Dashboard); other clients send Authorization: Bearer <token>"
    } else if request.headers().contains_key(header::AUTHORIZATION) {
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

/// True when `token` is the server's (the dashboard's login).
pub(crate) fn is_token(server: Option<&Token>, given: &str) -> bool {
    server.is_some_and(|t| t.matches(given.as_bytes()))
}

/// The cross-site guard, with or without a token: a browser names the
/// page a request comes from (`Origin`); a state-changing request whose
/// origin is not this server's own host (another site's page driving the
/// API on loopback) is refused. Without a token the server listens on
/// loopback only, so it also refuses a `Host` that is not a loopback name
/// or address: a DNS-rebound name would otherwise make another site's page
/// same-origin with it. Clients that are not browsers send no `Origin`.
pub(crate) async fn refuse_cross_site(
    State(open): State<bool>,
    request: Request,
    next: Next,
) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    if open && !host.is_empty() && !is_loopback_host(host) {
        return ApiError::unauthorized(
            "this server has no token and answers loopback names only (Host 127.0.0.1, [::1] or localhost): serve with --token to be reached by another name",
        )
        .into_response();
    }
    if !is_safe(&request) {
        let origin = request
            .headers()
            .get(header::ORIGIN)
            .and_then(|o| o.to_str().ok());
        if let Some(origin) = origin {
            let authority = origin.split_once("://").map_or("", |(_, rest)| rest);
            if authority != host {
                return ApiError::unauthorized(&format!(
                    "a cross-site request was refused: it comes from a page of {origin:?}, not of this server ({host})"
                ))
                .into_response();
            }
        }
    }
    next.run(request).await
}

/// `127.0.0.1:8080`, `[::1]:8080`, `localhost`, … (port optional).
fn is_loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(name, port)| {
            if port.bytes().all(|b| b.is_ascii_digit()) {
                name
            } else {
                host
            }
        }),
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_are_told_from_other_names() {
        for host in [
            "127.0.0.1:8080",
            "127.0.0.1",
            "localhost:3000",
            "LOCALHOST",
            "[::1]:80",
            "127.8.9.1:1",
        ] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in [
            "evil.example:8080",
            "192.168.1.2:80",
            "[::2]:80",
            "localhost.evil.example",
            "",
        ] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }

    #[test]
    fn the_session_cookie_is_found_among_others() {
        let request = |cookie: &str| {
            axum::http::Request::builder()
                .header(header::COOKIE, cookie)
                .body(axum::body::Body::empty())
                .unwrap()
        };
        let r = request("a=1; coderig_session=s3cret; b=2");
        assert_eq!(session_cookie(&r), Some(&b"s3cret"[..]));
        let r = request("coderig_sessionx=s3cret");
        assert_eq!(session_cookie(&r), None);
        let r = request("other=coderig_session=s3cret");
        assert_eq!(session_cookie(&r), None);
    }

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
