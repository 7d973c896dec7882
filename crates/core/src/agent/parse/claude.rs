//! Claude Code `stream-json` (also Qwen Code's): see the module docs of
//! [`super`] for the mapping.

use super::{error_event, line_type, BlockText, Cost, Count, Lenient};
use crate::agent::{AgentEvent, Usage};
use serde::Deserialize;
use std::borrow::Cow;

/// The events of one line of Claude Code's (or Qwen Code's) `stream-json`
/// output. Total: junk and unknown types give `vec![]`.
pub fn parse_claude_line(line: &str) -> Vec<AgentEvent> {
    let Some(ty) = line_type(line) else {
        return Vec::new();
    };
    match ty.as_ref() {
        "system" => system(line),
        "assistant" => assistant(line),
        "user" => user(line),
        "result" => result(line),
        // `stream_event` carries partial deltas of a message that then
        // arrives whole as `assistant`: reading both would double the text.
        _ => None,
    }
    .unwrap_or_default()
}

#[derive(Deserialize)]
struct System<'a> {
    #[serde(borrow, default)]
    subtype: Option<Cow<'a, str>>,
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default)]
    model: Option<String>,
}

fn system(line: &str) -> Option<Vec<AgentEvent>> {
    let s: System = serde_json::from_str(line).ok()?;
    // Claude says `init`; Qwen Code's types say `session_start` (0.24.4
    // printed `init`).
    if !matches!(s.subtype.as_deref(), Some("init" | "session_start")) {
        return None;
    }
    let session_id = s.session_id.filter(|id| !id.is_empty())?;
    Some(vec![AgentEvent::SessionStarted {
        session_id,
        model: s.model.filter(|m| !m.is_empty()),
    }])
}

#[derive(Deserialize)]
struct Envelope<T> {
    message: T,
}

#[derive(Deserialize)]
struct AssistantMessage<'a> {
    #[serde(borrow, default)]
    content: Vec<Block<'a>>,
}

/// A content block of either role, flat: one pass over the line with no
/// buffering (an internally tagged enum would buffer every block).
#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow)]
    ty: Cow<'a, str>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thinking: Option<String>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    input: Option<serde_json::Value>,
    #[serde(default)]
    tool_use_id: Option<String>,
    #[serde(default)]
    content: BlockText,
    #[serde(default)]
    is_error: Option<bool>,
}

fn assistant(line: &str) -> Option<Vec<AgentEvent>> {
    let m: Envelope<AssistantMessage> = serde_json::from_str(line).ok()?;
    let events = m
        .message
        .content
        .into_iter()
        .filter_map(|b| match b.ty.as_ref() {
            "text" => b
                .text
                .filter(|t| !t.is_empty())
                .map(|text| AgentEvent::TextDelta { text }),
            "thinking" => b
                .thinking
                .filter(|t| !t.is_empty())
                .map(|text| AgentEvent::ReasoningDelta { text }),
            "tool_use" => Some(AgentEvent::ToolCall {
                id: b.id.unwrap_or_default(),
                name: b.name?,
                input: b.input.unwrap_or(serde_json::Value::Null),
            }),
            _ => None,
        })
        .collect();
    Some(events)
}

#[derive(Deserialize)]
struct UserMessage<'a> {
    #[serde(borrow, default)]
    content: UserContent<'a>,
}

/// A user message's content: an array of blocks, or a plain string (the
/// prompt, which holds no tool results).
#[derive(Default)]
struct UserContent<'a>(Vec<Block<'a>>);

impl<'de: 'a, 'a> Deserialize<'de> for UserContent<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for V<'a> {
            type Value = UserContent<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("message content")
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(UserContent::default())
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(UserContent::default())
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Self::Value, A::Error> {
                let mut blocks = Vec::new();
                while let Some(b) = seq.next_element::<Block<'a>>()? {
                    blocks.push(b);
                }
                Ok(UserContent(blocks))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

fn user(line: &str) -> Option<Vec<AgentEvent>> {
    let m: Envelope<UserMessage> = serde_json::from_str(line).ok()?;
    let events = m
        .message
        .content
        .0
        .into_iter()
        .filter(|b| b.ty == "tool_result")
        .filter_map(|b| {
            Some(AgentEvent::ToolResult {
                id: b.tool_use_id?,
                ok: !b.is_error.unwrap_or(false),
                output: b.content.0,
            })
        })
        .collect();
    Some(events)
}

#[derive(Deserialize)]
struct ResultLine {
    #[serde(default)]
    subtype: Option<String>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    is_error: Lenient<bool>,
    #[serde(default)]
    result: Option<String>,
    #[serde(default)]
    num_turns: Lenient<u32>,
    #[serde(default)]
    usage: Option<AnthropicUsage>,
    #[serde(default)]
    total_cost_usd: Cost,
    #[serde(default)]
    api_error_status: Lenient<u16>,
    /// The SDK's error subtypes list their messages here.
    #[serde(default)]
    errors: Lenient<Vec<String>>,
    /// Qwen Code's error results carry `error.message` and no `result`.
    #[serde(default)]
    error: Lenient<ResultError>,
}

#[derive(Deserialize)]
struct ResultError {
    #[serde(default)]
    message: Option<String>,
}

#[derive(Deserialize, Default)]
struct AnthropicUsage {
    #[serde(default)]
    input_tokens: Count,
    #[serde(default)]
    output_tokens: Count,
    #[serde(default)]
    cache_read_input_tokens: Count,
    #[serde(default)]
    cache_creation_input_tokens: Count,
    /// Only Qwen Code writes it, and its `input_tokens` then *include*
    /// `cache_read_input_tokens` (OpenAI's `prompt_tokens`; captured: input
    /// 200, cache read 50, total 220 for 200 prompt tokens of which 50
    /// cached). Claude's (Anthropic's) usage has no total.
    #[serde(default)]
    total_tokens: Option<Count>,
}

fn result(line: &str) -> Option<Vec<AgentEvent>> {
    let r: ResultLine = serde_json::from_str(line).ok()?;
    let mut events = Vec::with_capacity(3);
    let usage = r.usage.unwrap_or_default();
    let input = match usage.total_tokens {
        Some(_) => usage
            .input_tokens
            .0
            .saturating_sub(usage.cache_read_input_tokens.0),
        // Anthropic's `input_tokens` already excludes the cache.
        None => usage.input_tokens.0,
    };
    let usage = Usage {
        input,
        output: usage.output_tokens.0,
        cache_read: usage.cache_read_input_tokens.0,
        cache_write: usage.cache_creation_input_tokens.0,
        reasoning: 0,
        cost_usd: r.total_cost_usd.0,
    };
    if !usage.is_empty() {
        events.push(AgentEvent::Usage(usage));
    }
    let is_error = r.is_error.0.unwrap_or(false);
    if is_error {
        let status = r.api_error_status.0;
        let message = r
            .error
            .0
            .and_then(|e| e.message)
            .filter(|m| !m.is_empty())
            .or_else(|| r.result.clone())
            .filter(|m| !m.is_empty())
            .or_else(|| r.errors.0.as_ref().map(|e| e.join("; ")))
            .filter(|m| !m.is_empty())
            .or_else(|| r.subtype.clone())
            .unwrap_or_else(|| "the agent reported an error".to_owned());
        let status = status.or_else(|| status_in_message(&message));
        events.push(error_event(None, message, status));
    }
    events.push(AgentEvent::Finished {
        stop_reason: r.subtype.or(r.stop_reason),
        // On error `result` is the error message, not an answer.
        final_text: if is_error { None } else { r.result },
        num_turns: r.num_turns.0,
    });
    Some(events)
}

/// The HTTP status in an `API Error: NNN …` message (how Qwen Code, which
/// has no `api_error_status`, reports a provider's error status).
fn status_in_message(message: &str) -> Option<u16> {
    let at = message.find("API Error: ")? + "API Error: ".len();
    let digits = message.get(at..at + 3)?;
    let after = message[at + 3..].chars().next();
    if after.is_some_and(|c| c.is_ascii_alphanumeric()) {
        return None;
    }
    digits
        .parse::<u16>()
        .ok()
        .filter(|s| (400..=599).contains(s))
}
