//! OpenAI Responses with tools (pure): the streaming request body of a
//! [`Request`], the streamed events → [`Piece`]s, and a whole response
//! object → the same pieces.

use super::chat::{arguments_text, merge_extra, parse_object, protocol, text_at, Flow, Frame};
use crate::agent::native::{CallFragment, FinishReason, Message, Piece, Request};
use crate::agent::openai_chunk::{preview, provider_error};
use crate::agent::{AgentError, Usage};
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;

/// The streaming body: `model`, `instructions` (the system prompt, when not
/// empty), `input`, `tools` (`{"type": "function", "name", "description",
/// "parameters", "strict": false}`) only when tools are offered, `stream:
/// true`, `store: false`, `max_output_tokens` when set, then
/// [`Request::extra`] (which wins).
///
/// Input items: a user text is `{"role": "user", "content": [{"type":
/// "input_text", "text"}]}`; an assistant reply is its text as a `message`
/// item of `output_text` (left out when empty) followed by a
/// `function_call` item per call (`call_id`, `name`, `arguments` as a JSON
/// string); a tool result is `{"type": "function_call_output", "call_id",
/// "output"}`. Reasoning is not sent back (`store: false` keeps no
/// reasoning items to refer to).
pub fn request_body(req: &Request) -> Value {
    let mut input = Vec::new();
    for m in req.messages {
        match m {
            Message::User { text } => input.push(json!({
                "role": "user", "content": [{"type": "input_text", "text": text}],
            })),
            Message::Assistant { text, calls, .. } => {
                if !text.is_empty() {
                    input.push(json!({
                        "type": "message", "role": "assistant",
                        "content": [{"type": "output_text", "text": text}],
                    }));
                }
                input.extend(calls.iter().map(|c| {
                    json!({"type": "function_call", "call_id": c.id, "name": c.name,
                        "arguments": arguments_text(&c.arguments)})
                }));
            }
            Message::Tool {
                call_id, output, ..
            } => input.push(json!({
                "type": "function_call_output", "call_id": call_id, "output": output,
            })),
        }
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(req.model));
    if !req.system.is_empty() {
        body.insert("instructions".into(), json!(req.system));
    }
    body.insert("input".into(), Value::Array(input));
    if !req.tools.is_empty() {
        let tools = req.tools.iter().map(|t| {
            json!({"type": "function", "name": t.name, "description": t.description,
                "parameters": t.parameters, "strict": false})
        });
        body.insert("tools".into(), Value::Array(tools.collect()));
    }
    body.insert("stream".into(), json!(true));
    body.insert("store".into(), json!(false));
    if let Some(max) = req.max_output_tokens {
        body.insert("max_output_tokens".into(), json!(max));
    }
    merge_extra(&mut body, req.extra);
    Value::Object(body)
}

/// The decoding state of one streamed response.
///
/// The event's kind is the data's `type` (the SSE `event` name when the
/// data has none). Mapping: `response.created` / `response.in_progress` →
/// [`Piece::Model`] (once); `response.output_text.delta` →
/// [`Piece::Text`]; `response.reasoning_summary_text.delta` and
/// `response.reasoning_text.delta` → [`Piece::Reasoning`];
/// `response.output_item.added` of a `function_call` → a [`Piece::Call`]
/// (`index` = `output_index`, `id` = `call_id`, `name`, `arguments` or
/// empty); `response.function_call_arguments.delta` → a call piece of
/// `delta`; `response.function_call_arguments.done` and
/// `response.output_item.done` of a `function_call` → its full arguments
/// *only* when no arguments came for that index (with `id` and `name` when
/// no `added` announced it), so arguments are never doubled;
/// `response.completed` → [`Piece::Usage`] (`input` = `input_tokens` −
/// `cached_tokens`, `output`, `reasoning`), [`Piece::Finish`] (`ToolCalls`
/// when any function call came, else `Stop`) and the end;
/// `response.incomplete` → usage, `Finish` (`Length` for
/// `max_output_tokens`, else `Other(reason)`) and the end;
/// `response.failed` and `error` → a classified `Provider` error; other
/// events are ignored; data that is not a JSON object → a `Protocol`
/// error. Events after the end are ignored.
#[derive(Debug, Clone, Default)]
pub struct ResponsesDecoder {
    flow: Flow,
    /// `output_index`es of function calls announced by `output_item.added`.
    announced: BTreeSet<Option<u64>>,
    /// `output_index`es of function calls whose arguments came.
    with_arguments: BTreeSet<Option<u64>>,
}

impl ResponsesDecoder {
    /// Decodes one event (`event` name and `data`) into the pieces it
    /// carries, in order. Never panics, whatever the input.
    pub fn feed(&mut self, event: Option<&str>, data: &str) -> Result<Vec<Piece>, AgentError> {
        let v = match self.flow.frame(data, "responses stream event")? {
            Frame::Skip => return Ok(vec![]),
            Frame::Done(pieces) => return Ok(pieces),
            Frame::Event(v) => v,
        };
        let kind = v
            .get("type")
            .and_then(Value::as_str)
            .or(event)
            .unwrap_or("");
        let index = v.get("output_index").and_then(Value::as_u64);
        let item = v.get("item").unwrap_or(&Value::Null);
        let is_call = item.get("type").and_then(Value::as_str) == Some("function_call");
        let mut out = Vec::new();
        match kind {
            "response.created" | "response.in_progress" => {
                self.flow.model(v.pointer("/response/model"), &mut out);
            }
            "response.output_text.delta" => {
                out.extend(text_at(&v, "delta").map(|t| Piece::Text(t.into())));
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                out.extend(text_at(&v, "delta").map(|t| Piece::Reasoning(t.into())));
            }
            "response.output_item.added" if is_call => {
                self.announced.insert(index);
                self.call(index, item, true, &mut out);
            }
            "response.function_call_arguments.delta" => {
                if let Some(delta) = text_at(&v, "delta") {
                    self.with_arguments.insert(index);
                    self.flow.any_call = true;
                    out.push(Piece::Call(CallFragment {
                        index,
                        arguments: delta.to_string(),
                        ..CallFragment::default()
                    }));
                }
            }
            "response.function_call_arguments.done" if !self.with_arguments.contains(&index) => {
                self.call(index, &v, !self.announced.contains(&index), &mut out);
            }
            "response.output_item.done" if is_call && !self.with_arguments.contains(&index) => {
                let named = !self.announced.contains(&index);
                self.announced.insert(index);
                self.call(index, item, named, &mut out);
            }
            "response.completed" | "response.incomplete" => {
                let response = v.get("response").unwrap_or(&Value::Null);
                self.end_of(response, kind == "response.incomplete", &mut out);
            }
            "response.failed" => {
                let err = v
                    .pointer("/response/error")
                    .filter(|e| !e.is_null())
                    .cloned()
                    .unwrap_or_else(|| json!("response failed"));
                return Err(provider_error(&err, failed_status(&err), "response failed"));
            }
            "error" => {
                let err = v.get("error").filter(|e| e.is_object()).unwrap_or(&v);
                return Err(provider_error(err, None, "stream error"));
            }
            _ => {}
        }
        Ok(out)
    }

    /// A call piece of `item`'s `arguments` (with its `call_id` and `name`
    /// when `named`); the arguments count as come when not empty.
    fn call(&mut self, index: Option<u64>, item: &Value, named: bool, out: &mut Vec<Piece>) {
        let arguments = match item.get("arguments") {
            None | Some(Value::Null) => String::new(),
            Some(args) => arguments_text(args),
        };
        if !arguments.is_empty() {
            self.with_arguments.insert(index);
        }
        let field = |key| {
            named
                .then(|| text_at(item, key).map(String::from))
                .flatten()
        };
        let fragment = CallFragment {
            index,
            id: field("call_id"),
            name: field("name"),
            arguments,
        };
        if fragment != CallFragment::default() || named {
            self.flow.any_call = true;
            out.push(Piece::Call(fragment));
        }
    }

    /// The end of the response (`response.completed`, or `.incomplete`
    /// when `incomplete` or its status says so): the model if none came
    /// yet, the usage, the finish, done.
    fn end_of(&mut self, response: &Value, incomplete: bool, out: &mut Vec<Piece>) {
        self.flow.model(response.get("model"), out);
        if let Some(usage) = response.get("usage").filter(|u| u.is_object()) {
            out.extend(self.flow.usage.step(usage_of(usage)));
        }
        let outputs = response.get("output").and_then(Value::as_array);
        if outputs
            .into_iter()
            .flatten()
            .any(|item| item.get("type").and_then(Value::as_str) == Some("function_call"))
        {
            self.flow.any_call = true;
        }
        if incomplete || response.get("status").and_then(Value::as_str) == Some("incomplete") {
            let reason = response
                .pointer("/incomplete_details/reason")
                .and_then(Value::as_str);
            let finish = match reason {
                Some("max_output_tokens") => FinishReason::Length,
                Some(other) => FinishReason::Other(other.to_string()),
                None => FinishReason::Other("incomplete".into()),
            };
            self.flow.finish(finish, out);
        }
        self.flow.done = true;
        out.extend(self.flow.close());
    }

    /// Whether `response.completed` or `response.incomplete` came.
    pub fn is_done(&self) -> bool {
        self.flow.done
    }

    /// At the end of the connection: `Ok` after the response ended, else a
    /// `Protocol` error (the stream was cut; class `retry`).
    pub fn end(&self) -> Result<(), AgentError> {
        if self.flow.done {
            Ok(())
        } else {
            Err(protocol(
                "responses stream ended without response.completed",
            ))
        }
    }
}

/// A Responses `usage` object in this crate's terms (`input` uncached).
fn usage_of(usage: &Value) -> Usage {
    let count = |p: &str| usage.pointer(p).and_then(Value::as_u64).unwrap_or(0);
    let cached = count("/input_tokens_details/cached_tokens");
    Usage {
        input: count("/input_tokens").saturating_sub(cached),
        output: count("/output_tokens"),
        cache_read: cached,
        cache_write: 0,
        reasoning: count("/output_tokens_details/reasoning_tokens"),
        cost_usd: None,
    }
}

/// The pieces of a whole (non-streamed) response object — `{"object":
/// "response", "status", "model", "output": [...], "usage"}` — in the
/// order a stream would give them: the model, each output item (reasoning
/// summary or text → `Reasoning`, message `output_text` → `Text`,
/// `function_call` → a call piece with `index` = its position), the usage,
/// and exactly one [`Piece::Finish`] (by `status`, as in
/// [`ResponsesDecoder`]). A failed response or an error body is a
/// classified `Provider` error; a body without an `output` array is a
/// `Protocol` error.
pub fn whole(body: &str) -> Result<Vec<Piece>, AgentError> {
    let v = parse_object(body, "response")?;
    let failed = v.get("status").and_then(Value::as_str) == Some("failed");
    if let Some(err) = v.get("error").filter(|e| !e.is_null()) {
        return Err(provider_error(err, failed_status(err), "response failed"));
    }
    if failed {
        return Err(provider_error(
            &json!("response failed"),
            None,
            "provider error",
        ));
    }
    let Some(output) = v.get("output").and_then(Value::as_array) else {
        return Err(protocol(format!(
            "response has no output: {}",
            preview(body)
        )));
    };
    let mut d = ResponsesDecoder::default();
    let mut out = Vec::new();
    d.flow.model(v.get("model"), &mut out);
    for (i, item) in output.iter().enumerate() {
        let texts = |key: &str, kinds: &[&str]| -> Vec<String> {
            let parts = item.get(key).and_then(Value::as_array);
            parts
                .into_iter()
                .flatten()
                .filter(|p| kinds.contains(&p.get("type").and_then(Value::as_str).unwrap_or("")))
                .filter_map(|p| text_at(p, "text").map(String::from))
                .collect()
        };
        match item.get("type").and_then(Value::as_str) {
            Some("reasoning") => {
                let mut parts = texts("summary", &["summary_text"]);
                parts.extend(texts("content", &["reasoning_text"]));
                out.extend(parts.into_iter().map(Piece::Reasoning));
            }
            Some("message") => {
                out.extend(
                    texts("content", &["output_text"])
                        .into_iter()
                        .map(Piece::Text),
                );
            }
            Some("function_call") => d.call(Some(i as u64), item, true, &mut out),
            _ => {}
        }
    }
    d.end_of(&v, false, &mut out);
    Ok(out)
}

/// The HTTP status a failed response's error `code` stands for (the
/// response itself came with a 200): `server_error` is an internal server
/// error (500, retry) and `rate_limit_exceeded` a 429; other codes carry
/// their meaning in their name or message.
fn failed_status(err: &Value) -> Option<u16> {
    match err.get("code").and_then(Value::as_str)? {
        "server_error" => Some(500),
        "rate_limit_exceeded" => Some(429),
        _ => None,
    }
}

#[cfg(test)]
#[path = "responses_tests.rs"]
mod tests;
