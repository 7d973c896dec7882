//! `coderig hashline format FILE` and `coderig hashline apply FILE EDITS.json`.

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

fn format(file: &Path) -> Result<(), coderig::Error> {
    let formatted = coderig::hashline::format(&super::read_text(file)?);
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{formatted}")
        .and_then(|()| stdout.flush())
        .map_err(|e| coderig::Error::io(format!("cannot write to stdout: {e}")))
}

/// The edits are decoded by the core (`coderig::json::hashline_edits`), as
/// `POST /api/hashline/apply` decodes its `edits`: paths read `edits[0].op`.
fn apply(file: &Path, edits: &Path) -> Result<(), coderig::Error> {
    let text = super::read_text(edits)?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        coderig::Error::invalid_input(format!(
            "{} is not JSON (a list of hashline edits): {e}",
            edits.display()
        ))
    })?;
    let edits = coderig::json::hashline_edits(value)?;
    coderig::hashline_edit_file(file, &edits)?;
    let plural = if edits.len() == 1 { "" } else { "s" };
    println!(
        "{}: {} hashline edit{plural} applied",
        file.display(),
        edits.len()
    );
    Ok(())
}
