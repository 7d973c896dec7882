use super::*;
use crate::agent::native::wire::chat::tests::{conversation, decode, frag, prefixes, tools, Case};
use crate::agent::{AgentErrorKind, Usage};
use crate::model::ErrorClass;

fn run(frames: &[(Option<&str>, &str)]) -> Result<Vec<Piece>, AgentError> {
    decode(crate::agent::native::Api::Anthropic, frames)
}

const START: &str = r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":10,"cache_read_input_tokens":100,"output_tokens":1}}}"#;

fn start_usage() -> Piece {
    Piece::Usage(Usage {
        input: 25,
        output: 1,
        cache_read: 100,
        cache_write: 10,
        ..Usage::default()
    })
}

fn output(n: u64) -> Piece {
    Piece::Usage(Usage {
        output: n,
        ..Usage::default()
    })
}

#[test]
fn events_decode_to_pieces() {
    let model = || Piece::Model("claude-sonnet-4-5".into());
    let cases: Vec<Case> = vec![
        (
            "thinking, text and two calls with split arguments",
            vec![
                (Some("message_start"), START),
                (Some("ping"), r#"{"type": "ping"}"#),
                (
                    None,
                    r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#,
                ),
                (
                    None,
                    r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me"}}"#,
                ),
                (
                    None,
                    r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}}"#,
                ),
                (None, r#"{"type":"content_block_stop","index":0}"#),
                (
                    None,
                    r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}"#,
                ),
                (
                    None,
                    r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Reading."}}"#,
                ),
                (None, r#"{"type":"content_block_stop","index":1}"#),
                (
                    None,
                    r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"read_file","input":{}}}"#,
                ),
                (
                    None,
                    r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}"#,
                ),
                (
                    None,
                    r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"path\": \"a"}}"#,
                ),
                (
                    None,
                    r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":".rs\"}"}}"#,
                ),
                (None, r#"{"type":"content_block_stop","index":2}"#),
                (
                    None,
                    r#"{"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_2","name":"grep","input":{}}}"#,
                ),
                (
                    None,
                    r#"{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{\"pattern\":\"x\"}"}}"#,
                ),
                (
                    None,
                    r#"{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}"#,
                ),
                (Some("message_stop"), r#"{"type":"message_stop"}"#),
            ],
            vec![
                model(),
                start_usage(),
                Piece::Reasoning("Let me".into()),
                Piece::Text("Reading.".into()),
                frag(Some(2), Some("toolu_1"), Some("read_file"), ""),
                frag(Some(2), None, None, "{\"path\": \"a"),
                frag(Some(2), None, None, ".rs\"}"),
                frag(Some(3), Some("toolu_2"), Some("grep"), ""),
                frag(Some(3), None, None, "{\"pattern\":\"x\"}"),
                output(88),
                Piece::Finish(FinishReason::ToolCalls),
            ],
        ),
        (
            "a start with the whole input; its deltas are dropped",
            vec![
                (
                    None,
                    r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"run","input":{"command":"ls"}}}"#,
                ),
                (
                    None,
                    r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"command\":\"ls\"}"}}"#,
                ),
                (
                    None,
                    r#"{"type":"content_block_delta","delta":{"type":"input_json_delta","partial_json":"{}"}}"#,
                ),
                (None, r#"{"type":"message_stop"}"#),
            ],
            vec![
                frag(Some(0), Some("t"), Some("run"), "{\"command\":\"ls\"}"),
                frag(None, None, None, "{}"),
                Piece::Finish(FinishReason::ToolCalls),
            ],
        ),
        (
            "max_tokens is Length; usage never goes down",
            vec![
                (None, START),
                (
                    None,
                    r#"{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"input_tokens":0,"output_tokens":50}}"#,
                ),
                (None, r#"{"type":"message_stop"}"#),
            ],
            vec![
                model(),
                start_usage(),
                output(49),
                Piece::Finish(FinishReason::Length),
            ],
        ),
        (
            "end_turn and stop_sequence are Stop",
            vec![
                (
                    None,
                    r#"{"type":"message_delta","delta":{"stop_reason":"stop_sequence"}}"#,
                ),
                (None, r#"{"type":"message_stop"}"#),
            ],
            vec![Piece::Finish(FinishReason::Stop)],
        ),
        (
            "other stop reasons",
            vec![
                (
                    None,
                    r#"{"type":"message_delta","delta":{"stop_reason":"refusal"}}"#,
                ),
                (None, r#"{"type":"message_stop"}"#),
            ],
            vec![Piece::Finish(FinishReason::Other("refusal".into()))],
        ),
        (
            "the event name stands in for a missing type; no stop_reason: inferred",
            vec![
                (
                    Some("content_block_delta"),
                    r#"{"index":0,"delta":{"type":"text_delta","text":"hi"}}"#,
                ),
                (Some("message_stop"), "{}"),
                (None, "garbage after the end"),
            ],
            vec![Piece::Text("hi".into()), Piece::Finish(FinishReason::Stop)],
        ),
        (
            "a proxy's [DONE] ends the stream",
            vec![
                (
                    None,
                    r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}"#,
                ),
                (None, "[DONE]"),
            ],
            vec![Piece::Text("x".into()), Piece::Finish(FinishReason::Stop)],
        ),
        (
            "odd shapes are skipped, not fatal",
            vec![
                (None, r#"{"type":"message_start","message":5}"#),
                (
                    None,
                    r#"{"type":"content_block_start","index":"x","content_block":null}"#,
                ),
                (
                    None,
                    r#"{"type":"content_block_delta","delta":{"type":"text_delta","text":7}}"#,
                ),
                (None, r#"{"type":"message_delta","delta":null,"usage":[1]}"#),
                (None, r#"{"type":5}"#),
                (None, r#"{"type":"some_future_event"}"#),
            ],
            vec![],
        ),
    ];
    for (name, frames, want) in cases {
        assert_eq!(run(&frames).unwrap(), want, "{name}");
        // Every cut of every frame decodes or errs; none panics.
        for f in &frames {
            for prefix in prefixes(f.1) {
                let mut d = AnthropicDecoder::default();
                let _ = d.feed(None, prefix);
                let _ = d.feed(Some("message_stop"), prefix);
                let _ = whole(prefix);
            }
        }
    }
}

#[test]
fn error_events_and_garbage_are_errors() {
    let cases: Vec<(&str, AgentErrorKind, ErrorClass)> = vec![
        (
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            AgentErrorKind::Provider,
            ErrorClass::Retry,
        ),
        (
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your limit"}}"#,
            AgentErrorKind::Provider,
            ErrorClass::Retry,
        ),
        (
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 200001 tokens > 200000 maximum"}}"#,
            AgentErrorKind::Provider,
            ErrorClass::Fallback,
        ),
        (
            r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
            AgentErrorKind::Provider,
            ErrorClass::Fatal,
        ),
        // Anthropic's internal server error, mid-stream: retry, as its 500 is.
        (
            r#"{"type":"error","error":{"type":"api_error","message":"Internal server error"}}"#,
            AgentErrorKind::Provider,
            ErrorClass::Retry,
        ),
        (
            r#"{"type":"error","error":{"type":"api_error","message":"scripted midstream error"}}"#,
            AgentErrorKind::Provider,
            ErrorClass::Retry,
        ),
        (
            r#"{"type":"error","error":{"type":"billing_error","message":"no"}}"#,
            AgentErrorKind::Provider,
            ErrorClass::Stop,
        ),
        (
            r#"{"type":"error","error":{"type":"not_found_error","message":"no"}}"#,
            AgentErrorKind::Provider,
            ErrorClass::Fallback,
        ),
        ("{not json", AgentErrorKind::Protocol, ErrorClass::Retry),
        ("[]", AgentErrorKind::Protocol, ErrorClass::Retry),
    ];
    for (frame, kind, class) in cases {
        let err = AnthropicDecoder::default()
            .feed(Some("error"), frame)
            .unwrap_err();
        assert_eq!((err.kind, err.class), (kind, class), "{frame}");
    }
}

#[test]
fn end_needs_message_stop() {
    let mut d = AnthropicDecoder::default();
    d.feed(None, START).unwrap();
    assert_eq!(d.end().unwrap_err().kind, AgentErrorKind::Protocol);
    d.feed(None, r#"{"type":"message_stop"}"#).unwrap();
    assert!(d.is_done() && d.end().is_ok());
}

#[test]
fn status_errors_read_anthropic_bodies() {
    let now = std::time::SystemTime::UNIX_EPOCH;
    let body = |t: &str, m: &str| {
        format!(
            r#"{{"type":"error","error":{{"type":"{t}","message":"{m}"}},"request_id":"req_1"}}"#
        )
    };
    let cases = [
        (
            529,
            body("overloaded_error", "Overloaded"),
            None,
            ErrorClass::Retry,
            None,
        ),
        (
            429,
            body("rate_limit_error", "slow down"),
            Some("2"),
            ErrorClass::Retry,
            Some(2000),
        ),
        (
            401,
            body("authentication_error", "invalid x-api-key"),
            None,
            ErrorClass::Fatal,
            None,
        ),
        (
            400,
            body("invalid_request_error", "max_tokens: Field required"),
            None,
            ErrorClass::Fatal,
            None,
        ),
        (
            404,
            body("not_found_error", "model: claude-x"),
            None,
            ErrorClass::Fallback,
            None,
        ),
        (
            502,
            "<html>bad gateway</html>".to_string(),
            None,
            ErrorClass::Retry,
            None,
        ),
    ];
    for (status, body, retry, class, ms) in cases {
        let e = status_error(status, &body, retry, now);
        assert_eq!(e.kind, AgentErrorKind::Provider, "{body}");
        assert_eq!(
            (e.class, e.http_status, e.retry_after_ms),
            (class, Some(status), ms),
            "{body}"
        );
    }
    let e = status_error(529, &body("overloaded_error", "Overloaded"), None, now);
    assert!(e.message.contains("Overloaded"), "{}", e.message);
}

#[test]
fn whole_messages_decode_to_pieces() {
    let body = r#"{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"text","text":"ok"},{"type":"tool_use","id":"toolu_1","name":"run","input":{"command":"ls"}},{"type":"tool_use","id":"toolu_2","name":"finish","input":{}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":30}}"#;
    assert_eq!(
        whole(body).unwrap(),
        vec![
            Piece::Model("claude-x".into()),
            Piece::Reasoning("hm".into()),
            Piece::Text("ok".into()),
            frag(
                Some(2),
                Some("toolu_1"),
                Some("run"),
                "{\"command\":\"ls\"}"
            ),
            frag(Some(3), Some("toolu_2"), Some("finish"), "{}"),
            Piece::Usage(Usage {
                input: 12,
                output: 30,
                ..Usage::default()
            }),
            Piece::Finish(FinishReason::ToolCalls),
        ]
    );
    let text_only = r#"{"content":[{"type":"text","text":"hi"}]}"#;
    assert_eq!(
        whole(text_only).unwrap(),
        vec![Piece::Text("hi".into()), Piece::Finish(FinishReason::Stop)]
    );
    let errors = [
        (
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            AgentErrorKind::Provider,
        ),
        ("{}", AgentErrorKind::Protocol),
        (r#"{"content":"x"}"#, AgentErrorKind::Protocol),
        ("", AgentErrorKind::Protocol),
    ];
    for (body, kind) in errors {
        assert_eq!(whole(body).unwrap_err().kind, kind, "{body}");
    }
}

fn roles_alternate(body: &Value) {
    let msgs = body["messages"].as_array().unwrap();
    assert_eq!(msgs[0]["role"], "user");
    for pair in msgs.windows(2) {
        assert_ne!(pair[0]["role"], pair[1]["role"], "{body}");
    }
}

#[test]
fn request_body_merges_into_alternating_turns() {
    let messages = conversation();
    let tools = tools();
    let extra = json!({"temperature": 0.2});
    let req = Request {
        model: "m",
        system: "be brief",
        messages: &messages,
        tools: &tools,
        max_output_tokens: None,
        extra: extra.as_object().unwrap(),
    };
    let body = request_body(&req);
    let want = json!({
        "model": "m",
        "max_tokens": 8192,
        "system": "be brief",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "fix the bug"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "c1", "name": "read_file", "input": {"path": "a.rs"}},
                {"type": "tool_use", "id": "c2", "name": "grep", "input": {"pattern": "x"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": "fn a() {}"},
                {"type": "tool_result", "tool_use_id": "c2", "content": "a.rs:1"},
                {"type": "text", "text": "go on"},
            ]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "c3", "name": "finish", "input": {"summary": "ok"}},
            ]},
        ],
        "tools": [{"name": "read_file", "description": "Reads a file.",
            "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}],
        "stream": true,
        "temperature": 0.2,
    });
    assert_eq!(body, want);
    roles_alternate(&body);
}

#[test]
fn request_body_fills_empty_turns_and_orders_results_first() {
    let call = ToolCall {
        id: "c1".into(),
        name: "run".into(),
        arguments: json!("{\"command\":\"ls\"}"),
    };
    let messages = vec![
        Message::User { text: "a".into() },
        Message::User {
            text: String::new(),
        },
        Message::Assistant {
            text: String::new(),
            reasoning: "r".into(),
            calls: vec![],
        },
        Message::Assistant {
            text: String::new(),
            reasoning: String::new(),
            calls: vec![call],
        },
        Message::User {
            text: "wait".into(),
        },
        Message::Tool {
            call_id: "c1".into(),
            name: "run".into(),
            output: "x".into(),
            is_error: false,
        },
        Message::Assistant {
            text: String::new(),
            reasoning: String::new(),
            calls: vec![],
        },
    ];
    let extra = json!({"max_tokens": 5});
    let req = Request {
        model: "m",
        system: "",
        messages: &messages,
        tools: &[],
        max_output_tokens: Some(100),
        extra: extra.as_object().unwrap(),
    };
    let body = request_body(&req);
    let want = json!({
        "model": "m",
        "max_tokens": 5,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "a"}]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "c1", "name": "run", "input": {"command": "ls"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": "x"},
                {"type": "text", "text": "wait"},
            ]},
            {"role": "assistant", "content": [{"type": "text", "text": "(no reply)"}]},
        ],
        "stream": true,
    });
    assert_eq!(body, want);
    roles_alternate(&body);
}

#[test]
fn a_failed_tool_result_carries_is_error() {
    let messages = vec![
        Message::User { text: "go".into() },
        Message::Assistant {
            text: String::new(),
            reasoning: String::new(),
            calls: vec![ToolCall {
                id: "c1".into(),
                name: "run".into(),
                arguments: json!({"command": "false"}),
            }],
        },
        Message::Tool {
            call_id: "c1".into(),
            name: "run".into(),
            output: "EXIT_1: exit code 1".into(),
            is_error: true,
        },
    ];
    let extra = serde_json::Map::new();
    let body = request_body(&Request {
        model: "m",
        system: "",
        messages: &messages,
        tools: &[],
        max_output_tokens: None,
        extra: &extra,
    });
    let block = &body["messages"][2]["content"][0];
    assert_eq!(block["type"], "tool_result");
    assert_eq!(block["is_error"], true, "{body}");
}
