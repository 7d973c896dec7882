//! The runtime half of agents (feature `runtime`): the [`Agent`] trait and
//! helpers every implementation shares.

use super::{AgentError, AgentEvent, Turn, TurnOutcome};
use async_trait::async_trait;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// One coding agent: runs a turn to completion, streaming normalized events.
///
/// Small enough to implement in an afternoon: `run` is the whole contract,
/// `models` is optional.
#[async_trait]
pub trait Agent: Send + Sync {
    /// Runs one turn to completion, sending normalized events as they come.
    ///
    /// Guarantees of every implementation in this crate: the events end
    /// before `run` returns; a closed `events` receiver does not stop the
    /// turn; `cancel` ends the turn promptly with
    /// [`AgentErrorKind::Cancelled`](super::AgentErrorKind::Cancelled) and
    /// leaves no process behind; `turn.timeout` and `turn.idle_timeout`
    /// end it with `Timeout` / `Idle`.
    async fn run(
        &self,
        turn: Turn,
        events: mpsc::Sender<AgentEvent>,
        cancel: CancellationToken,
    ) -> Result<TurnOutcome, AgentError>;

    /// Models the backend serves (`/v1/models` for HTTP; empty when unknown).
    async fn models(&self) -> Result<Vec<String>, AgentError> {
        Ok(vec![])
    }
}

/// The CLI agent a `kind = "cli"` table describes (see `cli`).
pub(crate) fn build_cli_agent(
    identity: &str,
    spec: &super::config::AgentSpec,
) -> Result<std::sync::Arc<dyn Agent>, crate::Error> {
    let _ = spec;
    Err(crate::Error::unavailable(format!(
        "agents.{identity}: CLI agents are not in this build yet"
    )))
}

/// The HTTP agent a `kind = "openai"` table describes (feature `http`).
#[cfg(feature = "http")]
pub(crate) fn build_openai_agent(
    identity: &str,
    spec: &super::config::AgentSpec,
) -> Result<std::sync::Arc<dyn Agent>, crate::Error> {
    let agent = super::OpenAiAgent::new(super::OpenAiConfig::from_spec(spec))
        .map_err(|e| crate::Error::invalid_input(format!("agents.{identity}: {}", e.message)))?;
    Ok(std::sync::Arc::new(agent))
}

/// The HTTP agent a `kind = "openai"` table describes (feature `http`).
#[cfg(not(feature = "http"))]
pub(crate) fn build_openai_agent(
    identity: &str,
    spec: &super::config::AgentSpec,
) -> Result<std::sync::Arc<dyn Agent>, crate::Error> {
    let _ = spec;
    Err(crate::Error::unavailable(format!(
        "agents.{identity}: kind \"openai\" needs coderig built with the `http` feature"
    )))
}
