//! The scripted agent's script (pure): the actions it plays, decoded
//! strictly from JSON or TOML.

use crate::model::ErrorClass;
use serde::{Deserialize, Serialize};

/// One action of a script, run in order by the scripted agent.
///
/// JSON / TOML form: a one-key object, `{"text": "…"}`, `{"reasoning": "…"}`,
/// `{"tool_call": {"name", "input"}}`, `{"tool_result": {"ok", "output"}}`,
/// `{"write": {"path", "content"}}`, `{"delete": {"path"}}`, `{"sleep_ms":
/// N}`, `{"usage": {"input", "output"}}`, `{"fail": {"message", "class"?}}`,
/// `{"hang": true}`. Unknown actions and unknown fields are refused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum ScriptAction {
    /// Streams text (the final text is the concatenated `text` actions).
    Text(String),
    /// Streams reasoning text.
    Reasoning(String),
    /// Reports a tool call (nothing is run).
    ToolCall {
        /// The tool's name.
        name: String,
        /// Its input.
        #[serde(default)]
        input: serde_json::Value,
    },
    /// Reports the result of the last tool call.
    ToolResult {
        /// Whether it succeeded.
        #[serde(default = "yes")]
        ok: bool,
        /// Its output.
        #[serde(default)]
        output: String,
    },
    /// Writes a file under the work dir (refused, as a failed tool result,
    /// in a read-only turn).
    Write {
        /// Relative to the work dir, confined to it.
        path: String,
        /// The bytes to write (UTF-8).
        content: String,
    },
    /// Deletes a file under the work dir (refused in a read-only turn).
    Delete {
        /// Relative to the work dir, confined to it.
        path: String,
    },
    /// Waits this many milliseconds (counts toward the idle timeout).
    SleepMs(u64),
    /// Reports token usage.
    Usage {
        /// Uncached input tokens.
        #[serde(default)]
        input: u64,
        /// Output tokens.
        #[serde(default)]
        output: u64,
    },
    /// Ends the turn with a provider error.
    Fail {
        /// The error message.
        message: String,
        /// Its class (default: classified from the message).
        #[serde(default)]
        class: Option<ErrorClass>,
    },
    /// Never returns: for timeout, idle and cancel tests. `{"hang": false}`
    /// does nothing.
    Hang(bool),
}

fn yes() -> bool {
    true
}

/// A script: the actions of one turn.
pub type Script = Vec<ScriptAction>;

/// Decodes a script from a JSON array, with the JSON path of a bad action
/// (`[2].write.path`) in the `invalid_input` error.
pub fn decode_script(value: serde_json::Value) -> Result<Script, crate::Error> {
    crate::json::decode(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_action_decodes_and_bad_ones_name_their_path() {
        let script = decode_script(json!([
            {"text": "hi"}, {"reasoning": "hmm"}, {"tool_call": {"name": "Bash", "input": {"command": "ls"}}},
            {"tool_result": {"output": "a"}}, {"write": {"path": "a.txt", "content": "x"}},
            {"delete": {"path": "a.txt"}}, {"sleep_ms": 5}, {"usage": {"input": 3, "output": 4}},
            {"fail": {"message": "rate limit", "class": "retry"}}, {"hang": true}
        ]))
        .unwrap();
        assert_eq!(script.len(), 10);
        assert_eq!(
            script[3],
            ScriptAction::ToolResult {
                ok: true,
                output: "a".into()
            }
        );
        for (bad, path) in [
            (json!([{"text": "a"}, {"write": {"path": "a"}}]), "[1]"),
            (json!([{"sing": "la"}]), "[0]"),
            (
                json!([{"write": {"path": "a", "content": "b", "mode": 1}}]),
                "[0]",
            ),
            (json!({"text": "a"}), ""),
        ] {
            let err = decode_script(bad.clone()).unwrap_err();
            assert_eq!(err.kind(), crate::ErrorKind::InvalidInput, "{bad}");
            assert!(err.message().contains(path), "{bad}: {}", err.message());
        }
    }
}
