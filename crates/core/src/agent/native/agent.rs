//! The native agent's loop (feature `http`): stream a request, read the
//! calls, run them, send the results, repeat. Every decision is made by
//! the pure rooms beside this file; this one moves bytes, keeps time and
//! writes the transcript.

use super::calls::IdMinter;
use super::context::{self, Budget};
use super::control::{CallVerdict, Control, StopReason};
use super::tools::{ToolBox, ToolResult, ToolSettings};
use super::transcript::Transcript;
use super::wire::{self, probe};
use super::{Api, CallsRead, Message, Request, ToolCall};
use crate::agent::http::{
    client, elapsed_ms, header_map, read_bounded, with_deadline, MODELS_TIMEOUT,
};
use crate::agent::{
    Agent, AgentError, AgentErrorKind, AgentEvent, OutcomeBuilder, Turn, TurnOutcome, Usage,
};
use async_trait::async_trait;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::json;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::config::{NativeConfig, DEFAULT_RUN_TIMEOUT};
use super::prompt;

/// How many times one request is shaped again for a smaller window after
/// the server refused it for its length.
const MAX_OVERFLOW_RETRIES: u32 = 4;

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
    pub(super) config: NativeConfig,
    pub(super) base: String,
    pub(super) headers: HeaderMap,
    pub(super) client: reqwest::Client,
    pub(super) windows: Mutex<HashMap<String, (u32, probe::WindowSource)>>,
}

impl NativeAgent {
    /// An agent for `config`. Fails with a `Spawn` error when a header is
    /// invalid or the HTTP client cannot be built.
    pub fn new(config: NativeConfig) -> Result<Self, AgentError> {
        let mut headers = header_map(&config.headers)?;
        if config.api == Api::Anthropic && !headers.contains_key("anthropic-version") {
            headers.insert("anthropic-version", HeaderValue::from_static("2023-06-01"));
        }
        Ok(NativeAgent {
            base: config.base_url.trim_end_matches('/').to_string(),
            config,
            headers,
            client: client()?,
            windows: Mutex::new(HashMap::new()),
        })
    }

    /// The config this agent was built from.
    pub fn config(&self) -> &NativeConfig {
        &self.config
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
            is_error: !result.ok,
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
pub(super) struct Events<'a> {
    pub(super) tx: &'a mpsc::Sender<AgentEvent>,
    pub(super) outcome: Mutex<OutcomeBuilder>,
    pub(super) start: Instant,
    pub(super) idle: Option<Duration>,
}

impl Events<'_> {
    pub(super) fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    pub(super) async fn send(&self, ev: AgentEvent) {
        if let Ok(mut o) = self.outcome.lock() {
            o.observe(&ev, self.elapsed_ms());
        }
        // A receiver that went away does not stop the turn.
        let _ = self.tx.send(ev).await;
    }

    pub(super) async fn error(&self, err: &AgentError) {
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
