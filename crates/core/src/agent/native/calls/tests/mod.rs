//! Tests of the call reader: tables, captures from real servers, and
//! properties — one room per part of the reader; the shared builders here.

use super::*;

mod arguments;
mod ids_and_fragments;
mod props;
mod text_calls;
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
