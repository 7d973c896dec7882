//! Scripts and quirk flags over real HTTP, in all three wire formats: every
//! check decodes the bytes the server actually sent, the way a client would.

use std::time::Duration;

use coderig_scripted_model::{Script, ScriptedModelServer};
use serde_json::{json, Value};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Api {
    Chat,
    Anthropic,
    Responses,
}

const APIS: [Api; 3] = [Api::Chat, Api::Anthropic, Api::Responses];

/// One call as a client reassembles it from the stream.
#[derive(Debug, Clone, Default)]
struct Call {
    id: Option<String>,
    index: u64,
    name: String,
    args: String,
    pieces: Vec<String>,
}

/// A streamed reply as a client reassembles it.
#[derive(Debug, Clone, Default)]
struct Decoded {
    reasoning: String,
    text: String,
    calls: Vec<Call>,
    /// Chat `finish_reason`, Anthropic `stop_reason`, Responses final event
    /// (`response.completed`, or `response.incomplete:<reason>`).
    finish: String,
    prompt_tokens: u64,
    completion_tokens: u64,
}

fn client() -> reqwest::Client {
    // Feature unification may build reqwest without a crypto provider.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

async fn post(server: &ScriptedModelServer, api: Api, body: &Value) -> (u16, String) {
    let path = match api {
        Api::Chat => "/v1/chat/completions",
        Api::Anthropic => "/v1/messages?beta=true",
        Api::Responses => "/v1/responses",
    };
    let resp = client()
        .post(format!("{}{path}", server.base_url()))
        .json(body)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.text().await.unwrap())
}

/// A first request with one user message and one tool, streamed.
fn request(api: Api, model: &str, prompt: &str) -> Value {
    let schema = json!({"type": "object", "properties": {"path": {"type": "string"}}});
    match api {
        Api::Chat => json!({"model": model, "stream": true,
            "stream_options": {"include_usage": true},
            "messages": [{"role": "system", "content": "You are a coding agent."},
                         {"role": "user", "content": prompt}],
            "tools": [{"type": "function", "function": {"name": "read_file", "parameters": schema}}]}),
        Api::Anthropic => json!({"model": model, "stream": true, "max_tokens": 1000,
            "system": "You are a coding agent.",
            "messages": [{"role": "user", "content": prompt}],
            "tools": [{"name": "read_file", "input_schema": schema}]}),
        Api::Responses => json!({"model": model, "stream": true,
            "instructions": "You are a coding agent.",
            "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]}],
            "tools": [{"type": "function", "name": "read_file", "parameters": schema}]}),
    }
}

fn data_frames(body: &str) -> Vec<(String, Value)> {
    body.split("\n\n")
        .filter(|f| !f.trim().is_empty())
        .filter_map(|f| {
            let mut name = String::new();
            let mut data = None;
            for line in f.lines() {
                if let Some(n) = line.strip_prefix("event: ") {
                    name = n.to_string();
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data = Some(d.to_string());
                }
            }
            let data = data?;
            if data == "[DONE]" {
                return Some(("[DONE]".into(), Value::Null));
            }
            Some((name, serde_json::from_str(&data).unwrap()))
        })
        .collect()
}

fn decode(api: Api, body: &str) -> Decoded {
    let mut d = Decoded::default();
    for (name, v) in data_frames(body) {
        match api {
            Api::Chat => {
                if let Some(u) = v.get("usage").filter(|u| !u.is_null()) {
                    d.prompt_tokens = u["prompt_tokens"].as_u64().unwrap();
                    d.completion_tokens = u["completion_tokens"].as_u64().unwrap();
                }
                let Some(choice) = v.pointer("/choices/0") else {
                    continue;
                };
                if let Some(f) = choice["finish_reason"].as_str() {
                    d.finish = f.into();
                }
                let delta = &choice["delta"];
                for key in ["reasoning_content", "reasoning"] {
                    if let Some(r) = delta[key].as_str() {
                        d.reasoning.push_str(r);
                    }
                }
                if let Some(t) = delta["content"].as_str() {
                    d.text.push_str(t);
                }
                for tc in delta["tool_calls"].as_array().into_iter().flatten() {
                    // A name starts a call (an `index` may be reused, Ollama).
                    if let Some(name) = tc.pointer("/function/name").and_then(Value::as_str) {
                        d.calls.push(Call {
                            id: tc.get("id").and_then(Value::as_str).map(str::to_string),
                            index: tc["index"].as_u64().unwrap(),
                            name: name.into(),
                            ..Call::default()
                        });
                    }
                    let piece = tc
                        .pointer("/function/arguments")
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    if !piece.is_empty() {
                        let call = d.calls.last_mut().unwrap();
                        assert_eq!(call.index, tc["index"].as_u64().unwrap());
                        call.args.push_str(piece);
                        call.pieces.push(piece.into());
                    }
                }
            }
            Api::Anthropic => match name.as_str() {
                "message_start" => {
                    let u = &v["message"]["usage"];
                    d.prompt_tokens = u["input_tokens"].as_u64().unwrap()
                        + u["cache_read_input_tokens"].as_u64().unwrap();
                }
                "content_block_start" if v["content_block"]["type"] == "tool_use" => {
                    d.calls.push(Call {
                        id: v["content_block"]["id"].as_str().map(str::to_string),
                        index: v["index"].as_u64().unwrap(),
                        name: v["content_block"]["name"].as_str().unwrap().into(),
                        ..Call::default()
                    })
                }
                "content_block_delta" => {
                    let delta = &v["delta"];
                    match delta["type"].as_str().unwrap() {
                        "text_delta" => d.text.push_str(delta["text"].as_str().unwrap()),
                        "thinking_delta" => {
                            d.reasoning.push_str(delta["thinking"].as_str().unwrap())
                        }
                        "input_json_delta" => {
                            let call = d.calls.last_mut().unwrap();
                            assert_eq!(call.index, v["index"].as_u64().unwrap());
                            let piece = delta["partial_json"].as_str().unwrap();
                            call.args.push_str(piece);
                            call.pieces.push(piece.into());
                        }
                        _ => {}
                    }
                }
                "message_delta" => {
                    d.finish = v["delta"]["stop_reason"].as_str().unwrap().into();
                    d.completion_tokens = v["usage"]["output_tokens"].as_u64().unwrap();
                }
                _ => {}
            },
            Api::Responses => match name.as_str() {
                "response.output_item.added" if v["item"]["type"] == "function_call" => {
                    d.calls.push(Call {
                        id: v["item"]
                            .get("call_id")
                            .and_then(Value::as_str)
                            .map(str::to_string),
                        index: v["output_index"].as_u64().unwrap(),
                        name: v["item"]["name"].as_str().unwrap().into(),
                        ..Call::default()
                    })
                }
                "response.function_call_arguments.delta" => {
                    let call = d.calls.last_mut().unwrap();
                    assert_eq!(call.index, v["output_index"].as_u64().unwrap());
                    let piece = v["delta"].as_str().unwrap();
                    call.args.push_str(piece);
                    call.pieces.push(piece.into());
                }
                "response.output_text.delta" => d.text.push_str(v["delta"].as_str().unwrap()),
                "response.completed" | "response.incomplete" => {
                    let r = &v["response"];
                    d.finish = match r["incomplete_details"]["reason"].as_str() {
                        Some(reason) => format!("{name}:{reason}"),
                        None => name.clone(),
                    };
                    d.prompt_tokens = r["usage"]["input_tokens"].as_u64().unwrap();
                    d.completion_tokens = r["usage"]["output_tokens"].as_u64().unwrap();
                    for item in r["output"].as_array().unwrap() {
                        if item["type"] == "reasoning" {
                            d.reasoning
                                .push_str(item["summary"][0]["text"].as_str().unwrap());
                        }
                    }
                }
                _ => {}
            },
        }
    }
    d
}

/// The finish a client sees for a reply with calls / a final reply / a cut one.
fn finish_of(api: Api, kind: &str) -> &'static str {
    match (api, kind) {
        (Api::Chat, "calls") => "tool_calls",
        (Api::Chat, "stop") => "stop",
        (Api::Chat, _) => "length",
        (Api::Anthropic, "calls") => "tool_use",
        (Api::Anthropic, "stop") => "end_turn",
        (Api::Anthropic, _) => "max_tokens",
        (Api::Responses, "cut") => "response.incomplete:max_output_tokens",
        (Api::Responses, _) => "response.completed",
    }
}

/// Appends the decoded reply and one result per call, as a client would.
fn append(api: Api, body: &mut Value, reply: &Decoded, results: &[&str]) {
    assert_eq!(reply.calls.len(), results.len(), "one result per call");
    match api {
        Api::Chat => {
            let msgs = body["messages"].as_array_mut().unwrap();
            let calls: Vec<Value> = reply
                .calls
                .iter()
                .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.args}}))
                .collect();
            let mut m = json!({"role": "assistant", "content": reply.text});
            if !calls.is_empty() {
                m["tool_calls"] = json!(calls);
            }
            msgs.push(m);
            for (c, r) in reply.calls.iter().zip(results) {
                msgs.push(json!({"role": "tool", "tool_call_id": c.id, "content": r}));
            }
        }
        Api::Anthropic => {
            let msgs = body["messages"].as_array_mut().unwrap();
            let mut content = Vec::new();
            if !reply.text.is_empty() {
                content.push(json!({"type": "text", "text": reply.text}));
            }
            for c in &reply.calls {
                let input: Value = serde_json::from_str(&c.args).unwrap();
                content
                    .push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}));
            }
            msgs.push(json!({"role": "assistant", "content": content}));
            if !results.is_empty() {
                let blocks: Vec<Value> = reply
                    .calls
                    .iter()
                    .zip(results)
                    .map(|(c, r)| json!({"type": "tool_result", "tool_use_id": c.id, "content": [{"type": "text", "text": r}]}))
                    .collect();
                msgs.push(json!({"role": "user", "content": blocks}));
            }
        }
        Api::Responses => {
            let items = body["input"].as_array_mut().unwrap();
            if !reply.text.is_empty() {
                items.push(json!({"type": "message", "role": "assistant",
                                  "content": [{"type": "output_text", "text": reply.text}]}));
            }
            for c in &reply.calls {
                items.push(json!({"type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.args}));
            }
            for (c, r) in reply.calls.iter().zip(results) {
                items.push(json!({"type": "function_call_output", "call_id": c.id, "output": r}));
            }
        }
    }
}

fn edit_script() -> Script {
    Script::from_json(
        r#"{"steps": [
          {"think": "Look around first.", "say": "Listing the files.", "calls": [{"name": "list_files", "arguments": {}}]},
          {"calls": [{"name": "edit_file", "arguments": {"path": "a.py", "old": "x", "new": "y"}}],
           "on": [{"contains": "AMBIGUOUS", "then": [
             {"calls": [{"name": "edit_file", "arguments": {"path": "a.py", "old": "x = 1\n", "new": "y = 1\n"}}]}]}]},
          {"calls": [{"name": "run", "arguments": {"command": "pytest -q"}},
                     {"name": "run", "arguments": {"command": "ruff check ."}}]},
          {"say": "All tests pass."}
        ]}"#,
    )
    .unwrap()
}

fn args(call: &Call) -> Value {
    serde_json::from_str(&call.args).unwrap_or_else(|e| panic!("{}: {e}", call.args))
}

#[tokio::test]
async fn a_script_plays_a_tool_conversation_with_a_branch_in_every_format() {
    let server = ScriptedModelServer::start().unwrap();
    server.add_script("fix", edit_script());
    for api in APIS {
        let mut body = request(api, "fix", "Fix a.py");
        let (status, raw) = post(&server, api, &body).await;
        assert_eq!(status, 200, "{api:?}: {raw}");
        let r = decode(api, &raw);
        assert_eq!(r.reasoning, "Look around first.", "{api:?}");
        assert_eq!(r.text, "Listing the files.", "{api:?}");
        assert_eq!(r.calls.len(), 1);
        assert_eq!(
            (r.calls[0].name.as_str(), args(&r.calls[0])),
            ("list_files", json!({}))
        );
        assert_eq!(r.finish, finish_of(api, "calls"), "{api:?}");
        // Usage is the estimate: ⌈bytes / 4⌉ of the prompt, not the fixed 200.
        let sent = server.requests().last().unwrap().body.clone();
        let prompt_bytes =
            "You are a coding agent.".len() + "Fix a.py".len() + sent["tools"][0].to_string().len();
        assert_eq!(r.prompt_tokens, prompt_bytes.div_ceil(4) as u64, "{api:?}");
        let reply_bytes = "Look around first.".len()
            + "Listing the files.".len()
            + "list_files".len()
            + "{}".len();
        assert_eq!(
            r.completion_tokens,
            reply_bytes.div_ceil(4) as u64,
            "{api:?}"
        );
        append(api, &mut body, &r, &["a.py\nb.py"]);

        let (_, raw) = post(&server, api, &body).await;
        let r = decode(api, &raw);
        assert_eq!(
            args(&r.calls[0]),
            json!({"path": "a.py", "old": "x", "new": "y"})
        );
        append(api, &mut body, &r, &["error AMBIGUOUS: `x` occurs 3 times"]);

        // The branch: a retry with more context.
        let (_, raw) = post(&server, api, &body).await;
        let r = decode(api, &raw);
        assert_eq!(
            args(&r.calls[0]),
            json!({"path": "a.py", "old": "x = 1\n", "new": "y = 1\n"}),
            "{api:?}"
        );
        append(api, &mut body, &r, &["edited a.py"]);

        // Two parallel calls, distinct ids and indices.
        let (_, raw) = post(&server, api, &body).await;
        let r = decode(api, &raw);
        assert_eq!(r.calls.len(), 2, "{api:?}");
        assert_eq!(args(&r.calls[1]), json!({"command": "ruff check ."}));
        assert_ne!(r.calls[0].id, r.calls[1].id);
        assert_ne!(r.calls[0].index, r.calls[1].index);
        assert!(r
            .calls
            .iter()
            .all(|c| c.id.as_deref().is_some_and(|i| !i.is_empty())));
        append(api, &mut body, &r, &["3 passed", "All checks passed"]);

        let (_, raw) = post(&server, api, &body).await;
        let r = decode(api, &raw);
        assert!(r.calls.is_empty());
        assert_eq!(r.text, "All tests pass.", "{api:?}");
        assert_eq!(r.finish, finish_of(api, "stop"), "{api:?}");
        append(api, &mut body, &r, &[]);

        let (_, raw) = post(&server, api, &body).await;
        assert_eq!(
            decode(api, &raw).text,
            "done",
            "an exhausted script says done"
        );

        // Without the branch's trigger the script goes straight to the tests.
        let mut body = request(api, "fix+split_args", "Fix a.py");
        let (_, raw) = post(&server, api, &body).await;
        let r = decode(api, &raw);
        append(api, &mut body, &r, &["a.py"]);
        let (_, raw) = post(&server, api, &body).await;
        let r = decode(api, &raw);
        append(api, &mut body, &r, &["edited a.py"]);
        let (_, raw) = post(&server, api, &body).await;
        assert_eq!(decode(api, &raw).calls[0].name, "run", "{api:?}");
    }
    // An unregistered name keeps the request-decided reply.
    let (_, raw) = post(
        &server,
        Api::Chat,
        &request(Api::Chat, "other", "Reply with: pong"),
    )
    .await;
    assert_eq!(decode(Api::Chat, &raw).text, "pong");
}

fn quirk_script() -> Script {
    Script::from_json(
        r#"{"steps": [{"say": "Editing.", "calls": [
            {"name": "edit_file", "arguments": {"path": "a.py", "old": "print(\"hi\")\n\tx = 1", "new": "y", "count": 2}},
            {"name": "run", "arguments": {"command": "echo \"done\" && ls"}}]}]}"#,
    )
    .unwrap()
}

const EDIT_ARGS: &str = r#"{"count":2,"new":"y","old":"print(\"hi\")\n\tx = 1","path":"a.py"}"#;
const RUN_ARGS: &str = r#"{"command":"echo \"done\" && ls"}"#;

async fn quirk(server: &ScriptedModelServer, api: Api, flags: &str) -> Decoded {
    let (status, raw) = post(server, api, &request(api, &format!("q+{flags}"), "go")).await;
    assert_eq!(status, 200, "{api:?} {flags}: {raw}");
    decode(api, &raw)
}

#[tokio::test]
async fn text_written_calls_xml_and_hermes() {
    let server = ScriptedModelServer::start().unwrap();
    server.add_script("q", quirk_script());
    for api in APIS {
        let r = quirk(&server, api, "xml_calls").await;
        assert!(r.calls.is_empty(), "{api:?}");
        assert_eq!(r.finish, finish_of(api, "stop"), "{api:?}");
        assert_eq!(
            r.text,
            "Editing.\n\n<tool_call>\n<function=edit_file>\n<parameter=count>\n2\n</parameter>\n\
             <parameter=new>\ny\n</parameter>\n<parameter=old>\nprint(\"hi\")\n\tx = 1\n</parameter>\n\
             <parameter=path>\na.py\n</parameter>\n</function>\n</tool_call>\n\
             <tool_call>\n<function=run>\n<parameter=command>\necho \"done\" && ls\n</parameter>\n</function>\n</tool_call>",
            "{api:?}"
        );

        let r = quirk(&server, api, "hermes_calls").await;
        assert!(r.calls.is_empty(), "{api:?}");
        assert_eq!(r.finish, finish_of(api, "stop"), "{api:?}");
        let calls: Vec<Value> = r
            .text
            .split("<tool_call>\n")
            .skip(1)
            .map(|c| serde_json::from_str(c.split("\n</tool_call>").next().unwrap()).unwrap())
            .collect();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0]["name"], "edit_file");
        assert_eq!(
            calls[0]["arguments"],
            serde_json::from_str::<Value>(EDIT_ARGS).unwrap()
        );
        assert_eq!(calls[1]["arguments"]["command"], "echo \"done\" && ls");
        assert!(r
            .text
            .starts_with("Editing.\n\n<tool_call>\n{\"name\": \"edit_file\", \"arguments\": {"));

        // Streamed in small pieces, a text-written call still reassembles.
        let r2 = quirk(&server, api, "hermes_calls+split_args").await;
        assert_eq!(r2.text, r.text);
    }
}

#[tokio::test]
async fn split_args_streams_arguments_in_small_pieces() {
    let server = ScriptedModelServer::start().unwrap();
    server.add_script("q", quirk_script());
    for api in APIS {
        let plain = quirk(&server, api, "").await;
        assert_eq!(plain.calls[0].args, EDIT_ARGS, "{api:?}");
        assert_eq!(plain.calls[0].pieces.len(), 2, "{api:?}: halves by default");

        let r = quirk(&server, api, "split_args").await;
        assert_eq!(r.calls[0].args, EDIT_ARGS, "{api:?}");
        assert_eq!(r.calls[1].args, RUN_ARGS, "{api:?}");
        let pieces = &r.calls[0].pieces;
        assert!(pieces.len() >= EDIT_ARGS.len() / 7, "{api:?}: {pieces:?}");
        assert!(
            pieces.iter().all(|p| (1..=7).contains(&p.len())),
            "{pieces:?}"
        );
        assert!(
            pieces.iter().any(|p| p.ends_with('\\')),
            "a piece ends inside an escape: {pieces:?}"
        );
        assert!(
            pieces.iter().filter(|p| p.contains('"')).count() > 3,
            "pieces split strings: {pieces:?}"
        );
        assert_eq!(r.finish, finish_of(api, "calls"));
    }
}

#[tokio::test]
async fn no_ids_and_index_reuse() {
    let server = ScriptedModelServer::start().unwrap();
    server.add_script("q", quirk_script());
    for api in APIS {
        let r = quirk(&server, api, "no_ids").await;
        for c in &r.calls {
            match api {
                Api::Chat | Api::Responses => assert_eq!(c.id, None, "{api:?}: no id key"),
                Api::Anthropic => assert_eq!(c.id.as_deref(), Some(""), "empty id"),
            }
        }
        assert_eq!(r.calls[1].args, RUN_ARGS);

        let r = quirk(&server, api, "index_reuse").await;
        let indices: Vec<u64> = r.calls.iter().map(|c| c.index).collect();
        match api {
            Api::Chat => assert_eq!(indices, [0, 0], "Ollama reuses index 0"),
            Api::Anthropic => assert_eq!(indices, [1, 2], "after the text block"),
            Api::Responses => assert_eq!(indices, [1, 2], "after the message item"),
        }
        assert_ne!(r.calls[0].id, r.calls[1].id, "{api:?}: distinct ids");
        assert_eq!(r.calls[0].args, EDIT_ARGS);
        assert_eq!(r.calls[1].args, RUN_ARGS);

        let r = quirk(&server, api, "index_reuse+no_ids+split_args").await;
        assert_eq!(r.calls.len(), 2, "{api:?}");
        assert_eq!(r.calls[0].args, EDIT_ARGS);
        assert_eq!(r.calls[1].args, RUN_ARGS);
    }
    // The raw bytes: Chat under no_ids has no "id" key in any tool_calls entry.
    let (_, raw) = post(&server, Api::Chat, &request(Api::Chat, "q+no_ids", "go")).await;
    assert!(!raw.contains("\"id\":\"call_"), "{raw}");
}

#[tokio::test]
async fn bad_json_and_length_cut() {
    let server = ScriptedModelServer::start().unwrap();
    server.add_script("q", quirk_script());
    for api in APIS {
        let r = quirk(&server, api, "bad_json").await;
        let broken = &r.calls[0].args;
        assert!(serde_json::from_str::<Value>(broken).is_err(), "{broken}");
        assert_eq!(*broken, format!("{},", &EDIT_ARGS[..EDIT_ARGS.len() - 1]));
        // Repairable: drop the trailing comma, close the brace.
        let repaired = format!("{}}}", broken.trim_end_matches(','));
        assert_eq!(repaired, EDIT_ARGS);
        assert_eq!(r.finish, finish_of(api, "calls"), "{api:?}");

        let r = quirk(&server, api, "length_cut").await;
        assert_eq!(r.finish, finish_of(api, "cut"), "{api:?}");
        assert_eq!(r.calls[0].args, EDIT_ARGS, "only the last call is cut");
        let cut = &r.calls[1].args;
        assert!(RUN_ARGS.starts_with(cut.as_str()) && cut.len() < RUN_ARGS.len());
        assert!(!cut.is_empty());
        assert!(serde_json::from_str::<Value>(cut).is_err(), "{cut}");

        let r = quirk(&server, api, "xml_calls+length_cut").await;
        assert!(r.calls.is_empty());
        assert_eq!(r.finish, finish_of(api, "cut"), "{api:?}");
        assert!(r.text.contains("<function=edit_file>") && r.text.contains("<function=run>"));
        assert!(!r.text.ends_with("</tool_call>"), "{}", r.text);

        let r = quirk(&server, api, "split_args+no_ids+bad_json").await;
        assert!(r.calls[0].pieces.len() > 5);
        assert!(r.calls[0].args.ends_with(','));
    }
    // Responses: the cut call is `incomplete`, with no arguments.done event.
    let (_, raw) = post(
        &server,
        Api::Responses,
        &request(Api::Responses, "q+length_cut", "go"),
    )
    .await;
    let frames = data_frames(&raw);
    let done_args = frames
        .iter()
        .filter(|(n, _)| n == "response.function_call_arguments.done")
        .count();
    assert_eq!(done_args, 1, "only the complete call is done");
    let last = &frames.last().unwrap().1["response"];
    assert_eq!(last["status"], "incomplete");
    assert_eq!(last["output"][2]["status"], "incomplete");
}

#[tokio::test]
async fn non_streaming_replies_carry_scripts_and_quirks() {
    let server = ScriptedModelServer::start().unwrap();
    server.add_script("q", quirk_script());
    let mut body = request(Api::Chat, "q+no_ids+index_reuse+length_cut", "go");
    body["stream"] = json!(false);
    let (_, raw) = post(&server, Api::Chat, &body).await;
    let v: Value = serde_json::from_str(&raw).unwrap();
    let choice = &v["choices"][0];
    assert_eq!(choice["finish_reason"], "length");
    assert_eq!(choice["message"]["content"], "Editing.");
    let calls = choice["message"]["tool_calls"].as_array().unwrap();
    assert!(calls
        .iter()
        .all(|c| c.get("id").is_none() && c["index"] == 0));
    assert_eq!(calls[0]["function"]["arguments"], EDIT_ARGS);

    let mut body = request(Api::Anthropic, "q+bad_json", "go");
    body["stream"] = json!(false);
    let (_, raw) = post(&server, Api::Anthropic, &body).await;
    let v: Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(v["stop_reason"], "tool_use");
    assert!(v["content"][1]["input"].as_str().unwrap().ends_with(','));

    let mut body = request(Api::Responses, "q+length_cut", "go");
    body["stream"] = json!(false);
    let (_, raw) = post(&server, Api::Responses, &body).await;
    let v: Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(v["status"], "incomplete");
    assert_eq!(v["incomplete_details"]["reason"], "max_output_tokens");
}

fn big_request(api: Api, model: &str, bytes: usize) -> Value {
    request(api, model, &"x".repeat(bytes))
}

#[tokio::test]
async fn the_context_window_is_enforced_with_each_servers_error() {
    let server = ScriptedModelServer::start().unwrap();
    server.add_script("q", quirk_script());
    for api in APIS {
        // The estimate of the small request: system text + tool schema.
        let base = request(api, "m", "");
        let tool_bytes = base["tools"][0].to_string().len();
        let fixed = "You are a coding agent.".len() + tool_bytes;
        for (model, window) in [
            ("scripted-model+tiny_context", 2048u64),
            ("q+ctx_1000", 1000),
            ("scripted-model", 32_768),
        ] {
            let fits = window as usize * 4 - fixed;
            let (status, raw) = post(&server, api, &big_request(api, model, fits)).await;
            assert_eq!(status, 200, "{api:?} {model} at the window: {raw}");
            let (status, raw) = post(&server, api, &big_request(api, model, fits + 1)).await;
            assert_eq!(status, 400, "{api:?} {model} over the window");
            let err: Value = serde_json::from_str(&raw).unwrap();
            let n = window + 1;
            match api {
                Api::Chat | Api::Responses => assert_eq!(
                    err,
                    json!({"error": {"code": 400,
                        "message": "the request exceeds the available context size, try increasing it",
                        "type": "exceed_context_size_error", "n_prompt_tokens": n, "n_ctx": window}})
                ),
                Api::Anthropic => assert_eq!(
                    err,
                    json!({"type": "error", "error": {"type": "invalid_request_error",
                        "message": format!("prompt is too long: {n} tokens > {window} maximum")}})
                ),
            }
        }
    }
    // Tool results count too.
    let mut body = request(Api::Chat, "q+tiny_context", "go");
    let (_, raw) = post(&server, Api::Chat, &body).await;
    let r = decode(Api::Chat, &raw);
    append(Api::Chat, &mut body, &r, &["ok", &"y".repeat(9000)]);
    let (status, _) = post(&server, Api::Chat, &body).await;
    assert_eq!(status, 400);
}

async fn get_json(url: String) -> Value {
    client()
        .get(url)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[tokio::test]
async fn context_window_endpoints() {
    let server = ScriptedModelServer::start().unwrap();
    server.add_script("fix", edit_script());
    let base = server.base_url();
    for (query, n_ctx) in [
        ("", 32_768),
        ("?model=scripted-model", 32_768),
        ("?model=fix%2Btiny_context", 2048),
        ("?model=fix+ctx_4096", 4096),
        ("?other=1&model=m%2Bslow%2Bctx_8192", 8192),
    ] {
        let props = get_json(format!("{base}/props{query}")).await;
        assert_eq!(
            props["default_generation_settings"]["n_ctx"], n_ctx,
            "{query}"
        );
        assert_eq!(props["total_slots"], 1);
    }
    let models = get_json(format!("{base}/v1/models")).await;
    let data = models["data"].as_array().unwrap();
    let ids: Vec<&str> = data.iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["scripted-model", "fix"]);
    assert!(data.iter().all(|m| m["max_model_len"] == 32_768));

    for (model, num_ctx) in [
        ("fix", 32_768),
        ("fix+ctx_16384", 16_384),
        ("m+tiny_context", 2048),
    ] {
        let show: Value = client()
            .post(format!("{base}/api/show"))
            .json(&json!({"model": model}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let params = show["parameters"].as_str().unwrap();
        let line = params.lines().find(|l| l.starts_with("num_ctx")).unwrap();
        let value: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        assert_eq!(value, num_ctx, "{model}: {params}");
        assert_eq!(show["model_info"]["general.architecture"], "llama");
        assert_eq!(show["model_info"]["llama.context_length"], 131_072);
    }
}

#[test]
fn the_binary_serves_scripts_from_files() {
    use std::io::{BufRead, BufReader, Read, Write};
    let dir = std::env::temp_dir().join(format!("scripted-model-bin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("s.json");
    std::fs::write(&file, r#"{"steps": [{"say": "from the file"}]}"#).unwrap();
    let bad = dir.join("bad.json");
    std::fs::write(&bad, r#"{"steps": [{"says": "typo"}]}"#).unwrap();
    let bin = env!("CARGO_BIN_EXE_coderig-scripted-model");

    let out = std::process::Command::new(bin)
        .arg("--script")
        .arg(format!("s={}", bad.display()))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a valid script"));

    let mut child = std::process::Command::new(bin)
        .arg(format!("--script=s={}", file.display()))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on http://")
        .unwrap()
        .to_string();
    let body = json!({"model": "s", "messages": [{"role": "user", "content": "hi"}]}).to_string();
    let mut conn = std::net::TcpStream::connect(&addr).unwrap();
    write!(
        conn,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut got = String::new();
    conn.read_to_string(&mut got).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(got.contains("\"content\":\"from the file\""), "{got}");
}
