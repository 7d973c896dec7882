//! Agents: one normalized event stream for any coding agent.
//!
//! - [`types`] (pure): [`Turn`], [`Access`], [`AgentEvent`], [`Usage`],
//!   [`TurnOutcome`], [`AgentError`].
//! - [`parse`] (pure): one parser per stream format ([`parse::StreamFormat`]:
//!   `claude-stream-json`, `codex-json`, `opencode-json`, `text`),
//!   `fn(line) -> Vec<AgentEvent>`, total on junk, tested on output
//!   captured from the real CLIs; [`parse::StreamParser`] for a whole stream.
//! - [`outcome`] (pure): [`OutcomeBuilder`], the fold of a turn's events
//!   into its outcome.
//! - [`openai_sse`] and [`openai_chunk`] (pure): server-sent events framing
//!   and the Chat Completions wire format the `openai` agent speaks.
//! - [`options`] (pure): [`TurnOptions`], a turn's options as every face
//!   takes them.
//! - [`preset`] (pure): [`CliPreset`], the CLIs coderig drives.
//! - [`script`] (pure): the scripted agent's actions, decoded strictly.
//! - [`config`] (pure decoding): `coderig.toml`'s agents and lanes.
//! - [`duration`] (pure): `"90s"`, `"20m"`, `"500ms"` or a number of seconds.
//! - The [`Agent`] trait (feature `runtime`) and its implementations: `cli`
//!   (presets `claude`, `qwen`, `codex`, `opencode`, `custom`, run as a
//!   process group), `openai` (feature `http`: streaming chat completions),
//!   `scripted` (plays a script; for tests, demos and examples), and the
//!   [`Registry`] of identities built from `coderig.toml` or in code.
//! - `process` (feature `runtime`, Unix): the subprocess runner under the
//!   CLI agents — its own process group, bounded lines and stderr, timeout
//!   and idle timeout, no survivor of the group after any ending.

pub mod config;
pub mod duration;
pub mod native;
pub mod openai_chunk;
pub mod openai_sse;
pub mod options;
pub mod outcome;
pub mod parse;
pub mod preset;
pub mod script;
pub mod types;

pub use options::TurnOptions;
pub use outcome::OutcomeBuilder;
pub use preset::CliPreset;
pub use types::{
    Access, AgentError, AgentErrorDetails, AgentErrorKind, AgentEvent, Turn, TurnOutcome, Usage,
};

#[cfg(feature = "runtime")]
mod registry;
#[cfg(feature = "runtime")]
mod runtime;
#[cfg(feature = "runtime")]
pub use registry::{
    find_executable, AgentEntry, AgentInfo, AgentsOptions, Registry, TurnHandle, DEFAULT_CONFIG,
    DEFAULT_PROBE_TIMEOUT, DEFAULT_SHUTDOWN_GRACE,
};
#[cfg(feature = "runtime")]
mod scripted;
#[cfg(feature = "runtime")]
pub use runtime::*;
#[cfg(feature = "runtime")]
pub use scripted::ScriptedAgent;

#[cfg(feature = "http")]
mod http;
#[cfg(feature = "http")]
mod openai;
#[cfg(feature = "http")]
pub use openai::{OpenAiAgent, OpenAiConfig};

#[cfg(all(feature = "runtime", unix))]
pub mod process;

#[cfg(all(feature = "runtime", unix))]
pub mod cli;
#[cfg(all(feature = "runtime", unix))]
pub use cli::{CliAgent, CliConfig};
