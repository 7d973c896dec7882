//! Agent CLI output parsers (pure): one line of a CLI's stdout in, the
//! normalized [`AgentEvent`]s it means out.
//!
//! [`parse_line`] is stateless and total: an unknown `type`, a line that is
//! not JSON, or JSON of an unexpected shape gives `vec![]` — never a panic,
//! never an error, because CLIs print banners, warnings and debug output on
//! stdout beside their JSON, and add event types in minor releases.
//! [`StreamParser`] wraps it for a whole stream and drops repeated
//! `SessionStarted` events (opencode repeats its session id on every step).
//!
//! `Usage` events are **increments**: each format emits one per unit its CLI
//! reports once (Claude's final `result`, each codex `turn.completed`, each
//! opencode `step_finish`), so the turn's usage is their sum. `input` is
//! always uncached input.
//!
//! # Claude Code and Qwen Code (`claude-stream-json`)
//!
//! | line | events |
//! |---|---|
//! | `system` subtype `init` (Claude, Qwen) or `session_start` (Qwen) | `SessionStarted{session_id, model}` |
//! | `assistant` `message.content[]` | in order: `text` → `TextDelta`, `thinking` → `ReasoningDelta`, `tool_use` → `ToolCall{id, name, input}` |
//! | `user` `message.content[]` `tool_result` | `ToolResult{id: tool_use_id, ok: !is_error, output}` (string content, or the `text` blocks of an array joined by `\n`) |
//! | `result` | `Usage` (`usage.input_tokens`, `output_tokens`, `cache_read_input_tokens`, `cache_creation_input_tokens`, `total_cost_usd`; when `usage.total_tokens` is present — Qwen — `input_tokens` include the cache read, which is subtracted), then `Error` when `is_error` (message: Qwen's `error.message`, else `result`, else `errors[]`, else the subtype; classified with `api_error_status`, else the status of an `API Error: NNN` message), then `Finished{stop_reason: subtype or stop_reason, final_text: result unless is_error, num_turns}` |
//!
//! Ignored: `stream_event` (partial-message deltas: the whole `assistant`
//! message follows each one, so reading both would duplicate the text),
//! `assistant` `message.usage` (per-message counts that `result.usage`
//! already sums, so adding them would count twice), `rate_limit_event`,
//! the other `system` subtypes (hooks, tasks, status), `user` text blocks
//! (the prompt echoed back), `redacted_thinking` and unknown blocks.
//!
//! # Codex (`codex-json`, `codex exec --json`)
//!
//! | line | events |
//! |---|---|
//! | `thread.started` | `SessionStarted{session_id: thread_id}` |
//! | `item.started` `command_execution` | `ToolCall{name: "command_execution", input: {"command": ...}}` |
//! | `item.started` `file_change` | `ToolCall{name: "file_change", input: {"changes": [{path, kind}]}}` |
//! | `item.started` `mcp_tool_call` | `ToolCall{name: tool, input: arguments}` |
//! | `item.completed` of those three | `ToolResult{ok, output}`: commands ok when `exit_code` is 0 (or absent with status `completed`), output `aggregated_output`; file changes ok when `completed`, output one `kind path` line per change; MCP calls ok when `completed` without `error`, output the result's text blocks (else its JSON) or the error message |
//! | `item.completed` `agent_message` | `TextDelta{text}` |
//! | `item.completed` `reasoning` | `ReasoningDelta{text}` |
//! | `item.completed` `error` | `Error{message}` (classified) |
//! | `turn.completed` | `Usage{input: input_tokens − cached_input_tokens, cache_read: cached_input_tokens, cache_write: cache_write_input_tokens, reasoning: reasoning_output_tokens, output}`, then `Finished{stop_reason: "completed"}` |
//! | `turn.failed`, `error` | `Error{message}` (classified) |
//!
//! The call id of a tool is the item id (`item_0`), which pairs the
//! `item.started` with its `item.completed`. Inputs are always JSON objects,
//! as every other agent's tool inputs are, so a consumer can look for a path
//! or a command the same way everywhere. Ignored: `turn.started`,
//! `item.updated` (intermediate states of an item whose completed state
//! follows), `item.started` of messages and reasoning (their text comes with
//! `item.completed`), `web_search`, `todo_list`, `item.plan.delta`,
//! `request_user_input`. Codex reports no cost.
//!
//! # opencode (`opencode-json`, `opencode run --format json`)
//!
//! | line | events |
//! |---|---|
//! | `step_start` | `SessionStarted{session_id: sessionID}` |
//! | `text` | `TextDelta{part.text}` |
//! | `reasoning` | `ReasoningDelta{part.text}` |
//! | `tool_use` | `ToolCall{id: part.callID, name: part.tool, input: state.input}`, then `ToolResult{ok: state.status == "completed", output: state.output or state.error}` when the status is `completed` or `error` |
//! | `step_finish` | `Usage` (`part.tokens` input, output, reasoning, cache.read, cache.write; `part.cost`), then `Finished{stop_reason: part.reason}` unless the reason is `tool-calls` or `unknown` (opencode starts another step for those) |
//! | `error` | `SessionStarted{session_id: sessionID}`, then `Error{message: error.data.message}` (classified with `error.name` and `error.data.statusCode`) |
//! | `done` | `Finished{}` (its `reason` is `idle`, the session's state, not why the model stopped, so the step's reason stands) |
//!
//! **SessionStarted.** opencode puts `sessionID` on every line and has no
//! line that comes once per run, so a stateless parser cannot name "the
//! first" one. The rule: every `step_start` announces the session (a turn
//! with tool calls has several steps, hence several equal
//! `SessionStarted`s), and so does `error` (a turn whose first model call
//! fails prints one `error` line and nothing else); [`StreamParser`] — what
//! a runner feeds lines to — passes only the first per session id. `OutcomeBuilder`
//! keeps the first session id either way. opencode's `tokens.input` is
//! already uncached (opencode subtracts the cache itself). Ignored: the
//! `timestamp`s and part ids, `tool_use` states other than completed/error.
//!
//! # Plain text (`text`)
//!
//! Every line, empty ones included, is a `TextDelta` of the line with its
//! newline (a trailing `\n` or `\r\n` given is normalized to `\n`), so the
//! deltas concatenate back to the text, blank lines and all.

mod claude;
mod codex;
mod opencode;
mod text;

pub use claude::parse_claude_line;
pub use codex::parse_codex_line;
pub use opencode::parse_opencode_line;
pub use text::parse_text_line;

use super::AgentEvent;
use crate::names::macros::named_enum;
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

/// The stdout format of an agent CLI: which parser reads its lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StreamFormat {
    /// Claude Code `--output-format stream-json --verbose`, and Qwen Code's
    /// Claude-compatible `--output-format stream-json`.
    ClaudeStreamJson,
    /// `codex exec --json`.
    CodexJson,
    /// `opencode run --format json`.
    OpencodeJson,
    /// Anything else: every line is text.
    Text,
}
named_enum!(StreamFormat, "stream format", {
    ClaudeStreamJson => "claude-stream-json",
    CodexJson => "codex-json",
    OpencodeJson => "opencode-json",
    Text => "text",
});

/// The events one line of `format` means (see the module docs for the
/// mapping). Stateless and total: junk gives `vec![]`, never a panic.
pub fn parse_line(format: StreamFormat, line: &str) -> Vec<AgentEvent> {
    match format {
        StreamFormat::ClaudeStreamJson => parse_claude_line(line),
        StreamFormat::CodexJson => parse_codex_line(line),
        StreamFormat::OpencodeJson => parse_opencode_line(line),
        StreamFormat::Text => parse_text_line(line),
    }
}

/// [`parse_line`] over a whole stream, passing each session id's first
/// `SessionStarted` only (opencode announces its session on every step;
/// see the module docs). Pure: no I/O, the caller feeds it lines.
#[derive(Debug, Clone)]
pub struct StreamParser {
    format: StreamFormat,
    sessions: HashSet<String>,
}

impl StreamParser {
    /// A parser for a fresh stream of `format`.
    pub fn new(format: StreamFormat) -> Self {
        StreamParser {
            format,
            sessions: HashSet::new(),
        }
    }

    /// The format it parses.
    pub fn format(&self) -> StreamFormat {
        self.format
    }

    /// The events of the next line, without a `SessionStarted` for a
    /// session id already announced in this stream.
    pub fn line(&mut self, line: &str) -> Vec<AgentEvent> {
        let mut events = parse_line(self.format, line);
        events.retain(|e| match e {
            AgentEvent::SessionStarted { session_id, .. } => {
                self.sessions.insert(session_id.clone())
            }
            _ => true,
        });
        events
    }
}

/// The value of a JSON object line's `"type"` key.
///
/// Every CLI here writes `{"type":"...",` first, so that prefix is read
/// without parsing; this lets the parsers skip unknown lines (Claude's
/// `stream_event` floods, debug output) without a JSON parse, and parse
/// known ones straight into the struct of their type. Anything else (other
/// key order, whitespace, escapes) goes through a real parse of the tag.
/// `None`: not a JSON object with a string `type`. A line whose prefix is
/// fine but whose rest is broken still fails later, in the typed parse.
pub(crate) fn line_type(line: &str) -> Option<Cow<'_, str>> {
    const PREFIX: &str = "{\"type\":\"";
    if let Some(rest) = line.strip_prefix(PREFIX) {
        if let Some(end) = memchr::memchr2(b'"', b'\\', rest.as_bytes()) {
            if rest.as_bytes()[end] == b'"' {
                return Some(Cow::Borrowed(&rest[..end]));
            }
        }
    }
    #[derive(Deserialize)]
    struct Tag<'a> {
        #[serde(rename = "type", borrow)]
        ty: Cow<'a, str>,
    }
    serde_json::from_str::<Tag>(line).ok().map(|t| t.ty)
}

/// A JSON number read leniently as a token count: negative, fractional,
/// null or non-numeric values give 0 instead of failing the whole line
/// (one odd usage field must not lose a turn's result).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Count(pub u64);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Count;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a token count")
            }
            fn visit_u64<E>(self, v: u64) -> Result<Count, E> {
                Ok(Count(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Count, E> {
                Ok(Count(v.max(0) as u64))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Count, E> {
                // `as` saturates and maps NaN to 0.
                Ok(Count(v as u64))
            }
            fn visit_str<E>(self, v: &str) -> Result<Count, E> {
                Ok(Count(v.trim().parse().unwrap_or(0)))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Count, E> {
                Ok(Count(0))
            }
            fn visit_unit<E>(self) -> Result<Count, E> {
                Ok(Count(0))
            }
            fn visit_none<E>(self) -> Result<Count, E> {
                Ok(Count(0))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Count, D::Error> {
                d.deserialize_any(V)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Count, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Count(0))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Count, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Count(0))
            }
        }
        d.deserialize_any(V)
    }
}

/// A cost read leniently: any JSON number, else unknown.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Cost(pub Option<f64>);

impl<'de> Deserialize<'de> for Cost {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Lenient::<f64>::deserialize(d)?;
        Ok(Cost(v.0.filter(|c| c.is_finite())))
    }
}

/// A value of `T` where one is given in the expected shape, `None` for
/// anything else (so a field of an unexpected type does not fail the line).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Lenient<T>(pub Option<T>);

impl<T> Default for Lenient<T> {
    fn default() -> Self {
        Lenient(None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Lenient<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Buffering through `Value` costs an allocation, so this is for
        // small scalar fields only (status codes, costs, flags).
        let v = serde_json::Value::deserialize(d)?;
        Ok(Lenient(T::deserialize(v).ok()))
    }
}

/// Tool output as the CLIs write it: a string, an array of content blocks
/// (the `text` of each `text` block, or of each block without a type,
/// joined by `\n`; images and other blocks dropped), or null/absent (empty).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct BlockText(pub String);

impl<'de> Deserialize<'de> for BlockText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        #[derive(Deserialize)]
        struct Block<'a> {
            #[serde(rename = "type", borrow, default)]
            ty: Option<Cow<'a, str>>,
            #[serde(default)]
            text: Option<String>,
        }
        impl<'de> Visitor<'de> for V {
            type Value = BlockText;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or an array of content blocks")
            }
            fn visit_str<E>(self, v: &str) -> Result<BlockText, E> {
                Ok(BlockText(v.to_owned()))
            }
            fn visit_string<E>(self, v: String) -> Result<BlockText, E> {
                Ok(BlockText(v))
            }
            fn visit_unit<E>(self) -> Result<BlockText, E> {
                Ok(BlockText::default())
            }
            fn visit_none<E>(self) -> Result<BlockText, E> {
                Ok(BlockText::default())
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<BlockText, D::Error> {
                d.deserialize_any(V)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<BlockText, A::Error> {
                let mut out = String::new();
                let mut first = true;
                while let Some(block) = seq.next_element::<Block<'de>>()? {
                    if block.ty.as_deref().is_some_and(|t| t != "text") {
                        continue;
                    }
                    if let Some(text) = block.text {
                        if !first {
                            out.push('\n');
                        }
                        out.push_str(&text);
                        first = false;
                    }
                }
                Ok(BlockText(out))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<BlockText, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(BlockText::default())
            }
            fn visit_bool<E>(self, v: bool) -> Result<BlockText, E> {
                Ok(BlockText(v.to_string()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<BlockText, E> {
                Ok(BlockText(v.to_string()))
            }
            fn visit_i64<E>(self, v: i64) -> Result<BlockText, E> {
                Ok(BlockText(v.to_string()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<BlockText, E> {
                Ok(BlockText(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

/// An `Error` event classified by [`crate::model::classify_error`].
pub(crate) fn error_event(
    name: Option<&str>,
    message: String,
    http_status: Option<u16>,
) -> AgentEvent {
    let class = crate::model::classify_error(name, Some(&message), http_status);
    AgentEvent::Error {
        message,
        class,
        http_status,
    }
}
