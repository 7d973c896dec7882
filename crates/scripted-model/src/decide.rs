//! The pure decision: given what a request says (normalized by each protocol
//! module into a [`RequestView`]), what does the scripted model answer?
//!
//! No IO, no clock, no server state: the same request always gets the same
//! reply (ids aside, which the protocol modules number).

use serde_json::{json, Map, Value};

/// Fault and shape switches parsed from the model name, `name+flag+flag`.
///
/// Unknown flags are ignored, so a typo degrades to the plain reply rather
/// than an error the test did not ask for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Flags {
    /// Chat: stream reasoning deltas under `reasoning_content` before the answer.
    pub reasoning_content: bool,
    /// Chat: stream reasoning deltas under `reasoning` (vLLM/Ollama spelling);
    /// Responses: a reasoning item; Anthropic: a thinking block.
    pub reasoning: bool,
    /// Chat: llama.cpp `timings` object on the last data chunk.
    pub timings: bool,
    /// 50 ms between SSE frames.
    pub slow: bool,
    /// One content frame, then the protocol's error frame, then close (no terminator).
    pub midstream_error: bool,
    /// Everything up to the protocol's terminator (`[DONE]`, `response.completed`,
    /// `message_stop`), then close.
    pub no_done: bool,
    /// Headers and one frame, then silence until the client goes away.
    pub hang: bool,
    /// Answer with this HTTP status and a JSON error body instead of a stream.
    pub status: Option<u16>,
    /// Report part of the prompt as served from cache.
    pub usage_cached: bool,
    /// Calls written in the text as Qwen3-Coder XML, none structured.
    pub xml_calls: bool,
    /// Calls written in the text as Hermes `<tool_call>{json}</tool_call>`, none structured.
    pub hermes_calls: bool,
    /// Call arguments streamed in pieces of 3–7 bytes.
    pub split_args: bool,
    /// Calls carry no id.
    pub no_ids: bool,
    /// Chat: every call of a reply has `index` 0 (Ollama). Accepted, and
    /// without effect, for Anthropic and Responses.
    pub index_reuse: bool,
    /// Call arguments sent with a trailing comma and no closing brace.
    pub bad_json: bool,
    /// The last call (or the text) cut in the middle, finish = length limit.
    pub length_cut: bool,
    /// The context window in tokens: `tiny_context` = 2,048, `ctx_NNNN` = NNNN;
    /// `None` = [`DEFAULT_CONTEXT`].
    pub context: Option<u64>,
}

/// The context window (tokens) of a model name without a window flag.
pub const DEFAULT_CONTEXT: u64 = 32_768;
/// The window `tiny_context` sets.
pub const TINY_CONTEXT: u64 = 2_048;

impl Flags {
    /// Splits `model` on `+`: returns the bare name and the flags after it.
    /// `status_NNN` is honoured only for 400..=599 (an error is the point).
    pub fn parse(model: &str) -> (String, Flags) {
        let mut parts = model.split('+');
        let name = parts.next().unwrap_or_default().to_string();
        let mut flags = Flags::default();
        for part in parts {
            match part {
                "reasoning_content" => flags.reasoning_content = true,
                "reasoning" => flags.reasoning = true,
                "timings" => flags.timings = true,
                "slow" => flags.slow = true,
                "midstream_error" => flags.midstream_error = true,
                "no_done" => flags.no_done = true,
                "hang" => flags.hang = true,
                "usage_cached" => flags.usage_cached = true,
                "xml_calls" => flags.xml_calls = true,
                "hermes_calls" => flags.hermes_calls = true,
                "split_args" => flags.split_args = true,
                "no_ids" => flags.no_ids = true,
                "index_reuse" => flags.index_reuse = true,
                "bad_json" => flags.bad_json = true,
                "length_cut" => flags.length_cut = true,
                "tiny_context" => flags.context = Some(TINY_CONTEXT),
                other => {
                    if let Some(n) = other.strip_prefix("ctx_") {
                        if let Ok(n) = n.parse::<u64>() {
                            if n > 0 {
                                flags.context = Some(n);
                            }
                        }
                    }
                    if let Some(code) = other.strip_prefix("status_") {
                        if let Ok(code) = code.parse::<u16>() {
                            if (400..=599).contains(&code) {
                                flags.status = Some(code);
                            }
                        }
                    }
                }
            }
        }
        (name, flags)
    }

    /// The context window in tokens this model name asks for.
    pub fn window(&self) -> u64 {
        self.context.unwrap_or(DEFAULT_CONTEXT)
    }
}

/// One tool the request offers, as the protocol module found it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInfo {
    /// The tool's name, exactly as offered.
    pub name: String,
    /// The JSON schema of its arguments (`Value::Null` when none was given).
    pub schema: Value,
    /// True for a freeform tool (Responses `type:"custom"`), whose input is raw text.
    pub freeform: bool,
}

/// What the decision needs to know about a request, independent of protocol.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestView {
    /// The offered tools, in request order.
    pub tools: Vec<ToolInfo>,
    /// True when the conversation already carries a tool result.
    pub has_tool_result: bool,
    /// The text of the last user message (all its text parts, joined by newlines).
    pub last_user_text: String,
    /// All system/instruction and message text, for finding the working directory.
    pub all_text: String,
    /// The JSON schema the reply must be an instance of, if structured output was asked.
    pub schema: Option<Value>,
}

/// The arguments of a scripted tool call.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolArgs {
    /// A JSON object for a function tool.
    Json(Value),
    /// Raw text for a freeform tool (codex `apply_patch`).
    Freeform(String),
}

/// What the scripted model answers.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// A final assistant text.
    Text(String),
    /// One call of the named tool.
    ToolCall {
        /// The tool's name, one of the request's tools.
        name: String,
        /// Its arguments.
        args: ToolArgs,
    },
}

/// Tools that write a file, best first (claude, qwen, opencode, codex).
const WRITE_TOOLS: &[&str] = &["Write", "write_file", "write", "apply_patch"];
/// Tools that run a shell command, best first.
const SHELL_TOOLS: &[&str] = &[
    "Bash",
    "run_shell_command",
    "bash",
    "exec_command",
    "shell_command",
    "shell",
];

/// Decides the reply: a tool result present → final text; else a known tool
/// offered → one call that creates the file the prompt names; else final text.
/// Final text is a schema instance when structured output was asked, else the
/// text after `Reply with:` in the last user message, else `done`.
pub fn decide(view: &RequestView) -> Reply {
    if !view.has_tool_result {
        if let Some(reply) = tool_call(view) {
            return reply;
        }
    }
    Reply::Text(final_text(view))
}

fn final_text(view: &RequestView) -> String {
    if let Some(schema) = &view.schema {
        return instance_of(schema, 0).to_string();
    }
    reply_with(&view.last_user_text).unwrap_or_else(|| "done".to_string())
}

/// The text after the last `Reply with:` up to the end of its line.
fn reply_with(text: &str) -> Option<String> {
    let at = text.rfind("Reply with:")?;
    let rest = &text[at + "Reply with:".len()..];
    let line = rest.lines().next().unwrap_or_default().trim();
    (!line.is_empty()).then(|| line.to_string())
}

fn tool_call(view: &RequestView) -> Option<Reply> {
    let wants_shell = view
        .last_user_text
        .to_ascii_lowercase()
        .contains("using the shell");
    let find = |names: &[&str]| {
        names
            .iter()
            .find_map(|n| view.tools.iter().find(|t| t.name == *n))
    };
    let (tool, shell) = if wants_shell {
        match find(SHELL_TOOLS) {
            Some(t) => (t, true),
            None => (find(WRITE_TOOLS)?, false),
        }
    } else {
        match find(WRITE_TOOLS) {
            Some(t) => (t, false),
            None => (find(SHELL_TOOLS)?, true),
        }
    };
    let (path, text) = create_target(&view.last_user_text);
    let cwd = working_dir(&view.all_text);
    let args = if tool.freeform {
        ToolArgs::Freeform(add_file_patch(&path, &text))
    } else if tool.name == "apply_patch" {
        ToolArgs::Json(json!({ "input": add_file_patch(&path, &text) }))
    } else if shell {
        ToolArgs::Json(shell_args(&tool.schema, &path, &text, cwd.as_deref()))
    } else {
        ToolArgs::Json(write_args(&tool.schema, &path, &text, cwd.as_deref()))
    };
    Some(Reply::ToolCall {
        name: tool.name.clone(),
        args,
    })
}

/// The `(path, text)` of the last `Create <path> containing <text>` in the
/// prompt; `hello.txt` / `hi` when the prompt names none.
pub fn create_target(prompt: &str) -> (String, String) {
    let mut found = None;
    let mut from = 0;
    while let Some(at) = prompt[from..].find("Create ") {
        let start = from + at + "Create ".len();
        from = start;
        let rest = &prompt[start..];
        let Some(path) = rest.split_whitespace().next() else {
            continue;
        };
        let after = &rest[rest.find(path).unwrap_or(0) + path.len()..];
        let Some(text) = after.strip_prefix(" containing ") else {
            continue;
        };
        let mut text = text.lines().next().unwrap_or_default();
        for stop in [" using the shell", "<", "\\", "\""] {
            if let Some(cut) = text.find(stop) {
                text = &text[..cut];
            }
        }
        let text = text.trim().trim_end_matches(['.', ',']).trim();
        let path = path.trim_matches(['`', '\'', '"']);
        if !path.is_empty() && !text.is_empty() {
            found = Some((path.to_string(), text.to_string()));
        }
    }
    found.unwrap_or_else(|| ("hello.txt".to_string(), "hi".to_string()))
}

/// The working directory the agent announced in its prompt, if any.
/// Each CLI spells it differently (codex `<cwd>`, claude, opencode, qwen).
pub fn working_dir(text: &str) -> Option<String> {
    const MARKERS: &[&str] = &[
        "<cwd>",
        "Primary working directory: ",
        "Working directory: ",
        "working in the directory: ",
    ];
    for marker in MARKERS {
        if let Some(at) = text.find(marker) {
            let rest = &text[at + marker.len()..];
            // Stop at a backslash too: regexing JSON-escaped text once leaked `\n` into a path.
            let end = rest
                .find(['\n', '\r', '<', '\\', '"', '`'])
                .unwrap_or(rest.len());
            let dir = rest[..end].trim().trim_end_matches('.');
            if dir.starts_with('/') {
                return Some(dir.to_string());
            }
        }
    }
    None
}

fn absolute(path: &str, cwd: Option<&str>) -> String {
    match cwd {
        Some(dir) if !path.starts_with('/') => format!("{}/{}", dir.trim_end_matches('/'), path),
        _ => path.to_string(),
    }
}

fn add_file_patch(path: &str, text: &str) -> String {
    format!("*** Begin Patch\n*** Add File: {path}\n+{text}\n*** End Patch\n")
}

fn properties(schema: &Value) -> Map<String, Value> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

fn required(schema: &Value) -> Vec<String> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn write_args(schema: &Value, path: &str, text: &str, cwd: Option<&str>) -> Value {
    let props = properties(schema);
    let mut args = Map::new();
    let path_key = ["file_path", "filePath", "path", "absolute_path"]
        .into_iter()
        .find(|k| props.contains_key(*k))
        .unwrap_or("file_path");
    args.insert(path_key.into(), json!(absolute(path, cwd)));
    let content_key = ["content", "contents", "text"]
        .into_iter()
        .find(|k| props.contains_key(*k))
        .unwrap_or("content");
    args.insert(content_key.into(), json!(format!("{text}\n")));
    fill_required(schema, &mut args, path, cwd);
    Value::Object(args)
}

fn shell_args(schema: &Value, path: &str, text: &str, cwd: Option<&str>) -> Value {
    let props = properties(schema);
    let command = format!("echo {text} > {path}");
    let mut args = Map::new();
    let key = ["command", "cmd"]
        .into_iter()
        .find(|k| props.contains_key(*k))
        .unwrap_or("command");
    let is_array = props
        .get(key)
        .and_then(|p| p.get("type"))
        .and_then(Value::as_str)
        == Some("array");
    let value = if is_array {
        json!(["bash", "-lc", command])
    } else {
        json!(command)
    };
    args.insert(key.into(), value);
    if props.contains_key("description") {
        args.insert("description".into(), json!(format!("Create {path}")));
    }
    fill_required(schema, &mut args, path, cwd);
    Value::Object(args)
}

/// Gives every required property the schema names a plausible value, so a
/// strict client-side validator accepts the call.
fn fill_required(schema: &Value, args: &mut Map<String, Value>, path: &str, cwd: Option<&str>) {
    let props = properties(schema);
    for name in required(schema) {
        if args.contains_key(&name) {
            continue;
        }
        let prop = props.get(&name).cloned().unwrap_or(Value::Null);
        let value = match name.as_str() {
            "description" => json!(format!("Create {path}")),
            "workdir" | "directory" | "dir" | "cwd" => json!(cwd.unwrap_or(".")),
            n if n.contains("timeout") => json!(60000),
            _ => instance_of(&prop, 1),
        };
        args.insert(name, value);
    }
}

/// A small value that satisfies `schema` (types, enums, required properties);
/// depth-limited so a recursive schema cannot recurse forever.
pub fn instance_of(schema: &Value, depth: usize) -> Value {
    if depth > 8 {
        return Value::Null;
    }
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    if let Some(c) = schema.get("const") {
        return c.clone();
    }
    let ty = match schema.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ if schema.get("properties").is_some() => "object",
        _ => "string",
    };
    match ty {
        "object" => {
            let props = properties(schema);
            let mut out = Map::new();
            for (name, prop) in &props {
                out.insert(name.clone(), instance_of(prop, depth + 1));
            }
            for name in required(schema) {
                out.entry(name).or_insert_with(|| json!("scripted"));
            }
            Value::Object(out)
        }
        "array" => json!([]),
        "integer" | "number" => json!(0),
        "boolean" => json!(false),
        "null" => Value::Null,
        _ => json!("Scripted"),
    }
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
