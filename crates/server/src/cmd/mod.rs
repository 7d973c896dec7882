//! Subcommands of the `coderig` binary, one module each, and the exit codes
//! they share.
//!
//! Exit codes: 0 success; 1 the edit was refused (`not_found`, `ambiguous`,
//! `guard`, `no_op`, `hashline_mismatch`); 2 bad input or usage
//! (`invalid_input`, unreadable JSON, wrong arguments — clap's own usage
//! errors also exit 2); 3 a file could not be read or written (`io`), or
//! any other failure that is not the input's fault.

pub mod edit;
pub mod hashline;
pub mod serve;

use std::process::ExitCode;

/// The exit code for an error of `kind` (see the module docs).
pub fn exit_code(kind: &str) -> ExitCode {
    ExitCode::from(match kind {
        "not_found" | "ambiguous" | "guard" | "no_op" | "hashline_mismatch" => 1,
        "invalid_input" => 2,
        _ => 3,
    })
}

/// Reads a whole file (or stdin for `-`) as UTF-8, naming it in the error.
pub fn read_text(path: &std::path::Path) -> Result<String, coderig::EditError> {
    let bytes = if path.as_os_str() == "-" {
        let mut buffer = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut buffer).map(|_| buffer)
    } else {
        std::fs::read(path)
    }
    .map_err(|e| coderig::EditError::Io {
        message: format!("cannot read {}: {e}", path.display()),
    })?;
    String::from_utf8(bytes)
        .map_err(|_| coderig::EditError::invalid(format!("{} is not UTF-8 text", path.display())))
}

/// Prints `error` as `coderig <what>: <kind>: <message>` on stderr and
/// returns its exit code.
pub fn fail(what: &str, error: &coderig::EditError) -> ExitCode {
    eprintln!("coderig {what}: {}: {}", error.kind(), error.message());
    exit_code(error.kind())
}
