//! What the native agent's end-to-end tests share: a scripted call, an
//! agent against the scripted model server, a turn run to its end with its
//! events, and the results the model was told.

#![allow(dead_code)]

use coderig::agent::native::{Api, NativeAgent, NativeConfig};
use coderig::agent::{Agent, AgentError, AgentEvent, Turn, TurnOutcome};
use coderig_scripted_model::ScriptedModelServer;
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// One scripted call.
pub fn call(name: &str, args: Value) -> Value {
    json!({"name": name, "arguments": args})
}

/// A native agent speaking `api` to `server`, its config changed by `f`.
pub fn agent_with(
    server: &ScriptedModelServer,
    api: Api,
    f: impl FnOnce(&mut NativeConfig),
) -> NativeAgent {
    let mut config = NativeConfig::new(format!("{}/v1", server.base_url()), api);
    f(&mut config);
    NativeAgent::new(config).unwrap()
}

/// A native agent speaking `api` to `server`.
pub fn agent(server: &ScriptedModelServer, api: Api) -> NativeAgent {
    agent_with(server, api, |_| {})
}

/// Runs `turn` to its end: its result and every event it sent.
pub async fn run(
    agent: &NativeAgent,
    turn: Turn,
) -> (Result<TurnOutcome, AgentError>, Vec<AgentEvent>) {
    run_with(agent, turn, CancellationToken::new()).await
}

/// [`run`] with a cancellation token the test holds.
pub async fn run_with(
    agent: &NativeAgent,
    turn: Turn,
    cancel: CancellationToken,
) -> (Result<TurnOutcome, AgentError>, Vec<AgentEvent>) {
    let (tx, mut rx) = mpsc::channel(100_000);
    let result = agent.run(turn, tx, cancel).await;
    let mut events = vec![];
    while let Ok(e) = rx.try_recv() {
        events.push(e);
    }
    (result, events)
}

/// Every tool result: whether it was ok, and what the model was told.
pub fn results(events: &[AgentEvent]) -> Vec<(bool, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolResult { ok, output, .. } => Some((*ok, output.clone())),
            _ => None,
        })
        .collect()
}

/// The names of every tool call, in order.
pub fn calls(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolCall { name, .. } => Some(name.clone()),
            _ => None,
        })
        .collect()
}
