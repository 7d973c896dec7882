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

/// The CLI agent a `kind = "cli"` table describes ([`super::CliAgent`]).
pub(crate) fn build_cli_agent(
    identity: &str,
    spec: &super::config::AgentSpec,
) -> Result<std::sync::Arc<dyn Agent>, crate::Error> {
    #[cfg(unix)]
    {
        let at = |key: &str, e: crate::names::macros::ParseNameError| {
            crate::Error::invalid_at(&format!("agents.{identity}.{key}"), e)
        };
        let preset: super::CliPreset = spec
            .preset
            .as_deref()
            .unwrap_or_default()
            .parse()
            .map_err(|e| at("preset", e))?;
        let mut config = super::CliConfig::new(preset);
        config.command = spec.command.clone();
        config.args = spec.args.clone().unwrap_or_default();
        config.extra_args = spec.extra_args.clone();
        config.env = spec.env.clone();
        config.format = match spec.format.as_deref() {
            Some(f) => Some(f.parse().map_err(|e| at("format", e))?),
            None => None,
        };
        config.enforces_read_only = spec.enforces_read_only;
        config.state_dirs = spec.state_dirs.clone();
        config.network = spec.network.clone();
        if let Some(t) = spec.timeout {
            config.timeout = t;
        }
        if let Some(t) = spec.idle_timeout {
            config.idle_timeout = t;
        }
        Ok(std::sync::Arc::new(super::CliAgent::new(config)))
    }
    #[cfg(not(unix))]
    {
        let _ = spec;
        Err(crate::Error::unavailable(format!(
            "agents.{identity}: CLI agents run as Unix process groups; this platform has none"
        )))
    }
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

/// The native agent a `kind = "native"` table describes (feature `http`).
#[cfg(feature = "http")]
pub(crate) fn build_native_agent(
    identity: &str,
    spec: &super::config::AgentSpec,
) -> Result<std::sync::Arc<dyn Agent>, crate::Error> {
    let config = super::native::NativeConfig::from_spec(spec);
    let agent = super::native::NativeAgent::new(config)
        .map_err(|e| crate::Error::invalid_input(format!("agents.{identity}: {}", e.message)))?;
    Ok(std::sync::Arc::new(agent))
}

/// The native agent a `kind = "native"` table describes (feature `http`).
#[cfg(not(feature = "http"))]
pub(crate) fn build_native_agent(
    identity: &str,
    spec: &super::config::AgentSpec,
) -> Result<std::sync::Arc<dyn Agent>, crate::Error> {
    let _ = spec;
    Err(crate::Error::unavailable(format!(
        "agents.{identity}: kind \"native\" needs coderig built with the `http` feature"
    )))
}
