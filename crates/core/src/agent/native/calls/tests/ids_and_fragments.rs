//! The call reader's tests: ids and the fragment accumulator.

use super::*;
use serde_json::json;

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
