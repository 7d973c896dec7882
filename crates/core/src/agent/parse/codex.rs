//! `codex exec --json`: see the module docs of [`super`] for the mapping.

use super::{error_event, line_type, Count, Lenient};
use crate::agent::{AgentEvent, Usage};
use serde::Deserialize;
use serde_json::{json, Value};
use std::borrow::Cow;

/// The events of one line of `codex exec --json` output. Total: junk and
/// unknown types give `vec![]`.
pub fn parse_codex_line(line: &str) -> Vec<AgentEvent> {
    let Some(ty) = line_type(line) else {
        return Vec::new();
    };
    match ty.as_ref() {
        "thread.started" => thread_started(line),
        "item.started" => item(line, false),
        "item.completed" => item(line, true),
        "turn.completed" => turn_completed(line),
        "turn.failed" => failed(line, true),
        "error" => failed(line, false),
        // `item.updated` restates an item whose completed state follows;
        // `turn.started` carries nothing.
        _ => None,
    }
    .unwrap_or_default()
}

#[derive(Deserialize)]
struct ThreadStarted {
    thread_id: String,
}

fn thread_started(line: &str) -> Option<Vec<AgentEvent>> {
    let t: ThreadStarted = serde_json::from_str(line).ok()?;
    (!t.thread_id.is_empty()).then(|| {
        vec![AgentEvent::SessionStarted {
            session_id: t.thread_id,
            model: None,
        }]
    })
}

#[derive(Deserialize)]
struct ItemLine<'a> {
    #[serde(borrow)]
    item: Item<'a>,
}

/// Every item type's fields, flat: one pass, no buffering.
#[derive(Deserialize)]
struct Item<'a> {
    #[serde(default)]
    id: Option<String>,
    #[serde(rename = "type", borrow)]
    ty: Cow<'a, str>,
    /// `agent_message`, `reasoning`.
    #[serde(default)]
    text: Option<String>,
    /// `error`.
    #[serde(default)]
    message: Option<String>,
    /// `command_execution` (a string; kept as JSON should it become a list).
    #[serde(default)]
    command: Option<Value>,
    #[serde(default)]
    aggregated_output: Option<String>,
    #[serde(default)]
    exit_code: Lenient<i64>,
    #[serde(borrow, default)]
    status: Option<Cow<'a, str>>,
    /// `file_change`: `[{path, kind}]`.
    #[serde(default)]
    changes: Option<Value>,
    /// `mcp_tool_call`.
    #[serde(default)]
    tool: Option<String>,
    #[serde(default)]
    arguments: Option<Value>,
    #[serde(default)]
    result: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

fn item(line: &str, completed: bool) -> Option<Vec<AgentEvent>> {
    let ItemLine { item } = serde_json::from_str(line).ok()?;
    let id = item.id.clone().unwrap_or_default();
    let status = item.status.as_deref();
    let event = match (item.ty.as_ref(), completed) {
        ("command_execution", false) => AgentEvent::ToolCall {
            id,
            name: "command_execution".into(),
            input: json!({ "command": item.command.unwrap_or(Value::Null) }),
        },
        ("command_execution", true) => AgentEvent::ToolResult {
            id,
            ok: match item.exit_code.0 {
                Some(code) => code == 0,
                None => status == Some("completed"),
            },
            output: item.aggregated_output.unwrap_or_default(),
        },
        ("file_change", false) => AgentEvent::ToolCall {
            id,
            name: "file_change".into(),
            input: json!({ "changes": item.changes.unwrap_or(Value::Null) }),
        },
        ("file_change", true) => AgentEvent::ToolResult {
            id,
            ok: status == Some("completed"),
            output: changes_summary(item.changes.as_ref()),
        },
        ("mcp_tool_call", false) => AgentEvent::ToolCall {
            id,
            name: item.tool.unwrap_or_default(),
            input: match item.arguments {
                Some(v @ Value::Object(_)) => v,
                None | Some(Value::Null) => json!({}),
                // Arguments that are not an object are still shown.
                Some(other) => json!({ "arguments": other }),
            },
        },
        ("mcp_tool_call", true) => {
            let error = item.error.as_ref().filter(|e| !e.is_null());
            AgentEvent::ToolResult {
                id,
                ok: status == Some("completed") && error.is_none(),
                output: match error {
                    Some(e) => e
                        .get("message")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                        .unwrap_or_else(|| e.to_string()),
                    None => mcp_output(item.result.as_ref()),
                },
            }
        }
        ("agent_message", true) => AgentEvent::TextDelta {
            text: item.text.filter(|t| !t.is_empty())?,
        },
        ("reasoning", true) => AgentEvent::ReasoningDelta {
            text: item.text.filter(|t| !t.is_empty())?,
        },
        ("error", true) => error_event(
            None,
            item.message
                .unwrap_or_else(|| "codex reported an error".into()),
            None,
        ),
        _ => return None,
    };
    Some(vec![event])
}

/// One `kind path` line per change (`add /w/hello.txt`).
fn changes_summary(changes: Option<&Value>) -> String {
    let Some(Value::Array(changes)) = changes else {
        return String::new();
    };
    changes
        .iter()
        .map(|c| {
            let field = |k| c.get(k).and_then(Value::as_str).unwrap_or("");
            format!("{} {}", field("kind"), field("path"))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// An MCP result's text blocks joined by `\n`, else the result as JSON.
fn mcp_output(result: Option<&Value>) -> String {
    let Some(result) = result.filter(|r| !r.is_null()) else {
        return String::new();
    };
    let texts: Vec<&str> = result
        .get("content")
        .and_then(Value::as_array)
        .map(|blocks| {
            blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    if texts.is_empty() {
        result.to_string()
    } else {
        texts.join("\n")
    }
}

#[derive(Deserialize)]
struct TurnCompleted {
    #[serde(default)]
    usage: Option<CodexUsage>,
}

#[derive(Deserialize, Default)]
struct CodexUsage {
    #[serde(default)]
    input_tokens: Count,
    #[serde(default)]
    cached_input_tokens: Count,
    #[serde(default)]
    output_tokens: Count,
    /// Newer versions (0.153+).
    #[serde(default)]
    cache_write_input_tokens: Count,
    /// Newer versions (0.153+).
    #[serde(default)]
    reasoning_output_tokens: Count,
}

fn turn_completed(line: &str) -> Option<Vec<AgentEvent>> {
    let t: TurnCompleted = serde_json::from_str(line).ok()?;
    let mut events = Vec::with_capacity(2);
    let u = t.usage.unwrap_or_default();
    let usage = Usage {
        // OpenAI's `input_tokens` include the cached ones.
        input: u.input_tokens.0.saturating_sub(u.cached_input_tokens.0),
        output: u.output_tokens.0,
        cache_read: u.cached_input_tokens.0,
        cache_write: u.cache_write_input_tokens.0,
        reasoning: u.reasoning_output_tokens.0,
        cost_usd: None,
    };
    if !usage.is_empty() {
        events.push(AgentEvent::Usage(usage));
    }
    events.push(AgentEvent::Finished {
        stop_reason: Some("completed".into()),
        final_text: None,
        num_turns: None,
    });
    Some(events)
}

#[derive(Deserialize)]
struct Failure {
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    error: Lenient<FailureError>,
}

#[derive(Deserialize)]
struct FailureError {
    #[serde(default)]
    message: Option<String>,
}

/// `turn.failed{error{message}}` (`nested`) or `error{message}`.
fn failed(line: &str, nested: bool) -> Option<Vec<AgentEvent>> {
    let f: Failure = serde_json::from_str(line).ok()?;
    let message = if nested {
        f.error.0.and_then(|e| e.message).or(f.message)
    } else {
        f.message.or_else(|| f.error.0.and_then(|e| e.message))
    }
    .filter(|m| !m.is_empty())
    .unwrap_or_else(|| "codex reported an error".into());
    Some(vec![error_event(None, message, None)])
}
