//! OpenAI Chat Completions (`POST /v1/chat/completions`): the request view and
//! the reply, streamed as `data:` chunks ending in `data: [DONE]` (or as one
//! JSON completion when the request does not ask for a stream).

use serde_json::{json, Value};

use crate::answer::{self, Answer, Finish, Usage, Wire};
// What every reply reports, on every wire; declared with the answer.
pub use crate::answer::{CACHED_TOKENS, COMPLETION_TOKENS, PROMPT_TOKENS, REASONING_TEXT};
use crate::decide::{Flags, RequestView, ToolInfo};
use crate::script::PriorReply;
use crate::sse;

/// Fixed so replies do not depend on the clock.
const CREATED: u64 = 1_700_000_000;

/// The text of a chat `content`: a string, or the `text` of each part of an array.
pub fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// What the decision needs from a Chat Completions request body.
pub fn view(body: &Value) -> RequestView {
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let role = |m: &Value| {
        m.get("role")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let tools = body
        .get("tools")
        .and_then(Value::as_array)
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| {
                    let f = t.get("function")?;
                    Some(ToolInfo {
                        name: f.get("name")?.as_str()?.to_string(),
                        schema: f.get("parameters").cloned().unwrap_or(Value::Null),
                        freeform: false,
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    let has_tool_result = messages
        .iter()
        .any(|m| matches!(role(m).as_str(), "tool" | "function"));
    let last_user_text = messages
        .iter()
        .rev()
        .find(|m| role(m) == "user")
        .map(|m| content_text(m.get("content").unwrap_or(&Value::Null)))
        .unwrap_or_default();
    let all_text = messages
        .iter()
        .map(|m| content_text(m.get("content").unwrap_or(&Value::Null)))
        .collect::<Vec<_>>()
        .join("\n");
    let schema = match body
        .pointer("/response_format/type")
        .and_then(Value::as_str)
    {
        Some("json_schema") => Some(
            body.pointer("/response_format/json_schema/schema")
                .cloned()
                .unwrap_or(json!({"type":"object"})),
        ),
        Some("json_object") => Some(json!({"type":"object"})),
        _ => None,
    };
    RequestView {
        tools,
        has_tool_result,
        last_user_text,
        all_text,
        schema,
    }
}

/// The wire spelling of Chat Completions calls.
pub const WIRE: Wire = Wire {
    id_prefix: "call_scripted_",
    freeform_native: false,
    index_reuse: true,
};

/// The earlier assistant replies of a Chat Completions conversation: each
/// assistant message, answered by the `tool` (or `function`) messages and
/// user text that follow it.
pub fn prior_replies(body: &Value) -> Vec<PriorReply> {
    let mut out: Vec<PriorReply> = Vec::new();
    let mut results: Vec<Vec<String>> = Vec::new();
    for m in body
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let text = content_text(m.get("content").unwrap_or(&Value::Null));
        match m.get("role").and_then(Value::as_str).unwrap_or("") {
            "assistant" => {
                let structured = m
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .is_some_and(|c| !c.is_empty())
                    || m.get("function_call").is_some_and(|f| !f.is_null());
                out.push(PriorReply {
                    had_calls: structured || text.contains("<tool_call>"),
                    results: String::new(),
                });
                results.push(Vec::new());
            }
            "tool" | "function" | "user" => {
                if let Some(r) = results.last_mut() {
                    r.push(text);
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

/// The bytes the prompt estimate counts: every message's text, every
/// assistant call's name and arguments, and each tool definition's JSON text.
pub fn prompt_bytes(body: &Value) -> usize {
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut texts = Vec::new();
    for m in &messages {
        texts.push(content_text(m.get("content").unwrap_or(&Value::Null)));
        for call in m
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            for key in ["name", "arguments"] {
                if let Some(s) = call
                    .pointer(&format!("/function/{key}"))
                    .and_then(Value::as_str)
                {
                    texts.push(s.to_string());
                }
            }
        }
    }
    answer::prompt_bytes(texts.iter().map(String::as_str), body.get("tools"))
}

fn usage(u: &Usage) -> Value {
    let mut usage = json!({
        "prompt_tokens": u.prompt,
        "completion_tokens": u.completion,
        "total_tokens": u.prompt + u.completion,
    });
    if u.cached > 0 {
        usage["prompt_tokens_details"] = json!({"cached_tokens": u.cached});
    }
    usage
}

fn timings(u: &Usage) -> Value {
    json!({
        "cache_n": u.cached,
        "prompt_n": u.prompt,
        "prompt_ms": 100.0,
        "prompt_per_token_ms": 0.5,
        "prompt_per_second": 2000.0,
        "predicted_n": u.completion,
        "predicted_ms": 200.0,
        "predicted_per_token_ms": 10.0,
        "predicted_per_second": 100.0,
    })
}

fn finish_reason(finish: Finish) -> &'static str {
    match finish {
        Finish::Stop => "stop",
        Finish::ToolCalls => "tool_calls",
        Finish::Length => "length",
    }
}

fn reasoning_field(flags: &Flags) -> &'static str {
    if flags.reasoning && !flags.reasoning_content {
        "reasoning"
    } else {
        "reasoning_content"
    }
}

/// The SSE frames of the streamed reply, faults applied (`hang` and `slow`
/// are the transport's, see [`sse::Script`]).
pub fn frames(body: &Value, answer: &Answer, flags: &Flags, n: u64) -> Vec<String> {
    let plan = answer::plan(answer, flags, WIRE, n);
    let model = body
        .get("model")
        .cloned()
        .unwrap_or(json!("scripted-model"));
    let id = format!("chatcmpl-scripted-{n}");
    let chunk = |choices: Value| json!({"id": id, "object": "chat.completion.chunk", "created": CREATED, "model": model, "choices": choices});
    let first = std::cell::Cell::new(true);
    let delta = |mut d: Value| {
        if first.replace(false) {
            d["role"] = json!("assistant");
        }
        sse::data(&chunk(
            json!([{"index": 0, "delta": d, "finish_reason": null}]),
        ))
    };

    let mut reasoning = Vec::new();
    if let Some(text) = &plan.reasoning {
        let field = reasoning_field(flags);
        for piece in sse::pieces(text) {
            reasoning.push(delta(json!({ field: piece })));
        }
    }

    let mut body_frames = Vec::new();
    if !plan.text.is_empty() || plan.calls.is_empty() {
        for piece in &plan.text_pieces {
            body_frames.push(delta(json!({ "content": piece })));
        }
    }
    for call in &plan.calls {
        let mut head = json!({"index": call.index, "type": "function",
                              "function": {"name": call.name, "arguments": ""}});
        if let Some(id) = &call.id {
            head["id"] = json!(id);
        }
        let mut d = json!({ "tool_calls": [head] });
        if first.get() && plan.text.is_empty() {
            d["content"] = Value::Null;
        }
        body_frames.push(delta(d));
        for piece in &call.pieces {
            body_frames.push(delta(json!({
                "tool_calls": [{"index": call.index, "function": {"arguments": piece}}]
            })));
        }
    }

    if flags.midstream_error {
        let mut out = reasoning;
        out.extend(body_frames.into_iter().take(1));
        out.push(sse::data(&json!({"error": {
            "message": "scripted midstream error", "type": "server_error", "code": 500
        }})));
        return out;
    }

    let include_usage = body
        .pointer("/stream_options/include_usage")
        .and_then(Value::as_bool)
        .unwrap_or(false)
        && !flags.no_done;
    let mut finish =
        chunk(json!([{"index": 0, "delta": {}, "finish_reason": finish_reason(plan.finish)}]));
    let mut usage_chunk = include_usage.then(|| {
        let mut c = chunk(json!([]));
        c["usage"] = usage(&plan.usage);
        c
    });
    if flags.timings {
        // llama.cpp puts timings on the last chunk, whichever that is.
        match usage_chunk.as_mut() {
            Some(c) => c["timings"] = timings(&plan.usage),
            None => finish["timings"] = timings(&plan.usage),
        }
    }

    let mut out = reasoning;
    out.extend(body_frames);
    out.push(sse::data(&finish));
    if let Some(c) = usage_chunk {
        out.push(sse::data(&c));
    }
    if !flags.no_done {
        out.push(sse::done());
    }
    out
}

/// The reply as one `chat.completion` object, for requests without `stream: true`.
pub fn completion(body: &Value, answer: &Answer, flags: &Flags, n: u64) -> Value {
    let plan = answer::plan(answer, flags, WIRE, n);
    let model = body
        .get("model")
        .cloned()
        .unwrap_or(json!("scripted-model"));
    let mut message = json!({"role": "assistant", "content": plan.text});
    if plan.text.is_empty() && !plan.calls.is_empty() {
        message["content"] = Value::Null;
    }
    if let Some(r) = &plan.reasoning {
        message[reasoning_field(flags)] = json!(r);
    }
    if !plan.calls.is_empty() {
        message["tool_calls"] = plan
            .calls
            .iter()
            .map(|c| {
                let mut call = json!({"type": "function",
                                      "function": {"name": c.name, "arguments": c.arguments}});
                if let Some(id) = &c.id {
                    call["id"] = json!(id);
                }
                if flags.index_reuse {
                    call["index"] = json!(c.index);
                }
                call
            })
            .collect();
    }
    let mut out = json!({
        "id": format!("chatcmpl-scripted-{n}"), "object": "chat.completion",
        "created": CREATED, "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason(plan.finish)}],
        "usage": usage(&plan.usage),
    });
    if flags.timings {
        out["timings"] = timings(&plan.usage);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::{Reply, ToolArgs};

    fn a(reply: &Reply, flags: &Flags) -> Answer {
        Answer::from_reply(reply, flags)
    }

    fn parse(frames: &[String]) -> Vec<Value> {
        frames
            .iter()
            .filter_map(|f| f.strip_prefix("data: "))
            .filter(|d| !d.starts_with("[DONE]"))
            .map(|d| serde_json::from_str(d.trim()).unwrap())
            .collect()
    }

    #[test]
    fn prior_replies_pair_each_assistant_message_with_what_answered_it() {
        let body = json!({"messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "task"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "a", "function": {"name": "x", "arguments": "{}"}}, {"id": "b", "function": {"name": "y", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "one"},
            {"role": "tool", "tool_call_id": "b", "content": [{"type": "text", "text": "two"}]},
            {"role": "assistant", "content": "<tool_call>\n<function=x>\n</function>\n</tool_call>"},
            {"role": "user", "content": "<tool_response>three</tool_response>"},
            {"role": "assistant", "content": "just text"}
        ]});
        let got = prior_replies(&body);
        let want = [
            (true, "one\ntwo"),
            (true, "<tool_response>three</tool_response>"),
            (false, ""),
        ];
        assert_eq!(got.len(), 3);
        for (g, (calls, results)) in got.iter().zip(want) {
            assert_eq!((g.had_calls, g.results.as_str()), (calls, results));
        }
        assert!(prior_replies(&json!({})).is_empty());
        let bytes = prompt_bytes(&body);
        assert_eq!(
            bytes,
            "sys".len()
                + "task".len()
                + 2 * 3
                + "one".len()
                + "two".len()
                + body["messages"][5]["content"].as_str().unwrap().len()
                + "<tool_response>three</tool_response>".len()
                + "just text".len()
        );
    }

    #[test]
    fn view_reads_tools_results_and_array_content() {
        let body = json!({
            "model": "m",
            "messages": [
                {"role": "system", "content": "Working directory: /w"},
                {"role": "user", "content": [{"type": "text", "text": "Create a containing b"}]},
                {"role": "tool", "tool_call_id": "c", "content": [{"type":"text","text":"ok"}]}
            ],
            "tools": [{"type": "function", "function": {"name": "bash", "parameters": {"type":"object"}}}],
            "response_format": {"type": "json_object"}
        });
        let v = view(&body);
        assert!(v.has_tool_result);
        assert_eq!(v.last_user_text, "Create a containing b");
        assert_eq!(v.tools[0].name, "bash");
        assert!(v.all_text.contains("Working directory: /w"));
        assert_eq!(v.schema, Some(json!({"type":"object"})));
        assert_eq!(view(&json!(null)), RequestView::default());
    }

    #[test]
    fn frame_shapes_per_flag() {
        let body = json!({"model": "m", "stream_options": {"include_usage": true}});
        let text = Reply::Text("done".into());
        let plain = frames(&body, &a(&text, &Flags::default()), &Flags::default(), 1);
        assert_eq!(plain.last().unwrap(), "data: [DONE]\n\n");
        let chunks = parse(&plain);
        assert_eq!(chunks[0]["choices"][0]["delta"]["content"], "done");
        assert_eq!(chunks[1]["choices"][0]["finish_reason"], "stop");
        assert_eq!(chunks[2]["usage"]["prompt_tokens"], 200);
        assert!(chunks[2]["usage"].get("prompt_tokens_details").is_none());

        let f = Flags::parse("m+reasoning_content+timings+usage_cached").1;
        let chunks = parse(&frames(&body, &a(&text, &f), &f, 1));
        assert!(chunks[0]["choices"][0]["delta"]["reasoning_content"].is_string());
        let last = chunks.last().unwrap();
        assert_eq!(last["usage"]["prompt_tokens_details"]["cached_tokens"], 50);
        assert_eq!(last["timings"]["prompt_n"], 200);

        let f = Flags::parse("m+no_done").1;
        let out = frames(&body, &a(&text, &f), &f, 1);
        assert!(!out
            .iter()
            .any(|x| x.contains("[DONE]") || x.contains("usage")));
        assert!(out.last().unwrap().contains("\"finish_reason\":\"stop\""));

        let f = Flags::parse("m+midstream_error").1;
        let out = frames(&body, &a(&text, &f), &f, 1);
        assert_eq!(out.len(), 2);
        assert!(out[1].starts_with("data: {\"error\":"));
    }

    #[test]
    fn tool_call_arguments_reassemble() {
        let reply = Reply::ToolCall {
            name: "bash".into(),
            args: ToolArgs::Json(json!({"command": "echo hi > hello.txt"})),
        };
        let f = Flags::default();
        let chunks = parse(&frames(&json!({}), &a(&reply, &f), &f, 7));
        let args: String = chunks
            .iter()
            .filter_map(|c| c.pointer("/choices/0/delta/tool_calls/0/function/arguments"))
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(args, r#"{"command":"echo hi > hello.txt"}"#);
        assert_eq!(
            chunks[0]["choices"][0]["delta"]["tool_calls"][0]["id"],
            "call_scripted_7"
        );
        assert_eq!(
            chunks.last().unwrap()["choices"][0]["finish_reason"],
            "tool_calls"
        );
    }
}
