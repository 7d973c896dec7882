//! Tool calls come from model output: the call reader must take any
//! fragments and any text without panicking, and whatever it reads must
//! keep its guarantees — calls only to offered tools with object
//! arguments, rejected calls with `{}`, ids unique in the turn, cut calls
//! never run.
//!
//! The input is split on 0xFF bytes: the first part picks the finish
//! reason, the second is the reply's text, and each further part is one
//! fragment (its first byte: index and which id and name it carries; the
//! rest: its arguments text).
#![no_main]
use coderig::agent::native::calls::{CallAccumulator, IdMinter};
use coderig::agent::native::{CallFragment, FinishReason, ToolSpec};
use libfuzzer_sys::fuzz_target;
use serde_json::json;
use std::collections::HashSet;

fn tools() -> Vec<ToolSpec> {
    let spec = |name: &str, props: serde_json::Value, required: &[&str]| ToolSpec {
        name: name.into(),
        description: String::new(),
        parameters: json!({"type": "object", "properties": props, "required": required}),
    };
    vec![
        spec(
            "read_file",
            json!({"path": {"type": "string"}, "offset": {"type": "integer"}, "limit": {"type": "integer"}}),
            &["path"],
        ),
        spec(
            "edit_file",
            json!({"path": {"type": "string"}, "old": {"type": "string"}, "new": {"type": "string"}, "replace_all": {"type": "boolean"}}),
            &["path", "old", "new"],
        ),
        spec(
            "edit_lines",
            json!({"path": {"type": "string"}, "start": {"type": "integer"}, "end": {"type": "integer"}, "lines": {"type": "array", "items": {"type": "string"}}}),
            &["path", "start", "end", "lines"],
        ),
        spec(
            "write_file",
            json!({"path": {"type": "string"}, "content": {"type": "string"}}),
            &["path", "content"],
        ),
        spec(
            "run",
            json!({"command": {"type": "string"}, "timeout_s": {"type": ["integer", "null"]}}),
            &["command"],
        ),
    ]
}

const IDS: [Option<&str>; 4] = [None, Some("a"), Some("b"), Some("")];
const NAMES: [Option<&str>; 4] = [None, Some("read_file"), Some("WriteFile"), Some("nope")];

fuzz_target!(|data: &[u8]| {
    let mut parts = data.split(|b| *b == 0xFF);
    let finish = match parts.next().and_then(|p| p.first()).map(|b| b % 5) {
        Some(0) => Some(FinishReason::Stop),
        Some(1) => Some(FinishReason::Length),
        Some(2) => Some(FinishReason::ToolCalls),
        Some(3) => Some(FinishReason::Other("content_filter".into())),
        _ => None,
    };
    let text = String::from_utf8_lossy(parts.next().unwrap_or_default());
    let mut acc = CallAccumulator::default();
    for part in parts {
        let Some((&head, args)) = part.split_first() else {
            continue;
        };
        acc.push(CallFragment {
            index: (head & 0x03 != 0x03).then_some(u64::from(head & 0x03)),
            id: IDS[usize::from((head >> 2) & 0x03)].map(str::to_string),
            name: NAMES[usize::from((head >> 4) & 0x03)].map(str::to_string),
            arguments: String::from_utf8_lossy(args).into_owned(),
        });
    }
    let tools = tools();
    let mut minter = IdMinter::new("f");
    let read = acc.finish(&text, finish.as_ref(), &tools, &mut minter);

    let mut ids = HashSet::new();
    for c in &read.calls {
        assert!(tools.iter().any(|t| t.name == c.call.name));
        assert!(c.call.arguments.is_object());
        assert!(ids.insert(c.call.id.clone()));
    }
    for r in &read.rejected {
        assert_eq!(r.call.arguments, json!({}));
        assert!(!r.message.is_empty());
        assert!(ids.insert(r.call.id.clone()));
    }
    assert_eq!(read.text, read.text.trim());
    // Minting goes on without repeating an id of the turn.
    assert!(!ids.contains(&minter.mint()));
});
