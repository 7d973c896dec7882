//! Fitting a call to the tool offered: its name (case and style variants),
//! its argument names (other harnesses' aliases) and its values (the types
//! of the tool's JSON schema).

use super::super::ToolSpec;
use serde_json::{Map, Number, Value};

/// Argument names that models trained on other harnesses send, and the
/// name coderig's tools use. An alias is renamed only when the tool has
/// the target and not the alias, and the call has no target already.
pub(super) const ALIASES: &[(&str, &str)] = &[
    ("file_path", "path"),
    ("filepath", "path"),
    ("file", "path"),
    ("filename", "path"),
    ("absolute_path", "path"),
    ("old_string", "old"),
    ("old_str", "old"),
    ("search", "old"),
    ("find", "old"),
    ("new_string", "new"),
    ("new_str", "new"),
    ("replace", "new"),
    ("replacement", "new"),
    ("cmd", "command"),
    ("script", "command"),
    ("text", "content"),
    ("contents", "content"),
    ("file_text", "content"),
    ("query", "pattern"),
    ("regex", "pattern"),
    ("timeout", "timeout_s"),
    ("timeout_sec", "timeout_s"),
];

/// The offered tool `name` means: the tool of exactly that name; else the
/// one tool whose name matches it ignoring case, `_`, `-`, spaces and a
/// `functions.` namespace (`ReadFile`, `read-file`, `functions.read_file`);
/// else, when `loose`, the one tool whose first word it is (`Read` →
/// `read_file`). `None` when nothing or more than one tool matches.
pub(super) fn resolve_name<'t>(
    name: &str,
    tools: &'t [ToolSpec],
    loose: bool,
) -> Option<&'t ToolSpec> {
    if let Some(t) = tools.iter().find(|t| t.name == name) {
        return Some(t);
    }
    let name = name
        .trim()
        .trim_matches(|c| c == '"' || c == '\'' || c == '`');
    let name = ["functions.", "function.", "tools.", "functions:"]
        .iter()
        .find_map(|p| name.strip_prefix(p))
        .unwrap_or(name);
    let key = squash(name);
    if key.is_empty() {
        return None;
    }
    let same = only(tools.iter().filter(|t| squash(&t.name) == key));
    if same.is_some() || !loose {
        return same;
    }
    only(tools.iter().filter(|t| {
        t.name
            .split(['_', '-'])
            .next()
            .is_some_and(|w| w.to_ascii_lowercase() == key)
    }))
}

/// The iterator's only item; `None` when it has none or several.
fn only<'t>(mut it: impl Iterator<Item = &'t ToolSpec>) -> Option<&'t ToolSpec> {
    let first = it.next()?;
    it.next().is_none().then_some(first)
}

/// `s` lowercased with only its letters and digits kept.
fn squash(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// The tool's arguments as the model should write them: `read_file {path,
/// limit?, offset?}` (required ones first, optional ones with `?`).
pub(super) fn signature(spec: &ToolSpec) -> String {
    let required = required(&spec.parameters);
    let props = spec.parameters["properties"].as_object();
    let mut names: Vec<String> = required
        .iter()
        .filter(|k| props.is_some_and(|p| p.contains_key(**k)))
        .map(|k| k.to_string())
        .collect();
    names.extend(
        props
            .into_iter()
            .flat_map(|p| p.keys())
            .filter(|k| !required.contains(&k.as_str()))
            .map(|k| format!("{k}?")),
    );
    format!("{} {{{}}}", spec.name, names.join(", "))
}

fn required(schema: &Value) -> Vec<&str> {
    schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Fits `args` to the tool's JSON schema `schema` in place and says what
/// it changed (one short note per change): aliases renamed ([`ALIASES`]),
/// `null` for an optional property removed, and values converted to the
/// property's type where that is lossless in meaning ("12" → 12, "true" →
/// true, 12 → "12", an object or array → its JSON text where a string is
/// wanted, a JSON-array string → the array, a lone string → a one-element
/// array of strings). Keys the schema does not know are kept as they are
/// (the tool answers them). With `from_strings` (values that are raw text
/// by their format, such as XML parameters) a conversion from a string is
/// expected and not noted.
pub(super) fn coerce(
    args: &mut Map<String, Value>,
    schema: &Value,
    from_strings: bool,
) -> Vec<String> {
    let mut notes = Vec::new();
    let Some(props) = schema["properties"].as_object() else {
        return notes;
    };
    for (alias, target) in ALIASES {
        if props.contains_key(*target) && !props.contains_key(*alias) && !args.contains_key(*target)
        {
            if let Some(v) = args.remove(*alias) {
                args.insert((*target).to_string(), v);
                notes.push(format!("argument `{alias}` read as `{target}`"));
            }
        }
    }
    let required = required(schema);
    let keys: Vec<String> = args.keys().cloned().collect();
    for key in keys {
        let Some(prop) = props.get(&key) else {
            continue;
        };
        let types = types(prop);
        let Some(value) = args.get(&key) else {
            continue;
        };
        if types.is_empty() || types.iter().any(|t| matches(value, t)) {
            continue;
        }
        if value.is_null() {
            if !required.contains(&key.as_str()) {
                args.remove(&key);
                notes.push(format!("`{key}`: null removed"));
            }
            continue;
        }
        let Some((new, to)) = types
            .iter()
            .find_map(|t| convert(value, t, prop).map(|v| (v, *t)))
        else {
            continue;
        };
        if !(from_strings && value.is_string()) {
            notes.push(format!("`{key}`: {} → {to}", kind(value)));
        }
        args.insert(key, new);
    }
    notes
}

/// The types a property allows (`"type": "integer"` or `["integer",
/// "null"]`); none when it says no type.
fn types(prop: &Value) -> Vec<&str> {
    match &prop["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// Whether `v` is of JSON-schema type `t` (an unknown type matches all).
fn matches(v: &Value, t: &str) -> bool {
    match t {
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        "null" => v.is_null(),
        _ => true,
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The largest integer an f64 holds exactly (2^53).
const EXACT_F64: f64 = 9_007_199_254_740_992.0;

/// `v` as type `t` of property `prop`, when it converts.
fn convert(v: &Value, t: &str, prop: &Value) -> Option<Value> {
    match (t, v) {
        ("integer", Value::String(s)) => integer(s.trim()),
        ("integer", Value::Number(n)) => n
            .as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() <= EXACT_F64)
            .map(|f| Value::from(f as i64)),
        ("number", Value::String(s)) => {
            let s = s.trim();
            integer(s).or_else(|| {
                s.parse::<f64>()
                    .ok()
                    .and_then(Number::from_f64)
                    .map(Value::Number)
            })
        }
        ("boolean", Value::String(s)) => match s.trim() {
            b if b.eq_ignore_ascii_case("true") => Some(Value::Bool(true)),
            b if b.eq_ignore_ascii_case("false") => Some(Value::Bool(false)),
            _ => None,
        },
        ("string", Value::Number(n)) => Some(Value::String(n.to_string())),
        ("string", Value::Bool(b)) => Some(Value::String(b.to_string())),
        ("string", Value::Array(_) | Value::Object(_)) => {
            serde_json::to_string(v).ok().map(Value::String)
        }
        ("array", Value::String(s)) => match serde_json::from_str::<Value>(s.trim()) {
            Ok(a @ Value::Array(_)) => Some(a),
            _ if prop["items"]["type"] == "string" => Some(Value::Array(vec![v.clone()])),
            _ => None,
        },
        ("object", Value::String(s)) => match serde_json::from_str::<Value>(s.trim()) {
            Ok(o @ Value::Object(_)) => Some(o),
            _ => None,
        },
        _ => None,
    }
}

/// `s` as a JSON integer: digits (with a sign), or a float of no fraction
/// that an f64 holds exactly (`"10.0"`).
fn integer(s: &str) -> Option<Value> {
    if let Ok(i) = s.parse::<i64>() {
        return Some(Value::from(i));
    }
    if let Ok(u) = s.parse::<u64>() {
        return Some(Value::from(u));
    }
    s.parse::<f64>()
        .ok()
        .filter(|f| f.is_finite() && f.fract() == 0.0 && f.abs() <= EXACT_F64)
        .map(|f| Value::from(f as i64))
}
