//! Properties of the parsers on arbitrary JSON, and the captured transcripts of the real CLIs read back to their expected event sequences.

use super::*;

/// Arbitrary JSON values, nested a few levels, with keys the parsers look
/// for so the typed paths are reached, not only the tag check.
fn arb_json() -> impl Strategy<Value = Value> {
    let key = prop::sample::select(vec![
        "type",
        "subtype",
        "message",
        "content",
        "text",
        "thinking",
        "id",
        "name",
        "input",
        "tool_use_id",
        "is_error",
        "result",
        "usage",
        "input_tokens",
        "output_tokens",
        "session_id",
        "item",
        "status",
        "exit_code",
        "changes",
        "arguments",
        "error",
        "part",
        "state",
        "tokens",
        "cache",
        "cost",
        "reason",
        "sessionID",
        "callID",
        "tool",
        "data",
        "statusCode",
        "thread_id",
        "num_turns",
        "total_cost_usd",
    ]);
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        prop::sample::select(vec![
            "system",
            "init",
            "assistant",
            "user",
            "result",
            "tool_use",
            "tool_result",
            "text",
            "thread.started",
            "item.started",
            "item.completed",
            "turn.completed",
            "turn.failed",
            "error",
            "command_execution",
            "file_change",
            "mcp_tool_call",
            "agent_message",
            "step_start",
            "step_finish",
            "completed",
            "stop",
            "done",
            "reasoning",
        ])
        .prop_map(|s| Value::String(s.into())),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 64, 8, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key.clone(), inner), 0..8).prop_map(|kv| {
                Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
            }),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_strings_never_panic(line in ".{0,300}") {
        for format in StreamFormat::ALL {
            let _ = parse_line(*format, &line);
        }
    }

    #[test]
    fn arbitrary_json_never_panics(value in arb_json(), ty in prop::sample::select(vec![
        "system", "assistant", "user", "result", "thread.started", "item.started",
        "item.completed", "turn.completed", "turn.failed", "error", "step_start", "text",
        "reasoning", "tool_use", "step_finish", "done",
    ])) {
        // As generated, and with a known type first, the way the CLIs
        // write it (so the prefix path and the typed parse are reached).
        let mut rest = match &value {
            Value::Object(m) => m.clone(),
            _ => serde_json::Map::new(),
        };
        rest.remove("type");
        let rest = Value::Object(rest).to_string();
        let typed = if rest == "{}" {
            format!("{{\"type\":\"{ty}\"}}")
        } else {
            format!("{{\"type\":\"{ty}\",{}", &rest[1..])
        };
        for line in [value.to_string(), typed] {
            for format in StreamFormat::ALL {
                let _ = parse_line(*format, &line);
            }
        }
    }
}

/// One event in a line of text, with the fields a fixture test pins: the
/// tool call's name and target (path or command), the result's ok, the
/// usage counts, the finish, the error's class and status.
fn summary(e: &AgentEvent) -> String {
    match e {
        AgentEvent::SessionStarted { session_id, model } => {
            assert!(!session_id.is_empty());
            match model {
                Some(m) => format!("session {m}"),
                None => "session".into(),
            }
        }
        AgentEvent::TextDelta { text } => format!("text {text:?}"),
        AgentEvent::ReasoningDelta { .. } => "reasoning".into(),
        AgentEvent::ToolCall { id, name, input } => {
            assert!(!id.is_empty(), "a call id");
            let target = ["file_path", "filePath", "command"]
                .iter()
                .find_map(|k| input.get(*k).and_then(Value::as_str))
                .or_else(|| input.pointer("/changes/0/path").and_then(Value::as_str))
                .unwrap_or("");
            format!("call {name} {target}")
        }
        AgentEvent::ToolResult { ok, .. } => {
            format!("result {}", if *ok { "ok" } else { "failed" })
        }
        AgentEvent::Usage(u) => format!(
            "usage {}/{} cache {}/{} reasoning {} cost {:?}",
            u.input, u.output, u.cache_read, u.cache_write, u.reasoning, u.cost_usd
        ),
        AgentEvent::Finished {
            stop_reason,
            final_text,
            num_turns,
        } => format!(
            "finished {} {} {}",
            stop_reason.as_deref().unwrap_or("-"),
            final_text
                .as_deref()
                .map(|t| format!("{t:?}"))
                .unwrap_or("-".into()),
            num_turns.map(|n| n.to_string()).unwrap_or("-".into()),
        ),
        AgentEvent::Error {
            class, http_status, ..
        } => match http_status {
            Some(s) => format!("error {class} {s}"),
            None => format!("error {class}"),
        },
    }
}

/// Every fixture's events through [`StreamParser`], summarized; and the
/// checks that hold for any transcript: every result answers an earlier
/// call, at most one session per stream.
fn fixture(name: &str, format: StreamFormat) -> Vec<String> {
    let path = format!(
        "{}/tests/fixtures/agents/{name}.jsonl",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut parser = StreamParser::new(format);
    let mut calls = Vec::new();
    let mut out = Vec::new();
    for line in text.lines() {
        for e in parser.line(line) {
            match &e {
                AgentEvent::ToolCall { id, .. } => calls.push(id.clone()),
                AgentEvent::ToolResult { id, .. } => {
                    assert!(calls.contains(id), "{name}: result {id} without a call")
                }
                _ => {}
            }
            out.push(summary(&e));
        }
    }
    assert!(
        out.iter().filter(|s| s.starts_with("session")).count() <= 1,
        "{name}: {out:#?}"
    );
    out
}

/// Every captured transcript, whole, as the normalized event sequence a
/// runner sees (fixtures: `tests/fixtures/agents/README.md`).
#[test]
fn captured_transcripts_give_the_expected_event_sequences() {
    let claude_ok = |call: &str, result: &str| {
        vec![
            "session scripted-model".to_string(),
            format!("call {call}"),
            format!("result {result}"),
            "text \"done\"".into(),
            "usage 400/40 cache 0/0 reasoning 0 cost Some(0.003)".into(),
            "finished success \"done\" 2".into(),
        ]
    };
    let qwen = |call: Option<&str>| {
        let mut v = vec!["session scripted-model".to_string()];
        if let Some(call) = call {
            v.extend([format!("call {call}"), "result ok".into()]);
        }
        v.push("text \"done\"".into());
        v.push(match call {
            Some(_) => "usage 400/40 cache 0/0 reasoning 0 cost None".into(),
            // Read-only turns make side calls that the result counts.
            None => "usage 600/60 cache 0/0 reasoning 0 cost None".into(),
        });
        v.push(format!(
            "finished success \"done\" {}",
            if call.is_some() { 2 } else { 1 }
        ));
        v
    };
    let codex = |call: Option<(&str, &str)>| {
        let mut v = vec!["session".to_string()];
        if let Some((call, result)) = call {
            v.extend([format!("call {call}"), format!("result {result}")]);
        }
        v.extend([
            "text \"done\"".into(),
            "usage 400/40 cache 0/0 reasoning 0 cost None".into(),
            "finished completed - -".into(),
        ]);
        v
    };
    let step = "usage 200/20 cache 0/0 reasoning 0 cost Some(0.0)";
    let opencode = |call: Option<&str>| {
        let mut v = vec!["session".to_string()];
        if let Some(call) = call {
            v.extend([format!("call {call}"), "result ok".into(), step.into()]);
        }
        v.extend([
            "text \"done\"".into(),
            step.into(),
            "finished stop - -".into(),
        ]);
        v
    };
    let shell = "echo hi > hello.txt";
    let codex_shell = "command_execution /bin/bash -lc 'echo hi > hello.txt'";
    let table: Vec<(&str, StreamFormat, Vec<String>)> = vec![
        ("claude-write", ClaudeStreamJson, claude_ok("Write /WORKDIR/hello.txt", "ok")),
        ("claude-edit", ClaudeStreamJson, claude_ok("Write /WORKDIR/hello.txt", "ok")),
        ("claude-shell", ClaudeStreamJson, claude_ok(&format!("Bash {shell}"), "ok")),
        ("claude-edit-shell", ClaudeStreamJson, claude_ok(&format!("Bash {shell}"), "ok")),
        // Denied: the call is made, its result is an error, the turn ends well.
        ("claude-readonly", ClaudeStreamJson, claude_ok("Write /WORKDIR/hello.txt", "failed")),
        ("claude-readonly-shell", ClaudeStreamJson, claude_ok(&format!("Bash {shell}"), "failed")),
        ("claude-plan", ClaudeStreamJson, claude_ok("Write /WORKDIR/hello.txt", "failed")),
        (
            "claude-error",
            ClaudeStreamJson,
            vec![
                "session scripted-model+status_500".into(),
                // Claude Code restates the API error as a synthetic assistant message.
                "text \"API Error: 500 scripted status 500. This is a server-side issue, usually temporary — try again in a moment. If it persists, check your inference gateway (127.0.0.1:36149).\"".into(),
                "usage 0/0 cache 0/0 reasoning 0 cost Some(0.0)".into(),
                "error retry 500".into(),
                // Sic: subtype `success` with `is_error: true`.
                "finished success - 1".into(),
            ],
        ),
        ("qwen-write", ClaudeStreamJson, qwen(Some("write_file /WORKDIR/hello.txt"))),
        ("qwen-edit", ClaudeStreamJson, qwen(Some("write_file /WORKDIR/hello.txt"))),
        // auto-edit offers no shell tool: the file is written with write_file.
        ("qwen-edit-shell", ClaudeStreamJson, qwen(Some("write_file /WORKDIR/hello.txt"))),
        ("qwen-shell", ClaudeStreamJson, qwen(Some(&format!("run_shell_command {shell}")))),
        // Read-only: the write and shell tools are not offered at all.
        ("qwen-readonly", ClaudeStreamJson, qwen(None)),
        ("qwen-readonly-shell", ClaudeStreamJson, qwen(None)),
        ("qwen-plan", ClaudeStreamJson, qwen(None)),
        (
            "qwen-error",
            ClaudeStreamJson,
            vec![
                "session scripted-model+status_500".into(),
                "text \"[API Error: 500 scripted status 500]\"".into(),
                // No usage event (all zero, no cost); the status is read
                // from the message, which makes a 500 retryable.
                "error retry 500".into(),
                "finished error_during_execution - 1".into(),
            ],
        ),
        ("codex-shell", CodexJson, codex(Some((codex_shell, "ok")))),
        ("codex-edit-shell", CodexJson, codex(Some((codex_shell, "ok")))),
        ("codex-readonly-shell", CodexJson, codex(Some((codex_shell, "failed")))),
        ("codex-write", CodexJson, codex(Some(("file_change /WORKDIR/hello.txt", "ok")))),
        ("codex-edit", CodexJson, codex(Some(("file_change /WORKDIR/hello.txt", "ok")))),
        // The rejected patch shows only on stderr.
        ("codex-readonly", CodexJson, codex(None)),
        // `error` then `turn.failed`, the same message ("high demand"): two
        // retryable errors, no status in the stream.
        ("codex-error", CodexJson, vec!["session".into(), "error retry".into(), "error retry".into()]),
        ("opencode-write", OpencodeJson, opencode(Some("write /WORKDIR/hello.txt"))),
        ("opencode-edit", OpencodeJson, opencode(Some("write /WORKDIR/hello.txt"))),
        ("opencode-shell", OpencodeJson, opencode(Some(&format!("bash {shell}")))),
        ("opencode-readonly", OpencodeJson, opencode(None)),
        ("opencode-readonly-shell", OpencodeJson, opencode(None)),
        // One `error` line and nothing else: still a session.
        ("opencode-error", OpencodeJson, vec!["session".into(), "error retry 500".into()]),
        (
            "cached/qwen-usage-cached",
            ClaudeStreamJson,
            vec![
                "session scripted-model+usage_cached".into(),
                "call write_file /WORKDIR/hello.txt".into(),
                "result ok".into(),
                "text \"done\"".into(),
                // 2 calls of 200 prompt tokens, 50 of them cached.
                "usage 300/40 cache 100/0 reasoning 0 cost None".into(),
                "finished success \"done\" 2".into(),
            ],
        ),
        (
            "cached/opencode-usage-cached",
            OpencodeJson,
            vec![
                "session".into(),
                "call write /WORKDIR/hello.txt".into(),
                "result ok".into(),
                "usage 150/20 cache 50/0 reasoning 0 cost Some(0.0)".into(),
                "text \"done\"".into(),
                "usage 150/20 cache 50/0 reasoning 0 cost Some(0.0)".into(),
                "finished stop - -".into(),
            ],
        ),
    ];
    // Every capture is in the table.
    let dir = format!("{}/tests/fixtures/agents", env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".jsonl"))
        .map(|n| n.trim_end_matches(".jsonl").to_string())
        .collect();
    files.extend(
        std::fs::read_dir(format!("{dir}/cached"))
            .unwrap()
            .map(|e| format!("cached/{}", e.unwrap().file_name().into_string().unwrap()))
            .filter(|n| n.ends_with(".jsonl"))
            .map(|n| n.trim_end_matches(".jsonl").to_string()),
    );
    files.sort();
    let mut named: Vec<String> = table.iter().map(|(n, _, _)| n.to_string()).collect();
    named.sort();
    assert_eq!(files, named, "a row per fixture");
    for (name, format, want) in &table {
        assert_eq!(&fixture(name, *format), want, "{name}");
    }
}

#[test]
fn every_captured_line_is_json_with_the_type_first() {
    // The parsers' fast path (the tag read off the prefix) is the common
    // path only if the CLIs really write `{"type":"…"` first.
    let dir = format!("{}/tests/fixtures/agents", env!("CARGO_MANIFEST_DIR"));
    let mut lines = 0;
    for sub in ["", "/cached"] {
        for entry in std::fs::read_dir(format!("{dir}{sub}")).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
                continue;
            }
            for line in std::fs::read_to_string(&path).unwrap().lines() {
                assert!(
                    line.starts_with("{\"type\":\""),
                    "{}: {line}",
                    path.display()
                );
                serde_json::from_str::<Value>(line).unwrap();
                lines += 1;
            }
        }
    }
    assert!(lines > 100, "{lines} lines");
}
