//! The call reader's tests: arguments: repair, coercion, aliases, tool names.

use super::*;
use serde_json::json;

#[test]
fn arguments_table() {
    // (tool, arguments text, expected arguments or None for rejected, repaired)
    let cases: &[(&str, &str, Option<Value>, bool)] = &[
        ("list_files", "", Some(json!({})), false),
        ("list_files", "  ", Some(json!({})), false),
        (
            "read_file",
            r#"{"path": "a"}"#,
            Some(json!({"path": "a"})),
            false,
        ),
        // trailing comma
        (
            "read_file",
            r#"{"path": "a",}"#,
            Some(json!({"path": "a"})),
            true,
        ),
        // single quotes
        (
            "read_file",
            "{'path': 'a b'}",
            Some(json!({"path": "a b"})),
            true,
        ),
        // an unclosed brace
        (
            "read_file",
            r#"{"path": "a""#,
            Some(json!({"path": "a"})),
            true,
        ),
        // unquoted keys
        (
            "read_file",
            r#"{path: "a"}"#,
            Some(json!({"path": "a"})),
            true,
        ),
        // raw newline and tab inside a string (llama.cpp without grammar)
        (
            "write_file",
            "{\"path\": \"a\", \"content\": \"x\n\ty\"}",
            Some(json!({"path": "a", "content": "x\n\ty"})),
            true,
        ),
        // a bad escape (a regex written as is)
        (
            "grep",
            r#"{"pattern": "\d+\.rs"}"#,
            Some(json!({"pattern": "\\d+\\.rs"})),
            true,
        ),
        // non-ASCII above U+FFFF survives the repair
        (
            "write_file",
            "{'path': 'a', 'content': 'ok 😀 é',}",
            Some(json!({"path": "a", "content": "ok 😀 é"})),
            true,
        ),
        // double-encoded
        (
            "read_file",
            r#""{\"path\": \"a\"}""#,
            Some(json!({"path": "a"})),
            true,
        ),
        // null arguments
        ("list_files", "null", Some(json!({})), true),
        // not an object
        ("read_file", "[1, 2]", None, false),
        ("read_file", r#""src/main.rs""#, None, false),
        ("read_file", "42", None, false),
    ];
    for (tool, args, want, repaired) in cases {
        let r = one(tool, args);
        match want {
            Some(want) => {
                assert!(r.rejected.is_empty(), "{args}: {:?}", r.rejected);
                assert_eq!(&r.calls[0].call.arguments, want, "{args}");
                let source = if *repaired {
                    CallSource::Repaired
                } else {
                    CallSource::Structured
                };
                assert_eq!(r.calls[0].source, source, "{args}: {:?}", r.calls[0].notes);
            }
            None => {
                assert!(r.calls.is_empty(), "{args}");
                let rj = &r.rejected[0];
                assert_eq!(rj.raw, *args);
                assert!(!rj.cut);
                assert_eq!(rj.call.arguments, json!({}));
                assert!(
                    rj.message.contains("read_file {path, limit?, offset?}"),
                    "{}",
                    rj.message
                );
            }
        }
    }
}

#[test]
fn broken_beyond_repair_is_rejected_with_the_signature() {
    let deep = "[".repeat(100_000);
    for args in ["```json\n{'path': 'a'\n```", deep.as_str()] {
        let r = one("read_file", args);
        assert!(r.calls.is_empty(), "{args:.40}");
        assert!(
            r.rejected[0].message.contains("not valid JSON"),
            "{}",
            r.rejected[0].message
        );
    }
}

#[test]
fn repair_within_its_guard_fits_a_small_stack() {
    // The most brackets the guard lets through, on a 1 MiB stack.
    let text = format!(
        "{{\"a\": {}",
        "[".repeat(super::json::REPAIR_MAX_OPENERS - 1)
    );
    let ok = std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(move || super::json::repair(&text).is_some())
        .unwrap()
        .join();
    assert!(ok.is_ok());
}

#[test]
fn coercion_table() {
    let cases: &[(&str, Value, Value, &str)] = &[
        (
            "read_file",
            json!({"path": "a", "limit": "12"}),
            json!({"path": "a", "limit": 12}),
            "`limit`: string → integer",
        ),
        (
            "read_file",
            json!({"path": "a", "offset": 3.0}),
            json!({"path": "a", "offset": 3}),
            "`offset`: number → integer",
        ),
        (
            "read_file",
            json!({"path": "a", "offset": null}),
            json!({"path": "a"}),
            "`offset`: null removed",
        ),
        (
            "read_file",
            json!({"path": 7}),
            json!({"path": "7"}),
            "`path`: number → string",
        ),
        (
            "edit_file",
            json!({"path": "a", "old": "x", "new": "y", "replace_all": "true"}),
            json!({"path": "a", "old": "x", "new": "y", "replace_all": true}),
            "`replace_all`: string → boolean",
        ),
        (
            "write_file",
            json!({"path": "a.json", "content": {"k": [1]}}),
            json!({"path": "a.json", "content": "{\"k\":[1]}"}),
            "`content`: object → string",
        ),
        (
            "edit_lines",
            json!({"path": "a", "start": 1, "end": 2, "lines": "[\"x\", \"y\"]"}),
            json!({"path": "a", "start": 1, "end": 2, "lines": ["x", "y"]}),
            "`lines`: string → array",
        ),
        (
            "edit_lines",
            json!({"path": "a", "start": "1", "end": 2, "lines": "only"}),
            json!({"path": "a", "start": 1, "end": 2, "lines": ["only"]}),
            "`lines`: string → array",
        ),
    ];
    for (tool, args, want, note) in cases {
        let r = one(tool, &args.to_string());
        let c = &r.calls[0];
        assert_eq!(&c.call.arguments, want, "{args}");
        assert_eq!(c.source, CallSource::Repaired);
        assert!(c.notes.iter().any(|n| n == note), "{args}: {:?}", c.notes);
    }
    // What does not convert is left for the tool to answer.
    let r = one(
        "read_file",
        r#"{"path": "a", "limit": "many", "extra": 1, "offset": true}"#,
    );
    assert_eq!(
        r.calls[0].call.arguments,
        json!({"path": "a", "limit": "many", "extra": 1, "offset": true})
    );
    assert_eq!(r.calls[0].source, CallSource::Structured);
    // A required property's null stays.
    let r = one("read_file", r#"{"path": null}"#);
    assert_eq!(r.calls[0].call.arguments, json!({"path": null}));
}

#[test]
fn alias_table() {
    let cases: &[(&str, Value, Value)] = &[
        ("read_file", json!({"file_path": "a"}), json!({"path": "a"})),
        (
            "read_file",
            json!({"absolute_path": "/w/a"}),
            json!({"path": "/w/a"}),
        ),
        (
            "edit_file",
            json!({"path": "a", "old_string": "x", "new_string": "y"}),
            json!({"path": "a", "old": "x", "new": "y"}),
        ),
        (
            "edit_file",
            json!({"filename": "a", "search": "x", "replace": "y"}),
            json!({"path": "a", "old": "x", "new": "y"}),
        ),
        (
            "run",
            json!({"cmd": "ls", "timeout": 30}),
            json!({"command": "ls", "timeout_s": 30}),
        ),
        (
            "write_file",
            json!({"path": "a", "file_text": "x"}),
            json!({"path": "a", "content": "x"}),
        ),
        ("grep", json!({"query": "fn"}), json!({"pattern": "fn"})),
        // The target is there already: the alias stays, for the tool to refuse.
        (
            "read_file",
            json!({"path": "a", "file_path": "b"}),
            json!({"path": "a", "file_path": "b"}),
        ),
        // The tool has no target: nothing moves.
        ("finish", json!({"text": "done"}), json!({"text": "done"})),
    ];
    for (tool, args, want) in cases {
        let r = one(tool, &args.to_string());
        assert_eq!(&r.calls[0].call.arguments, want, "{tool} {args}");
    }
    let r = one("read_file", r#"{"file_path": "a"}"#);
    assert_eq!(r.calls[0].notes, ["argument `file_path` read as `path`"]);
}

#[test]
fn tool_name_table() {
    let cases: &[(&str, Option<&str>)] = &[
        ("read_file", Some("read_file")),
        ("ReadFile", Some("read_file")),
        ("read-file", Some("read_file")),
        ("READ_FILE", Some("read_file")),
        ("functions.read_file", Some("read_file")),
        ("Read", Some("read_file")),
        ("write", Some("write_file")),
        ("edit", None), // edit_file or edit_lines
        ("bash", None),
        ("", None),
    ];
    for (given, want) in cases {
        let r = one(
            given,
            r#"{"path": "a", "content": "", "old": "", "new": ""}"#,
        );
        match want {
            Some(want) => {
                assert_eq!(r.calls[0].call.name, *want, "{given}");
                let renamed = given != want;
                assert_eq!(
                    r.calls[0].source == CallSource::Repaired,
                    renamed,
                    "{given}"
                );
            }
            None => {
                let rj = &r.rejected[0];
                assert_eq!(rj.call.name, *given);
                assert!(
                    rj.message.contains("read_file, list_files, grep"),
                    "{}",
                    rj.message
                );
            }
        }
    }
}
