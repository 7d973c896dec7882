//! `run`. STUB: being written.

use super::{ToolResult, ToolSettings};
use crate::agent::native::{ToolCall, ToolSpec};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// The spec of `run`.
pub fn run_spec() -> ToolSpec {
    ToolSpec {
        name: "run".into(),
        description: String::new(),
        parameters: json!({"type": "object"}),
    }
}
/// `run`.
pub async fn run(
    _settings: &ToolSettings,
    _call: &ToolCall,
    _spec: &ToolSpec,
    _cancel: &CancellationToken,
) -> ToolResult {
    ToolResult::refused("TODO", "")
}
