//! `coderig run FLOW.yaml`: one flow run from a terminal.
//!
//! The spec is read by the same strict decoder and compiler every face uses
//! (`FlowSpec::load`, `FlowSpec::compile`): a bad one is reported with every
//! problem and its path, and nothing is created. Then a rig opens
//! (`coderig::rig::Rig`: the store of `--data-dir` / `--db`, the agents of
//! `--config`, a flow engine with its worker), the run is created and
//! followed with a `Watch` to the watch's end (the run's final status,
//! every step final by then): live progress on stderr (indicatif, one line
//! per step, drawn only on a terminal; one plain line per step change
//! otherwise), then a summary table and the report on stdout — or, with
//! `--json`, every stored event of the run as a JSON line and a final
//! `{"type": "run", ...RunView}` line. The run is read once at the start
//! and once at the end, never per event.
//!
//! Approval steps are asked on the terminal (`approve step X? [y/n/comment]`)
//! when stdin is one; `--approve` / `--reject` decide every one as it waits.
//! A flow with approval steps, stdin not a terminal and neither flag is bad
//! usage, refused before the run is created (nobody could decide it).
//!
//! Exit codes: 0 the run completed; 1 it failed or was cancelled; 2 bad
//! usage (a bad spec or input, every problem with its path); 3 IO; 130 (143)
//! interrupted by Ctrl-C (SIGTERM) — the run is cancelled and its steps'
//! processes have ended before the command exits.
//!
//! Rooms: this file the command line and its errors; `prepare` what is
//! checked before the rig opens; `drive` the run itself over the watch;
//! `live` the run as the display knows it between the two reads;
//! `approve` the approval questions; `progress` the live display;
//! `render` the summary.

mod approve;
mod drive;
mod live;
mod prepare;
mod progress;
mod render;

use super::rig::RigArgs;
use serde_json::Value;
use std::path::PathBuf;
use std::process::ExitCode;

const WHAT: &str = "run";

/// Options of `coderig run`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The flow spec: a `.yaml`, `.yml` or `.json` file.
    #[arg(value_name = "FLOW")]
    flow: PathBuf,
    /// An input value (repeatable): VALUE is read as JSON when it is JSON
    /// (`3`, `true`, `{"a":1}`, `"text"`), else taken as a string.
    #[arg(long = "input", value_name = "KEY=VALUE")]
    inputs: Vec<String>,
    /// The input as one JSON object; `--input` adds keys to it (a key given
    /// twice is an error).
    #[arg(long, value_name = "JSON")]
    input_json: Option<String>,
    /// Approve every approval step as it waits (by `$USER`).
    #[arg(long, conflicts_with = "reject")]
    approve: bool,
    /// Reject every approval step as it waits (by `$USER`).
    #[arg(long)]
    reject: bool,
    /// Print every stored event of the run as a JSON line, then
    /// `{"type": "run", ...}` (the run as `GET /api/runs/:id` answers),
    /// instead of the summary; progress goes to stderr only on a terminal.
    #[arg(long)]
    json: bool,
    /// Directories commands' `cwd` and agents' `workdir` must lie under
    /// (repeatable). Default: the current directory.
    #[arg(long = "project-root", value_name = "DIR")]
    project_roots: Vec<PathBuf>,
}

/// How approval steps are decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Approvals {
    /// `--approve` (true) or `--reject` (false): every one, as it waits.
    Auto(bool),
    /// Asked on the terminal.
    Ask,
}

pub fn run(args: Args, rig: &RigArgs) -> ExitCode {
    let prepared = match prepare::prepare(&args, rig) {
        Ok(prepared) => prepared,
        Err(e) => return report_error(&e),
    };
    // Several threads: commands, agents and the progress display side by
    // side.
    let runtime = match super::multi_thread_runtime(Some(2)) {
        Ok(runtime) => runtime,
        Err(e) => return super::fail(WHAT, &e),
    };
    runtime.block_on(drive::drive(prepared, args.json))
}

/// Prints `error` on stderr — an `invalid_input` with `problems` one line
/// per problem with its path — and returns its exit code. With `--json`
/// the error body on stdout ([`super::fail`]), the problems in it.
fn report_error(error: &coderig::Error) -> ExitCode {
    if super::json_errors() {
        return super::fail(WHAT, error);
    }
    let problems = error
        .details()
        .get("problems")
        .and_then(Value::as_array)
        .filter(|p| !p.is_empty());
    match problems {
        Some(problems) => {
            let file = error
                .details()
                .get("file")
                .and_then(Value::as_str)
                .map(|f| format!("{f}: "))
                .unwrap_or_default();
            let n = problems.len();
            eprintln!(
                "coderig {WHAT}: {}: {file}{n} problem{}:",
                error.kind(),
                if n == 1 { "" } else { "s" }
            );
            for p in problems {
                let path = p.get("path").and_then(Value::as_str).unwrap_or("");
                let message = p.get("message").and_then(Value::as_str).unwrap_or("");
                if path.is_empty() {
                    eprintln!("  {message}");
                } else {
                    eprintln!("  {path}: {message}");
                }
            }
            super::exit_code(error)
        }
        None => super::fail(WHAT, error),
    }
}
