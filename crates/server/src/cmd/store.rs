//! `coderig store compact`: deletes the finished battles and runs (with
//! their contestants or steps, tasks and events) and the events older than
//! `--retain` (or the config's `[store] retain`), in one transaction — what
//! a rig with `retain` set does by itself every hour.

use super::rig::RigArgs;
use coderig::agent::duration::parse_duration;
use std::process::ExitCode;
use std::time::Duration;

/// Options of `coderig store`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Delete finished battles and runs and events older than the retention.
    Compact(CompactArgs),
}

#[derive(Debug, clap::Args)]
struct CompactArgs {
    /// Keep what is younger than this (`30d`, `12h`, at least a minute).
    /// Default: the config's `[store] retain`.
    #[arg(long, value_name = "AGE", value_parser = parse_duration)]
    retain: Option<Duration>,
    /// Print what was deleted as JSON (`{"works", "tasks", "events"}`).
    #[arg(long)]
    json: bool,
}

/// Runs `coderig store …`: 0 once done, 2 without a retention, else the
/// store's error's exit code.
pub fn run(args: Args, rig: &RigArgs) -> ExitCode {
    let Command::Compact(compact) = args.command;
    super::rig::read_only("store compact", rig, |rig| async move {
        let retain = compact.retain.or(rig.registry().retain()).ok_or_else(|| {
            coderig::Error::invalid_input(
                "how old must what is deleted be? pass --retain AGE (e.g. --retain 30d) or set \
                 `[store] retain` in the config",
            )
            .with_detail("path", "retain")
        })?;
        let done = rig.store().compact(retain).await?;
        if compact.json {
            return serde_json::to_string(&done)
                .map(|text| format!("{text}\n"))
                .map_err(|e| coderig::Error::internal(format!("cannot serialize: {e}")));
        }
        Ok(format!(
            "compacted {}: {} battle(s) and run(s), {} task(s), {} event(s) older than {}\n",
            rig.store_location(),
            done.works,
            done.tasks,
            done.events,
            humantime(retain)
        ))
    })
}

/// `retain` in the largest whole unit `parse_duration` reads back.
fn humantime(retain: Duration) -> String {
    let secs = retain.as_secs();
    for (unit, size) in [("d", 86_400), ("h", 3600), ("m", 60)] {
        if secs.is_multiple_of(size) && secs >= size {
            return format!("{}{unit}", secs / size);
        }
    }
    format!("{secs}s")
}
