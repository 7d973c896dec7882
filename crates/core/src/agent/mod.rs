//! Agents: one normalized event stream for any coding agent.
//!
//! - [`types`] (pure): [`Turn`], [`Access`], [`AgentEvent`], [`Usage`],
//!   [`TurnOutcome`], [`AgentError`].
//! - [`parse`] (pure): one parser per stream format ([`parse::StreamFormat`]:
//!   `claude-stream-json`, `codex-json`, `opencode-json`, `text`),
//!   `fn(line) -> Vec<AgentEvent>`, total on junk, tested on output
//!   captured from the real CLIs; [`parse::StreamParser`] for a whole stream.
//! - [`duration`] (pure): `"90s"`, `"20m"`, `"500ms"` or a number of seconds.
//! - The [`Agent`] trait (feature `runtime`) and its implementations: `cli`
//!   (presets `claude`, `qwen`, `codex`, `opencode`, `custom`, run as a
//!   process group), `openai` (feature `http`: streaming chat completions),
//!   `scripted` (plays a script; for tests, demos and examples), and the
//!   [`Registry`] of identities built from `coderig.toml` or in code.

pub mod duration;

pub mod parse;

pub mod types;

pub use types::{Access, AgentError, AgentErrorKind, AgentEvent, Turn, TurnOutcome, Usage};

#[cfg(feature = "runtime")]
mod runtime;
#[cfg(feature = "runtime")]
pub use runtime::*;
