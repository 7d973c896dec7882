//! `run`: a shell command in the workdir, under the turn's sandbox.
//!
//! | access | sandbox |
//! |---|---|
//! | `read_only` | not offered; refused (`READ_ONLY`) |
//! | `edit` | confined: writes only in the workdir and a private `TMPDIR`, reads everywhere but the credential stores, network `settings.network` (default deny), a PID namespace |
//! | `full` | unconfined |
//!
//! Under mode `enforce` (the default) a sandbox the kernel cannot provide
//! is a `SANDBOX_UNAVAILABLE` refusal, never an unconfined run. At the
//! timeout or on cancel the whole process tree dies: the runner signals the
//! process group (SIGTERM, SIGKILL after [`KILL_GRACE`]) and, when
//! confined, the PID namespace takes every descendant with it (a `setsid`
//! daemon included).

use super::{arguments, ToolResult, ToolSettings};
use crate::agent::native::{ToolCall, ToolSpec};
use crate::agent::process::{run_process_bytes, Ended, Limits, ProcessSpec};
use crate::agent::Access;
use crate::error::ErrorKind;
use crate::sandbox::{Confinement, SandboxMode, SandboxPolicy, CREDENTIAL_STORES};
use serde::Deserialize;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Time between SIGTERM and SIGKILL to a command's tree at a timeout or a
/// cancel.
pub const KILL_GRACE: Duration = Duration::from_secs(2);
/// Bytes of a command's output kept from its start; past it (and
/// [`KEEP_TAIL`]) the middle is dropped, so memory stays bounded whatever
/// the command prints.
pub const KEEP_HEAD: usize = 1 << 20;
/// Bytes of a command's output kept from its end (see [`KEEP_HEAD`]).
pub const KEEP_TAIL: usize = 1 << 20;

/// The spec of `run`: `{command, timeout_s?}`.
pub fn run_spec() -> ToolSpec {
    ToolSpec {
        name: "run".into(),
        description: "Run a shell command (bash -c) in the workdir; stdout and stderr come back merged, with the exit code. Long output is cut in the middle. Refusals: EXIT_<n> (the command failed: read its output), TIMEOUT (killed: use a longer timeout_s or a narrower command), CANCELLED. Stdin is empty: do not run interactive programs.".into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The shell command, e.g. `cargo test -q` or `ls src && grep -rn foo src`."},
                "timeout_s": {"type": "number", "description": "Seconds before the command is killed (default and most: the turn's run timeout)."}
            },
            "required": ["command"],
            "additionalProperties": false
        }),
    }
}

/// The arguments of `run`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RunArgs {
    command: String,
    #[serde(default)]
    timeout_s: Option<f64>,
}

/// `run`: `command` through `bash -c` (`sh -c` when there is no bash) in
/// the workdir, stdin empty, stdout and stderr merged in the order written,
/// `settings.env` added to the environment (after `PAGER` and `GIT_PAGER`
/// set to `cat`, which it may override).
///
/// Guarantees:
/// - at `read_only` nothing runs (`READ_ONLY`); at `edit` the command runs
///   confined (see the module docs) under `settings.sandbox` (default
///   `enforce`), and a sandbox that cannot be had under `enforce` is
///   `SANDBOX_UNAVAILABLE` naming what is missing; at `full` it runs
///   unconfined;
/// - the timeout is `min(timeout_s, settings.run_timeout)`, default
///   `settings.run_timeout`; at it (`TIMEOUT`) or on `cancel`
///   (`CANCELLED`) the whole process tree is killed within [`KILL_GRACE`]
///   and what it printed so far is shown;
/// - the answer starts `exit code N in 1.2 s`, then the output (`(no
///   output)` when none); `ok` is exit 0, otherwise the code is `EXIT_<n>`
///   (`EXIT_<128+s>` for a death by signal `s`);
/// - a line `sandbox: ...` (the report's summary) is added when the run
///   was not fully confined (`full` access, mode `off`, or what `auto`
///   left out);
/// - memory stays bounded: past [`KEEP_HEAD`] + [`KEEP_TAIL`] bytes the
///   middle of the output is dropped (and said); the result is then capped
///   for the model by [`ToolResult::capped`].
pub async fn run(
    settings: &ToolSettings,
    call: &ToolCall,
    spec: &ToolSpec,
    cancel: &CancellationToken,
) -> ToolResult {
    let args: RunArgs = match arguments(call, spec) {
        Ok(a) => a,
        Err(r) => return r,
    };
    if settings.access == Access::ReadOnly {
        return ToolResult::refused(
            "READ_ONLY",
            "This turn is read_only: commands cannot run. Use read_file, list_files and grep to look around.",
        );
    }
    if args.command.trim().is_empty() {
        return ToolResult::refused(
            "BAD_ARGUMENTS",
            "run: `command` is empty. Send the shell command to run.",
        );
    }
    let longest = settings.run_timeout;
    let timeout = match args.timeout_s {
        None => longest,
        Some(s) if s.is_finite() && s > 0.0 => Duration::from_secs_f64(s.min(1e9)).min(longest),
        Some(s) => {
            return ToolResult::refused(
                "BAD_ARGUMENTS",
                format!(
                    "run: timeout_s {s} is not a positive number of seconds; leave it out for the default ({}) or give at most {}.",
                    seconds(longest),
                    seconds(longest)
                ),
            )
        }
    };
    if cancel.is_cancelled() {
        return ToolResult::refused("CANCELLED", "cancelled before the command started");
    }
    let (confinement, unconfined_note) = match sandbox(settings) {
        Ok(s) => s,
        Err(r) => return r,
    };
    let spec = ProcessSpec {
        program: shell(settings),
        // The shell's own stderr goes to stdout first thing, so everything
        // after it, the command's syntax errors included, arrives in order.
        args: vec!["-c".into(), format!("exec 2>&1\n{}", args.command)],
        cwd: Some(settings.workdir.clone()),
        env: environment(settings),
        env_remove: Vec::new(),
        sandbox: confinement,
    };
    let limits = Limits {
        timeout: Some(timeout),
        idle_timeout: None,
        max_line_bytes: Limits::default().max_line_bytes,
        stderr_tail_bytes: 4 << 10,
        kill_grace: KILL_GRACE,
    };
    let started = Instant::now();
    let mut output = HeadTail::default();
    let exit = run_process_bytes(&spec, &limits, cancel, |bytes| output.push(bytes)).await;
    let elapsed = started.elapsed();
    let exit = match exit {
        Ok(exit) => exit,
        Err(e) => {
            return ToolResult::refused(
                "SPAWN",
                format!(
                    "the command could not start: {e}. Check that the shell exists, or try again."
                ),
            )
        }
    };
    let mut text = output.into_string();
    if !exit.stderr_tail.trim().is_empty() {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&exit.stderr_tail);
    }
    if text.is_empty() {
        text.push_str("(no output)");
    }
    let mut body = text;
    if let Some(note) = unconfined_note {
        if !body.ends_with('\n') {
            body.push('\n');
        }
        body.push_str(&note);
    }
    let took = seconds(elapsed);
    match exit.ended {
        Ended::Timeout | Ended::Idle => ToolResult::refused(
            "TIMEOUT",
            format!(
                "killed after {}; run it with a longer timeout_s, at most {}, or a narrower command. Its output so far:\n{body}",
                seconds(timeout),
                seconds(longest)
            ),
        ),
        Ended::Cancelled => ToolResult::refused(
            "CANCELLED",
            format!("cancelled after {took}; the command was killed. Its output so far:\n{body}"),
        ),
        Ended::Exited => {
            let code = match (exit.exit_code, exit.signal) {
                (Some(code), _) => code,
                (None, Some(signal)) => 128 + signal,
                (None, None) => -1,
            };
            let head = match (exit.exit_code, exit.signal) {
                (None, Some(signal)) => format!("killed by signal {signal} in {took}"),
                _ => format!("exit code {code} in {took}"),
            };
            let message = format!("{head}\n{body}");
            if code == 0 {
                ToolResult::ok(message)
            } else {
                ToolResult::refused(format!("EXIT_{code}"), message)
            }
        }
    }
}

/// The confinement of a run, and the `sandbox: ...` line to add when it is
/// not fully confined; or the refusal when it cannot be had.
fn sandbox(
    settings: &ToolSettings,
) -> Result<(Option<Arc<Confinement>>, Option<String>), ToolResult> {
    let mode = settings.sandbox.unwrap_or(SandboxMode::Enforce);
    match settings.access {
        Access::ReadOnly => {
            return Err(ToolResult::refused(
                "READ_ONLY",
                "This turn is read_only: commands cannot run.",
            ))
        }
        Access::Full => {
            return Ok((None, Some("sandbox: none (full access)".into())));
        }
        Access::Edit => {}
    }
    if mode == SandboxMode::Off {
        return Ok((None, Some("sandbox: off: unconfined".into())));
    }
    let policy = policy(settings);
    match Confinement::prepare(&policy, mode) {
        Ok(confinement) => {
            let report = confinement.report();
            let note = (!report.confined).then(|| format!("sandbox: {}", report.summary()));
            Ok((Some(Arc::new(confinement)), note))
        }
        Err(e) if e.kind() == ErrorKind::Unavailable => Err(ToolResult::refused(
            "SANDBOX_UNAVAILABLE",
            format!(
                "run cannot start: {}. Nothing ran. Continue without running commands (read, edit, and say in finish what you could not check); the user can run the turn with access full or sandbox auto.",
                e.message().trim_end_matches('.')
            ),
        )),
        Err(e) => Err(ToolResult::refused(
            "SANDBOX_UNAVAILABLE",
            format!(
                "run cannot start: the sandbox could not be prepared: {}. Nothing ran; try again.",
                e.message().trim_end_matches('.')
            ),
        )),
    }
}

/// The policy of an `edit` run: the workdir writable (in a linked git
/// worktree — an arena contestant's — also its own git dir and the object
/// store, so `git add` / `git commit` / `git stash` work there while the
/// rest of the repository's `.git` stays read-only), the network of the
/// settings, the credential stores hidden under this process's home and
/// under a `HOME` the settings' environment sets.
fn policy(settings: &ToolSettings) -> SandboxPolicy {
    let home = crate::sandbox::home_dir();
    let mut policy = SandboxPolicy::new(home.as_deref())
        .with_network(settings.network.clone())
        .with_writable(&settings.workdir);
    if let Some(wt) = crate::sandbox::find_worktree(&settings.workdir) {
        policy = policy.with_writable(&wt.git_dir).with_writable(&wt.objects);
    }
    if let Some(other) = settings.env.get("HOME").filter(|h| !h.is_empty()) {
        let other = Path::new(other);
        if other.is_absolute() && Some(other) != home.as_deref() {
            for store in CREDENTIAL_STORES {
                policy.hidden.push(other.join(store));
            }
        }
    }
    policy
}

/// `bash` from `PATH` (the settings' `PATH` when they set one), else
/// `/bin/sh`.
fn shell(settings: &ToolSettings) -> PathBuf {
    let path = settings
        .env
        .get("PATH")
        .map(std::ffi::OsString::from)
        .or_else(|| std::env::var_os("PATH"))
        .unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("bash"))
        .find(|p| is_executable(p))
        .unwrap_or_else(|| PathBuf::from("/bin/sh"))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The environment added to a run: pagers off (stdin is empty, a pager
/// would only get in the way), then the settings' `env`, which wins.
fn environment(settings: &ToolSettings) -> std::collections::BTreeMap<String, String> {
    let mut env: std::collections::BTreeMap<String, String> =
        [("PAGER", "cat"), ("GIT_PAGER", "cat")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
    env.extend(settings.env.clone());
    env
}

/// `1.2 s`, `45 s`, `0.01 s`.
fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 10.0 || s.fract() == 0.0 {
        format!("{s:.0} s")
    } else if s >= 0.1 {
        format!("{s:.1} s")
    } else {
        format!("{s:.2} s")
    }
}

/// A stream's first [`KEEP_HEAD`] and last [`KEEP_TAIL`] bytes, and how
/// many were dropped between them.
#[derive(Default)]
struct HeadTail {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    dropped: u64,
}

impl HeadTail {
    fn push(&mut self, mut bytes: &[u8]) {
        let room = KEEP_HEAD - self.head.len();
        if room > 0 {
            let n = room.min(bytes.len());
            self.head.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
        }
        let skip = bytes.len().saturating_sub(KEEP_TAIL);
        self.dropped += skip as u64;
        let bytes = &bytes[skip..];
        let overflow = (self.tail.len() + bytes.len()).saturating_sub(KEEP_TAIL);
        self.dropped += overflow as u64;
        self.tail.drain(..overflow);
        self.tail.extend(bytes);
    }

    fn into_string(self) -> String {
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        if self.dropped > 0 {
            text.push_str(&format!(
                "\n[... {} bytes of output dropped ...]\n",
                self.dropped
            ));
        }
        text.push_str(&String::from_utf8_lossy(&Vec::from(self.tail)));
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_tail_keeps_both_ends_and_counts_the_middle() {
        let mut kept = HeadTail::default();
        kept.push(b"start ");
        let middle = vec![b'x'; KEEP_HEAD + KEEP_TAIL];
        kept.push(&middle);
        kept.push(b" end");
        let text = kept.into_string();
        assert!(text.starts_with("start xx"));
        assert!(text.ends_with("xx end"));
        assert!(text.contains(&format!("[... {} bytes of output dropped ...]", 6 + 4)));
    }

    #[test]
    fn seconds_read_well() {
        assert_eq!(seconds(Duration::from_secs(45)), "45 s");
        assert_eq!(seconds(Duration::from_millis(1200)), "1.2 s");
        assert_eq!(seconds(Duration::from_millis(12)), "0.01 s");
        assert_eq!(seconds(Duration::from_secs(2)), "2 s");
    }
}
