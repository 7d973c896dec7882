//! OpenAI Chat Completions (`POST /v1/chat/completions`): the request view and
//! the reply, streamed as `data:` chunks ending in `data: [DONE]` (or as one
//! JSON completion when the request does not ask for a stream).

use serde_json::{json, Value};

use crate::decide::{Flags, Reply, RequestView, ToolArgs, ToolInfo};
use crate::sse;

/// Prompt tokens every reply reports (of which 50 cached under `usage_cached`).
pub const PROMPT_TOKENS: u64 = 200;
/// Completion tokens every reply reports.
pub const COMPLETION_TOKENS: u64 = 20;
/// Cached prompt tokens reported under `usage_cached`.
pub const CACHED_TOKENS: u64 = 50;
/// The reasoning text streamed under the `reasoning`/`reasoning_content` flags.
pub const REASONING_TEXT: &str = "Thinking about the request.";
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

fn usage(flags: &Flags) -> Value {
    let mut usage = json!({
        "prompt_tokens": PROMPT_TOKENS,
        "completion_tokens": COMPLETION_TOKENS,
        "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS,
    });
    if flags.usage_cached {
        usage["prompt_tokens_details"] = json!({"cached_tokens": CACHED_TOKENS});
    }
    usage
}

fn timings(flags: &Flags) -> Value {
    json!({
        "cache_n": if flags.usage_cached { CACHED_TOKENS } else { 0 },
        "prompt_n": PROMPT_TOKENS,
        "prompt_ms": 100.0,
        "prompt_per_token_ms": 0.5,
        "prompt_per_second": 2000.0,
        "predicted_n": COMPLETION_TOKENS,
        "predicted_ms": 200.0,
        "predicted_per_token_ms": 10.0,
        "predicted_per_second": 100.0,
    })
}

fn arguments(args: &ToolArgs) -> String {
    match args {
        ToolArgs::Json(v) => v.to_string(),
        ToolArgs::Freeform(s) => json!({ "input": s }).to_string(),
    }
}

fn split_half(s: &str) -> (&str, &str) {
    let mut mid = s.len() / 2;
    while !s.is_char_boundary(mid) {
        mid -= 1;
    }
    s.split_at(mid)
}

/// The SSE frames of the streamed reply, faults applied (`hang` and `slow`
/// are the transport's, see [`sse::Script`]).
pub fn frames(body: &Value, reply: &Reply, flags: &Flags, n: u64) -> Vec<String> {
    let model = body
        .get("model")
        .cloned()
        .unwrap_or(json!("scripted-model"));
    let id = format!("chatcmpl-scripted-{n}");
    let chunk = |choices: Value| json!({"id": id, "object": "chat.completion.chunk", "created": CREATED, "model": model, "choices": choices});
    let delta = |d: Value| chunk(json!([{"index": 0, "delta": d, "finish_reason": null}]));

    let mut reasoning = Vec::new();
    let field = if flags.reasoning_content {
        Some("reasoning_content")
    } else if flags.reasoning {
        Some("reasoning")
    } else {
        None
    };
    if let Some(field) = field {
        for (i, piece) in sse::pieces(REASONING_TEXT).into_iter().enumerate() {
            let mut d = json!({ field: piece });
            if i == 0 {
                d["role"] = json!("assistant");
            }
            reasoning.push(sse::data(&delta(d)));
        }
    }

    let mut body_frames = Vec::new();
    let finish_reason = match reply {
        Reply::Text(text) => {
            for (i, piece) in sse::pieces(text).into_iter().enumerate() {
                let d = if i == 0 {
                    json!({"role": "assistant", "content": piece})
                } else {
                    json!({ "content": piece })
                };
                body_frames.push(sse::data(&delta(d)));
            }
            "stop"
        }
        Reply::ToolCall { name, args } => {
            let call_id = format!("call_scripted_{n}");
            body_frames.push(sse::data(&delta(json!({
                "role": "assistant", "content": null,
                "tool_calls": [{"index": 0, "id": call_id, "type": "function",
                                "function": {"name": name, "arguments": ""}}]
            }))));
            let args = arguments(args);
            let (a, b) = split_half(&args);
            for part in [a, b] {
                body_frames.push(sse::data(&delta(json!({
                    "tool_calls": [{"index": 0, "function": {"arguments": part}}]
                }))));
            }
            "tool_calls"
        }
    };

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
    let mut finish = chunk(json!([{"index": 0, "delta": {}, "finish_reason": finish_reason}]));
    let mut usage_chunk = include_usage.then(|| {
        let mut c = chunk(json!([]));
        c["usage"] = usage(flags);
        c
    });
    if flags.timings {
        // llama.cpp puts timings on the last chunk, whichever that is.
        match usage_chunk.as_mut() {
            Some(c) => c["timings"] = timings(flags),
            None => finish["timings"] = timings(flags),
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
pub fn completion(body: &Value, reply: &Reply, flags: &Flags, n: u64) -> Value {
    let model = body
        .get("model")
        .cloned()
        .unwrap_or(json!("scripted-model"));
    let (message, finish_reason) = match reply {
        Reply::Text(text) => (json!({"role": "assistant", "content": text}), "stop"),
        Reply::ToolCall { name, args } => (
            json!({"role": "assistant", "content": null, "tool_calls": [{
                "id": format!("call_scripted_{n}"), "type": "function",
                "function": {"name": name, "arguments": arguments(args)}
            }]}),
            "tool_calls",
        ),
    };
    let mut out = json!({
        "id": format!("chatcmpl-scripted-{n}"), "object": "chat.completion",
        "created": CREATED, "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": usage(flags),
    });
    if flags.timings {
        out["timings"] = timings(flags);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(frames: &[String]) -> Vec<Value> {
        frames
            .iter()
            .filter_map(|f| f.strip_prefix("data: "))
            .filter(|d| !d.starts_with("[DONE]"))
            .map(|d| serde_json::from_str(d.trim()).unwrap())
            .collect()
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
        let plain = frames(&body, &text, &Flags::default(), 1);
        assert_eq!(plain.last().unwrap(), "data: [DONE]\n\n");
        let chunks = parse(&plain);
        assert_eq!(chunks[0]["choices"][0]["delta"]["content"], "done");
        assert_eq!(chunks[1]["choices"][0]["finish_reason"], "stop");
        assert_eq!(chunks[2]["usage"]["prompt_tokens"], 200);
        assert!(chunks[2]["usage"].get("prompt_tokens_details").is_none());

        let f = Flags::parse("m+reasoning_content+timings+usage_cached").1;
        let chunks = parse(&frames(&body, &text, &f, 1));
        assert!(chunks[0]["choices"][0]["delta"]["reasoning_content"].is_string());
        let last = chunks.last().unwrap();
        assert_eq!(last["usage"]["prompt_tokens_details"]["cached_tokens"], 50);
        assert_eq!(last["timings"]["prompt_n"], 200);

        let f = Flags::parse("m+no_done").1;
        let out = frames(&body, &text, &f, 1);
        assert!(!out
            .iter()
            .any(|x| x.contains("[DONE]") || x.contains("usage")));
        assert!(out.last().unwrap().contains("\"finish_reason\":\"stop\""));

        let f = Flags::parse("m+midstream_error").1;
        let out = frames(&body, &text, &f, 1);
        assert_eq!(out.len(), 2);
        assert!(out[1].starts_with("data: {\"error\":"));
    }

    #[test]
    fn tool_call_arguments_reassemble() {
        let reply = Reply::ToolCall {
            name: "bash".into(),
            args: ToolArgs::Json(json!({"command": "echo hi > hello.txt"})),
        };
        let chunks = parse(&frames(&json!({}), &reply, &Flags::default(), 7));
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
