//! The HTTP server: routing, recording, and the background runtime that owns it.

use std::collections::{BTreeMap, HashMap};
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

use crate::answer::{tokens, Answer};
use crate::decide::{decide, Flags};
use crate::script::{next_reply, Script};
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
    scripts: Mutex<HashMap<String, Script>>,
}

impl Shared {
    fn script(&self, name: &str) -> Option<Script> {
        self.scripts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(name)
            .cloned()
    }

    fn script_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .scripts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .keys()
            .cloned()
            .collect();
        names.sort();
        names
    }
}

/// A scripted model-provider server on 127.0.0.1, serving on its own thread
/// and runtime until [`ScriptedModelServer::shutdown`] or drop.
///
/// Routes (each also without the `/v1` prefix): `POST /v1/chat/completions`,
/// `POST /v1/responses`, `POST /v1/messages` (any query, e.g. `?beta=true`),
/// `GET /v1/models` (vLLM's `max_model_len` on each entry), `GET /props`
/// (llama.cpp), `POST /api/show` (Ollama); anything else is a 404 with an
/// OpenAI-style error body.
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

    /// Registers `script` under `name` (replacing any script of that name):
    /// from now on a request whose model is `name` or `name+flags` plays it.
    pub fn add_script(&self, name: &str, script: Script) {
        self.shared
            .scripts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name.to_string(), script);
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
        (&Method::GET, "/models") => return models(&shared.script_names()).into_response(),
        (&Method::GET, "/props") => return props(uri.query()).into_response(),
        (&Method::POST, "/api/show") if path == "/api/show" => {
            return ollama_show(&body).into_response()
        }
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
    let (name, flags) = Flags::parse(model.as_deref().unwrap_or_default());
    if let Some(status) = flags.status {
        return protocol.error(status, &format!("scripted status {status}"));
    }
    let prompt = tokens(protocol.prompt_bytes(&body));
    let window = flags.window();
    if prompt > window {
        return protocol.too_long(prompt, window);
    }
    let answer = match shared.script(&name) {
        Some(script) => {
            let step = next_reply(&script, &protocol.prior_replies(&body));
            Answer::from_step(&step, &flags, prompt)
        }
        None => Answer::from_reply(&decide(&protocol.view(&body)), &flags),
    };
    protocol.reply(&body, &answer, &flags, n)
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

    /// The refusal of a prompt larger than the window: llama.cpp's
    /// `exceed_context_size_error` on the OpenAI wires, Anthropic's
    /// `invalid_request_error` "prompt is too long" on Messages; HTTP 400.
    fn too_long(self, prompt: u64, window: u64) -> Response {
        match self {
            Protocol::Chat | Protocol::Responses => sse::error_response(
                400,
                json!({"error": {
                    "code": 400,
                    "message": "the request exceeds the available context size, try increasing it",
                    "type": "exceed_context_size_error",
                    "n_prompt_tokens": prompt,
                    "n_ctx": window,
                }}),
            ),
            Protocol::Anthropic => sse::error_response(
                400,
                anthropic::error_body(
                    400,
                    &format!("prompt is too long: {prompt} tokens > {window} maximum"),
                ),
            ),
        }
    }

    fn view(self, body: &Value) -> crate::decide::RequestView {
        match self {
            Protocol::Chat => chat::view(body),
            Protocol::Responses => responses::view(body),
            Protocol::Anthropic => anthropic::view(body),
        }
    }

    fn prior_replies(self, body: &Value) -> Vec<crate::script::PriorReply> {
        // Replies a client summarized away come first (see
        // `script::digested_replies`), then the ones still in the request.
        let mut replies = crate::script::digested_replies(body);
        replies.extend(match self {
            Protocol::Chat => chat::prior_replies(body),
            Protocol::Responses => responses::prior_replies(body),
            Protocol::Anthropic => anthropic::prior_replies(body),
        });
        replies
    }

    fn prompt_bytes(self, body: &Value) -> usize {
        match self {
            Protocol::Chat => chat::prompt_bytes(body),
            Protocol::Responses => responses::prompt_bytes(body),
            Protocol::Anthropic => anthropic::prompt_bytes(body),
        }
    }

    fn reply(self, body: &Value, answer: &Answer, flags: &Flags, n: u64) -> Response {
        let streaming = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
        match (self, streaming) {
            (Protocol::Chat, true) => {
                sse::Script::new(chat::frames(body, answer, flags, n), flags).into_response()
            }
            (Protocol::Chat, false) => {
                axum::Json(chat::completion(body, answer, flags, n)).into_response()
            }
            (Protocol::Responses, true) => {
                sse::Script::new(responses::frames(body, answer, flags, n), flags).into_response()
            }
            (Protocol::Responses, false) => {
                axum::Json(responses::complete(body, answer, flags, n)).into_response()
            }
            (Protocol::Anthropic, true) => {
                sse::Script::new(anthropic::frames(body, answer, flags, n), flags).into_response()
            }
            (Protocol::Anthropic, false) => {
                axum::Json(anthropic::message(body, answer, flags, n)).into_response()
            }
        }
    }
}

/// vLLM's model list: `scripted-model` and every registered script name,
/// each with `max_model_len` (the default window).
fn models(scripts: &[String]) -> axum::Json<Value> {
    let data: Vec<Value> = std::iter::once("scripted-model".to_string())
        .chain(scripts.iter().filter(|s| *s != "scripted-model").cloned())
        .map(|id| {
            json!({"id": id, "object": "model", "created": 1_700_000_000u64,
                   "owned_by": "coderig-scripted-model", "root": id,
                   "max_model_len": crate::decide::DEFAULT_CONTEXT})
        })
        .collect();
    axum::Json(json!({"object": "list", "data": data}))
}

/// The value of `key` in a URL query (percent-decoding `%XX` and `+`).
fn query_param(query: Option<&str>, key: &str) -> Option<String> {
    query?.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (k == key).then(|| percent_decode(v))
    })
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 3;
                        continue;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            // In a query `+` is a space, but model names use `+` for flags:
            // keep it (clients that encode the name send `%2B`).
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// llama.cpp's `GET /props` for the model named by the `model` query
/// parameter (flags honoured); without one, the default window.
fn props(query: Option<&str>) -> axum::Json<Value> {
    let model = query_param(query, "model").unwrap_or_else(|| "scripted-model".into());
    let window = Flags::parse(&model).1.window();
    axum::Json(json!({
        "default_generation_settings": {
            "id": 0, "id_task": -1, "n_ctx": window, "speculative": false,
            "is_processing": false,
            "params": {"n_predict": -1, "temperature": 0.8, "top_k": 40, "top_p": 0.95},
        },
        "total_slots": 1,
        "model_path": format!("/models/{}.gguf", Flags::parse(&model).0),
        "chat_template": "{{ messages }}",
        "modalities": {"vision": false, "audio": false},
        "build_info": "b0-coderig-scripted-model",
    }))
}

/// Ollama's `POST /api/show {"model": M}` (or the older `"name"`): the
/// window the model runs with in `parameters` (`num_ctx`, padded as Ollama
/// pads it), and a larger trained length in `model_info` that is not the
/// window.
fn ollama_show(body: &Value) -> Response {
    let Some(model) = body
        .get("model")
        .or_else(|| body.get("name"))
        .and_then(Value::as_str)
    else {
        return sse::error_response(400, json!({"error": "model is required"}));
    };
    let window = Flags::parse(model).1.window();
    let parameters = [
        format!("{:<30} {}", "num_ctx", window),
        format!("{:<30} {:?}", "stop", "<|im_end|>"),
        format!("{:<30} {}", "temperature", 0.7),
    ]
    .join("\n");
    axum::Json(json!({
        "license": "",
        "modelfile": format!("FROM /models/{model}\nPARAMETER num_ctx {window}\n"),
        "parameters": parameters,
        "template": "{{ .Prompt }}",
        "details": {"parent_model": "", "format": "gguf", "family": "llama",
                    "families": ["llama"], "parameter_size": "8.0B",
                    "quantization_level": "Q4_K_M"},
        "model_info": {"general.architecture": "llama", "general.parameter_count": 8_000_000_000u64,
                       "llama.context_length": 131_072},
        "capabilities": ["completion", "tools"],
        "modified_at": "2024-01-01T00:00:00Z",
    }))
    .into_response()
}
