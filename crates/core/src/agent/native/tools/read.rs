//! `read_file`, `list_files`, `grep`. STUB: being written.

use super::ToolResult;
use crate::agent::native::{ToolCall, ToolSpec};
use serde_json::json;
use std::path::Path;

fn stub(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: String::new(),
        parameters: json!({"type": "object"}),
    }
}
/// The spec of `read_file`.
pub fn read_file_spec(_hashline: bool) -> ToolSpec {
    stub("read_file")
}
/// The spec of `list_files`.
pub fn list_files_spec() -> ToolSpec {
    stub("list_files")
}
/// The spec of `grep`.
pub fn grep_spec() -> ToolSpec {
    stub("grep")
}
/// `read_file`.
pub fn read_file(_root: &Path, _call: &ToolCall, _spec: &ToolSpec, _hashline: bool) -> ToolResult {
    ToolResult::refused("TODO", "")
}
/// `list_files`.
pub fn list_files(_root: &Path, _call: &ToolCall, _spec: &ToolSpec) -> ToolResult {
    ToolResult::refused("TODO", "")
}
/// `grep`.
pub fn grep(_root: &Path, _call: &ToolCall, _spec: &ToolSpec) -> ToolResult {
    ToolResult::refused("TODO", "")
}
