//! Scripts: multi-step tool conversations, played statelessly.
//!
//! A [`Script`] is a list of [`Step`]s. The request alone still decides the
//! reply: each protocol module extracts the conversation's earlier assistant
//! replies as [`PriorReply`]s, and [`next_reply`] walks them through the
//! script (see its rule). No server state, no clock.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A scripted conversation, as `--script NAME=FILE.json` reads it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// The replies, in order.
    pub steps: Vec<Step>,
}

/// One reply of the scripted model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// Reasoning streamed before the text (Chat `reasoning_content`, or
    /// `reasoning` under that flag; Anthropic thinking; Responses reasoning item).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub think: Option<String>,
    /// Text before the calls, or the final text when there are none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub say: Option<String>,
    /// The calls of this reply (several = parallel calls); none = a final reply.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<Call>,
    /// Branches taken on the results of this step's calls (first match wins).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub on: Vec<Branch>,
}

/// One tool call of a step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Call {
    /// The tool's name (not checked against the request's tools).
    pub name: String,
    /// The arguments: a JSON value sent as its JSON text, or a JSON *string*
    /// sent as that raw text (broken JSON by hand). Default `{}`.
    #[serde(default = "empty_object")]
    pub arguments: Value,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

/// A branch: when the results of the step's calls contain `contains`, the
/// `then` steps come next, before the rest of the script.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Branch {
    /// Substring searched in the concatenated tool-result text.
    pub contains: String,
    /// Steps pushed to the front of the queue.
    pub then: Vec<Step>,
}

/// What the conversation says about one earlier assistant reply.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PriorReply {
    /// The reply carried calls (structured, or written in its text as `<tool_call>`).
    pub had_calls: bool,
    /// The concatenated text of what answered it: its tool results (and any
    /// user text before the next assistant reply, which is how clients carry
    /// the results of calls written in the text), joined by newlines.
    pub results: String,
}

impl Script {
    /// Parses a script from its JSON text (unknown fields are errors).
    pub fn from_json(text: &str) -> Result<Script, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// A script of these steps.
    pub fn new(steps: Vec<Step>) -> Script {
        Script { steps }
    }
}

impl Step {
    /// A final text reply.
    pub fn say(text: &str) -> Step {
        Step {
            say: Some(text.to_string()),
            ..Step::default()
        }
    }

    /// A reply of these calls, `(name, arguments)`.
    pub fn calls(calls: &[(&str, Value)]) -> Step {
        Step {
            calls: calls
                .iter()
                .map(|(name, arguments)| Call {
                    name: name.to_string(),
                    arguments: arguments.clone(),
                })
                .collect(),
            ..Step::default()
        }
    }
}

/// The first line of the digest coderig's native agent puts in place of
/// the steps it summarized to fit a context window.
pub const DIGEST_MARKER: &str = "[Earlier steps, summarized by coderig";

/// The replies a client summarized away, read back from coderig's digest
/// (any string in the request that starts with [`DIGEST_MARKER`]): a
/// `- name(args) → answer` line is one reply with calls whose results are
/// the answer, `- said: …` one reply without calls, `- ... N earlier calls
/// omitted` N replies with calls and no results. So a script keeps its
/// place when the agent under test summarizes, as long as its summarized
/// steps made one call each (a reply of two calls reads back as two).
pub fn digested_replies(body: &Value) -> Vec<PriorReply> {
    fn find(v: &Value) -> Option<&str> {
        match v {
            Value::String(s) if s.trim_start().starts_with(DIGEST_MARKER) => Some(s),
            Value::Array(a) => a.iter().find_map(find),
            Value::Object(o) => o.values().find_map(find),
            _ => None,
        }
    }
    let Some(text) = find(body) else {
        return vec![];
    };
    let mut out = vec![];
    for line in text.lines().skip(1) {
        let Some(rest) = line.strip_prefix("- ") else {
            continue;
        };
        if let Some(n) = rest
            .strip_prefix("... ")
            .and_then(|r| r.split_whitespace().next())
            .and_then(|n| n.parse::<usize>().ok())
        {
            out.extend((0..n).map(|_| PriorReply {
                had_calls: true,
                results: String::new(),
            }));
        } else if rest.starts_with("said: ") {
            out.push(PriorReply::default());
        } else {
            let results = rest.split_once(" → ").map(|(_, r)| r).unwrap_or_default();
            out.push(PriorReply {
                had_calls: true,
                results: results.to_string(),
            });
        }
    }
    out
}

/// The step to play after `replies` (the conversation's earlier assistant
/// replies, in order).
///
/// Rule: a queue starts as the script's steps; each prior reply consumes the
/// queue's front step, and when that step has `on` branches and the reply's
/// results contain a branch's `contains` (first match wins), the branch's
/// `then` steps are pushed to the front of the queue. The answer is the
/// queue's front step; an empty queue answers the final text `done`.
pub fn next_reply(script: &Script, replies: &[PriorReply]) -> Step {
    let mut queue: std::collections::VecDeque<&Step> = script.steps.iter().collect();
    for reply in replies {
        let Some(step) = queue.pop_front() else {
            break;
        };
        if let Some(branch) = step
            .on
            .iter()
            .find(|b| reply.results.contains(b.contains.as_str()))
        {
            for s in branch.then.iter().rev() {
                queue.push_front(s);
            }
        }
    }
    queue
        .pop_front()
        .cloned()
        .unwrap_or_else(|| Step::say("done"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn prior(results: &str) -> PriorReply {
        PriorReply {
            had_calls: true,
            results: results.to_string(),
        }
    }

    fn script() -> Script {
        Script::from_json(
            r#"{"steps": [
              {"think": "look first", "say": "Listing.", "calls": [{"name": "list_files"}]},
              {"calls": [{"name": "edit_file", "arguments": {"path": "a.py", "old": "x", "new": "y"}}],
               "on": [{"contains": "AMBIGUOUS", "then": [
                        {"calls": [{"name": "edit_file", "arguments": {"path": "a.py", "old": "x = 1", "new": "y"}}],
                         "on": [{"contains": "AMBIGUOUS", "then": [{"say": "giving up"}]}]}]},
                      {"contains": "NOT FOUND", "then": [{"calls": [{"name": "read_file", "arguments": "{\"path\": "}]}]}]},
              {"calls": [{"name": "run", "arguments": {"command": "pytest"}}, {"name": "run", "arguments": {"command": "ruff"}}]},
              {"say": "All tests pass."}
            ]}"#,
        )
        .unwrap()
    }

    fn label(step: &Step) -> String {
        if step.calls.is_empty() {
            return format!("say:{}", step.say.as_deref().unwrap_or(""));
        }
        step.calls
            .iter()
            .map(|c| match &c.arguments {
                Value::String(raw) => format!("{}<raw {raw}>", c.name),
                Value::Object(o) if o.is_empty() => c.name.clone(),
                other => format!("{}{}", c.name, other),
            })
            .collect::<Vec<_>>()
            .join("|")
    }

    #[test]
    fn next_reply_table() {
        let s = script();
        let edit = r#"edit_file{"new":"y","old":"x","path":"a.py"}"#;
        let retry = r#"edit_file{"new":"y","old":"x = 1","path":"a.py"}"#;
        let tests = r#"run{"command":"pytest"}|run{"command":"ruff"}"#;
        let cases: &[(&[&str], &str)] = &[
            (&[], "list_files"),
            (&["a.py"], edit),
            (&["a.py", "edited"], tests),
            (&["a.py", "edited", "ok\nok"], "say:All tests pass."),
            (&["a.py", "edited", "ok", ""], "say:done"),
            (&["a.py", "edited", "ok", "", "", ""], "say:done"),
            // A branch: the retry comes next, then the script goes on.
            (&["a.py", "error AMBIGUOUS: 2 matches"], retry),
            (&["a.py", "AMBIGUOUS", "edited"], tests),
            // The retry's own branch.
            (&["a.py", "AMBIGUOUS", "AMBIGUOUS again"], "say:giving up"),
            (&["a.py", "AMBIGUOUS", "AMBIGUOUS", "x"], tests),
            // Second branch; a raw-string argument stays raw.
            (&["a.py", "NOT FOUND"], r#"read_file<raw {"path": >"#),
            // First match wins when both appear.
            (&["a.py", "AMBIGUOUS NOT FOUND"], retry),
            // A branch of a step that is not the consumed one does not fire.
            (&["AMBIGUOUS"], edit),
        ];
        for (results, want) in cases {
            let replies: Vec<PriorReply> = results.iter().map(|r| prior(r)).collect();
            assert_eq!(label(&next_reply(&s, &replies)), *want, "{results:?}");
        }
        assert_eq!(
            label(&next_reply(&Script::default(), &[])),
            "say:done",
            "an empty script answers done"
        );
        let first = next_reply(&s, &[]);
        assert_eq!(first.think.as_deref(), Some("look first"));
        assert_eq!(first.say.as_deref(), Some("Listing."));
        assert_eq!(first.calls[0].arguments, json!({}));
    }

    #[test]
    fn a_digest_reads_back_as_the_replies_it_replaced() {
        let digest = format!(
            "{DIGEST_MARKER} to fit the context window]\n- ... 2 earlier calls omitted\n- read_file(path=a.py) → 1|x\n- said: thinking\n- edit_file(path=a.py) → AMBIGUOUS: 2 places\n"
        );
        for body in [
            json!({"messages": [{"role": "user", "content": "task"}, {"role": "user", "content": digest}]}),
            json!({"messages": [{"role": "user", "content": [{"type": "text", "text": "task"}, {"type": "text", "text": digest}]}]}),
        ] {
            let got = digested_replies(&body);
            let want: Vec<(bool, &str)> = vec![
                (true, ""),
                (true, ""),
                (true, "1|x"),
                (false, ""),
                (true, "AMBIGUOUS: 2 places"),
            ];
            assert_eq!(
                got.iter()
                    .map(|r| (r.had_calls, r.results.as_str()))
                    .collect::<Vec<_>>(),
                want
            );
        }
        assert!(
            digested_replies(&json!({"messages": [{"role": "user", "content": "- a → b"}]}))
                .is_empty()
        );
    }

    #[test]
    fn unknown_fields_are_refused() {
        for bad in [
            r#"{"steps": [], "extra": 1}"#,
            r#"{"steps": [{"sya": "typo"}]}"#,
            r#"{"steps": [{"calls": [{"name": "x", "args": {}}]}]}"#,
            r#"{"steps": [{"on": [{"contains": "x", "then": [], "else": []}]}]}"#,
            r#"{"step": []}"#,
        ] {
            assert!(Script::from_json(bad).is_err(), "{bad}");
        }
        let s = Script::new(vec![
            Step::calls(&[("a", json!({"k": 1}))]),
            Step::say("ok"),
        ]);
        let back = Script::from_json(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back, s);
    }
}
