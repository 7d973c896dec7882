//! `GET /api/openapi.json`: the document of this server, built once when
//! the app is ([`crate::app`] puts it in a [`Document`] extension), so it
//! describes the server as configured (a token or none).

use super::Route;
use crate::ApiJson;
use axum::Extension;
use serde_json::Value;
use std::sync::Arc;

pub(super) fn routes() -> Vec<Route> {
    vec![Route::get("/api/openapi.json", openapi)]
}

/// The OpenAPI document a server serves, shared by every request.
#[derive(Debug, Clone)]
pub(crate) struct Document(Arc<Value>);

impl Document {
    pub(crate) fn new(document: Value) -> Self {
        Document(Arc::new(document))
    }
}

impl serde::Serialize for Document {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

/// This document.
#[utoipa::path(get, tag = "meta", path = "/api/openapi.json", responses(
    (status = 200, description = "The OpenAPI 3.1 document of this API, as this server runs (with its token or without).", body = Object),
))]
pub(crate) async fn openapi(Extension(document): Extension<Document>) -> ApiJson<Document> {
    ApiJson(document)
}
