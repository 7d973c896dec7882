//! OpenAI Chat Completions with tools (pure): the streaming request body of
//! a [`Request`], the streamed chunks → [`Piece`]s, and a whole
//! (non-streamed) completion → the same pieces.
//!
//! Also home of the helpers the three wire APIs share (`parse_object`,
//! `merge_extra`, `arguments_text`, `UsageTally`, ...): `pub(super)`, so
//! [`super::anthropic`] and [`super::responses`] decide the same way.

use crate::agent::native::{CallFragment, FinishReason, Message, Piece, Request, ToolCall};
use crate::agent::openai_chunk::{minus, preview, provider_error, usage_of};
use crate::agent::{AgentError, AgentErrorKind, Usage};
use serde_json::{json, Map, Value};

/// The streaming body: `model`, `messages` (the system message first when
/// [`Request::system`] is not empty), `stream: true` with
/// `stream_options.include_usage`, `tools` and `tool_choice: "auto"` only
/// when tools are offered, `max_tokens` when set, then [`Request::extra`]
/// (which wins over all of those).
///
/// Messages: a user text is `{"role": "user", "content"}`; an assistant
/// reply is `{"role": "assistant", "content", "tool_calls"?}` with
/// `content: null` when it is empty and has calls, and each call's
/// arguments as a JSON *string*; a tool result is `{"role": "tool",
/// "tool_call_id", "content"}`. Reasoning is not sent back.
pub fn request_body(req: &Request) -> Value {
    let mut messages = Vec::with_capacity(req.messages.len() + 1);
    if !req.system.is_empty() {
        messages.push(json!({"role": "system", "content": req.system}));
    }
    messages.extend(req.messages.iter().map(message));
    let mut body = Map::new();
    body.insert("model".into(), json!(req.model));
    body.insert("messages".into(), Value::Array(messages));
    body.insert("stream".into(), json!(true));
    body.insert("stream_options".into(), json!({"include_usage": true}));
    if !req.tools.is_empty() {
        let tools = req.tools.iter().map(|t| {
            json!({"type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": t.parameters,
            }})
        });
        body.insert("tools".into(), Value::Array(tools.collect()));
        body.insert("tool_choice".into(), json!("auto"));
    }
    if let Some(max) = req.max_output_tokens {
        body.insert("max_tokens".into(), json!(max));
    }
    merge_extra(&mut body, req.extra);
    Value::Object(body)
}

fn message(m: &Message) -> Value {
    match m {
        Message::User { text } => json!({"role": "user", "content": text}),
        Message::Assistant { text, calls, .. } => {
            let content = if text.is_empty() && !calls.is_empty() {
                Value::Null
            } else {
                json!(text)
            };
            let mut msg = json!({"role": "assistant", "content": content});
            if !calls.is_empty() {
                msg["tool_calls"] = calls.iter().map(tool_call).collect();
            }
            msg
        }
        Message::Tool {
            call_id, output, ..
        } => json!({"role": "tool", "tool_call_id": call_id, "content": output}),
    }
}

fn tool_call(c: &ToolCall) -> Value {
    json!({"id": c.id, "type": "function", "function": {
        "name": c.name, "arguments": arguments_text(&c.arguments),
    }})
}

/// The decoding state of one streamed chat completion.
///
/// Mapping: the first non-empty `model` → [`Piece::Model`];
/// `choices[0].delta` (or a whole `choices[0].message`): `reasoning_content`,
/// else `reasoning` → [`Piece::Reasoning`], `content` (a string or an array
/// of text parts) → [`Piece::Text`], each `tool_calls[]` entry → a
/// [`Piece::Call`] (`index` as given, `None` when missing; `id` and
/// `function.name` when non-empty; `function.arguments` as is when a
/// string, serialized when an object — Ollama's); `usage` → a
/// [`Piece::Usage`] increment (usage is taken as cumulative, so repeated
/// reports add up to the last one; `input` = `prompt_tokens` −
/// `cached_tokens`); llama.cpp `timings.predicted_ms` →
/// [`Piece::GenerationMs`] when it changes; the first `finish_reason` →
/// [`Piece::Finish`], the last piece of its chunk; `[DONE]` ends the stream
/// (with an inferred `Finish` — `ToolCalls` after any call, else `Stop` —
/// when the server sent none, so a completed stream has exactly one);
/// `{"error": ...}` → a classified `Provider` error; a frame that is not a
/// JSON object → a `Protocol` error. Frames after `[DONE]` are ignored.
#[derive(Debug, Clone, Default)]
pub struct ChatDecoder {
    flow: Flow,
    generation_ms: Option<u64>,
}

impl ChatDecoder {
    /// Decodes one frame's `data` (`event` is unused by this API) into the
    /// pieces it carries, in order. Never panics, whatever `data` is.
    pub fn feed(&mut self, _event: Option<&str>, data: &str) -> Result<Vec<Piece>, AgentError> {
        let chunk = match self.flow.frame(data, "chat stream chunk")? {
            Frame::Skip => return Ok(vec![]),
            Frame::Done(pieces) => return Ok(pieces),
            Frame::Event(v) => v,
        };
        self.chunk(&chunk)
    }

    fn chunk(&mut self, chunk: &Value) -> Result<Vec<Piece>, AgentError> {
        if let Some(err) = error_of(chunk) {
            return Err(provider_error(err, None, "stream error"));
        }
        let mut out = Vec::new();
        self.flow.model(chunk.get("model"), &mut out);
        let choice = chunk
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| c.first());
        let mut finish = None;
        if let Some(choice) = choice {
            let part = choice
                .get("message")
                .filter(|m| m.is_object())
                .or_else(|| choice.get("delta"));
            if let Some(part) = part {
                self.part(part, &mut out);
            }
            finish = text_at(choice, "finish_reason").map(finish_reason);
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            out.extend(self.flow.usage.step(usage_of(usage)));
        }
        let ms = chunk
            .pointer("/timings/predicted_ms")
            .and_then(Value::as_f64)
            .filter(|ms| ms.is_finite() && *ms >= 0.0)
            .map(|ms| ms.round() as u64);
        if ms.is_some() && ms != self.generation_ms {
            self.generation_ms = ms;
            out.extend(ms.map(Piece::GenerationMs));
        }
        if let Some(finish) = finish {
            self.flow.finish(finish, &mut out);
        }
        Ok(out)
    }

    fn part(&mut self, part: &Value, out: &mut Vec<Piece>) {
        let reasoning = text_at(part, "reasoning_content").or_else(|| text_at(part, "reasoning"));
        if let Some(r) = reasoning {
            out.push(Piece::Reasoning(r.to_string()));
        }
        let text = content_text(part.get("content"));
        if !text.is_empty() {
            out.push(Piece::Text(text));
        }
        let calls = part.get("tool_calls").and_then(Value::as_array);
        for call in calls.into_iter().flatten().filter(|c| c.is_object()) {
            let function = call.get("function").unwrap_or(&Value::Null);
            let arguments = match function.get("arguments") {
                None | Some(Value::Null) => String::new(),
                Some(args) => arguments_text(args),
            };
            self.flow.any_call = true;
            out.push(Piece::Call(CallFragment {
                index: call.get("index").and_then(Value::as_u64),
                id: text_at(call, "id").map(String::from),
                name: text_at(function, "name").map(String::from),
                arguments,
            }));
        }
    }

    /// Whether `[DONE]` came.
    pub fn is_done(&self) -> bool {
        self.flow.done
    }

    /// At the end of the connection: `Ok` after `[DONE]`, else a
    /// `Protocol` error (the stream was cut; class `retry`).
    pub fn end(&self) -> Result<(), AgentError> {
        if self.flow.done {
            Ok(())
        } else {
            Err(protocol("chat stream ended without [DONE]"))
        }
    }
}

/// The pieces of a whole (non-streamed) chat completion — what a server
/// that ignores `stream: true` answers — in the order a stream would give
/// them, ending with exactly one [`Piece::Finish`] (inferred as in
/// [`ChatDecoder`] when `finish_reason` is missing). An `error` body is a
/// classified `Provider` error; a body that is not a JSON object with a
/// non-empty `choices` array is a `Protocol` error.
pub fn whole(body: &str) -> Result<Vec<Piece>, AgentError> {
    let v = parse_object(body, "chat completion")?;
    if let Some(err) = error_of(&v) {
        return Err(provider_error(err, None, "provider error"));
    }
    let choices = v.get("choices").and_then(Value::as_array);
    if choices.is_none_or(|c| c.is_empty()) {
        return Err(protocol(format!(
            "chat completion has no choices: {}",
            preview(body)
        )));
    }
    let mut d = ChatDecoder::default();
    let mut out = d.chunk(&v)?;
    out.extend(d.flow.close());
    Ok(out)
}

/// The [`FinishReason`] of a Chat `finish_reason`.
fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "stop" => FinishReason::Stop,
        "length" => FinishReason::Length,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        other => FinishReason::Other(other.to_string()),
    }
}

/// The error object of a chunk: its non-null `error`, or the chunk itself
/// when it is vLLM's `{"object": "error", ...}`.
fn error_of(chunk: &Value) -> Option<&Value> {
    chunk
        .get("error")
        .filter(|e| !e.is_null())
        .or_else(|| (chunk.get("object") == Some(&json!("error"))).then_some(chunk))
}

/// A `content` as text: a string as is, an array of parts joined by their
/// `text`, anything else empty.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

/// What every decoder tracks the same way: the model named once, the
/// cumulative usage, one `Finish` per reply.
#[derive(Debug, Clone, Default)]
pub(super) struct Flow {
    /// The API's terminator came: later frames are ignored.
    pub(super) done: bool,
    model_sent: bool,
    finished: bool,
    /// Whether any call piece came (the inferred finish is `ToolCalls`).
    pub(super) any_call: bool,
    /// The usage reported so far.
    pub(super) usage: UsageTally,
}

/// A frame's data, before the API reads it.
pub(super) enum Frame {
    /// Nothing to read: blank, or after the end.
    Skip,
    /// A proxy's `[DONE]`: these pieces close the reply.
    Done(Vec<Piece>),
    /// A JSON object for the API to read.
    Event(Value),
}

impl Flow {
    /// What `data` is, the same for every API: blank or late frames are
    /// skipped, `[DONE]` ends the reply (with the inferred finish), and
    /// anything else must be a JSON object (else a `Protocol` error
    /// naming `what`).
    pub(super) fn frame(&mut self, data: &str, what: &str) -> Result<Frame, AgentError> {
        let data = data.trim();
        if self.done || data.is_empty() {
            return Ok(Frame::Skip);
        }
        if data == "[DONE]" {
            self.done = true;
            return Ok(Frame::Done(self.close()));
        }
        parse_object(data, what).map(Frame::Event)
    }

    /// Emits [`Piece::Model`] for the first non-empty model name.
    pub(super) fn model(&mut self, model: Option<&Value>, out: &mut Vec<Piece>) {
        if let Some(m) = model.and_then(Value::as_str).filter(|m| !m.is_empty()) {
            if !self.model_sent {
                self.model_sent = true;
                out.push(Piece::Model(m.to_string()));
            }
        }
    }

    /// Emits `reason` unless a finish was emitted already.
    pub(super) fn finish(&mut self, reason: FinishReason, out: &mut Vec<Piece>) {
        if !self.finished {
            self.finished = true;
            out.push(Piece::Finish(reason));
        }
    }

    /// At the API's terminator: the inferred finish (`ToolCalls` after any
    /// call, else `Stop`) when the server sent none, else nothing.
    pub(super) fn close(&mut self) -> Vec<Piece> {
        let mut out = Vec::new();
        let reason = if self.any_call {
            FinishReason::ToolCalls
        } else {
            FinishReason::Stop
        };
        self.finish(reason, &mut out);
        out
    }
}

/// The cumulative-usage rule of [`crate::agent::openai_chunk::ChatStream`]:
/// each report is the request's total so far, and the pieces emitted are
/// the increments, so they add up to the last report.
#[derive(Debug, Clone, Default)]
pub(super) struct UsageTally {
    reported: Usage,
}

impl UsageTally {
    /// The increment of `total` over the last report as a
    /// [`Piece::Usage`], `None` when nothing grew.
    pub(super) fn step(&mut self, total: Usage) -> Option<Piece> {
        let step = minus(&total, &self.reported);
        self.reported = total;
        (!step.is_empty()).then_some(Piece::Usage(step))
    }

    /// The last report.
    pub(super) fn reported(&self) -> Usage {
        self.reported
    }
}

/// `data` as a JSON object, else a `Protocol` error naming `what`.
pub(super) fn parse_object(data: &str, what: &str) -> Result<Value, AgentError> {
    match serde_json::from_str::<Value>(data) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err(protocol(format!(
            "{what} is not a JSON object: {}",
            preview(data)
        ))),
        Err(e) => Err(protocol(format!(
            "{what} is not JSON ({e}): {}",
            preview(data)
        ))),
    }
}

/// A `Protocol` error (class `retry`).
pub(super) fn protocol(message: impl Into<String>) -> AgentError {
    AgentError::new(AgentErrorKind::Protocol, message)
}

/// The non-empty string at `v[key]`.
pub(super) fn text_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// Inserts every `extra` field into `body`, replacing what was there.
pub(super) fn merge_extra(body: &mut Map<String, Value>, extra: &Map<String, Value>) {
    for (k, v) in extra {
        body.insert(k.clone(), v.clone());
    }
}

/// Call arguments as JSON text: a string as is (it already is JSON text),
/// anything else serialized.
pub(super) fn arguments_text(arguments: &Value) -> String {
    match arguments {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
#[path = "chat_tests.rs"]
pub(super) mod tests;
