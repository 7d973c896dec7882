//! Running the `git` program: a scrubbed environment, stdin fed from a
//! thread (no pipe deadlock), typed errors.

use crate::error::Error;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// Variables that would point git at another repository, index or object
/// store, or change how it reads paths: coderig's invocations must act on
/// exactly the directories it names, even when coderig itself runs inside a
/// git hook.
const SCRUBBED: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
    "GIT_CEILING_DIRECTORIES",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
    "GIT_QUARANTINE_PATH",
    "GIT_REPLACE_REF_BASE",
    "GIT_SHALLOW_FILE",
    "GIT_GRAFT_FILE",
    "GIT_EXTERNAL_DIFF",
    "GIT_DIFF_OPTS",
    "GIT_LITERAL_PATHSPECS",
    "GIT_GLOB_PATHSPECS",
    "GIT_NOGLOB_PATHSPECS",
    "GIT_ICASE_PATHSPECS",
];

/// The most of a failing command's stderr an error carries.
const STDERR_TAIL: usize = 2000;

/// A `git` invocation in `cwd`, with the environment scrubbed, optional
/// locks off (so a read never rewrites the index), hooks off (no
/// `post-checkout` on `worktree add`, no `reference-transaction` on
/// `update-ref`: coderig's plumbing must not run the repository's code)
/// and messages in C.
pub(super) fn git(program: &Path, cwd: &Path) -> Command {
    let mut cmd = Command::new(program);
    cmd.current_dir(cwd);
    for var in SCRUBBED {
        cmd.env_remove(var);
    }
    cmd.env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_ADVICE", "0")
        .env("LC_ALL", "C")
        .env_remove("LANGUAGE")
        .args(["--no-pager", "-c", "core.hooksPath=/dev/null"]);
    cmd
}

fn describe(cmd: &Command) -> String {
    let args: Vec<String> = cmd
        .get_args()
        .skip(3) // --no-pager -c core.hooksPath=/dev/null
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    format!("git {}", args.join(" "))
}

/// The last [`STDERR_TAIL`] bytes of `stderr`, lossily decoded and trimmed.
pub(super) fn tail(stderr: &[u8]) -> String {
    let start = stderr.len().saturating_sub(STDERR_TAIL);
    String::from_utf8_lossy(&stderr[start..]).trim().to_owned()
}

/// Runs `cmd`, feeding `stdin` when given. A missing program is
/// `unavailable`; failing to start or to wait is `io`. The exit status is
/// the caller's to judge.
pub(super) fn run(cmd: &mut Command, stdin: Option<&[u8]>) -> Result<Output, Error> {
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Error::unavailable(format!(
                "the git program {:?} is not installed or not on PATH; this repository needs it ({})",
                cmd.get_program(),
                describe(cmd)
            ))
            .with_detail("program", cmd.get_program().to_string_lossy().as_ref())
        } else {
            Error::io(format!("cannot start {}: {e}", describe(cmd)))
        }
    })?;
    let output = std::thread::scope(|scope| {
        if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
            // A git that exits early closes the pipe; its exit status says why.
            scope.spawn(move || {
                let _ = pipe.write_all(input);
            });
        }
        child.wait_with_output()
    });
    output.map_err(|e| Error::io(format!("waiting for {}: {e}", describe(cmd))))
}

/// Runs `cmd` and returns its stdout; a non-zero exit is an `io` error
/// carrying the command, the exit code and the stderr tail.
pub(super) fn run_ok(cmd: &mut Command, stdin: Option<&[u8]>) -> Result<Vec<u8>, Error> {
    let output = run(cmd, stdin)?;
    if output.status.success() {
        Ok(output.stdout)
    } else {
        Err(failed(cmd, &output))
    }
}

/// The `io` error for a command that exited non-zero.
pub(super) fn failed(cmd: &Command, output: &Output) -> Error {
    let stderr = tail(&output.stderr);
    Error::io(format!("{} failed: {stderr}", describe(cmd)))
        .with_detail("stderr_tail", stderr.as_str())
        .with_detail(
            "exit_code",
            output
                .status
                .code()
                .map_or(serde_json::Value::Null, Into::into),
        )
}

/// stdout as one trimmed line of text.
pub(super) fn line(stdout: &[u8]) -> String {
    String::from_utf8_lossy(stdout).trim().to_owned()
}
