//! OpenAI Chat Completions on the wire (pure): the request body, the
//! streamed chunks → [`AgentEvent`]s, error bodies → [`AgentError`]s, and
//! the `/models` list. The HTTP half is `agent::openai` (feature `http`);
//! everything it decides is decided here.

use super::{AgentError, AgentErrorKind, AgentEvent, Usage};
use crate::model::{classify_status, explain_error, parse_retry_after, ErrorClass, Evidence};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::time::SystemTime;

/// The streaming request body: `model`, the optional system message and
/// the user prompt, `stream: true` with `stream_options.include_usage`
/// (so the usage chunk comes before `[DONE]`), then the `extra` fields
/// (temperature, max_tokens, ...), which may override any of those.
pub fn request_body(
    model: &str,
    system: Option<&str>,
    prompt: &str,
    extra: &Map<String, Value>,
) -> Value {
    let mut messages = Vec::new();
    if let Some(system) = system {
        messages.push(json!({"role": "system", "content": system}));
    }
    messages.push(json!({"role": "user", "content": prompt}));
    let mut body = json!({
        "model": model,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if let Value::Object(map) = &mut body {
        for (k, v) in extra {
            map.insert(k.clone(), v.clone());
        }
    }
    body
}

/// A tool call whose pieces are still arriving.
#[derive(Debug, Clone, Default)]
struct PartialCall {
    id: Option<String>,
    name: String,
    arguments: String,
}

/// The decoding state of one streamed chat completion: feed it each SSE
/// `data` payload with [`ChatStream::feed`], then call
/// [`ChatStream::end`] when the connection closes.
///
/// Mapping (AGENTS.md A.2, C): `choices[0].delta.content` → `TextDelta`;
/// `reasoning_content`, else `reasoning` → `ReasoningDelta`; `tool_calls`
/// pieces are joined by `index` and emitted as `ToolCall`s (arguments
/// parsed as JSON, else kept as a string) when the choice finishes or the
/// stream is done; `usage` → `Usage` with `input` = `prompt_tokens` −
/// `cached_tokens`; `timings.predicted_ms` → [`ChatStream::generation_ms`];
/// `[DONE]` → `Finished{stop_reason: finish_reason}`; `{"error": ...}` →
/// a classified `Provider` error.
///
/// Usage is taken as cumulative for the request (vLLM's
/// `continuous_usage_stats` repeats it on every chunk), so each `Usage`
/// event is the increment over what was already emitted and the events
/// sum to the last report.
#[derive(Debug, Clone, Default)]
pub struct ChatStream {
    calls: BTreeMap<u64, PartialCall>,
    finish_reason: Option<String>,
    done: bool,
    generation_ms: Option<u64>,
    model: Option<String>,
    reported: Usage,
}

impl ChatStream {
    /// A stream before its first chunk.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decodes one `data` payload into the events it carries. An `error`
    /// payload is a [`AgentErrorKind::Provider`] error, a payload that is
    /// not JSON a [`AgentErrorKind::Protocol`] one; the events of earlier
    /// payloads stand either way. Payloads after `[DONE]` are ignored.
    pub fn feed(&mut self, data: &str) -> Result<Vec<AgentEvent>, AgentError> {
        if self.done {
            return Ok(vec![]);
        }
        let mut out = Vec::new();
        if data.trim() == "[DONE]" {
            self.done = true;
            self.flush_calls(&mut out);
            out.push(AgentEvent::Finished {
                stop_reason: self.finish_reason.clone(),
                final_text: None,
                num_turns: None,
            });
            return Ok(out);
        }
        let chunk: Value = serde_json::from_str(data).map_err(|e| {
            AgentError::new(
                AgentErrorKind::Protocol,
                format!("stream chunk is not JSON ({e}): {}", preview(data)),
            )
        })?;
        if let Some(err) = chunk.get("error").filter(|e| !e.is_null()) {
            return Err(provider_error(err, None, "stream error"));
        }
        if self.model.is_none() {
            self.model = chunk.get("model").and_then(Value::as_str).map(String::from);
        }
        let choice = chunk
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| c.first());
        if let Some(choice) = choice {
            self.take_choice(choice, &mut out);
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            let total = usage_of(usage);
            let step = minus(&total, &self.reported);
            if !step.is_empty() {
                out.push(AgentEvent::Usage(step));
            }
            self.reported = total;
        }
        if let Some(ms) = chunk
            .pointer("/timings/predicted_ms")
            .and_then(Value::as_f64)
            .filter(|ms| ms.is_finite() && *ms >= 0.0)
        {
            self.generation_ms = Some(ms.round() as u64);
        }
        Ok(out)
    }

    fn take_choice(&mut self, choice: &Value, out: &mut Vec<AgentEvent>) {
        let delta = choice.get("delta");
        let text_of = |field: &str| {
            delta
                .and_then(|d| d.get(field))
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        };
        if let Some(r) = text_of("reasoning_content").or_else(|| text_of("reasoning")) {
            out.push(AgentEvent::ReasoningDelta { text: r.into() });
        }
        if let Some(t) = text_of("content") {
            out.push(AgentEvent::TextDelta { text: t.into() });
        }
        let calls = delta
            .and_then(|d| d.get("tool_calls"))
            .and_then(Value::as_array);
        for (pos, piece) in calls.into_iter().flatten().enumerate() {
            let index = piece
                .get("index")
                .and_then(Value::as_u64)
                .unwrap_or(pos as u64);
            let call = self.calls.entry(index).or_default();
            if let Some(id) = piece.get("id").and_then(Value::as_str) {
                call.id.get_or_insert_with(|| id.to_string());
            }
            let function = piece.get("function");
            let part = |f: &str| function.and_then(|x| x.get(f)).and_then(Value::as_str);
            if let Some(name) = part("name") {
                call.name.push_str(name);
            }
            if let Some(args) = part("arguments") {
                call.arguments.push_str(args);
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_reason = Some(reason.to_string());
            self.flush_calls(out);
        }
    }

    fn flush_calls(&mut self, out: &mut Vec<AgentEvent>) {
        for (index, call) in std::mem::take(&mut self.calls) {
            let input = match call.arguments.trim() {
                "" => Value::Object(Map::new()),
                args => serde_json::from_str(args).unwrap_or(Value::String(call.arguments)),
            };
            out.push(AgentEvent::ToolCall {
                id: call.id.unwrap_or_else(|| format!("call_{index}")),
                name: call.name,
                input,
            });
        }
    }

    /// The connection closed: fine after `[DONE]`, else the truncated
    /// stream is a [`AgentErrorKind::Protocol`] error (class `retry`).
    pub fn end(&self) -> Result<(), AgentError> {
        if self.done {
            Ok(())
        } else {
            Err(AgentError::new(
                AgentErrorKind::Protocol,
                "stream ended without [DONE]",
            ))
        }
    }

    /// Whether `[DONE]` came.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The generation time the server reported (llama.cpp
    /// `timings.predicted_ms`, rounded), if it did.
    pub fn generation_ms(&self) -> Option<u64> {
        self.generation_ms
    }

    /// The model the first chunk named, if it did.
    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// The last `finish_reason` seen.
    pub fn finish_reason(&self) -> Option<&str> {
        self.finish_reason.as_deref()
    }
}

fn count(v: &Value, pointer: &str) -> u64 {
    v.pointer(pointer).and_then(Value::as_u64).unwrap_or(0)
}

/// An OpenAI `usage` object in this crate's terms (`input` uncached).
pub fn usage_of(usage: &Value) -> Usage {
    let prompt = count(usage, "/prompt_tokens");
    let cached = count(usage, "/prompt_tokens_details/cached_tokens");
    Usage {
        input: prompt.saturating_sub(cached),
        output: count(usage, "/completion_tokens"),
        cache_read: cached,
        cache_write: 0,
        reasoning: count(usage, "/completion_tokens_details/reasoning_tokens"),
        // OpenRouter reports the request's cost in dollars here.
        cost_usd: usage.get("cost").and_then(Value::as_f64),
    }
}

/// `total` minus `seen`, field by field (saturating; a cost only when it
/// changed): the increment of a cumulative usage report over the last one.
pub(crate) fn minus(total: &Usage, seen: &Usage) -> Usage {
    let cost = match (total.cost_usd, seen.cost_usd) {
        (Some(t), s) => Some(t - s.unwrap_or(0.0)).filter(|c| *c != 0.0),
        (None, _) => None,
    };
    Usage {
        input: total.input.saturating_sub(seen.input),
        output: total.output.saturating_sub(seen.output),
        cache_read: total.cache_read.saturating_sub(seen.cache_read),
        cache_write: total.cache_write.saturating_sub(seen.cache_write),
        reasoning: total.reasoning.saturating_sub(seen.reasoning),
        cost_usd: cost,
    }
}

/// A provider's error object (`{"message", "type", "code", ...}`, or a
/// bare string) as a classified [`AgentErrorKind::Provider`] error. A
/// numeric `code` in 400–599 stands for the status when the HTTP one is
/// unknown (llama.cpp's mid-stream frames).
///
/// The class is [`explain_error`]'s on the message and status, with a
/// name when one is known to it: a string `code` first (`model_not_found`,
/// `insufficient_quota`), then `type`. `type` is a category, and OpenAI
/// puts `invalid_request_error` on 400, 404 and 422 alike, so a `type`
/// that says `fatal` does not override a status that says otherwise (a
/// 404 stays `fallback`).
pub fn provider_error(err: &Value, http_status: Option<u16>, context: &str) -> AgentError {
    let message = match err {
        Value::String(s) => s.clone(),
        _ => err
            .get("message")
            .and_then(Value::as_str)
            .map(String::from)
            .unwrap_or_else(|| preview(&err.to_string())),
    };
    let code = err.get("code");
    let status = http_status.or_else(|| {
        code.and_then(Value::as_u64)
            .filter(|c| (400..600).contains(c))
            .map(|c| c as u16)
    });
    let msg = Some(message.as_str());
    let by_name = |name: Option<&str>| {
        name.map(|n| explain_error(Some(n), msg, status))
            .filter(|c| c.evidence == Evidence::Name)
    };
    let status_class = status.and_then(classify_status).map(|(class, _)| class);
    let by_type = by_name(err.get("type").and_then(Value::as_str)).filter(|c| {
        c.class != ErrorClass::Fatal || status_class.is_none_or(|s| s == ErrorClass::Fatal)
    });
    let class = by_name(code.and_then(Value::as_str))
        .or(by_type)
        .unwrap_or_else(|| explain_error(None, msg, status))
        .class;
    let label = match status {
        Some(s) => format!("{context} (HTTP {s})"),
        None => context.to_string(),
    };
    AgentError {
        class,
        http_status: status,
        ..AgentError::new(AgentErrorKind::Provider, format!("{label}: {message}"))
    }
}

/// The error for an HTTP status ≥ 400 with its `body` and `Retry-After`
/// header: a classified `Provider` error (the body's `error` object when
/// it has one, else the body text as the message) carrying the status and
/// the delay the provider asked for, in milliseconds relative to `now`.
pub fn status_error(
    status: u16,
    body: &str,
    retry_after: Option<&str>,
    now: SystemTime,
) -> AgentError {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let err = match parsed {
        Some(Value::Object(mut map)) => map.remove("error").unwrap_or(Value::Object(map)),
        _ if body.trim().is_empty() => Value::String(format!("HTTP {status}")),
        _ => Value::String(preview(body)),
    };
    let mut e = provider_error(&err, Some(status), "provider error");
    e.retry_after_ms = retry_after
        .and_then(|v| parse_retry_after(v, now))
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    e
}

/// The model ids of a `/models` response (`{"data": [{"id": ...}]}`), in
/// the server's order; a body of another shape is a `Protocol` error.
pub fn parse_models(body: &str) -> Result<Vec<String>, AgentError> {
    let bad = |why: &str| {
        AgentError::new(
            AgentErrorKind::Protocol,
            format!("/models response {why}: {}", preview(body)),
        )
    };
    let v: Value = serde_json::from_str(body).map_err(|_| bad("is not JSON"))?;
    let data = v
        .get("data")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("has no data array"))?;
    Ok(data
        .iter()
        .filter_map(|m| m.get("id").and_then(Value::as_str))
        .map(String::from)
        .collect())
}

/// At most 200 characters of `s`, for error messages.
pub(crate) fn preview(s: &str) -> String {
    let s = s.trim();
    match s.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
#[path = "openai_chunk_tests.rs"]
mod tests;
