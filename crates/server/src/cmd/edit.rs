//! `coderig edit`: apply a search/replace edit, as a JSON filter
//! (`--json`, stdin → stdout) or in place on a file.

use coderig::json::EditRequest;
use coderig::{ApplyOptions, Edit};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

/// Options of `coderig edit`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Read a JSON request on stdin — `{"content", "old", "new",
    /// "replace_all"?, "path"?, "guards"?}` or `{"content", "edits": [...]}` —
    /// and write `{"ok": true, "content", "tier", "replacements"}` or
    /// `{"ok": false, "error": {...}}` on stdout.
    #[arg(long, conflicts_with_all = ["file", "old", "old_file", "new", "new_file", "replace_all", "no_guards"])]
    json: bool,
    /// The file to edit in place (atomically; untouched on any refusal).
    #[arg(required_unless_present = "json")]
    file: Option<PathBuf>,
    /// The text to replace.
    #[arg(long, conflicts_with = "old_file", required_unless_present_any = ["json", "old_file"])]
    old: Option<String>,
    /// A file holding the text to replace (taken byte for byte).
    #[arg(long, value_name = "PATH")]
    old_file: Option<PathBuf>,
    /// The replacement text.
    #[arg(long, conflicts_with = "new_file", required_unless_present_any = ["json", "new_file"])]
    new: Option<String>,
    /// A file holding the replacement text (taken byte for byte).
    #[arg(long, value_name = "PATH")]
    new_file: Option<PathBuf>,
    /// Replace every occurrence instead of refusing several as ambiguous.
    #[arg(long)]
    replace_all: bool,
    /// Skip the guards (truncation, dropped imports, placeholders, conflict markers).
    #[arg(long)]
    no_guards: bool,
}

/// Runs `coderig edit`; exit codes as in [`crate::cmd`].
pub fn run(args: Args) -> ExitCode {
    if args.json {
        return run_json();
    }
    match run_file(&args) {
        Ok(summary) => {
            println!("{summary}");
            ExitCode::SUCCESS
        }
        Err(e) => super::fail("edit", &e),
    }
}

fn text_of(inline: &Option<String>, file: &Option<PathBuf>) -> Result<String, coderig::Error> {
    match (inline, file) {
        (Some(text), _) => Ok(text.clone()),
        (None, Some(path)) => super::read_text(path),
        // clap makes one of the two required
        (None, None) => Err(coderig::Error::invalid_input("missing text argument")),
    }
}

fn run_file(args: &Args) -> Result<String, coderig::Error> {
    let file = args
        .file
        .as_ref()
        .ok_or_else(|| coderig::Error::invalid_input("missing FILE"))?;
    let edit = Edit {
        old: text_of(&args.old, &args.old_file)?,
        new: text_of(&args.new, &args.new_file)?,
        replace_all: args.replace_all,
    };
    let opts = ApplyOptions {
        path: None,
        guards: !args.no_guards,
    };
    let applied = coderig::edit_file(file, &edit, &opts)?;
    let plural = if applied.replacements == 1 { "" } else { "s" };
    Ok(format!(
        "{}: {} replacement{plural} ({} tier)",
        file.display(),
        applied.replacements,
        applied.tier.as_str()
    ))
}

/// The JSON filter: every outcome, bad input included, is one JSON document
/// on stdout, so a caller never has to parse stderr. The request is decoded
/// by the core (`coderig::json`), as `POST /api/edit` decodes it, so both
/// give the same answer and the same message for the same mistake.
fn run_json() -> ExitCode {
    let mut input = String::new();
    let outcome = match std::io::stdin().read_to_string(&mut input) {
        Err(e) => Err(coderig::Error::invalid_input(format!(
            "stdin is not readable UTF-8 text: {e}"
        ))),
        Ok(_) => coderig::json::decode_str::<EditRequest>(&input).and_then(|r| r.apply()),
    };
    // Serializing the struct (not a `Value`) keeps `ok` first in the output.
    let document = outcome.and_then(|response| {
        serde_json::to_string(&response)
            .map_err(|e| coderig::Error::internal(format!("cannot serialize the result: {e}")))
    });
    let (document, code) = match document {
        Ok(text) => (text, ExitCode::SUCCESS),
        Err(error) => (error.body().to_string(), super::exit_code(&error)),
    };
    let mut stdout = std::io::stdout().lock();
    if writeln!(stdout, "{document}")
        .and_then(|()| stdout.flush())
        .is_err()
    {
        return ExitCode::from(3);
    }
    code
}
