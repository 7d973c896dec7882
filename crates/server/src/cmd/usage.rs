//! Bad usage: clap's parse errors, answered like every other error of the
//! binary. Without `--json` clap prints them itself (stderr, exit 2); with
//! `--json` they are the core's `invalid_input` body on stdout, exit 2
//! (`path`: the argument at fault, as the command line spells it;
//! `usage`: the subcommand's usage line). `--help` and `--version` are no
//! errors: they print as usual, with or without `--json`.

use clap::error::{ContextKind, ContextValue, ErrorKind};
use std::process::ExitCode;

/// Answers `error` (from `Cli::try_parse`) and returns the exit code;
/// without `--json`, or for `--help` / `--version`, clap prints it and
/// exits.
pub fn refuse(error: clap::Error) -> ExitCode {
    let plain = matches!(
        error.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
    );
    if plain || !super::json_errors() {
        error.exit();
    }
    super::fail("", &to_error(&error))
}

/// The `invalid_input` error of a clap parse error.
pub fn to_error(error: &clap::Error) -> coderig::Error {
    let rendered = error.render().to_string();
    let usage = rendered
        .lines()
        .find_map(|line| line.strip_prefix("Usage: "))
        .map(str::trim);
    let message = match error.kind() {
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand | ErrorKind::MissingSubcommand => {
            format!(
                "a subcommand is required: {}",
                usage.unwrap_or("see --help")
            )
        }
        _ => summary(&rendered),
    };
    let mut out = coderig::Error::invalid_input(message);
    if let Some(argument) = argument(error) {
        out = out.with_detail("path", argument);
    }
    if let Some(usage) = usage {
        out = out.with_detail("usage", usage);
    }
    out
}

/// What clap says went wrong, on one line: its first paragraph without
/// the `error: ` prefix, the lines it lists joined with `, ` (`the
/// following required arguments were not provided: --prompt <PROMPT>,
/// <FLOW>`).
fn summary(rendered: &str) -> String {
    let mut lines = rendered
        .lines()
        .take_while(|line| !line.trim().is_empty())
        .map(str::trim);
    let first = lines.next().unwrap_or("bad usage");
    let first = first.strip_prefix("error: ").unwrap_or(first);
    let listed: Vec<&str> = lines.collect();
    if listed.is_empty() {
        first.to_owned()
    } else if first.ends_with(':') {
        format!("{first} {}", listed.join(", "))
    } else {
        format!("{first}: {}", listed.join(", "))
    }
}

/// The (first) argument at fault, without its value placeholder
/// (`--prompt`, `--bogus`, `<FLOW>`).
fn argument(error: &clap::Error) -> Option<String> {
    let name = match error.get(ContextKind::InvalidArg)? {
        ContextValue::String(name) => name.clone(),
        ContextValue::Strings(names) => names.first()?.clone(),
        _ => return None,
    };
    let name = match name.split_once(' ') {
        Some((flag, _)) if flag.starts_with('-') => flag.to_owned(),
        _ => name,
    };
    // `-c, --contestant` style names keep the long one.
    Some(match name.rsplit_once(", ") {
        Some((_, long)) => long.to_owned(),
        None => name,
    })
}
