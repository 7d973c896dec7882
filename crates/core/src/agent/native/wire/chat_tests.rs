use super::*;
use crate::agent::native::{ToolCall, ToolSpec};
use crate::model::ErrorClass;

/// A call fragment piece (shared by the three APIs' tests).
pub(crate) fn frag(index: Option<u64>, id: Option<&str>, name: Option<&str>, args: &str) -> Piece {
    Piece::Call(CallFragment {
        index,
        id: id.map(String::from),
        name: name.map(String::from),
        arguments: args.to_string(),
    })
}

fn text(s: &str) -> Piece {
    Piece::Text(s.into())
}

fn usage(input: u64, output: u64, cache_read: u64) -> Piece {
    Piece::Usage(Usage {
        input,
        output,
        cache_read,
        ..Usage::default()
    })
}

/// A named sequence of `(event, data)` frames and the pieces they decode
/// to (the Anthropic and Responses tables).
pub(crate) type Case<'a> = (&'a str, Vec<(Option<&'a str>, &'a str)>, Vec<Piece>);

/// Every piece `frames` decode to through `api`'s stream decoder.
pub(crate) fn decode(
    api: crate::agent::native::Api,
    frames: &[(Option<&str>, &str)],
) -> Result<Vec<Piece>, AgentError> {
    let mut d = super::super::WireStream::new(api);
    let mut out = Vec::new();
    for (event, data) in frames {
        out.extend(d.feed(*event, data)?);
    }
    Ok(out)
}

fn run(frames: &[&str]) -> Result<Vec<Piece>, AgentError> {
    let mut d = ChatDecoder::default();
    let mut out = Vec::new();
    for f in frames {
        out.extend(d.feed(None, f)?);
    }
    Ok(out)
}

#[test]
fn frames_decode_to_pieces() {
    let cases: Vec<(&str, Vec<&str>, Vec<Piece>)> = vec![
        (
            "text and reasoning_content",
            vec![
                r#"{"model":"qwen3","choices":[{"delta":{"role":"assistant","reasoning_content":"think"}}]}"#,
                r#"{"model":"qwen3","choices":[{"delta":{"content":"Hel"}}]}"#,
                r#"{"choices":[{"delta":{"content":"lo"},"finish_reason":"stop"}]}"#,
                "[DONE]",
            ],
            vec![
                Piece::Model("qwen3".into()),
                Piece::Reasoning("think".into()),
                text("Hel"),
                text("lo"),
                Piece::Finish(FinishReason::Stop),
            ],
        ),
        (
            "reasoning (Ollama, vLLM) and content parts",
            vec![
                r#"{"choices":[{"delta":{"reasoning":"hmm","content":""}}]}"#,
                r#"{"choices":[{"delta":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}}]}"#,
                "[DONE]",
            ],
            vec![
                Piece::Reasoning("hmm".into()),
                text("ab"),
                Piece::Finish(FinishReason::Stop),
            ],
        ),
        (
            "parallel calls with split arguments",
            vec![
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"read_file","arguments":""}}]}}]}"#,
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"","function":{"arguments":"{\"path\":"}}]}}]}"#,
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"a.rs\"}"}}]}}]}"#,
                r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"call_b","function":{"name":"grep","arguments":"{\"pattern\":\"x\"}"}}]}}]}"#,
                r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
                "[DONE]",
            ],
            vec![
                frag(Some(0), Some("call_a"), Some("read_file"), ""),
                frag(Some(0), None, None, "{\"path\":"),
                frag(Some(0), None, None, "\"a.rs\"}"),
                frag(Some(1), Some("call_b"), Some("grep"), "{\"pattern\":\"x\"}"),
                Piece::Finish(FinishReason::ToolCalls),
            ],
        ),
        (
            "Ollama: object arguments, no index, no finish_reason",
            vec![
                r#"{"model":"qwen3:8b","choices":[{"index":0,"delta":{"role":"assistant","content":"","tool_calls":[{"id":"call_x","type":"function","function":{"name":"run","arguments":{"command":"ls"}}}]},"finish_reason":null}]}"#,
                r#"{"model":"qwen3:8b","choices":[{"index":0,"delta":{"role":"assistant","content":"","tool_calls":[{"id":"call_y","type":"function","function":{"name":"run","arguments":{}}}]},"finish_reason":null}]}"#,
                "[DONE]",
            ],
            vec![
                Piece::Model("qwen3:8b".into()),
                frag(None, Some("call_x"), Some("run"), "{\"command\":\"ls\"}"),
                frag(None, Some("call_y"), Some("run"), "{}"),
                Piece::Finish(FinishReason::ToolCalls),
            ],
        ),
        (
            "cumulative usage becomes increments",
            vec![
                r#"{"choices":[{"delta":{"content":"a"}}],"usage":{"prompt_tokens":10,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":4}}}"#,
                r#"{"choices":[{"delta":{"content":"b"}}],"usage":{"prompt_tokens":10,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":4}}}"#,
                r#"{"choices":[{"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":10,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":4}}}"#,
                r#"{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":4}}}"#,
                "[DONE]",
            ],
            vec![
                text("a"),
                usage(6, 1, 4),
                text("b"),
                usage(0, 2, 0),
                Piece::Finish(FinishReason::Length),
                usage(0, 2, 0),
            ],
        ),
        (
            "llama.cpp final chunk: usage, timings, finish last",
            vec![
                r#"{"choices":[{"finish_reason":"stop","index":0,"delta":{}}],"created":1,"id":"chatcmpl-1","model":"gpt-3.5-turbo","object":"chat.completion.chunk","usage":{"completion_tokens":5,"prompt_tokens":7,"total_tokens":12},"timings":{"prompt_n":7,"prompt_ms":10.5,"predicted_n":5,"predicted_ms":40.4}}"#,
                "[DONE]",
            ],
            vec![
                Piece::Model("gpt-3.5-turbo".into()),
                usage(7, 5, 0),
                Piece::GenerationMs(40),
                Piece::Finish(FinishReason::Stop),
            ],
        ),
        (
            "other finish reasons; only the first finish counts",
            vec![
                r#"{"choices":[{"delta":{},"finish_reason":"content_filter"}]}"#,
                r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#,
                "[DONE]",
            ],
            vec![Piece::Finish(FinishReason::Other("content_filter".into()))],
        ),
        (
            "a whole message inside a stream frame",
            vec![
                r#"{"choices":[{"message":{"role":"assistant","content":"done","tool_calls":[{"id":"c1","function":{"name":"finish","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}"#,
                "[DONE]",
            ],
            vec![
                text("done"),
                frag(None, Some("c1"), Some("finish"), "{}"),
                Piece::Finish(FinishReason::ToolCalls),
            ],
        ),
        (
            "blank frames and frames after [DONE] are ignored",
            vec!["", "  ", "[DONE]", "garbage", r#"{"error":"late"}"#],
            vec![Piece::Finish(FinishReason::Stop)],
        ),
        (
            "odd shapes are skipped, not fatal",
            vec![
                r#"{"choices":"x","model":5,"usage":5}"#,
                r#"{"choices":[null]}"#,
                r#"{"choices":[{"delta":{"tool_calls":[null,3,{"function":5,"index":-1}]}}]}"#,
                r#"{"choices":[{"delta":"x","finish_reason":7}],"timings":{"predicted_ms":-1}}"#,
                r#"{"timings":{"predicted_ms":1e300}}"#,
            ],
            vec![frag(None, None, None, ""), Piece::GenerationMs(u64::MAX)],
        ),
    ];
    for (name, frames, want) in cases {
        assert_eq!(run(&frames).unwrap(), want, "{name}");
        // Every cut of every frame decodes or errs; none panics.
        for f in &frames {
            for prefix in prefixes(f) {
                let mut d = ChatDecoder::default();
                let _ = d.feed(None, prefix);
                let _ = d.feed(Some("message_stop"), prefix);
                let _ = whole(prefix);
            }
        }
    }
}

#[test]
fn error_frames_and_garbage_are_errors() {
    let cases: Vec<(&str, AgentErrorKind, ErrorClass)> = vec![
        (
            r#"{"error":{"code":500,"message":"slot unavailable","type":"server_error"}}"#,
            AgentErrorKind::Provider,
            ErrorClass::Retry,
        ),
        (
            r#"{"error":{"message":"Rate limit reached","type":"rate_limit_error"}}"#,
            AgentErrorKind::Provider,
            ErrorClass::Retry,
        ),
        (
            r#"{"object":"error","message":"This model's maximum context length is 4096 tokens","type":"BadRequestError","code":400}"#,
            AgentErrorKind::Provider,
            ErrorClass::Fallback,
        ),
        ("not json", AgentErrorKind::Protocol, ErrorClass::Retry),
        ("[1,2]", AgentErrorKind::Protocol, ErrorClass::Retry),
        (r#""str""#, AgentErrorKind::Protocol, ErrorClass::Retry),
        (
            r#"{"choices":"#,
            AgentErrorKind::Protocol,
            ErrorClass::Retry,
        ),
    ];
    for (frame, kind, class) in cases {
        let err = ChatDecoder::default().feed(None, frame).unwrap_err();
        assert_eq!((err.kind, err.class), (kind, class), "{frame}");
    }
}

#[test]
fn end_needs_done() {
    let mut d = ChatDecoder::default();
    d.feed(None, r#"{"choices":[{"delta":{"content":"a"}}]}"#)
        .unwrap();
    assert!(!d.is_done());
    assert_eq!(d.end().unwrap_err().kind, AgentErrorKind::Protocol);
    d.feed(None, "[DONE]").unwrap();
    assert!(d.is_done());
    assert!(d.end().is_ok());
}

#[test]
fn whole_replies_decode_to_pieces() {
    let cases: Vec<(&str, &str, Vec<Piece>)> = vec![
        (
            "Ollama's whole answer to a stream request with tools",
            r#"{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"qwen3:8b","system_fingerprint":"fp_ollama","choices":[{"index":0,"message":{"role":"assistant","content":"","tool_calls":[{"id":"call_1","index":0,"type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a\"}"}},{"id":"call_2","index":1,"type":"function","function":{"name":"run","arguments":{"command":"ls"}}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":20,"completion_tokens":8,"total_tokens":28}}"#,
            vec![
                Piece::Model("qwen3:8b".into()),
                frag(
                    Some(0),
                    Some("call_1"),
                    Some("read_file"),
                    "{\"path\":\"a\"}",
                ),
                frag(Some(1), Some("call_2"), Some("run"), "{\"command\":\"ls\"}"),
                usage(20, 8, 0),
                Piece::Finish(FinishReason::ToolCalls),
            ],
        ),
        (
            "text and reasoning, no finish_reason",
            r#"{"choices":[{"message":{"role":"assistant","content":"hi","reasoning_content":"r"}}]}"#,
            vec![
                Piece::Reasoning("r".into()),
                text("hi"),
                Piece::Finish(FinishReason::Stop),
            ],
        ),
    ];
    for (name, body, want) in cases {
        assert_eq!(whole(body).unwrap(), want, "{name}");
    }
    let errors = [
        (
            r#"{"error":"model 'x' not found"}"#,
            AgentErrorKind::Provider,
        ),
        (r#"{"choices":[]}"#, AgentErrorKind::Protocol),
        ("{}", AgentErrorKind::Protocol),
        ("<html>bad gateway</html>", AgentErrorKind::Protocol),
    ];
    for (body, kind) in errors {
        assert_eq!(whole(body).unwrap_err().kind, kind, "{body}");
    }
}

/// Every prefix of `s` that ends on a character boundary.
pub(crate) fn prefixes(s: &str) -> impl Iterator<Item = &str> {
    s.char_indices().map(|(i, _)| &s[..i]).chain([s])
}

/// user, assistant with text and 2 calls, 2 tool results, user, and an
/// assistant of calls only.
pub(crate) fn conversation() -> Vec<Message> {
    let call = |id: &str, name: &str, args: Value| ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args,
    };
    vec![
        Message::User {
            text: "fix the bug".into(),
        },
        Message::Assistant {
            text: "Looking.".into(),
            reasoning: "plan".into(),
            calls: vec![
                call("c1", "read_file", json!({"path": "a.rs"})),
                call("c2", "grep", json!({"pattern": "x"})),
            ],
        },
        Message::Tool {
            call_id: "c1".into(),
            name: "read_file".into(),
            output: "fn a() {}".into(),
            is_error: false,
        },
        Message::Tool {
            call_id: "c2".into(),
            name: "grep".into(),
            output: "a.rs:1".into(),
            is_error: false,
        },
        Message::User {
            text: "go on".into(),
        },
        Message::Assistant {
            text: String::new(),
            reasoning: String::new(),
            calls: vec![call("c3", "finish", json!({"summary": "ok"}))],
        },
    ]
}

pub(crate) fn tools() -> Vec<ToolSpec> {
    vec![ToolSpec {
        name: "read_file".into(),
        description: "Reads a file.".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }]
}

#[test]
fn request_body_maps_the_conversation() {
    let messages = conversation();
    let tools = tools();
    let extra = json!({"temperature": 0.2, "max_tokens": 100});
    let req = Request {
        model: "m",
        system: "be brief",
        messages: &messages,
        tools: &tools,
        max_output_tokens: Some(4000),
        extra: extra.as_object().unwrap(),
    };
    let want = json!({
        "model": "m",
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "fix the bug"},
            {"role": "assistant", "content": "Looking.", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a.rs\"}"}},
                {"id": "c2", "type": "function", "function": {"name": "grep", "arguments": "{\"pattern\":\"x\"}"}},
            ]},
            {"role": "tool", "tool_call_id": "c1", "content": "fn a() {}"},
            {"role": "tool", "tool_call_id": "c2", "content": "a.rs:1"},
            {"role": "user", "content": "go on"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c3", "type": "function", "function": {"name": "finish", "arguments": "{\"summary\":\"ok\"}"}},
            ]},
        ],
        "stream": true,
        "stream_options": {"include_usage": true},
        "tools": [{"type": "function", "function": {
            "name": "read_file", "description": "Reads a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        }}],
        "tool_choice": "auto",
        "max_tokens": 100,
        "temperature": 0.2,
    });
    assert_eq!(request_body(&req), want);
}

#[test]
fn request_body_without_tools_system_or_limit() {
    let messages = vec![
        Message::User { text: "hi".into() },
        Message::Assistant {
            text: String::new(),
            reasoning: String::new(),
            calls: vec![],
        },
    ];
    let req = Request {
        model: "m",
        system: "",
        messages: &messages,
        tools: &[],
        max_output_tokens: None,
        extra: &Map::new(),
    };
    let want = json!({
        "model": "m",
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": ""},
        ],
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    assert_eq!(request_body(&req), want);
}
