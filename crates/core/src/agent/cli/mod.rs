//! CLI agents (feature `runtime`, Unix): Claude Code, Qwen Code, Codex,
//! opencode, or any CLI whose stdout one of the parsers reads, run headless
//! as a process group.
//!
//! A turn is four steps, two of them pure:
//! 1. The sandbox (`sandbox.rs`): at `read_only` the CLI may write only its
//!    own state paths and a private `TMPDIR`, whatever its flags say; at
//!    `edit` also the work dir (in a git worktree, also the worktree's own
//!    git dir and the repository's object store); `full` is unconfined.
//!    The network is the agent's `network`, else its model server's
//!    loopback ports when its `env` or arguments name one, else `allow`.
//!    Enforced by the kernel under the turn's sandbox mode (default
//!    `enforce`, which refuses with `unavailable` what it cannot confine);
//!    the outcome's `sandbox` is what was enforced.
//! 2. [`build_command`] (pure) maps the preset, its config and the turn to
//!    a [`ProcessSpec`]: the CLI's headless flags, its stream format, the
//!    model, and [`Access`](crate::agent::Access) as the CLI's own
//!    permission flags (table below). A preset that cannot enforce
//!    `read_only` refuses it with `unavailable` rather than run
//!    write-capable.
//! 3. [`run_process`] runs it (own process group, stdin `/dev/null`,
//!    bounded lines and stderr, timeout and idle timeout, no survivor); each
//!    stdout line goes through the format's [`StreamParser`] (repeated
//!    `SessionStarted`s of one session dropped), its events to the caller's
//!    channel and into an [`OutcomeBuilder`].
//! 4. The end (pure) maps the process's ending and the events to the
//!    outcome or an [`AgentError`] (see `end_turn`'s table): cancel,
//!    timeout and idle are errors of those kinds; a non-zero exit is the
//!    agent's reported error (`provider`) or else `exit`; a clean exit with
//!    no result is `protocol`.
//!
//! | preset | `read_only` | `edit` | `full` |
//! |---|---|---|---|
//! | claude | `--permission-mode plan --disallowedTools Bash,Edit,Write,MultiEdit,NotebookEdit` | `--permission-mode acceptEdits --allowedTools Bash` | `--dangerously-skip-permissions`, env `IS_SANDBOX=1` |
//! | qwen | `--approval-mode plan` | `--allowed-tools run_shell_command … --approval-mode auto-edit` | `--approval-mode yolo` |
//! | codex | `--sandbox read-only -c approval_policy=never` | `--sandbox workspace-write -c approval_policy=never` | `--dangerously-bypass-approvals-and-sandbox` |
//! | codex, when coderig's sandbox confines its writes | `--sandbox danger-full-access -c approval_policy=never` | the same | as above |
//! | opencode | env `OPENCODE_PERMISSION` denying edit, bash, webfetch, external dirs | allowing edit, bash, webfetch | allowing all of those |
//! | custom | refused unless confined by the sandbox or `enforces_read_only` | as configured | as configured |
//!
//! Codex's own sandbox (bubblewrap) cannot start inside coderig's — it
//! must write `/proc/self/uid_map`, which the kernel refuses there — so a
//! confined codex leaves the confinement of its commands to coderig.
//!
//! Events go to the caller's channel through an unbounded queue, so a slow
//! reader never stalls the CLI's stdout (which would trip its idle timer);
//! the queue is drained before `run` returns, and a closed receiver only
//! stops the sending, not the turn.

mod command;
mod end;
mod sandbox;

pub use command::{build_command, CliConfig, CliPreset, OPENCODE_PERMISSIONS};

use super::parse::StreamParser;
use super::process::{run_process, Limits, ProcessSpec};
use super::{Agent, AgentError, AgentErrorKind, AgentEvent, OutcomeBuilder, Turn, TurnOutcome};
use async_trait::async_trait;
use end::{end_turn, Applied};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// An [`Agent`] that runs a CLI per turn (see the module docs).
#[derive(Debug, Clone)]
pub struct CliAgent {
    config: CliConfig,
}

impl CliAgent {
    /// An agent for `config`. Nothing is checked until a turn runs: a
    /// missing binary is a `spawn` error of that turn.
    pub fn new(config: CliConfig) -> Self {
        CliAgent { config }
    }

    /// Its configuration.
    pub fn config(&self) -> &CliConfig {
        &self.config
    }
}

#[async_trait]
impl Agent for CliAgent {
    async fn run(
        &self,
        mut turn: Turn,
        events: mpsc::Sender<AgentEvent>,
        cancel: CancellationToken,
    ) -> Result<TurnOutcome, AgentError> {
        let spawn_error = |msg: String| AgentError::new(AgentErrorKind::Spawn, msg);
        if let Some(dir) = &turn.workdir {
            // Flags like `-C` and `--dir` are read relative to the CLI's
            // cwd, which is the work dir itself: hand every CLI the
            // absolute path.
            let abs = std::path::absolute(dir)
                .map_err(|e| spawn_error(format!("work dir {}: {e}", dir.display())))?;
            if !abs.is_dir() {
                return Err(spawn_error(format!(
                    "the work dir {} is not a directory",
                    abs.display()
                )));
            }
            turn.workdir = Some(abs);
        }
        let sandbox = sandbox::prepare(&self.config, &turn)?;
        let mut spec = build_command(&self.config, &turn, sandbox.confines_writes())?;
        spec.sandbox = sandbox.confinement.clone();
        let applied = Applied {
            timeout: turn.timeout.unwrap_or(self.config.timeout),
            idle_timeout: turn.idle_timeout.unwrap_or(self.config.idle_timeout),
        };
        let limits = Limits {
            timeout: Some(applied.timeout),
            idle_timeout: Some(applied.idle_timeout),
            kill_grace: self.config.kill_grace,
            ..Limits::default()
        };
        let mut outcome = run_cli(
            &spec,
            &limits,
            applied,
            self.config.stream_format(),
            events,
            cancel,
        )
        .await?;
        outcome.sandbox = Some(sandbox.report);
        Ok(outcome)
    }
}

async fn run_cli(
    spec: &ProcessSpec,
    limits: &Limits,
    applied: Applied,
    format: super::parse::StreamFormat,
    events: mpsc::Sender<AgentEvent>,
    cancel: CancellationToken,
) -> Result<TurnOutcome, AgentError> {
    let program = spec.program.file_name().map_or_else(
        || spec.program.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let start = Instant::now();
    let mut parser = StreamParser::new(format);
    let mut outcome = OutcomeBuilder::new();
    let (queue, mut queued) = mpsc::unbounded_channel::<AgentEvent>();
    let (parser, folded) = (&mut parser, &mut outcome);
    // Owns the queue's sender: when the run ends the closure is dropped,
    // which ends the forwarder once it has drained the queue.
    let on_line = move |line: &str| {
        let elapsed = start.elapsed().as_millis() as u64;
        for event in parser.line(line) {
            folded.observe(&event, elapsed);
            // The receiver lives until the forwarder below has drained it.
            let _ = queue.send(event);
        }
        // Any output is a sign of life: the idle timer catches a CLI that
        // went silent (hung on a request, a prompt, a lock), and lines the
        // parsers skip (partial-message streams, item updates) are progress.
        !line.trim().is_empty()
    };
    let forward = async {
        let mut open = true;
        while let Some(event) = queued.recv().await {
            if open && events.send(event).await.is_err() {
                open = false;
            }
        }
    };
    let (exit, ()) = tokio::join!(run_process(spec, limits, &cancel, on_line), forward);
    let exit = exit.map_err(|e| AgentError::new(AgentErrorKind::Spawn, e.to_string()))?;
    let duration_ms = start.elapsed().as_millis() as u64;
    end_turn(&program, &exit, outcome, duration_ms, applied)
}
