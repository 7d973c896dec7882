//! Subcommands of the `coderig` binary, one module each, and the exit codes
//! they share.
//!
//! Exit codes are the core's [`coderig::ErrorKind::exit_code`]: 0 success;
//! 1 refused (`not_found`, `ambiguous`, `guard`, `no_op`,
//! `hashline_mismatch`, `not_found_id`, `conflict`, a failed or cancelled
//! battle); 2 bad input or usage (`invalid_input`, unreadable JSON; clap's
//! own usage errors also exit 2); 3 a file could not be read or written
//! (`io`); 4 a bug (`internal`). `coderig turn`, `coderig battle run` and
//! `coderig run` add 130: interrupted (Ctrl-C), their agents stopped.
//!
//! Errors: `coderig <cmd>: <kind>: <message>` on stderr ([`fail`]) — or,
//! when the command line asks for `--json` (before a `--`), the core's
//! error body `{"ok": false, "error": {"kind", "code", "message",
//! ...details}}` as one line on stdout, for every error of every
//! subcommand: clap's bad usage too ([`usage`]: `invalid_input`, exit 2).
//! `main` decides once ([`set_json_errors`]) before clap parses, so no
//! subcommand needs its own JSON error path.

pub mod agents;
pub mod battle;
pub mod edit;
pub mod hashline;
pub mod leaderboard;
pub mod rig;
pub mod run;
pub mod sandbox;
pub mod serve;
pub mod signals;
pub mod store;
pub mod table;
pub mod turn;
pub mod usage;

use std::ffi::OsStr;
use std::io::Write;
use std::process::ExitCode;
use std::sync::OnceLock;

/// Whether errors are answered as JSON on stdout (see the module docs).
static JSON_ERRORS: OnceLock<bool> = OnceLock::new();

/// Whether the command line `args` (the program name first) asks for
/// `--json`: the flag among the arguments before a `--` (after it, the
/// arguments are a command's own, as `coderig sandbox -- CMD ARGS`).
pub fn wants_json<I, S>(args: I) -> bool
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    args.into_iter()
        .skip(1)
        .map_while(|a| (a.as_ref() != "--").then_some(a))
        .any(|a| a.as_ref() == "--json")
}

/// Decides, once per process, how errors are answered: as JSON on stdout
/// when `json`, else as a line on stderr. Later calls change nothing.
pub fn set_json_errors(json: bool) {
    let _ = JSON_ERRORS.set(json);
}

/// Whether errors are answered as JSON on stdout ([`set_json_errors`]).
pub fn json_errors() -> bool {
    JSON_ERRORS.get().copied().unwrap_or(false)
}

/// The exit code of `error` (see the module docs).
pub fn exit_code(error: &coderig::Error) -> ExitCode {
    // Every exit code of the table fits in a byte.
    ExitCode::from(u8::try_from(error.kind().exit_code()).unwrap_or(4))
}

/// Reads a whole file (or stdin for `-`) as UTF-8, naming it in the error.
pub fn read_text(path: &std::path::Path) -> Result<String, coderig::Error> {
    let bytes = if path.as_os_str() == "-" {
        let mut buffer = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut buffer).map(|_| buffer)
    } else {
        std::fs::read(path)
    }
    .map_err(|e| coderig::Error::io(format!("cannot read {}: {e}", path.display())))?;
    String::from_utf8(bytes)
        .map_err(|_| coderig::Error::invalid_input(format!("{} is not UTF-8 text", path.display())))
}

/// Prints `error` — as `coderig <what>: <kind>: <message>` on stderr, or
/// with `--json` ([`json_errors`]) as its body `{"ok": false, "error":
/// {...}}` on one line of stdout — and returns its exit code.
pub fn fail(what: &str, error: &coderig::Error) -> ExitCode {
    if json_errors() {
        let mut stdout = std::io::stdout().lock();
        if writeln!(stdout, "{}", error.body())
            .and_then(|()| stdout.flush())
            .is_err()
        {
            // Nowhere to answer: the exit code still tells the kind.
            eprintln!("coderig {what}: {}: {}", error.kind(), error.message());
        }
    } else {
        eprintln!("coderig {what}: {}: {}", error.kind(), error.message());
    }
    exit_code(error)
}

/// The async runtime of a subcommand that runs agents (current thread:
/// one turn or one probe round at a time).
pub fn runtime() -> Result<tokio::runtime::Runtime, coderig::Error> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| coderig::Error::io(format!("cannot start the async runtime: {e}")))
}

/// A multi-thread runtime, for the commands whose work runs side by side
/// (commands, agents, the oracle, the progress display; the server's
/// connections): `workers` threads, or one per core with `None`.
pub fn multi_thread_runtime(
    workers: Option<usize>,
) -> Result<tokio::runtime::Runtime, coderig::Error> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(workers) = workers {
        builder.worker_threads(workers);
    }
    builder
        .enable_all()
        .build()
        .map_err(|e| coderig::Error::io(format!("cannot start the async runtime: {e}")))
}

/// Prints one JSON line on stdout, flushed: the `--json` stream of `run`
/// and `battle run` (a write error is ignored: stdout closed early is the
/// reader's choice; the exit code still says how the work ended).
pub fn json_line(value: &impl serde::Serialize) {
    if let Ok(text) = serde_json::to_string(value) {
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{text}").and_then(|()| stdout.flush());
    }
}
