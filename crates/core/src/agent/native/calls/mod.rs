//! Reading tool calls from imperfect model servers (pure: no IO, and no
//! panic on any input — every byte here is model output).
//!
//! A reply's calls arrive as [`CallFragment`]s; a [`CallAccumulator`]
//! joins them, and [`CallAccumulator::finish`] reads them against the
//! offered tools into [`ReadCalls`]: calls ready to run ([`ReadCall`]) and
//! calls answered with an error instead ([`RejectedCall`]).
//!
//! - Fragments join by index; a new id at an index in use opens a new call
//!   (Ollama numbers every call 0); ids missing or repeated in the turn are
//!   minted by the turn's [`IdMinter`].
//! - Arguments that do not parse are repaired (raw newlines and bad escapes
//!   in strings by hand, then `llm_json` for trailing commas, single quotes,
//!   unclosed brackets); double-encoded arguments are decoded; values are
//!   coerced to the tool's schema and other harnesses' argument names
//!   mapped (`file_path` → `path`). Each repair is noted and the call
//!   counted [`CallSource::Repaired`].
//! - A call cut by the output-token limit is never repaired nor run.
//! - When a reply has no structured call, calls written in its text are
//!   read ([`CallSource::FromText`]): Qwen3-Coder XML, Hermes
//!   `<tool_call>`, fenced JSON naming an offered tool.

mod coerce;
mod json;
mod text;

#[cfg(test)]
mod tests;

use super::{CallFragment, CallSource, CallsRead, FinishReason, ToolCall, ToolSpec};
use serde_json::{Map, Value};
use std::collections::HashSet;

/// Mints call ids unique within one turn: `call_<prefix>_<n>` (`call_<n>`
/// without a prefix), never an id this minter has minted or seen kept from
/// a server in the same turn. One minter per turn, shared by every reply.
#[derive(Debug, Clone, Default)]
pub struct IdMinter {
    prefix: String,
    next: u64,
    used: HashSet<String>,
}

impl IdMinter {
    /// A minter whose ids carry `prefix` (kept to ASCII letters, digits,
    /// `_` and `-`, at most 32 of them), e.g. the turn's short id, so that
    /// ids differ across turns too.
    pub fn new(prefix: impl Into<String>) -> Self {
        let prefix = prefix
            .into()
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
            .take(32)
            .collect();
        IdMinter {
            prefix,
            ..Self::default()
        }
    }

    /// A new id, different from every id minted or kept in this turn.
    pub fn mint(&mut self) -> String {
        loop {
            self.next = self.next.wrapping_add(1);
            let id = if self.prefix.is_empty() {
                format!("call_{}", self.next)
            } else {
                format!("call_{}_{}", self.prefix, self.next)
            };
            if self.used.insert(id.clone()) {
                return id;
            }
        }
    }

    /// The server's `id` when it is non-empty and new in this turn (then
    /// it is taken), else a minted one.
    fn keep_or_mint(&mut self, id: Option<&str>) -> String {
        match id.map(str::trim).filter(|id| !id.is_empty()) {
            Some(id) if self.used.insert(id.to_string()) => id.to_string(),
            _ => self.mint(),
        }
    }
}

/// A structured call as its fragments arrived.
#[derive(Debug, Clone, Default, PartialEq)]
struct OpenCall {
    index: Option<u64>,
    id: Option<String>,
    name: Option<String>,
    arguments: String,
}

/// Joins the [`CallFragment`]s of one reply into calls, in the order the
/// model opened them. Any sequence of fragments is taken.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallAccumulator {
    open: Vec<OpenCall>,
}

impl CallAccumulator {
    /// Adds one fragment. A fragment with an index joins the latest call at
    /// that index; one without joins the latest call. It opens a new call
    /// instead when it brings an id other than that call's, a name other
    /// than its name, or the same name again with a new object after that
    /// call's arguments are complete (Ollama sends every call at index 0,
    /// sometimes without ids). Empty ids and names count as none. The
    /// arguments text is appended as it comes (a piece may end mid-escape).
    pub fn push(&mut self, f: CallFragment) {
        let id = f.id.filter(|s| !s.trim().is_empty());
        let name = f.name.filter(|s| !s.trim().is_empty());
        let target = match f.index {
            Some(i) => self.open.iter().rposition(|c| c.index == Some(i)),
            None => self.open.len().checked_sub(1),
        };
        let join = target.filter(|&t| {
            self.open
                .get(t)
                .is_some_and(|c| !opens_new(c, id.as_deref(), name.as_deref(), &f.arguments))
        });
        match join.and_then(|t| self.open.get_mut(t)) {
            Some(c) => {
                if c.id.is_none() {
                    c.id = id;
                }
                if c.name.is_none() {
                    c.name = name;
                }
                c.arguments.push_str(&f.arguments);
            }
            None => self.open.push(OpenCall {
                index: f.index,
                id,
                name,
                arguments: f.arguments,
            }),
        }
    }

    /// Whether no fragment with anything in it has come (no call, name or
    /// arguments).
    pub fn is_empty(&self) -> bool {
        self.open.iter().all(OpenCall::is_blank)
    }

    /// Reads the reply's calls against `tools`, given the reply's `text`
    /// and how it ended. Guarantees, whatever the input:
    /// - every [`ReadCall`] names an offered tool and has an object of
    ///   arguments; every [`RejectedCall`] has `{}`;
    /// - every id is unique in the turn (`ids` mints the missing and the
    ///   repeated ones);
    /// - with `finish` = [`FinishReason::Length`], a call whose arguments
    ///   or markup were cut is rejected with `cut: true`, never repaired;
    /// - calls in the text are read only when no structured call came, and
    ///   their markup leaves [`ReadCalls::text`];
    /// - calls and rejected calls are each in the order written.
    pub fn finish(
        self,
        text: &str,
        finish: Option<&FinishReason>,
        tools: &[ToolSpec],
        ids: &mut IdMinter,
    ) -> ReadCalls {
        let at_length = matches!(finish, Some(FinishReason::Length));
        let mut out = ReadCalls::default();
        let structured: Vec<OpenCall> = self.open.into_iter().filter(|c| !c.is_blank()).collect();
        if structured.is_empty() {
            let found = text::read(text, tools, at_length);
            out.text = found.text;
            for f in found.found {
                read_found(f, tools, ids, &mut out);
            }
        } else {
            out.text = text.trim().to_string();
            for c in structured {
                read_structured(c, at_length, tools, ids, &mut out);
            }
        }
        out
    }
}

impl OpenCall {
    /// Nothing but an index or id: no call was written.
    fn is_blank(&self) -> bool {
        self.name.is_none() && self.arguments.trim().is_empty()
    }
}

/// Whether a fragment with `id`, `name` and `args` starts a call other
/// than `c`.
fn opens_new(c: &OpenCall, id: Option<&str>, name: Option<&str>, args: &str) -> bool {
    match (id, c.id.as_deref()) {
        (Some(new), Some(old)) => return new != old,
        (Some(_), None) if c.name.is_some() && json::is_complete(&c.arguments) => return true,
        _ => {}
    }
    match (name, c.name.as_deref()) {
        (Some(new), Some(old)) if new != old => true,
        // The same name again once the call is complete is the next call:
        // a server names a call on its first piece only (Ollama's constant
        // index, no ids), and that piece's arguments are empty or start one.
        (Some(_), Some(_)) => {
            let args = args.trim_start();
            (args.is_empty() || args.starts_with('{')) && json::is_complete(&c.arguments)
        }
        _ => false,
    }
}

/// The calls of one reply as read.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ReadCalls {
    /// The calls to run, in the order the model wrote them.
    pub calls: Vec<ReadCall>,
    /// The calls not to run, each to answer with its `message`, in order.
    pub rejected: Vec<RejectedCall>,
    /// The reply's text without the markup of calls read from it, trimmed.
    pub text: String,
}

impl ReadCalls {
    /// Adds these calls to the turn's counts: each call by its source,
    /// each rejected call as `cut` or `malformed`.
    pub fn count_into(&self, c: &mut CallsRead) {
        for call in &self.calls {
            c.count(call.source);
        }
        for r in &self.rejected {
            if r.cut {
                c.cut = c.cut.saturating_add(1);
            } else {
                c.malformed = c.malformed.saturating_add(1);
            }
        }
    }
}

/// A call to run.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadCall {
    /// The call: an offered tool's exact name, a JSON object of arguments
    /// fitted to its schema, an id unique in the turn.
    pub call: ToolCall,
    /// How it was read.
    pub source: CallSource,
    /// What was repaired or coerced, one short note each (empty when it
    /// came as it should).
    pub notes: Vec<String>,
}

/// A call not to run: answered with `message` as its tool result.
#[derive(Debug, Clone, PartialEq)]
pub struct RejectedCall {
    /// The call for the history: an id unique in the turn (minted if none),
    /// the name as given, and arguments always `{}` (a server's chat
    /// template would choke on the broken text when the history is sent
    /// back).
    pub call: ToolCall,
    /// The arguments text (or call markup) as received.
    pub raw: String,
    /// The output-token limit cut it.
    pub cut: bool,
    /// It names no offered tool (answered `UNKNOWN_TOOL`, as the tools
    /// answer a name they do not have; counted malformed).
    pub unknown_tool: bool,
    /// For the model: what was wrong, and what to send instead.
    pub message: String,
}

/// A structured call, read into `out`.
fn read_structured(
    c: OpenCall,
    at_length: bool,
    tools: &[ToolSpec],
    ids: &mut IdMinter,
    out: &mut ReadCalls,
) {
    let id = ids.keep_or_mint(c.id.as_deref());
    let given = c.name.unwrap_or_default();
    let raw = c.arguments;
    if at_length && !json::is_complete(&raw) {
        out.rejected.push(cut(id, given, raw));
        return;
    }
    let Some(spec) = coerce::resolve_name(&given, tools, true) else {
        out.rejected.push(unknown(id, given, raw, tools));
        return;
    };
    let mut notes = Vec::new();
    let value = if raw.trim().is_empty() {
        Value::Object(Map::new())
    } else if let Some(v) = json::parse_strict(&raw) {
        v
    } else if let Some((v, how)) = json::repair(&raw) {
        notes.push(how.to_string());
        v
    } else {
        let message = format!(
            "The arguments of `{}` are not valid JSON, even after repair, so it was not run. Call it again with one JSON object: {}.",
            spec.name,
            coerce::signature(spec)
        );
        out.rejected.push(rejected(id, given, raw, message));
        return;
    };
    match settle(&given, spec, value, false, &mut notes) {
        Ok(call) => {
            let source = if notes.is_empty() {
                CallSource::Structured
            } else {
                CallSource::Repaired
            };
            out.calls.push(ReadCall {
                call: ToolCall { id, ..call },
                source,
                notes,
            });
        }
        Err(message) => out.rejected.push(rejected(id, given, raw, message)),
    }
}

/// A call found in the text, read into `out`.
fn read_found(f: text::Found, tools: &[ToolSpec], ids: &mut IdMinter, out: &mut ReadCalls) {
    let id = ids.mint();
    match f {
        text::Found::Cut { name, raw } => out.rejected.push(cut(id, name, raw)),
        text::Found::Bad { name, raw, why } => {
            let message = format!(
                "A tool call written in your reply could not be read: {why}, so it was not run. Call a tool with one JSON object of arguments, e.g. {}.",
                tools.first().map(coerce::signature).unwrap_or_default()
            );
            out.rejected.push(rejected(id, name, raw, message));
        }
        text::Found::Call {
            name,
            arguments,
            raw,
            from_strings,
            mut notes,
        } => {
            let Some(spec) = coerce::resolve_name(&name, tools, true) else {
                out.rejected.push(unknown(id, name, raw, tools));
                return;
            };
            match settle(&name, spec, arguments, from_strings, &mut notes) {
                Ok(call) => out.calls.push(ReadCall {
                    call: ToolCall { id, ..call },
                    source: CallSource::FromText,
                    notes,
                }),
                Err(message) => out.rejected.push(rejected(id, name, raw, message)),
            }
        }
    }
}

/// The call to `spec` (named `given` by the model) with `value` as its
/// arguments: decoded when double-encoded, `{}` for null, fitted to the
/// schema; the id is left empty. Err: the message when the arguments are
/// not an object.
fn settle(
    given: &str,
    spec: &ToolSpec,
    value: Value,
    from_strings: bool,
    notes: &mut Vec<String>,
) -> Result<ToolCall, String> {
    if given != spec.name {
        notes.push(format!("tool `{given}` read as `{}`", spec.name));
    }
    let (value, decoded) = json::undouble(value);
    if decoded {
        notes.push("decoded double-encoded arguments".into());
    }
    let mut args = match value {
        Value::Object(m) => m,
        Value::Null => {
            notes.push("null arguments read as {}".into());
            Map::new()
        }
        Value::String(s) if s.trim().is_empty() => {
            notes.push("empty arguments read as {}".into());
            Map::new()
        }
        other => {
            let kind = match other {
                Value::Array(_) => "an array",
                Value::String(_) => "a string",
                Value::Number(_) => "a number",
                _ => "a boolean",
            };
            return Err(format!(
                "The arguments of `{}` must be one JSON object of its parameters, not {kind}, so it was not run. Call it again as {}.",
                spec.name,
                coerce::signature(spec)
            ));
        }
    };
    notes.extend(coerce::coerce(&mut args, &spec.parameters, from_strings));
    Ok(ToolCall {
        id: String::new(),
        name: spec.name.clone(),
        arguments: Value::Object(args),
    })
}

fn rejected(id: String, name: String, raw: String, message: String) -> RejectedCall {
    RejectedCall {
        call: ToolCall {
            id,
            name,
            arguments: Value::Object(Map::new()),
        },
        raw,
        cut: false,
        unknown_tool: false,
        message,
    }
}

fn unknown(id: String, name: String, raw: String, tools: &[ToolSpec]) -> RejectedCall {
    let message = unknown_tool(&name, tools);
    RejectedCall {
        unknown_tool: true,
        ..rejected(id, name, raw, message)
    }
}

fn cut(id: String, name: String, raw: String) -> RejectedCall {
    let what = if name.is_empty() {
        "a tool call".to_string()
    } else {
        format!("the call to `{name}`")
    };
    RejectedCall {
        cut: true,
        ..rejected(
            id,
            name,
            raw,
            format!(
                "Your reply hit the output-token limit in the middle of {what}, so it was not run. Send a shorter call: e.g. split a big write_file into a small write_file and edit_file calls, or write a long file in parts."
            ),
        )
    }
}

fn unknown_tool(name: &str, tools: &[ToolSpec]) -> String {
    let offered = tools
        .iter()
        .map(|t| t.name.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    if name.trim().is_empty() {
        format!("A tool call came without a tool name, so nothing was run. The tools are: {offered}. Call one of them by its exact name.")
    } else {
        let shown: String = name.chars().take(80).collect();
        format!("There is no tool `{shown}`, so nothing was run. The tools are: {offered}. Call one of them by its exact name.")
    }
}
