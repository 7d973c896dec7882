//! `coderig` — the command-line face of coderig.
//!
//! One module per subcommand under `cmd/`, each with an `Args` struct
//! (clap derive) and a `run(Args) -> ExitCode`. To add a subcommand: create
//! `cmd/<name>.rs`, add a variant to [`Command`] and one match arm in `main`.
//! Exit codes are shared by every subcommand (see `cmd/mod.rs`): 0 success,
//! 1 refusal, 2 bad input or usage, 3 IO failure, 4 a bug (`coderig::ErrorKind::exit_code`).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod cmd;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// The engine room of AI coding-agent harnesses.
#[derive(Debug, Parser)]
#[command(name = "coderig", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Every subcommand.
#[derive(Debug, Subcommand)]
enum Command {
    /// Run the HTTP server (loopback by default).
    Serve(cmd::serve::Args),
    /// Apply a search/replace edit: a JSON filter (`--json`) or a file in place.
    Edit(cmd::edit::Args),
    /// Show a file with `LINE#HH|` anchors, or apply anchored edits to it.
    Hashline(cmd::hashline::Args),
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Serve(args) => cmd::serve::run(args),
        Command::Edit(args) => cmd::edit::run(args),
        Command::Hashline(args) => cmd::hashline::run(args),
    }
}
