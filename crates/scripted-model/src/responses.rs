//! OpenAI Responses (`POST /v1/responses`, what codex speaks): the request
//! view and the reply, streamed as `event:`/`data:` frames ending in
//! `response.completed` (or as one response object without `stream: true`).

use serde_json::{json, Value};

use crate::chat::{CACHED_TOKENS, COMPLETION_TOKENS, PROMPT_TOKENS, REASONING_TEXT};
use crate::decide::{Flags, Reply, RequestView, ToolArgs, ToolInfo};
use crate::sse;

const CREATED: u64 = 1_700_000_000;

fn item_text(item: &Value) -> String {
    match item.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// What the decision needs from a Responses request body.
pub fn view(body: &Value) -> RequestView {
    let items: Vec<Value> = match body.get("input") {
        Some(Value::String(s)) => vec![json!({"role": "user", "content": s})],
        Some(Value::Array(items)) => items.clone(),
        _ => Vec::new(),
    };
    let tools = body
        .get("tools")
        .and_then(Value::as_array)
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| {
                    let freeform = match t.get("type").and_then(Value::as_str) {
                        Some("function") => false,
                        Some("custom") => true,
                        _ => return None,
                    };
                    Some(ToolInfo {
                        name: t.get("name")?.as_str()?.to_string(),
                        schema: t.get("parameters").cloned().unwrap_or(Value::Null),
                        freeform,
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    let kind = |i: &Value| {
        i.get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let has_tool_result = items.iter().any(|i| {
        matches!(
            kind(i).as_str(),
            "function_call_output" | "custom_tool_call_output"
        )
    });
    let last_user_text = items
        .iter()
        .rev()
        .find(|i| i.get("role").and_then(Value::as_str) == Some("user"))
        .map(item_text)
        .unwrap_or_default();
    let mut all_text: Vec<String> = body
        .get("instructions")
        .and_then(Value::as_str)
        .map(|s| vec![s.to_string()])
        .unwrap_or_default();
    all_text.extend(items.iter().map(item_text));
    let schema = (body.pointer("/text/format/type").and_then(Value::as_str) == Some("json_schema"))
        .then(|| {
            body.pointer("/text/format/schema")
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

fn usage(flags: &Flags) -> Value {
    json!({
        "input_tokens": PROMPT_TOKENS,
        "input_tokens_details": {"cached_tokens": if flags.usage_cached { CACHED_TOKENS } else { 0 }},
        "output_tokens": COMPLETION_TOKENS,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS,
    })
}

/// Builds the frames with running `sequence_number`s and remembers where the
/// first content delta is, for `midstream_error`.
struct Frames {
    out: Vec<String>,
    seq: u64,
    first_delta: Option<usize>,
}

impl Frames {
    fn push(&mut self, name: &str, mut data: Value) {
        data["type"] = json!(name);
        data["sequence_number"] = json!(self.seq);
        self.seq += 1;
        if self.first_delta.is_none() && name.ends_with(".delta") {
            self.first_delta = Some(self.out.len());
        }
        self.out.push(sse::event(name, &data));
    }
}

/// The output items of the reply, complete (as `response.completed` lists them).
fn output_items(reply: &Reply, flags: &Flags, n: u64) -> Vec<Value> {
    let mut items = Vec::new();
    if flags.reasoning || flags.reasoning_content {
        items.push(
            json!({"id": format!("rs_scripted_{n}"), "type": "reasoning",
            "summary": [{"type": "summary_text", "text": REASONING_TEXT}]}),
        );
    }
    items.push(match reply {
        Reply::Text(text) => json!({
            "id": format!("msg_scripted_{n}"), "type": "message", "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]
        }),
        Reply::ToolCall {
            name,
            args: ToolArgs::Json(args),
        } => json!({
            "id": format!("fc_scripted_{n}"), "type": "function_call", "status": "completed",
            "call_id": format!("call_scripted_{n}"), "name": name, "arguments": args.to_string()
        }),
        Reply::ToolCall {
            name,
            args: ToolArgs::Freeform(input),
        } => json!({
            "id": format!("ctc_scripted_{n}"), "type": "custom_tool_call", "status": "completed",
            "call_id": format!("call_scripted_{n}"), "name": name, "input": input
        }),
    });
    items
}

fn response(body: &Value, status: &str, output: Vec<Value>, n: u64) -> Value {
    json!({
        "id": format!("resp_scripted_{n}"), "object": "response", "created_at": CREATED,
        "status": status, "model": body.get("model").cloned().unwrap_or(json!("scripted-model")),
        "output": output,
    })
}

/// The reply as one response object, for requests without `stream: true`.
pub fn complete(body: &Value, reply: &Reply, flags: &Flags, n: u64) -> Value {
    let mut r = response(body, "completed", output_items(reply, flags, n), n);
    r["usage"] = usage(flags);
    r
}

/// The SSE frames of the streamed reply, faults applied (`hang` and `slow`
/// are the transport's, see [`sse::Script`]).
pub fn frames(body: &Value, reply: &Reply, flags: &Flags, n: u64) -> Vec<String> {
    let items = output_items(reply, flags, n);
    let mut f = Frames {
        out: Vec::new(),
        seq: 0,
        first_delta: None,
    };
    f.push(
        "response.created",
        json!({"response": response(body, "in_progress", vec![], n)}),
    );
    for (index, item) in items.iter().enumerate() {
        let id = item["id"].clone();
        let mut added = item.clone();
        added["status"] = json!("in_progress");
        match item["type"].as_str().unwrap_or_default() {
            "message" => {
                added["content"] = json!([]);
                f.push(
                    "response.output_item.added",
                    json!({"output_index": index, "item": added}),
                );
                let text = item["content"][0]["text"].as_str().unwrap_or_default();
                let empty = json!({"type": "output_text", "text": "", "annotations": []});
                f.push("response.content_part.added", json!({"item_id": id, "output_index": index, "content_index": 0, "part": empty}));
                for piece in sse::pieces(text) {
                    f.push("response.output_text.delta", json!({"item_id": id, "output_index": index, "content_index": 0, "delta": piece}));
                }
                f.push(
                    "response.output_text.done",
                    json!({"item_id": id, "output_index": index, "content_index": 0, "text": text}),
                );
                f.push("response.content_part.done", json!({"item_id": id, "output_index": index, "content_index": 0, "part": item["content"][0]}));
            }
            "function_call" => {
                added["arguments"] = json!("");
                f.push(
                    "response.output_item.added",
                    json!({"output_index": index, "item": added}),
                );
                let args = item["arguments"].as_str().unwrap_or_default();
                f.push(
                    "response.function_call_arguments.delta",
                    json!({"item_id": id, "output_index": index, "delta": args}),
                );
                f.push(
                    "response.function_call_arguments.done",
                    json!({"item_id": id, "output_index": index, "arguments": args}),
                );
            }
            "custom_tool_call" => {
                added["input"] = json!("");
                f.push(
                    "response.output_item.added",
                    json!({"output_index": index, "item": added}),
                );
                let input = item["input"].as_str().unwrap_or_default();
                f.push(
                    "response.custom_tool_call_input.delta",
                    json!({"item_id": id, "output_index": index, "delta": input}),
                );
                f.push(
                    "response.custom_tool_call_input.done",
                    json!({"item_id": id, "output_index": index, "input": input}),
                );
            }
            _ => {
                added["summary"] = json!([]);
                f.push(
                    "response.output_item.added",
                    json!({"output_index": index, "item": added}),
                );
            }
        }
        f.push(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        );
    }
    if flags.midstream_error {
        let keep = f.first_delta.map_or(f.out.len().min(2), |i| i + 1);
        f.out.truncate(keep);
        let mut failed = response(body, "failed", vec![], n);
        failed["error"] = json!({"code": "server_error", "message": "scripted midstream error"});
        f.push("response.failed", json!({ "response": failed }));
        return f.out;
    }
    if !flags.no_done {
        let mut done = response(body, "completed", items, n);
        done["usage"] = usage(flags);
        f.push("response.completed", json!({ "response": done }));
    }
    f.out
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::sse::named_events as events;

    #[test]
    fn view_reads_codex_shapes() {
        let body = json!({
            "instructions": "be brief",
            "input": [
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<cwd>/w</cwd>"}]},
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Create a containing b"}]},
                {"type": "custom_tool_call_output", "call_id": "c", "output": "ok"}
            ],
            "tools": [
                {"type": "function", "name": "exec_command", "parameters": {"type": "object"}},
                {"type": "custom", "name": "apply_patch"},
                {"type": "web_search"}
            ],
            "text": {"format": {"type": "json_schema", "schema": {"type": "object"}}}
        });
        let v = view(&body);
        assert!(v.has_tool_result);
        assert_eq!(v.last_user_text, "Create a containing b");
        assert_eq!(v.tools.len(), 2);
        assert!(v.tools[1].freeform);
        assert!(v.all_text.starts_with("be brief\n<cwd>/w</cwd>"));
        assert!(v.schema.is_some());
        assert_eq!(view(&json!({"input": "hi"})).last_user_text, "hi");
    }

    #[test]
    fn stream_shapes_per_flag() {
        let reply = Reply::ToolCall {
            name: "apply_patch".into(),
            args: ToolArgs::Freeform("*** Begin Patch\n".into()),
        };
        let ev = events(&frames(
            &json!({"model": "m"}),
            &reply,
            &Flags::default(),
            3,
        ));
        assert_eq!(ev[0].0, "response.created");
        let done = &ev.last().unwrap().1;
        assert_eq!(done["type"], "response.completed");
        assert_eq!(done["response"]["output"][0]["type"], "custom_tool_call");
        assert_eq!(done["response"]["usage"]["total_tokens"], 220);
        let seqs: Vec<u64> = ev
            .iter()
            .map(|(_, d)| d["sequence_number"].as_u64().unwrap())
            .collect();
        assert_eq!(seqs, (0..ev.len() as u64).collect::<Vec<_>>());

        let text = Reply::Text("a b".into());
        let f = Flags::parse("m+reasoning+usage_cached").1;
        let ev = events(&frames(&json!({}), &text, &f, 1));
        let out = &ev.last().unwrap().1["response"]["output"];
        assert_eq!(out[0]["type"], "reasoning");
        assert_eq!(out[1]["content"][0]["text"], "a b");
        assert_eq!(
            ev.last().unwrap().1["response"]["usage"]["input_tokens_details"]["cached_tokens"],
            50
        );

        let ev = events(&frames(&json!({}), &text, &Flags::parse("m+no_done").1, 1));
        assert!(ev.iter().all(|(n, _)| n != "response.completed"));

        let ev = events(&frames(
            &json!({}),
            &text,
            &Flags::parse("m+midstream_error").1,
            1,
        ));
        assert_eq!(ev[ev.len() - 2].0, "response.output_text.delta");
        assert_eq!(ev.last().unwrap().0, "response.failed");
    }
}
