//! The native agent's loop (feature `http`): stream a request, read the
//! calls, run them, send the results, repeat. Every decision is made by
//! the pure rooms beside this file; this one moves bytes, keeps time and
//! writes the transcript.

use super::calls::{CallAccumulator, IdMinter};
use super::context::{self, Budget};
use super::control::{CallVerdict, Control, StopReason};
use super::tools::{ToolBox, ToolResult, ToolSettings};
use super::wire::{self, probe, WireStream};
use super::{Api, CallsRead, FinishReason, Message, Piece, Request, ToolCall};
use crate::agent::openai_sse::SseDecoder;
use crate::agent::{
    Agent, AgentError, AgentErrorKind, AgentEvent, OutcomeBuilder, Turn, TurnOutcome, Usage,
};
use crate::model::classify_error;
use async_trait::async_trait;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::future::Future;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::config::{NativeConfig, DEFAULT_RUN_TIMEOUT};
use super::prompt;

/// How much of an error response body is read.
const ERROR_BODY_LIMIT: usize = 64 * 1024;
/// How long one context-window probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
/// How many times one request is shaped again for a smaller window after
/// the server refused it for its length.
const MAX_OVERFLOW_RETRIES: u32 = 4;
/// How long `models()` waits when the config sets no timeout.
const MODELS_TIMEOUT: Duration = Duration::from_secs(30);

/// coderig's own coding agent ([module docs](super)).
///
/// Guarantees, beyond the [`Agent`] trait's: every request fits the
/// context window by the estimate of [`context`] (else the turn fails
/// with `unavailable` before sending it); a call cut by the output limit
/// or unreadable is answered with an error and never run; every path a
/// tool touches is inside the workdir; `run` commands run under the
/// sandbox the turn's access implies and die with the turn. The outcome's
/// `stop_reason` is one of [`StopReason::NAMES`]; `requests`,
/// `tool_calls`, `calls_read` and `context_window` are set. Errors: a
/// server that answers ≥ 400 (`provider`, classified), drops the stream
/// (`protocol`), or cannot be reached (`provider`, class `retry`); the
/// turn's `timeout` / `idle_timeout` (`timeout` / `idle`); cancel
/// (`cancelled`).
#[derive(Debug)]
pub struct NativeAgent {
    config: NativeConfig,
    base: String,
    headers: HeaderMap,
    client: reqwest::Client,
    windows: Mutex<HashMap<String, (u32, probe::WindowSource)>>,
}

/// One streamed reply, decoded.
#[derive(Debug, Default)]
struct Reply {
    text: String,
    reasoning: String,
    calls: CallAccumulator,
    finish: Option<FinishReason>,
    usage: Usage,
    model: Option<String>,
    generation_ms: Option<u64>,
    first_ms: Option<u64>,
    last_ms: Option<u64>,
}

impl NativeAgent {
    /// An agent for `config`. Fails with a `Spawn` error when a header is
    /// invalid or the HTTP client cannot be built.
    pub fn new(config: NativeConfig) -> Result<Self, AgentError> {
        let bad = |m: String| AgentError::new(AgentErrorKind::Spawn, m);
        let mut headers = HeaderMap::new();
        for (k, v) in &config.headers {
            let name = HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| bad(format!("invalid header name {k:?}")))?;
            let value = HeaderValue::from_str(v)
                .map_err(|_| bad(format!("invalid value for header {k:?}")))?;
            headers.insert(name, value);
        }
        if config.api == Api::Anthropic && !headers.contains_key("anthropic-version") {
            headers.insert("anthropic-version", HeaderValue::from_static("2023-06-01"));
        }
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .build()
            .map_err(|e| bad(format!("cannot build the HTTP client: {e}")))?;
        Ok(NativeAgent {
            base: config.base_url.trim_end_matches('/').to_string(),
            config,
            headers,
            client,
            windows: Mutex::new(HashMap::new()),
        })
    }

    /// The config this agent was built from.
    pub fn config(&self) -> &NativeConfig {
        &self.config
    }

    fn api_key(&self) -> Result<Option<String>, AgentError> {
        if let Some(k) = &self.config.api_key {
            return Ok(Some(k.clone()));
        }
        match &self.config.api_key_env {
            None => Ok(None),
            Some(var) => std::env::var(var).map(Some).map_err(|_| {
                AgentError::new(
                    AgentErrorKind::Spawn,
                    format!("the API key variable {var} is not set"),
                )
            }),
        }
    }

    fn request(
        &self,
        method: reqwest::Method,
        url: &str,
    ) -> Result<reqwest::RequestBuilder, AgentError> {
        let mut req = self
            .client
            .request(method, url)
            .headers(self.headers.clone());
        if let Some(key) = self.api_key()? {
            req = match self.config.api {
                Api::Anthropic => req.header("x-api-key", key),
                _ => req.bearer_auth(key),
            };
        }
        Ok(req)
    }

    fn connection_error(&self, e: &reqwest::Error) -> AgentError {
        let message = format!("cannot reach {}: {}", self.base, error_chain(e));
        AgentError {
            class: classify_error(Some("APIConnectionError"), Some(&message), None),
            ..AgentError::new(AgentErrorKind::Provider, message)
        }
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

    async fn probe_window(&self, model: &str) -> (u32, probe::WindowSource) {
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
    async fn stream_reply(
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

    async fn take(&self, reply: &mut Reply, piece: Piece, events: &Events<'_>) {
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

    /// The turn without its wall-clock limit and cancellation.
    async fn turn(
        &self,
        turn: &Turn,
        events: &Events<'_>,
        cancel: &CancellationToken,
        stats: &mut Stats,
    ) -> Result<(StopReason, String), AgentError> {
        let model = turn
            .model
            .clone()
            .or_else(|| self.config.model.clone())
            .ok_or_else(|| {
                AgentError::new(
                    AgentErrorKind::Spawn,
                    "no model: the turn names none and the agent has no default",
                )
            })?;
        let workdir = match &turn.workdir {
            Some(d) => d.clone(),
            None => std::env::current_dir()
                .map_err(|e| AgentError::new(AgentErrorKind::Spawn, format!("no workdir: {e}")))?,
        };
        let mut env = self.config.env.clone();
        env.extend(turn.env.clone());
        let mut tools = ToolBox::new(ToolSettings {
            workdir,
            access: turn.access,
            mode: self.config.tools,
            hashline: self.config.hashline,
            sandbox: turn.sandbox,
            network: self
                .config
                .network
                .clone()
                .unwrap_or(crate::sandbox::NetworkPolicy::Deny),
            run_timeout: self.config.run_timeout.unwrap_or(DEFAULT_RUN_TIMEOUT),
            env,
        })
        .map_err(|m| AgentError::new(AgentErrorKind::Spawn, m))?;
        let (window, source) = self.context_window(&model).await;
        let configured = self
            .config
            .override_for(&model)
            .and_then(|o| o.system_prompt.clone())
            .or_else(|| self.config.system_prompt.clone());
        // What every request carries, for a window: the system prompt and
        // the tools, compact under 8,192 tokens.
        let offered = tools.specs().to_vec();
        let frame = |window: u32| {
            let specs: Vec<_> = if window < prompt::COMPACT_UNDER {
                offered.iter().map(prompt::compact).collect()
            } else {
                offered.clone()
            };
            let system = prompt::system_prompt(
                configured.as_deref(),
                self.config.tools,
                window,
                turn.system.as_deref(),
            );
            let fixed = context::fixed_tokens(&system, &specs);
            let budget = Budget::new(window, self.config.limits.max_output_tokens);
            (specs, system, fixed, budget)
        };
        let (mut specs, mut system, mut fixed, mut budget) = frame(window);
        stats.window = Some(window);
        let sampling = self.config.sampling_for(&model);
        let session = format!("native-{:016x}", rand_u64());
        events
            .send(AgentEvent::SessionStarted {
                session_id: session.clone(),
                model: Some(model.clone()),
            })
            .await;
        let mut log = Transcript::open(turn.artifacts.as_deref());
        log.write(
            &json!({"type": "start", "session_id": session, "model": model,
            "api": self.config.api.as_str(), "context_window": window,
            "context_window_source": format!("{source:?}"), "system": system,
            "tools": specs}),
        );
        let mut transcript = vec![Message::User {
            text: turn.prompt.clone(),
        }];
        log.message(&transcript[0]);
        let mut control = Control::new(self.config.limits, self.config.prices.is_some());
        let mut ids = IdMinter::new(
            session
                .trim_start_matches("native-")
                .chars()
                .take(8)
                .collect::<String>(),
        );
        loop {
            if let Some(stop) = control.before_request(events.start.elapsed(), &stats.usage) {
                return Ok((stop, last_text(&transcript)));
            }
            if let Some(nudge) = control.nudge() {
                let m = Message::User { text: nudge };
                log.message(&m);
                transcript.push(m);
            }
            let mut overflows = 0;
            let reply = loop {
                let shaped = context::shape(&transcript, fixed, budget)
                    .map_err(|m| AgentError::new(AgentErrorKind::Unavailable, m))?;
                let req = Request {
                    model: &model,
                    system: &system,
                    messages: &shaped.messages,
                    tools: &specs,
                    max_output_tokens: Some(budget.reply),
                    extra: &sampling,
                };
                let body = wire::request_body(self.config.api, &req);
                log.write(&json!({"type": "request", "n": control.steps(),
                    "estimated_tokens": shaped.tokens, "elided": shaped.elided,
                    "summarized": shaped.summarized}));
                match self.stream_reply(&body, events.idle, events).await {
                    Ok(reply) => break reply,
                    // A server that hid its window (or counts tokens far
                    // above the estimate) refused the request for its
                    // length: shape again for a smaller window, and keep
                    // it for this model's next turns.
                    Err(e)
                        if context::is_context_overflow(&e) && overflows < MAX_OVERFLOW_RETRIES =>
                    {
                        let smaller = context::shrunk_window(budget.window, shaped.tokens);
                        if smaller >= budget.window {
                            events.error(&e).await;
                            return Err(e);
                        }
                        overflows += 1;
                        log.write(&json!({"type": "context_overflow", "window": budget.window,
                            "estimated_tokens": shaped.tokens, "shrunk_to": smaller,
                            "message": e.message}));
                        (specs, system, fixed, budget) = frame(smaller);
                        stats.window = Some(smaller);
                        if let Ok(mut w) = self.windows.lock() {
                            w.insert(model.clone(), (smaller, probe::WindowSource::Assumed));
                        }
                    }
                    Err(e) => {
                        if context::is_context_overflow(&e) {
                            events.error(&e).await;
                        }
                        return Err(e);
                    }
                }
            };
            stats.requests += 1;
            if stats.model.is_none() {
                stats.model = reply.model.clone();
            }
            let mut usage = reply.usage;
            if let Some(p) = &self.config.prices {
                usage.cost_usd = Some(usage.cost_usd.unwrap_or(0.0) + p.cost(&usage));
            }
            if !usage.is_empty() {
                stats.usage.add(&usage);
                events.send(AgentEvent::Usage(usage)).await;
            }
            stats.generation_ms +=
                reply
                    .generation_ms
                    .unwrap_or_else(|| match (reply.first_ms, reply.last_ms) {
                        (Some(a), Some(b)) => b - a,
                        _ => 0,
                    });
            let read = reply
                .calls
                .finish(&reply.text, reply.finish.as_ref(), &specs, &mut ids);
            read.count_into(&mut stats.calls_read);
            let mut calls: Vec<ToolCall> = read.calls.iter().map(|c| c.call.clone()).collect();
            calls.extend(read.rejected.iter().map(|r| r.call.clone()));
            let assistant = Message::Assistant {
                text: read.text.clone(),
                reasoning: reply.reasoning.clone(),
                calls,
            };
            log.message(&assistant);
            transcript.push(assistant);
            for r in &read.rejected {
                stats.tool_calls += 1;
                events
                    .send(AgentEvent::ToolCall {
                        id: r.call.id.clone(),
                        name: r.call.name.clone(),
                        input: json!({"unreadable_arguments": r.raw}),
                    })
                    .await;
                let code = match (r.cut, r.unknown_tool) {
                    (true, _) => "CUT",
                    (false, true) => "UNKNOWN_TOOL",
                    (false, false) => "MALFORMED",
                };
                let result = ToolResult::refused(code, r.message.clone());
                self.answer(&mut transcript, &mut log, events, &r.call, &result)
                    .await;
            }
            if let Some(stop) = control.after_reply(read.calls.len(), read.rejected.len()) {
                return Ok((stop, read.text));
            }
            if read.calls.is_empty() && read.rejected.is_empty() {
                return Ok((StopReason::NoToolCall, read.text));
            }
            let mut pending = read.calls.iter().map(|c| &c.call);
            while let Some(call) = pending.next() {
                stats.tool_calls += 1;
                events
                    .send(AgentEvent::ToolCall {
                        id: call.id.clone(),
                        name: call.name.clone(),
                        input: call.arguments.clone(),
                    })
                    .await;
                let result = match control.on_call(call) {
                    CallVerdict::Run => tools.call(call, cancel).await,
                    CallVerdict::Warn(w) => ToolResult::refused("REPEATED_CALL", w),
                    CallVerdict::Stop(stop) => {
                        let r = ToolResult::refused(
                            "REPEATED_CALL",
                            "Not run: the same call five times in a row; the turn stops.",
                        );
                        self.answer(&mut transcript, &mut log, events, call, &r)
                            .await;
                        self.skip_rest(pending, &mut transcript, &mut log, events)
                            .await;
                        return Ok((stop, read.text));
                    }
                };
                if cancel.is_cancelled() {
                    return Err(AgentError::new(AgentErrorKind::Cancelled, "turn cancelled"));
                }
                self.answer(&mut transcript, &mut log, events, call, &result)
                    .await;
                if let Some(summary) = result.finish {
                    self.skip_rest(pending, &mut transcript, &mut log, events)
                        .await;
                    return Ok((StopReason::Finished, summary));
                }
                let error = (!result.ok)
                    .then(|| format!("{}:{}", result.code.as_deref().unwrap_or(""), result.output));
                if let Some(stop) = control.on_result(error.as_deref()) {
                    self.skip_rest(pending, &mut transcript, &mut log, events)
                        .await;
                    return Ok((stop, read.text));
                }
            }
        }
    }

    /// Sends a call's result as an event, keeps it in the transcript and
    /// its whole output in the artifacts.
    async fn answer(
        &self,
        transcript: &mut Vec<Message>,
        log: &mut Transcript,
        events: &Events<'_>,
        call: &ToolCall,
        result: &ToolResult,
    ) {
        let output = match &result.code {
            Some(code) if !result.ok && !result.output.starts_with(code.as_str()) => {
                format!("{code}: {}", result.output)
            }
            _ => result.output.clone(),
        };
        if let Some(full) = &result.full {
            log.output(&call.id, full);
        }
        events
            .send(AgentEvent::ToolResult {
                id: call.id.clone(),
                ok: result.ok,
                output: output.clone(),
            })
            .await;
        let m = Message::Tool {
            call_id: call.id.clone(),
            name: call.name.clone(),
            output,
        };
        log.message(&m);
        transcript.push(m);
    }

    /// Answers the calls of a reply left unrun when the turn stops, so the
    /// transcript pairs every call with a result.
    async fn skip_rest<'c>(
        &self,
        rest: impl Iterator<Item = &'c ToolCall>,
        transcript: &mut Vec<Message>,
        log: &mut Transcript,
        events: &Events<'_>,
    ) {
        for call in rest {
            let r = ToolResult::refused("NOT_RUN", "Not run: the turn ended before this call.");
            self.answer(transcript, log, events, call, &r).await;
        }
    }
}

/// What a turn counts beside its events.
#[derive(Debug, Default)]
struct Stats {
    requests: u32,
    tool_calls: u32,
    calls_read: CallsRead,
    usage: Usage,
    generation_ms: u64,
    model: Option<String>,
    window: Option<u32>,
}

/// The turn's event channel and clock; every event also goes to the
/// outcome builder.
struct Events<'a> {
    tx: &'a mpsc::Sender<AgentEvent>,
    outcome: Mutex<OutcomeBuilder>,
    start: Instant,
    idle: Option<Duration>,
}

impl Events<'_> {
    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    async fn send(&self, ev: AgentEvent) {
        if let Ok(mut o) = self.outcome.lock() {
            o.observe(&ev, self.elapsed_ms());
        }
        // A receiver that went away does not stop the turn.
        let _ = self.tx.send(ev).await;
    }

    async fn error(&self, err: &AgentError) {
        self.send(AgentEvent::Error {
            message: err.message.clone(),
            class: err.class,
            http_status: err.http_status,
        })
        .await;
    }
}

#[async_trait]
impl Agent for NativeAgent {
    async fn run(
        &self,
        turn: Turn,
        events: mpsc::Sender<AgentEvent>,
        cancel: CancellationToken,
    ) -> Result<TurnOutcome, AgentError> {
        let ev = Events {
            tx: &events,
            outcome: Mutex::new(OutcomeBuilder::new()),
            start: Instant::now(),
            idle: turn.idle_timeout.or(self.config.idle_timeout),
        };
        let timeout = turn.timeout.or(self.config.timeout);
        let mut stats = Stats::default();
        let work = self.turn(&turn, &ev, &cancel, &mut stats);
        let result = tokio::select! {
            biased;
            _ = cancel.cancelled() => Err(AgentError::new(AgentErrorKind::Cancelled, "turn cancelled")),
            r = with_deadline(timeout, work) => r,
        };
        let (stop, final_text) = result?;
        ev.send(AgentEvent::Finished {
            stop_reason: Some(stop.as_str().to_string()),
            final_text: Some(final_text),
            num_turns: Some(stats.requests),
        })
        .await;
        let builder = ev.outcome.into_inner().unwrap_or_default();
        let mut out = builder.finish(elapsed_ms(ev.start), None);
        if stats.generation_ms > 0 {
            out.generation_ms = Some(stats.generation_ms);
        }
        if stats.model.is_some() {
            out.model = stats.model;
        }
        out.requests = Some(stats.requests);
        out.tool_calls = Some(stats.tool_calls);
        out.calls_read = Some(stats.calls_read);
        out.context_window = stats.window;
        Ok(out)
    }

    /// `GET {base_url}/models` (Chat and Responses servers; Anthropic's
    /// too), within the config's timeout (30 s when it sets none).
    async fn models(&self) -> Result<Vec<String>, AgentError> {
        let limit = self.config.timeout.unwrap_or(MODELS_TIMEOUT);
        let work = async {
            let url = format!("{}/models", self.base);
            let mut resp = self
                .request(reqwest::Method::GET, &url)?
                .send()
                .await
                .map_err(|e| self.connection_error(&e))?;
            let status = resp.status().as_u16();
            let body = read_bounded(&mut resp, None).await?;
            if status >= 400 {
                return Err(wire::status_error(
                    self.config.api,
                    status,
                    &body,
                    None,
                    SystemTime::now(),
                ));
            }
            crate::agent::openai_chunk::parse_models(&body)
        };
        with_deadline(Some(limit), work).await
    }
}

/// The turn's transcript and cut outputs on disk, when the turn has an
/// artifacts directory. Writing is best effort: a full disk does not
/// fail the turn.
struct Transcript {
    dir: Option<PathBuf>,
    file: Option<std::fs::File>,
}

impl Transcript {
    fn open(dir: Option<&std::path::Path>) -> Self {
        let Some(dir) = dir else {
            return Transcript {
                dir: None,
                file: None,
            };
        };
        let file = std::fs::create_dir_all(dir).ok().and_then(|_| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(dir.join("transcript.jsonl"))
                .ok()
        });
        Transcript {
            dir: Some(dir.to_path_buf()),
            file,
        }
    }

    fn write(&mut self, v: &Value) {
        if let Some(f) = &mut self.file {
            let _ = writeln!(f, "{v}");
        }
    }

    fn message(&mut self, m: &Message) {
        let v = serde_json::to_value(m).unwrap_or(Value::Null);
        self.write(&json!({"type": "message", "message": v}));
    }

    fn output(&mut self, call_id: &str, full: &str) {
        let Some(dir) = &self.dir else { return };
        let dir = dir.join("outputs");
        let safe: String = call_id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        if std::fs::create_dir_all(&dir).is_ok() {
            let _ = std::fs::write(dir.join(format!("{safe}.txt")), full);
        }
    }
}

fn last_text(transcript: &[Message]) -> String {
    transcript
        .iter()
        .rev()
        .find_map(|m| match m {
            Message::Assistant { text, .. } if !text.is_empty() => Some(text.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.finish()
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

async fn within<T>(idle: Option<Duration>, fut: impl Future<Output = T>) -> Result<T, AgentError> {
    match idle {
        None => Ok(fut.await),
        Some(d) => tokio::time::timeout(d, fut).await.map_err(|_| {
            AgentError::new(
                AgentErrorKind::Idle,
                format!("no data from the server for {} ms", d.as_millis()),
            )
        }),
    }
}

async fn with_deadline<T>(
    limit: Option<Duration>,
    fut: impl Future<Output = Result<T, AgentError>>,
) -> Result<T, AgentError> {
    match limit {
        None => fut.await,
        Some(d) => tokio::time::timeout(d, fut).await.unwrap_or_else(|_| {
            Err(AgentError::new(
                AgentErrorKind::Timeout,
                format!("turn timed out after {} ms", d.as_millis()),
            ))
        }),
    }
}

async fn read_bounded(
    resp: &mut reqwest::Response,
    idle: Option<Duration>,
) -> Result<String, AgentError> {
    let mut buf = Vec::new();
    while buf.len() < ERROR_BODY_LIMIT {
        match within(idle, resp.chunk()).await? {
            Ok(Some(b)) => buf.extend_from_slice(&b[..b.len().min(ERROR_BODY_LIMIT - buf.len())]),
            Ok(None) | Err(_) => break,
        }
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
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

fn error_chain(e: &reqwest::Error) -> String {
    let mut s = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        let c = cause.to_string();
        if !s.contains(&c) {
            s.push_str(": ");
            s.push_str(&c);
        }
        source = cause.source();
    }
    s
}

fn elapsed_ms(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX)
}
