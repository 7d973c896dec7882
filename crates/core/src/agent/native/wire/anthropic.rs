//! Anthropic Messages with tools (pure): the streaming request body of a
//! [`Request`], the streamed events → [`Piece`]s, a whole message → the
//! same pieces, and Anthropic's error bodies → [`AgentError`]s.

use super::chat::{merge_extra, parse_object, protocol, text_at, Flow, Frame};
use crate::agent::native::{CallFragment, FinishReason, Message, Piece, Request, ToolCall};
use crate::agent::openai_chunk::{preview, provider_error};
use crate::agent::AgentError;
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;

/// The output-token limit sent when [`Request::max_output_tokens`] is
/// unset: the API requires one.
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// The streaming body: `model`, `max_tokens` ([`Request::max_output_tokens`]
/// or [`DEFAULT_MAX_TOKENS`]), `system` when not empty, `messages`, `tools`
/// (`{"name", "description", "input_schema"}`) only when tools are offered,
/// `stream: true`, then [`Request::extra`] (which wins).
///
/// Messages alternate as the API demands: consecutive messages of one role
/// merge into one; tool results are `tool_result` blocks of a *user*
/// message, so the results of one reply and the user text after them are
/// one user message, results first. An assistant reply is its text block
/// (left out when empty) and a `tool_use` block per call, whose `input` is
/// the arguments object; a message left with no block gets a placeholder
/// text (`(no reply)`, `(empty)`), since empty content is refused.
/// Reasoning is not sent back (thinking blocks need the server's
/// signature).
pub fn request_body(req: &Request) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(req.model));
    let max = req.max_output_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
    body.insert("max_tokens".into(), json!(max));
    if !req.system.is_empty() {
        body.insert("system".into(), json!(req.system));
    }
    body.insert("messages".into(), Value::Array(messages(req.messages)));
    if !req.tools.is_empty() {
        let tools = req.tools.iter().map(
            |t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}),
        );
        body.insert("tools".into(), Value::Array(tools.collect()));
    }
    body.insert("stream".into(), json!(true));
    merge_extra(&mut body, req.extra);
    Value::Object(body)
}

fn messages(messages: &[Message]) -> Vec<Value> {
    let mut turns: Vec<(&str, Vec<Value>)> = Vec::new();
    for m in messages {
        let (role, blocks) = match m {
            Message::User { text } => ("user", text_block(text)),
            Message::Assistant { text, calls, .. } => {
                let mut blocks = text_block(text);
                blocks.extend(calls.iter().map(tool_use));
                ("assistant", blocks)
            }
            Message::Tool {
                call_id,
                output,
                is_error,
                ..
            } => {
                let mut block =
                    json!({"type": "tool_result", "tool_use_id": call_id, "content": output});
                if *is_error {
                    block["is_error"] = json!(true);
                }
                ("user", vec![block])
            }
        };
        match turns.last_mut() {
            Some((last, into)) if *last == role => into.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    turns
        .into_iter()
        .map(|(role, mut blocks)| {
            // Stable: tool results first, as the API wants them.
            blocks.sort_by_key(|b| b.get("type") != Some(&json!("tool_result")));
            if blocks.is_empty() {
                let placeholder = if role == "assistant" {
                    "(no reply)"
                } else {
                    "(empty)"
                };
                blocks = text_block(placeholder);
            }
            json!({"role": role, "content": blocks})
        })
        .collect()
}

fn text_block(text: &str) -> Vec<Value> {
    if text.is_empty() {
        vec![]
    } else {
        vec![json!({"type": "text", "text": text})]
    }
}

fn tool_use(c: &ToolCall) -> Value {
    let input = match &c.arguments {
        Value::Object(_) => c.arguments.clone(),
        Value::String(s) => serde_json::from_str::<Value>(s)
            .ok()
            .filter(Value::is_object)
            .unwrap_or_else(|| json!({})),
        _ => json!({}),
    };
    json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input})
}

/// The decoding state of one streamed Anthropic message.
///
/// The event's kind is the data's `type` (the SSE `event` name when the
/// data has none). Mapping: `message_start` → [`Piece::Model`] and a
/// [`Piece::Usage`] (`input_tokens`, `cache_read_input_tokens`,
/// `cache_creation_input_tokens`, `output_tokens`); `content_block_start`
/// of a `text` / `thinking` block → its text when not empty, of a
/// `tool_use` block → a [`Piece::Call`] (`index` = the block's index, `id`,
/// `name`, and the `input` as arguments when it is a non-empty object — the
/// block's later `input_json_delta`s are then dropped, so the arguments are
/// never doubled); `content_block_delta`: `text_delta` → [`Piece::Text`],
/// `thinking_delta` → [`Piece::Reasoning`], `input_json_delta` → a call
/// piece of `partial_json` at the block's index; `message_delta` → usage
/// increments (the counts are cumulative; a count never goes down) then
/// [`Piece::Finish`] (`end_turn` / `stop_sequence` → `Stop`, `max_tokens`
/// → `Length`, `tool_use` → `ToolCalls`, else `Other`); `message_stop` (or
/// a proxy's `[DONE]`) ends the stream, with an inferred finish when none
/// came; `ping`, signatures and unknown events are ignored; `error` → a
/// classified `Provider` error (its `error.type`, e.g. `overloaded_error`
/// → retry); data that is not a JSON object → a `Protocol` error.
#[derive(Debug, Clone, Default)]
pub struct AnthropicDecoder {
    flow: Flow,
    /// Blocks whose start carried the whole input.
    whole_input: BTreeSet<u64>,
}

impl AnthropicDecoder {
    /// Decodes one event (`event` name and `data`) into the pieces it
    /// carries, in order. Never panics, whatever the input.
    pub fn feed(&mut self, event: Option<&str>, data: &str) -> Result<Vec<Piece>, AgentError> {
        let v = match self.flow.frame(data, "anthropic stream event")? {
            Frame::Skip => return Ok(vec![]),
            Frame::Done(pieces) => return Ok(pieces),
            Frame::Event(v) => v,
        };
        let kind = v
            .get("type")
            .and_then(Value::as_str)
            .or(event)
            .unwrap_or("");
        let mut out = Vec::new();
        match kind {
            "message_start" => {
                let msg = v.get("message").unwrap_or(&Value::Null);
                self.flow.model(msg.get("model"), &mut out);
                self.usage(msg.get("usage"), &mut out);
            }
            "content_block_start" => {
                let index = v.get("index").and_then(Value::as_u64);
                let block = v.get("content_block").unwrap_or(&Value::Null);
                self.block_start(index, block, &mut out);
            }
            "content_block_delta" => {
                let index = v.get("index").and_then(Value::as_u64);
                let delta = v.get("delta").unwrap_or(&Value::Null);
                self.block_delta(index, delta, &mut out);
            }
            "message_delta" => {
                self.usage(v.get("usage"), &mut out);
                if let Some(reason) = v.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.flow.finish(stop_reason(reason), &mut out);
                }
            }
            "message_stop" => {
                self.flow.done = true;
                out.extend(self.flow.close());
            }
            "error" => {
                let err = v.get("error").filter(|e| !e.is_null()).unwrap_or(&v);
                let status = err
                    .get("type")
                    .and_then(Value::as_str)
                    .and_then(status_of_type);
                return Err(provider_error(err, status, "stream error"));
            }
            _ => {}
        }
        Ok(out)
    }

    fn block_start(&mut self, index: Option<u64>, block: &Value, out: &mut Vec<Piece>) {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => out.extend(text_at(block, "text").map(|t| Piece::Text(t.into()))),
            Some("thinking") => {
                out.extend(text_at(block, "thinking").map(|t| Piece::Reasoning(t.into())))
            }
            Some("tool_use") => {
                let arguments = match block.get("input") {
                    Some(input @ Value::Object(map)) if !map.is_empty() => {
                        self.whole_input.extend(index);
                        input.to_string()
                    }
                    _ => String::new(),
                };
                self.flow.any_call = true;
                out.push(Piece::Call(CallFragment {
                    index,
                    id: text_at(block, "id").map(String::from),
                    name: text_at(block, "name").map(String::from),
                    arguments,
                }));
            }
            _ => {}
        }
    }

    fn block_delta(&mut self, index: Option<u64>, delta: &Value, out: &mut Vec<Piece>) {
        match delta.get("type").and_then(Value::as_str) {
            Some("text_delta") => out.extend(text_at(delta, "text").map(|t| Piece::Text(t.into()))),
            Some("thinking_delta") => {
                out.extend(text_at(delta, "thinking").map(|t| Piece::Reasoning(t.into())))
            }
            Some("input_json_delta") => {
                let whole = index.is_some_and(|i| self.whole_input.contains(&i));
                if let Some(json) = text_at(delta, "partial_json").filter(|_| !whole) {
                    self.flow.any_call = true;
                    out.push(Piece::Call(CallFragment {
                        index,
                        arguments: json.to_string(),
                        ..CallFragment::default()
                    }));
                }
            }
            _ => {}
        }
    }

    /// Folds a cumulative `usage` object into the totals and emits the
    /// increment.
    fn usage(&mut self, usage: Option<&Value>, out: &mut Vec<Piece>) {
        let Some(usage) = usage.filter(|u| u.is_object()) else {
            return;
        };
        let mut total = self.flow.usage.reported();
        let take = |field: &mut u64, key: &str| {
            if let Some(n) = usage.get(key).and_then(Value::as_u64) {
                *field = (*field).max(n);
            }
        };
        take(&mut total.input, "input_tokens");
        take(&mut total.output, "output_tokens");
        take(&mut total.cache_read, "cache_read_input_tokens");
        take(&mut total.cache_write, "cache_creation_input_tokens");
        out.extend(self.flow.usage.step(total));
    }

    /// Whether `message_stop` came.
    pub fn is_done(&self) -> bool {
        self.flow.done
    }

    /// At the end of the connection: `Ok` after `message_stop`, else a
    /// `Protocol` error (the stream was cut; class `retry`).
    pub fn end(&self) -> Result<(), AgentError> {
        if self.flow.done {
            Ok(())
        } else {
            Err(protocol("anthropic stream ended without message_stop"))
        }
    }
}

/// The [`FinishReason`] of an Anthropic `stop_reason`.
fn stop_reason(reason: &str) -> FinishReason {
    match reason {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "max_tokens" => FinishReason::Length,
        "tool_use" => FinishReason::ToolCalls,
        other => FinishReason::Other(other.to_string()),
    }
}

/// The pieces of a whole (non-streamed) message — `{"type": "message",
/// "model", "content": [...], "stop_reason", "usage"}` — in the order a
/// stream would give them: the model, each content block (`index` = its
/// position; a `tool_use` block's `input` serialized as its arguments),
/// the usage, and exactly one [`Piece::Finish`]. An error body is a
/// classified `Provider` error; a body without a `content` array is a
/// `Protocol` error.
pub fn whole(body: &str) -> Result<Vec<Piece>, AgentError> {
    let v = parse_object(body, "anthropic message")?;
    if let Some(err) = v.get("error").filter(|e| !e.is_null()) {
        return Err(provider_error(err, None, "provider error"));
    }
    let Some(content) = v.get("content").and_then(Value::as_array) else {
        return Err(protocol(format!(
            "anthropic message has no content: {}",
            preview(body)
        )));
    };
    let mut d = AnthropicDecoder::default();
    let mut out = Vec::new();
    d.flow.model(v.get("model"), &mut out);
    for (i, block) in content.iter().enumerate() {
        let index = Some(i as u64);
        if block.get("type").and_then(Value::as_str) == Some("tool_use") {
            let input = block.get("input").cloned().unwrap_or_else(|| json!({}));
            d.flow.any_call = true;
            out.push(Piece::Call(CallFragment {
                index,
                id: text_at(block, "id").map(String::from),
                name: text_at(block, "name").map(String::from),
                arguments: input.to_string(),
            }));
        } else {
            d.block_start(index, block, &mut out);
        }
    }
    d.usage(v.get("usage"), &mut out);
    if let Some(reason) = v.get("stop_reason").and_then(Value::as_str) {
        d.flow.finish(stop_reason(reason), &mut out);
    }
    out.extend(d.flow.close());
    Ok(out)
}

/// The error of an HTTP status answer in Anthropic's error shape
/// (`{"type": "error", "error": {"type", "message"}}`): a classified
/// `Provider` error carrying the status and the `Retry-After` delay
/// (relative to `now`). The error's `type` is its name for the
/// classification (`overloaded_error`, `rate_limit_error` → retry,
/// `authentication_error` → fatal, ...); a body of another shape is read
/// as OpenAI's, else as text.
pub fn status_error(
    status: u16,
    body: &str,
    retry_after: Option<&str>,
    now: std::time::SystemTime,
) -> AgentError {
    // OpenAI's reader takes the body's `error` object, whose `type` is
    // Anthropic's error name: one reader for both shapes.
    crate::agent::openai_chunk::status_error(status, body, retry_after, now)
}

/// The HTTP status Anthropic documents for an error `type`: what a
/// mid-stream `error` event (sent after a 200) stands for, so that it is
/// classified as the same error answered as a status would be
/// (`api_error` is an internal server error: retry).
fn status_of_type(t: &str) -> Option<u16> {
    Some(match t {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "billing_error" => 402,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "api_error" => 500,
        "timeout_error" => 504,
        "overloaded_error" => 529,
        _ => return None,
    })
}

#[cfg(test)]
#[path = "anthropic_tests.rs"]
mod tests;
