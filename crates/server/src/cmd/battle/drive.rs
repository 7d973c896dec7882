//! `coderig battle run` itself: open the rig, start the battle, follow it
//! with a [`Watch`](coderig::watch::Watch) to the watch's end (the
//! battle's final status, every contestant final by then), stop it on
//! Ctrl-C, shut the rig down, read the battle once and print it.

use super::progress::Progress;
use super::render::summary;
use super::spec::{exclude_data_dir, prepare, Prepared};
use super::RunArgs;
use crate::cmd::rig::{RigArgs, SHUTDOWN_GRACE};
use crate::cmd::signals::Interrupts;
use crate::cmd::{fail, json_line};
use coderig::bus::BusEvent;
use coderig::event::{BattleStatus, Event};
use coderig::rig::{Rig, Subject};
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;
use tokio::time::Instant;

const WHAT: &str = "battle run";

/// How long a stopped battle's tasks may take to archive what their agents
/// did before the command shuts its rig down anyway.
const STOP_GRACE: Duration = Duration::from_secs(30);

/// `coderig battle run`: the checks, then the battle on a runtime of its
/// own; the exit code.
pub(super) fn run_battle(args: RunArgs, rig: &RigArgs) -> ExitCode {
    let prepared = match prepare(&args, rig) {
        Ok(prepared) => prepared,
        Err(e) => return fail(WHAT, &e),
    };
    // Several threads: the oracle's commands, the agents and the progress
    // display run side by side.
    let runtime = match crate::cmd::multi_thread_runtime(Some(2)) {
        Ok(runtime) => runtime,
        Err(e) => return fail(WHAT, &e),
    };
    runtime.block_on(drive(prepared, args.json))
}

/// Opens the rig, starts the battle, shows progress until the watch ends,
/// prints the result; returns the exit code.
async fn drive(prepared: Prepared, json: bool) -> ExitCode {
    // Listeners first, so a signal at any point of the battle is seen.
    let mut interrupts = match Interrupts::listen() {
        Ok(interrupts) => interrupts,
        Err(e) => return fail(WHAT, &e),
    };
    let Prepared {
        spec,
        config,
        project,
    } = prepared;
    let rig = match Rig::open(config).await {
        Ok(rig) => rig,
        Err(e) => return fail(WHAT, &e),
    };
    if let Some(project) = &project {
        exclude_data_dir(project, rig.data_dir());
    }
    let started = match rig.arena().start_battle(spec).await {
        Ok(view) => view,
        Err(e) => {
            rig.shutdown(SHUTDOWN_GRACE).await;
            return fail(WHAT, &e);
        }
    };
    let id = started.id.clone();
    // Its history first (nothing is missed however late this comes), then
    // live; no read of the battle per event.
    let mut watch = rig.watch(Subject::Battle(id.clone()));
    let mut progress = Progress::new(json, started);
    let mut interrupted: Option<u8> = None;
    // A second signal: quit without waiting for the agents' cleanup.
    let mut forced = false;
    // Redraws the elapsed times between events.
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    loop {
        tokio::select! {
            next = watch.next() => match next {
                Ok(Some(BusEvent::Stored(stored))) => {
                    if json {
                        json_line(&stored);
                    }
                    progress.event(&stored.event)
                }
                Ok(Some(BusEvent::Live(Event::AgentOutput(output)))) => progress.output(&output),
                Ok(Some(BusEvent::Live(_))) => {}
                // The watch's end: the battle is final, every contestant too.
                Ok(None) => break,
                // The bus stopped: nothing more will come.
                Err(e) if e.kind() == coderig::ErrorKind::Unavailable => break,
                Err(e) => {
                    progress.clear();
                    rig.shutdown(SHUTDOWN_GRACE).await;
                    return fail(WHAT, &e);
                }
            },
            _ = tick.tick() => {}
            code = interrupts.next() => {
                if interrupted.is_some() { forced = true; break; }
                interrupted = Some(code);
                stop_for_signal(&rig, &id, &mut progress).await;
            }
        }
        progress.draw();
    }
    if interrupted.is_some() && !forced {
        // The stopped battle's tasks end by themselves once their agents'
        // process groups are stopped, archiving what the agents did and
        // removing their worktrees; a shutdown now would cut that short
        // (shut-down tasks are left for a lease rescue). Bounded: a second
        // Ctrl-C, or tasks of other battles this worker picked up, do not
        // hold the command forever.
        let deadline = Instant::now() + STOP_GRACE;
        while rig.arena().running_tasks() > 0 && Instant::now() < deadline {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(50)) => {}
                _ = interrupts.next() => break,
            }
        }
    }
    // Whatever still runs is stopped; shutdown waits for it.
    rig.shutdown(SHUTDOWN_GRACE).await;
    // The battle read once, at the end (as the display knew it when the
    // store cannot be read).
    let view = match rig.arena().battle(&id).await {
        Ok(view) => view,
        Err(_) => progress.view().clone(),
    };
    progress.clear();
    if json {
        // The last line: the battle as it ended, after its stored events.
        let mut line = serde_json::Map::new();
        line.insert("type".into(), "battle".into());
        if let Ok(serde_json::Value::Object(fields)) = serde_json::to_value(&view) {
            line.extend(fields);
        }
        json_line(&serde_json::Value::Object(line));
    } else {
        let mut stdout = std::io::stdout().lock();
        let _ = stdout
            .write_all(summary(&view).as_bytes())
            .and_then(|()| stdout.flush());
    }
    match (interrupted, view.status) {
        (Some(code), _) => ExitCode::from(code),
        (None, BattleStatus::Completed) => ExitCode::SUCCESS,
        _ => ExitCode::FAILURE,
    }
}

/// Ctrl-C: the battle is stopped (a battle that just finished is left as
/// it is); the watch then ends at its `cancelled`.
async fn stop_for_signal(rig: &Rig, id: &str, progress: &mut Progress) {
    progress.note("interrupted: stopping the battle and its agents (Ctrl-C again to quit at once)");
    if let Err(e) = rig.arena().stop(id).await {
        if e.kind() != coderig::ErrorKind::Conflict {
            progress.note(&format!("cannot stop the battle: {}", e.message()));
        }
    }
}
