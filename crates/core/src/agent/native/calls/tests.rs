//! Tests of the call reader: tables, captures from real servers, and
//! properties.

use super::*;
use proptest::prelude::*;
use serde_json::json;

fn spec(name: &str, props: Value, required: &[&str]) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: String::new(),
        parameters: json!({
            "type": "object",
            "properties": props,
            "required": required,
            "additionalProperties": false,
        }),
    }
}

/// coderig's tools, with the schemas' types as offered.
fn tools() -> Vec<ToolSpec> {
    vec![
        spec(
            "read_file",
            json!({"path": {"type": "string"}, "offset": {"type": "integer"}, "limit": {"type": "integer"}}),
            &["path"],
        ),
        spec(
            "list_files",
            json!({"path": {"type": "string"}, "depth": {"type": "integer"}, "glob": {"type": "string"}}),
            &[],
        ),
        spec(
            "grep",
            json!({"pattern": {"type": "string"}, "path": {"type": "string"}, "glob": {"type": "string"}, "max_results": {"type": "integer"}}),
            &["pattern"],
        ),
        spec(
            "edit_file",
            json!({"path": {"type": "string"}, "old": {"type": "string"}, "new": {"type": "string"}, "replace_all": {"type": "boolean"}}),
            &["path", "old", "new"],
        ),
        spec(
            "write_file",
            json!({"path": {"type": "string"}, "content": {"type": "string"}}),
            &["path", "content"],
        ),
        spec(
            "edit_lines",
            json!({"path": {"type": "string"}, "start": {"type": "integer"}, "end": {"type": "integer"}, "lines": {"type": "array", "items": {"type": "string"}}}),
            &["path", "start", "end", "lines"],
        ),
        spec(
            "run",
            json!({"command": {"type": "string"}, "timeout_s": {"type": "integer"}}),
            &["command"],
        ),
        spec(
            "finish",
            json!({"summary": {"type": "string"}}),
            &["summary"],
        ),
    ]
}

fn frag(index: Option<u64>, id: Option<&str>, name: Option<&str>, args: &str) -> CallFragment {
    CallFragment {
        index,
        id: id.map(str::to_string),
        name: name.map(str::to_string),
        arguments: args.to_string(),
    }
}

fn read_with(
    frags: Vec<CallFragment>,
    text: &str,
    finish: Option<FinishReason>,
    ids: &mut IdMinter,
) -> ReadCalls {
    let mut acc = CallAccumulator::default();
    for f in frags {
        acc.push(f);
    }
    acc.finish(text, finish.as_ref(), &tools(), ids)
}

fn read(frags: Vec<CallFragment>, text: &str, finish: Option<FinishReason>) -> ReadCalls {
    read_with(frags, text, finish, &mut IdMinter::new("t"))
}

/// One structured call with these arguments, read at a natural stop.
fn one(name: &str, args: &str) -> ReadCalls {
    read(
        vec![frag(Some(0), Some("c1"), Some(name), args)],
        "",
        Some(FinishReason::ToolCalls),
    )
}

fn text_only(text: &str, finish: Option<FinishReason>) -> ReadCalls {
    read(Vec::new(), text, finish)
}

/// The invariants every reading keeps, whatever came in.
fn check_invariants(r: &ReadCalls, tools: &[ToolSpec]) {
    let mut seen = HashSet::new();
    for c in &r.calls {
        assert!(
            tools.iter().any(|t| t.name == c.call.name),
            "not offered: {}",
            c.call.name
        );
        assert!(c.call.arguments.is_object());
        assert!(seen.insert(c.call.id.clone()), "repeated id {}", c.call.id);
        assert_eq!(
            c.source == CallSource::Structured,
            c.notes.is_empty() && c.source != CallSource::FromText
        );
    }
    for rj in &r.rejected {
        assert_eq!(rj.call.arguments, json!({}));
        assert!(!rj.message.is_empty());
        assert!(
            seen.insert(rj.call.id.clone()),
            "repeated id {}",
            rj.call.id
        );
    }
    assert_eq!(r.text, r.text.trim());
}

// ---- ids -----------------------------------------------------------------

#[test]
fn minter_prefixes_sanitizes_and_never_repeats() {
    let mut ids = IdMinter::new("turn 7/ä");
    assert_eq!(ids.mint(), "call_turn7_1");
    assert_eq!(ids.mint(), "call_turn7_2");
    let mut bare = IdMinter::new("");
    assert_eq!(bare.mint(), "call_1");
    // A server id that looks minted is taken, and minting skips it.
    assert_eq!(bare.keep_or_mint(Some("call_2")), "call_2");
    assert_eq!(bare.mint(), "call_3");
    // A repeated server id is replaced.
    assert_eq!(bare.keep_or_mint(Some("call_2")), "call_4");
    assert_eq!(bare.keep_or_mint(Some("  ")), "call_5");
}

#[test]
fn missing_and_repeated_ids_are_minted_across_the_turn() {
    let mut ids = IdMinter::new("t");
    let r = read_with(
        vec![
            frag(Some(0), None, Some("read_file"), r#"{"path": "a"}"#),
            frag(Some(1), Some("x"), Some("read_file"), r#"{"path": "b"}"#),
            frag(Some(2), Some("x"), Some("read_file"), r#"{"path": "c"}"#),
        ],
        "",
        Some(FinishReason::ToolCalls),
        &mut ids,
    );
    let got: Vec<_> = r.calls.iter().map(|c| c.call.id.as_str()).collect();
    assert_eq!(got, ["call_t_1", "x", "call_t_2"]);
    // The next reply of the turn repeats the server's id: minted again.
    let r2 = read_with(
        vec![frag(
            Some(0),
            Some("x"),
            Some("read_file"),
            r#"{"path": "d"}"#,
        )],
        "",
        None,
        &mut ids,
    );
    assert_eq!(r2.calls[0].call.id, "call_t_3");
}

// ---- the accumulator -----------------------------------------------------

#[test]
fn openai_stream_split_mid_escape_reads_back() {
    // Chat Completions: id and name on the first piece, the arguments in
    // pieces, two calls interleaved; one piece ends inside `\n`.
    let r = read(
        vec![
            frag(Some(0), Some("call_a"), Some("write_file"), ""),
            frag(
                Some(0),
                None,
                None,
                r#"{"path": "a.txt", "content": "line 1\"#,
            ),
            frag(Some(1), Some("call_b"), Some("read_file"), r#"{"pa"#),
            frag(Some(0), None, None, r#"nline 2\"#),
            frag(Some(0), None, None, r#"u00e9"}"#),
            frag(Some(1), None, None, r#"th": "b.txt"}"#),
        ],
        "",
        Some(FinishReason::ToolCalls),
    );
    assert!(r.rejected.is_empty(), "{:?}", r.rejected);
    assert_eq!(r.calls.len(), 2);
    assert_eq!(r.calls[0].call.id, "call_a");
    assert_eq!(
        r.calls[0].call.arguments,
        json!({"path": "a.txt", "content": "line 1\nline 2é"})
    );
    assert_eq!(r.calls[0].source, CallSource::Structured);
    assert_eq!(r.calls[1].call.arguments, json!({"path": "b.txt"}));
}

#[test]
fn ollama_constant_index_zero_with_two_calls() {
    // Ollama's OpenAI endpoint: every call whole, every call at index 0.
    let r = read(
        vec![
            frag(
                Some(0),
                Some("call_x1"),
                Some("read_file"),
                r#"{"path":"src/lib.rs"}"#,
            ),
            frag(
                Some(0),
                Some("call_x2"),
                Some("grep"),
                r#"{"pattern":"fn main"}"#,
            ),
        ],
        "",
        Some(FinishReason::ToolCalls),
    );
    let names: Vec<_> = r.calls.iter().map(|c| c.call.name.as_str()).collect();
    assert_eq!(names, ["read_file", "grep"]);
    assert_eq!(r.calls[1].call.id, "call_x2");
}

#[test]
fn ollama_index_zero_without_ids_same_tool_twice() {
    let r = read(
        vec![
            frag(Some(0), None, Some("read_file"), r#"{"path":"a"}"#),
            frag(Some(0), None, Some("read_file"), r#"{"path":"b"}"#),
        ],
        "",
        Some(FinishReason::Stop),
    );
    assert_eq!(r.calls.len(), 2);
    assert_eq!(r.calls[1].call.arguments, json!({"path": "b"}));
    assert_ne!(r.calls[0].call.id, r.calls[1].call.id);
}

#[test]
fn index_zero_without_ids_names_first_then_split_arguments() {
    // The scripted server's index_reuse+no_ids: each call's name on a
    // piece of its own with empty arguments, the arguments in pieces.
    let r = read(
        vec![
            frag(Some(0), None, Some("read_file"), ""),
            frag(Some(0), None, None, r#"{"path""#),
            frag(Some(0), None, None, r#":"a"}"#),
            frag(Some(0), None, Some("read_file"), ""),
            frag(Some(0), None, None, r#"{"limit":5,""#),
            frag(Some(0), None, None, r#"path":"b"}"#),
        ],
        "",
        Some(FinishReason::ToolCalls),
    );
    assert_eq!(r.calls.len(), 2, "{r:?}");
    assert_eq!(r.calls[0].call.arguments, json!({"path": "a"}));
    assert_eq!(r.calls[1].call.arguments, json!({"path": "b", "limit": 5}));
}

#[test]
fn fragments_without_index_or_id() {
    // A server that numbers nothing: a name opens a call, pieces join it.
    let r = read(
        vec![
            frag(None, None, Some("read_file"), ""),
            frag(None, None, None, r#"{"path""#),
            frag(None, None, None, r#": "a"}"#),
            frag(None, None, Some("run"), r#"{"command""#),
            frag(None, None, None, r#": "ls"}"#),
        ],
        "",
        Some(FinishReason::ToolCalls),
    );
    assert!(r.rejected.is_empty());
    assert_eq!(r.calls[0].call.arguments, json!({"path": "a"}));
    assert_eq!(r.calls[1].call.arguments, json!({"command": "ls"}));
    assert_eq!(r.calls[0].call.id, "call_t_1");
}

#[test]
fn repeated_id_and_name_on_every_piece_join_one_call() {
    let r = read(
        vec![
            frag(Some(0), Some("c"), Some("run"), r#"{"command":"#),
            frag(Some(0), Some("c"), Some("run"), r#" "ls"}"#),
        ],
        "",
        None,
    );
    assert_eq!(r.calls.len(), 1);
    assert_eq!(r.calls[0].call.arguments, json!({"command": "ls"}));
}

#[test]
fn blank_fragments_are_no_call() {
    let mut acc = CallAccumulator::default();
    assert!(acc.is_empty());
    acc.push(frag(Some(0), Some("c"), None, " "));
    assert!(acc.is_empty());
    let r = acc.finish(
        "done",
        Some(&FinishReason::Stop),
        &tools(),
        &mut IdMinter::new("t"),
    );
    assert!(r.calls.is_empty() && r.rejected.is_empty());
    assert_eq!(r.text, "done");
}

// ---- arguments -----------------------------------------------------------

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

// ---- the length limit ----------------------------------------------------

#[test]
fn write_file_cut_at_length_is_rejected_never_repaired() {
    let frags = || {
        vec![
            frag(
                Some(0),
                Some("call_w"),
                Some("write_file"),
                r#"{"path": "src/big.rs", "content": "fn main() {\n"#,
            ),
            frag(Some(0), None, None, r#"    println!(\"hel"#),
        ]
    };
    let r = read(frags(), "Writing the file.", Some(FinishReason::Length));
    assert!(r.calls.is_empty());
    let rj = &r.rejected[0];
    assert!(rj.cut);
    assert_eq!(
        rj.call,
        ToolCall {
            id: "call_w".into(),
            name: "write_file".into(),
            arguments: json!({})
        }
    );
    assert!(rj.raw.ends_with("println!(\\\"hel"));
    assert!(
        rj.message.contains("output-token limit") && rj.message.contains("edit_file"),
        "{}",
        rj.message
    );
    assert_eq!(r.text, "Writing the file.");
    let mut counts = CallsRead::default();
    r.count_into(&mut counts);
    assert_eq!(
        counts,
        CallsRead {
            cut: 1,
            ..Default::default()
        }
    );
    // The same text at a natural stop is repaired (the model closed it).
    let r = read(frags(), "", Some(FinishReason::Stop));
    assert_eq!(r.calls[0].source, CallSource::Repaired);
}

#[test]
fn complete_calls_at_length_still_run() {
    let r = read(
        vec![
            frag(Some(0), Some("a"), Some("read_file"), r#"{"path": "a"}"#),
            frag(Some(1), Some("b"), Some("read_file"), r#"{"path": "b",}"#),
            frag(Some(2), Some("c"), Some("list_files"), ""),
        ],
        "",
        Some(FinishReason::Length),
    );
    // Complete (the second malformed but closed): run; the empty one: cut.
    assert_eq!(r.calls.len(), 2);
    assert_eq!(r.calls[1].source, CallSource::Repaired);
    assert!(r.rejected[0].cut);
}

// ---- calls written in the text -------------------------------------------

#[test]
fn vllm_leaves_qwen3_coder_xml_in_content() {
    // vLLM without --tool-call-parser qwen3_coder: the markup is content.
    let text = "I'll look at the entry point first.\n\n<tool_call>\n<function=read_file>\n<parameter=path>\nsrc/main.rs\n</parameter>\n<parameter=limit>\n50\n</parameter>\n</function>\n</tool_call>";
    let r = text_only(text, Some(FinishReason::Stop));
    assert_eq!(r.text, "I'll look at the entry point first.");
    assert_eq!(r.calls.len(), 1);
    let c = &r.calls[0];
    assert_eq!(c.source, CallSource::FromText);
    assert_eq!(c.call.name, "read_file");
    assert_eq!(
        c.call.arguments,
        json!({"path": "src/main.rs", "limit": 50})
    );
    assert!(c.notes.is_empty(), "{:?}", c.notes);
    assert_eq!(c.call.id, "call_t_1");
    let mut counts = CallsRead::default();
    r.count_into(&mut counts);
    assert_eq!(counts.from_text, 1);
}

#[test]
fn qwen3_coder_xml_values_are_raw_text() {
    let text = "<function=write_file>\n<parameter=path>\nsrc/a.py\n</parameter>\n<parameter=content>\n\ndef f():\n    return {\"a\": 1}\n\n</parameter>\n</function>\n<function=edit_lines>\n<parameter=path>a</parameter>\n<parameter=start>\n3\n</parameter>\n<parameter=end>4</parameter>\n<parameter=lines>\n[\"x\", \"y\"]\n</parameter>\n</function>";
    let r = text_only(text, Some(FinishReason::Stop));
    assert!(r.rejected.is_empty(), "{:?}", r.rejected);
    assert_eq!(
        r.calls[0].call.arguments,
        json!({"path": "src/a.py", "content": "\ndef f():\n    return {\"a\": 1}\n"})
    );
    assert_eq!(
        r.calls[1].call.arguments,
        json!({"path": "a", "start": 3, "end": 4, "lines": ["x", "y"]})
    );
    assert_eq!(r.text, "");
}

#[test]
fn qwen3_coder_xml_without_closing_tags_at_a_stop() {
    // `</tool_call>` eaten as a stop string; `</parameter>` left out.
    let text = "<tool_call>\n<function=run>\n<parameter=command>\ncargo test\n</function>";
    let r = text_only(text, Some(FinishReason::Stop));
    assert_eq!(r.calls[0].call.arguments, json!({"command": "cargo test"}));
}

#[test]
fn hermes_call_from_llama_cpp_without_a_tool_template() {
    // llama.cpp serving a Hermes-style model with no tool-call template:
    // the call is plain content.
    let text = "Let me run the tests.\n<tool_call>\n{\"name\": \"run\", \"arguments\": {\"command\": \"cargo test -p core\", \"timeout_s\": \"120\"}}\n</tool_call>";
    let r = text_only(text, Some(FinishReason::Stop));
    assert_eq!(r.text, "Let me run the tests.");
    let c = &r.calls[0];
    assert_eq!(c.source, CallSource::FromText);
    assert_eq!(
        c.call.arguments,
        json!({"command": "cargo test -p core", "timeout_s": 120})
    );
    assert_eq!(c.notes, ["`timeout_s`: string → integer"]);
}

#[test]
fn hermes_variants() {
    let cases: &[(&str, Value)] = &[
        // "parameters", and a stray closing brace before the end tag
        ("<tool_call>{\"name\": \"read_file\", \"parameters\": {\"path\": \"a\"}}}</tool_call>", json!({"path": "a"})),
        // arguments as a JSON string
        ("<tool_call>{\"name\": \"read_file\", \"arguments\": \"{\\\"path\\\": \\\"a\\\"}\"}</tool_call>", json!({"path": "a"})),
        // OpenAI's shape, no end tag
        ("<tool_call>{\"type\": \"function\", \"function\": {\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}}", json!({"path": "a"})),
        // broken JSON, repaired
        ("<tool_call>{'name': 'read_file', 'arguments': {'path': 'a',}}</tool_call>", json!({"path": "a"})),
        // no arguments
        ("<tool_call>{\"name\": \"list_files\"}</tool_call>", json!({})),
    ];
    for (text, want) in cases {
        let r = text_only(text, None);
        assert!(r.rejected.is_empty(), "{text}: {:?}", r.rejected);
        assert_eq!(&r.calls[0].call.arguments, want, "{text}");
        assert_eq!(r.text, "", "{text}");
    }
}

#[test]
fn fenced_json_calls() {
    let text = "Reading both.\n```json\n[{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}, {\"tool\": \"grep\", \"args\": {\"pattern\": \"x\"}}]\n```\nThen I'll edit.";
    let r = text_only(text, Some(FinishReason::Stop));
    let names: Vec<_> = r.calls.iter().map(|c| c.call.name.as_str()).collect();
    assert_eq!(names, ["read_file", "grep"]);
    assert_eq!(r.text, "Reading both.\n\nThen I'll edit.");
    assert_ne!(r.calls[0].call.id, r.calls[1].call.id);
}

#[test]
fn fenced_json_that_is_code_is_not_a_call() {
    let cases = [
        // package.json naming a tool, but no arguments
        "Here is the file:\n```json\n{\"name\": \"grep\", \"version\": \"1.0.0\"}\n```",
        // arguments, but no offered tool
        "```json\n{\"name\": \"deploy\", \"arguments\": {}}\n```",
        // one call-shaped object among others
        "```\n[{\"name\": \"grep\", \"arguments\": {}}, {\"id\": 1}]\n```",
        // another language
        "```python\n{\"name\": \"grep\", \"arguments\": {}}\n```",
        // markup shown inside a code block is not read
        "```text\n<tool_call>{\"name\": \"grep\", \"arguments\": {}}</tool_call>\n```",
    ];
    for text in cases {
        let r = text_only(text, Some(FinishReason::Stop));
        assert!(r.calls.is_empty() && r.rejected.is_empty(), "{text}");
        assert_eq!(r.text, text.trim());
    }
}

#[test]
fn several_text_calls_in_order() {
    let text = "First:\n<tool_call>\n<function=read_file>\n<parameter=path>a</parameter>\n</function>\n</tool_call>\nthen\n<tool_call>{\"name\": \"grep\", \"arguments\": {\"pattern\": \"b\"}}</tool_call>\n```json\n{\"name\": \"run\", \"arguments\": {\"command\": \"ls\"}}\n```\n<function=Finish>\n<parameter=summary>done</parameter>\n</function>";
    let r = text_only(text, Some(FinishReason::Stop));
    let names: Vec<_> = r.calls.iter().map(|c| c.call.name.as_str()).collect();
    assert_eq!(names, ["read_file", "grep", "run", "finish"]);
    assert_eq!(r.text, "First:\n\nthen");
    assert_eq!(r.calls[3].notes, ["tool `Finish` read as `finish`"]);
    check_invariants(&r, &tools());
}

#[test]
fn text_is_not_read_when_a_structured_call_came() {
    let text =
        "  <tool_call>{\"name\": \"grep\", \"arguments\": {\"pattern\": \"b\"}}</tool_call>\n";
    let r = read(
        vec![frag(
            Some(0),
            Some("c"),
            Some("read_file"),
            r#"{"path":"a"}"#,
        )],
        text,
        None,
    );
    assert_eq!(r.calls.len(), 1);
    assert_eq!(r.calls[0].call.name, "read_file");
    assert_eq!(r.text, text.trim());
}

#[test]
fn text_calls_cut_at_length() {
    let cases = [
        "<tool_call>\n<function=write_file>\n<parameter=path>\na.rs\n</parameter>\n<parameter=content>\nfn main() {",
        "<function=write_file>\n<parameter=path>\na.rs\n</parameter>\n",
        "<tool_call>\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"a.rs\", \"content\": \"fn",
        "```json\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"a.rs\", \"content\": \"fn",
    ];
    for text in cases {
        let r = text_only(&format!("Writing it.\n{text}"), Some(FinishReason::Length));
        assert!(r.calls.is_empty(), "{text}");
        let rj = &r.rejected[0];
        assert!(rj.cut, "{text}");
        assert_eq!(rj.call.name, "write_file");
        assert_eq!(rj.call.arguments, json!({}));
        assert_eq!(r.text, "Writing it.");
    }
    // Unclosed at a stop: a value that never ends is malformed, not run.
    let r = text_only(cases[0], Some(FinishReason::Stop));
    assert!(r.calls.is_empty() && !r.rejected[0].cut);
    let mut counts = CallsRead::default();
    r.count_into(&mut counts);
    assert_eq!(counts.malformed, 1);
}

#[test]
fn text_call_to_an_unknown_tool_is_rejected() {
    let r = text_only(
        "<function=str_replace_editor>\n<parameter=command>view</parameter>\n</function>",
        None,
    );
    assert!(r.calls.is_empty());
    assert_eq!(r.rejected[0].call.name, "str_replace_editor");
    assert!(r.rejected[0]
        .message
        .contains("There is no tool `str_replace_editor`"));
}

#[test]
fn a_call_to_an_unknown_tool_is_flagged_unknown_and_counted_malformed() {
    let r = one("create_file", r#"{"path": "a"}"#);
    assert!(r.calls.is_empty());
    assert!(r.rejected[0].unknown_tool && !r.rejected[0].cut);
    let r = text_only(
        "<function=str_replace_editor>\n<parameter=command>view</parameter>\n</function>",
        None,
    );
    assert!(r.rejected[0].unknown_tool);
    // Broken arguments of a known tool are not an unknown tool.
    let r = one("read_file", "```json\n{'path': 'a'\n```");
    assert!(!r.rejected[0].unknown_tool);
    let mut counts = CallsRead::default();
    one("create_file", "{}").count_into(&mut counts);
    assert_eq!(counts.malformed, 1);
}

#[test]
fn plain_text_is_kept() {
    for text in [
        "",
        "  done.  ",
        "use a <function=x> tag",
        "a `<tool_call>` mention",
        "```rust\nfn main() {}\n```",
    ] {
        let r = text_only(text, Some(FinishReason::Stop));
        assert!(r.calls.is_empty() && r.rejected.is_empty(), "{text}");
        assert_eq!(r.text, text.trim());
    }
}

// ---- properties ----------------------------------------------------------

/// Byte offsets of `s` on char boundaries, from arbitrary numbers.
fn cuts(s: &str, raw: &[usize]) -> Vec<usize> {
    let mut at: Vec<usize> = raw
        .iter()
        .map(|r| {
            let mut i = r % (s.len() + 1);
            while !s.is_char_boundary(i) {
                i -= 1;
            }
            i
        })
        .collect();
    at.sort_unstable();
    at.dedup();
    at
}

/// Pieces of text for arbitrary replies: markup, JSON, and noise.
fn snippet() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("<tool_call>".to_string()),
        Just("</tool_call>".to_string()),
        Just("<function=read_file>".to_string()),
        Just("<function=nope>".to_string()),
        Just("<parameter=path>".to_string()),
        Just("<parameter=limit>\n5\n".to_string()),
        Just("</parameter>".to_string()),
        Just("</function>".to_string()),
        Just("```json\n".to_string()),
        Just("```".to_string()),
        Just("{\"name\": \"grep\", \"arguments\": {\"pattern\": ".to_string()),
        Just("{'name': 'Read', 'parameters': ".to_string()),
        Just("\"x\"".to_string()),
        Just("[{".to_string()),
        Just("}".to_string()),
        Just("]".to_string()),
        Just("\\".to_string()),
        Just("\n".to_string()),
        ".{0,8}",
    ]
}

fn finish_reason() -> impl Strategy<Value = Option<FinishReason>> {
    prop_oneof![
        Just(None),
        Just(Some(FinishReason::Stop)),
        Just(Some(FinishReason::Length)),
        Just(Some(FinishReason::ToolCalls)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any split of a valid call's arguments into fragments reads back the
    /// same call.
    #[test]
    fn any_fragment_split_reads_back(
        path in "[a-z/._-]{1,20}",
        content in any::<String>(),
        raw_cuts in proptest::collection::vec(any::<usize>(), 0..8),
        indexed in any::<bool>(),
        finish in finish_reason(),
    ) {
        let args = json!({"path": path, "content": content});
        let text = args.to_string();
        let at = cuts(&text, &raw_cuts);
        let mut bounds = vec![0];
        bounds.extend(at);
        bounds.push(text.len());
        let index = indexed.then_some(3);
        let mut frags = vec![frag(index, Some("call_w"), Some("write_file"), "")];
        for w in bounds.windows(2) {
            frags.push(frag(index, None, None, &text[w[0]..w[1]]));
        }
        let r = read(frags, "", finish);
        prop_assert!(r.rejected.is_empty());
        prop_assert_eq!(r.calls.len(), 1);
        prop_assert_eq!(&r.calls[0].call, &ToolCall { id: "call_w".into(), name: "write_file".into(), arguments: args });
        prop_assert_eq!(r.calls[0].source, CallSource::Structured);
    }

    /// An XML call written with any path and content reads back the same.
    #[test]
    fn xml_calls_read_back(path in "[a-z/._-]{1,20}", content in "[^<]{0,80}", finish in finish_reason()) {
        let text = format!("ok\n<tool_call>\n<function=write_file>\n<parameter=path>\n{path}\n</parameter>\n<parameter=content>\n{content}\n</parameter>\n</function>\n</tool_call>");
        let r = text_only(&text, finish);
        prop_assert_eq!(r.calls.len(), 1);
        prop_assert_eq!(&r.calls[0].call.arguments, &json!({"path": path, "content": content}));
        prop_assert_eq!(r.text, "ok");
    }

    /// Arbitrary text never panics and never yields a call to a tool not
    /// offered.
    #[test]
    fn arbitrary_text_keeps_the_invariants(
        parts in proptest::collection::vec(snippet(), 0..24),
        finish in finish_reason(),
    ) {
        let text = parts.concat();
        let r = text_only(&text, finish.clone());
        check_invariants(&r, &tools());
        if finish == Some(FinishReason::Length) {
            prop_assert!(r.calls.iter().all(|c| c.source == CallSource::FromText));
        }
    }

    /// Arbitrary fragments never panic and keep the invariants; the counts
    /// add up to the calls read.
    #[test]
    fn arbitrary_fragments_keep_the_invariants(
        frags in proptest::collection::vec(
            (
                proptest::option::of(0u64..3),
                proptest::option::of(prop_oneof![Just("a"), Just("b"), Just("")]),
                proptest::option::of(prop_oneof![Just("read_file"), Just("ReadFile"), Just("edit"), Just("nope"), Just("")]),
                snippet(),
            ),
            0..12,
        ),
        text in ".{0,40}",
        finish in finish_reason(),
    ) {
        let frags = frags
            .into_iter()
            .map(|(index, id, name, args)| frag(index, id, name, &args))
            .collect();
        let r = read(frags, &text, finish);
        check_invariants(&r, &tools());
        let mut counts = CallsRead::default();
        r.count_into(&mut counts);
        let total = counts.structured + counts.repaired + counts.from_text + counts.malformed + counts.cut;
        prop_assert_eq!(total as usize, r.calls.len() + r.rejected.len());
    }

    /// The repair never panics and, when it answers, answers JSON.
    #[test]
    fn repair_never_panics(parts in proptest::collection::vec(snippet(), 0..24)) {
        let text = parts.concat();
        let _ = super::json::repair(&text);
        let _ = super::json::is_complete(&text);
        if let Some(fixed) = super::json::fix_escapes(&text) {
            prop_assert!(fixed.len() >= text.len());
        }
    }
}

#[test]
fn large_adversarial_replies_are_read_in_linear_time() {
    // Each about 200 KB; a quadratic scan would take minutes here.
    let texts = [
        "<function=x".repeat(20_000),
        "<tool_call>{".repeat(20_000),
        "<tool_call><function=run>".repeat(8_000),
        "<parameter=a>".repeat(15_000),
        "```json\n".repeat(25_000),
        format!(
            "<tool_call>{{'name': 'run', 'arguments': {{'command': x{}y}}",
            " ".repeat(200_000)
        ),
        format!(
            "<function=write_file>\n<parameter=content>{}",
            "<".repeat(200_000)
        ),
    ];
    let start = std::time::Instant::now();
    for text in &texts {
        for finish in [None, Some(FinishReason::Length)] {
            let r = text_only(text, finish);
            check_invariants(&r, &tools());
        }
    }
    let args = format!("{{'command': x{}y", " ".repeat(200_000));
    let r = one("run", &args);
    check_invariants(&r, &tools());
    assert!(
        start.elapsed() < std::time::Duration::from_secs(30),
        "{:?}",
        start.elapsed()
    );
}
