//! Helpers shared by the HTTP end-to-end test files.
#![allow(dead_code)] // each test binary uses its own subset

use coderig::agent::Registry;
use coderig_server::{app, AppState, Config};
use reqwest::StatusCode;
use serde_json::Value;
use std::net::SocketAddr;

/// Installs ring as rustls' crypto provider, which reqwest clients need:
/// the core's `http` feature builds reqwest without one (the core installs
/// it when it builds its own client). Call before building a client.
pub fn install_crypto() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Serves [`app`] on `127.0.0.1:0` in the background, without agents, over
/// a real SQLite store in a temporary directory; returns the base URL.
pub async fn spawn_server(config: Config) -> String {
    spawn_server_with(config, Registry::new()).await
}

/// As [`spawn_server`], with the agents of `registry`. The store's
/// directory lives as long as the server's task (the test's runtime).
pub async fn spawn_server_with(config: Config, registry: Registry) -> String {
    install_crypto();
    let dir = tempfile::tempdir().unwrap();
    let store = coderig::store::open(None, dir.path()).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    let router = app(&config, AppState::new(store, registry));
    tokio::spawn(async move {
        let _dir = dir;
        axum::serve(listener, router).await.unwrap()
    });
    format!("http://{addr}")
}

/// Status and JSON body of a response, asserting it is declared as JSON.
pub async fn json_of(response: reqwest::Response) -> (StatusCode, Value) {
    let status = response.status();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .map(|v| v.to_str().unwrap().to_owned());
    assert_eq!(
        content_type.as_deref(),
        Some("application/json"),
        "status {status}"
    );
    (status, response.json().await.unwrap())
}

/// Asserts `body` is an error of `kind` with its upper-case code and a message.
pub fn assert_error(body: &Value, kind: &str) {
    assert_eq!(body["ok"], false, "{body}");
    assert_eq!(body["error"]["kind"], kind, "{body}");
    assert_eq!(body["error"]["code"], kind.to_ascii_uppercase(), "{body}");
    assert!(
        !body["error"]["message"].as_str().unwrap().is_empty(),
        "{body}"
    );
}
