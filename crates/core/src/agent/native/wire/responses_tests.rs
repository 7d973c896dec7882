use super::*;
use crate::agent::native::wire::chat::tests::{conversation, decode, frag, prefixes, tools, Case};
use crate::agent::AgentErrorKind;
use crate::model::ErrorClass;

fn run(frames: &[(Option<&str>, &str)]) -> Result<Vec<Piece>, AgentError> {
    decode(crate::agent::native::Api::Responses, frames)
}

const CREATED: &str = r#"{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","created_at":1,"status":"in_progress","model":"gpt-5-mini","output":[],"usage":null}}"#;
const IN_PROGRESS: &str = r#"{"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_1","object":"response","status":"in_progress","model":"gpt-5-mini","output":[]}}"#;

#[test]
fn events_decode_to_pieces() {
    let model = || Piece::Model("gpt-5-mini".into());
    let cases: Vec<Case> = vec![
        (
            "reasoning, text, a call by deltas and a call by its done item",
            vec![
                (Some("response.created"), CREATED),
                (Some("response.in_progress"), IN_PROGRESS),
                (
                    None,
                    r#"{"type":"response.output_item.added","output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}}"#,
                ),
                (
                    None,
                    r#"{"type":"response.reasoning_summary_text.delta","item_id":"rs_1","output_index":0,"summary_index":0,"delta":"Plan"}"#,
                ),
                (
                    None,
                    r#"{"type":"response.output_item.added","output_index":1,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}}"#,
                ),
                (
                    None,
                    r#"{"type":"response.output_text.delta","item_id":"msg_1","output_index":1,"content_index":0,"delta":"Reading."}"#,
                ),
                (
                    None,
                    r#"{"type":"response.output_item.added","output_index":2,"item":{"id":"fc_1","type":"function_call","status":"in_progress","arguments":"","call_id":"call_1","name":"read_file"}}"#,
                ),
                (
                    None,
                    r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":2,"delta":"{\"path\":"}"#,
                ),
                (
                    None,
                    r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":2,"delta":"\"a.rs\"}"}"#,
                ),
                (
                    None,
                    r#"{"type":"response.function_call_arguments.done","item_id":"fc_1","output_index":2,"arguments":"{\"path\":\"a.rs\"}"}"#,
                ),
                (
                    None,
                    r#"{"type":"response.output_item.done","output_index":2,"item":{"id":"fc_1","type":"function_call","status":"completed","arguments":"{\"path\":\"a.rs\"}","call_id":"call_1","name":"read_file"}}"#,
                ),
                (
                    None,
                    r#"{"type":"response.output_item.added","output_index":3,"item":{"id":"fc_2","type":"function_call","arguments":"","call_id":"call_2","name":"grep"}}"#,
                ),
                (
                    None,
                    r#"{"type":"response.output_item.done","output_index":3,"item":{"id":"fc_2","type":"function_call","arguments":"{\"pattern\":\"x\"}","call_id":"call_2","name":"grep"}}"#,
                ),
                (
                    None,
                    r#"{"type":"response.completed","response":{"id":"resp_1","status":"completed","model":"gpt-5-mini","output":[],"usage":{"input_tokens":100,"input_tokens_details":{"cached_tokens":40},"output_tokens":50,"output_tokens_details":{"reasoning_tokens":20},"total_tokens":150}}}"#,
                ),
            ],
            vec![
                model(),
                Piece::Reasoning("Plan".into()),
                Piece::Text("Reading.".into()),
                frag(Some(2), Some("call_1"), Some("read_file"), ""),
                frag(Some(2), None, None, "{\"path\":"),
                frag(Some(2), None, None, "\"a.rs\"}"),
                frag(Some(3), Some("call_2"), Some("grep"), ""),
                frag(Some(3), None, None, "{\"pattern\":\"x\"}"),
                Piece::Usage(Usage {
                    input: 60,
                    output: 50,
                    cache_read: 40,
                    reasoning: 20,
                    ..Usage::default()
                }),
                Piece::Finish(FinishReason::ToolCalls),
            ],
        ),
        (
            "a call only in its done item; arguments given once",
            vec![
                (
                    None,
                    r#"{"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","arguments":"{}","call_id":"c","name":"finish"}}"#,
                ),
                (
                    None,
                    r#"{"type":"response.function_call_arguments.done","output_index":0,"arguments":"{}"}"#,
                ),
                (
                    None,
                    r#"{"type":"response.completed","response":{"status":"completed","model":"m"}}"#,
                ),
            ],
            vec![
                frag(Some(0), Some("c"), Some("finish"), "{}"),
                Piece::Model("m".into()),
                Piece::Finish(FinishReason::ToolCalls),
            ],
        ),
        (
            "arguments done without deltas; then the item's are not repeated",
            vec![
                (
                    None,
                    r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","call_id":"c","name":"run"}}"#,
                ),
                (
                    None,
                    r#"{"type":"response.function_call_arguments.done","output_index":0,"arguments":"{\"command\":\"ls\"}"}"#,
                ),
                (
                    None,
                    r#"{"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","arguments":"{\"command\":\"ls\"}","call_id":"c","name":"run"}}"#,
                ),
                (
                    None,
                    r#"{"type":"response.completed","response":{"status":"completed"}}"#,
                ),
            ],
            vec![
                frag(Some(0), Some("c"), Some("run"), ""),
                frag(Some(0), None, None, "{\"command\":\"ls\"}"),
                Piece::Finish(FinishReason::ToolCalls),
            ],
        ),
        (
            "reasoning_text; completed without calls is Stop",
            vec![
                (
                    None,
                    r#"{"type":"response.reasoning_text.delta","output_index":0,"delta":"r"}"#,
                ),
                (
                    None,
                    r#"{"type":"response.output_text.delta","output_index":1,"delta":"hi"}"#,
                ),
                (
                    None,
                    r#"{"type":"response.completed","response":{"status":"completed","output":[{"type":"message"}]}}"#,
                ),
                (None, "garbage after the end"),
            ],
            vec![
                Piece::Reasoning("r".into()),
                Piece::Text("hi".into()),
                Piece::Finish(FinishReason::Stop),
            ],
        ),
        (
            "incomplete at max_output_tokens is Length",
            vec![(
                None,
                r#"{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":5,"output_tokens":9}}}"#,
            )],
            vec![
                Piece::Usage(Usage {
                    input: 5,
                    output: 9,
                    ..Usage::default()
                }),
                Piece::Finish(FinishReason::Length),
            ],
        ),
        (
            "incomplete for another reason; the event name stands in for type",
            vec![(
                Some("response.incomplete"),
                r#"{"response":{"incomplete_details":{"reason":"content_filter"}}}"#,
            )],
            vec![Piece::Finish(FinishReason::Other("content_filter".into()))],
        ),
        (
            "odd shapes are skipped, not fatal",
            vec![
                (None, r#"{"type":"response.created","response":7}"#),
                (None, r#"{"type":"response.output_text.delta","delta":5}"#),
                (
                    None,
                    r#"{"type":"response.output_item.added","output_index":"x","item":{"type":"function_call","arguments":{"a":1}}}"#,
                ),
                (
                    None,
                    r#"{"type":"response.function_call_arguments.delta","delta":""}"#,
                ),
                (None, r#"{"type":"response.output_item.done","item":null}"#),
                (None, r#"{"type":"response.some_future_event"}"#),
            ],
            vec![frag(None, None, None, "{\"a\":1}")],
        ),
    ];
    for (name, frames, want) in cases {
        assert_eq!(run(&frames).unwrap(), want, "{name}");
        // Every cut of every frame decodes or errs; none panics.
        for f in &frames {
            for prefix in prefixes(f.1) {
                let mut d = ResponsesDecoder::default();
                let _ = d.feed(None, prefix);
                let _ = d.feed(Some("message_stop"), prefix);
                let _ = whole(prefix);
            }
        }
    }
}

#[test]
fn failures_and_garbage_are_errors() {
    let cases: Vec<(&str, AgentErrorKind, ErrorClass)> = vec![
        (
            r#"{"type":"response.failed","response":{"status":"failed","error":{"code":"rate_limit_exceeded","message":"Rate limit reached"}}}"#,
            AgentErrorKind::Provider,
            ErrorClass::Retry,
        ),
        // An internal server error after the 200: retry, as its 500 is.
        (
            r#"{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"scripted midstream error"}}}"#,
            AgentErrorKind::Provider,
            ErrorClass::Retry,
        ),
        (
            r#"{"type":"response.failed","response":{"status":"failed","error":null}}"#,
            AgentErrorKind::Provider,
            ErrorClass::Fatal,
        ),
        (
            r#"{"type":"error","code":"context_length_exceeded","message":"Your input exceeds the context window of this model.","param":null}"#,
            AgentErrorKind::Provider,
            ErrorClass::Fallback,
        ),
        (
            r#"{"type":"error","error":{"type":"insufficient_quota","code":"insufficient_quota","message":"You exceeded your current quota"}}"#,
            AgentErrorKind::Provider,
            ErrorClass::Stop,
        ),
        ("<html>", AgentErrorKind::Protocol, ErrorClass::Retry),
        ("null", AgentErrorKind::Protocol, ErrorClass::Retry),
    ];
    for (frame, kind, class) in cases {
        let err = ResponsesDecoder::default().feed(None, frame).unwrap_err();
        assert_eq!((err.kind, err.class), (kind, class), "{frame}");
    }
}

#[test]
fn end_needs_the_response_end() {
    let mut d = ResponsesDecoder::default();
    d.feed(None, CREATED).unwrap();
    assert_eq!(d.end().unwrap_err().kind, AgentErrorKind::Protocol);
    d.feed(None, r#"{"type":"response.completed","response":{}}"#)
        .unwrap();
    assert!(d.is_done() && d.end().is_ok());
}

#[test]
fn whole_responses_decode_to_pieces() {
    let body = r#"{"id":"resp_1","object":"response","status":"completed","model":"gpt-5","output":[{"type":"reasoning","summary":[{"type":"summary_text","text":"plan"}]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok","annotations":[]}]},{"type":"function_call","call_id":"call_1","name":"run","arguments":"{\"command\":\"ls\"}"}],"usage":{"input_tokens":10,"output_tokens":4}}"#;
    assert_eq!(
        whole(body).unwrap(),
        vec![
            Piece::Model("gpt-5".into()),
            Piece::Reasoning("plan".into()),
            Piece::Text("ok".into()),
            frag(Some(2), Some("call_1"), Some("run"), "{\"command\":\"ls\"}"),
            Piece::Usage(Usage {
                input: 10,
                output: 4,
                ..Usage::default()
            }),
            Piece::Finish(FinishReason::ToolCalls),
        ]
    );
    let cut = r#"{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[]}"#;
    assert_eq!(
        whole(cut).unwrap(),
        vec![Piece::Finish(FinishReason::Length)]
    );
    let errors = [
        (
            r#"{"status":"failed","error":{"code":"server_error","message":"The server had an error"},"output":[]}"#,
            AgentErrorKind::Provider,
        ),
        (
            r#"{"status":"failed","output":[]}"#,
            AgentErrorKind::Provider,
        ),
        ("{}", AgentErrorKind::Protocol),
        ("1", AgentErrorKind::Protocol),
    ];
    for (body, kind) in errors {
        assert_eq!(whole(body).unwrap_err().kind, kind, "{body}");
    }
    assert_eq!(whole(errors[0].0).unwrap_err().class, ErrorClass::Retry);
}

#[test]
fn request_body_maps_the_conversation() {
    let messages = conversation();
    let tools = tools();
    let extra = json!({"temperature": 0.2, "store": true});
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
        "instructions": "be brief",
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "fix the bug"}]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Looking."}]},
            {"type": "function_call", "call_id": "c1", "name": "read_file", "arguments": "{\"path\":\"a.rs\"}"},
            {"type": "function_call", "call_id": "c2", "name": "grep", "arguments": "{\"pattern\":\"x\"}"},
            {"type": "function_call_output", "call_id": "c1", "output": "fn a() {}"},
            {"type": "function_call_output", "call_id": "c2", "output": "a.rs:1"},
            {"role": "user", "content": [{"type": "input_text", "text": "go on"}]},
            {"type": "function_call", "call_id": "c3", "name": "finish", "arguments": "{\"summary\":\"ok\"}"},
        ],
        "tools": [{"type": "function", "name": "read_file", "description": "Reads a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
            "strict": false}],
        "stream": true,
        "store": true,
        "max_output_tokens": 4000,
        "temperature": 0.2,
    });
    assert_eq!(request_body(&req), want);
    let bare = Request {
        tools: &[],
        system: "",
        max_output_tokens: None,
        extra: &Map::new(),
        messages: &messages[..1],
        ..req
    };
    assert_eq!(
        request_body(&bare),
        json!({"model": "m", "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "fix the bug"}]},
        ], "stream": true, "store": false})
    );
}
