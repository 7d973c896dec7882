//! `coderig run` itself: open the rig, create the run, follow it with a
//! [`Watch`](coderig::watch::Watch) to the watch's end (the run's final
//! status, every step final by then) — progress drawn from the events,
//! approvals decided as they wait, `--json` lines as they come — cancel it
//! on Ctrl-C, let its driver stop its steps' processes, shut the rig down,
//! read the run once and print it.

use super::approve::Approver;
use super::live::{is_live, LiveRun};
use super::prepare::Prepared;
use super::progress::Progress;
use super::render::summary;
use super::{report_error, Approvals, WHAT};
use crate::cmd::rig::SHUTDOWN_GRACE;
use crate::cmd::signals::Interrupts;
use crate::cmd::table::now_ms;
use crate::cmd::{fail, json_line};
use coderig::bus::BusEvent;
use coderig::event::{Event, RunStatus};
use coderig::flow::engine::NewRun;
use coderig::flow::StepStatus;
use coderig::rig::{Rig, Subject};
use serde_json::{Map, Value};
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;
use tokio::time::Instant;

/// How long a cancelled run's driver may take to stop its steps (their
/// processes killed) before `run` quits without seeing it.
const STOP_GRACE: Duration = Duration::from_secs(30);

/// Opens the rig, creates the run, follows it to the watch's end, prints
/// the result; returns the exit code.
pub(super) async fn drive(prepared: Prepared, json: bool) -> ExitCode {
    // Listeners first, so a signal at any point of the run is seen.
    let mut interrupts = match Interrupts::listen() {
        Ok(interrupts) => interrupts,
        Err(e) => return fail(WHAT, &e),
    };
    let Prepared {
        spec,
        file,
        input,
        config,
        approvals,
    } = prepared;
    let rig = match Rig::open(config).await {
        Ok(rig) => rig,
        Err(e) => return fail(WHAT, &e),
    };
    let engine = rig.engine();
    let id = match engine.start_run(NewRun::spec(spec, input)).await {
        Ok(id) => id,
        Err(e) => {
            rig.shutdown(SHUTDOWN_GRACE).await;
            // A problem at a path of the spec (an agent this rig does not
            // configure) is said of its file, as the compiler's are.
            let of_spec =
                e.kind() == coderig::ErrorKind::InvalidInput && e.details().contains_key("path");
            return report_error(&if of_spec { e.in_file(&file) } else { e });
        }
    };
    // The run's history first (its first event included, however late
    // this comes), then live.
    let mut watch = rig.watch(Subject::Run(id.clone()));
    // The first of the two reads: the steps, their kinds, the spec.
    let mut live = match engine.run(&id).await {
        Ok(view) => LiveRun::new(view),
        Err(e) => {
            rig.shutdown(SHUTDOWN_GRACE).await;
            return fail(WHAT, &e);
        }
    };
    let mut progress = Progress::new(json, &live.view);
    let mut approver = Approver::new(approvals);
    let mut interrupted: Option<u8> = None;
    // The steps at work when the first signal came.
    let mut running_then: Vec<String> = Vec::new();
    // A second signal: quit without waiting for the steps to stop.
    let mut forced = false;
    // Redraws the elapsed times between events.
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    loop {
        if interrupted.is_none() && is_live(live.view.status) {
            approver.consider(engine, &live.view, &mut progress).await;
        }
        tokio::select! {
            next = watch.next() => match next {
                Ok(Some(BusEvent::Stored(stored))) => {
                    if json {
                        json_line(&stored);
                    }
                    let waits = live.apply(&stored.event, now_ms());
                    if let Some(step) = waits.filter(|_| approvals == Approvals::Ask) {
                        // Its message is rendered as it begins to wait: one
                        // read per question, none per event.
                        if let Ok(read) = engine.run(&id).await {
                            live.message(&step, &read);
                        }
                    }
                }
                Ok(Some(BusEvent::Live(Event::AgentOutput(output)))) => {
                    progress.output(&id, &output)
                }
                Ok(Some(BusEvent::Live(_))) => {}
                // The watch's end: the run is final, every step too.
                Ok(None) => break,
                // The bus stopped: nothing more will come.
                Err(e) if e.kind() == coderig::ErrorKind::Unavailable => break,
                Err(e) => {
                    progress.clear();
                    rig.shutdown(SHUTDOWN_GRACE).await;
                    return fail(WHAT, &e);
                }
            },
            answer = approver.answer(), if approver.asking() => {
                approver.answered(answer, engine, &id, &mut progress).await;
            }
            _ = tick.tick() => {}
            code = interrupts.next() => {
                if interrupted.is_some() { forced = true; break; }
                interrupted = Some(code);
                running_then = live
                    .view
                    .steps
                    .iter()
                    .filter(|s| s.status == StepStatus::Running)
                    .map(|s| s.id.clone())
                    .collect();
                approver.stop(&mut progress);
                progress.note(&format!(
                    "interrupted: cancelling run {id} and stopping its steps' processes (Ctrl-C again to quit at once)"
                ));
                if let Err(e) = engine.cancel(&id).await {
                    if e.kind() != coderig::ErrorKind::Conflict {
                        progress.note(&format!("cannot cancel the run: {}", e.message()));
                    }
                }
            }
        }
        progress.draw(&live.view);
    }
    // The run is final; its driver (this rig's, unless another process
    // drives it) may still be stopping a cancelled run's processes and
    // letting go of it: waited for, bounded, so no step's process outlives
    // the command — a second signal quits at once.
    if !forced {
        let deadline = Instant::now() + STOP_GRACE;
        while engine.driving().contains(&id) && Instant::now() < deadline {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(50)) => {}
                _ = interrupts.next() => { forced = true; break; }
            }
        }
    }
    let stopped = !engine.driving().contains(&id);
    // Whatever still runs is stopped (a forced quit: at once); shutdown
    // waits for the drivers.
    rig.shutdown(if forced {
        Duration::from_secs(2)
    } else {
        SHUTDOWN_GRACE
    })
    .await;
    // The second read: what the summary and `--json` print.
    let view = match engine.run(&id).await {
        Ok(view) => view,
        Err(_) => live.view.clone(),
    };
    progress.draw(&view);
    progress.clear();
    if interrupted.is_some() {
        if stopped {
            eprintln!(
                "run {id} {}: its steps were stopped, their processes killed",
                view.status
            );
        } else {
            eprintln!(
                "run {id} {}: quit before these steps were seen to stop: {}",
                view.status,
                running_then.join(", ")
            );
        }
    }
    if json {
        let mut line = Map::new();
        line.insert("type".into(), Value::from("run"));
        if let Ok(Value::Object(fields)) = serde_json::to_value(&view) {
            line.extend(fields);
        }
        json_line(&Value::Object(line));
    } else {
        let text = summary(&view, rig.data_dir());
        let mut stdout = std::io::stdout().lock();
        let _ = stdout
            .write_all(text.as_bytes())
            .and_then(|()| stdout.flush());
    }
    match (interrupted, view.status) {
        (Some(code), _) => ExitCode::from(code),
        (None, RunStatus::Completed) => ExitCode::SUCCESS,
        _ => ExitCode::FAILURE,
    }
}
