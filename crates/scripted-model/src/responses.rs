//! OpenAI Responses (`POST /v1/responses`, what codex speaks): the request
//! view and the reply, streamed as `event:`/`data:` frames ending in
//! `response.completed` (or as one response object without `stream: true`).

use serde_json::{json, Value};

use crate::answer::{self, Answer, Finish, Plan, Usage, Wire};
use crate::decide::{Flags, RequestView, ToolInfo};
use crate::script::PriorReply;
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
    let items = input_items(body);
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

/// The wire spelling of Responses calls (`index_reuse` has no effect: the
/// quirk is Chat-only in the wild; `no_ids` drops `call_id`).
pub const WIRE: Wire = Wire {
    id_prefix: "call_scripted_",
    freeform_native: true,
    index_reuse: false,
};

fn input_items(body: &Value) -> Vec<Value> {
    match body.get("input") {
        Some(Value::String(s)) => vec![json!({"role": "user", "content": s})],
        Some(Value::Array(items)) => items.clone(),
        _ => Vec::new(),
    }
}

fn output_text(item: &Value) -> String {
    match item.get("output") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The earlier assistant replies of a Responses conversation: each run of
/// consecutive model items (assistant messages, reasoning, function and
/// custom tool calls) is one reply, answered by the call outputs and user
/// text that follow it. (A client that interleaves each call with its
/// output would read as one reply per call.)
pub fn prior_replies(body: &Value) -> Vec<PriorReply> {
    let mut out: Vec<PriorReply> = Vec::new();
    let mut results: Vec<Vec<String>> = Vec::new();
    let mut in_reply = false;
    for item in input_items(body) {
        let kind = item
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("message");
        let role = item.get("role").and_then(Value::as_str).unwrap_or("");
        let is_call = matches!(
            kind,
            "function_call" | "custom_tool_call" | "local_shell_call"
        );
        let model_side =
            is_call || kind == "reasoning" || (kind == "message" && role == "assistant");
        if model_side {
            if !in_reply {
                out.push(PriorReply::default());
                results.push(Vec::new());
                in_reply = true;
            }
            let reply = out.last_mut().expect("pushed above");
            reply.had_calls |= is_call || item_text(&item).contains("<tool_call>");
            continue;
        }
        in_reply = false;
        let Some(r) = results.last_mut() else {
            continue;
        };
        match kind {
            "function_call_output" | "custom_tool_call_output" | "local_shell_call_output" => {
                r.push(output_text(&item))
            }
            "message" if role == "user" => r.push(item_text(&item)),
            _ => {}
        }
    }
    for (reply, texts) in out.iter_mut().zip(results) {
        reply.results = texts.join("\n");
    }
    out
}

/// The bytes the prompt estimate counts: the instructions, every item's
/// text, call arguments and inputs, call outputs, and each tool definition's JSON text.
pub fn prompt_bytes(body: &Value) -> usize {
    let mut texts: Vec<String> = body
        .get("instructions")
        .and_then(Value::as_str)
        .map(|s| vec![s.to_string()])
        .unwrap_or_default();
    for item in input_items(body) {
        texts.push(item_text(&item));
        texts.push(output_text(&item));
        for key in ["name", "arguments", "input"] {
            if let Some(s) = item.get(key).and_then(Value::as_str) {
                texts.push(s.to_string());
            }
        }
    }
    answer::prompt_bytes(texts.iter().map(String::as_str), body.get("tools"))
}

fn usage(u: &Usage) -> Value {
    json!({
        "input_tokens": u.prompt,
        "input_tokens_details": {"cached_tokens": u.cached},
        "output_tokens": u.completion,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": u.prompt + u.completion,
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

/// The output items of the reply, complete (as `response.completed` lists
/// them), each with the pieces its stream delivers.
fn output_items(plan: &Plan, n: u64) -> Vec<(Value, Vec<String>)> {
    let mut items = Vec::new();
    if let Some(r) = &plan.reasoning {
        items.push((
            json!({"id": format!("rs_scripted_{n}"), "type": "reasoning",
                   "summary": [{"type": "summary_text", "text": r}]}),
            vec![],
        ));
    }
    if !plan.text.is_empty() || plan.calls.is_empty() {
        let status = if plan.calls.is_empty() && plan.finish == Finish::Length {
            "incomplete"
        } else {
            "completed"
        };
        items.push((
            json!({
                "id": format!("msg_scripted_{n}"), "type": "message", "role": "assistant",
                "status": status,
                "content": [{"type": "output_text", "text": plan.text, "annotations": []}]
            }),
            plan.text_pieces.clone(),
        ));
    }
    for (i, call) in plan.calls.iter().enumerate() {
        let status = if call.cut { "incomplete" } else { "completed" };
        let mut item = if call.freeform {
            json!({"id": answer::call_id("ctc_scripted_", n, i), "type": "custom_tool_call",
                   "status": status, "name": call.name, "input": call.arguments})
        } else {
            json!({"id": answer::call_id("fc_scripted_", n, i), "type": "function_call",
                   "status": status, "name": call.name, "arguments": call.arguments})
        };
        if let Some(id) = &call.id {
            item["call_id"] = json!(id);
        }
        let pieces = if call.freeform {
            vec![call.arguments.clone()]
        } else {
            call.pieces.clone()
        };
        items.push((item, pieces));
    }
    items
}

fn response(body: &Value, status: &str, output: Vec<Value>, n: u64) -> Value {
    json!({
        "id": format!("resp_scripted_{n}"), "object": "response", "created_at": CREATED,
        "status": status, "model": body.get("model").cloned().unwrap_or(json!("scripted-model")),
        "output": output,
    })
}

fn finished(body: &Value, plan: &Plan, output: Vec<Value>, n: u64) -> (&'static str, Value) {
    let (event, status) = match plan.finish {
        Finish::Length => ("response.incomplete", "incomplete"),
        _ => ("response.completed", "completed"),
    };
    let mut r = response(body, status, output, n);
    if plan.finish == Finish::Length {
        r["incomplete_details"] = json!({"reason": "max_output_tokens"});
    }
    r["usage"] = usage(&plan.usage);
    (event, r)
}

/// The reply as one response object, for requests without `stream: true`.
pub fn complete(body: &Value, answer: &Answer, flags: &Flags, n: u64) -> Value {
    let plan = answer::plan(answer, flags, WIRE, n);
    let items = output_items(&plan, n).into_iter().map(|(i, _)| i).collect();
    finished(body, &plan, items, n).1
}

/// The SSE frames of the streamed reply, faults applied (`hang` and `slow`
/// are the transport's, see [`sse::Script`]). A reply cut by `length_cut`
/// ends in `response.incomplete`; its cut item has no `….done` delta event
/// and is `incomplete`.
pub fn frames(body: &Value, answer: &Answer, flags: &Flags, n: u64) -> Vec<String> {
    let plan = answer::plan(answer, flags, WIRE, n);
    let items = output_items(&plan, n);
    let mut f = Frames {
        out: Vec::new(),
        seq: 0,
        first_delta: None,
    };
    f.push(
        "response.created",
        json!({"response": response(body, "in_progress", vec![], n)}),
    );
    for (index, (item, pieces)) in items.iter().enumerate() {
        let id = item["id"].clone();
        let complete = item["status"] == "completed";
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
                for piece in pieces {
                    f.push("response.output_text.delta", json!({"item_id": id, "output_index": index, "content_index": 0, "delta": piece}));
                }
                if complete {
                    f.push(
                        "response.output_text.done",
                        json!({"item_id": id, "output_index": index, "content_index": 0, "text": text}),
                    );
                    f.push("response.content_part.done", json!({"item_id": id, "output_index": index, "content_index": 0, "part": item["content"][0]}));
                }
            }
            "function_call" => {
                added["arguments"] = json!("");
                f.push(
                    "response.output_item.added",
                    json!({"output_index": index, "item": added}),
                );
                for piece in pieces {
                    f.push(
                        "response.function_call_arguments.delta",
                        json!({"item_id": id, "output_index": index, "delta": piece}),
                    );
                }
                if complete {
                    f.push(
                        "response.function_call_arguments.done",
                        json!({"item_id": id, "output_index": index, "arguments": item["arguments"]}),
                    );
                }
            }
            "custom_tool_call" => {
                added["input"] = json!("");
                f.push(
                    "response.output_item.added",
                    json!({"output_index": index, "item": added}),
                );
                for piece in pieces {
                    f.push(
                        "response.custom_tool_call_input.delta",
                        json!({"item_id": id, "output_index": index, "delta": piece}),
                    );
                }
                if complete {
                    f.push(
                        "response.custom_tool_call_input.done",
                        json!({"item_id": id, "output_index": index, "input": item["input"]}),
                    );
                }
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
        let output = items.into_iter().map(|(i, _)| i).collect();
        let (event, done) = finished(body, &plan, output, n);
        f.push(event, json!({ "response": done }));
    }
    f.out
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
    fn prior_replies_group_consecutive_model_items() {
        let body = json!({"input": [
            {"type": "message", "role": "user", "content": "task"},
            {"type": "reasoning", "summary": []},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "t"}]},
            {"type": "function_call", "call_id": "a", "name": "x", "arguments": "{}"},
            {"type": "function_call", "call_id": "b", "name": "y", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "a", "output": "one"},
            {"type": "function_call_output", "call_id": "b", "output": [{"type": "input_text", "text": "two"}]},
            {"role": "assistant", "content": "final"},
            {"type": "message", "role": "user", "content": "again"}
        ]});
        let got = prior_replies(&body);
        assert_eq!(got.len(), 2);
        assert_eq!(
            (got[0].had_calls, got[0].results.as_str()),
            (true, "one\ntwo")
        );
        assert_eq!(
            (got[1].had_calls, got[1].results.as_str()),
            (false, "again")
        );
        assert!(prior_replies(&json!({"input": "hi"})).is_empty());
    }

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
        let ev = events(&fr(&json!({"model": "m"}), &reply, &Flags::default(), 3));
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
        let ev = events(&fr(&json!({}), &text, &f, 1));
        let out = &ev.last().unwrap().1["response"]["output"];
        assert_eq!(out[0]["type"], "reasoning");
        assert_eq!(out[1]["content"][0]["text"], "a b");
        assert_eq!(
            ev.last().unwrap().1["response"]["usage"]["input_tokens_details"]["cached_tokens"],
            50
        );

        let ev = events(&fr(&json!({}), &text, &Flags::parse("m+no_done").1, 1));
        assert!(ev.iter().all(|(n, _)| n != "response.completed"));

        let ev = events(&fr(
            &json!({}),
            &text,
            &Flags::parse("m+midstream_error").1,
            1,
        ));
        assert_eq!(ev[ev.len() - 2].0, "response.output_text.delta");
        assert_eq!(ev.last().unwrap().0, "response.failed");
    }
}
