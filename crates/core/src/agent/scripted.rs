//! The scripted agent (feature `runtime`): plays a [`Script`] — for tests,
//! demos and examples that want an agent without a model.

use super::script::{Script, ScriptAction};
use super::{
    Access, Agent, AgentError, AgentErrorKind, AgentEvent, OutcomeBuilder, Turn, TurnOutcome, Usage,
};
use crate::model::classify_error;
use crate::workspace::confine::{resolve_entry_under, resolve_under};
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// An agent that plays a script: deterministic (the same script, turn and
/// work dir give the same events and files), no model, no network.
///
/// The script is chosen by the turn's model: `scripts[model]` when it
/// exists, else the default `script`. Writes and deletes are confined to
/// the turn's work dir (no `..`, no absolute path, no symlink escape) and
/// are refused, as a failed tool result, in a `read_only` turn — the way a
/// CLI's permission layer denies them. `sleep_ms` and `hang` honour
/// `cancel`, `turn.timeout` and `turn.idle_timeout`.
#[derive(Debug, Default)]
pub struct ScriptedAgent {
    script: Script,
    scripts: BTreeMap<String, Script>,
    turns: AtomicU64,
}

impl ScriptedAgent {
    /// An agent that plays `script` for every model.
    pub fn new(script: Script) -> Self {
        ScriptedAgent {
            script,
            ..Self::default()
        }
    }

    /// Adds a script played when the turn's model is `model`.
    pub fn with_model_script(mut self, model: impl Into<String>, script: Script) -> Self {
        self.scripts.insert(model.into(), script);
        self
    }

    /// The model names that have their own script.
    pub fn model_names(&self) -> Vec<String> {
        self.scripts.keys().cloned().collect()
    }

    fn script_for(&self, model: Option<&str>) -> &Script {
        model
            .and_then(|m| self.scripts.get(m))
            .unwrap_or(&self.script)
    }
}

/// Why a wait ended early.
enum Interrupt {
    Cancelled,
    Timeout,
    Idle,
}

struct Clock {
    start: Instant,
    deadline: Option<Instant>,
    idle: Option<Duration>,
    last_event: Instant,
}

impl Clock {
    fn elapsed_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    /// Waits `d` (forever for `None`), unless cancelled or out of time.
    async fn wait(&self, d: Option<Duration>, cancel: &CancellationToken) -> Result<(), Interrupt> {
        let far = Instant::now() + Duration::from_secs(86_400 * 365);
        let done = d.map_or(far, |d| Instant::now() + d);
        let deadline = self.deadline.unwrap_or(far);
        let idle = self.idle.map_or(far, |i| self.last_event + i);
        tokio::select! {
            _ = cancel.cancelled() => Err(Interrupt::Cancelled),
            _ = tokio::time::sleep_until(done) => Ok(()),
            _ = tokio::time::sleep_until(deadline), if deadline <= idle => Err(Interrupt::Timeout),
            _ = tokio::time::sleep_until(idle), if idle < deadline => Err(Interrupt::Idle),
        }
    }
}

/// One turn being played: its clock, its outcome so far, its receiver.
struct Player<'a> {
    clock: Clock,
    outcome: OutcomeBuilder,
    events: &'a mpsc::Sender<AgentEvent>,
}

impl Player<'_> {
    /// Records `event` and sends it, waiting while the channel is full (a
    /// slow reader slows the script rather than losing events); a closed
    /// receiver does not stop the turn.
    async fn emit(&mut self, event: AgentEvent) {
        self.outcome.observe(&event, self.clock.elapsed_ms());
        self.clock.last_event = Instant::now();
        let _ = self.events.send(event).await;
    }

    /// Reports a tool call and the result of `result`.
    async fn tool(
        &mut self,
        id: String,
        name: &str,
        input: serde_json::Value,
        path: &str,
        result: Result<(), String>,
    ) {
        self.emit(AgentEvent::ToolCall {
            id: id.clone(),
            name: name.into(),
            input,
        })
        .await;
        let (ok, output) = match result {
            Ok(()) => (true, format!("{name} {path}: ok")),
            Err(e) => (false, e),
        };
        self.emit(AgentEvent::ToolResult { id, ok, output }).await;
    }
}

fn interrupted(why: Interrupt, turn: &Turn) -> AgentError {
    let (kind, message) = match why {
        Interrupt::Cancelled => (
            AgentErrorKind::Cancelled,
            "the turn was cancelled".to_string(),
        ),
        Interrupt::Timeout => (
            AgentErrorKind::Timeout,
            format!(
                "the turn ran past its timeout of {:?}",
                turn.timeout.unwrap_or_default()
            ),
        ),
        Interrupt::Idle => (
            AgentErrorKind::Idle,
            format!(
                "no event for {:?}: the agent hung",
                turn.idle_timeout.unwrap_or_default()
            ),
        ),
    };
    AgentError::new(kind, message)
}

#[async_trait]
impl Agent for ScriptedAgent {
    async fn run(
        &self,
        turn: Turn,
        events: mpsc::Sender<AgentEvent>,
        cancel: CancellationToken,
    ) -> Result<TurnOutcome, AgentError> {
        let n = self.turns.fetch_add(1, Ordering::Relaxed) + 1;
        let start = Instant::now();
        let clock = Clock {
            start,
            deadline: turn.timeout.map(|t| start + t),
            idle: turn.idle_timeout,
            last_event: start,
        };
        let mut p = Player {
            clock,
            outcome: OutcomeBuilder::new(),
            events: &events,
        };
        if cancel.is_cancelled() {
            return Err(interrupted(Interrupt::Cancelled, &turn));
        }
        p.emit(AgentEvent::SessionStarted {
            session_id: format!("scripted-{n}"),
            model: turn.model.clone(),
        })
        .await;
        let mut last_call = String::new();
        for (i, action) in self.script_for(turn.model.as_deref()).iter().enumerate() {
            // Ends the turn at its timeout even when no action waits.
            p.clock
                .wait(Some(Duration::ZERO), &cancel)
                .await
                .map_err(|w| interrupted(w, &turn))?;
            let id = format!("call_{n}_{i}");
            match action {
                ScriptAction::Text(text) => {
                    p.emit(AgentEvent::TextDelta { text: text.clone() }).await
                }
                ScriptAction::Reasoning(text) => {
                    p.emit(AgentEvent::ReasoningDelta { text: text.clone() })
                        .await
                }
                ScriptAction::ToolCall { name, input } => {
                    last_call = id.clone();
                    p.emit(AgentEvent::ToolCall {
                        id,
                        name: name.clone(),
                        input: input.clone(),
                    })
                    .await;
                }
                ScriptAction::ToolResult { ok, output } => {
                    p.emit(AgentEvent::ToolResult {
                        id: last_call.clone(),
                        ok: *ok,
                        output: output.clone(),
                    })
                    .await;
                }
                ScriptAction::Write { path, content } => {
                    let input = serde_json::json!({"path": path, "content": content});
                    let result = file_action(&turn, path, Some(content));
                    p.tool(id, "write", input, path, result).await;
                }
                ScriptAction::Delete { path } => {
                    let input = serde_json::json!({"path": path});
                    let result = file_action(&turn, path, None);
                    p.tool(id, "delete", input, path, result).await;
                }
                ScriptAction::SleepMs(ms) => {
                    let d = Some(Duration::from_millis(*ms));
                    p.clock
                        .wait(d, &cancel)
                        .await
                        .map_err(|w| interrupted(w, &turn))?;
                }
                ScriptAction::Usage { input, output } => {
                    let usage = Usage {
                        input: *input,
                        output: *output,
                        ..Usage::default()
                    };
                    p.emit(AgentEvent::Usage(usage)).await;
                }
                ScriptAction::Fail { message, class } => {
                    let class = class.unwrap_or_else(|| classify_error(None, Some(message), None));
                    p.emit(AgentEvent::Error {
                        message: message.clone(),
                        class,
                        http_status: None,
                    })
                    .await;
                    let mut err = AgentError::new(AgentErrorKind::Provider, message.clone());
                    err.class = class;
                    return Err(err);
                }
                ScriptAction::Hang(true) => {
                    p.clock
                        .wait(None, &cancel)
                        .await
                        .map_err(|w| interrupted(w, &turn))?;
                }
                ScriptAction::Hang(false) => {}
            }
        }
        let stop_reason = Some("end_turn".to_string());
        p.emit(AgentEvent::Finished {
            stop_reason,
            final_text: None,
            num_turns: Some(1),
        })
        .await;
        let ms = p.clock.elapsed_ms();
        Ok(p.outcome.finish(ms, None))
    }

    async fn models(&self) -> Result<Vec<String>, AgentError> {
        Ok(self.model_names())
    }
}

/// Writes (`Some(content)`) or deletes (`None`) `path` under the turn's
/// work dir; refused in a read-only turn.
fn file_action(turn: &Turn, path: &str, content: Option<&str>) -> Result<(), String> {
    if turn.access == Access::ReadOnly {
        let name = if content.is_some() { "write" } else { "delete" };
        return Err(format!("{name} {path}: refused in a read_only turn"));
    }
    let root = turn
        .workdir
        .as_deref()
        .ok_or_else(|| format!("{path}: the turn has no workdir"))?;
    let rel = Path::new(path);
    if rel.is_absolute() {
        return Err(format!(
            "{path}: an absolute path; scripts name paths relative to the workdir"
        ));
    }
    let target = match content {
        Some(_) => resolve_under(root, rel),
        None => resolve_entry_under(root, rel),
    }
    .map_err(|e| e.message().to_string())?;
    match content {
        Some(c) => {
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent).map_err(|e| format!("{path}: {e}"))?;
            }
            crate::write_atomic(&target, c.as_bytes()).map_err(|e| format!("{path}: {e}"))
        }
        None => std::fs::remove_file(&target).map_err(|e| format!("{path}: {e}")),
    }
}
