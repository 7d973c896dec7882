use super::*;
use std::time::{Duration, UNIX_EPOCH};

fn text(t: &str) -> AgentEvent {
    AgentEvent::TextDelta { text: t.into() }
}

fn reasoning(t: &str) -> AgentEvent {
    AgentEvent::ReasoningDelta { text: t.into() }
}

fn finished(reason: Option<&str>) -> AgentEvent {
    AgentEvent::Finished {
        stop_reason: reason.map(String::from),
        final_text: None,
        num_turns: None,
    }
}

fn feed_all(payloads: &[&str]) -> (ChatStream, Vec<AgentEvent>) {
    let mut s = ChatStream::new();
    let mut out = Vec::new();
    for p in payloads {
        out.extend(s.feed(p).unwrap());
    }
    (s, out)
}

fn delta(d: Value) -> String {
    json!({"choices": [{"index": 0, "delta": d, "finish_reason": null}]}).to_string()
}

#[test]
fn deltas_map_to_events() {
    let cases: Vec<(&str, Value, Vec<AgentEvent>)> = vec![
        ("content", json!({"content": "hi"}), vec![text("hi")]),
        ("empty content", json!({"content": ""}), vec![]),
        ("null content", json!({"content": null}), vec![]),
        ("role only", json!({"role": "assistant"}), vec![]),
        (
            "llama.cpp reasoning",
            json!({"reasoning_content": "think"}),
            vec![reasoning("think")],
        ),
        (
            "vLLM/Ollama reasoning",
            json!({"reasoning": "think"}),
            vec![reasoning("think")],
        ),
        (
            "both names: one delta",
            json!({"reasoning_content": "a", "reasoning": "a"}),
            vec![reasoning("a")],
        ),
        (
            "reasoning then text",
            json!({"reasoning": "r", "content": "t"}),
            vec![reasoning("r"), text("t")],
        ),
    ];
    for (name, d, want) in cases {
        let (_, got) = feed_all(&[&delta(d)]);
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn done_finishes_with_the_finish_reason() {
    let last = json!({"choices": [{"delta": {}, "finish_reason": "length"}]}).to_string();
    let (s, got) = feed_all(&[&delta(json!({"content": "a"})), &last, "[DONE]"]);
    assert_eq!(got, vec![text("a"), finished(Some("length"))]);
    assert!(s.is_done());
    assert_eq!(s.end(), Ok(()));
    assert_eq!(s.finish_reason(), Some("length"));
    // after [DONE] nothing counts
    let mut s = s;
    assert_eq!(s.feed(&delta(json!({"content": "late"}))), Ok(vec![]));
}

#[test]
fn a_stream_without_done_is_a_protocol_error() {
    let (s, _) = feed_all(&[&delta(json!({"content": "a"}))]);
    let e = s.end().unwrap_err();
    assert_eq!(e.kind, AgentErrorKind::Protocol);
    assert_eq!(e.class, ErrorClass::Retry);
    assert_eq!(e.message, "stream ended without [DONE]");
}

#[test]
fn usage_is_uncached_input_and_increments() {
    let usage = json!({"choices": [], "usage": {
        "prompt_tokens": 200, "completion_tokens": 20, "total_tokens": 220,
        "prompt_tokens_details": {"cached_tokens": 50},
        "completion_tokens_details": {"reasoning_tokens": 7}
    }})
    .to_string();
    let (_, got) = feed_all(&[&usage]);
    let want = Usage {
        input: 150,
        output: 20,
        cache_read: 50,
        reasoning: 7,
        ..Usage::default()
    };
    assert_eq!(got, vec![AgentEvent::Usage(want)]);

    // vLLM continuous usage: cumulative reports become increments that sum to the last.
    let u = |p: u64, c: u64| {
        json!({"choices": [], "usage": {"prompt_tokens": p, "completion_tokens": c}}).to_string()
    };
    let (_, got) = feed_all(&[&u(10, 1), &u(10, 2), &u(10, 2), &u(10, 5)]);
    let mut sum = Usage::default();
    for e in &got {
        match e {
            AgentEvent::Usage(x) => sum.add(x),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(got.len(), 3, "an unchanged report emits nothing");
    assert_eq!((sum.input, sum.output), (10, 5));

    let cost =
        json!({"usage": {"prompt_tokens": 1, "completion_tokens": 1, "cost": 0.25}}).to_string();
    let (_, got) = feed_all(&[&cost]);
    assert!(matches!(&got[..], [AgentEvent::Usage(u)] if u.cost_usd == Some(0.25)));
}

#[test]
fn timings_give_the_generation_time() {
    let last = json!({"choices": [{"delta": {}, "finish_reason": "stop"}],
        "timings": {"prompt_n": 10, "prompt_ms": 12.5, "predicted_n": 20, "predicted_ms": 345.6}})
    .to_string();
    let (s, _) = feed_all(&[&last]);
    assert_eq!(s.generation_ms(), Some(346));
    let (s, _) = feed_all(&[&delta(json!({"content": "x"}))]);
    assert_eq!(s.generation_ms(), None);
}

#[test]
fn tool_call_pieces_join_by_index() {
    let piece = |v: Value| delta(json!({"tool_calls": [v]}));
    let (_, got) = feed_all(&[
        &piece(json!({"index": 0, "id": "call_a", "type": "function",
            "function": {"name": "write_file", "arguments": ""}})),
        &piece(
            json!({"index": 1, "id": "call_b", "function": {"name": "bash", "arguments": "{\"cmd\":"}}),
        ),
        &piece(json!({"index": 0, "function": {"arguments": "{\"path\":\"a\","}})),
        &piece(json!({"index": 0, "function": {"arguments": "\"content\":\"hi\"}"}})),
        &piece(json!({"index": 1, "function": {"arguments": "\"ls\"}"}})),
        &json!({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}).to_string(),
        "[DONE]",
    ]);
    assert_eq!(
        got,
        vec![
            AgentEvent::ToolCall {
                id: "call_a".into(),
                name: "write_file".into(),
                input: json!({"path": "a", "content": "hi"}),
            },
            AgentEvent::ToolCall {
                id: "call_b".into(),
                name: "bash".into(),
                input: json!({"cmd": "ls"}),
            },
            finished(Some("tool_calls")),
        ]
    );
}

#[test]
fn tool_calls_without_finish_reason_flush_at_done_and_bad_arguments_stay_text() {
    let (_, got) = feed_all(&[
        &delta(json!({"tool_calls": [{"function": {"name": "f", "arguments": "{oops"}}]})),
        &delta(json!({"tool_calls": [{"index": 1, "function": {"name": "g"}}]})),
        "[DONE]",
    ]);
    assert_eq!(
        got,
        vec![
            AgentEvent::ToolCall {
                id: "call_0".into(),
                name: "f".into(),
                input: json!("{oops"),
            },
            AgentEvent::ToolCall {
                id: "call_1".into(),
                name: "g".into(),
                input: json!({}),
            },
            finished(None),
        ]
    );
}

#[test]
fn error_frames_are_classified_provider_errors() {
    let cases = [
        // llama.cpp: numeric code
        (
            json!({"error": {"code": 500, "message": "oops", "type": "server_error"}}),
            ErrorClass::Retry,
            Some(500),
        ),
        // vLLM
        (
            json!({"error": {"message": "bad", "type": "BadRequestError", "param": null, "code": 400}}),
            ErrorClass::Fatal,
            Some(400),
        ),
        (
            json!({"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}}),
            ErrorClass::Retry,
            None,
        ),
        (
            json!({"error": "context length exceeded"}),
            ErrorClass::Fallback,
            None,
        ),
    ];
    for (frame, class, status) in cases {
        let mut s = ChatStream::new();
        let e = s.feed(&frame.to_string()).unwrap_err();
        assert_eq!(e.kind, AgentErrorKind::Provider, "{frame}");
        assert_eq!(e.class, class, "{frame}");
        assert_eq!(e.http_status, status, "{frame}");
        assert!(e.message.starts_with("stream error"), "{}", e.message);
    }
    let mut s = ChatStream::new();
    assert_eq!(s.feed(r#"{"error": null, "choices": []}"#), Ok(vec![]));
}

#[test]
fn a_payload_that_is_not_json_is_a_protocol_error() {
    let e = ChatStream::new().feed("{not json").unwrap_err();
    assert_eq!(e.kind, AgentErrorKind::Protocol);
}

#[test]
fn status_errors_table() {
    let now = UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    let body = |t: &str, code: Value, m: &str| {
        json!({"error": {"message": m, "type": t, "code": code}}).to_string()
    };
    // (status, body, Retry-After, class, retry_after_ms)
    type Case<'a> = (u16, String, Option<&'a str>, ErrorClass, Option<u64>);
    let cases: Vec<Case> = vec![
        (
            429,
            body("rate_limit_error", json!(null), "slow down"),
            Some("1"),
            ErrorClass::Retry,
            Some(1000),
        ),
        (
            503,
            body("server_error", json!(null), "busy"),
            Some("2.5"),
            ErrorClass::Retry,
            Some(2500),
        ),
        (
            500,
            body("server_error", json!(null), "boom"),
            None,
            ErrorClass::Retry,
            None,
        ),
        (
            400,
            body("invalid_request_error", json!(null), "bad field"),
            None,
            ErrorClass::Fatal,
            None,
        ),
        (
            401,
            body(
                "invalid_request_error",
                json!("invalid_api_key"),
                "Incorrect API key",
            ),
            None,
            ErrorClass::Fatal,
            None,
        ),
        (
            404,
            body(
                "invalid_request_error",
                json!("model_not_found"),
                "The model `x` does not exist",
            ),
            None,
            ErrorClass::Fallback,
            None,
        ),
        (
            429,
            body(
                "insufficient_quota",
                json!("insufficient_quota"),
                "You exceeded your current quota",
            ),
            None,
            ErrorClass::Stop,
            None,
        ),
        (
            502,
            "<html>bad gateway</html>".into(),
            None,
            ErrorClass::Retry,
            None,
        ),
        (400, String::new(), Some("soon"), ErrorClass::Fatal, None),
        (
            429,
            body("x", json!(null), "wait"),
            Some("Sun, 09 Sep 2001 01:46:50 GMT"),
            ErrorClass::Retry,
            Some(10_000),
        ),
    ];
    for (status, body, ra, class, ms) in cases {
        let e = status_error(status, &body, ra, now);
        assert_eq!(e.kind, AgentErrorKind::Provider, "{status} {body}");
        assert_eq!(e.class, class, "{status} {body}");
        assert_eq!(e.http_status, Some(status));
        assert_eq!(e.retry_after_ms, ms, "{status} {ra:?}");
        assert!(
            e.message.contains(&format!("HTTP {status}")),
            "{}",
            e.message
        );
    }
    let e = status_error(401, &body("t", json!(null), "Incorrect API key"), None, now);
    assert_eq!(e.message, "provider error (HTTP 401): Incorrect API key");
}

#[test]
fn models_list_and_bad_bodies() {
    let body = r#"{"object":"list","data":[{"id":"a","owned_by":"llamacpp"},{"id":"b"},{"x":1}]}"#;
    assert_eq!(parse_models(body), Ok(vec!["a".into(), "b".into()]));
    for bad in ["", "[]", r#"{"data": 1}"#, "<html>"] {
        let e = parse_models(bad).unwrap_err();
        assert_eq!(e.kind, AgentErrorKind::Protocol, "{bad}");
    }
}

#[test]
fn request_body_shape_and_extra_fields() {
    let mut extra = Map::new();
    extra.insert("temperature".into(), json!(0));
    extra.insert(
        "stream_options".into(),
        json!({"include_usage": true, "continuous_usage_stats": true}),
    );
    let b = request_body("m", Some("sys"), "hi", &extra);
    assert_eq!(
        b,
        json!({
            "model": "m",
            "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}],
            "stream": true,
            "stream_options": {"include_usage": true, "continuous_usage_stats": true},
            "temperature": 0,
        })
    );
    let b = request_body("m", None, "hi", &Map::new());
    assert_eq!(b["messages"], json!([{"role": "user", "content": "hi"}]));
    assert_eq!(b["stream_options"], json!({"include_usage": true}));
}

#[test]
fn preview_is_bounded_on_char_boundaries() {
    let long = "é".repeat(500);
    let p = preview(&long);
    assert_eq!(p.chars().count(), 201);
    assert!(p.ends_with('…'));
}
