//! The agent stream parsers on real CLI output: single lines (the captures
//! quoted in AGENTS.md, their `…` elisions filled with the fields the
//! parsers ignore or with same-shaped values), whole captured transcripts
//! (`tests/fixtures/agents/*.jsonl`, see its README), and properties: no
//! input of any format panics.

use coderig::agent::parse::{parse_line, StreamFormat, StreamParser};
use coderig::agent::AgentEvent;
use proptest::prelude::*;
use serde_json::{json, Value};

use StreamFormat::*;

/// The events of `line` as JSON (the faces' shape), for compact tables.
fn events(format: StreamFormat, line: &str) -> Value {
    serde_json::to_value(parse_line(format, line)).unwrap()
}

fn check(table: &[(StreamFormat, &str, Value)]) {
    for (format, line, want) in table {
        assert_eq!(&events(*format, line), want, "{format} line: {line}");
    }
}

#[test]
fn claude_lines_map_to_events() {
    check(&[
        (
            ClaudeStreamJson,
            r#"{"type":"system","subtype":"init","cwd":"/tmp/work-claude","session_id":"0493c1de-9d8a-4a4f-a3a8-1f4f0b2b7e11","tools":["Bash","Write"],"model":"claude-opus-4-8[1m]","permissionMode":"bypassPermissions","apiKeySource":"ANTHROPIC_API_KEY"}"#,
            json!([{"type": "session_started", "session_id": "0493c1de-9d8a-4a4f-a3a8-1f4f0b2b7e11", "model": "claude-opus-4-8[1m]"}]),
        ),
        (
            ClaudeStreamJson,
            r#"{"type":"assistant","message":{"id":"msg_1_a","type":"message","role":"assistant","model":"scripted-model","content":[{"type":"tool_use","id":"toolu_2_b","name":"Bash","input":{"command":"echo hi > hello.txt","description":"Create hello.txt"}}],"stop_reason":"tool_use","usage":{"input_tokens":200,"output_tokens":20}},"parent_tool_use_id":null,"session_id":"0493"}"#,
            json!([{"type": "tool_call", "id": "toolu_2_b", "name": "Bash", "input": {"command": "echo hi > hello.txt", "description": "Create hello.txt"}}]),
        ),
        (
            ClaudeStreamJson,
            r#"{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_2_b","type":"tool_result","content":"(Bash completed with no output)","is_error":false}]},"parent_tool_use_id":null,"session_id":"0493","tool_use_result":{"stdout":"","stderr":"","interrupted":false}}"#,
            json!([{"type": "tool_result", "id": "toolu_2_b", "ok": true, "output": "(Bash completed with no output)"}]),
        ),
        (
            ClaudeStreamJson,
            r#"{"type":"assistant","message":{"id":"msg_3","role":"assistant","content":[{"type":"text","text":"done"}],"usage":{"input_tokens":230,"output_tokens":4}},"session_id":"0493"}"#,
            json!([{"type": "text_delta", "text": "done"}]),
        ),
        (
            ClaudeStreamJson,
            r#"{"type":"result","subtype":"success","is_error":false,"duration_ms":912,"num_turns":2,"result":"done","stop_reason":"end_turn","session_id":"0493","total_cost_usd":0.0015,"usage":{"input_tokens":430,"cache_creation_input_tokens":12,"cache_read_input_tokens":50,"output_tokens":24}}"#,
            json!([
                {"type": "usage", "input": 430, "output": 24, "cache_read": 50, "cache_write": 12, "reasoning": 0, "cost_usd": 0.0015},
                {"type": "finished", "stop_reason": "success", "final_text": "done", "num_turns": 2},
            ]),
        ),
        // Thinking, text and a tool call in one message keep their order.
        (
            ClaudeStreamJson,
            r#"{"type":"assistant","message":{"content":[{"type":"thinking","thinking":"plan","signature":"sig"},{"type":"text","text":"ok: "},{"type":"tool_use","id":"t1","name":"Write","input":{"file_path":"/w/a.txt","content":"x"}},{"type":"redacted_thinking","data":"zz"}]}}"#,
            json!([
                {"type": "reasoning_delta", "text": "plan"},
                {"type": "text_delta", "text": "ok: "},
                {"type": "tool_call", "id": "t1", "name": "Write", "input": {"file_path": "/w/a.txt", "content": "x"}},
            ]),
        ),
        // Array content (Qwen's shape), joined; an error result is not ok.
        (
            ClaudeStreamJson,
            r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","is_error":true,"content":[{"type":"text","text":"line 1"},{"type":"image","source":{}},{"type":"text","text":"line 2"}]}]}}"#,
            json!([{"type": "tool_result", "id": "c1", "ok": false, "output": "line 1\nline 2"}]),
        ),
        // The prompt echoed as a string, or as text blocks: no events.
        (
            ClaudeStreamJson,
            r#"{"type":"user","message":{"role":"user","content":"Create hello.txt"}}"#,
            json!([]),
        ),
        (
            ClaudeStreamJson,
            r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"hi"}]}}"#,
            json!([]),
        ),
        // An error result: usage, a classified error, finished without a final text.
        (
            ClaudeStreamJson,
            r#"{"type":"result","subtype":"error_during_execution","is_error":true,"api_error_status":529,"result":"API Error: 529 Overloaded","num_turns":1,"usage":{"input_tokens":10,"output_tokens":0},"total_cost_usd":0}"#,
            json!([
                {"type": "usage", "input": 10, "output": 0, "cache_read": 0, "cache_write": 0, "reasoning": 0, "cost_usd": 0.0},
                {"type": "error", "message": "API Error: 529 Overloaded", "class": "retry", "http_status": 529},
                {"type": "finished", "stop_reason": "error_during_execution", "num_turns": 1},
            ]),
        ),
        // Qwen: no `api_error_status`; the status is read from its message.
        (
            ClaudeStreamJson,
            r#"{"type":"result","subtype":"error_during_execution","is_error":true,"num_turns":1,"usage":{"input_tokens":0,"output_tokens":0},"error":{"message":"[API Error: 429 Too many]"}}"#,
            json!([
                {"type": "error", "message": "[API Error: 429 Too many]", "class": "retry", "http_status": 429},
                {"type": "finished", "stop_reason": "error_during_execution", "num_turns": 1},
            ]),
        ),
        (
            ClaudeStreamJson,
            r#"{"type":"result","subtype":"error_during_execution","is_error":true,"error":{"message":"API Error: 4000 things"}}"#,
            json!([
                {"type": "error", "message": "API Error: 4000 things", "class": "fatal"},
                {"type": "finished", "stop_reason": "error_during_execution"},
            ]),
        ),
        // Qwen: `session_start`, and its result has no cost.
        (
            ClaudeStreamJson,
            r#"{"type":"system","subtype":"session_start","session_id":"8b3d","model":"scripted-model","qwen_code_version":"0.24.4"}"#,
            json!([{"type": "session_started", "session_id": "8b3d", "model": "scripted-model"}]),
        ),
        (
            ClaudeStreamJson,
            r#"{"type":"result","subtype":"success","uuid":"u","session_id":"8b3d","is_error":false,"duration_ms":3900,"num_turns":2,"result":"done","usage":{"input_tokens":200,"output_tokens":20,"total_tokens":220},"permission_denials":[]}"#,
            json!([
                {"type": "usage", "input": 200, "output": 20, "cache_read": 0, "cache_write": 0, "reasoning": 0},
                {"type": "finished", "stop_reason": "success", "final_text": "done", "num_turns": 2},
            ]),
        ),
        // Ignored: partial deltas (the whole message follows), other
        // system subtypes, rate limit notices.
        (
            ClaudeStreamJson,
            r#"{"type":"stream_event","event":{"type":"content_block_delta","delta":{"type":"text_delta","text":"do"}}}"#,
            json!([]),
        ),
        (
            ClaudeStreamJson,
            r#"{"type":"stream_event","uuid":"u","event":{"type":"goal_state"}}"#,
            json!([]),
        ),
        (
            ClaudeStreamJson,
            r#"{"type":"system","subtype":"hook_response","session_id":"x"}"#,
            json!([]),
        ),
        (
            ClaudeStreamJson,
            r#"{"type":"rate_limit_event","rate_limit_info":{"status":"allowed"}}"#,
            json!([]),
        ),
    ]);
}

#[test]
fn codex_lines_map_to_events() {
    check(&[
        (
            CodexJson,
            r#"{"type":"thread.started","thread_id":"01a23086-6f0c-7a51-9d3e-0b8f0d1c2e3f"}"#,
            json!([{"type": "session_started", "session_id": "01a23086-6f0c-7a51-9d3e-0b8f0d1c2e3f"}]),
        ),
        (CodexJson, r#"{"type":"turn.started"}"#, json!([])),
        (
            CodexJson,
            r#"{"type":"item.started","item":{"id":"item_0","type":"command_execution","command":"/bin/bash -lc 'echo hi > hello.txt'","aggregated_output":"","exit_code":null,"status":"in_progress"}}"#,
            json!([{"type": "tool_call", "id": "item_0", "name": "command_execution", "input": {"command": "/bin/bash -lc 'echo hi > hello.txt'"}}]),
        ),
        (
            CodexJson,
            r#"{"type":"item.completed","item":{"id":"item_0","type":"command_execution","command":"/bin/bash -lc 'echo hi > hello.txt'","aggregated_output":"","exit_code":0,"status":"completed"}}"#,
            json!([{"type": "tool_result", "id": "item_0", "ok": true, "output": ""}]),
        ),
        (
            CodexJson,
            r#"{"type":"item.completed","item":{"id":"item_2","type":"command_execution","command":"false","aggregated_output":"boom\n","exit_code":1,"status":"failed"}}"#,
            json!([{"type": "tool_result", "id": "item_2", "ok": false, "output": "boom\n"}]),
        ),
        (
            CodexJson,
            r#"{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"done"}}"#,
            json!([{"type": "text_delta", "text": "done"}]),
        ),
        (
            CodexJson,
            r#"{"type":"turn.completed","usage":{"input_tokens":200,"cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":20,"reasoning_output_tokens":0}}"#,
            json!([
                {"type": "usage", "input": 200, "output": 20, "cache_read": 0, "cache_write": 0, "reasoning": 0},
                {"type": "finished", "stop_reason": "completed"},
            ]),
        ),
        // Cached input is inside input_tokens: uncached = the difference.
        (
            CodexJson,
            r#"{"type":"turn.completed","usage":{"input_tokens":1200,"cached_input_tokens":200,"output_tokens":345}}"#,
            json!([
                {"type": "usage", "input": 1000, "output": 345, "cache_read": 200, "cache_write": 0, "reasoning": 0},
                {"type": "finished", "stop_reason": "completed"},
            ]),
        ),
        (
            CodexJson,
            r#"{"type":"turn.completed","usage":{"input_tokens":5,"cached_input_tokens":9,"output_tokens":1,"cache_write_input_tokens":3,"reasoning_output_tokens":7}}"#,
            json!([
                {"type": "usage", "input": 0, "output": 1, "cache_read": 9, "cache_write": 3, "reasoning": 7},
                {"type": "finished", "stop_reason": "completed"},
            ]),
        ),
        (
            CodexJson,
            r#"{"type":"item.started","item":{"id":"item_3","type":"file_change","changes":[{"path":"/w/hello.txt","kind":"add"}],"status":"in_progress"}}"#,
            json!([{"type": "tool_call", "id": "item_3", "name": "file_change", "input": {"changes": [{"path": "/w/hello.txt", "kind": "add"}]}}]),
        ),
        (
            CodexJson,
            r#"{"type":"item.completed","item":{"id":"item_3","type":"file_change","changes":[{"path":"/w/hello.txt","kind":"add"},{"path":"/w/b.rs","kind":"update"}],"status":"completed"}}"#,
            json!([{"type": "tool_result", "id": "item_3", "ok": true, "output": "add /w/hello.txt\nupdate /w/b.rs"}]),
        ),
        (
            CodexJson,
            r#"{"type":"item.started","item":{"id":"item_4","type":"mcp_tool_call","server":"docs","tool":"search","arguments":{"q":"x"},"result":null,"error":null,"status":"in_progress"}}"#,
            json!([{"type": "tool_call", "id": "item_4", "name": "search", "input": {"q": "x"}}]),
        ),
        (
            CodexJson,
            r#"{"type":"item.completed","item":{"id":"item_4","type":"mcp_tool_call","server":"docs","tool":"search","arguments":{"q":"x"},"result":{"content":[{"type":"text","text":"found"}],"structured_content":null},"error":null,"status":"completed"}}"#,
            json!([{"type": "tool_result", "id": "item_4", "ok": true, "output": "found"}]),
        ),
        (
            CodexJson,
            r#"{"type":"item.completed","item":{"id":"item_5","type":"mcp_tool_call","server":"docs","tool":"search","arguments":{},"result":null,"error":{"message":"server gone"},"status":"failed"}}"#,
            json!([{"type": "tool_result", "id": "item_5", "ok": false, "output": "server gone"}]),
        ),
        (
            CodexJson,
            r#"{"type":"item.completed","item":{"id":"item_6","type":"reasoning","text":"**Planning**"}}"#,
            json!([{"type": "reasoning_delta", "text": "**Planning**"}]),
        ),
        (
            CodexJson,
            r#"{"type":"turn.failed","error":{"message":"exceeded retry limit, last status: 429 Too Many Requests"}}"#,
            json!([{"type": "error", "message": "exceeded retry limit, last status: 429 Too Many Requests", "class": "retry"}]),
        ),
        (
            CodexJson,
            r#"{"type":"error","message":"stream disconnected before completion: Rate limit reached"}"#,
            json!([{"type": "error", "message": "stream disconnected before completion: Rate limit reached", "class": "retry"}]),
        ),
        // Intermediate states and items without a mapping give nothing.
        (
            CodexJson,
            r#"{"type":"item.updated","item":{"id":"item_0","type":"command_execution","command":"ls","status":"in_progress"}}"#,
            json!([]),
        ),
        (
            CodexJson,
            r#"{"type":"item.started","item":{"id":"item_1","type":"agent_message","text":""}}"#,
            json!([]),
        ),
        (
            CodexJson,
            r#"{"type":"item.completed","item":{"id":"item_7","type":"todo_list","items":[]}}"#,
            json!([]),
        ),
        (
            CodexJson,
            r#"{"type":"item.completed","item":{"id":"item_8","type":"web_search","query":"q"}}"#,
            json!([]),
        ),
    ]);
}

#[test]
fn opencode_lines_map_to_events() {
    check(&[
        (
            OpencodeJson,
            r#"{"type":"step_start","timestamp":1767036059338,"sessionID":"ses_494719016ffe85dkDMj0FPRbHK","part":{"id":"prt_1","sessionID":"ses_494719016ffe85dkDMj0FPRbHK","messageID":"msg_1","type":"step-start","snapshot":"4b825dc"}}"#,
            json!([{"type": "session_started", "session_id": "ses_494719016ffe85dkDMj0FPRbHK"}]),
        ),
        (
            OpencodeJson,
            r#"{"type":"tool_use","timestamp":1767036059400,"sessionID":"ses_4947","part":{"id":"prt_2","sessionID":"ses_4947","messageID":"msg_1","type":"tool","tool":"bash","callID":"call_3_x","state":{"status":"completed","input":{"command":"echo hi > hello.txt"},"output":"(no output)","title":"echo hi > hello.txt","metadata":{"exit":0,"description":""},"time":{"start":1,"end":2}}}}"#,
            json!([
                {"type": "tool_call", "id": "call_3_x", "name": "bash", "input": {"command": "echo hi > hello.txt"}},
                {"type": "tool_result", "id": "call_3_x", "ok": true, "output": "(no output)"},
            ]),
        ),
        (
            OpencodeJson,
            r#"{"type":"step_finish","timestamp":1767036059500,"sessionID":"ses_4947","part":{"id":"prt_3","type":"step-finish","reason":"tool-calls","snapshot":"4b8","cost":0,"tokens":{"total":110,"input":100,"output":10,"reasoning":0,"cache":{"read":0,"write":0}}}}"#,
            json!([{"type": "usage", "input": 100, "output": 10, "cache_read": 0, "cache_write": 0, "reasoning": 0, "cost_usd": 0.0}]),
        ),
        (
            OpencodeJson,
            r#"{"type":"text","timestamp":1767036059600,"sessionID":"ses_4947","part":{"id":"prt_4","type":"text","text":"done","time":{"start":1,"end":2}}}"#,
            json!([{"type": "text_delta", "text": "done"}]),
        ),
        (
            OpencodeJson,
            r#"{"type":"step_finish","timestamp":1767036059700,"sessionID":"ses_4947","part":{"type":"step-finish","reason":"stop","cost":0.0021,"tokens":{"input":120,"output":4,"reasoning":2,"cache":{"read":30,"write":5}}}}"#,
            json!([
                {"type": "usage", "input": 120, "output": 4, "cache_read": 30, "cache_write": 5, "reasoning": 2, "cost_usd": 0.0021},
                {"type": "finished", "stop_reason": "stop"},
            ]),
        ),
        (
            OpencodeJson,
            r#"{"type":"reasoning","timestamp":1,"sessionID":"s","part":{"type":"reasoning","text":"hmm"}}"#,
            json!([{"type": "reasoning_delta", "text": "hmm"}]),
        ),
        (
            OpencodeJson,
            r#"{"type":"tool_use","timestamp":1,"sessionID":"s","part":{"type":"tool","tool":"write","callID":"c9","state":{"status":"error","input":{"filePath":"/w/a.txt","content":"x"},"error":"permission denied"}}}"#,
            json!([
                {"type": "tool_call", "id": "c9", "name": "write", "input": {"filePath": "/w/a.txt", "content": "x"}},
                {"type": "tool_result", "id": "c9", "ok": false, "output": "permission denied"},
            ]),
        ),
        (
            OpencodeJson,
            r#"{"type":"error","timestamp":1,"sessionID":"s","error":{"name":"APIError","data":{"message":"Too Many Requests","statusCode":429,"isRetryable":true}}}"#,
            json!([
                {"type": "session_started", "session_id": "s"},
                {"type": "error", "message": "Too Many Requests", "class": "retry", "http_status": 429},
            ]),
        ),
        (
            OpencodeJson,
            r#"{"type":"error","timestamp":1,"error":{"name":"ProviderAuthError","data":{"providerID":"local","message":"Unauthorized: invalid api key"}}}"#,
            json!([{"type": "error", "message": "Unauthorized: invalid api key", "class": "fatal"}]),
        ),
        (
            OpencodeJson,
            r#"{"type":"done","timestamp":1,"sessionID":"s","reason":"idle","rejected":[]}"#,
            json!([{"type": "finished"}]),
        ),
    ]);
}

#[test]
fn text_lines_keep_their_newline_so_deltas_concatenate_back() {
    let answer = "first line\n\n  indented {\"json\": 1}\r\nlast";
    let mut joined = String::new();
    for line in answer.split_inclusive('\n') {
        for e in parse_line(Text, line) {
            let AgentEvent::TextDelta { text } = e else {
                panic!("text gives text only: {e:?}");
            };
            joined.push_str(&text);
        }
    }
    assert_eq!(joined, "first line\n\n  indented {\"json\": 1}\nlast\n");
    // The same without newlines (a runner that strips them).
    let stripped: String = answer
        .lines()
        .flat_map(|l| parse_line(Text, l))
        .map(|e| match e {
            AgentEvent::TextDelta { text } => text,
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(stripped, "first line\n\n  indented {\"json\": 1}\nlast\n");
}

#[test]
fn junk_gives_no_events_in_every_json_format() {
    let junk = [
        "",
        "   ",
        "Reading additional input from stdin...",
        "WARNING: could not create PATH aliases",
        "{",
        "{\"type\":",
        "{\"type\":\"result\"",
        "{\"type\":\"result\",\"usage\":",
        "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"cut",
        "[1,2,3]",
        "null",
        "42",
        "\"type\"",
        "{\"type\":7}",
        "{\"type\":null}",
        "{\"no_type\":\"result\"}",
        "{\"type\":\"definitely_unknown\",\"x\":1}",
        "{\"type\":\"assistant\"}",
        "{\"type\":\"assistant\",\"message\":\"not an object\"}",
        "{\"type\":\"user\",\"message\":{\"content\":7}}",
        "{\"type\":\"item.completed\",\"item\":3}",
        "{\"type\":\"tool_use\",\"part\":{}}",
        "\u{feff}garbage \u{0}\u{7f}",
    ];
    for format in [ClaudeStreamJson, CodexJson, OpencodeJson] {
        for line in junk {
            assert_eq!(events(format, line), json!([]), "{format}: {line:?}");
        }
    }
}

#[test]
fn the_type_tag_is_read_in_any_key_order_spacing_or_escaping() {
    let want = json!([{"type": "session_started", "session_id": "t1"}]);
    for line in [
        r#"{"type":"thread.started","thread_id":"t1"}"#,
        r#"{"thread_id":"t1","type":"thread.started"}"#,
        r#"  { "type" : "thread.started" , "thread_id" : "t1" }  "#,
        r#"{"type":"thread\u002estarted","thread_id":"t1"}"#,
        "{\"type\":\"thread.started\",\"thread_id\":\"t1\"}\r\n",
    ] {
        assert_eq!(events(CodexJson, line), want, "{line}");
    }
}

#[test]
fn odd_counts_do_not_lose_the_result() {
    // Negative, fractional, null and string counts read as numbers or 0;
    // the result's usage and finish survive.
    let line = r#"{"type":"result","subtype":"success","is_error":false,"result":"ok","num_turns":"two","usage":{"input_tokens":-5,"output_tokens":7.9,"cache_read_input_tokens":null,"cache_creation_input_tokens":"3"},"total_cost_usd":"n/a"}"#;
    assert_eq!(
        events(ClaudeStreamJson, line),
        json!([
            {"type": "usage", "input": 0, "output": 7, "cache_read": 0, "cache_write": 3, "reasoning": 0},
            {"type": "finished", "stop_reason": "success", "final_text": "ok"},
        ])
    );
}

#[test]
fn stream_parser_announces_each_session_once() {
    let step = |sid: &str| {
        format!(
            r#"{{"type":"step_start","timestamp":1,"sessionID":"{sid}","part":{{"type":"step-start"}}}}"#
        )
    };
    let mut parser = StreamParser::new(OpencodeJson);
    assert_eq!(parser.format(), OpencodeJson);
    let mut announced = Vec::new();
    for line in [
        step("ses_a"),
        step("ses_a"),
        step("ses_a"),
        step("ses_b"),
        step("ses_a"),
    ] {
        // parse_line alone announces on every step (it is stateless)...
        assert_eq!(parse_line(OpencodeJson, &line).len(), 1);
        // ...and the stream parser once per session id.
        for e in parser.line(&line) {
            if let AgentEvent::SessionStarted { session_id, .. } = e {
                announced.push(session_id);
            }
        }
    }
    assert_eq!(announced, ["ses_a", "ses_b"]);
}

#[test]
fn stream_format_names() {
    assert_eq!(
        StreamFormat::NAMES,
        ["claude-stream-json", "codex-json", "opencode-json", "text"]
    );
    assert_eq!("codex-json".parse::<StreamFormat>().unwrap(), CodexJson);
    assert!("claude".parse::<StreamFormat>().is_err());
    assert!(coderig::names::LISTS.contains(&("stream_format", StreamFormat::NAMES)));
}

mod props_and_captures;
