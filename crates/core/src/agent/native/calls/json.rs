//! JSON text of arguments: strict parsing, whether a text is complete, and
//! repair (own escape fixes first, then `llm_json` within guards).

use serde_json::Value;

/// The most `{` and `[` a text may hold for `llm_json` to repair it: its
/// parser recurses once per nesting level with no limit of its own, so a
/// text of many openers could overflow the stack.
pub(super) const REPAIR_MAX_OPENERS: usize = 1_000;

/// The longest run of whitespace `llm_json` is given: its unquoted-string
/// reader looks ahead over whitespace once per whitespace character
/// (quadratic in the run's length).
const REPAIR_MAX_SPACE_RUN: usize = 256;

/// The longest text `llm_json` is given (bytes).
const REPAIR_MAX_LEN: usize = 1 << 20;

/// `text` parsed as JSON, exactly as written.
pub(super) fn parse_strict(text: &str) -> Option<Value> {
    serde_json::from_str(text).ok()
}

/// Whether `text` is complete JSON: it parses, or (malformed but finished)
/// every string and bracket it opens is closed and it ends on a closing
/// bracket. A text cut mid-way is never complete. Single-quoted strings
/// count as strings, so a lone apostrophe in unquoted text reads as open.
pub(super) fn is_complete(text: &str) -> bool {
    if parse_strict(text).is_some() {
        return true;
    }
    let mut depth: i64 = 0;
    let mut opened = false;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for ch in text.chars() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if ch == '\\' {
                escaped = true;
            } else if ch == q {
                quote = None;
            }
            continue;
        }
        match ch {
            '"' | '\'' => quote = Some(ch),
            '{' | '[' => {
                depth += 1;
                opened = true;
            }
            '}' | ']' => depth -= 1,
            _ => {}
        }
    }
    quote.is_none()
        && opened
        && depth <= 0
        && matches!(text.trim_end().chars().last(), Some('}' | ']'))
}

/// `text` with what models most often break inside double-quoted strings
/// fixed: raw control characters (newlines, tabs) escaped, and a backslash
/// that starts no valid escape (`\d`, `\.`, `\u` without four hex digits)
/// doubled. `None` when nothing needed fixing.
pub(super) fn fix_escapes(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len() + 16);
    let mut changed = false;
    let mut in_string = false;
    let mut chars = text.char_indices().peekable();
    while let Some((i, ch)) = chars.next() {
        if !in_string {
            if ch == '"' {
                in_string = true;
            }
            out.push(ch);
            continue;
        }
        match ch {
            '"' => {
                in_string = false;
                out.push(ch);
            }
            '\\' => match chars.peek().map(|&(_, c)| c) {
                Some('"' | '\\' | '/' | 'b' | 'f' | 'n' | 'r' | 't') => {
                    out.push(ch);
                    if let Some((_, next)) = chars.next() {
                        out.push(next);
                    }
                }
                Some('u') if is_hex4(text.get(i + 2..i + 6)) => out.push(ch),
                _ => {
                    out.push_str("\\\\");
                    changed = true;
                }
            },
            '\n' => {
                out.push_str("\\n");
                changed = true;
            }
            '\r' => {
                out.push_str("\\r");
                changed = true;
            }
            '\t' => {
                out.push_str("\\t");
                changed = true;
            }
            c if (c as u32) < 0x20 => {
                out.push_str(&format!("\\u{:04x}", c as u32));
                changed = true;
            }
            c => out.push(c),
        }
    }
    changed.then_some(out)
}

fn is_hex4(s: Option<&str>) -> bool {
    s.is_some_and(|s| s.len() == 4 && s.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// `text` repaired to a JSON value, with a short note of how: first the
/// escape fixes of [`fix_escapes`], then `llm_json` (trailing commas,
/// single quotes, unquoted keys, unclosed strings and brackets, Python
/// literals). `None` when it cannot be repaired, or the text is outside
/// the guards that keep `llm_json` from overflowing the stack or running
/// for long (too many brackets, long whitespace runs, over 1 MiB), or it
/// holds a ```` ```json ```` fence (`llm_json` would keep only the fence's
/// content).
pub(super) fn repair(text: &str) -> Option<(Value, &'static str)> {
    let fixed = fix_escapes(text);
    if let Some(v) = fixed.as_deref().and_then(parse_strict) {
        return Some((
            v,
            "escaped raw control characters or bad escapes in the arguments",
        ));
    }
    // The escape fixes first; the text as written when they misread an
    // unescaped quote as a string's end.
    fixed
        .as_deref()
        .and_then(llm_repair)
        .or_else(|| llm_repair(text))
        .map(|v| (v, "repaired malformed JSON arguments"))
}

/// `text` repaired by `llm_json`, within the guards.
fn llm_repair(text: &str) -> Option<Value> {
    if !repair_guarded(text) {
        return None;
    }
    let options = llm_json::RepairOptions {
        // The default escapes non-ASCII as `\uXXXX` with `{:04x}`, which
        // corrupts every character above U+FFFF.
        ensure_ascii: false,
        ..Default::default()
    };
    llm_json::loads(text, &options).ok()
}

/// Whether `text` is within the guards [`repair`] gives `llm_json`.
fn repair_guarded(text: &str) -> bool {
    if text.len() > REPAIR_MAX_LEN || text.contains("```json") {
        return false;
    }
    let openers = text.bytes().filter(|b| matches!(b, b'{' | b'[')).count();
    if openers > REPAIR_MAX_OPENERS {
        return false;
    }
    let mut run = 0usize;
    for ch in text.chars() {
        if ch.is_whitespace() {
            run += 1;
            if run > REPAIR_MAX_SPACE_RUN {
                return false;
            }
        } else {
            run = 0;
        }
    }
    true
}

/// A JSON string holding JSON decoded (double-encoded arguments), up to
/// three levels; the value itself when it is not such a string. The flag
/// says whether anything was decoded.
pub(super) fn undouble(mut v: Value) -> (Value, bool) {
    let mut decoded = false;
    for _ in 0..3 {
        let Value::String(s) = &v else { break };
        let t = s.trim();
        if !(t.starts_with('{') || t.starts_with('[') || t.starts_with('"')) {
            break;
        }
        let Some(inner) =
            parse_strict(t).or_else(|| fix_escapes(t).as_deref().and_then(parse_strict))
        else {
            break;
        };
        v = inner;
        decoded = true;
    }
    (v, decoded)
}
