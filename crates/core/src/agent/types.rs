//! The data of an agent turn (pure): what goes in ([`Turn`], [`Access`]),
//! what streams out ([`AgentEvent`]), and how it ends ([`TurnOutcome`] or
//! [`AgentError`]).
//!
//! Every type here serializes to the JSON the faces print (`coderig turn
//! --json`, the bindings' event iterators, the server): snake_case names,
//! `{"type": ...}` tags, absent optional fields omitted.

use crate::model::ErrorClass;
use crate::names::macros::named_enum;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// What an agent may do in its turn. Each CLI preset maps it to the CLI's
/// own permission flags; an agent that cannot enforce a level refuses the
/// turn with [`AgentErrorKind::Unavailable`] rather than run with more.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Access {
    /// Read files; no writes, no shell commands.
    #[default]
    ReadOnly,
    /// File edits and shell commands, confined to the work dir where the
    /// CLI can confine them.
    Edit,
    /// Everything, no sandbox.
    Full,
}
named_enum!(Access, "access level", {
    ReadOnly => "read_only" | "readonly" | "read-only",
    Edit => "edit",
    Full => "full",
});

/// One turn for an agent: a prompt, where to run, what it may do, and how
/// long it may take.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// The user prompt.
    pub prompt: String,
    /// An optional system prompt (CLIs that take none get it prepended to
    /// the prompt).
    pub system: Option<String>,
    /// The model name as the agent's backend spells it (`None`: the
    /// agent's default).
    pub model: Option<String>,
    /// The directory the agent works in (`None`: the current directory for
    /// CLIs, irrelevant for HTTP agents).
    pub workdir: Option<PathBuf>,
    /// What the agent may do.
    pub access: Access,
    /// Wall-clock limit for the whole turn (`None`: the agent's default).
    pub timeout: Option<Duration>,
    /// The turn is killed as hung when no event came for this long
    /// (`None`: the agent's default).
    pub idle_timeout: Option<Duration>,
    /// Environment variables added for this turn (over the agent's own).
    pub env: BTreeMap<String, String>,
    /// The sandbox mode of the turn's processes (`None`: the registry's,
    /// `enforce` by default). `Access::Full` turns are never confined.
    pub sandbox: Option<crate::sandbox::SandboxMode>,
    /// A directory the agent may keep the turn's artifacts in (`None`:
    /// none kept): the native agent writes its whole transcript there
    /// (`transcript.jsonl`) and every tool output it cut for the model
    /// (`outputs/<call id>.txt`).
    pub artifacts: Option<PathBuf>,
}

impl Turn {
    /// A read-only turn with `prompt` and every other field at its default.
    pub fn new(prompt: impl Into<String>) -> Self {
        Turn {
            prompt: prompt.into(),
            system: None,
            model: None,
            workdir: None,
            access: Access::ReadOnly,
            timeout: None,
            idle_timeout: None,
            env: BTreeMap::new(),
            sandbox: None,
            artifacts: None,
        }
    }

    /// Sets the model.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Sets the work dir.
    pub fn workdir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.workdir = Some(dir.into());
        self
    }

    /// Sets the access level.
    pub fn access(mut self, access: Access) -> Self {
        self.access = access;
        self
    }

    /// Sets the wall-clock timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Sets the idle timeout.
    pub fn idle_timeout(mut self, idle: Duration) -> Self {
        self.idle_timeout = Some(idle);
        self
    }
}

/// Token counts and cost. `input` is always **uncached** input: Claude's
/// `input_tokens` as is, OpenAI's `prompt_tokens` minus `cached_tokens`.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default)]
pub struct Usage {
    /// Uncached input tokens.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub input: u64,
    /// Output tokens (reasoning included when the backend counts it so).
    #[cfg_attr(feature = "openapi", schema(required))]
    pub output: u64,
    /// Input tokens read from the provider's cache.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub cache_read: u64,
    /// Input tokens written to the provider's cache.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub cache_write: u64,
    /// Reasoning tokens, where the backend reports them separately.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub reasoning: u64,
    /// Cost in US dollars, where the backend reports one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

impl Usage {
    /// Adds `other` field by field (costs add when either is known).
    pub fn add(&mut self, other: &Usage) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.reasoning += other.reasoning;
        self.cost_usd = match (self.cost_usd, other.cost_usd) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        };
    }

    /// Whether every count is zero and no cost is known.
    pub fn is_empty(&self) -> bool {
        *self == Usage::default()
    }
}

/// One normalized event of a turn, whatever the agent (AGENTS.md, part C).
///
/// `Usage` events **add up**: a parser emits each increment once (Claude's
/// final `result.usage`, each opencode `step_finish`, each codex
/// `turn.completed`), and the outcome's usage is their sum.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentEvent {
    /// The agent's session began (the id to resume it by, where it has one).
    SessionStarted {
        /// The CLI's session / thread id.
        session_id: String,
        /// The model the agent says it runs.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
    },
    /// Assistant text (a delta where the agent streams, a whole message
    /// where it does not).
    TextDelta {
        /// The text.
        text: String,
    },
    /// Reasoning ("thinking") text.
    ReasoningDelta {
        /// The text.
        text: String,
    },
    /// The agent called a tool.
    ToolCall {
        /// The call id (pairs with [`AgentEvent::ToolResult::id`]).
        id: String,
        /// The tool's name as the agent spells it (`Bash`, `write_file`, ...).
        name: String,
        /// The tool's input.
        input: serde_json::Value,
    },
    /// A tool call's result.
    ToolResult {
        /// The call id.
        id: String,
        /// Whether the tool succeeded.
        ok: bool,
        /// Its output (text; JSON outputs are serialized).
        output: String,
    },
    /// Tokens (and cost) spent since the previous `Usage` event.
    Usage(Usage),
    /// The agent reported the end of its turn.
    Finished {
        /// Why it stopped (`end_turn`, `stop`, `success`, `error_max_turns`, ...).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stop_reason: Option<String>,
        /// The final answer, where the agent reports one apart from its text.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        final_text: Option<String>,
        /// Model round trips, where the agent counts them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        num_turns: Option<u32>,
    },
    /// The agent or its provider reported an error.
    Error {
        /// What went wrong, as the agent said it.
        message: String,
        /// What a caller should do about it ([`crate::model::classify_error`]).
        class: ErrorClass,
        /// The provider's HTTP status, where known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        http_status: Option<u16>,
    },
}

impl AgentEvent {
    /// The event's `type` tag (`session_started`, `text_delta`, ...).
    pub fn type_name(&self) -> &'static str {
        match self {
            AgentEvent::SessionStarted { .. } => "session_started",
            AgentEvent::TextDelta { .. } => "text_delta",
            AgentEvent::ReasoningDelta { .. } => "reasoning_delta",
            AgentEvent::ToolCall { .. } => "tool_call",
            AgentEvent::ToolResult { .. } => "tool_result",
            AgentEvent::Usage(_) => "usage",
            AgentEvent::Finished { .. } => "finished",
            AgentEvent::Error { .. } => "error",
        }
    }

    /// Every `type` tag, in declaration order.
    pub const TYPE_NAMES: &'static [&'static str] = &[
        "session_started",
        "text_delta",
        "reasoning_delta",
        "tool_call",
        "tool_result",
        "usage",
        "finished",
        "error",
    ];
}

/// How a turn ended when it ended well.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default)]
pub struct TurnOutcome {
    /// The final answer: the agent's reported result, else its text.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub final_text: String,
    /// The sum of the turn's `Usage` events.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub usage: Usage,
    /// The session id, where the agent has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The model the agent reported, where it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Model round trips, where counted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_turns: Option<u32>,
    /// Milliseconds from the start of the turn to its first text or
    /// reasoning, where one came.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<u64>,
    /// Milliseconds from the start of the turn to its end.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub duration_ms: u64,
    /// Milliseconds spent generating tokens, where the backend reports it
    /// (llama.cpp `timings.predicted_ms`) or it can be measured (first to
    /// last token of a stream).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generation_ms: Option<u64>,
    /// Why the agent stopped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// The CLI's exit code (CLI agents only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The sandbox the turn's process ran under (CLI agents), as enforced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<crate::sandbox::SandboxReport>,
    /// Model requests made (native agent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests: Option<u32>,
    /// Tool calls the model made, run or not (native agent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<u32>,
    /// How the tool calls were read: structured, repaired, from the text,
    /// malformed, cut (native agent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calls_read: Option<crate::agent::native::CallsRead>,
    /// The context window the turn was shaped for, in tokens (native
    /// agent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u32>,
}

impl TurnOutcome {
    /// Output tokens per second of generation, where both are known and
    /// the generation time is not zero.
    pub fn tokens_per_sec(&self) -> Option<f64> {
        let ms = self.generation_ms?;
        (ms > 0 && self.usage.output > 0).then(|| self.usage.output as f64 * 1000.0 / ms as f64)
    }
}

/// Why a turn failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AgentErrorKind {
    /// The agent could not be started (binary missing, not executable, bad
    /// work dir, bad configuration).
    Spawn,
    /// The wall-clock `timeout` passed.
    Timeout,
    /// No event came for `idle_timeout`: the agent hung.
    Idle,
    /// The caller cancelled the turn.
    Cancelled,
    /// The agent's output broke its protocol (an HTTP stream without
    /// `[DONE]`, a CLI that exited without a result).
    Protocol,
    /// The model provider returned an error.
    Provider,
    /// The CLI exited non-zero.
    Exit,
    /// The agent cannot do what the turn asks (a preset that cannot enforce
    /// `read_only`, an unknown identity).
    Unavailable,
}
named_enum!(AgentErrorKind, "agent error kind", {
    Spawn => "spawn",
    Timeout => "timeout",
    Idle => "idle",
    Cancelled => "cancelled" | "canceled",
    Protocol => "protocol",
    Provider => "provider",
    Exit => "exit",
    Unavailable => "unavailable",
});

/// A failed turn: what failed, what to do about it, and the evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{kind} error: {message}")]
pub struct AgentError {
    /// What failed.
    pub kind: AgentErrorKind,
    /// Retry, fall back, stop or give up ([`crate::model::classify_error`]).
    pub class: ErrorClass,
    /// What went wrong, in words a user can act on.
    pub message: String,
    /// The provider's HTTP status, where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    /// How long the provider asked to wait before a retry, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
    /// The last lines of the CLI's stderr (bounded), empty for HTTP agents.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stderr_tail: String,
    /// The CLI's exit code, where it exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
}

impl AgentError {
    /// An error of `kind` with the class that kind implies when nothing
    /// more is known: `Timeout`, `Idle` and `Protocol` retry; `Spawn`,
    /// `Cancelled`, `Unavailable`, `Exit` and `Provider` are fatal until
    /// classified from the message ([`AgentError::classified`]).
    pub fn new(kind: AgentErrorKind, message: impl Into<String>) -> Self {
        let class = match kind {
            AgentErrorKind::Timeout | AgentErrorKind::Idle | AgentErrorKind::Protocol => {
                ErrorClass::Retry
            }
            _ => ErrorClass::Fatal,
        };
        AgentError {
            kind,
            class,
            message: message.into(),
            http_status: None,
            retry_after_ms: None,
            stderr_tail: String::new(),
            exit_code: None,
        }
    }

    /// An error of `kind` classified from its message and status by
    /// [`crate::model::classify_error`].
    pub fn classified(
        kind: AgentErrorKind,
        message: impl Into<String>,
        http_status: Option<u16>,
    ) -> Self {
        let message = message.into();
        let class = crate::model::classify_error(None, Some(&message), http_status);
        AgentError {
            class,
            http_status,
            ..AgentError::new(kind, message)
        }
    }

    /// Sets the HTTP status.
    pub fn with_status(mut self, status: u16) -> Self {
        self.http_status = Some(status);
        self
    }

    /// Sets the stderr tail.
    pub fn with_stderr(mut self, tail: impl Into<String>) -> Self {
        self.stderr_tail = tail.into();
        self
    }
}

/// The details of the error an agent's failure becomes (see
/// `From<AgentError> for Error`): what a failed turn's error carries in
/// every face (Node types it as `TurnErrorDetails`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AgentErrorDetails {
    /// What failed.
    pub agent_error: AgentErrorKind,
    /// What to do about it: retry, fall back, stop or give up.
    pub class: ErrorClass,
    /// The provider's HTTP status, where known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    /// How long the provider asked to wait before a retry, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
    /// The CLI's exit code, where it exited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The last lines of the CLI's stderr (bounded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stderr_tail: Option<String>,
}

impl From<AgentError> for crate::Error {
    /// Kind `agent` (`unavailable` for [`AgentErrorKind::Unavailable`]),
    /// with the [`AgentErrorDetails`] as details.
    fn from(e: AgentError) -> Self {
        let kind = match e.kind {
            AgentErrorKind::Unavailable => crate::ErrorKind::Unavailable,
            _ => crate::ErrorKind::Agent,
        };
        let details = AgentErrorDetails {
            agent_error: e.kind,
            class: e.class,
            http_status: e.http_status,
            retry_after_ms: e.retry_after_ms,
            exit_code: e.exit_code,
            stderr_tail: Some(e.stderr_tail).filter(|t| !t.is_empty()),
        };
        let mut err = crate::Error::new(kind, e.message);
        if let Ok(serde_json::Value::Object(fields)) = serde_json::to_value(details) {
            for (key, value) in fields {
                err = err.with_detail(&key, value);
            }
        }
        err
    }
}
