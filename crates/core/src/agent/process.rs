//! The subprocess runner under every CLI agent (feature `runtime`, Unix).
//!
//! [`run_process`] starts a program in a process group of its own, with
//! stdin on `/dev/null`, and hands its stdout to a callback line by line
//! ([`run_process_bytes`]: in raw chunks, for the flow's command steps)
//! until the program ends, is cancelled, or runs past a limit. What it
//! guarantees, whatever the program does:
//!
//! - **Bounded memory.** A stdout line longer than
//!   [`Limits::max_line_bytes`] is cut to that bound (on a char boundary)
//!   and the rest of it, up to the newline, is discarded unread into memory;
//!   stderr is drained as it comes into a tail of at most
//!   [`Limits::stderr_tail_bytes`].
//! - **Limits.** A wall-clock [`Limits::timeout`] and an
//!   [`Limits::idle_timeout`]: no stdout line that the callback counted as
//!   activity for that long means the program hung.
//! - **No survivors.** On cancel, timeout or idle the whole group gets
//!   SIGTERM, then SIGKILL after [`Limits::kill_grace`]. After the leader
//!   exits — for any reason, a clean exit included — the group gets
//!   SIGKILL, so grandchildren it left behind (qwen and codex start some)
//!   die with it. If the future is dropped midway, a guard SIGKILLs the
//!   group. The leader is always reaped (tokio reaps a dropped child).
//!
//! The group is signalled by the leader's pid. Once the leader is reaped
//! the number stays reserved while any member of its group lives (the
//! kernel frees a pid only when no process uses it as pid, group or
//! session id), so the after-exit SIGKILL reaches exactly the leftovers; if
//! none are left it finds nothing, barring a wrap of the whole pid space in
//! the microseconds between the reap and the signal.

use crate::sandbox::Confinement;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::collections::BTreeMap;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};
use tokio::process::Command;
use tokio::time::{sleep_until, Instant};
use tokio_util::sync::CancellationToken;

/// What to run: a program, its arguments, where, and with which
/// environment (the parent's, plus `env`, minus `env_remove`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProcessSpec {
    /// The program: a path, or a bare name looked up on `PATH`.
    pub program: PathBuf,
    /// Its arguments, passed as they are (no shell).
    pub args: Vec<String>,
    /// The working directory (`None`: the parent's).
    pub cwd: Option<PathBuf>,
    /// Variables added to the inherited environment (they win over it).
    pub env: BTreeMap<String, String>,
    /// Inherited variables removed before `env` is applied.
    pub env_remove: Vec<String>,
    /// The sandbox the program starts in (`None`: unconfined). Applied in
    /// the child before `exec`, after the process group and the parent-death
    /// signal; its private temp dir becomes `TMPDIR`.
    pub sandbox: Option<Arc<Confinement>>,
}

/// How long a process may run and how much of its output is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Wall-clock limit from spawn (`None`: none).
    pub timeout: Option<Duration>,
    /// Longest time without an activity line on stdout (`None`: none).
    pub idle_timeout: Option<Duration>,
    /// Longest stdout line handed to the callback, in bytes (default 4 MiB).
    pub max_line_bytes: usize,
    /// How much of the end of stderr is kept, in bytes (default 8 KiB).
    pub stderr_tail_bytes: usize,
    /// Time between SIGTERM and SIGKILL to the group (default 5 s).
    pub kill_grace: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout: None,
            idle_timeout: None,
            max_line_bytes: 4 << 20,
            stderr_tail_bytes: 8 << 10,
            kill_grace: Duration::from_secs(5),
        }
    }
}

/// Why the process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ended {
    /// It exited (or was killed) on its own.
    Exited,
    /// The wall-clock timeout passed and it was killed.
    Timeout,
    /// No activity for the idle timeout: it was killed as hung.
    Idle,
    /// The cancellation token fired and it was killed.
    Cancelled,
}

/// How a process ended, with the evidence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessExit {
    /// Why it ended.
    pub ended: Ended,
    /// Its exit code, when it exited rather than died of a signal.
    pub exit_code: Option<i32>,
    /// The signal that ended it, when one did.
    pub signal: Option<i32>,
    /// The last [`Limits::stderr_tail_bytes`] of stderr (at most), cut on a
    /// char boundary; invalid UTF-8 is replaced.
    pub stderr_tail: String,
    /// The leader's pid, which is also its process group id.
    pub pid: u32,
    /// How many stdout lines were cut to [`Limits::max_line_bytes`].
    pub truncated_lines: u64,
}

/// Linux: the group leader gets SIGKILL when this process dies, however it
/// dies (kill -9 included), so an agent never outlives the server that ran
/// it; a rescued task then starts a fresh agent, never next to an orphan.
/// (Processes the leader started live on in its group until they end; a
/// kill -9 gives nobody the chance to signal the group.)
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn die_with_parent(cmd: &mut Command) {
    let parent = nix::unistd::getpid();
    // SAFETY: the closure runs in the child between fork and exec. It makes
    // only async-signal-safe system calls (prctl, getppid), allocates
    // nothing and touches no state shared with the parent.
    unsafe {
        cmd.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                .map_err(io::Error::from)?;
            // The parent may have died before prctl: then nobody would
            // deliver the signal.
            if nix::unistd::getppid() != parent {
                return Err(io::Error::other(
                    "the parent exited before the agent started",
                ));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_cmd: &mut Command) {}

/// Runs `spec` to its end, calling `on_line` with each stdout line (without
/// its newline; invalid UTF-8 replaced). `on_line` returns whether the line
/// counts as activity for the idle timeout.
///
/// Errors only when the program cannot be started (the message names it;
/// a missing program is [`io::ErrorKind::NotFound`]) or waiting for it
/// fails; every other ending is a [`ProcessExit`]. See the module docs for
/// the guarantees.
pub async fn run_process(
    spec: &ProcessSpec,
    limits: &Limits,
    cancel: &CancellationToken,
    on_line: impl FnMut(&str) -> bool,
) -> io::Result<ProcessExit> {
    run(spec, limits, cancel, Sink::<_, fn(&[u8])>::Lines(on_line)).await
}

/// Runs `spec` like [`run_process`], but hands stdout to `on_bytes` as raw
/// chunks as they arrive (no line splitting, so binary output and a last
/// line without a newline arrive intact; [`Limits::max_line_bytes`] does
/// not apply). Every chunk counts as activity for the idle timeout.
/// `truncated_lines` of the exit is always 0.
pub async fn run_process_bytes(
    spec: &ProcessSpec,
    limits: &Limits,
    cancel: &CancellationToken,
    on_bytes: impl FnMut(&[u8]),
) -> io::Result<ProcessExit> {
    run(
        spec,
        limits,
        cancel,
        Sink::<fn(&str) -> bool, _>::Bytes(on_bytes),
    )
    .await
}

/// Where stdout goes: whole lines (the agents' JSON streams) or raw chunks
/// (command steps, whose stdout is kept verbatim). Generic rather than
/// `dyn` so the run's future is `Send` exactly when the callback is.
enum Sink<L, B> {
    Lines(L),
    Bytes(B),
}

/// The stdout side of a run, read one piece per call.
enum StdoutReader<R, L, B> {
    Lines(LineReader<BufReader<R>>, L),
    Bytes(R, Vec<u8>, B),
}

impl<R: AsyncRead + Unpin, L: FnMut(&str) -> bool, B: FnMut(&[u8])> StdoutReader<R, L, B> {
    /// Reads the next line or chunk and hands it on: `None` at the end (or
    /// on a read error: on a pipe it means nothing more will come),
    /// otherwise whether it counted as activity. Cancel-safe: the only
    /// await is the read, and the callback runs after it synchronously.
    async fn pump(&mut self) -> Option<bool> {
        match self {
            StdoutReader::Lines(lines, on_line) => match lines.next_line().await {
                Ok(Some(line)) => Some(on_line(&line)),
                Ok(None) | Err(_) => None,
            },
            StdoutReader::Bytes(reader, chunk, on_bytes) => match reader.read(chunk).await {
                Ok(n) if n > 0 => {
                    on_bytes(&chunk[..n]);
                    Some(true)
                }
                _ => None,
            },
        }
    }

    fn truncated_lines(&self) -> u64 {
        match self {
            StdoutReader::Lines(lines, _) => lines.truncated,
            StdoutReader::Bytes(..) => 0,
        }
    }
}

async fn run<L: FnMut(&str) -> bool, B: FnMut(&[u8])>(
    spec: &ProcessSpec,
    limits: &Limits,
    cancel: &CancellationToken,
    sink: Sink<L, B>,
) -> io::Result<ProcessExit> {
    let mut cmd = Command::new(&spec.program);
    cmd.args(&spec.args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(dir) = &spec.cwd {
        cmd.current_dir(dir);
    }
    for name in &spec.env_remove {
        cmd.env_remove(name);
    }
    cmd.envs(&spec.env);
    die_with_parent(&mut cmd);
    if let Some(sandbox) = &spec.sandbox {
        sandbox.apply(cmd.as_std_mut());
    }
    let mut child = cmd.spawn().map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("cannot start {}: {e}", spec.program.display()),
        )
    })?;
    let pid = child
        .id()
        .ok_or_else(|| io::Error::other("the child exited before its pid was read"))?;
    let mut guard = GroupGuard(Some(Pid::from_raw(pid as i32)));
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(io::Error::other("the child's pipes were not created"));
    };
    let mut stdout = match sink {
        Sink::Lines(on_line) => StdoutReader::Lines(
            LineReader::new(BufReader::new(stdout), limits.max_line_bytes.max(1)),
            on_line,
        ),
        Sink::Bytes(on_bytes) => StdoutReader::Bytes(stdout, vec![0u8; 64 << 10], on_bytes),
    };
    let mut stderr = Some(stderr);
    let mut tail = Tail::new(limits.stderr_tail_bytes);
    let mut chunk = vec![0u8; 8192];

    let deadline = limits.timeout.map(|t| Instant::now() + t);
    let mut last_activity = Instant::now();
    let mut ended: Option<Ended> = None;
    let mut kill_at: Option<Instant> = None;
    let mut status: Option<ExitStatus> = None;
    let mut drain_until: Option<Instant> = None;
    let mut stdout_open = true;

    while status.is_none() || stdout_open || stderr.is_some() {
        let running = status.is_none();
        let watching = running && ended.is_none();
        let idle_at = limits.idle_timeout.map(|d| last_activity + d);
        tokio::select! {
            piece = stdout.pump(), if stdout_open => match piece {
                Some(true) => last_activity = Instant::now(),
                Some(false) => {}
                None => stdout_open = false,
            },
            n = read_some(&mut stderr, &mut chunk), if stderr.is_some() => match n {
                Ok(n) if n > 0 => tail.push(&chunk[..n]),
                _ => stderr = None,
            },
            exit = child.wait(), if running => {
                status = Some(exit?);
                guard.kill(Signal::SIGKILL);
                guard.disarm();
                // Leftovers outside the group could keep the pipes open.
                drain_until = Some(Instant::now() + limits.kill_grace);
            },
            _ = cancel.cancelled(), if watching => {
                ended = Some(Ended::Cancelled);
                kill_at = Some(guard.terminate(limits.kill_grace));
            },
            _ = sleep_until(deadline.unwrap_or_else(Instant::now)), if watching && deadline.is_some() => {
                ended = Some(Ended::Timeout);
                kill_at = Some(guard.terminate(limits.kill_grace));
            },
            _ = sleep_until(idle_at.unwrap_or_else(Instant::now)), if watching && idle_at.is_some() => {
                ended = Some(Ended::Idle);
                kill_at = Some(guard.terminate(limits.kill_grace));
            },
            _ = sleep_until(kill_at.unwrap_or_else(Instant::now)), if running && kill_at.is_some() => {
                guard.kill(Signal::SIGKILL);
                kill_at = None;
            },
            _ = sleep_until(drain_until.unwrap_or_else(Instant::now)), if drain_until.is_some() => break,
        }
    }

    let status = status.ok_or_else(|| io::Error::other("the child was never reaped"))?;
    Ok(ProcessExit {
        ended: ended.unwrap_or(Ended::Exited),
        exit_code: status.code(),
        signal: status.signal(),
        stderr_tail: tail.into_string(),
        pid,
        truncated_lines: stdout.truncated_lines(),
    })
}

async fn read_some<R: AsyncRead + Unpin>(
    reader: &mut Option<R>,
    buf: &mut [u8],
) -> io::Result<usize> {
    match reader {
        Some(r) => r.read(buf).await,
        None => Ok(0),
    }
}

/// Signals the child's process group; SIGKILLs it when dropped armed.
struct GroupGuard(Option<Pid>);

impl GroupGuard {
    fn kill(&self, signal: Signal) {
        if let Some(pgid) = self.0 {
            // ESRCH (the group is already gone) is the outcome we want.
            let _ = killpg(pgid, signal);
        }
    }

    /// SIGTERM now; returns when SIGKILL is due.
    fn terminate(&self, grace: Duration) -> Instant {
        self.kill(Signal::SIGTERM);
        Instant::now() + grace
    }

    fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill(Signal::SIGKILL);
    }
}

/// Reads lines of at most `max` bytes; the excess of a longer line is
/// consumed from the reader's buffer and dropped, never accumulated.
///
/// `next_line` is cancel-safe: its only await is `fill_buf`, and the bytes
/// of a partial line live in `self`, so a `select!` that drops it loses
/// nothing.
struct LineReader<R> {
    reader: R,
    max: usize,
    line: Vec<u8>,
    /// The current line passed `max`: skip to its newline.
    skipping: bool,
    truncated: u64,
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    fn new(reader: R, max: usize) -> Self {
        LineReader {
            reader,
            max,
            line: Vec::new(),
            skipping: false,
            truncated: 0,
        }
    }

    /// The next line, `None` at the end (a last line without a newline is
    /// still a line).
    async fn next_line(&mut self) -> io::Result<Option<String>> {
        loop {
            let buf = self.reader.fill_buf().await?;
            if buf.is_empty() {
                if self.line.is_empty() && !self.skipping {
                    return Ok(None);
                }
                self.skipping = false;
                return Ok(Some(self.take()));
            }
            let (upto, newline) = match memchr::memchr(b'\n', buf) {
                Some(i) => (i, true),
                None => (buf.len(), false),
            };
            if !self.skipping {
                let room = self.max - self.line.len();
                if upto > room {
                    self.line.extend_from_slice(&buf[..room]);
                    self.skipping = true;
                    self.truncated += 1;
                } else {
                    self.line.extend_from_slice(&buf[..upto]);
                }
            }
            self.reader.consume(upto + usize::from(newline));
            if newline {
                self.skipping = false;
                return Ok(Some(self.take()));
            }
        }
    }

    fn take(&mut self) -> String {
        let mut bytes = std::mem::take(&mut self.line);
        if bytes.last() == Some(&b'\r') {
            bytes.pop();
        }
        // A cut can split the last char: drop its incomplete bytes.
        if let Err(e) = std::str::from_utf8(&bytes) {
            if e.error_len().is_none() {
                bytes.truncate(e.valid_up_to());
            }
        }
        String::from_utf8(bytes)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }
}

/// The last `cap` bytes of a stream (the oracle keeps its commands' output
/// tails with it too).
pub(crate) struct Tail {
    cap: usize,
    buf: Vec<u8>,
}

impl Tail {
    pub(crate) fn new(cap: usize) -> Self {
        Tail {
            cap,
            buf: Vec::new(),
        }
    }

    pub(crate) fn push(&mut self, bytes: &[u8]) {
        let bytes = &bytes[bytes.len().saturating_sub(self.cap)..];
        let overflow = (self.buf.len() + bytes.len()).saturating_sub(self.cap);
        self.buf.drain(..overflow);
        self.buf.extend_from_slice(bytes);
    }

    /// The tail from its first char boundary on (a cut can land inside a
    /// char: its continuation bytes are dropped).
    pub(crate) fn into_string(self) -> String {
        let start = self
            .buf
            .iter()
            .take(3)
            .position(|b| b & 0xC0 != 0x80)
            .unwrap_or(0);
        String::from_utf8_lossy(&self.buf[start..]).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines_of(input: &[u8], max: usize) -> (Vec<String>, u64) {
        // A tiny buffer so lines span many fill_buf calls.
        let mut r = LineReader::new(BufReader::with_capacity(3, input), max);
        let mut out = Vec::new();
        while let Some(l) = r.next_line().await.unwrap() {
            out.push(l);
        }
        (out, r.truncated)
    }

    #[tokio::test]
    async fn lines_are_split_and_bounded_by_table() {
        let cases: &[(&[u8], usize, &[&str], u64)] = &[
            (b"", 10, &[], 0),
            (b"a\nb\n", 10, &["a", "b"], 0),
            (b"a\r\nlast", 10, &["a", "last"], 0),
            (b"\n\n", 10, &["", ""], 0),
            (b"0123456789abc\nok\n", 4, &["0123", "ok"], 1),
            (b"0123456789abc", 4, &["0123"], 1),
            (b"abcd\n", 4, &["abcd"], 0),
            // "é" is two bytes: a cut after one of them drops it whole.
            ("aé\n".as_bytes(), 2, &["a"], 1),
            (b"\xff\n", 4, &["\u{fffd}"], 0),
        ];
        for (input, max, want, truncated) in cases {
            let (got, t) = lines_of(input, *max).await;
            assert_eq!(got, *want, "{input:?}");
            assert_eq!(t, *truncated, "{input:?}");
        }
    }

    #[test]
    fn the_tail_keeps_the_last_bytes_on_a_char_boundary() {
        let mut t = Tail::new(5);
        t.push(b"abc");
        t.push(b"defgh");
        assert_eq!(t.into_string(), "defgh");
        let mut t = Tail::new(5);
        t.push("ééé".as_bytes());
        assert_eq!(t.into_string(), "éé");
        let mut t = Tail::new(0);
        t.push(b"abc");
        assert_eq!(t.into_string(), "");
    }
}
