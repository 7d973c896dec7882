//! Running one attempt of an agent, command or code step. Each returns an
//! [`ExecResult`] and never panics; the driver owns every decision about
//! what the result means (done, retry, failed, timed out).

use super::CodeStep;
use crate::agent::{AgentEvent, Registry, Turn};
use crate::bus::EventBus;
use crate::error::Error;
use crate::event::{AgentOutput, Event, OutputKind, OutputSource};
use crate::flow::command::{run_command, CommandRequest, Program};
use crate::flow::runspec::CommandProgram;
use crate::sandbox::{SandboxMode, SandboxOverrides, SandboxReport};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How an attempt ended.
#[derive(Debug, Clone)]
pub(crate) enum ExecResult {
    /// It succeeded with this output. `sandbox`: what a command's sandbox
    /// enforced.
    Done {
        output: Value,
        exit_code: Option<i32>,
        stderr: Option<String>,
        sandbox: Option<SandboxReport>,
    },
    /// It failed; `output` is what it produced anyway (a failing command's
    /// stdout), kept for conditions; `sandbox` as for `Done` (`None` when
    /// nothing started, e.g. an `enforce` refusal).
    Failed {
        error: Value,
        output: Option<Value>,
        exit_code: Option<i32>,
        stderr: Option<String>,
        sandbox: Option<SandboxReport>,
    },
}

impl ExecResult {
    pub(crate) fn failed(error: Error) -> Self {
        ExecResult::Failed {
            error: error.to_json(),
            output: None,
            exit_code: None,
            stderr: None,
            sandbox: None,
        }
    }
}

fn output_of(event: &AgentEvent) -> Option<(OutputKind, String)> {
    match event {
        AgentEvent::TextDelta { text } => Some((OutputKind::Text, text.clone())),
        AgentEvent::ReasoningDelta { text } => Some((OutputKind::Reasoning, text.clone())),
        AgentEvent::ToolCall { name, input, .. } => {
            Some((OutputKind::ToolCall, format!("{name} {input}")))
        }
        AgentEvent::ToolResult { output, ok, .. } => Some((
            OutputKind::ToolResult,
            if *ok {
                output.clone()
            } else {
                format!("[failed] {output}")
            },
        )),
        _ => None,
    }
}

/// What an agent attempt needs.
pub(crate) struct AgentCall {
    pub run_id: String,
    pub step_id: String,
    pub agent: String,
    pub turn: Turn,
}

/// Runs one agent turn, forwarding its output as live `agent_output`.
pub(crate) async fn agent(
    registry: &Registry,
    bus: &Arc<EventBus>,
    call: AgentCall,
    cancel: CancellationToken,
) -> ExecResult {
    let mut handle = match registry.start_turn(&call.agent, call.turn) {
        Ok(h) => h,
        Err(e) => return ExecResult::failed(e),
    };
    loop {
        tokio::select! {
            event = handle.next_event() => match event {
                Some(ev) => {
                    if let Some((kind, text)) = output_of(&ev) {
                        bus.publish_live(Event::AgentOutput(AgentOutput {
                            source: OutputSource::Step {
                                run_id: call.run_id.clone(),
                                step_id: call.step_id.clone(),
                            },
                            kind,
                            text,
                        }));
                    }
                }
                None => break,
            },
            () = cancel.cancelled() => {
                handle.cancel();
                break;
            }
        }
    }
    match handle.wait().await {
        Ok(outcome) => ExecResult::Done {
            output: Value::String(outcome.final_text),
            exit_code: outcome.exit_code,
            stderr: None,
            sandbox: None,
        },
        Err(e) => ExecResult::failed(Error::from(e)),
    }
}

/// What a command attempt needs.
pub(crate) struct CommandCall {
    pub program: CommandProgram,
    pub cwd: PathBuf,
    pub env: BTreeMap<String, String>,
    pub timeout: Option<Duration>,
    /// The step's `sandbox:` (its paths checked when the run started).
    pub sandbox: SandboxOverrides,
    /// The mode when the step states none (the registry's).
    pub mode: SandboxMode,
}

/// Runs one command in its sandbox (the default policy of its cwd with the
/// step's overrides): stdout is the output, a non-zero exit fails it; the
/// result carries the sandbox's report whenever the command started.
pub(crate) async fn command(call: CommandCall, cancel: CancellationToken) -> ExecResult {
    let program = match call.program {
        CommandProgram::Argv(argv) => Program::Argv(argv),
        CommandProgram::Shell(s) => Program::Shell(s),
    };
    let mut request = CommandRequest::new(program, call.cwd).with_sandbox(&call.sandbox, call.mode);
    request.env = call.env;
    // The driver's persisted deadline is the step's timeout; this one is a
    // backstop for a driver that could not act on it.
    request.timeout = call.timeout.map(|t| t + Duration::from_secs(5));
    match run_command(request, cancel).await {
        Err(e) => ExecResult::failed(e),
        Ok(out) => {
            let stderr = (!out.stderr_tail.is_empty()).then(|| out.stderr_tail.clone());
            if out.success() {
                ExecResult::Done {
                    output: Value::String(out.stdout),
                    exit_code: out.exit_code,
                    stderr,
                    sandbox: out.sandbox,
                }
            } else {
                let why = match (out.exit_code, out.signal) {
                    _ if out.cancelled => "was cancelled".to_string(),
                    _ if out.timed_out => "timed out".to_string(),
                    (Some(c), _) => format!("exited with status {c}"),
                    (None, Some(s)) => format!("was killed by signal {s}"),
                    (None, None) => "ended without a status".to_string(),
                };
                let mut error = Error::new(crate::ErrorKind::Agent, format!("the command {why}"));
                if let Some(c) = out.exit_code {
                    error = error.with_detail("exit_code", c);
                }
                if let Some(tail) = &stderr {
                    error = error.with_detail("stderr_tail", tail.clone());
                }
                ExecResult::Failed {
                    error: error.to_json(),
                    output: Some(Value::String(out.stdout)),
                    exit_code: out.exit_code,
                    stderr,
                    sandbox: out.sandbox,
                }
            }
        }
    }
}

/// Runs one call of a native code step.
pub(crate) async fn code(
    step: Arc<dyn CodeStep>,
    ctx: Value,
    cancel: CancellationToken,
) -> ExecResult {
    let token = cancel.clone();
    tokio::select! {
        r = step.call(ctx, token) => match r {
            Ok(output) => ExecResult::Done { output, exit_code: None, stderr: None, sandbox: None },
            Err(e) => ExecResult::failed(e),
        },
        () = cancel.cancelled() => ExecResult::failed(Error::conflict("the code step was cancelled")),
    }
}
