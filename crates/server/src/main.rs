//! `coderig` — the command-line face of coderig.
//!
//! One module per subcommand under `cmd/`, each with an `Args` struct
//! (clap derive) and a `run(Args) -> ExitCode`. To add a subcommand: create
//! `cmd/<name>.rs`, add a variant to [`Command`] and one match arm in `main`.
//! Exit codes are shared by every subcommand (see `cmd/mod.rs`): 0 success,
//! 1 refusal or a failed turn, 2 bad input or usage, 3 IO failure, 4 a bug
//! (`coderig::ErrorKind::exit_code`), 130 interrupted (`turn`, `battle run`, `run`).
//! `--config`, `--data-dir` and `--db` are global (`cmd/rig.rs`). With
//! `--json`, every error — bad usage included — is the core's JSON error
//! body on stdout (`cmd/mod.rs`, `cmd/usage.rs`).
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
    #[command(flatten)]
    rig: cmd::rig::RigArgs,
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
    /// List the configured agents: kind, lane, installed, reachable, models.
    Agents(cmd::agents::Args),
    /// Run one turn of an agent, streaming its events.
    Turn(cmd::turn::Args),
    /// Arena battles: run one and watch it, list, show, stop, apply a patch.
    Battle(cmd::battle::Args),
    /// Run a flow spec (YAML or JSON) and watch it: progress, approvals, summary.
    Run(cmd::run::Args),
    /// Ratings of the contestants over completed battles, per battle type.
    Leaderboard(cmd::leaderboard::Args),
    /// Run one command under a sandbox policy and report what was enforced.
    Sandbox(cmd::sandbox::Args),
    /// The store itself: `compact` deletes what is older than the retention.
    Store(cmd::store::Args),
}

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // Decided before clap parses, so its usage errors answer as JSON too.
    cmd::set_json_errors(cmd::wants_json(&args));
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) => return cmd::usage::refuse(e),
    };
    match cli.command {
        Command::Serve(args) => cmd::serve::run(args, &cli.rig),
        Command::Edit(args) => cmd::edit::run(args),
        Command::Hashline(args) => cmd::hashline::run(args),
        Command::Agents(args) => cmd::agents::run(args, &cli.rig),
        Command::Turn(args) => cmd::turn::run(args, &cli.rig),
        Command::Battle(args) => cmd::battle::run(args, &cli.rig),
        Command::Run(args) => cmd::run::run(args, &cli.rig),
        Command::Leaderboard(args) => cmd::leaderboard::run(args, &cli.rig),
        Command::Sandbox(args) => cmd::sandbox::run(args, &cli.rig),
        Command::Store(args) => cmd::store::run(args, &cli.rig),
    }
}
