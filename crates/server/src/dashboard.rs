//! The dashboard `coderig serve` answers at `/`: one HTML page, one
//! script and one style sheet, embedded in the binary (no CDN, no request
//! to any other host, no JavaScript toolchain in the build). The page
//! renders in the browser from the same `/api` routes every client uses
//! and follows `GET /api/events` live; it builds every node with
//! `textContent`, so agent output, diffs, file names, prompts and judge
//! text are always shown as text, never parsed as HTML.
//!
//! Why plain ES modules rather than htmx or server-rendered pages: the
//! API already answers every view as JSON and the live stream is SSE, so
//! the page is a thin reader of the same contract the other faces hold —
//! no second rendering of each view in Rust, nothing to keep in step.
//!
//! With `--token`, the page asks for the token once (`POST /ui/session`)
//! and keeps it in an `HttpOnly`, `SameSite=Strict` cookie; every
//! state-changing request it makes carries the dashboard's header, which
//! no other site's page can send (see `auth`).

use crate::auth::{self, Token, SESSION_PATH};
use crate::ApiError;
use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::json;

const INDEX: &str = include_str!("../dashboard/index.html");

/// The embedded assets: name, content type, bytes.
const ASSETS: &[(&str, &str, &str)] = &[
    (
        "app.js",
        "text/javascript; charset=utf-8",
        include_str!("../dashboard/app.js"),
    ),
    (
        "views.js",
        "text/javascript; charset=utf-8",
        include_str!("../dashboard/views.js"),
    ),
    (
        "style.css",
        "text/css; charset=utf-8",
        include_str!("../dashboard/style.css"),
    ),
];

/// Only this server's own scripts, styles and connections; no frames, no
/// plugins, no inline script.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
    connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// The dashboard's routes (outside `/api`: not part of the API document).
pub(crate) fn router(token: Option<Token>) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/ui/{asset}", get(asset))
        .route(SESSION_PATH, get(session_state).post(login).delete(logout))
        .with_state(token)
}

fn secure(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

async fn index() -> Response {
    secure(
        (
            [
                (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            INDEX,
        )
            .into_response(),
    )
}

async fn asset(Path(name): Path<String>) -> Response {
    match ASSETS.iter().find(|(n, _, _)| *n == name) {
        Some((_, content_type, body)) => secure(
            (
                [
                    (header::CONTENT_TYPE, *content_type),
                    (header::CACHE_CONTROL, "no-cache"),
                ],
                *body,
            )
                .into_response(),
        ),
        None => (
            StatusCode::NOT_FOUND,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            "no such dashboard asset",
        )
            .into_response(),
    }
}

/// `GET /ui/session`: whether this server wants a token, and whether the
/// request already has the session.
async fn session_state(
    State(token): State<Option<Token>>,
    request: axum::extract::Request,
) -> Response {
    let cookie = auth::session_of(&request);
    let authenticated = match &token {
        None => true,
        Some(token) => cookie.is_some_and(|c| auth::is_token(Some(token), c)),
    };
    axum::Json(json!({"token_required": token.is_some(), "authenticated": authenticated}))
        .into_response()
}

/// `POST /ui/session` `{"token": "…"}`: the right token sets the session
/// cookie (204); a wrong one is a 401 and sets nothing.
async fn login(State(token): State<Option<Token>>, body: axum::body::Bytes) -> Response {
    let given: Option<String> = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v.get("token").and_then(|t| t.as_str()).map(str::to_owned));
    let Some(server) = &token else {
        return StatusCode::NO_CONTENT.into_response();
    };
    match given {
        Some(given) if auth::is_token(Some(server), &given) => {
            // The cookie carries the token: a value with a `;` or a space
            // could not be a cookie value, and no such token would match.
            let cookie = format!(
                "{}={given}; Path=/; HttpOnly; SameSite=Strict",
                auth::SESSION_COOKIE
            );
            match HeaderValue::from_str(&cookie) {
                Ok(cookie) => (StatusCode::NO_CONTENT, [(header::SET_COOKIE, cookie)]).into_response(),
                Err(_) => ApiError::unauthorized(
                    "this token cannot be kept in a cookie (it holds characters a cookie cannot); use the API with Authorization: Bearer",
                )
                .into_response(),
            }
        }
        _ => ApiError::unauthorized(
            "that is not this server's token (the one given to --token / CODERIG_TOKEN)",
        )
        .into_response(),
    }
}

/// `DELETE /ui/session`: forgets the cookie.
async fn logout() -> Response {
    let cookie = format!(
        "{}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0",
        auth::SESSION_COOKIE
    );
    (
        StatusCode::NO_CONTENT,
        [(
            header::SET_COOKIE,
            HeaderValue::from_str(&cookie).expect("a fixed cookie"),
        )],
    )
        .into_response()
}
