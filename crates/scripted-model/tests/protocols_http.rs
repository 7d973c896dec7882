//! Responses and Anthropic Messages over real HTTP on loopback.

use std::time::Duration;

use coderig_scripted_model::ScriptedModelServer;
use serde_json::{json, Value};

async fn post(url: String, body: Value) -> (u16, reqwest::header::HeaderMap, String) {
    // Feature unification may build reqwest without a crypto provider.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let resp = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
        .post(url)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    (status, headers, resp.text().await.unwrap())
}

fn events(body: &str) -> Vec<(String, Value)> {
    body.split("\n\n")
        .filter(|f| !f.trim().is_empty())
        .map(|f| {
            let mut lines = f.lines();
            let name = lines
                .next()
                .unwrap()
                .strip_prefix("event: ")
                .unwrap()
                .to_string();
            let data = lines.next().unwrap().strip_prefix("data: ").unwrap();
            (name, serde_json::from_str(data).unwrap())
        })
        .collect()
}

#[tokio::test]
async fn responses_apply_patch_then_done() {
    let server = ScriptedModelServer::start().unwrap();
    let url = format!("{}/v1/responses", server.base_url());
    let mut body = json!({
        "model": "scripted-model", "stream": true,
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Create hello.txt containing hi"}]}],
        "tools": [{"type": "function", "name": "exec_command", "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}},
                  {"type": "custom", "name": "apply_patch"}]
    });
    let (status, headers, text) = post(url.clone(), body.clone()).await;
    assert_eq!(status, 200);
    assert_eq!(headers["content-type"], "text/event-stream");
    let ev = events(&text);
    let done = &ev.last().unwrap().1;
    assert_eq!(done["type"], "response.completed");
    let item = &done["response"]["output"][0];
    assert_eq!(item["name"], "apply_patch");
    assert_eq!(
        item["input"],
        "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n"
    );

    body["input"].as_array_mut().unwrap().push(
        json!({"type": "custom_tool_call_output", "call_id": item["call_id"], "output": "ok"}),
    );
    let (_, _, text) = post(url.clone(), body).await;
    let ev = events(&text);
    let text: String = ev
        .iter()
        .filter(|(n, _)| n == "response.output_text.delta")
        .filter_map(|(_, d)| d["delta"].as_str())
        .collect();
    assert_eq!(text, "done");

    let (status, headers, err) = post(
        url,
        json!({"model": "scripted-model+status_429", "stream": true}),
    )
    .await;
    assert_eq!(status, 429);
    assert_eq!(headers["retry-after"], "1");
    assert_eq!(
        serde_json::from_str::<Value>(&err).unwrap()["error"]["type"],
        "rate_limit_exceeded"
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn anthropic_bash_then_done_and_errors_in_anthropic_shape() {
    let server = ScriptedModelServer::start().unwrap();
    let url = format!("{}/v1/messages?beta=true", server.base_url());
    let mut body = json!({
        "model": "scripted-model", "stream": true, "max_tokens": 100,
        "system": [{"type": "text", "text": "Primary working directory: /w"}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Create hello.txt containing hi using the shell"}]}],
        "tools": [{"name": "Bash", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}, "description": {"type": "string"}}, "required": ["command"]}},
                  {"name": "Write", "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}}}}]
    });
    let (status, _, text) = post(url.clone(), body.clone()).await;
    assert_eq!(status, 200);
    let ev = events(&text);
    assert_eq!(ev[1].1["content_block"]["name"], "Bash");
    let input: String = ev
        .iter()
        .filter_map(|(_, d)| d.pointer("/delta/partial_json").and_then(Value::as_str))
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&input).unwrap()["command"],
        "echo hi > hello.txt"
    );
    assert_eq!(ev.last().unwrap().0, "message_stop");

    body["messages"].as_array_mut().unwrap().push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]}));
    let (_, _, text) = post(url.clone(), body).await;
    let said: String = events(&text)
        .iter()
        .filter_map(|(_, d)| d.pointer("/delta/text").and_then(Value::as_str))
        .collect();
    assert_eq!(said, "done");

    let (status, headers, err) = post(
        url,
        json!({"model": "scripted-model+status_503", "messages": []}),
    )
    .await;
    assert_eq!(status, 503);
    assert_eq!(headers["retry-after"], "1");
    let err: Value = serde_json::from_str(&err).unwrap();
    assert_eq!(err["type"], "error");
    assert_eq!(err["error"]["type"], "api_error");
    let sent = server.requests();
    assert_eq!(sent[0].query.as_deref(), Some("beta=true"));
    assert_eq!(sent[0].path, "/v1/messages");
}
