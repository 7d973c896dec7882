//! What a reply says ([`Answer`], from [`Reply`] or a script [`Step`]) and how
//! the quirk flags shape it on every wire ([`plan`]): calls written in the
//! text, ids dropped, arguments broken or cut, pieces for streaming. Pure.

use serde_json::{json, Value};

use crate::decide::{Flags, Reply, ToolArgs};
use crate::script::Step;

/// Prompt tokens every reply reports (of which 50 cached under `usage_cached`).
pub const PROMPT_TOKENS: u64 = 200;
/// Completion tokens every reply reports.
pub const COMPLETION_TOKENS: u64 = 20;
/// Cached prompt tokens reported under `usage_cached`.
pub const CACHED_TOKENS: u64 = 50;
/// The reasoning text streamed under the `reasoning`/`reasoning_content` flags.
pub const REASONING_TEXT: &str = "Thinking about the request.";

/// Token counts one reply reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    /// Prompt tokens (cached ones included).
    pub prompt: u64,
    /// Completion tokens.
    pub completion: u64,
    /// Prompt tokens reported as served from cache.
    pub cached: u64,
}

impl Usage {
    /// The fixed usage of an unscripted reply: 200 prompt (50 cached under
    /// `usage_cached`), 20 completion.
    pub fn fixed(flags: &Flags) -> Usage {
        Usage {
            prompt: PROMPT_TOKENS,
            completion: COMPLETION_TOKENS,
            cached: if flags.usage_cached { CACHED_TOKENS } else { 0 },
        }
    }

    /// A scripted reply's usage: the prompt estimate and ⌈reply bytes / 4⌉
    /// (at least 1); under `usage_cached` up to 50 of the prompt are cached.
    pub fn estimated(prompt: u64, answer: &Answer, flags: &Flags) -> Usage {
        Usage {
            prompt,
            completion: tokens(answer.bytes()).max(1),
            cached: if flags.usage_cached {
                CACHED_TOKENS.min(prompt)
            } else {
                0
            },
        }
    }
}

/// The token estimate of `bytes` bytes: ⌈bytes / 4⌉.
pub fn tokens(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(4)
}

/// The arguments of one call.
#[derive(Debug, Clone, PartialEq)]
pub enum Args {
    /// A JSON value, sent as its JSON text.
    Json(Value),
    /// Sent exactly as this text (a script's string `arguments`).
    Raw(String),
    /// A freeform tool's input (Responses `custom_tool_call`; elsewhere `{"input": …}`).
    Freeform(String),
}

/// One call of an answer.
#[derive(Debug, Clone, PartialEq)]
pub struct AnswerCall {
    /// The tool's name.
    pub name: String,
    /// Its arguments.
    pub args: Args,
}

/// What the model answers, before any wire or quirk.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// Reasoning before the text, if any.
    pub reasoning: Option<String>,
    /// The text (before the calls when there are calls); may be empty.
    pub text: String,
    /// The calls (several = parallel).
    pub calls: Vec<AnswerCall>,
    /// The usage to report.
    pub usage: Usage,
}

impl Answer {
    /// The answer of the unscripted decision, reasoning added under the
    /// `reasoning`/`reasoning_content` flags, fixed usage.
    pub fn from_reply(reply: &Reply, flags: &Flags) -> Answer {
        let (text, calls) = match reply {
            Reply::Text(t) => (t.clone(), vec![]),
            Reply::ToolCall { name, args } => (
                String::new(),
                vec![AnswerCall {
                    name: name.clone(),
                    args: match args {
                        ToolArgs::Json(v) => Args::Json(v.clone()),
                        ToolArgs::Freeform(s) => Args::Freeform(s.clone()),
                    },
                }],
            ),
        };
        Answer {
            reasoning: flag_reasoning(flags),
            text,
            calls,
            usage: Usage::fixed(flags),
        }
    }

    /// The answer of a script step (`think`, or the flags' reasoning; `say`;
    /// `calls`), its usage estimated from `prompt_tokens`.
    pub fn from_step(step: &Step, flags: &Flags, prompt_tokens: u64) -> Answer {
        let mut answer = Answer {
            reasoning: step.think.clone().or_else(|| flag_reasoning(flags)),
            text: step.say.clone().unwrap_or_default(),
            calls: step
                .calls
                .iter()
                .map(|c| AnswerCall {
                    name: c.name.clone(),
                    args: match &c.arguments {
                        Value::String(raw) => Args::Raw(raw.clone()),
                        v => Args::Json(v.clone()),
                    },
                })
                .collect(),
            usage: Usage::fixed(flags),
        };
        answer.usage = Usage::estimated(prompt_tokens, &answer, flags);
        answer
    }

    /// The bytes of reasoning, text, and every call's name and arguments.
    pub fn bytes(&self) -> usize {
        self.reasoning.as_deref().map_or(0, str::len)
            + self.text.len()
            + self
                .calls
                .iter()
                .map(|c| c.name.len() + args_text(&c.args, false).len())
                .sum::<usize>()
    }
}

fn flag_reasoning(flags: &Flags) -> Option<String> {
    (flags.reasoning || flags.reasoning_content).then(|| REASONING_TEXT.to_string())
}

/// The arguments as the wire's text; a freeform input is wrapped as
/// `{"input": …}` unless the wire has freeform calls of its own.
fn args_text(args: &Args, freeform_native: bool) -> String {
    match args {
        Args::Json(v) => v.to_string(),
        Args::Raw(s) => s.clone(),
        Args::Freeform(s) if freeform_native => s.clone(),
        Args::Freeform(s) => json!({ "input": s }).to_string(),
    }
}

/// Why the reply ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    /// A final reply (also: calls written in the text).
    Stop,
    /// Structured calls to run.
    ToolCalls,
    /// Cut by the output limit (`length_cut`).
    Length,
}

/// One structured call as the wire sends it.
#[derive(Debug, Clone, PartialEq)]
pub struct WireCall {
    /// The tool's name.
    pub name: String,
    /// Its id; `None` under `no_ids`.
    pub id: Option<String>,
    /// The index it is streamed under (0 for all under `index_reuse`, where the wire honours it).
    pub index: usize,
    /// The arguments text, quirks applied (`bad_json`, `length_cut`).
    pub arguments: String,
    /// The pieces the arguments are streamed in (concatenated = `arguments`).
    pub pieces: Vec<String>,
    /// A freeform call (only on a wire with `freeform_native`).
    pub freeform: bool,
    /// This call was cut by `length_cut`.
    pub cut: bool,
}

/// The answer as every wire sends it, quirks applied.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Reasoning, if any.
    pub reasoning: Option<String>,
    /// The text, including calls written in it (`xml_calls`, `hermes_calls`).
    pub text: String,
    /// The pieces the text is streamed in (concatenated = `text`).
    pub text_pieces: Vec<String>,
    /// The structured calls.
    pub calls: Vec<WireCall>,
    /// Why the reply ended.
    pub finish: Finish,
    /// The usage to report.
    pub usage: Usage,
}

/// How a wire spells calls.
#[derive(Debug, Clone, Copy)]
pub struct Wire {
    /// The prefix of call ids, numbered `{prefix}{n}` (then `{prefix}{n}_{i}`).
    pub id_prefix: &'static str,
    /// The wire has freeform calls (Responses `custom_tool_call`).
    pub freeform_native: bool,
    /// The wire honours `index_reuse` (Chat only).
    pub index_reuse: bool,
}

/// Applies the flags to `answer` for `wire`, reply number `n`.
pub fn plan(answer: &Answer, flags: &Flags, wire: Wire, n: u64) -> Plan {
    let mut text = answer.text.clone();
    let mut calls = Vec::new();
    let mut finish = Finish::Stop;
    let text_calls = flags.xml_calls || flags.hermes_calls;
    if text_calls && !answer.calls.is_empty() {
        let mut written: Vec<String> = answer
            .calls
            .iter()
            .map(|c| {
                if flags.xml_calls {
                    xml_call(c)
                } else {
                    let mut args = args_text(&c.args, false);
                    if flags.bad_json && !matches!(c.args, Args::Raw(_)) {
                        args = break_json(&args);
                    }
                    format!(
                        "<tool_call>\n{{\"name\": {}, \"arguments\": {}}}\n</tool_call>",
                        json!(c.name),
                        args
                    )
                }
            })
            .collect();
        if flags.length_cut {
            if let Some(last) = written.last_mut() {
                *last = cut_half(last).to_string();
            }
            finish = Finish::Length;
        }
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(&written.join("\n"));
    } else {
        let count = answer.calls.len();
        for (i, c) in answer.calls.iter().enumerate() {
            let freeform = wire.freeform_native && matches!(c.args, Args::Freeform(_));
            let mut arguments = args_text(&c.args, wire.freeform_native);
            if flags.bad_json && !freeform && !matches!(c.args, Args::Raw(_)) {
                arguments = break_json(&arguments);
            }
            let cut = flags.length_cut && i + 1 == count;
            if cut {
                arguments = cut_half(&arguments).to_string();
            }
            let pieces = if flags.split_args {
                small_pieces(&arguments)
            } else {
                let (a, b) = split_at_half(&arguments);
                vec![a.to_string(), b.to_string()]
            };
            calls.push(WireCall {
                name: c.name.clone(),
                id: (!flags.no_ids).then(|| call_id(wire.id_prefix, n, i)),
                index: if wire.index_reuse && flags.index_reuse {
                    0
                } else {
                    i
                },
                arguments,
                pieces,
                freeform,
                cut,
            });
        }
        if !calls.is_empty() {
            finish = if flags.length_cut {
                Finish::Length
            } else {
                Finish::ToolCalls
            };
        } else if flags.length_cut {
            text = cut_half(&text).to_string();
            finish = Finish::Length;
        }
    }
    let text_pieces = if flags.split_args && text_calls {
        small_pieces(&text)
    } else {
        crate::sse::pieces(&text)
    };
    Plan {
        reasoning: answer.reasoning.clone(),
        text,
        text_pieces,
        calls,
        finish,
        usage: answer.usage,
    }
}

/// The id of call `i` of reply `n`: `{prefix}{n}`, then `{prefix}{n}_{i}`.
pub fn call_id(prefix: &str, n: u64, i: usize) -> String {
    if i == 0 {
        format!("{prefix}{n}")
    } else {
        format!("{prefix}{n}_{i}")
    }
}

/// A call in Qwen3-Coder XML: a parameter per key of the arguments object,
/// strings as is and other values as their JSON text. Arguments that are
/// not an object (raw text that does not parse as one) go in the function
/// body as they are.
pub fn xml_call(call: &AnswerCall) -> String {
    let args = match &call.args {
        Args::Json(v) => Some(v.clone()),
        Args::Raw(s) => serde_json::from_str(s).ok(),
        Args::Freeform(s) => Some(json!({ "input": s })),
    };
    let mut out = format!("<tool_call>\n<function={}>\n", call.name);
    match (args, &call.args) {
        (Some(Value::Object(map)), _) => {
            for (key, value) in map {
                let value = match value {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                out.push_str(&format!("<parameter={key}>\n{value}\n</parameter>\n"));
            }
        }
        (_, Args::Raw(s)) => out.push_str(&format!("{s}\n")),
        (Some(other), _) => out.push_str(&format!("{other}\n")),
        (None, _) => {}
    }
    out.push_str("</function>\n</tool_call>");
    out
}

/// Breaks a JSON object text the way a sloppy model does: a trailing comma
/// and no closing brace (`{"a":1}` → `{"a":1,`). Text that is not an object
/// with members is left alone.
pub fn break_json(text: &str) -> String {
    match text.strip_suffix('}') {
        Some(body) if text.starts_with('{') && body.len() > 1 => format!("{body},"),
        _ => text.to_string(),
    }
}

fn split_at_half(s: &str) -> (&str, &str) {
    let mut mid = s.len() / 2;
    while !s.is_char_boundary(mid) {
        mid -= 1;
    }
    s.split_at(mid)
}

/// The first half of `s` (on a char boundary): where `length_cut` stops.
pub fn cut_half(s: &str) -> &str {
    split_at_half(s).0
}

/// `s` in pieces of 3–7 bytes (cycling 3, 5, 7, 4, 6; a piece grows to the
/// next char boundary), so pieces end inside strings and escapes.
pub fn small_pieces(s: &str) -> Vec<String> {
    const SIZES: [usize; 5] = [3, 5, 7, 4, 6];
    let mut out = Vec::new();
    let mut at = 0;
    let mut k = 0;
    while at < s.len() {
        let mut end = (at + SIZES[k % SIZES.len()]).min(s.len());
        while !s.is_char_boundary(end) {
            end += 1;
        }
        out.push(s[at..end].to_string());
        at = end;
        k += 1;
    }
    if out.is_empty() {
        out.push(String::new());
    }
    out
}

/// The bytes the prompt estimate counts: each text in `texts` plus the
/// compact JSON text of each tool definition.
pub fn prompt_bytes<'a>(texts: impl IntoIterator<Item = &'a str>, tools: Option<&Value>) -> usize {
    let text: usize = texts.into_iter().map(str::len).sum();
    let tools: usize = tools
        .and_then(Value::as_array)
        .map(|t| t.iter().map(|t| t.to_string().len()).sum())
        .unwrap_or(0);
    text + tools
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, args: Args) -> AnswerCall {
        AnswerCall {
            name: name.into(),
            args,
        }
    }

    fn answer(text: &str, calls: Vec<AnswerCall>) -> Answer {
        Answer {
            reasoning: None,
            text: text.into(),
            calls,
            usage: Usage::fixed(&Flags::default()),
        }
    }

    const CHAT: Wire = Wire {
        id_prefix: "call_",
        freeform_native: false,
        index_reuse: true,
    };

    #[test]
    fn helpers_table() {
        assert_eq!(break_json(r#"{"a":1,"b":"x"}"#), r#"{"a":1,"b":"x","#);
        assert_eq!(break_json("{}"), "{}");
        assert_eq!(break_json("[1]"), "[1]");
        assert_eq!(cut_half("abcdef"), "abc");
        assert_eq!(cut_half("aé"), "a");
        let s = r#"{"content":"a \"quoted\"\nline é ü","n":1}"#;
        let p = small_pieces(s);
        assert_eq!(p.concat(), s);
        assert!(p
            .iter()
            .all(|x| (3..=8).contains(&x.len()) || x == p.last().unwrap()));
        assert!(p.iter().any(|x| x.ends_with('\\')), "{p:?}");
        assert_eq!(small_pieces(""), [""]);
        assert_eq!(tokens(0), 0);
        assert_eq!(tokens(1), 1);
        assert_eq!(tokens(8), 2);
        assert_eq!(tokens(9), 3);
        assert_eq!(
            prompt_bytes(["ab", "cde"], Some(&json!([{"a": 1}]))),
            5 + r#"{"a":1}"#.len()
        );
    }

    #[test]
    fn xml_call_shape() {
        let c = call(
            "edit_file",
            Args::Json(json!({"path": "a.py", "n": 2, "o": {"k": true}})),
        );
        assert_eq!(
            xml_call(&c),
            "<tool_call>\n<function=edit_file>\n<parameter=n>\n2\n</parameter>\n<parameter=o>\n{\"k\":true}\n</parameter>\n<parameter=path>\na.py\n</parameter>\n</function>\n</tool_call>"
        );
        let raw = call("x", Args::Raw("not json".into()));
        assert_eq!(
            xml_call(&raw),
            "<tool_call>\n<function=x>\nnot json\n</function>\n</tool_call>"
        );
    }

    #[test]
    fn plan_flags_table() {
        let a = answer(
            "Fixing.",
            vec![
                call("read_file", Args::Json(json!({"path": "a"}))),
                call("run", Args::Json(json!({"command": "ls"}))),
            ],
        );
        let p = plan(&a, &Flags::default(), CHAT, 4);
        assert_eq!(p.finish, Finish::ToolCalls);
        assert_eq!(p.text, "Fixing.");
        let ids: Vec<_> = p.calls.iter().map(|c| c.id.clone().unwrap()).collect();
        assert_eq!(ids, ["call_4", "call_4_1"]);
        assert_eq!(p.calls[1].index, 1);
        assert_eq!(p.calls[1].pieces.concat(), r#"{"command":"ls"}"#);

        let f = Flags::parse("m+no_ids+index_reuse+bad_json+length_cut").1;
        let p = plan(&a, &f, CHAT, 4);
        assert_eq!(p.finish, Finish::Length);
        assert!(p.calls.iter().all(|c| c.id.is_none() && c.index == 0));
        assert_eq!(p.calls[0].arguments, r#"{"path":"a","#);
        assert!(!p.calls[0].cut && p.calls[1].cut);
        assert_eq!(p.calls[1].arguments, cut_half(r#"{"command":"ls","#));

        let f = Flags::parse("m+hermes_calls").1;
        let p = plan(&a, &f, CHAT, 4);
        assert!(p.calls.is_empty());
        assert_eq!(p.finish, Finish::Stop);
        assert_eq!(
            p.text,
            "Fixing.\n\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\":\"a\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"run\", \"arguments\": {\"command\":\"ls\"}}\n</tool_call>"
        );
        assert_eq!(p.text_pieces.concat(), p.text);

        let f = Flags::parse("m+xml_calls+length_cut+split_args").1;
        let p = plan(&a, &f, CHAT, 4);
        assert_eq!(p.finish, Finish::Length);
        assert!(p.text.contains("<function=read_file>"));
        assert!(!p.text.ends_with("</tool_call>"));
        assert!(p.text_pieces.len() > 20);

        let text_only = answer("one two three four", vec![]);
        let p = plan(&text_only, &Flags::parse("m+length_cut").1, CHAT, 1);
        assert_eq!((p.text.as_str(), p.finish), ("one two t", Finish::Length));

        let raw = answer("", vec![call("x", Args::Raw("{'a': 1".into()))]);
        let p = plan(&raw, &Flags::parse("m+bad_json").1, CHAT, 1);
        assert_eq!(p.calls[0].arguments, "{'a': 1", "raw text is sent as is");

        let free = answer("", vec![call("apply_patch", Args::Freeform("P".into()))]);
        let responses = Wire {
            id_prefix: "call_",
            freeform_native: true,
            index_reuse: false,
        };
        let p = plan(&free, &Flags::parse("m+index_reuse").1, responses, 1);
        assert!(p.calls[0].freeform);
        assert_eq!(p.calls[0].arguments, "P");
        let p = plan(&free, &Flags::default(), CHAT, 1);
        assert_eq!(p.calls[0].arguments, r#"{"input":"P"}"#);
    }
}
