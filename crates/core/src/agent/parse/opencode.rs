//! `opencode run --format json`: see the module docs of [`super`] for the
//! mapping (and for why every `step_start` announces the session).

use super::{error_event, line_type, Cost, Count};
use crate::agent::{AgentEvent, Usage};
use serde::Deserialize;
use serde_json::Value;
use std::borrow::Cow;

/// The events of one line of `opencode run --format json` output. Total:
/// junk and unknown types give `vec![]`.
pub fn parse_opencode_line(line: &str) -> Vec<AgentEvent> {
    let Some(ty) = line_type(line) else {
        return Vec::new();
    };
    match ty.as_ref() {
        "step_start" => step_start(line),
        "text" => text(line, false),
        "reasoning" => text(line, true),
        "tool_use" => tool_use(line),
        "step_finish" => step_finish(line),
        "error" => error(line),
        "done" => Some(vec![AgentEvent::Finished {
            // `done.reason` is the session's state (`idle`), not why the
            // model stopped: the last step's reason stands.
            stop_reason: None,
            final_text: None,
            num_turns: None,
        }]),
        _ => None,
    }
    .unwrap_or_default()
}

#[derive(Deserialize)]
struct StepStart {
    #[serde(rename = "sessionID", default)]
    session_id: Option<String>,
}

fn step_start(line: &str) -> Option<Vec<AgentEvent>> {
    let s: StepStart = serde_json::from_str(line).ok()?;
    let session_id = s.session_id.filter(|id| !id.is_empty())?;
    Some(vec![AgentEvent::SessionStarted {
        session_id,
        model: None,
    }])
}

#[derive(Deserialize)]
struct Line<P> {
    part: P,
}

#[derive(Deserialize)]
struct TextPart {
    #[serde(default)]
    text: Option<String>,
}

fn text(line: &str, reasoning: bool) -> Option<Vec<AgentEvent>> {
    let Line { part } = serde_json::from_str::<Line<TextPart>>(line).ok()?;
    let text = part.text.filter(|t| !t.is_empty())?;
    Some(vec![if reasoning {
        AgentEvent::ReasoningDelta { text }
    } else {
        AgentEvent::TextDelta { text }
    }])
}

#[derive(Deserialize)]
struct ToolPart<'a> {
    #[serde(rename = "callID", default)]
    call_id: Option<String>,
    #[serde(default)]
    tool: Option<String>,
    #[serde(borrow)]
    state: ToolState<'a>,
}

#[derive(Deserialize)]
struct ToolState<'a> {
    #[serde(borrow, default)]
    status: Option<Cow<'a, str>>,
    #[serde(default)]
    input: Option<Value>,
    /// Text, or JSON from some tools (serialized then).
    #[serde(default)]
    output: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

fn as_text(v: Value) -> String {
    match v {
        Value::String(s) => s,
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn tool_use(line: &str) -> Option<Vec<AgentEvent>> {
    let Line { part } = serde_json::from_str::<Line<ToolPart>>(line).ok()?;
    let id = part.call_id.unwrap_or_default();
    let mut events = vec![AgentEvent::ToolCall {
        id: id.clone(),
        name: part.tool.unwrap_or_default(),
        input: part
            .state
            .input
            .unwrap_or_else(|| Value::Object(Default::default())),
    }];
    let ok = match part.state.status.as_deref() {
        Some("completed") => true,
        Some("error") => false,
        // opencode prints a tool when it settles; any other state has no
        // result yet.
        _ => return Some(events),
    };
    let output = if ok {
        part.state.output
    } else {
        part.state.error.or(part.state.output)
    };
    events.push(AgentEvent::ToolResult {
        id,
        ok,
        output: output.map(as_text).unwrap_or_default(),
    });
    Some(events)
}

#[derive(Deserialize)]
struct FinishPart {
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    cost: Cost,
    #[serde(default)]
    tokens: Option<Tokens>,
}

#[derive(Deserialize, Default)]
struct Tokens {
    #[serde(default)]
    input: Count,
    #[serde(default)]
    output: Count,
    #[serde(default)]
    reasoning: Count,
    #[serde(default)]
    cache: Option<Cache>,
}

#[derive(Deserialize, Default)]
struct Cache {
    #[serde(default)]
    read: Count,
    #[serde(default)]
    write: Count,
}

fn step_finish(line: &str) -> Option<Vec<AgentEvent>> {
    let Line { part } = serde_json::from_str::<Line<FinishPart>>(line).ok()?;
    let mut events = Vec::with_capacity(2);
    let tokens = part.tokens.unwrap_or_default();
    let cache = tokens.cache.unwrap_or_default();
    let usage = Usage {
        // Already uncached: opencode subtracts the cache from the
        // provider's input count itself.
        input: tokens.input.0,
        output: tokens.output.0,
        cache_read: cache.read.0,
        cache_write: cache.write.0,
        reasoning: tokens.reasoning.0,
        cost_usd: part.cost.0,
    };
    if !usage.is_empty() {
        events.push(AgentEvent::Usage(usage));
    }
    // opencode runs another step after `tool-calls` (and `unknown`); any
    // other reason (`stop`, `length`, `content-filter`, ...) ends the turn.
    if let Some(reason) = part
        .reason
        .filter(|r| !matches!(r.as_str(), "tool-calls" | "unknown"))
    {
        events.push(AgentEvent::Finished {
            stop_reason: Some(reason),
            final_text: None,
            num_turns: None,
        });
    }
    Some(events)
}

#[derive(Deserialize)]
struct ErrorLine {
    #[serde(rename = "sessionID", default)]
    session_id: Option<String>,
    #[serde(default)]
    error: Option<Value>,
}

/// `{"error": {"name": "APIError", "data": {"message", "statusCode"}}}`,
/// after the session's announcement: a turn whose first model call fails
/// prints this line alone, with no `step_start` before it.
fn error(line: &str) -> Option<Vec<AgentEvent>> {
    let ErrorLine { session_id, error } = serde_json::from_str::<ErrorLine>(line).ok()?;
    let e = error?;
    let name = e.get("name").and_then(Value::as_str);
    let data = e.get("data");
    let message = data
        .and_then(|d| d.get("message"))
        .or_else(|| e.get("message"))
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty())
        .map(str::to_owned)
        .or_else(|| e.as_str().map(str::to_owned))
        .or_else(|| name.map(str::to_owned))
        .unwrap_or_else(|| "opencode reported an error".into());
    let status = data
        .and_then(|d| d.get("statusCode"))
        .and_then(Value::as_u64)
        .and_then(|s| u16::try_from(s).ok());
    let mut events = Vec::with_capacity(2);
    if let Some(session_id) = session_id.filter(|id| !id.is_empty()) {
        events.push(AgentEvent::SessionStarted {
            session_id,
            model: None,
        });
    }
    events.push(error_event(name, message, status));
    Some(events)
}
