//! Helpers shared by the HTTP end-to-end test files.
#![allow(dead_code)] // each test binary uses its own subset

pub mod calc;
pub mod schema;
pub mod server;

use coderig::agent::Registry;
use coderig::rig::RigConfig;
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
    spawn_app(config, registry).await.url
}

/// A server on loopback and the state it serves (its store, its bus), so a
/// test can write into the very store the server reads.
pub struct TestServer {
    pub url: String,
    pub state: AppState,
}

/// As [`spawn_server_with`], returning the state too: a rig in a
/// temporary directory that runs no workers (these servers' tests write
/// battles and runs into the store themselves, or need none run). The bus
/// has read where the log ends before this returns, so every event the
/// test writes afterwards is live.
pub async fn spawn_app(config: Config, registry: Registry) -> TestServer {
    let dir = tempfile::tempdir().unwrap();
    let mut rig = RigConfig::new(dir.path());
    rig.agents = registry;
    rig.run_workers = false;
    spawn_rig(config, rig, dir).await
}

/// Serves the rig `rig` opens (its data dir in `dir`, which lives as long
/// as the server's task), once its bus has read where the log ends.
pub async fn spawn_rig(config: Config, rig: RigConfig, dir: tempfile::TempDir) -> TestServer {
    install_crypto();
    let state = AppState::open(rig).await.unwrap();
    state.bus().started().await.unwrap();
    spawn_state(config, state, dir).await
}

/// Serves `state` on `127.0.0.1:0`; `dir` (its store's) lives as long as
/// the server's task.
pub async fn spawn_state(config: Config, state: AppState, dir: tempfile::TempDir) -> TestServer {
    install_crypto();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    let router = app(&config, state.clone());
    tokio::spawn(async move {
        let _dir = dir;
        axum::serve(listener, router).await.unwrap()
    });
    TestServer {
        url: format!("http://{addr}"),
        state,
    }
}

/// One frame of a `text/event-stream`: its `id`, `event` and `data`
/// fields, or the text of a `:` comment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Frame {
    pub id: Option<String>,
    pub event: Option<String>,
    pub data: Option<String>,
    pub comment: Option<String>,
}

impl Frame {
    /// The data as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(self.data.as_deref().unwrap_or("null")).unwrap()
    }
}

/// A real SSE client over a streaming reqwest response: frames are split
/// at blank lines and their `field: value` lines parsed (multi-line data
/// joined with `\n`, as the SSE spec has it).
pub struct SseClient {
    response: reqwest::Response,
    buffer: Vec<u8>,
}

impl SseClient {
    /// Opens `GET url` with `headers`; panics unless it is a 200
    /// `text/event-stream`.
    pub async fn open(url: &str, headers: &[(&str, &str)]) -> SseClient {
        install_crypto();
        let mut request = reqwest::Client::new().get(url);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{url}");
        let content_type = response.headers()[reqwest::header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(
            content_type.starts_with("text/event-stream"),
            "{content_type}"
        );
        SseClient {
            response,
            buffer: Vec::new(),
        }
    }

    /// The next frame (comments included); `None` when the stream ended.
    /// Guarded by a generous timeout so a broken server fails the test
    /// instead of hanging it.
    pub async fn frame(&mut self) -> Option<Frame> {
        tokio::time::timeout(std::time::Duration::from_secs(60), self.frame_unguarded())
            .await
            .expect("no SSE frame within 60 s")
    }

    async fn frame_unguarded(&mut self) -> Option<Frame> {
        loop {
            if let Some(end) = self.buffer.windows(2).position(|w| w == b"\n\n") {
                let raw: Vec<u8> = self.buffer.drain(..end + 2).collect();
                let text = String::from_utf8(raw).unwrap();
                let mut frame = Frame::default();
                for line in text.lines().filter(|l| !l.is_empty()) {
                    let (field, value) = line.split_once(':').unwrap_or((line, ""));
                    let value = value.strip_prefix(' ').unwrap_or(value).to_owned();
                    match field {
                        "" => frame.comment = Some(value),
                        "id" => frame.id = Some(value),
                        "event" => frame.event = Some(value),
                        "data" => {
                            frame.data = Some(match frame.data.take() {
                                Some(before) => format!("{before}\n{value}"),
                                None => value,
                            })
                        }
                        _ => {}
                    }
                }
                return Some(frame);
            }
            match self.response.chunk().await.unwrap() {
                Some(chunk) => self.buffer.extend_from_slice(&chunk),
                None => return None,
            }
        }
    }

    /// The next frame that is not a comment.
    pub async fn event(&mut self) -> Frame {
        loop {
            let frame = self.frame().await.expect("the stream ended");
            if frame.comment.is_none() {
                return frame;
            }
        }
    }
}

/// `GET url`: the status and the JSON body (declared as JSON).
pub async fn get(url: String) -> (StatusCode, Value) {
    install_crypto();
    json_of(reqwest::get(url).await.unwrap()).await
}

/// `POST url` with `body` as JSON: the status and the JSON body (declared
/// as JSON).
pub async fn post(url: String, body: Value) -> (StatusCode, Value) {
    install_crypto();
    json_of(
        reqwest::Client::new()
            .post(url)
            .json(&body)
            .send()
            .await
            .unwrap(),
    )
    .await
}

/// `DATABASE_URL` as the test command sets it (a throwaway PostgreSQL);
/// without it the PostgreSQL test `test` says so on stderr and passes
/// without running, unless `CODERIG_REQUIRE_POSTGRES=1` (then a missing
/// URL fails it).
pub fn database_url(test: &str) -> Option<String> {
    match std::env::var("DATABASE_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert_ne!(
                std::env::var("CODERIG_REQUIRE_POSTGRES").as_deref(),
                Ok("1"),
                "CODERIG_REQUIRE_POSTGRES=1 but DATABASE_URL is not set"
            );
            // Straight to fd 2: libtest captures only print!/eprint!.
            let _ = std::io::Write::write_all(
                &mut std::io::stderr(),
                format!("{test}: DATABASE_URL is not set: SKIPPING (passes without running)\n")
                    .as_bytes(),
            );
            None
        }
    }
}

/// A JSON client of one test server: its base URL, and the bearer token
/// sent with every request when the server has one.
pub struct Api {
    pub url: String,
    pub client: reqwest::Client,
    pub token: Option<String>,
}

impl Api {
    pub fn new(url: String, token: Option<String>) -> Api {
        install_crypto();
        Api {
            url,
            client: reqwest::Client::new(),
            token,
        }
    }

    /// `METHOD url+path` (with `body` as JSON): the status and the JSON
    /// body (declared as JSON).
    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut request = self.client.request(method, format!("{}{path}", self.url));
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        json_of(request.send().await.unwrap()).await
    }

    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.call(reqwest::Method::GET, path, None).await
    }

    pub async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }
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

/// The `--json` stream of `coderig battle run` and `coderig run`: one JSON
/// line per stored event, in sequence order, then the final view with
/// `type` = `last_type`. Returns the events and the final view.
pub fn json_stream(stdout: &[u8], last_type: &str) -> (Vec<Value>, Value) {
    let text = String::from_utf8_lossy(stdout);
    let mut lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}\n{text}")))
        .collect();
    let last = lines
        .pop()
        .unwrap_or_else(|| panic!("no final line: {text}"));
    assert_eq!(last["type"], last_type, "{last:#}");
    let seqs: Vec<u64> = lines.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    (lines, last)
}
