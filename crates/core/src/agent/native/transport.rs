//! The native agent's HTTP half (feature `http`): the request to the
//! server, the streamed reply decoded into a [`Reply`] (text and
//! reasoning sent as events as they arrive), and the context-window
//! probes. Every decision about bytes is made by [`super::wire`].

use super::agent::{Events, NativeAgent};
use super::calls::CallAccumulator;
use super::context;
use super::wire::{self, probe, WireStream};
use super::{Api, FinishReason, Piece};
use crate::agent::http::{self, read_bounded, within};
use crate::agent::openai_sse::SseDecoder;
use crate::agent::{AgentError, AgentErrorKind, AgentEvent, Usage};
use reqwest::header::RETRY_AFTER;
use serde_json::Value;
use std::time::{Duration, SystemTime};

/// How long one context-window probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// One streamed reply, decoded.
#[derive(Debug, Default)]
pub(super) struct Reply {
    pub(super) text: String,
    pub(super) reasoning: String,
    pub(super) calls: CallAccumulator,
    pub(super) finish: Option<FinishReason>,
    pub(super) usage: Usage,
    pub(super) model: Option<String>,
    pub(super) generation_ms: Option<u64>,
    pub(super) first_ms: Option<u64>,
    pub(super) last_ms: Option<u64>,
}

impl NativeAgent {
    /// A request to `url` with the configured headers and the key (a
    /// bearer token, or Anthropic's `x-api-key`).
    pub(super) fn request(
        &self,
        method: reqwest::Method,
        url: &str,
    ) -> Result<reqwest::RequestBuilder, AgentError> {
        let mut req = self
            .client
            .request(method, url)
            .headers(self.headers.clone());
        let key = http::api_key(
            self.config.api_key.as_deref(),
            self.config.api_key_env.as_deref(),
        )?;
        if let Some(key) = key {
            req = match self.config.api {
                Api::Anthropic => req.header("x-api-key", key),
                _ => req.bearer_auth(key),
            };
        }
        Ok(req)
    }

    pub(super) fn connection_error(&self, e: &reqwest::Error) -> AgentError {
        http::connection_error(&self.base, e)
    }

    /// The context window of `model`: the config's, else what the server
    /// says (vLLM `/v1/models`, llama.cpp `/props`, Ollama `/api/show`, in
    /// that order), else [`probe::ASSUMED_WINDOW`]. Asked once per model.
    pub async fn context_window(&self, model: &str) -> (u32, probe::WindowSource) {
        if let Some(w) = self.config.window_for(model) {
            return (w, probe::WindowSource::Config);
        }
        if let Some(found) = self.windows.lock().ok().and_then(|w| w.get(model).copied()) {
            return found;
        }
        let found = self.probe_window(model).await;
        if let Ok(mut w) = self.windows.lock() {
            w.insert(model.to_string(), found);
        }
        found
    }

    pub(super) async fn probe_window(&self, model: &str) -> (u32, probe::WindowSource) {
        let root = probe::server_root(&self.base);
        let get = |url: String| async move {
            let req = self.request(reqwest::Method::GET, &url).ok()?;
            let resp = tokio::time::timeout(PROBE_TIMEOUT, req.send())
                .await
                .ok()?
                .ok()?;
            if !resp.status().is_success() {
                return None;
            }
            tokio::time::timeout(PROBE_TIMEOUT, resp.text())
                .await
                .ok()?
                .ok()
        };
        if let Some(w) = get(format!("{}/models", self.base))
            .await
            .and_then(|b| probe::from_models(&b, model))
        {
            return (w, probe::WindowSource::Models);
        }
        let props = format!("{root}/props?model={}", url_escape(model));
        if let Some(w) = get(props).await.and_then(|b| probe::from_props(&b)) {
            return (w, probe::WindowSource::Props);
        }
        let show = async {
            let req = self
                .request(reqwest::Method::POST, &format!("{root}/api/show"))
                .ok()?
                .json(&probe::ollama_show_body(model));
            let resp = tokio::time::timeout(PROBE_TIMEOUT, req.send())
                .await
                .ok()?
                .ok()?;
            if !resp.status().is_success() {
                return None;
            }
            let body = tokio::time::timeout(PROBE_TIMEOUT, resp.text())
                .await
                .ok()?
                .ok()?;
            probe::from_ollama_show(&body)
        };
        if let Some(w) = show.await {
            return (w, probe::WindowSource::OllamaShow);
        }
        (probe::ASSUMED_WINDOW, probe::WindowSource::Assumed)
    }

    /// Streams one request and decodes its reply, sending text and
    /// reasoning as events as they come.
    pub(super) async fn stream_reply(
        &self,
        body: &Value,
        idle: Option<Duration>,
        events: &Events<'_>,
    ) -> Result<Reply, AgentError> {
        let url = format!("{}{}", self.base, wire::path(self.config.api));
        let req = self.request(reqwest::Method::POST, &url)?.json(body);
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
            let err = wire::status_error(
                self.config.api,
                status,
                &body,
                retry_after.as_deref(),
                SystemTime::now(),
            );
            // A refusal for length may be recovered from by the loop,
            // which reports it when it is not.
            if !context::is_context_overflow(&err) {
                events.error(&err).await;
            }
            return Err(err);
        }
        let is_sse = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_none_or(|t| t.contains("event-stream"));
        let mut reply = Reply::default();
        if !is_sse {
            // A server that ignored `stream: true` (some Ollama versions
            // with tools): one JSON body.
            let text = read_all(&mut resp, idle).await?;
            for piece in wire::decode_whole(self.config.api, &text)? {
                self.take(&mut reply, piece, events).await;
            }
            return Ok(reply);
        }
        let mut sse = SseDecoder::new();
        let mut stream = WireStream::new(self.config.api);
        loop {
            let bytes = within(idle, resp.chunk())
                .await?
                .map_err(|e| self.connection_error(&e))?;
            let (frames, last) = match bytes {
                Some(b) => (sse.push(&b), false),
                None => (sse.finish().map(|e| e.into_iter().collect()), true),
            };
            let frames =
                frames.map_err(|e| AgentError::new(AgentErrorKind::Protocol, e.to_string()))?;
            for f in frames {
                match stream.feed(f.event.as_deref(), &f.data) {
                    Ok(pieces) => {
                        for p in pieces {
                            self.take(&mut reply, p, events).await;
                        }
                    }
                    Err(err) => {
                        if err.kind == AgentErrorKind::Provider {
                            events.error(&err).await;
                        }
                        return Err(err);
                    }
                }
            }
            if last || stream.is_done() {
                stream.end()?;
                return Ok(reply);
            }
        }
    }

    pub(super) async fn take(&self, reply: &mut Reply, piece: Piece, events: &Events<'_>) {
        let now = events.elapsed_ms();
        match piece {
            Piece::Text(t) => {
                reply.first_ms.get_or_insert(now);
                reply.last_ms = Some(now);
                reply.text.push_str(&t);
                events.send(AgentEvent::TextDelta { text: t }).await;
            }
            Piece::Reasoning(t) => {
                reply.first_ms.get_or_insert(now);
                reply.last_ms = Some(now);
                reply.reasoning.push_str(&t);
                events.send(AgentEvent::ReasoningDelta { text: t }).await;
            }
            Piece::Call(f) => {
                reply.first_ms.get_or_insert(now);
                reply.last_ms = Some(now);
                reply.calls.push(f);
            }
            Piece::Usage(u) => reply.usage.add(&u),
            Piece::Finish(r) => reply.finish = Some(r),
            Piece::Model(m) => {
                reply.model.get_or_insert(m);
            }
            Piece::GenerationMs(ms) => reply.generation_ms = Some(ms),
        }
    }
}

fn url_escape(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
}

/// The whole body of a non-streamed reply (bounded at 16 MiB).
async fn read_all(
    resp: &mut reqwest::Response,
    idle: Option<Duration>,
) -> Result<String, AgentError> {
    let mut buf = Vec::new();
    loop {
        match within(idle, resp.chunk()).await? {
            Ok(Some(b)) => {
                buf.extend_from_slice(&b);
                if buf.len() > 16 << 20 {
                    return Err(AgentError::new(
                        AgentErrorKind::Protocol,
                        "a non-streamed reply of more than 16 MiB",
                    ));
                }
            }
            Ok(None) => break,
            Err(e) => {
                return Err(AgentError::new(
                    AgentErrorKind::Protocol,
                    format!("the reply was cut: {e}"),
                ))
            }
        }
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
}
