//! Command steps as processes (feature `runtime`, Unix).
//!
//! [`run_command`] runs a [`CommandRequest`] — an argv or an `sh -c`
//! script, in a directory [`confine_dir`] admitted — through the agents'
//! subprocess runner ([`crate::agent::process`]), so a command step gets
//! the same guarantees as an agent:
//!
//! - its own process group, stdin on `/dev/null`, and (Linux) SIGKILL when
//!   this process dies, kill -9 included;
//! - on timeout or cancel the whole group gets SIGTERM, then SIGKILL after
//!   [`CommandRequest::kill_grace`];
//! - **after the leader exits, for any reason, the group gets SIGKILL.** A
//!   step is over when its command is: a grandchild it backgrounded
//!   (`server &`) dies with it rather than hold stdout open and hang the
//!   step. Reading stops once stdout and stderr close; a process that left
//!   the group (`setsid`) and still holds a pipe is waited for at most
//!   `kill_grace` after the leader's exit, then the step ends without it;
//! - bounded memory: stdout is read as raw bytes (binary output and a last
//!   line without a newline are kept as they are) into a ring of the last
//!   [`CommandRequest::max_stdout`] bytes; stderr into an 8 KiB tail;
//! - **a sandbox** ([`crate::sandbox`]): by default ([`default_policy`])
//!   the command may write only in its `cwd` and a private `TMPDIR`, has
//!   no network but its own loopback, cannot read the credential stores
//!   under `$HOME`, and its whole process tree lives in a PID namespace
//!   that dies with it — under mode `enforce`, which refuses to start what
//!   the kernel cannot confine. [`CommandRequest::sandbox`] widens or
//!   narrows that; [`CommandOutcome::sandbox`] says what was enforced.

use crate::agent::process::{run_process_bytes, Ended, Limits, ProcessSpec, Tail};
use crate::error::Error;
use crate::sandbox::{Confinement, SandboxMode, SandboxOverrides, SandboxPolicy, SandboxReport};
use nix::errno::Errno;
use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// How much of the end of stdout a step keeps by default: 1 MiB.
pub const DEFAULT_MAX_STDOUT: usize = 1 << 20;

/// How much of the end of stderr an outcome keeps: 8 KiB.
const STDERR_TAIL_BYTES: usize = 8 << 10;

/// The default time between SIGTERM and SIGKILL to the group.
const DEFAULT_KILL_GRACE: Duration = Duration::from_secs(2);

/// What a command step runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Program {
    /// A program and its arguments, passed verbatim (no shell, no
    /// splitting, no globbing); `argv[0]` is looked up on `PATH` unless it
    /// contains a `/`.
    Argv(Vec<String>),
    /// A script run by `sh -c` (`sh` looked up on `PATH`).
    Shell(String),
}

/// The default policy of a command step running in `cwd`: writable only
/// `cwd` (and the private `TMPDIR` every confinement adds), network `deny`
/// (its own loopback up), the credential stores under `$HOME` hidden,
/// processes isolated ([`SandboxPolicy::new`] plus `cwd`).
pub fn default_policy(cwd: &Path) -> SandboxPolicy {
    SandboxPolicy::new(crate::sandbox::home_dir().as_deref()).with_writable(cwd)
}

/// The sandbox a command starts in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandSandbox {
    /// `policy` is prepared under `mode` when the command starts
    /// ([`Confinement::prepare`]): `enforce` refuses with `unavailable`
    /// what the kernel cannot confine, `auto` runs with what it can and
    /// lists the rest in the report, `off` confines nothing.
    Policy {
        /// What the process may touch (boxed: a policy is many times the
        /// size of the other variant).
        policy: Box<SandboxPolicy>,
        /// How strictly.
        mode: SandboxMode,
    },
    /// A confinement the caller already prepared (its report is the
    /// outcome's). Keep one per process tree: its private `TMPDIR` is
    /// removed when the last clone is dropped.
    Prepared(Arc<Confinement>),
}

/// One command to run: what, where, with which additions to the
/// environment, in which sandbox, and within which bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandRequest {
    /// What runs.
    pub program: Program,
    /// The working directory, already confined by the caller (see
    /// [`confine_dir`]); it must exist.
    pub cwd: PathBuf,
    /// Variables added to the inherited environment (they win over it).
    pub env: BTreeMap<String, String>,
    /// Wall-clock limit from spawn; `None`: no limit.
    pub timeout: Option<Duration>,
    /// How many bytes of the end of stdout are kept (default
    /// [`DEFAULT_MAX_STDOUT`]).
    pub max_stdout: usize,
    /// Time between SIGTERM and SIGKILL to the group (default 2 s).
    pub kill_grace: Duration,
    /// The sandbox (default: [`default_policy`] of `cwd` under `enforce`).
    pub sandbox: CommandSandbox,
}

impl CommandRequest {
    /// A request with the defaults: no added environment, no timeout,
    /// [`DEFAULT_MAX_STDOUT`], a 2 s kill grace, and the sandbox of
    /// [`default_policy`] for `cwd` under mode `enforce`.
    pub fn new(program: Program, cwd: PathBuf) -> Self {
        let policy = default_policy(&cwd);
        CommandRequest {
            program,
            cwd,
            env: BTreeMap::new(),
            timeout: None,
            max_stdout: DEFAULT_MAX_STDOUT,
            kill_grace: DEFAULT_KILL_GRACE,
            sandbox: CommandSandbox::Policy {
                policy: Box::new(policy),
                mode: SandboxMode::Enforce,
            },
        }
    }

    /// The same request with the sandbox a user stated (a flow step's
    /// `sandbox:`): [`default_policy`] of [`CommandRequest::cwd`] merged
    /// with `overrides` ([`SandboxPolicy::merge`]: extra writable and
    /// readable paths added, the network and each limit given replacing
    /// the default's), under `overrides.mode`, or `mode` when it states
    /// none. The paths are taken as they are: check them first
    /// ([`SandboxOverrides::validate`]).
    pub fn with_sandbox(mut self, overrides: &SandboxOverrides, mode: SandboxMode) -> Self {
        self.sandbox = CommandSandbox::Policy {
            policy: Box::new(default_policy(&self.cwd).merge(overrides)),
            mode: overrides.mode.unwrap_or(mode),
        };
        self
    }
}

/// How a command ended, with its output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandOutcome {
    /// Its exit code; `None` when a signal ended it (or, for a token
    /// cancelled before the start, when it never ran).
    pub exit_code: Option<i32>,
    /// The signal that ended it, when one did.
    pub signal: Option<i32>,
    /// The last [`CommandRequest::max_stdout`] bytes of stdout as UTF-8,
    /// invalid sequences replaced by U+FFFD. When the front was cut inside
    /// a char, the rest of that char is dropped rather than replaced.
    pub stdout: String,
    /// Bytes were dropped from the front of stdout to keep it bounded.
    pub stdout_truncated: bool,
    /// The last 8 KiB of stderr (at most), from a char boundary on.
    pub stderr_tail: String,
    /// Wall-clock time from just before the spawn to the end, in ms.
    pub duration_ms: u64,
    /// It was killed because [`CommandRequest::timeout`] passed.
    pub timed_out: bool,
    /// It was killed (or never started) because the token was cancelled.
    pub cancelled: bool,
    /// What its sandbox enforced, as the kernel applied it (the Landlock
    /// ABI, the writable paths, the network, what `auto` could not enforce
    /// and why); `None` only when it never started (a token cancelled
    /// before the start).
    pub sandbox: Option<SandboxReport>,
}

impl CommandOutcome {
    /// True when the command exited with code 0 on its own: not killed by
    /// a signal, not timed out, not cancelled.
    pub fn success(&self) -> bool {
        self.exit_code == Some(0) && self.signal.is_none() && !self.timed_out && !self.cancelled
    }
}

/// Runs `request` to its end: it exits, the timeout passes, or `cancel`
/// fires. Whatever happens, no process of its group is left when this
/// returns (the group is SIGKILLed after the leader exits; see the module
/// docs), and the whole group dies with this process. If the future is
/// dropped midway, the group is SIGKILLed too. A token already cancelled
/// starts nothing and answers `cancelled`.
///
/// Errors only when the command cannot start: an empty argv, a missing
/// working directory, or a program that is not found or not executable
/// are `invalid_input` naming it and saying what to do; a sandbox that
/// mode `enforce` cannot confine is `unavailable` naming what the kernel
/// lacks (details `missing`), and nothing is started; other spawn (or
/// wait) failures, or a private `TMPDIR` that cannot be made, are `io`. A
/// command that starts and fails is an `Ok` outcome whose
/// [`CommandOutcome::success`] is false; the outcome of every command that
/// started has its [`CommandOutcome::sandbox`].
pub async fn run_command(
    request: CommandRequest,
    cancel: CancellationToken,
) -> Result<CommandOutcome, Error> {
    let (program, args) = match &request.program {
        Program::Argv(argv) => match argv.split_first() {
            Some((first, rest)) if !first.is_empty() => (first.clone(), rest.to_vec()),
            _ => {
                return Err(Error::invalid_input(
                    "a command's argv is empty or its program is an empty string: give the program as its first element",
                ))
            }
        },
        Program::Shell(script) => ("sh".to_owned(), vec!["-c".to_owned(), script.clone()]),
    };
    // A missing cwd fails the spawn with ENOENT too, which would read as
    // "program not found": tell the two apart before spawning.
    if !request.cwd.is_dir() {
        return Err(Error::invalid_input(format!(
            "the working directory {} does not exist or is not a directory: create it or give an existing one",
            request.cwd.display()
        ))
        .with_detail("cwd", request.cwd.display().to_string()));
    }
    let started = Instant::now();
    if cancel.is_cancelled() {
        return Ok(CommandOutcome {
            exit_code: None,
            signal: None,
            stdout: String::new(),
            stdout_truncated: false,
            stderr_tail: String::new(),
            duration_ms: 0,
            timed_out: false,
            cancelled: true,
            sandbox: None,
        });
    }
    let confinement = match request.sandbox {
        CommandSandbox::Policy { policy, mode } => Arc::new(Confinement::prepare(&policy, mode)?),
        CommandSandbox::Prepared(confinement) => confinement,
    };
    let report = confinement.report().clone();
    let spec = ProcessSpec {
        program: PathBuf::from(&program),
        args,
        cwd: Some(request.cwd.clone()),
        env: request.env,
        env_remove: Vec::new(),
        sandbox: Some(confinement),
    };
    let limits = Limits {
        timeout: request.timeout,
        idle_timeout: None,
        max_line_bytes: Limits::default().max_line_bytes,
        stderr_tail_bytes: STDERR_TAIL_BYTES,
        kill_grace: request.kill_grace,
    };
    let mut ring = Ring::new(request.max_stdout);
    let exit = run_process_bytes(&spec, &limits, &cancel, |bytes| ring.push(bytes))
        .await
        .map_err(|e| spawn_error(&program, &request.cwd, e))?;
    let (stdout, stdout_truncated) = ring.into_string();
    Ok(CommandOutcome {
        exit_code: exit.exit_code,
        signal: exit.signal,
        stdout,
        stdout_truncated,
        stderr_tail: exit.stderr_tail,
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        timed_out: exit.ended == Ended::Timeout,
        cancelled: exit.ended == Ended::Cancelled,
        sandbox: Some(report),
    })
}

/// The error for a command that could not start (the runner's message
/// already names the program).
fn spawn_error(program: &str, cwd: &Path, e: io::Error) -> Error {
    let not_executable = e.kind() == io::ErrorKind::PermissionDenied
        || e.raw_os_error() == Some(Errno::ENOEXEC as i32);
    let error = if e.kind() == io::ErrorKind::NotFound {
        Error::invalid_input(format!(
            "{e}: `{program}` was not found{}; install it, or give its full path",
            if program.contains('/') {
                ""
            } else {
                " on PATH"
            }
        ))
    } else if not_executable {
        Error::invalid_input(format!(
            "{e}: `{program}` is not an executable program; make it executable (chmod +x), or run it through a shell step"
        ))
    } else {
        Error::io(format!("{e} (in {})", cwd.display()))
    };
    error.with_detail("program", program)
}

/// The last `cap` bytes of a stream, in a ring: pushing is O(bytes pushed)
/// however long the stream, and memory stays at `cap`.
struct Ring {
    cap: usize,
    buf: VecDeque<u8>,
    dropped: bool,
}

impl Ring {
    fn new(cap: usize) -> Self {
        Ring {
            cap,
            // Grows with the output: a step that prints little costs little.
            buf: VecDeque::new(),
            dropped: false,
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        let skip = bytes.len().saturating_sub(self.cap);
        let bytes = &bytes[skip..];
        let overflow = (self.buf.len() + bytes.len()).saturating_sub(self.cap);
        if skip > 0 || overflow > 0 {
            self.dropped = true;
        }
        self.buf.drain(..overflow);
        self.buf.extend(bytes);
    }

    /// The kept bytes as a string, and whether any were dropped.
    fn into_string(self) -> (String, bool) {
        let bytes = Vec::from(self.buf);
        if !self.dropped {
            return (String::from_utf8_lossy(&bytes).into_owned(), false);
        }
        // The cut may have split a char: its continuation bytes go with it.
        let mut tail = Tail::new(bytes.len());
        tail.push(&bytes);
        (tail.into_string(), true)
    }
}

/// The directory a step may run in: `requested` (a relative path is taken
/// from `base`; an absolute one as it is) or `base` when `None`,
/// canonicalized, so `..` and symlinks are resolved before the check. It
/// must exist, be a directory, and lie under one of `roots` (compared by
/// whole path components; each root is canonicalized too when it exists).
/// Empty `roots` means no confinement. A path that leads outside, through
/// `..` or a symlink, is refused.
///
/// Refusals are `invalid_input` naming the path and the roots (details
/// `path`, `roots`).
pub fn confine_dir(
    requested: Option<&str>,
    base: &Path,
    roots: &[PathBuf],
) -> Result<PathBuf, Error> {
    let wanted = match requested {
        Some(dir) => base.join(dir),
        None => base.to_path_buf(),
    };
    let shown = requested.map_or_else(|| base.display().to_string(), str::to_owned);
    let roots_shown: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
    let refuse = |why: String| {
        Error::invalid_input(why)
            .with_detail("path", shown.clone())
            .with_detail("roots", roots_shown.clone())
    };
    let canonical = std::fs::canonicalize(&wanted).map_err(|e| {
        refuse(format!(
            "the working directory {shown:?} ({}) cannot be used: {e}; give an existing directory",
            wanted.display()
        ))
    })?;
    if !canonical.is_dir() {
        return Err(refuse(format!(
            "the working directory {shown:?} ({}) is not a directory; give a directory",
            canonical.display()
        )));
    }
    if roots.is_empty() {
        return Ok(canonical);
    }
    let inside = roots.iter().any(|root| {
        // The caller passes canonical roots; canonicalizing again costs a
        // syscall and makes a non-canonical one (a symlinked /tmp) work.
        let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.clone());
        canonical.starts_with(&root)
    });
    if !inside {
        return Err(refuse(format!(
            "the working directory {shown:?} resolves to {}, which is outside the project roots [{}]; give a directory inside one of them",
            canonical.display(),
            roots_shown.join(", ")
        )));
    }
    Ok(canonical)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ring_keeps_the_last_bytes() {
        let mut r = Ring::new(4);
        r.push(b"ab");
        assert_eq!(r.into_string(), ("ab".to_owned(), false));
        let mut r = Ring::new(4);
        r.push(b"ab");
        r.push(b"cd");
        assert_eq!(r.into_string(), ("abcd".to_owned(), false));
        let mut r = Ring::new(4);
        r.push(b"abc");
        r.push(b"def");
        assert_eq!(r.into_string(), ("cdef".to_owned(), true));
        let mut r = Ring::new(4);
        r.push(b"0123456789");
        assert_eq!(r.into_string(), ("6789".to_owned(), true));
        // "é" cut in half at the front: its second byte goes too.
        let mut r = Ring::new(3);
        r.push("éab".as_bytes());
        assert_eq!(r.into_string(), ("ab".to_owned(), true));
        let mut r = Ring::new(0);
        r.push(b"x");
        assert_eq!(r.into_string(), (String::new(), true));
        let mut r = Ring::new(4);
        r.push(b"\xff\x00");
        assert_eq!(r.into_string(), ("\u{fffd}\0".to_owned(), false));
    }
}
