//! All `/api` routes. Each capability has its own file exposing
//! `fn routes() -> Vec<Route>`; [`table`] lists them all and [`router`]
//! serves exactly that list, so the list can be checked against the OpenAPI
//! document.
//!
//! To add a capability: create `routes/<name>.rs` with handlers taking
//! [`Body`](crate::Body) (decoded by the core's `coderig::json`) and, when
//! they need the store or the agents, `State<AppState>`, and
//! returning `Result<ApiJson<_>, ApiError>` (core errors convert with `?`),
//! each with a `#[utoipa::path]` attribute; add its routes to [`table`] and
//! its handlers to the `paths` of [`crate::openapi`] (its error bodies and
//! hand-written schemas go to [`crate::schema`]).

pub(crate) mod agents;
pub(crate) mod battles;
pub(crate) mod edit;
pub(crate) mod events;
pub(crate) mod flows;
pub(crate) mod guards;
pub(crate) mod hash;
pub(crate) mod hashline;
pub(crate) mod health;
pub(crate) mod openapi;
pub(crate) mod runs;

use crate::{ApiError, AppState};
use axum::extract::rejection::QueryRejection;
use axum::extract::{FromRequestParts, Path};
use axum::handler::Handler;
use axum::http::request::Parts;
use axum::http::Method;
use axum::routing::MethodRouter;
use axum::Router;

/// A route's path parameters, decoded as axum's `Path` decodes them; one
/// that does not decode (not UTF-8 once percent-decoded) is a JSON 400
/// `invalid_input`, not axum's plain text.
pub(crate) struct ApiPath<T>(pub(crate) T);

impl<S: Send + Sync, T: serde::de::DeserializeOwned + Send> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(params)) => Ok(ApiPath(params)),
            Err(rejection) => Err(coderig::Error::invalid_input(format!(
                "bad path parameter: {}",
                rejection.body_text()
            ))
            .into()),
        }
    }
}

/// A query string `route` refused: a JSON 400 `invalid_input` that says
/// what the route `takes`.
pub(crate) fn bad_query(route: &str, takes: &str, rejection: QueryRejection) -> ApiError {
    coderig::Error::invalid_input(format!(
        "bad query of {route}: {}; it takes {takes}",
        rejection.body_text()
    ))
    .into()
}

/// One served route: its method, its path and the handler serving it.
pub(crate) struct Route {
    method: Method,
    path: &'static str,
    service: MethodRouter<AppState>,
}

impl Route {
    /// `GET path` served by `handler`.
    pub(crate) fn get<H: Handler<T, AppState>, T: 'static>(path: &'static str, handler: H) -> Self {
        Route {
            method: Method::GET,
            path,
            service: axum::routing::get(handler),
        }
    }

    /// `POST path` served by `handler`.
    pub(crate) fn post<H: Handler<T, AppState>, T: 'static>(
        path: &'static str,
        handler: H,
    ) -> Self {
        Route {
            method: Method::POST,
            path,
            service: axum::routing::post(handler),
        }
    }

    /// `PATCH path` served by `handler`.
    pub(crate) fn patch<H: Handler<T, AppState>, T: 'static>(
        path: &'static str,
        handler: H,
    ) -> Self {
        Route {
            method: Method::PATCH,
            path,
            service: axum::routing::patch(handler),
        }
    }
}

/// Every route of the API.
fn table() -> Vec<Route> {
    [
        health::routes(),
        agents::routes(),
        events::routes(),
        hash::routes(),
        edit::routes(),
        guards::routes(),
        hashline::routes(),
        flows::routes(),
        battles::routes(),
        runs::routes(),
        openapi::routes(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// `(method, path)` of every route [`router`] serves.
pub(crate) fn served() -> Vec<(Method, &'static str)> {
    table().into_iter().map(|r| (r.method, r.path)).collect()
}

/// Every route of the API, without fallbacks, layers or state (see
/// [`crate::app`]).
pub(crate) fn router() -> Router<AppState> {
    table()
        .into_iter()
        .fold(Router::new(), |router, r| router.route(r.path, r.service))
}

/// Runs a core call on tokio's blocking pool: edits of megabyte contents are
/// CPU work that must not stall the async workers serving other requests.
/// A panic in `work` becomes a JSON 500 `internal`, like one in a handler.
pub(crate) async fn off_runtime<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| coderig::Error::internal(format!("internal error: {e}")).into())
}
