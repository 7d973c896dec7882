//! Anthropic Messages (`POST /v1/messages`, what claude speaks): the request
//! view and the reply, streamed as `event:`/`data:` frames from
//! `message_start` to `message_stop` (or as one message without `stream: true`).

use serde_json::{json, Value};

use crate::answer::{self, Answer, Finish, Plan, Usage, Wire};
use crate::decide::{Flags, RequestView, ToolInfo};
use crate::script::PriorReply;
use crate::sse;

fn blocks_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// What the decision needs from a Messages request body. Messages of any
/// role are read (claude sends mid-conversation `role:"system"` entries).
pub fn view(body: &Value) -> RequestView {
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let tools = body
        .get("tools")
        .and_then(Value::as_array)
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| {
                    Some(ToolInfo {
                        name: t.get("name")?.as_str()?.to_string(),
                        schema: t.get("input_schema").cloned().unwrap_or(Value::Null),
                        freeform: false,
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    let has_tool_result = messages.iter().any(|m| {
        m.get("content")
            .and_then(Value::as_array)
            .is_some_and(|blocks| {
                blocks
                    .iter()
                    .any(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
            })
    });
    let content = |m: &Value| blocks_text(m.get("content").unwrap_or(&Value::Null));
    let last_user_text = messages
        .iter()
        .rev()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .map(content)
        .unwrap_or_default();
    let mut all_text = vec![blocks_text(body.get("system").unwrap_or(&Value::Null))];
    all_text.extend(messages.iter().map(content));
    let schema = (body
        .pointer("/output_config/format/type")
        .and_then(Value::as_str)
        == Some("json_schema"))
    .then(|| {
        body.pointer("/output_config/format/schema")
            .cloned()
            .unwrap_or(json!({"type":"object"}))
    });
    RequestView {
        tools,
        has_tool_result,
        last_user_text,
        all_text: all_text.join("\n"),
        schema,
    }
}

/// The Anthropic-shaped error body for `status` (`{"type":"error","error":{type,message}}`).
pub fn error_body(status: u16, message: &str) -> Value {
    let kind = match status {
        400 | 422 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    };
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

/// The wire spelling of Anthropic calls (`index_reuse` has no effect: the
/// quirk is Chat-only in the wild).
pub const WIRE: Wire = Wire {
    id_prefix: "toolu_scripted_",
    freeform_native: false,
    index_reuse: false,
};

fn tool_result_text(block: &Value) -> String {
    match block.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => blocks_text(other),
        None => String::new(),
    }
}

/// The earlier assistant replies of a Messages conversation: each assistant
/// message, answered by the `tool_result` blocks and user text that follow it.
pub fn prior_replies(body: &Value) -> Vec<PriorReply> {
    let mut out: Vec<PriorReply> = Vec::new();
    let mut results: Vec<Vec<String>> = Vec::new();
    for m in body
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let content = m.get("content").unwrap_or(&Value::Null);
        let blocks = content.as_array().cloned().unwrap_or_default();
        match m.get("role").and_then(Value::as_str).unwrap_or("") {
            "assistant" => {
                let structured = blocks
                    .iter()
                    .any(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"));
                out.push(PriorReply {
                    had_calls: structured || blocks_text(content).contains("<tool_call>"),
                    results: String::new(),
                });
                results.push(Vec::new());
            }
            "user" => {
                if let Some(r) = results.last_mut() {
                    if let Value::String(s) = content {
                        r.push(s.clone());
                    }
                    for b in &blocks {
                        match b.get("type").and_then(Value::as_str) {
                            Some("tool_result") => r.push(tool_result_text(b)),
                            Some("text") => {
                                r.push(b["text"].as_str().unwrap_or_default().to_string())
                            }
                            _ => {}
                        }
                    }
                }
            }
            _ => {}
        }
    }
    for (reply, texts) in out.iter_mut().zip(results) {
        reply.results = texts.join("\n");
    }
    out
}

/// The bytes the prompt estimate counts: the system text, every message's
/// text blocks, `tool_use` inputs (JSON text) and `tool_result` texts, and
/// each tool definition's JSON text.
pub fn prompt_bytes(body: &Value) -> usize {
    let mut texts = vec![blocks_text(body.get("system").unwrap_or(&Value::Null))];
    for m in body
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match m.get("content") {
            Some(Value::String(s)) => texts.push(s.clone()),
            Some(Value::Array(blocks)) => {
                for b in blocks {
                    match b.get("type").and_then(Value::as_str) {
                        Some("text") => texts.push(b["text"].as_str().unwrap_or("").to_string()),
                        Some("tool_use") => {
                            texts.push(b["name"].as_str().unwrap_or("").to_string());
                            texts.push(b.get("input").map(Value::to_string).unwrap_or_default());
                        }
                        Some("tool_result") => texts.push(tool_result_text(b)),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    answer::prompt_bytes(texts.iter().map(String::as_str), body.get("tools"))
}

/// Input usage: Anthropic's `input_tokens` excludes cache reads, so the
/// cached share moves to `cache_read_input_tokens` (the total stays the prompt).
fn input_usage(u: &Usage) -> Value {
    json!({
        "input_tokens": u.prompt - u.cached,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": u.cached,
    })
}

fn stop_reason(finish: Finish) -> &'static str {
    match finish {
        Finish::Stop => "end_turn",
        Finish::ToolCalls => "tool_use",
        Finish::Length => "max_tokens",
    }
}

/// The content blocks of the reply, complete, each with the pieces its
/// stream delivers (thinking, text, `tool_use` with its JSON text).
fn content_blocks(plan: &Plan) -> Vec<(Value, Vec<Value>)> {
    let mut blocks = Vec::new();
    if let Some(r) = &plan.reasoning {
        blocks.push((
            json!({"type": "thinking", "thinking": r, "signature": "scripted"}),
            sse::pieces(r)
                .into_iter()
                .map(|p| json!({"type": "thinking_delta", "thinking": p}))
                .chain([json!({"type": "signature_delta", "signature": "scripted"})])
                .collect(),
        ));
    }
    if !plan.text.is_empty() || plan.calls.is_empty() {
        blocks.push((
            json!({"type": "text", "text": plan.text}),
            plan.text_pieces
                .iter()
                .map(|p| json!({"type": "text_delta", "text": p}))
                .collect(),
        ));
    }
    for call in &plan.calls {
        // A broken or cut input has no JSON value: the whole message carries its text.
        let input = serde_json::from_str::<Value>(&call.arguments)
            .unwrap_or_else(|_| json!(call.arguments));
        blocks.push((
            json!({"type": "tool_use", "id": call.id.clone().unwrap_or_default(),
                   "name": call.name, "input": input}),
            call.pieces
                .iter()
                .map(|p| json!({"type": "input_json_delta", "partial_json": p}))
                .collect(),
        ));
    }
    blocks
}

fn model(body: &Value) -> Value {
    body.get("model")
        .cloned()
        .unwrap_or(json!("scripted-model"))
}

/// The reply as one message object, for requests without `stream: true`.
pub fn message(body: &Value, answer: &Answer, flags: &Flags, n: u64) -> Value {
    let plan = answer::plan(answer, flags, WIRE, n);
    let content: Vec<Value> = content_blocks(&plan).into_iter().map(|(b, _)| b).collect();
    let mut usage = input_usage(&plan.usage);
    usage["output_tokens"] = json!(plan.usage.completion);
    json!({
        "id": format!("msg_scripted_{n}"), "type": "message", "role": "assistant",
        "model": model(body), "content": content, "stop_reason": stop_reason(plan.finish),
        "stop_sequence": null, "usage": usage,
    })
}

/// The SSE frames of the streamed reply, faults applied (`hang` and `slow`
/// are the transport's, see [`sse::Script`]).
pub fn frames(body: &Value, answer: &Answer, flags: &Flags, n: u64) -> Vec<String> {
    let plan = answer::plan(answer, flags, WIRE, n);
    let mut out = Vec::new();
    let mut first_delta = None;
    let mut usage = input_usage(&plan.usage);
    usage["output_tokens"] = json!(1);
    out.push(sse::event(
        "message_start",
        &json!({"type": "message_start", "message": {
            "id": format!("msg_scripted_{n}"), "type": "message", "role": "assistant",
            "model": model(body), "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": usage,
        }}),
    ));
    for (index, (block, deltas)) in content_blocks(&plan).into_iter().enumerate() {
        let mut start = block.clone();
        match block["type"].as_str() {
            Some("thinking") => {
                start["thinking"] = json!("");
                start["signature"] = json!("");
            }
            Some("text") => start["text"] = json!(""),
            _ => start["input"] = json!({}),
        }
        out.push(sse::event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": start}),
        ));
        for delta in deltas {
            if first_delta.is_none() {
                first_delta = Some(out.len());
            }
            out.push(sse::event(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index, "delta": delta}),
            ));
        }
        out.push(sse::event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        ));
    }
    if flags.midstream_error {
        out.truncate(first_delta.map_or(1, |i| i + 1));
        out.push(sse::event(
            "error",
            &error_body(500, "scripted midstream error"),
        ));
        return out;
    }
    out.push(sse::event(
        "message_delta",
        &json!({"type": "message_delta",
                "delta": {"stop_reason": stop_reason(plan.finish), "stop_sequence": null},
                "usage": {"output_tokens": plan.usage.completion}}),
    ));
    if !flags.no_done {
        out.push(sse::event("message_stop", &json!({"type": "message_stop"})));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::decide::{Reply, ToolArgs};
    use crate::sse::named_events as events;

    fn fr(body: &Value, reply: &Reply, flags: &Flags, n: u64) -> Vec<String> {
        frames(body, &Answer::from_reply(reply, flags), flags, n)
    }

    #[test]
    fn prior_replies_read_tool_use_and_tool_result_blocks() {
        let body = json!({"messages": [
            {"role": "user", "content": "task"},
            {"role": "assistant", "content": [{"type": "text", "text": "t"}, {"type": "tool_use", "id": "a", "name": "x", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "a", "content": "one"},
                {"type": "tool_result", "tool_use_id": "b", "content": [{"type": "text", "text": "two"}]}]},
            {"role": "assistant", "content": "plain"},
            {"role": "user", "content": "more"}
        ]});
        let got = prior_replies(&body);
        assert_eq!(got.len(), 2);
        assert_eq!(
            (got[0].had_calls, got[0].results.as_str()),
            (true, "one\ntwo")
        );
        assert_eq!((got[1].had_calls, got[1].results.as_str()), (false, "more"));
        assert_eq!(
            prompt_bytes(&body),
            "task".len() + 1 + 1 + 2 + 3 + 3 + "plain".len() + "more".len()
        );
    }

    #[test]
    fn view_reads_claude_shapes() {
        let body = json!({
            "system": [{"type": "text", "text": "Primary working directory: /w"}],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "<system-reminder>x</system-reminder>"}, {"type": "text", "text": "Create a containing b"}]},
                {"role": "system", "content": "mid-conversation"},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]}
            ],
            "tools": [{"name": "Write", "input_schema": {"type": "object"}}],
            "output_config": {"format": {"type": "json_schema", "schema": {"type": "object"}}}
        });
        let v = view(&body);
        assert!(v.has_tool_result);
        assert_eq!(v.last_user_text, "");
        assert!(v.all_text.starts_with("Primary working directory: /w"));
        assert!(v.all_text.contains("Create a containing b"));
        assert_eq!(v.tools[0].name, "Write");
        assert!(v.schema.is_some());
    }

    #[test]
    fn stream_shapes_per_flag() {
        let reply = Reply::ToolCall {
            name: "Bash".into(),
            args: ToolArgs::Json(json!({"command": "echo hi > hello.txt"})),
        };
        let ev = events(&fr(&json!({"model": "m"}), &reply, &Flags::default(), 2));
        let names: Vec<&str> = ev.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "message_start",
                "content_block_start",
                "content_block_delta",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
        let json_text: String = ev
            .iter()
            .filter_map(|(_, d)| d.pointer("/delta/partial_json").and_then(Value::as_str))
            .collect();
        assert_eq!(json_text, r#"{"command":"echo hi > hello.txt"}"#);
        assert_eq!(ev[5].1["delta"]["stop_reason"], "tool_use");

        let text = Reply::Text("done".into());
        let f = Flags::parse("m+reasoning+usage_cached").1;
        let ev = events(&fr(&json!({}), &text, &f, 1));
        assert_eq!(ev[0].1["message"]["usage"]["cache_read_input_tokens"], 50);
        assert_eq!(ev[0].1["message"]["usage"]["input_tokens"], 150);
        assert_eq!(ev[1].1["content_block"]["type"], "thinking");

        let ev = events(&fr(&json!({}), &text, &Flags::parse("m+no_done").1, 1));
        assert_eq!(ev.last().unwrap().0, "message_delta");

        let ev = events(&fr(
            &json!({}),
            &text,
            &Flags::parse("m+midstream_error").1,
            1,
        ));
        assert_eq!(ev[ev.len() - 2].0, "content_block_delta");
        assert_eq!(ev.last().unwrap().1["error"]["type"], "api_error");
    }
}
