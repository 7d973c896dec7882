//! Calls written in a reply's text, for servers that left the model's
//! call markup in the content: Qwen3-Coder / OpenHands XML
//! (`<function=NAME><parameter=KEY>value</parameter></function>`, in an
//! optional `<tool_call>`), Hermes (`<tool_call>{"name": ..., "arguments":
//! ...}</tool_call>`) and fenced JSON naming an offered tool.
//!
//! Every scan moves forward only and looks at a bounded window around each
//! marker, so the work is about linear in the text.

use super::super::ToolSpec;
use super::{coerce, json};
use serde_json::{Map, Value};

/// One call found in the text, before its name and arguments are checked
/// against the tools.
#[derive(Debug)]
pub(super) enum Found {
    /// A call written out whole.
    Call {
        /// The tool's name as written.
        name: String,
        /// Its arguments (an object for XML; as written for JSON).
        arguments: Value,
        /// The markup as written.
        raw: String,
        /// The values are raw text by the format (XML parameters).
        from_strings: bool,
        /// What was repaired to read it.
        notes: Vec<String>,
    },
    /// A call whose markup the output-token limit cut.
    Cut {
        /// The tool's name, where it was written before the cut.
        name: String,
        /// The markup as written.
        raw: String,
    },
    /// Call markup that cannot be read.
    Bad {
        /// The tool's name, where one could be read.
        name: String,
        /// The markup as written.
        raw: String,
        /// What is wrong, for the model.
        why: String,
    },
}

/// The calls found in a text and the text without their markup.
#[derive(Debug)]
pub(super) struct TextCalls {
    /// The text with the markup of every call found removed, trimmed.
    pub text: String,
    /// The calls, in the order written.
    pub found: Vec<Found>,
}

const TOOL_CALL: &str = "<tool_call>";
const TOOL_CALL_END: &str = "</tool_call>";
const FUNCTION: &str = "<function=";
const FUNCTION_END: &str = "</function>";
const PARAMETER: &str = "<parameter=";
const PARAMETER_END: &str = "</parameter>";
const FENCE: &str = "```";

/// The longest tool or parameter name read from XML markup (bytes).
const MAX_TAG_NAME: usize = 200;

/// What one marker turned out to be.
enum Step {
    /// Calls, whose markup ends at the offset.
    Calls(usize, Vec<Found>),
    /// Plain text up to the offset.
    Text(usize),
}

/// The calls written in `text`, in order, and the text without them.
/// `at_length`: the reply hit the output-token limit, so markup left open
/// at the end is a cut call. Fenced JSON counts only when every object in
/// it names an offered tool (by name, case or style) and has arguments.
pub(super) fn read(text: &str, tools: &[ToolSpec], at_length: bool) -> TextCalls {
    let mut kept = String::new();
    let mut found = Vec::new();
    let mut pos = 0;
    while let Some((at, marker)) = next_marker(text, pos) {
        kept.push_str(&text[pos..at]);
        let step = match marker {
            TOOL_CALL => tool_call(text, at, at_length),
            FUNCTION => match function(text, at, at_length) {
                Some((end, f)) => Step::Calls(end, vec![f]),
                None => Step::Text(at + FUNCTION.len()),
            },
            _ => fence(text, at, tools, at_length),
        };
        pos = match step {
            Step::Calls(end, calls) => {
                found.extend(calls);
                end
            }
            Step::Text(end) => {
                kept.push_str(&text[at..end]);
                end
            }
        };
    }
    kept.push_str(&text[pos..]);
    TextCalls {
        text: kept.trim().to_string(),
        found,
    }
}

/// The first of `markers` in `text` at or after `from`.
fn find_marker<'m>(text: &str, from: usize, markers: &[&'m str]) -> Option<(usize, &'m str)> {
    let rest = text.get(from..)?;
    rest.match_indices(['<', '`']).find_map(|(i, _)| {
        markers
            .iter()
            .find(|m| rest[i..].starts_with(**m))
            .map(|m| (from + i, *m))
    })
}

fn next_marker(text: &str, from: usize) -> Option<(usize, &'static str)> {
    find_marker(text, from, &[TOOL_CALL, FUNCTION, FENCE])
}

fn skip_ws(text: &str, from: usize) -> usize {
    let rest = &text[from..];
    from + (rest.len() - rest.trim_start().len())
}

/// `<tool_call>` at `at`: XML functions or a Hermes JSON object inside;
/// plain text when neither follows.
fn tool_call(text: &str, at: usize, at_length: bool) -> Step {
    let start = at + TOOL_CALL.len();
    let p = skip_ws(text, start);
    let body = &text[p..];
    if body.starts_with(FUNCTION) {
        let mut calls = Vec::new();
        let mut q = p;
        while let Some((end, f)) = function(text, q, at_length) {
            calls.push(f);
            q = skip_ws(text, end);
            if !text[q..].starts_with(FUNCTION) {
                break;
            }
        }
        if calls.is_empty() {
            return Step::Text(start);
        }
        if text[q..].starts_with(TOOL_CALL_END) {
            q += TOOL_CALL_END.len();
        }
        return Step::Calls(q, calls);
    }
    if !body.starts_with('{') {
        return Step::Text(start);
    }
    let mut stream = serde_json::Deserializer::from_str(body).into_iter::<Value>();
    if let Some(Ok(v)) = stream.next() {
        let end = p + stream.byte_offset();
        let raw = text[p..end].to_string();
        // `</tool_call>` may have been eaten as a stop string; a stray
        // closing bracket before it is dropped with it.
        let after =
            text[end..].trim_start_matches(|c: char| c.is_whitespace() || c == '}' || c == ']');
        let end = match after.strip_prefix(TOOL_CALL_END) {
            Some(rest) => text.len() - rest.len(),
            None => end,
        };
        return Step::Calls(end, vec![hermes(v, raw, Vec::new())]);
    }
    // Broken JSON: up to `</tool_call>`, or the end of the text.
    let (inner, end, closed) = match body.find(TOOL_CALL_END) {
        Some(c) => (&body[..c], p + c + TOOL_CALL_END.len(), true),
        None => (body, text.len(), false),
    };
    let found = if !closed && at_length {
        Found::Cut {
            name: sniff_name(inner),
            raw: inner.to_string(),
        }
    } else {
        match json::repair(inner) {
            Some((v, how)) => hermes(v, inner.to_string(), vec![how.to_string()]),
            None => Found::Bad {
                name: sniff_name(inner),
                raw: inner.to_string(),
                why: "its JSON is broken beyond repair".into(),
            },
        }
    };
    Step::Calls(end, vec![found])
}

/// A Hermes call from its JSON.
fn hermes(v: Value, raw: String, notes: Vec<String>) -> Found {
    match call_parts(&v) {
        Some((name, arguments)) => Found::Call {
            name,
            arguments: arguments.unwrap_or_else(|| Value::Object(Map::new())),
            raw,
            from_strings: false,
            notes,
        },
        None => Found::Bad {
            name: String::new(),
            raw,
            why: "a <tool_call> holds {\"name\": TOOL, \"arguments\": {...}}".into(),
        },
    }
}

/// The tool's name and the arguments (when given) of a call written as a
/// JSON object: `name` (or `tool`, `tool_name`, `function`) and
/// `arguments` (or `parameters`, `args`, `input`); also OpenAI's
/// `{"type": "function", "function": {...}}`.
fn call_parts(v: &Value) -> Option<(String, Option<Value>)> {
    let obj = v.as_object()?;
    if let Some(inner @ Value::Object(_)) = obj.get("function") {
        return call_parts(inner);
    }
    let name = ["name", "tool", "tool_name", "function"]
        .iter()
        .find_map(|k| obj.get(*k).and_then(Value::as_str))?;
    let arguments = ["arguments", "parameters", "args", "input"]
        .iter()
        .find_map(|k| obj.get(*k))
        .cloned();
    Some((name.to_string(), arguments))
}

/// The `"name": "..."` of a cut or broken JSON call, or nothing.
fn sniff_name(text: &str) -> String {
    let Some(i) = text.find("\"name\"") else {
        return String::new();
    };
    let rest = text[i + 6..].trim_start();
    let Some(rest) = rest.strip_prefix(':') else {
        return String::new();
    };
    let Some(rest) = rest.trim_start().strip_prefix('"') else {
        return String::new();
    };
    rest.split('"')
        .next()
        .unwrap_or_default()
        .chars()
        .take(MAX_TAG_NAME)
        .collect()
}

/// The name of a `<function=NAME>` or `<parameter=KEY>` tag whose name
/// starts at `from`, and the offset after its `>`; `None` when no short,
/// one-line name closes with `>`.
fn tag_name(text: &str, from: usize) -> Option<(&str, usize)> {
    let rest = &text[from..];
    let (i, _) = rest
        .char_indices()
        .take_while(|&(i, c)| i <= MAX_TAG_NAME && c != '\n' && c != '<')
        .find(|&(_, c)| c == '>')?;
    let name = rest[..i].trim().trim_matches(|c| c == '"' || c == '\'');
    (!name.is_empty()).then_some((name, from + i + 1))
}

/// `<function=NAME>` at `at` with its parameters; `None` when the tag has
/// no name or is not followed by a parameter or `</function>`. Values are the raw text between the tags, one leading and one
/// trailing newline stripped; a value ends at `</parameter>` or where the
/// next parameter or the function's end starts.
fn function(text: &str, at: usize, at_length: bool) -> Option<(usize, Found)> {
    let (name, mut p) = tag_name(text, at + FUNCTION.len())?;
    // A call's tag is followed by its parameters or its end (or the end of
    // a cut text); a tag mentioned in prose is not.
    let next = &text[skip_ws(text, p)..];
    if !(next.is_empty() || next.starts_with(PARAMETER) || next.starts_with(FUNCTION_END)) {
        return None;
    }
    let mut args = Map::new();
    let mut closed = false;
    let mut open_value = false;
    loop {
        p = skip_ws(text, p);
        let rest = &text[p..];
        if rest.is_empty() {
            break;
        }
        if rest.starts_with(FUNCTION_END) {
            p += FUNCTION_END.len();
            closed = true;
            break;
        }
        if rest.starts_with(TOOL_CALL_END)
            || rest.starts_with(FUNCTION)
            || rest.starts_with(TOOL_CALL)
        {
            closed = true;
            break;
        }
        if rest.starts_with(PARAMETER) {
            let Some((key, v0)) = tag_name(text, p + PARAMETER.len()) else {
                // `<parameter=` with no name: a tag cut at the end, or junk.
                open_value = true;
                p = text.len();
                break;
            };
            let stop = find_marker(
                text,
                v0,
                &[PARAMETER_END, PARAMETER, FUNCTION_END, TOOL_CALL_END],
            );
            let (v_end, next) = match stop {
                Some((e, PARAMETER_END)) => (e, e + PARAMETER_END.len()),
                Some((e, _)) => (e, e),
                None => {
                    open_value = true;
                    (text.len(), text.len())
                }
            };
            args.insert(
                key.to_string(),
                Value::String(strip_one_newline(&text[v0..v_end]).to_string()),
            );
            p = next;
            if open_value {
                break;
            }
            continue;
        }
        // Stray text between parameters: skip to the next tag.
        match rest.char_indices().skip(1).find(|&(_, c)| c == '<') {
            Some((i, _)) => p += i,
            None => {
                p = text.len();
                break;
            }
        }
    }
    let raw = text[at..p].to_string();
    let name = name.to_string();
    let found = if at_length && (open_value || !closed) {
        Found::Cut { name, raw }
    } else if open_value {
        Found::Bad {
            name,
            raw,
            why: "its markup ends inside a parameter (no </parameter>)".into(),
        }
    } else {
        Found::Call {
            name,
            arguments: Value::Object(args),
            raw,
            from_strings: true,
            notes: Vec::new(),
        }
    };
    Some((p, found))
}

/// `s` without one leading and one trailing newline (`\r\n` when the
/// leading one was).
fn strip_one_newline(s: &str) -> &str {
    if let Some(s) = s.strip_prefix("\r\n") {
        return s.strip_suffix("\r\n").unwrap_or(s);
    }
    let s = s.strip_prefix('\n').unwrap_or(s);
    s.strip_suffix('\n').unwrap_or(s)
}

/// A fence (```` ``` ````) at `at`: calls when it holds call markup, or
/// JSON whose every object is a call to an offered tool; else plain text
/// (the whole fence, so markup shown inside it is never read).
fn fence(text: &str, at: usize, tools: &[ToolSpec], at_length: bool) -> Step {
    let info_start = at + FENCE.len();
    let Some(nl) = text[info_start..].find('\n') else {
        return Step::Text(info_start);
    };
    let info = text[info_start..info_start + nl]
        .trim()
        .to_ascii_lowercase();
    let body_start = info_start + nl + 1;
    let (body, end, closed) = match text[body_start..].find(FENCE) {
        Some(c) => (
            &text[body_start..body_start + c],
            body_start + c + FENCE.len(),
            true,
        ),
        None => (&text[body_start..], text.len(), false),
    };
    let trimmed = body.trim_start();
    let markup_info = matches!(info.as_str(), "" | "xml" | "tool_call" | "tool_code");
    if markup_info && (trimmed.starts_with(TOOL_CALL) || trimmed.starts_with(FUNCTION)) {
        // No fence inside `body`: this recursion is one level deep.
        let inner = read(body, tools, at_length && !closed);
        return if inner.found.is_empty() {
            Step::Text(end)
        } else {
            Step::Calls(end, inner.found)
        };
    }
    if !matches!(
        info.as_str(),
        "" | "json" | "json5" | "jsonc" | "tool_call" | "tool_code"
    ) {
        return Step::Text(end);
    }
    let offered = |name: &str| coerce::resolve_name(name, tools, false).is_some();
    if !closed {
        let name = sniff_name(body);
        return if at_length && offered(&name) {
            Step::Calls(
                end,
                vec![Found::Cut {
                    name,
                    raw: body.to_string(),
                }],
            )
        } else {
            Step::Text(end)
        };
    }
    let Some(value) = json::parse_strict(body)
        .or_else(|| json::fix_escapes(body).and_then(|b| json::parse_strict(&b)))
    else {
        return Step::Text(end);
    };
    let items = match &value {
        Value::Array(items) => items.iter().collect::<Vec<_>>(),
        v => vec![v],
    };
    let mut calls = Vec::new();
    for item in items {
        match call_parts(item) {
            Some((name, Some(arguments))) if offered(&name) => calls.push(Found::Call {
                name,
                arguments,
                raw: body.to_string(),
                from_strings: false,
                notes: Vec::new(),
            }),
            _ => return Step::Text(end),
        }
    }
    if calls.is_empty() {
        Step::Text(end)
    } else {
        Step::Calls(end, calls)
    }
}
