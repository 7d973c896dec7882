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

pub mod agents;
pub mod battle;
pub mod edit;
pub mod hashline;
pub mod leaderboard;
pub mod rig;
pub mod run;
pub mod sandbox;
pub mod serve;
pub mod table;
pub mod turn;

use std::process::ExitCode;

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

/// Prints `error` as `coderig <what>: <kind>: <message>` on stderr and
/// returns its exit code.
pub fn fail(what: &str, error: &coderig::Error) -> ExitCode {
    eprintln!("coderig {what}: {}: {}", error.kind(), error.message());
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
