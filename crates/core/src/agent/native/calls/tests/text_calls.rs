//! The call reader's tests: the length limit and calls written in the text.

use super::*;
use serde_json::json;

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
