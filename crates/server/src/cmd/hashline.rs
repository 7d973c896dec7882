//! `coderig hashline format FILE` and `coderig hashline apply FILE EDITS.json`.

use coderig::hashline::HashlineEdit;
use coderig::EditError;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Options of `coderig hashline`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Print FILE as `LINE#HH|text` lines.
    Format {
        /// The file to show (`-` for stdin).
        file: PathBuf,
    },
    /// Apply hashline edits to FILE in place (atomically, all or nothing).
    Apply {
        /// The file to edit.
        file: PathBuf,
        /// A JSON array of `{"op": "replace"|"append"|"prepend", "pos"?, "end"?,
        /// "lines"}`; `-` reads it from stdin.
        edits: PathBuf,
    },
}

/// Runs `coderig hashline`; exit codes as in [`crate::cmd`].
pub fn run(args: Args) -> ExitCode {
    let outcome = match &args.action {
        Action::Format { file } => format(file),
        Action::Apply { file, edits } => apply(file, edits),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => super::fail("hashline", &e),
    }
}

fn format(file: &Path) -> Result<(), EditError> {
    let formatted = coderig::hashline::format(&super::read_text(file)?);
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{formatted}")
        .and_then(|()| stdout.flush())
        .map_err(|e| EditError::Io {
            message: format!("cannot write to stdout: {e}"),
        })
}

fn apply(file: &Path, edits: &Path) -> Result<(), EditError> {
    let edits: Vec<HashlineEdit> =
        serde_json::from_str(&super::read_text(edits)?).map_err(|e| {
            EditError::invalid(format!(
                "{} is not a JSON array of hashline edits ({{\"op\", \"pos\", \"end\"?, \"lines\"}}): {e}",
                edits.display()
            ))
        })?;
    coderig::hashline_edit_file(file, &edits)?;
    let plural = if edits.len() == 1 { "" } else { "s" };
    println!(
        "{}: {} hashline edit{plural} applied",
        file.display(),
        edits.len()
    );
    Ok(())
}
