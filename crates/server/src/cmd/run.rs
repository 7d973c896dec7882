//! `coderig run FLOW.yaml`: one flow run from a terminal.
//!
//! The spec is read by the same strict decoder and compiler every face uses
//! (`FlowSpec::load`, `FlowSpec::compile`): a bad one is reported with every
//! problem and its path, and nothing is created. Then an in-process flow
//! engine starts on the store of `--data-dir` / `--db` with the agents of
//! `--config`, the run is created and followed on the event bus until it
//! ends: live progress on stderr (indicatif, one line per step, drawn only on
//! a terminal; one plain line per step change otherwise), then a summary
//! table and the report on stdout — or, with `--json`, every stored event of
//! the run as a JSON line and a final `{"type": "run", ...RunView}` line.
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

use super::rig::RigArgs;
use super::table;
use coderig::agent::Registry;
use coderig::bus::{BusEvent, EventBus};
use coderig::event::{AgentOutput, Event, OutputSource, RunStatus, StoredEvent};
use coderig::flow::engine::{Decision, Engine, EngineConfig, NewRun, RunView, StepView};
use coderig::flow::runspec::{FlowSpec, StepAction};
use coderig::flow::StepStatus;
use coderig::store::Store;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::{Map, Value};
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc;

const WHAT: &str = "run";

/// How long a cancelled run may take to stop its steps (their processes
/// killed) before `run` quits without seeing it.
const STOP_GRACE: Duration = Duration::from_secs(30);

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

/// What `run` checked before any store is opened.
struct Prepared {
    spec: FlowSpec,
    input: Value,
    registry: Registry,
    roots: Vec<PathBuf>,
    approvals: Approvals,
}

/// Runs `coderig run`; exit codes as in the module docs.
pub fn run(args: Args, rig: &RigArgs) -> ExitCode {
    let prepared = match prepare(&args, rig) {
        Ok(prepared) => prepared,
        Err(e) => return report_error(&e),
    };
    // Several threads: commands, agents and the progress display side by
    // side.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            return super::fail(
                WHAT,
                &coderig::Error::io(format!("cannot start the async runtime: {e}")),
            )
        }
    };
    runtime.block_on(drive(prepared, rig, args.json))
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

/// The run's input: `--input-json`'s object with every `--input KEY=VALUE`
/// added. `invalid_input` for JSON that is not an object, a pair without
/// `=` or with an empty key, and a key given twice (by two `--input`s, or
/// by `--input` and `--input-json`).
fn parse_input(input_json: Option<&str>, pairs: &[String]) -> Result<Value, coderig::Error> {
    let mut map = match input_json {
        None => Map::new(),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => map,
            Ok(other) => {
                return Err(coderig::Error::invalid_at(
                    "input-json",
                    format!("--input-json must be a JSON object, got {other}"),
                ))
            }
            Err(e) => {
                return Err(coderig::Error::invalid_at(
                    "input-json",
                    format!("--input-json is not JSON: {e}"),
                ))
            }
        },
    };
    let from_json: BTreeSet<String> = map.keys().cloned().collect();
    let mut given = BTreeSet::new();
    for pair in pairs {
        let Some((key, raw)) = pair.split_once('=') else {
            return Err(coderig::Error::invalid_at(
                "input",
                format!("--input {pair:?}: expected KEY=VALUE"),
            ));
        };
        let key = key.trim();
        if key.is_empty() {
            return Err(coderig::Error::invalid_at(
                "input",
                format!("--input {pair:?}: the key is empty (expected KEY=VALUE)"),
            ));
        }
        if !given.insert(key.to_string()) {
            return Err(coderig::Error::invalid_at(
                &format!("input.{key}"),
                format!("--input {key} is given twice"),
            ));
        }
        if from_json.contains(key) {
            return Err(coderig::Error::invalid_at(
                &format!("input.{key}"),
                format!("--input {key} repeats a key of --input-json"),
            ));
        }
        // JSON when it is JSON (numbers, booleans, objects, quoted
        // strings), the text itself otherwise: `--input q=What is X?`.
        let value =
            serde_json::from_str::<Value>(raw).unwrap_or_else(|_| Value::String(raw.to_string()));
        map.insert(key.to_string(), value);
    }
    Ok(Value::Object(map))
}

/// Every check that needs no store: the spec (decoded and compiled, every
/// problem with its path), the input, the approval mode, the config, the
/// project roots. A failure here leaves nothing behind.
fn prepare(args: &Args, rig: &RigArgs) -> Result<Prepared, coderig::Error> {
    if !args.flow.exists() {
        return Err(coderig::Error::invalid_input(format!(
            "{}: no such file (give a flow spec: .yaml, .yml or .json)",
            args.flow.display()
        ))
        .with_detail("path", "FLOW"));
    }
    let spec = FlowSpec::load(&args.flow)?;
    spec.compile().map_err(|e| {
        // The compiler's problems name paths inside the spec; say which file.
        let file = args.flow.display().to_string();
        let mut out = coderig::Error::new(e.kind(), format!("{file}: {}", e.message()))
            .with_detail("file", file.as_str());
        for (k, v) in e.details() {
            out = out.with_detail(k, v.clone());
        }
        out
    })?;
    let input = parse_input(args.input_json.as_deref(), &args.inputs)?;
    let approval_steps: Vec<&str> = spec
        .steps
        .iter()
        .filter(|s| matches!(s.action, StepAction::Approval(_)))
        .map(|s| s.id.as_str())
        .collect();
    let approvals = match (args.approve, args.reject) {
        (true, _) => Approvals::Auto(true),
        (_, true) => Approvals::Auto(false),
        _ => Approvals::Ask,
    };
    if approvals == Approvals::Ask && !approval_steps.is_empty() && !std::io::stdin().is_terminal()
    {
        return Err(coderig::Error::invalid_input(format!(
            "the flow has approval steps ({}) and stdin is not a terminal, so nobody could \
             answer them: pass --approve or --reject, run it on a terminal, or start it on a \
             server (coderig serve; POST /api/runs) and decide with \
             POST /api/runs/RUN_ID/steps/STEP/approve (or /reject)",
            approval_steps.join(", ")
        ))
        .with_detail("path", "approve"));
    }
    let registry = rig.registry()?;
    let roots = if args.project_roots.is_empty() {
        vec![std::env::current_dir().map_err(|e| {
            coderig::Error::io(format!(
                "cannot read the current directory (the default --project-root): {e}"
            ))
        })?]
    } else {
        args.project_roots.clone()
    };
    let roots = roots
        .iter()
        .map(|root| {
            std::fs::canonicalize(root).map_err(|e| {
                coderig::Error::invalid_input(format!("--project-root {}: {e}", root.display()))
                    .with_detail("path", "project-root")
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Prepared {
        spec,
        input,
        registry,
        roots,
        approvals,
    })
}

/// Who decides an approval from this command: `$USER`, else `cli`.
fn decider() -> String {
    std::env::var("USER")
        .ok()
        .filter(|u| !u.trim().is_empty())
        .unwrap_or_else(|| "cli".to_owned())
}

/// Prints one JSON line on stdout (a write error is ignored: stdout closed
/// early is the reader's choice; the exit code still says how the run
/// ended).
fn json_line(value: &impl serde::Serialize) {
    if let Ok(text) = serde_json::to_string(value) {
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{text}").and_then(|()| stdout.flush());
    }
}

/// The stored events of `run_id` after seq `after` (what the subscription
/// did not deliver before the command stopped following).
async fn events_after(
    store: &Arc<dyn Store>,
    run_id: &str,
    mut after: u64,
) -> Result<Vec<StoredEvent>, coderig::Error> {
    let mut out = Vec::new();
    loop {
        let records = store
            .events_after(i64::try_from(after).unwrap_or(i64::MAX), 500)
            .await?;
        let Some(last) = records.last() else {
            return Ok(out);
        };
        after = u64::try_from(last.seq).unwrap_or(u64::MAX);
        for record in records.iter().filter(|r| r.work_id == run_id) {
            if let Ok(event) = record.to_stored(Some(store.epoch())) {
                out.push(event);
            }
        }
    }
}

fn is_live(status: RunStatus) -> bool {
    matches!(status, RunStatus::Running | RunStatus::Waiting)
}

/// An approval step's wait: the same step waits again in a later loop
/// iteration (or attempt), and is asked again then.
type WaitKey = (String, u32, u32);

fn wait_key(step: &StepView) -> WaitKey {
    (step.id.clone(), step.iteration, step.attempt)
}

fn waiting_approvals(view: &RunView) -> impl Iterator<Item = &StepView> {
    view.steps
        .iter()
        .filter(|s| s.kind == "approval" && s.status == StepStatus::Waiting)
}

/// Starts the engine and the run, follows it to the end, prints the
/// result; returns the exit code.
async fn drive(prepared: Prepared, rig: &RigArgs, json: bool) -> ExitCode {
    // Listeners first, so a signal at any point of the run is seen.
    let signals =
        signal(SignalKind::interrupt()).and_then(|int| Ok((int, signal(SignalKind::terminate())?)));
    let (mut sigint, mut sigterm) = match signals {
        Ok(pair) => pair,
        Err(e) => {
            return super::fail(
                WHAT,
                &coderig::Error::io(format!("cannot listen for Ctrl-C: {e}")),
            )
        }
    };
    let store = match super::battle::open_store(rig).await {
        Ok(store) => store,
        Err(e) => return super::fail(WHAT, &e),
    };
    let bus = EventBus::start(store.clone());
    bus.started().await;
    let mut config = EngineConfig::new(&rig.data_dir);
    config.project_roots = prepared.roots;
    // A person watches: notice the next step sooner than a server would.
    config.poll = Duration::from_millis(200);
    let engine = match Engine::start(store.clone(), prepared.registry, bus.clone(), config).await {
        Ok(engine) => engine,
        Err(e) => {
            bus.shutdown();
            return super::fail(WHAT, &e);
        }
    };
    // Subscribed before the run exists: its first event is seen too.
    let mut events = bus.subscribe();
    // Every event of the run comes after this seq: where the --json
    // catch-up reads from when the subscription delivered nothing.
    let mut last_seq = match store.event_window().await {
        Ok(window) => window.newest,
        Err(e) => {
            engine.shutdown(Duration::from_secs(5)).await;
            bus.shutdown();
            return super::fail(WHAT, &e);
        }
    };
    let id = match engine
        .start_run(NewRun::spec(prepared.spec, prepared.input))
        .await
    {
        Ok(id) => id,
        Err(e) => {
            engine.shutdown(Duration::from_secs(5)).await;
            bus.shutdown();
            return report_error(&e);
        }
    };
    let mut view = match engine.run(&id).await {
        Ok(view) => view,
        Err(e) => {
            engine.shutdown(Duration::from_secs(5)).await;
            bus.shutdown();
            return super::fail(WHAT, &e);
        }
    };
    let mut progress = Progress::new(json, &view);
    let mut approver = Approver::new(prepared.approvals);
    let mut interrupted: Option<u8> = None;
    // How long an interrupted run may take to stop its steps before the
    // command quits anyway (a driver elsewhere that never acts on the
    // cancel must not hold it forever).
    let mut stop_by: Option<tokio::time::Instant> = None;
    // A second signal: quit without waiting for the steps to stop.
    let mut forced = false;
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    let mut ticks: u32 = 0;
    loop {
        // A cancelled run ends when its driver stopped every step (their
        // processes killed) and marked what was left cancelled.
        let settled = !view.steps.iter().any(|s| {
            matches!(
                s.status,
                StepStatus::Pending | StepStatus::Running | StepStatus::Waiting
            )
        });
        if !is_live(view.status) && (view.status != RunStatus::Cancelled || settled) {
            break;
        }
        if stop_by.is_some_and(|at| tokio::time::Instant::now() >= at) {
            break;
        }
        if interrupted.is_none() && is_live(view.status) {
            approver.consider(&engine, &view, &mut progress).await;
        }
        let mut reread = false;
        tokio::select! {
            event = events.next() => match event {
                Some(BusEvent::Live(Event::AgentOutput(output))) => progress.output(&id, &output),
                Some(BusEvent::Stored(stored)) => {
                    last_seq = stored.seq;
                    if stored.event.run_id() == Some(id.as_str()) {
                        if json {
                            json_line(&stored);
                        }
                        reread = true;
                    }
                }
                Some(BusEvent::Live(_)) => {}
                // The bus stopped: nothing more will come.
                None => break,
            },
            answer = approver.answer(), if approver.asking() => {
                reread = approver.answered(answer, &engine, &id, &mut progress).await;
            }
            _ = tick.tick() => {
                ticks = ticks.wrapping_add(1);
                // Events say when something changed; the occasional read
                // covers what another process committed between polls.
                reread = ticks.is_multiple_of(8);
            }
            _ = sigint.recv() => {
                if interrupted.is_some() { forced = true; break; }
                interrupted = Some(130);
                stop_by = Some(tokio::time::Instant::now() + STOP_GRACE);
                reread = cancel_for_signal(&engine, &id, &mut progress, &mut approver).await;
            }
            _ = sigterm.recv() => {
                if interrupted.is_some() { forced = true; break; }
                interrupted = Some(143);
                stop_by = Some(tokio::time::Instant::now() + STOP_GRACE);
                reread = cancel_for_signal(&engine, &id, &mut progress, &mut approver).await;
            }
        }
        if reread {
            match engine.run(&id).await {
                Ok(fresh) => view = fresh,
                Err(e) => {
                    progress.clear();
                    engine.shutdown(Duration::from_secs(10)).await;
                    bus.shutdown();
                    return super::fail(WHAT, &e);
                }
            }
        }
        progress.draw(&view);
    }
    // Whatever still runs is stopped (a forced quit: at once); shutdown
    // waits for the drivers, so no step's process outlives the command.
    engine
        .shutdown(Duration::from_secs(if forced { 2 } else { 15 }))
        .await;
    if let Ok(fresh) = engine.run(&id).await {
        view = fresh;
    }
    progress.draw(&view);
    progress.clear();
    if interrupted.is_some() {
        let still = view
            .steps
            .iter()
            .filter(|s| s.status == StepStatus::Running)
            .map(|s| s.id.as_str())
            .collect::<Vec<_>>();
        if still.is_empty() {
            eprintln!(
                "run {id} {}: its steps were stopped, their processes killed",
                view.status
            );
        } else {
            eprintln!(
                "run {id} {}: quit before these steps were seen to stop: {}",
                view.status,
                still.join(", ")
            );
        }
    }
    if json {
        match events_after(&store, &id, last_seq).await {
            Ok(rest) => rest.iter().for_each(json_line),
            Err(e) => eprintln!(
                "coderig {WHAT}: cannot read the run's last events: {}",
                e.message()
            ),
        }
        let mut line = Map::new();
        line.insert("type".into(), Value::from("run"));
        if let Ok(Value::Object(fields)) = serde_json::to_value(&view) {
            line.extend(fields);
        }
        json_line(&Value::Object(line));
    } else {
        let text = summary(&view, &rig.data_dir);
        let mut stdout = std::io::stdout().lock();
        let _ = stdout
            .write_all(text.as_bytes())
            .and_then(|()| stdout.flush());
    }
    bus.shutdown();
    match (interrupted, view.status) {
        (Some(code), _) => ExitCode::from(code),
        (None, RunStatus::Completed) => ExitCode::SUCCESS,
        _ => ExitCode::FAILURE,
    }
}

/// Ctrl-C: the run is cancelled (a run that just ended is left as it is).
/// Returns true: the view must be read again.
async fn cancel_for_signal(
    engine: &Engine,
    id: &str,
    progress: &mut Progress,
    approver: &mut Approver,
) -> bool {
    approver.stop(progress);
    progress.note(&format!(
        "interrupted: cancelling run {id} and stopping its steps' processes (Ctrl-C again to quit at once)"
    ));
    if let Err(e) = engine.cancel(id).await {
        if e.kind() != coderig::ErrorKind::Conflict {
            progress.note(&format!("cannot cancel the run: {}", e.message()));
        }
    }
    true
}

// ------------------------------------------------------------ approvals

/// Decides approval steps as they wait: by the flags, or by asking on the
/// terminal one step at a time.
struct Approver {
    mode: Approvals,
    /// Waits already decided or queued (by step, iteration, attempt).
    seen: BTreeSet<WaitKey>,
    /// Steps to ask about, in the order they started waiting.
    queue: VecDeque<WaitKey>,
    /// The one being asked now, with the comment typed so far.
    current: Option<(WaitKey, Option<String>)>,
    /// Lines typed on stdin (`None`: stdin closed), read by a thread of
    /// its own started at the first question.
    lines: Option<mpsc::UnboundedReceiver<Option<String>>>,
    /// Stdin closed, or the run was interrupted: ask no more.
    done_asking: bool,
}

impl Approver {
    fn new(mode: Approvals) -> Self {
        Approver {
            mode,
            seen: BTreeSet::new(),
            queue: VecDeque::new(),
            current: None,
            lines: None,
            done_asking: false,
        }
    }

    fn asking(&self) -> bool {
        self.current.is_some() && self.lines.is_some()
    }

    /// The next line typed (pending forever when nothing reads stdin).
    async fn answer(&mut self) -> Option<String> {
        match &mut self.lines {
            Some(rx) => rx.recv().await.flatten(),
            None => std::future::pending().await,
        }
    }

    /// Looks at the waiting approval steps of `view`: decides them
    /// (`--approve` / `--reject`) or queues and asks.
    async fn consider(&mut self, engine: &Engine, view: &RunView, progress: &mut Progress) {
        let waiting: Vec<&StepView> = waiting_approvals(view).collect();
        // A question about a step someone else decided meanwhile is moot.
        if let Some((key, _)) = &self.current {
            if !waiting.iter().any(|s| &wait_key(s) == key) {
                eprintln!();
                progress.resume(&format!("step {} was decided elsewhere", key.0));
                self.current = None;
            }
        }
        self.queue
            .retain(|key| waiting.iter().any(|s| &wait_key(s) == key));
        for step in waiting {
            let key = wait_key(step);
            if !self.seen.insert(key.clone()) {
                continue;
            }
            match self.mode {
                Approvals::Auto(approve) => {
                    let decision = Decision {
                        by: Some(decider()),
                        comment: Some(format!(
                            "coderig run --{}",
                            if approve { "approve" } else { "reject" }
                        )),
                    };
                    let done = if approve {
                        engine.approve(&view.id, &step.id, decision).await
                    } else {
                        engine.reject(&view.id, &step.id, decision).await
                    };
                    match done {
                        Ok(_) => progress.note(&format!(
                            "{} step {} (--{})",
                            if approve { "approved" } else { "rejected" },
                            step.id,
                            if approve { "approve" } else { "reject" }
                        )),
                        // Decided elsewhere first: nothing to do.
                        Err(e) if e.kind() == coderig::ErrorKind::Conflict => {}
                        Err(e) => progress.note(&format!(
                            "cannot decide step {}: {}",
                            step.id,
                            e.message()
                        )),
                    }
                }
                Approvals::Ask if !self.done_asking => self.queue.push_back(key),
                Approvals::Ask => {}
            }
        }
        if self.current.is_none() && !self.done_asking {
            if let Some(key) = self.queue.pop_front() {
                let message = view
                    .step(&key.0)
                    .and_then(|s| s.message.clone())
                    .filter(|m| !m.trim().is_empty());
                self.start_reader();
                // Lines typed before the question answer nothing.
                if let Some(rx) = &mut self.lines {
                    while let Ok(line) = rx.try_recv() {
                        if line.is_none() {
                            self.done_asking = true;
                        }
                    }
                }
                if self.done_asking {
                    self.lines = None;
                    progress.note(&format!(
                        "stdin closed: step {} keeps waiting; decide it with \
                         POST /api/runs/{}/steps/{}/approve (or /reject) on a server on this \
                         store, or Ctrl-C to cancel the run",
                        key.0, view.id, key.0
                    ));
                    return;
                }
                progress.pause();
                if let Some(message) = message {
                    eprintln!("approval step {}: {}", key.0, message.trim());
                }
                ask(&key.0, None);
                self.current = Some((key, None));
            }
        }
    }

    fn start_reader(&mut self) {
        if self.lines.is_some() {
            return;
        }
        let (tx, rx) = mpsc::unbounded_channel();
        // Blocking reads on a thread of their own: the process exits
        // without waiting for it (a tokio blocking task would hold the
        // runtime's shutdown until a line came).
        let spawned = std::thread::Builder::new()
            .name("coderig-run-stdin".into())
            .spawn(move || {
                let stdin = std::io::stdin();
                loop {
                    let mut line = String::new();
                    match stdin.read_line(&mut line) {
                        Ok(0) | Err(_) => {
                            let _ = tx.send(None);
                            return;
                        }
                        Ok(_) => {
                            if tx.send(Some(line)).is_err() {
                                return;
                            }
                        }
                    }
                }
            });
        if spawned.is_ok() {
            self.lines = Some(rx);
        }
    }

    /// A line typed for the current question. Returns true when a decision
    /// was sent (the view must be read again).
    async fn answered(
        &mut self,
        line: Option<String>,
        engine: &Engine,
        run_id: &str,
        progress: &mut Progress,
    ) -> bool {
        let Some((key, comment)) = self.current.take() else {
            return false;
        };
        let Some(line) = line else {
            // Stdin closed: leave the step waiting and say how to decide it.
            self.done_asking = true;
            self.lines = None;
            progress.resume(&format!(
                "stdin closed: step {} keeps waiting; decide it with \
                 POST /api/runs/{run_id}/steps/{}/approve (or /reject) on a server on this \
                 store, or Ctrl-C to cancel the run",
                key.0, key.0
            ));
            return false;
        };
        match parse_answer(&line) {
            Answer::Again => {
                ask(&key.0, comment.as_deref());
                self.current = Some((key, comment));
                false
            }
            Answer::Comment(text) => {
                ask(&key.0, Some(&text));
                self.current = Some((key, Some(text)));
                false
            }
            Answer::Decide(approve, more) => {
                let decision = Decision {
                    by: Some(decider()),
                    comment: more.or(comment),
                };
                let done = if approve {
                    engine.approve(run_id, &key.0, decision).await
                } else {
                    engine.reject(run_id, &key.0, decision).await
                };
                let note = match done {
                    Ok(_) => format!(
                        "{} step {}",
                        if approve { "approved" } else { "rejected" },
                        key.0
                    ),
                    Err(e) => format!("step {}: {}", key.0, e.message()),
                };
                progress.resume(&note);
                true
            }
        }
    }

    /// Asks no more (the run is being cancelled).
    fn stop(&mut self, progress: &mut Progress) {
        self.done_asking = true;
        self.queue.clear();
        if self.current.take().is_some() {
            eprintln!();
            progress.resume("");
        }
    }
}

fn ask(step: &str, comment: Option<&str>) {
    let mut stderr = std::io::stderr().lock();
    let _ = match comment {
        None => write!(stderr, "approve step {step}? [y/n/comment] "),
        Some(c) => write!(stderr, "approve step {step} with the comment {c:?}? [y/n] "),
    };
    let _ = stderr.flush();
}

/// What a line typed at the approval question means.
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    /// Nothing usable: ask again.
    Again,
    /// `y`/`yes` (true) or `n`/`no` (false), with a comment after it
    /// (`y looks good`).
    Decide(bool, Option<String>),
    /// Any other text: the comment, then the question again.
    Comment(String),
}

fn parse_answer(line: &str) -> Answer {
    let line = line.trim();
    if line.is_empty() {
        return Answer::Again;
    }
    let (word, rest) = match line.split_once(char::is_whitespace) {
        Some((word, rest)) => (word, rest.trim()),
        None => (line, ""),
    };
    let word = word.trim_end_matches([',', ':', '.', '!']).to_lowercase();
    let comment = (!rest.is_empty()).then(|| rest.to_string());
    match word.as_str() {
        "y" | "yes" => Answer::Decide(true, comment),
        "n" | "no" => Answer::Decide(false, comment),
        _ => Answer::Comment(line.to_string()),
    }
}

// ------------------------------------------------------------- progress

/// How progress is shown.
enum Display {
    /// indicatif on stderr (a terminal).
    Bars {
        multi: MultiProgress,
        run: ProgressBar,
        steps: Vec<(String, ProgressBar)>,
        /// Hidden while a question waits for its answer.
        paused: bool,
    },
    /// One line on stderr per change (no terminal, no `--json`).
    Plain,
    /// Nothing (`--json` without a terminal).
    Quiet,
}

/// What the plain display last showed of a step.
type Shown = (StepStatus, u32, u32);

/// The live progress of one run.
struct Progress {
    display: Display,
    shown: HashMap<String, Shown>,
    run_status: RunStatus,
    /// Characters of agent output streamed per step so far (a sign of work;
    /// the output itself is not shown).
    chars: HashMap<String, usize>,
    id_width: usize,
    kind_width: usize,
    /// Do-while steps and the steps of their bodies.
    in_loop: BTreeSet<String>,
}

impl Progress {
    fn new(json: bool, view: &RunView) -> Self {
        let id_width = view
            .steps
            .iter()
            .map(|s| s.id.chars().count())
            .max()
            .unwrap_or(0);
        let kind_width = view
            .steps
            .iter()
            .map(|s| s.kind.chars().count())
            .max()
            .unwrap_or(0);
        let header = format!(
            "run {}: {} · {} steps",
            view.id,
            view.name.as_deref().unwrap_or("(unnamed flow)"),
            view.steps.len()
        );
        let display = if std::io::stderr().is_terminal() {
            let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
            let style = ProgressStyle::with_template("{spinner} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner());
            let _ = multi.println(&header);
            let steps = view
                .steps
                .iter()
                .map(|s| {
                    let bar = multi.add(ProgressBar::new_spinner().with_style(style.clone()));
                    (s.id.clone(), bar)
                })
                .collect();
            let run = multi.add(ProgressBar::new_spinner().with_style(style));
            Display::Bars {
                multi,
                run,
                steps,
                paused: false,
            }
        } else if json {
            Display::Quiet
        } else {
            eprintln!("{header}");
            Display::Plain
        };
        let in_loop = loop_steps(&view.spec);
        let mut progress = Progress {
            display,
            shown: HashMap::new(),
            run_status: view.status,
            chars: HashMap::new(),
            id_width,
            kind_width,
            in_loop,
        };
        progress.draw(view);
        progress
    }

    fn output(&mut self, run_id: &str, output: &AgentOutput) {
        if let OutputSource::Step {
            run_id: of,
            step_id,
        } = &output.source
        {
            if of == run_id {
                *self.chars.entry(step_id.clone()).or_default() += output.text.chars().count();
            }
        }
    }

    fn note(&mut self, line: &str) {
        match &self.display {
            Display::Bars { multi, paused, .. } => {
                if *paused {
                    eprintln!("{line}");
                } else {
                    let _ = multi.println(line);
                }
            }
            Display::Plain => eprintln!("{line}"),
            Display::Quiet => {}
        }
    }

    /// Hides the bars while a question is on the terminal (a redraw would
    /// overwrite what is typed).
    fn pause(&mut self) {
        if let Display::Bars { multi, paused, .. } = &mut self.display {
            if !*paused {
                multi.set_draw_target(ProgressDrawTarget::hidden());
                *paused = true;
            }
        }
    }

    /// Shows the bars again after a question, with `line` (when not empty)
    /// above them.
    fn resume(&mut self, line: &str) {
        if let Display::Bars { multi, paused, .. } = &mut self.display {
            if *paused {
                if !line.is_empty() {
                    eprintln!("{line}");
                }
                multi.set_draw_target(ProgressDrawTarget::stderr());
                *paused = false;
                return;
            }
        }
        if !line.is_empty() {
            self.note(line);
        }
    }

    fn line(&self, s: &StepView, now_ms: i64) -> String {
        let attempt = if s.attempt == 0 {
            "-".to_owned()
        } else {
            format!("attempt {}", s.attempt)
        };
        let elapsed = match s.status {
            StepStatus::Pending => "-".to_owned(),
            StepStatus::Running | StepStatus::Waiting => s
                .started_at
                .map(|t| super::battle::millis(u64::try_from(now_ms - t).unwrap_or(0)))
                .unwrap_or_else(|| "-".to_owned()),
            _ => duration(s),
        };
        let mut note = match s.status {
            StepStatus::Waiting if s.kind == "approval" => "waiting for approval".to_owned(),
            StepStatus::Running => match self.chars.get(&s.id) {
                Some(n) if *n > 0 => format!("{n} chars"),
                _ => String::new(),
            },
            _ => note(s),
        };
        if self.in_loop.contains(&s.id) {
            // A body step's `iteration` counts from 1, as templates do
            // (0 only before its first start).
            note = format!("iteration {} {note}", s.iteration.max(1));
        }
        format!(
            "{:<iw$}  {:<kw$}  {:<9}  {:<10}  {:>8}  {}",
            s.id,
            s.kind,
            s.status.as_str(),
            attempt,
            elapsed,
            note,
            iw = self.id_width,
            kw = self.kind_width,
        )
        .trim_end()
        .to_owned()
    }

    fn draw(&mut self, view: &RunView) {
        let now = now_ms();
        match &self.display {
            Display::Bars { paused: true, .. } => {}
            Display::Bars { run, steps, .. } => {
                for (id, bar) in steps {
                    let Some(s) = view.step(id) else { continue };
                    let line = self.line(s, now);
                    if matches!(
                        s.status,
                        StepStatus::Pending | StepStatus::Running | StepStatus::Waiting
                    ) && is_live(view.status)
                    {
                        bar.set_message(line);
                        bar.tick();
                    } else if !bar.is_finished() {
                        bar.finish_with_message(line);
                    } else {
                        // A loop's body step finishes again in each
                        // iteration: keep its line current.
                        bar.set_message(line);
                    }
                }
                let elapsed =
                    super::battle::millis(u64::try_from(now - view.created_at).unwrap_or(0));
                run.set_message(format!("run {} · {elapsed}", view.status));
                run.tick();
            }
            Display::Plain => {
                let mut lines = Vec::new();
                for s in &view.steps {
                    let shown = (s.status, s.attempt, s.iteration);
                    let first = !self.shown.contains_key(&s.id);
                    // The first look shows only what already moved.
                    if (first && s.status != StepStatus::Pending)
                        || (!first && self.shown.get(&s.id) != Some(&shown))
                    {
                        lines.push(format!("  {}", self.line(s, now)));
                    }
                }
                if self.run_status != view.status {
                    lines.push(format!("run {}: {}", view.id, view.status));
                }
                for line in lines {
                    eprintln!("{line}");
                }
            }
            Display::Quiet => {}
        }
        for s in &view.steps {
            self.shown
                .insert(s.id.clone(), (s.status, s.attempt, s.iteration));
        }
        self.run_status = view.status;
    }

    /// Removes the bars, so the summary starts on a clean screen; nothing
    /// is drawn after (a dropped bar would draw itself again below the
    /// summary).
    fn clear(&mut self) {
        if let Display::Bars { multi, paused, .. } = &mut self.display {
            if !*paused {
                let _ = multi.clear();
            }
            multi.set_draw_target(ProgressDrawTarget::hidden());
            *paused = true;
        }
    }
}

/// The do-while steps of a spec (its canonical JSON) and every step of
/// their bodies.
fn loop_steps(spec: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for step in spec["steps"].as_array().into_iter().flatten() {
        if step["kind"] == "do_while" {
            out.extend(step["id"].as_str().map(str::to_owned));
            for id in step["body"].as_array().into_iter().flatten() {
                out.extend(id.as_str().map(str::to_owned));
            }
        }
    }
    out
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// A settled step's duration (its last attempt's start to its end).
fn duration(s: &StepView) -> String {
    s.started_at
        .zip(s.finished_at)
        .and_then(|(start, end)| u64::try_from(end - start).ok())
        .map(super::battle::millis)
        .unwrap_or_else(|| "-".to_owned())
}

/// The message of an error object, on one line, cut to `max` characters.
fn error_text(error: &Value, max: usize) -> String {
    let text = error
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| error.to_string());
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    short(&one_line, max)
}

/// The summary table's last cell: why it was skipped, its error, a
/// decision.
fn note(s: &StepView) -> String {
    if let Some(reason) = s.skip_reason {
        return reason.as_str().to_owned();
    }
    if let Some(error) = &s.error {
        return error_text(error, 100);
    }
    if let Some(a) = &s.approval {
        let who = a.by.as_deref().unwrap_or("someone");
        return format!(
            "{} by {who}",
            if a.approved { "approved" } else { "rejected" }
        );
    }
    String::new()
}

/// What `run` prints at the end (without `--json`).
fn summary(view: &RunView, data_dir: &Path) -> String {
    let took = view
        .finished_at
        .and_then(|e| u64::try_from(e - view.created_at).ok())
        .map(|ms| format!(" in {}", super::battle::millis(ms)))
        .unwrap_or_default();
    let name = view
        .name
        .as_deref()
        .map(|n| format!(" ({n})"))
        .unwrap_or_default();
    let rows: Vec<Vec<String>> = view
        .steps
        .iter()
        .map(|s| {
            vec![
                s.id.clone(),
                s.kind.clone(),
                s.status.as_str().to_owned(),
                s.attempt.to_string(),
                duration(s),
                note(s),
            ]
        })
        .collect();
    let mut out = format!("run {}{name} {}{took}\n", view.id, view.status);
    out.push_str(&table::render(
        &["STEP", "KIND", "STATUS", "ATTEMPT", "DURATION", "NOTE"],
        &rows,
    ));
    if let Some(error) = &view.error {
        out.push_str(&format!("error: {}\n", error_text(error, 400)));
    }
    let dir = data_dir.join("runs").join(&view.id);
    if let Some(report) = view.report.as_deref().filter(|r| !r.trim().is_empty()) {
        out.push_str(&format!(
            "\nreport ({}):\n{}\n",
            dir.join("report.md").display(),
            report.trim_end()
        ));
        out.push('\n');
    }
    out.push_str(&format!("artifacts: {}\n", dir.display()));
    out
}

/// `text` cut to `max` characters (an ellipsis marks the cut).
fn short(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let cut: String = text.chars().take(max.saturating_sub(1)).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn inputs_are_json_when_they_parse_and_text_otherwise() {
        let pairs: Vec<String> = [
            "n=3",
            "ok=true",
            "obj={\"a\":1}",
            "q=What is X?",
            "quoted=\"7\"",
            "empty=",
            "eq=a=b",
            "zero=007",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let input = parse_input(Some(r#"{"base": [1]}"#), &pairs).unwrap();
        assert_eq!(
            input,
            json!({"base": [1], "n": 3, "ok": true, "obj": {"a": 1}, "q": "What is X?",
                   "quoted": "7", "empty": "", "eq": "a=b", "zero": "007"})
        );
    }

    #[test]
    fn bad_inputs_are_invalid_input() {
        let cases: Vec<(Option<&str>, Vec<&str>, &str)> = vec![
            (None, vec!["a=1", "a=2"], "given twice"),
            (Some(r#"{"a": 1}"#), vec!["a=2"], "repeats a key"),
            (None, vec!["novalue"], "KEY=VALUE"),
            (None, vec!["=1"], "key is empty"),
            (Some("[1]"), vec![], "JSON object"),
            (Some("{"), vec![], "not JSON"),
        ];
        for (json_arg, pairs, says) in cases {
            let pairs: Vec<String> = pairs.iter().map(|s| s.to_string()).collect();
            let e = parse_input(json_arg, &pairs).unwrap_err();
            assert_eq!(e.kind(), coderig::ErrorKind::InvalidInput, "{pairs:?}");
            assert!(e.message().contains(says), "{}", e.message());
        }
    }

    #[test]
    fn answers_decide_or_comment() {
        assert_eq!(parse_answer("y\n"), Answer::Decide(true, None));
        assert_eq!(parse_answer(" YES "), Answer::Decide(true, None));
        assert_eq!(parse_answer("n"), Answer::Decide(false, None));
        assert_eq!(
            parse_answer("y: looks good"),
            Answer::Decide(true, Some("looks good".into()))
        );
        assert_eq!(
            parse_answer("no not yet"),
            Answer::Decide(false, Some("not yet".into()))
        );
        assert_eq!(parse_answer("   "), Answer::Again);
        assert_eq!(
            parse_answer("ship it after lunch"),
            Answer::Comment("ship it after lunch".into())
        );
    }
}
