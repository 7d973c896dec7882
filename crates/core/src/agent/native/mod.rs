//! The native coding agent (`kind = "native"`): coderig's own tool loop on
//! any model server, with coderig's edit engine as its hands.
//!
//! A room per decision, all pure but the last two:
//! - [`wire`]: the three wire APIs (Chat Completions, Anthropic Messages,
//!   OpenAI Responses) — request bodies from one [`Request`], streamed
//!   frames to [`Piece`]s, and the context-window probes' answers.
//! - [`calls`]: reading tool calls from imperfect servers — fragments by
//!   index, minted ids, repaired JSON, values coerced to the schema, calls
//!   written in the text, cut calls never run.
//! - [`context`]: what the model sees of the transcript (old tool outputs
//!   elided, a digest near the window's end, never a request too long).
//! - [`control`]: the loop's hard limits, the doom-loop and format-error
//!   rules, and why the turn stopped.
//! - [`prompt`]: coderig's system prompt and the per-model overrides.
//! - [`config`]: the `kind = "native"` table of `coderig.toml`.
//! - `tools` (feature `runtime`): the tools — `read_file`, `list_files`,
//!   `grep`, `edit_file`, `write_file`, `edit_lines`, `run`, `finish` —
//!   every path confined to the workdir, `run` under the sandbox.
//! - `agent` (feature `http`): the loop itself, which only moves data
//!   between the server, these decisions and the tools; `transport` its
//!   HTTP half (requests, streamed replies, window probes); `transcript`
//!   its records on disk.

pub mod calls;
pub mod config;
pub mod context;
pub mod control;
pub mod prompt;
pub mod wire;

#[cfg(feature = "runtime")]
pub mod tools;

#[cfg(feature = "http")]
mod agent;
#[cfg(feature = "http")]
mod transcript;
#[cfg(feature = "http")]
mod transport;
#[cfg(feature = "http")]
pub use agent::NativeAgent;

pub use config::NativeConfig;

use crate::agent::Usage;
use crate::names::macros::named_enum;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The wire API a native agent speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Api {
    /// OpenAI Chat Completions, `POST {base_url}/chat/completions` (what
    /// llama.cpp, vLLM, Ollama, LM Studio and llama-swap serve).
    #[default]
    Chat,
    /// Anthropic Messages, `POST {base_url}/messages`.
    Anthropic,
    /// OpenAI Responses, `POST {base_url}/responses`.
    Responses,
}
named_enum!(Api, "native api", {
    Chat => "chat" | "chat_completions",
    Anthropic => "anthropic" | "messages",
    Responses => "responses",
});

/// Which tools the agent offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ToolsMode {
    /// coderig's tools: read, list, grep, edit, write, (edit_lines), run,
    /// finish.
    #[default]
    Coderig,
    /// Only `run` and `finish`: the mini-swe-agent baseline the tools are
    /// measured against.
    Bash,
}
named_enum!(ToolsMode, "native tools", {
    Coderig => "coderig",
    Bash => "bash",
});

/// One tool as offered to the model: a flat JSON-schema object of
/// snake_case arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The tool's name (`read_file`, ...).
    pub name: String,
    /// What it does and what it answers, for the model (short).
    pub description: String,
    /// The JSON schema of its arguments: `{"type": "object", "properties":
    /// {...}, "required": [...], "additionalProperties": false}`.
    pub parameters: Value,
}

/// A complete tool call, ready to run: its arguments are a JSON object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call id (the server's, or minted by [`calls`] when it gave none).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, always a JSON object.
    pub arguments: Value,
}

/// One message of the conversation, independent of the wire API. The
/// system prompt is not a message: it is [`Request::system`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// The user's text (the task, a nudge, a digest of elided turns).
    User {
        /// The text.
        text: String,
    },
    /// A model reply: its text (with any calls written in the text taken
    /// out), its reasoning, and its calls.
    Assistant {
        /// The text.
        text: String,
        /// The reasoning text, where the server streamed one (sent back
        /// only where the API wants it).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        reasoning: String,
        /// The calls, in order.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        calls: Vec<ToolCall>,
    },
    /// The result of one call.
    Tool {
        /// The id of the call it answers.
        call_id: String,
        /// The tool's name (Chat and Responses do not send it; kept for
        /// servers and transcripts that show it).
        name: String,
        /// What the model is told.
        output: String,
        /// Whether the call failed (sent where the API has a flag for it:
        /// Anthropic's `is_error`).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

/// Everything one model request says, independent of the wire API.
#[derive(Debug, Clone, PartialEq)]
pub struct Request<'a> {
    /// The model name as the server spells it.
    pub model: &'a str,
    /// The system prompt.
    pub system: &'a str,
    /// The conversation as the model should see it (already shaped by
    /// [`context`]).
    pub messages: &'a [Message],
    /// The tools offered (none: a request that must answer in text, e.g.
    /// a digest).
    pub tools: &'a [ToolSpec],
    /// The most output tokens this request may generate.
    pub max_output_tokens: Option<u32>,
    /// Sampling options and any other fields added to the body
    /// (`temperature`, `top_p`, ...); they win over the agent's own.
    pub extra: &'a Map<String, Value>,
}

/// Why the server ended a reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FinishReason {
    /// A natural end (`stop`, `end_turn`, `completed`).
    Stop,
    /// The output-token limit (`length`, `max_tokens`,
    /// `max_output_tokens`): a call still open at this point is cut.
    Length,
    /// The reply ends in tool calls (`tool_calls`, `tool_use`).
    ToolCalls,
    /// Anything else, as the server spelled it.
    Other(String),
}

/// A piece of a streamed tool call. The accumulator ([`calls`]) joins the
/// pieces of one call by `index`; a piece that brings a new `id` at an
/// index already in use opens a new call (Ollama's constant index).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CallFragment {
    /// The call's position as the server numbered it (Chat `index`,
    /// Anthropic content-block index, Responses `output_index`); `None`
    /// when the server gave none.
    pub index: Option<u64>,
    /// The call id, on the piece that carries it.
    pub id: Option<String>,
    /// The tool's name, on the piece that carries it.
    pub name: Option<String>,
    /// The next piece of the arguments' JSON text (may be empty).
    pub arguments: String,
}

/// One decoded piece of a streamed reply, whatever the wire API.
#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    /// Assistant text.
    Text(String),
    /// Reasoning text.
    Reasoning(String),
    /// A piece of a tool call.
    Call(CallFragment),
    /// Tokens spent since the previous `Usage` piece of this reply
    /// (increments: the pieces of one reply add up to its usage).
    Usage(Usage),
    /// How the reply ended.
    Finish(FinishReason),
    /// The model the server says it ran.
    Model(String),
    /// The generation time the server measured (llama.cpp
    /// `timings.predicted_ms`).
    GenerationMs(u64),
}

/// How a tool call was read from the reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CallSource {
    /// A structured call whose arguments parsed as they came.
    #[default]
    Structured,
    /// A structured call whose arguments had to be repaired or coerced to
    /// the tool's schema.
    Repaired,
    /// A call written in the reply's text (XML, Hermes, fenced JSON).
    FromText,
}
named_enum!(CallSource, "call source", {
    Structured => "structured",
    Repaired => "repaired",
    FromText => "from_text",
});

/// Counts of how a turn's tool calls were read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default)]
pub struct CallsRead {
    /// Structured calls whose arguments parsed as they came.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub structured: u32,
    /// Structured calls repaired or coerced to the schema.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub repaired: u32,
    /// Calls recognized in the text.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub from_text: u32,
    /// Calls that could not be read (broken beyond repair, unknown tool):
    /// answered with an error, never run.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub malformed: u32,
    /// Calls cut by the output-token limit: answered with an error, never run.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub cut: u32,
}

impl CallsRead {
    /// Counts one call read from `source`.
    pub fn count(&mut self, source: CallSource) {
        match source {
            CallSource::Structured => self.structured += 1,
            CallSource::Repaired => self.repaired += 1,
            CallSource::FromText => self.from_text += 1,
        }
    }
}
