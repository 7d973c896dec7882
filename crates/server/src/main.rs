//! `coderig` — the command-line face of coderig.
//!
//! One module per subcommand under `cmd/`, each with an `Args` struct
//! (clap derive) and a `run(Args) -> ExitCode`. To add a subcommand: create
//! `cmd/<name>.rs`, add a variant to [`Command`] and one match arm in `main`.
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
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Serve(args) => cmd::serve::run(args),
    }
}
