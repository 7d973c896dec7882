//! `coderig turn IDENTITY[:MODEL] --prompt TEXT`: one turn of one agent,
//! its normalized events streamed as they come.
//!
//! `--json` prints each event as one JSON line (the core's serialization:
//! `{"type": "text_delta", "text": ...}`, ...) and ends with
//! `{"type": "outcome", "ok": true, ...TurnOutcome}` or
//! `{"type": "outcome", "ok": false, "error": {kind, code, message,
//! ...details}}`. Without it the text goes to stdout as it streams, tool
//! calls, results and errors to stderr as short dim lines, then a summary.
//! Exit codes: 0 the turn finished, 1 it failed (or the identity is
//! unknown: `not_found_id`), 2 bad usage, 3 a file could not be read, 130
//! interrupted by Ctrl-C (143 by SIGTERM) — the turn is cancelled and its
//! agent's processes stopped first.

use super::rig::RigArgs;
use super::signals::Interrupts;
use super::table::short;
use coderig::agent::duration::parse_duration;
use coderig::agent::{Access, AgentError, AgentEvent, Registry, Turn, TurnOptions, TurnOutcome};
use serde::Serialize;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Options of `coderig turn`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The agent, and optionally the model: `claude`, `local:qwen3-coder:30b`
    /// (split at the first `:`; the model may contain more).
    #[arg(value_name = "IDENTITY[:MODEL]")]
    target: String,
    /// The prompt.
    #[arg(
        long,
        conflicts_with = "prompt_file",
        required_unless_present = "prompt_file"
    )]
    prompt: Option<String>,
    /// A file holding the prompt (`-` reads stdin).
    #[arg(long, value_name = "FILE")]
    prompt_file: Option<PathBuf>,
    /// The directory the agent works in (default: the current directory).
    #[arg(long, value_name = "DIR")]
    workdir: Option<PathBuf>,
    /// What the agent may do: read_only (no writes, no shell), edit (file
    /// edits and commands, confined to the work dir where the agent can be),
    /// full (no sandbox).
    #[arg(long, default_value = "read_only", value_parser = parse_access)]
    access: Access,
    /// Wall-clock limit of the turn (`90s`, `20m`, `500ms` or seconds).
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    timeout: Option<Duration>,
    /// The agent is killed as hung after this long without an event.
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    idle_timeout: Option<Duration>,
    /// A system prompt.
    #[arg(long, value_name = "TEXT")]
    system: Option<String>,
    /// Where the agent keeps the turn's records (the native agent's
    /// transcript.jsonl and its cut tool outputs).
    #[arg(long, value_name = "DIR")]
    artifacts: Option<PathBuf>,
    /// Print each event and the outcome as JSON lines.
    #[arg(long)]
    json: bool,
}

fn parse_access(text: &str) -> Result<Access, String> {
    text.parse::<Access>().map_err(|e| e.to_string())
}

/// `IDENTITY[:MODEL]` split at the first `:`. An empty identity or model
/// is `invalid_input`.
pub fn split_target(target: &str) -> Result<(&str, Option<&str>), coderig::Error> {
    let (identity, model) = match target.split_once(':') {
        Some((identity, model)) => (identity, Some(model)),
        None => (target, None),
    };
    if identity.is_empty() || model == Some("") {
        return Err(coderig::Error::invalid_input(format!(
            "{target:?}: expected IDENTITY or IDENTITY:MODEL (e.g. local:qwen3-coder:30b)"
        )));
    }
    Ok((identity, model))
}

/// Runs `coderig turn`; exit codes as in the module docs.
pub fn run(args: Args, rig: &RigArgs) -> ExitCode {
    let prepared = prepare(&args, rig)
        .and_then(|(registry, identity, turn)| Ok((super::runtime()?, registry, identity, turn)));
    match prepared {
        Ok((runtime, registry, identity, turn)) => {
            runtime.block_on(drive(&registry, &identity, turn, args.json))
        }
        Err(e) => super::fail("turn", &e),
    }
}

fn prepare(args: &Args, rig: &RigArgs) -> Result<(Registry, String, Turn), coderig::Error> {
    let (identity, model) = split_target(&args.target)?;
    let prompt = match (&args.prompt, &args.prompt_file) {
        (Some(prompt), _) => prompt.clone(),
        (None, Some(file)) => super::read_text(file)?,
        // clap makes one of the two required
        (None, None) => return Err(coderig::Error::invalid_input("missing --prompt")),
    };
    let registry = rig.registry()?;
    // Unknown identities fail here, before a runtime starts.
    registry.get(identity)?;
    let options = TurnOptions {
        workdir: args.workdir.clone(),
        access: Some(args.access),
        timeout: args.timeout,
        idle_timeout: args.idle_timeout,
        system: args.system.clone(),
        env: None,
        artifacts: args.artifacts.clone(),
    };
    let turn = options.into_turn(prompt, model.map(str::to_string));
    Ok((registry, identity.to_string(), turn))
}

/// Streams the turn's events to the printer, cancelling the turn on
/// SIGINT / SIGTERM; returns the exit code.
async fn drive(registry: &Registry, identity: &str, turn: Turn, json: bool) -> ExitCode {
    // Listeners first, so a signal that comes at any point of the turn is seen.
    let mut interrupts = match Interrupts::listen() {
        Ok(interrupts) => interrupts,
        Err(e) => return super::fail("turn", &e),
    };
    let mut handle = match registry.start_turn(identity, turn) {
        Ok(handle) => handle,
        Err(e) => return super::fail("turn", &e),
    };
    let mut printer = Printer::new(json);
    let mut interrupted: Option<u8> = None;
    loop {
        tokio::select! {
            event = handle.next_event() => match event {
                Some(event) => printer.event(&event),
                None => break,
            },
            code = interrupts.next(), if interrupted.is_none() => {
                interrupted = Some(code);
                handle.cancel();
            }
        }
    }
    let outcome = handle.wait().await;
    let ok = outcome.is_ok();
    printer.outcome(&outcome, interrupted.is_some());
    match (interrupted, ok) {
        (Some(code), _) => ExitCode::from(code),
        (None, true) => ExitCode::SUCCESS,
        (None, false) => ExitCode::FAILURE,
    }
}

/// The last line of `--json`.
#[derive(Serialize)]
struct OutcomeLine<'a> {
    r#type: &'static str,
    ok: bool,
    #[serde(flatten)]
    outcome: Option<&'a TurnOutcome>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<serde_json::Value>,
}

/// Writes the events as they come: JSON lines, or text for a person.
/// Write errors (a closed pipe) are ignored: the turn still ends cleanly.
struct Printer {
    json: bool,
    /// Dim escape codes on stderr (a terminal, `NO_COLOR` unset).
    color: bool,
    /// stdout and stderr are the same screen: notes must start on a fresh line.
    shared_screen: bool,
    /// The last text written to stdout did not end a line.
    text_open: bool,
    /// The last reasoning written to stderr did not end a line.
    reasoning_open: bool,
}

impl Printer {
    fn new(json: bool) -> Self {
        let stderr_tty = std::io::stderr().is_terminal();
        Printer {
            json,
            color: stderr_tty && std::env::var_os("NO_COLOR").is_none(),
            shared_screen: stderr_tty && std::io::stdout().is_terminal(),
            text_open: false,
            reasoning_open: false,
        }
    }

    fn event(&mut self, event: &AgentEvent) {
        if self.json {
            if let Ok(line) = serde_json::to_string(event) {
                let mut stdout = std::io::stdout().lock();
                let _ = writeln!(stdout, "{line}").and_then(|()| stdout.flush());
            }
            return;
        }
        match event {
            AgentEvent::TextDelta { text } => self.text(text),
            AgentEvent::ReasoningDelta { text } => self.reasoning(text),
            AgentEvent::SessionStarted { session_id, model } => {
                let model = model
                    .as_deref()
                    .map(|m| format!(" ({m})"))
                    .unwrap_or_default();
                self.note(&format!("· session {session_id}{model}"));
            }
            AgentEvent::ToolCall { name, input, .. } => {
                self.note(&format!("→ {name} {}", short(&input.to_string(), 120)));
            }
            AgentEvent::ToolResult { ok, output, .. } => {
                let status = if *ok { "ok" } else { "failed" };
                let first = output.lines().next().unwrap_or_default();
                self.note(&format!("← {status} {}", short(first, 120)));
            }
            AgentEvent::Error {
                message,
                class,
                http_status,
            } => {
                let status = http_status
                    .map(|s| format!(", http {s}"))
                    .unwrap_or_default();
                self.note(&format!(
                    "! error ({class}{status}): {}",
                    short(message, 200)
                ));
            }
            AgentEvent::Usage(_) | AgentEvent::Finished { .. } => {}
        }
    }

    fn text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.end_reasoning();
        let mut stdout = std::io::stdout().lock();
        let _ = stdout
            .write_all(text.as_bytes())
            .and_then(|()| stdout.flush());
        self.text_open = !text.ends_with('\n');
    }

    fn reasoning(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.end_text();
        let _ = write!(std::io::stderr(), "{}", self.dim(text));
        self.reasoning_open = !text.ends_with('\n');
    }

    /// One dim line on stderr, on a line of its own.
    fn note(&mut self, line: &str) {
        self.end_reasoning();
        self.end_text();
        let _ = writeln!(std::io::stderr(), "{}", self.dim(line));
    }

    fn end_text(&mut self) {
        if self.text_open && self.shared_screen {
            let mut stdout = std::io::stdout().lock();
            let _ = writeln!(stdout).and_then(|()| stdout.flush());
            self.text_open = false;
        }
    }

    fn end_reasoning(&mut self) {
        if self.reasoning_open {
            let _ = writeln!(std::io::stderr());
            self.reasoning_open = false;
        }
    }

    fn dim(&self, text: &str) -> String {
        if self.color {
            format!("\x1b[2m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    fn outcome(&mut self, outcome: &Result<TurnOutcome, AgentError>, interrupted: bool) {
        if self.json {
            let line = match outcome {
                Ok(outcome) => OutcomeLine {
                    r#type: "outcome",
                    ok: true,
                    outcome: Some(outcome),
                    error: None,
                },
                Err(e) => OutcomeLine {
                    r#type: "outcome",
                    ok: false,
                    outcome: None,
                    error: Some(coderig::Error::from(e.clone()).to_json()),
                },
            };
            if let Ok(line) = serde_json::to_string(&line) {
                let mut stdout = std::io::stdout().lock();
                let _ = writeln!(stdout, "{line}").and_then(|()| stdout.flush());
            }
            return;
        }
        self.end_reasoning();
        if self.text_open {
            let mut stdout = std::io::stdout().lock();
            let _ = writeln!(stdout).and_then(|()| stdout.flush());
            self.text_open = false;
        }
        let line = match outcome {
            Ok(outcome) => format!("done: {}", summary(outcome)),
            Err(e) if interrupted => format!("interrupted: {}", e.message),
            Err(e) => {
                let mut line = format!("failed ({}, {}): {}", e.kind, e.class, e.message);
                if !e.stderr_tail.is_empty() {
                    line.push_str(&format!("\nstderr:\n{}", e.stderr_tail.trim_end()));
                }
                line
            }
        };
        let _ = writeln!(std::io::stderr(), "{line}");
    }
}

/// `1.2 s` (or `16 ms`) `· ttft 45 ms · 10 in / 20 out tokens · $0.0123 · stop end_turn`.
fn summary(outcome: &TurnOutcome) -> String {
    let mut parts = vec![if outcome.duration_ms < 1000 {
        format!("{} ms", outcome.duration_ms)
    } else {
        format!("{:.1} s", outcome.duration_ms as f64 / 1000.0)
    }];
    if let Some(ttft) = outcome.ttft_ms {
        parts.push(format!("ttft {ttft} ms"));
    }
    let usage = &outcome.usage;
    let mut tokens = format!("{} in / {} out tokens", usage.input, usage.output);
    if usage.cache_read > 0 || usage.cache_write > 0 {
        tokens.push_str(&format!(
            " (cache {} read, {} written)",
            usage.cache_read, usage.cache_write
        ));
    }
    parts.push(tokens);
    if let Some(cost) = usage.cost_usd {
        parts.push(format!("${cost:.4}"));
    }
    if let Some(stop) = &outcome.stop_reason {
        parts.push(format!("stop {stop}"));
    }
    parts.join(" · ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_split_at_the_first_colon() {
        assert_eq!(split_target("alice").unwrap(), ("alice", None));
        assert_eq!(
            split_target("local:qwen3-coder:30b").unwrap(),
            ("local", Some("qwen3-coder:30b"))
        );
        for bad in ["", ":m", "alice:"] {
            let e = split_target(bad).unwrap_err();
            assert_eq!(e.kind(), coderig::ErrorKind::InvalidInput, "{bad:?}");
        }
    }

    #[test]
    fn summaries_say_what_is_known() {
        let mut outcome = TurnOutcome {
            duration_ms: 1234,
            ..TurnOutcome::default()
        };
        assert_eq!(summary(&outcome), "1.2 s · 0 in / 0 out tokens");
        outcome.duration_ms = 16;
        assert_eq!(summary(&outcome), "16 ms · 0 in / 0 out tokens");
        outcome.duration_ms = 1234;
        outcome.ttft_ms = Some(45);
        outcome.usage.input = 10;
        outcome.usage.output = 20;
        outcome.usage.cost_usd = Some(0.01234);
        outcome.stop_reason = Some("end_turn".into());
        assert_eq!(
            summary(&outcome),
            "1.2 s · ttft 45 ms · 10 in / 20 out tokens · $0.0123 · stop end_turn"
        );
    }
}
