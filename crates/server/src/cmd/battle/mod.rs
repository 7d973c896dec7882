//! `coderig battle run|list|show|stop|apply`: the arena from a terminal.
//!
//! `run` opens a rig (`coderig::rig::Rig`: the store of `--data-dir` /
//! `--db`, the agents of `--config`, an arena with its worker), creates the
//! battle from a spec decoded by the same strict `BattleSpec::from_json`
//! every face uses, and follows it with a `Watch` to its end: live progress
//! on stderr (indicatif, one line per contestant, drawn only on a terminal;
//! plain status lines otherwise), then a summary table on stdout — or, with
//! `--json`, the final `BattleView` JSON alone on stdout. The other
//! subcommands only read and change the store (a rig without workers: a
//! running server's workers do the work).
//!
//! Exit codes: 0 the battle finished (`completed`, whatever the verdict) or
//! the command did what it was asked; 1 the battle failed or was cancelled,
//! a refusal (`stop` of a finished battle, a patch that does not apply, an
//! unknown battle); 2 bad usage (every problem of the spec with its path);
//! 3 IO; 130 (143) interrupted by Ctrl-C (SIGTERM) — the battle is stopped
//! and its agents have ended before the command exits.
//!
//! Rooms: this file the command line; `spec` what `run` checks before the
//! rig opens; `drive` `run` itself over the watch; `progress` its live
//! display; `render` the tables and verdicts people read; `stored` the
//! subcommands over stored battles.

mod drive;
mod progress;
mod render;
mod spec;
mod stored;

use super::rig::{read_only, RigArgs};
use coderig::arena::BattleType;
use coderig::event::BattleStatus;
use std::path::PathBuf;
use std::process::ExitCode;

/// Options of `coderig battle`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

// Parsed once per process: the size of `run`'s options costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Start a battle and watch it to the end: progress, then a summary.
    Run(RunArgs),
    /// List battles, newest first.
    List(ListArgs),
    /// Show one battle: contestants, evidence, winner, cross-examinations.
    Show(ShowArgs),
    /// Stop a running or judging battle.
    Stop(StopArgs),
    /// Apply the winner's patch (or a contestant's) to the project's tree.
    Apply(ApplyArgs),
}

/// Options of `coderig battle run`.
#[derive(Debug, clap::Args)]
struct RunArgs {
    /// The task every contestant gets.
    #[arg(
        long,
        conflicts_with = "prompt_file",
        required_unless_present = "prompt_file"
    )]
    prompt: Option<String>,
    /// A file holding the task (`-` reads stdin).
    #[arg(long, value_name = "FILE")]
    prompt_file: Option<PathBuf>,
    /// `coding` (patches in worktrees, judged by the oracle first) or `qa`.
    #[arg(long = "type", value_name = "TYPE", default_value = "coding", value_parser = parse_type)]
    battle_type: BattleType,
    /// The git repository a coding battle works on (default: the current
    /// directory); optional for qa.
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
    /// Directories the project must lie under (repeatable). Default: the
    /// project itself.
    #[arg(long = "project-root", value_name = "DIR")]
    project_roots: Vec<PathBuf>,
    /// A contestant, `IDENTITY:MODEL` or `IDENTITY:MODEL=INSTRUCTION` (2 to
    /// 6, repeat the flag; the model may contain more `:`). The text after
    /// the first `=` is that contestant's own instruction: its agent gets
    /// the prompt, a blank line, then the instruction; the others do not
    /// see it.
    #[arg(
        short = 'c',
        long = "contestant",
        value_name = "IDENTITY:MODEL[=INSTRUCTION]",
        required = true
    )]
    contestants: Vec<String>,
    /// The judge, `IDENTITY:MODEL`: digests and pairwise verdicts where the
    /// oracle does not decide.
    #[arg(long, value_name = "IDENTITY:MODEL")]
    judge: String,
    /// The oracle's repro: a shell command that fails on the base and
    /// passes once the task is done.
    #[arg(long, value_name = "CMD")]
    repro: Option<String>,
    /// The oracle's test suite: a shell command.
    #[arg(long, value_name = "CMD")]
    suite: Option<String>,
    /// Each oracle command's time limit (`90s`, `5m`, seconds).
    #[arg(long, value_name = "D")]
    oracle_timeout: Option<String>,
    /// What the oracle's commands may reach over the network: `deny` (the
    /// default), `allow`, or `loopback:PORT[,PORT...]`.
    #[arg(long, value_name = "deny|allow|loopback:PORTS")]
    oracle_network: Option<String>,
    /// Each contestant's time limit (default 20m).
    #[arg(long, value_name = "D")]
    timeout: Option<String>,
    /// What contestants start from: a revision (default HEAD) or
    /// `snapshot` (the working tree as it is).
    #[arg(long, value_name = "REF|snapshot")]
    base: Option<String>,
    /// Keep the contestants' worktrees after archiving their patches.
    #[arg(long)]
    keep_worktrees: bool,
    /// Print every stored event of the battle as a JSON line as it comes,
    /// then the final battle (as `GET /api/battles/:id` answers, with
    /// `"type": "battle"`) instead of the summary; progress goes to stderr
    /// only on a terminal.
    #[arg(long)]
    json: bool,
}

/// Options of `coderig battle list`.
#[derive(Debug, clap::Args)]
struct ListArgs {
    /// Only battles of this project.
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
    /// Only battles in this status (running, judging, completed, failed,
    /// cancelled).
    #[arg(long, value_name = "S", value_parser = parse_status)]
    status: Option<BattleStatus>,
    /// At most this many (1–500, default 50).
    #[arg(long, value_name = "N")]
    limit: Option<u32>,
    /// The `next_cursor` of the previous page.
    #[arg(long, value_name = "CURSOR")]
    cursor: Option<String>,
    /// Print the page as JSON (`{"battles": [...], "next_cursor"}`, as
    /// `GET /api/battles` answers).
    #[arg(long)]
    json: bool,
}

/// Options of `coderig battle show`.
#[derive(Debug, clap::Args)]
struct ShowArgs {
    /// The battle's id.
    id: String,
    /// Print the battle as JSON (as `GET /api/battles/:id` answers).
    #[arg(long)]
    json: bool,
}

/// Options of `coderig battle stop`.
#[derive(Debug, clap::Args)]
struct StopArgs {
    /// The battle's id.
    id: String,
}

/// Options of `coderig battle apply`.
#[derive(Debug, clap::Args)]
struct ApplyArgs {
    /// The battle's id.
    id: String,
    /// Whose patch: a contestant id or `IDENTITY:MODEL` (default: the
    /// winner's).
    #[arg(long, value_name = "CID")]
    contestant: Option<String>,
}

fn parse_type(text: &str) -> Result<BattleType, String> {
    text.parse::<BattleType>().map_err(|e| e.to_string())
}

fn parse_status(text: &str) -> Result<BattleStatus, String> {
    text.parse::<BattleStatus>().map_err(|e| e.to_string())
}

/// Runs `coderig battle …`; exit codes as in the module docs.
pub fn run(args: Args, rig: &RigArgs) -> ExitCode {
    match args.command {
        Command::Run(args) => drive::run_battle(args, rig),
        Command::List(args) => read_only("battle list", rig, |rig| stored::list(rig, args)),
        Command::Show(args) => read_only("battle show", rig, |rig| stored::show(rig, args)),
        Command::Stop(args) => read_only("battle stop", rig, |rig| stored::stop(rig, args)),
        Command::Apply(args) => read_only("battle apply", rig, |rig| stored::apply(rig, args)),
    }
}
