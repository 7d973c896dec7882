//! The HTTP server: routing, recording, and the background runtime that owns it.

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, Method, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};
use tokio::sync::oneshot;

use crate::decide::{decide, Flags};
use crate::{anthropic, chat, responses, sse};

/// One request as the server received it, in arrival order.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// The HTTP method, upper case (`POST`, `GET`).
    pub method: String,
    /// The path without the query (`/v1/messages`).
    pub path: String,
    /// The raw query string, if the URL had one (`beta=true`).
    pub query: Option<String>,
    /// The body's `model`, if it had one (flags included, as sent).
    pub model: Option<String>,
    /// Every header, names lower-cased; values that are not UTF-8 are stored lossily.
    pub headers: BTreeMap<String, String>,
    /// The body as JSON; a body that is not JSON is stored as a JSON string
    /// of its (lossy UTF-8) text, and an empty body as `null`.
    pub body: Value,
}

#[derive(Default)]
struct Shared {
    requests: Mutex<Vec<RecordedRequest>>,
    counter: AtomicU64,
}

/// A scripted model-provider server on 127.0.0.1, serving on its own thread
/// and runtime until [`ScriptedModelServer::shutdown`] or drop.
///
/// Routes (each also without the `/v1` prefix): `POST /v1/chat/completions`,
/// `POST /v1/responses`, `POST /v1/messages` (any query, e.g. `?beta=true`),
/// `GET /v1/models`; anything else is a 404 with an OpenAI-style error body.
/// Every request, whatever its route, is recorded for [`Self::requests`].
pub struct ScriptedModelServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl ScriptedModelServer {
    /// Binds 127.0.0.1 on a free port and starts serving before it returns,
    /// so the first request cannot race the listener.
    pub fn start() -> io::Result<Self> {
        Self::start_on_port(0)
    }

    /// Like [`Self::start`] on `port` (0 picks a free one).
    pub fn start_on_port(port: u16) -> io::Result<Self> {
        let listener = std::net::TcpListener::bind(("127.0.0.1", port))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared::default());
        let (stop, stopped) = oneshot::channel::<()>();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<io::Result<()>>();
        let app = router(shared.clone());
        let thread = std::thread::Builder::new()
            .name("scripted-model".into())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                runtime.block_on(async move {
                    let listener = match tokio::net::TcpListener::from_std(listener) {
                        Ok(l) => l,
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return;
                        }
                    };
                    let _ = ready_tx.send(Ok(()));
                    // Not graceful on purpose: a `hang` stream never ends, and
                    // dropping the runtime below closes every connection.
                    tokio::select! {
                        _ = axum::serve(listener, app) => {}
                        _ = stopped => {}
                    }
                });
            })?;
        ready_rx
            .recv()
            .map_err(|_| io::Error::other("scripted model server thread exited early"))??;
        Ok(ScriptedModelServer {
            addr,
            shared,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// `http://127.0.0.1:PORT`, without `/v1` (append it for OpenAI clients).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The port the server listens on.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// A copy of every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared
            .requests
            .lock()
            .map(|r| r.clone())
            .unwrap_or_else(|poisoned| poisoned.into_inner().clone())
    }

    /// Stops serving and closes every open connection (hanging streams too);
    /// returns once the server thread has ended.
    pub fn shutdown(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for ScriptedModelServer {
    fn drop(&mut self) {
        self.stop_now();
    }
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .fallback(handle)
        .layer(DefaultBodyLimit::disable())
        .with_state(shared)
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    raw: Bytes,
) -> Response {
    let parsed: Result<Value, _> = if raw.is_empty() {
        Ok(Value::Null)
    } else {
        serde_json::from_slice(&raw)
    };
    let body = match &parsed {
        Ok(v) => v.clone(),
        Err(_) => Value::String(String::from_utf8_lossy(&raw).into_owned()),
    };
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .map(str::to_string);
    let path = uri.path().to_string();
    let record = RecordedRequest {
        method: method.as_str().to_string(),
        path: path.clone(),
        query: uri.query().map(str::to_string),
        model: model.clone(),
        headers: headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body: body.clone(),
    };
    if let Ok(mut requests) = shared.requests.lock() {
        requests.push(record);
    }
    let n = shared.counter.fetch_add(1, Ordering::Relaxed) + 1;
    let route = path.strip_prefix("/v1").unwrap_or(&path);
    let protocol = match (&method, route) {
        (&Method::GET, "/models") => return models().into_response(),
        (&Method::POST, "/chat/completions") => Protocol::Chat,
        (&Method::POST, "/responses") => Protocol::Responses,
        (&Method::POST, "/messages") => Protocol::Anthropic,
        _ => {
            return sse::error_response(
                404,
                sse::openai_error(404, &format!("no route for {method} {path}")),
            )
        }
    };
    if parsed.is_err() || !body.is_object() {
        return protocol.error(400, "request body is not a JSON object");
    }
    let (_, flags) = Flags::parse(model.as_deref().unwrap_or_default());
    if let Some(status) = flags.status {
        return protocol.error(status, &format!("scripted status {status}"));
    }
    protocol.reply(&body, &flags, n)
}

#[derive(Clone, Copy)]
enum Protocol {
    Chat,
    Responses,
    Anthropic,
}

impl Protocol {
    fn error(self, status: u16, message: &str) -> Response {
        match self {
            Protocol::Chat | Protocol::Responses => {
                sse::error_response(status, sse::openai_error(status, message))
            }
            Protocol::Anthropic => {
                sse::error_response(status, anthropic::error_body(status, message))
            }
        }
    }

    fn reply(self, body: &Value, flags: &Flags, n: u64) -> Response {
        let streaming = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
        match self {
            Protocol::Chat => {
                let reply = decide(&chat::view(body));
                if streaming {
                    sse::Script::new(chat::frames(body, &reply, flags, n), flags).into_response()
                } else {
                    axum::Json(chat::completion(body, &reply, flags, n)).into_response()
                }
            }
            Protocol::Responses => {
                let reply = decide(&responses::view(body));
                if streaming {
                    sse::Script::new(responses::frames(body, &reply, flags, n), flags)
                        .into_response()
                } else {
                    axum::Json(responses::complete(body, &reply, flags, n)).into_response()
                }
            }
            Protocol::Anthropic => {
                let reply = decide(&anthropic::view(body));
                if streaming {
                    sse::Script::new(anthropic::frames(body, &reply, flags, n), flags)
                        .into_response()
                } else {
                    axum::Json(anthropic::message(body, &reply, flags, n)).into_response()
                }
            }
        }
    }
}

fn models() -> axum::Json<Value> {
    axum::Json(json!({
        "object": "list",
        "data": [{"id": "scripted-model", "object": "model", "created": 1_700_000_000u64,
                  "owned_by": "coderig-scripted-model"}]
    }))
}
