//! Agents: one normalized event stream for any coding agent.
//!
//! - [`types`] (pure): [`Turn`], [`Access`], [`AgentEvent`], [`Usage`],
//!   [`TurnOutcome`], [`AgentError`].
//! - [`parse`] (pure): one parser per stream format, `fn(line) ->
//!   Vec<AgentEvent>`, tested on output captured from the real CLIs.
//! - [`outcome`] (pure): [`OutcomeBuilder`], the fold of a turn's events
//!   into its outcome.
//! - [`openai_sse`] and [`openai_chunk`] (pure): server-sent events framing
//!   and the Chat Completions wire format the `openai` agent speaks.
//! - [`script`] (pure): the scripted agent's actions, decoded strictly.
//! - [`config`] (pure decoding): `coderig.toml`'s agents and lanes.
//! - [`duration`] (pure): `"90s"`, `"20m"`, `"500ms"` or a number of seconds.
//! - The [`Agent`] trait (feature `runtime`) and its implementations: `cli`
//!   (presets `claude`, `qwen`, `codex`, `opencode`, `custom`, run as a
//!   process group), `openai` (feature `http`: streaming chat completions),
//!   `scripted` (plays a script; for tests, demos and examples), and the
//!   [`Registry`] of identities built from `coderig.toml` or in code.

pub mod config;
pub mod duration;
pub mod openai_chunk;
pub mod openai_sse;
pub mod outcome;
pub mod script;

pub mod types;

pub use outcome::OutcomeBuilder;
pub use types::{Access, AgentError, AgentErrorKind, AgentEvent, Turn, TurnOutcome, Usage};

#[cfg(feature = "runtime")]
mod registry;
#[cfg(feature = "runtime")]
mod runtime;
#[cfg(feature = "runtime")]
pub use registry::{find_executable, AgentEntry, AgentInfo, Registry, TurnHandle};
#[cfg(feature = "runtime")]
mod scripted;
#[cfg(feature = "runtime")]
pub use runtime::*;
#[cfg(feature = "runtime")]
pub use scripted::ScriptedAgent;

#[cfg(feature = "http")]
mod openai;
#[cfg(feature = "http")]
pub use openai::{OpenAiAgent, OpenAiConfig};
