//! # coderig-server — the reference HTTP face of coderig
//!
//! [`app`] builds the whole axum [`Router`](axum::Router) from a [`Config`];
//! the `coderig` binary binds it to a socket, and the end-to-end tests serve
//! it on an ephemeral loopback port. Every route is a few lines that convert
//! JSON to core types, call the core and convert back: no logic lives here.
//! The request/response shapes live in [`wire`] (shared with the CLI's
//! `--json` mode); [`openapi::document`] describes every route, and
//! [`route_list`] is what the tests hold it against.
//!
//! Errors are always JSON, shaped
//! `{"ok": false, "error": {"kind", "code", "message", ...details}}`; see
//! [`ApiError`] for the status mapping.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod error;
mod json;
pub mod openapi;
mod routes;
pub mod wire;

pub use error::ApiError;
pub use json::ApiJson;

use axum::extract::DefaultBodyLimit;
use axum::http::Method;
use tower_http::catch_panic::CatchPanicLayer;

/// Default request-body limit: 8 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 8 * 1024 * 1024;

/// Server settings that shape the router (not the socket).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Largest accepted request body in bytes; larger bodies get a JSON 413.
    pub max_body_bytes: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
        }
    }
}

/// The complete application: every `/api` route, JSON 404/405 fallbacks,
/// the body-size limit and a panic catcher that turns a bug into a JSON 500
/// instead of a dropped connection.
pub fn app(config: &Config) -> axum::Router {
    routes::router()
        .fallback(error::route_not_found)
        .method_not_allowed_fallback(error::method_not_allowed)
        .layer(DefaultBodyLimit::max(config.max_body_bytes))
        .layer(CatchPanicLayer::custom(error::panic_response))
}

/// `(method, path)` of every route [`app`] serves (fallbacks aside), in
/// registration order; the OpenAPI document must list exactly these.
pub fn route_list() -> Vec<(Method, &'static str)> {
    routes::served()
}
