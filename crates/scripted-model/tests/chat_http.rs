//! The server over real HTTP on loopback: Chat Completions, models, faults,
//! recording and keep-alive.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use coderig_scripted_model::ScriptedModelServer;
use serde_json::{json, Value};

fn client() -> reqwest::Client {
    // Feature unification may build reqwest without a crypto provider.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

fn data_lines(body: &str) -> Vec<String> {
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(str::to_string)
        .collect()
}

fn chunks(body: &str) -> Vec<Value> {
    data_lines(body)
        .iter()
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

fn write_request(model: &str) -> Value {
    json!({
        "model": model,
        "stream": true,
        "stream_options": {"include_usage": true},
        "messages": [
            {"role": "system", "content": "Working directory: /tmp/w"},
            {"role": "user", "content": "Create hello.txt containing hi"}
        ],
        "tools": [
            {"type": "function", "function": {"name": "bash", "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}},
            {"type": "function", "function": {"name": "write", "parameters": {"type": "object", "properties": {"filePath": {"type": "string"}, "content": {"type": "string"}}, "required": ["filePath", "content"]}}}
        ]
    })
}

async fn post(
    server: &ScriptedModelServer,
    body: &Value,
) -> (u16, reqwest::header::HeaderMap, String) {
    let resp = client()
        .post(format!("{}/v1/chat/completions?x=1", server.base_url()))
        .header("authorization", "Bearer dummy")
        .json(body)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    (status, headers, resp.text().await.unwrap())
}

#[tokio::test]
async fn tool_call_then_final_text_and_recording() {
    let server = ScriptedModelServer::start().unwrap();
    let (status, headers, body) = post(&server, &write_request("scripted-model")).await;
    assert_eq!(status, 200);
    assert_eq!(headers["content-type"], "text/event-stream");
    assert_eq!(data_lines(&body).last().unwrap(), "[DONE]");
    let first = chunks(&body);
    let call = &first[0]["choices"][0]["delta"]["tool_calls"][0];
    assert_eq!(call["function"]["name"], "write");
    let args: String = first
        .iter()
        .filter_map(|c| c.pointer("/choices/0/delta/tool_calls/0/function/arguments"))
        .filter_map(Value::as_str)
        .collect();
    let args: Value = serde_json::from_str(&args).unwrap();
    assert_eq!(
        args,
        json!({"filePath": "/tmp/w/hello.txt", "content": "hi\n"})
    );
    assert_eq!(first.last().unwrap()["usage"]["completion_tokens"], 20);

    let mut turn2 = write_request("scripted-model");
    turn2["messages"]
        .as_array_mut()
        .unwrap()
        .push(json!({"role": "tool", "tool_call_id": "c1", "content": "(no output)"}));
    let (_, _, body) = post(&server, &turn2).await;
    let text: String = chunks(&body)
        .iter()
        .filter_map(|c| c.pointer("/choices/0/delta/content"))
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(text, "done");

    let sent = server.requests();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0].method, "POST");
    assert_eq!(sent[0].path, "/v1/chat/completions");
    assert_eq!(sent[0].query.as_deref(), Some("x=1"));
    assert_eq!(sent[0].model.as_deref(), Some("scripted-model"));
    assert_eq!(sent[0].headers["authorization"], "Bearer dummy");
    assert_eq!(sent[1].body, turn2);
    server.shutdown();
}

#[tokio::test]
async fn status_flags_answer_json_errors_with_retry_after() {
    let server = ScriptedModelServer::start().unwrap();
    for (code, retry_after) in [(429, true), (503, true), (500, false), (401, false)] {
        let (status, headers, body) = post(
            &server,
            &write_request(&format!("scripted-model+status_{code}")),
        )
        .await;
        assert_eq!(status, code);
        assert_eq!(headers.get("retry-after").is_some(), retry_after, "{code}");
        let err: Value = serde_json::from_str(&body).unwrap();
        assert!(err["error"]["message"]
            .as_str()
            .unwrap()
            .contains(&code.to_string()));
    }
}

#[tokio::test]
async fn stream_faults_midstream_error_no_done_slow() {
    let server = ScriptedModelServer::start().unwrap();
    let plain = |model: &str| {
        json!({"model": model, "stream": true, "stream_options": {"include_usage": true},
               "messages": [{"role": "user", "content": "hello there"}]})
    };
    let (_, _, body) = post(&server, &plain("m+midstream_error")).await;
    let lines = data_lines(&body);
    assert_eq!(lines.len(), 2);
    assert!(lines[1].starts_with("{\"error\":"));

    let (_, _, body) = post(&server, &plain("m+no_done")).await;
    assert!(!body.contains("[DONE]"));
    assert!(body.contains("\"finish_reason\":\"stop\""));

    let started = Instant::now();
    let (_, _, body) = post(&server, &plain("m+slow+timings")).await;
    // done, finish, usage, [DONE]: three pauses of 50 ms.
    assert!(started.elapsed() >= Duration::from_millis(150));
    assert!(chunks(&body).last().unwrap().get("timings").is_some());
}

#[tokio::test]
async fn hang_sends_one_chunk_then_silence() {
    let server = ScriptedModelServer::start().unwrap();
    let mut resp = client()
        .post(format!("{}/v1/chat/completions", server.base_url()))
        .json(&json!({"model": "m+hang", "stream": true, "messages": []}))
        .send()
        .await
        .unwrap();
    let first = resp.chunk().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).starts_with("data: {"));
    let more = tokio::time::timeout(Duration::from_millis(300), resp.chunk()).await;
    assert!(more.is_err(), "the hang stream must stay silent");
    drop(resp);
    server.shutdown();
}

#[tokio::test]
async fn non_streaming_and_models_and_unknown_routes() {
    let server = ScriptedModelServer::start().unwrap();
    let resp: Value = client()
        .post(format!("{}/v1/chat/completions", server.base_url()))
        .json(&json!({"model": "m", "messages": [{"role": "user", "content": "Reply with: pong"}]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(resp["choices"][0]["message"]["content"], "pong");
    let models: Value = client()
        .get(format!("{}/v1/models", server.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(models["data"][0]["id"], "scripted-model");
    let resp = client()
        .post(format!("{}/v1/nope", server.base_url()))
        .body("not json")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 404);
    let bad = client()
        .post(format!("{}/v1/chat/completions", server.base_url()))
        .body("not json")
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status().as_u16(), 400);
    let sent = server.requests();
    assert_eq!(sent.len(), 4);
    assert_eq!(sent[2].body, json!("not json"));
    assert_eq!(sent[1].body, Value::Null);
}

/// Two requests on one raw TCP connection: the chunked stream must end with
/// the terminating chunk and leave the connection usable.
#[test]
fn keep_alive_serves_two_streams_on_one_connection() {
    let server = ScriptedModelServer::start().unwrap();
    let mut conn = TcpStream::connect(("127.0.0.1", server.port())).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let body =
        json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "hi"}]})
            .to_string();
    for _ in 0..2 {
        write!(
            conn,
            "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{}",
            body.len(),
            body
        )
        .unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while !got.ends_with(b"0\r\n\r\n") {
            let n = conn.read(&mut buf).unwrap();
            assert!(
                n > 0,
                "connection closed early: {}",
                String::from_utf8_lossy(&got)
            );
            got.extend_from_slice(&buf[..n]);
        }
        let text = String::from_utf8_lossy(&got);
        assert!(text.starts_with("HTTP/1.1 200"));
        assert!(text
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked"));
        assert!(text.contains("data: [DONE]"));
    }
    assert_eq!(server.requests().len(), 2);
}
