//! `edit_file`, `write_file`, `edit_lines`. STUB: being written.

use super::ToolResult;
use crate::agent::native::{ToolCall, ToolSpec};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn stub(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: String::new(),
        parameters: json!({"type": "object"}),
    }
}
/// The spec of `edit_file`.
pub fn edit_file_spec() -> ToolSpec {
    stub("edit_file")
}
/// The spec of `write_file`.
pub fn write_file_spec() -> ToolSpec {
    stub("write_file")
}
/// The spec of `edit_lines`.
pub fn edit_lines_spec() -> ToolSpec {
    stub("edit_lines")
}
/// `edit_file`.
pub fn edit_file(
    _root: &Path,
    _call: &ToolCall,
    _spec: &ToolSpec,
    _failures: &mut BTreeMap<PathBuf, u32>,
) -> ToolResult {
    ToolResult::refused("TODO", "")
}
/// `write_file`.
pub fn write_file(_root: &Path, _call: &ToolCall, _spec: &ToolSpec) -> ToolResult {
    ToolResult::refused("TODO", "")
}
/// `edit_lines`.
pub fn edit_lines(_root: &Path, _call: &ToolCall, _spec: &ToolSpec) -> ToolResult {
    ToolResult::refused("TODO", "")
}
