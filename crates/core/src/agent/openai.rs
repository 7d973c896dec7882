//! The `openai` agent (feature `http`): one streaming Chat Completions
//! request per turn against any OpenAI-compatible server (llama.cpp,
//! llama-swap, vLLM, Ollama, a cloud API).
//!
//! Everything this module decides is in the pure [`openai_sse`] (framing)
//! and [`openai_chunk`] (chunks → events, error bodies → errors); this
//! module moves bytes and keeps time.
//!
//! What it does **not** do, on purpose:
//! - **Run tools.** Tool calls the model streams are reported as
//!   `ToolCall` events and the turn ends with `finish_reason`
//!   `tool_calls`; no tool runs and no `ToolResult` follows. The request
//!   offers no tools, so `Turn::access` is enforced whatever it says: this
//!   agent reads and writes no file.
//! - **Retry.** A failed turn returns an [`AgentError`] whose `class` says
//!   what to do (`retry`, `fallback`, `stop`, `fatal`) and whose
//!   `retry_after_ms` carries the server's `Retry-After`; the caller (the
//!   arena, the flow engine) waits and retries, so that one policy governs
//!   every agent and a lane is not held by a sleeping turn.
//!
//! [`openai_sse`]: super::openai_sse
//! [`openai_chunk`]: super::openai_chunk

use super::config::AgentSpec;
use super::http::{
    api_key, client, connection_error, elapsed_ms, header_map, read_bounded, with_deadline, within,
    MODELS_TIMEOUT,
};
use super::openai_chunk::{parse_models, request_body, status_error, ChatStream};
use super::openai_sse::SseDecoder;
use super::{Agent, AgentError, AgentErrorKind, AgentEvent, OutcomeBuilder, Turn, TurnOutcome};
use async_trait::async_trait;
use reqwest::header::{HeaderMap, RETRY_AFTER};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// How to reach an OpenAI-compatible server.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OpenAiConfig {
    /// The API root including the version, e.g. `http://127.0.0.1:8080/v1`
    /// (a trailing `/` is ignored); requests go to
    /// `{base_url}/chat/completions` and `{base_url}/models`.
    pub base_url: String,
    /// The bearer token, if the server wants one.
    pub api_key: Option<String>,
    /// An environment variable to read the bearer token from at each
    /// request, when `api_key` is not set (a variable that is not set is
    /// a configuration error, not an anonymous request).
    pub api_key_env: Option<String>,
    /// The model of turns that name none.
    pub model: Option<String>,
    /// Extra request headers (`OpenAI-Organization`, `HTTP-Referer`, ...).
    pub headers: BTreeMap<String, String>,
    /// Wall-clock limit of a turn that sets none.
    pub timeout: Option<Duration>,
    /// Idle limit of a turn that sets none: the turn fails as hung when no
    /// byte came from the server for this long.
    pub idle_timeout: Option<Duration>,
    /// Fields added to every request body (`temperature`, `max_tokens`,
    /// `reasoning_effort`, ...); they override the agent's own fields.
    pub extra_body: Map<String, Value>,
}

impl OpenAiConfig {
    /// A config for `base_url` with every other field unset.
    pub fn new(base_url: impl Into<String>) -> Self {
        OpenAiConfig {
            base_url: base_url.into(),
            ..Self::default()
        }
    }

    /// The config of a `kind = "openai"` table of `coderig.toml`:
    /// `base_url`, `api_key` / `api_key_env`, `model`, `headers`,
    /// `timeout`, `idle_timeout` (the table's `env` is sent nowhere).
    pub fn from_spec(spec: &AgentSpec) -> Self {
        OpenAiConfig {
            base_url: spec.base_url.clone().unwrap_or_default(),
            api_key: spec.api_key.clone(),
            api_key_env: spec.api_key_env.clone(),
            model: spec.model.clone(),
            headers: spec.headers.clone(),
            timeout: spec.timeout,
            idle_timeout: spec.idle_timeout,
            extra_body: Map::new(),
        }
    }

    /// Sets the default model.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Sets the API key.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Sets the default wall-clock timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Sets the default idle timeout.
    pub fn idle_timeout(mut self, idle: Duration) -> Self {
        self.idle_timeout = Some(idle);
        self
    }
}

/// An [`Agent`] that streams one chat completion per turn.
///
/// Guarantees, beyond the trait's: the request is `stream: true` with
/// `stream_options.include_usage`, messages = the optional system prompt
/// and the user prompt, model = the turn's, else the config's (neither is
/// a `Spawn` error: bad configuration). Each event is sent as soon as its
/// bytes arrive. A turn ends `Ok` only after `[DONE]`; the outcome's usage
/// is the sum of the `Usage` events, `ttft_ms` the time to the first
/// text, reasoning or tool call, `generation_ms` llama.cpp's
/// `timings.predicted_ms`, else the time from the first to the last
/// delta. Errors: HTTP status ≥ 400 and `error` frames are `Provider`
/// errors (also sent as an `Error` event) classified by
/// [`classify_error`](crate::model::classify_error), with the status and `Retry-After`; a failed
/// connection is a `Provider` error of class `retry` (the server may be
/// restarting; the caller's retry policy decides); a stream cut before
/// `[DONE]` is `Protocol`; limits give `Timeout` / `Idle`; cancelling
/// drops the connection and gives `Cancelled`.
#[derive(Debug, Clone)]
pub struct OpenAiAgent {
    config: OpenAiConfig,
    base: String,
    headers: HeaderMap,
    client: reqwest::Client,
}

impl OpenAiAgent {
    /// An agent for `config`. Fails with a `Spawn` error when a header
    /// name or value is invalid or the HTTP client cannot be built.
    pub fn new(config: OpenAiConfig) -> Result<Self, AgentError> {
        let headers = header_map(&config.headers)?;
        let client = client()?;
        Ok(OpenAiAgent {
            base: config.base_url.trim_end_matches('/').to_string(),
            config,
            headers,
            client,
        })
    }

    /// The config this agent was built from.
    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    fn request(
        &self,
        method: reqwest::Method,
        path: &str,
    ) -> Result<reqwest::RequestBuilder, AgentError> {
        let mut req = self
            .client
            .request(method, format!("{}{path}", self.base))
            .headers(self.headers.clone());
        if let Some(key) = self.api_key()? {
            req = req.bearer_auth(key);
        }
        Ok(req)
    }

    fn api_key(&self) -> Result<Option<String>, AgentError> {
        api_key(
            self.config.api_key.as_deref(),
            self.config.api_key_env.as_deref(),
        )
    }

    fn connection_error(&self, e: &reqwest::Error) -> AgentError {
        connection_error(&self.base, e)
    }

    /// The turn without its wall-clock limit and cancellation.
    async fn stream(
        &self,
        turn: &Turn,
        idle: Option<Duration>,
        events: &mpsc::Sender<AgentEvent>,
        outcome: &mut OutcomeBuilder,
        start: Instant,
    ) -> Result<ChatStream, AgentError> {
        let model = turn
            .model
            .as_deref()
            .or(self.config.model.as_deref())
            .ok_or_else(|| {
                AgentError::new(
                    AgentErrorKind::Spawn,
                    "no model: the turn names none and the agent has no default",
                )
            })?;
        let body = request_body(
            model,
            turn.system.as_deref(),
            &turn.prompt,
            &self.config.extra_body,
        );
        let req = self
            .request(reqwest::Method::POST, "/chat/completions")?
            .json(&body);
        let mut resp = within(idle, req.send())
            .await?
            .map_err(|e| self.connection_error(&e))?;
        let status = resp.status().as_u16();
        if status >= 400 {
            let retry_after = resp
                .headers()
                .get(RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .map(String::from);
            let body = read_bounded(&mut resp, idle).await?;
            let err = status_error(status, &body, retry_after.as_deref(), SystemTime::now());
            emit_error(events, outcome, &err, start).await;
            return Err(err);
        }
        let mut sse = SseDecoder::new();
        let mut chat = ChatStream::new();
        loop {
            let bytes = within(idle, resp.chunk())
                .await?
                .map_err(|e| self.connection_error(&e))?;
            let (payloads, last) = match bytes {
                Some(b) => (sse.push(&b), false),
                None => (sse.finish().map(|e| e.into_iter().collect()), true),
            };
            let payloads =
                payloads.map_err(|e| AgentError::new(AgentErrorKind::Protocol, e.to_string()))?;
            for p in payloads {
                match chat.feed(&p.data) {
                    Ok(evs) => {
                        for ev in evs {
                            emit(events, outcome, ev, start).await;
                        }
                    }
                    Err(err) => {
                        if err.kind == AgentErrorKind::Provider {
                            emit_error(events, outcome, &err, start).await;
                        }
                        return Err(err);
                    }
                }
            }
            if last || chat.is_done() {
                chat.end()?;
                return Ok(chat);
            }
        }
    }
}

#[async_trait]
impl Agent for OpenAiAgent {
    async fn run(
        &self,
        turn: Turn,
        events: mpsc::Sender<AgentEvent>,
        cancel: CancellationToken,
    ) -> Result<TurnOutcome, AgentError> {
        let start = Instant::now();
        let timeout = turn.timeout.or(self.config.timeout);
        let idle = turn.idle_timeout.or(self.config.idle_timeout);
        let mut outcome = OutcomeBuilder::new();
        let work = self.stream(&turn, idle, &events, &mut outcome, start);
        let result = tokio::select! {
            biased;
            _ = cancel.cancelled() => Err(AgentError::new(AgentErrorKind::Cancelled, "turn cancelled")),
            r = with_deadline(timeout, work) => r,
        };
        let chat = result?;
        if let Some(ms) = chat.generation_ms() {
            outcome.set_generation_ms(ms);
        }
        let mut out = outcome.finish(elapsed_ms(start), None);
        if out.model.is_none() {
            out.model = chat.model().map(String::from);
        }
        Ok(out)
    }

    /// `GET {base_url}/models`: the `data[].id` list, within the config's
    /// timeout (30 s when it sets none).
    async fn models(&self) -> Result<Vec<String>, AgentError> {
        let limit = self.config.timeout.unwrap_or(MODELS_TIMEOUT);
        let work = async {
            let mut resp = self
                .request(reqwest::Method::GET, "/models")?
                .send()
                .await
                .map_err(|e| self.connection_error(&e))?;
            let status = resp.status().as_u16();
            let retry_after = resp
                .headers()
                .get(RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .map(String::from);
            let body = read_bounded(&mut resp, None).await?;
            if status >= 400 {
                return Err(status_error(
                    status,
                    &body,
                    retry_after.as_deref(),
                    SystemTime::now(),
                ));
            }
            parse_models(&body)
        };
        with_deadline(Some(limit), work).await
    }
}

async fn emit(
    events: &mpsc::Sender<AgentEvent>,
    outcome: &mut OutcomeBuilder,
    ev: AgentEvent,
    start: Instant,
) {
    outcome.observe(&ev, elapsed_ms(start));
    // A receiver that went away does not stop the turn (the trait's contract).
    let _ = events.send(ev).await;
}

async fn emit_error(
    events: &mpsc::Sender<AgentEvent>,
    outcome: &mut OutcomeBuilder,
    err: &AgentError,
    start: Instant,
) {
    let ev = AgentEvent::Error {
        message: err.message.clone(),
        class: err.class,
        http_status: err.http_status,
    };
    emit(events, outcome, ev, start).await;
}
