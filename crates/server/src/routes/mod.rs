//! All `/api` routes. Each capability has its own file exposing
//! `fn routes() -> Router`; [`router`] merges them.
//!
//! To add a capability: create `routes/<name>.rs` with handlers taking
//! [`ApiJson`](crate::ApiJson) and returning `Result<ApiJson<_>, ApiError>`
//! (core errors convert with `?` through `From<EditError>`), then add one
//! `.merge(<name>::routes())` line below.

mod hash;
mod health;

use axum::Router;

/// Every route of the API, without fallbacks or layers (see [`crate::app`]).
pub(crate) fn router() -> Router {
    Router::new().merge(health::routes()).merge(hash::routes())
}
