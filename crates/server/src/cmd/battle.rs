//! `coderig battle run|list|show|stop|apply`: the arena from a terminal.
//!
//! `run` starts an in-process arena (the store of `--data-dir` / `--db`,
//! the agents of `--config`), creates the battle from a spec decoded by the
//! same strict `BattleSpec::from_json` every face uses, and watches it to
//! the end: live progress on stderr (indicatif, one line per contestant,
//! drawn only on a terminal; plain status lines otherwise), then a summary
//! table on stdout — or, with `--json`, the final `BattleView` JSON alone on
//! stdout. The other subcommands only read and write the store (an arena
//! without a worker: a running server's workers do the work).
//!
//! Exit codes: 0 the battle finished (`completed`, whatever the verdict) or
//! the command did what it was asked; 1 the battle failed or was cancelled,
//! a refusal (`stop` of a finished battle, a patch that does not apply, an
//! unknown battle); 2 bad usage (every problem of the spec with its path);
//! 3 IO; 130 (143) interrupted by Ctrl-C (SIGTERM) — the battle is stopped
//! and its agents have ended before the command exits.

use super::rig::RigArgs;
use super::table;
use coderig::agent::Registry;
use coderig::arena::runner::folder::rfc3339;
use coderig::arena::runner::{
    Arena, ArenaConfig, BattleFilter, BattlePage, BattleView, ContestantView,
};
use coderig::arena::{BattleSpec, BattleType, CommandEvidence, ContestantStatus, EvidenceTier};
use coderig::bus::{BusEvent, EventBus};
use coderig::event::{AgentOutput, BattleStatus, Event, OutputSource};
use coderig::store::Store;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tokio::signal::unix::{signal, SignalKind};

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
    /// Print the final battle as JSON (as `GET /api/battles/:id` answers)
    /// instead of the summary; progress goes to stderr only on a terminal.
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
        Command::Run(args) => run_battle(args, rig),
        Command::List(args) => read_only("battle list", rig, |arena| list(arena, args)),
        Command::Show(args) => read_only("battle show", rig, |arena| show(arena, args)),
        Command::Stop(args) => read_only("battle stop", rig, |arena| stop(arena, args)),
        Command::Apply(args) => read_only("battle apply", rig, |arena| apply(arena, args)),
    }
}

// ---------------------------------------------------------------- run

/// What `battle run` checked before any store is opened.
struct Prepared {
    spec: BattleSpec,
    registry: Registry,
    project: Option<PathBuf>,
    roots: Vec<PathBuf>,
}

fn run_battle(args: RunArgs, rig: &RigArgs) -> ExitCode {
    let prepared = match prepare(&args, rig) {
        Ok(prepared) => prepared,
        Err(e) => return super::fail("battle run", &e),
    };
    // Several threads: the oracle's commands, the agents and the progress
    // display run side by side.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            return super::fail(
                "battle run",
                &coderig::Error::io(format!("cannot start the async runtime: {e}")),
            )
        }
    };
    runtime.block_on(drive(prepared, rig, args.json))
}

/// `IDENTITY:MODEL` as `{"identity", "model"}`; `flag` names the option in
/// the error.
fn agent_json(flag: &str, text: &str) -> Result<Value, coderig::Error> {
    match text.split_once(':') {
        Some((identity, model)) if !identity.trim().is_empty() && !model.trim().is_empty() => {
            Ok(json!({"identity": identity, "model": model}))
        }
        _ => Err(coderig::Error::invalid_input(format!(
            "{flag} {text:?}: expected IDENTITY:MODEL (e.g. claude:sonnet, local:qwen3-coder:30b)"
        ))
        .with_detail("path", flag.trim_start_matches('-'))),
    }
}

fn canonical(flag: &str, path: &Path) -> Result<PathBuf, coderig::Error> {
    std::fs::canonicalize(path).map_err(|e| {
        coderig::Error::invalid_input(format!("{flag} {}: {e}", path.display()))
            .with_detail("path", flag.trim_start_matches('-'))
    })
}

/// `IDENTITY:MODEL[=INSTRUCTION]` as `{"identity", "model", "instruction"?}`:
/// the instruction is everything after the first `=` (checked by the
/// core's decoder like any other face's).
fn contestant_json(text: &str) -> Result<Value, coderig::Error> {
    let (agent, instruction) = match text.split_once('=') {
        Some((agent, instruction)) => (agent, Some(instruction)),
        None => (text, None),
    };
    let mut value = agent_json("-c", agent).map_err(|_| {
        coderig::Error::invalid_input(format!(
            "-c {text:?}: expected IDENTITY:MODEL or IDENTITY:MODEL=INSTRUCTION \
             (e.g. claude:sonnet, local:qwen3-coder:30b=Write the test first.)"
        ))
        .with_detail("path", "c")
    })?;
    if let Some(instruction) = instruction {
        value["instruction"] = json!(instruction);
    }
    Ok(value)
}

/// The battle spec's JSON from the flags: only what was given, so the
/// decoder's defaults and checks are the ones every face gets.
fn spec_json(
    args: &RunArgs,
    prompt: &str,
    project: Option<&Path>,
) -> Result<Value, coderig::Error> {
    let contestants = args
        .contestants
        .iter()
        .map(|c| contestant_json(c.as_str()))
        .collect::<Result<Vec<_>, _>>()?;
    let mut spec = json!({
        "battle_type": args.battle_type.as_str(),
        "prompt": prompt,
        "contestants": contestants,
        "judge": agent_json("--judge", &args.judge)?,
        "keep_worktrees": args.keep_worktrees,
    });
    if let Some(project) = project {
        spec["project"] = json!(project.display().to_string());
    }
    if let Some(base) = &args.base {
        spec["base"] = json!(base);
    }
    if args.repro.is_some()
        || args.suite.is_some()
        || args.oracle_timeout.is_some()
        || args.oracle_network.is_some()
    {
        let mut oracle = serde_json::Map::new();
        for (key, value) in [
            ("repro", &args.repro),
            ("suite", &args.suite),
            ("timeout", &args.oracle_timeout),
            ("network", &args.oracle_network),
        ] {
            if let Some(value) = value {
                oracle.insert(key.into(), json!(value));
            }
        }
        spec["oracle"] = Value::Object(oracle);
    }
    if let Some(timeout) = &args.timeout {
        spec["contestant_timeout"] = json!(timeout);
    }
    Ok(spec)
}

/// Every check that needs no store: the prompt, the flags, the spec (all
/// its problems at once, with their paths), the identities against the
/// config. A failure here leaves nothing behind.
fn prepare(args: &RunArgs, rig: &RigArgs) -> Result<Prepared, coderig::Error> {
    let prompt = match (&args.prompt, &args.prompt_file) {
        (Some(prompt), _) => prompt.clone(),
        (None, Some(file)) => super::read_text(file)?,
        // clap makes one of the two required
        (None, None) => return Err(coderig::Error::invalid_input("missing --prompt")),
    };
    let project = match (&args.project, args.battle_type) {
        (Some(project), _) => Some(canonical("--project", project)?),
        (None, BattleType::Coding) => {
            let here = std::env::current_dir().map_err(|e| {
                coderig::Error::io(format!(
                    "cannot read the current directory (the default --project): {e}"
                ))
            })?;
            Some(canonical("--project", &here)?)
        }
        (None, BattleType::Qa) => None,
    };
    let spec = BattleSpec::from_json(&spec_json(args, &prompt, project.as_deref())?)?;
    let registry = rig.registry()?;
    spec.validate_against(&registry.identities())?;
    // The runner compares canonical paths with the roots as given.
    let roots = if args.project_roots.is_empty() {
        project.iter().cloned().collect()
    } else {
        args.project_roots
            .iter()
            .map(|root| canonical("--project-root", root))
            .collect::<Result<_, _>>()?
    };
    Ok(Prepared {
        spec,
        registry,
        project,
        roots,
    })
}

/// Opens the store as `serve` does, naming where it is in the error.
pub(crate) async fn open_store(rig: &RigArgs) -> Result<Arc<dyn Store>, coderig::Error> {
    rig.open_store().await.map_err(|e| {
        let message = format!(
            "cannot open the store at {}: {}",
            rig.store_location(),
            e.message()
        );
        coderig::Error::new(e.kind(), message)
    })
}

/// A data directory inside the project (the default `.coderig` when run at
/// the top of the repository) would show in `git status` and be copied by
/// a `snapshot` base: it goes into `.git/info/exclude`, as `Arena/` does.
/// Best effort: a repository whose `.git` is not a directory (a linked
/// worktree, a submodule) is left alone.
fn exclude_data_dir(project: &Path, data_dir: &Path) {
    let Ok(data_dir) = std::fs::canonicalize(data_dir) else {
        return;
    };
    let Ok(relative) = data_dir.strip_prefix(project) else {
        return;
    };
    let git_dir = project.join(".git");
    if relative.as_os_str().is_empty() || !git_dir.is_dir() {
        return;
    }
    let line = format!("/{}/", relative.display());
    let exclude = git_dir.join("info").join("exclude");
    let current = std::fs::read_to_string(&exclude).unwrap_or_default();
    if current.lines().any(|l| l.trim() == line) {
        return;
    }
    let mut text = current;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&format!(
        "# coderig's data directory (coderig adds this line)\n{line}\n"
    ));
    let _ = std::fs::create_dir_all(git_dir.join("info"));
    let _ = std::fs::write(&exclude, text);
}

/// Starts the arena and the battle, shows progress until it is finished,
/// prints the result; returns the exit code.
async fn drive(prepared: Prepared, rig: &RigArgs, json: bool) -> ExitCode {
    const WHAT: &str = "battle run";
    // Listeners first, so a signal at any point of the battle is seen.
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
    let store = match open_store(rig).await {
        Ok(store) => store,
        Err(e) => return super::fail(WHAT, &e),
    };
    let bus = EventBus::start(store.clone());
    bus.started().await;
    let mut config = ArenaConfig::new(&rig.data_dir);
    config.project_roots = prepared.roots;
    // A person watches: pick up the next step sooner than a server would.
    config.poll = Duration::from_millis(200);
    let arena = match Arena::start(store, prepared.registry, bus.clone(), config).await {
        Ok(arena) => arena,
        Err(e) => {
            bus.shutdown();
            return super::fail(WHAT, &e);
        }
    };
    if let Some(project) = &prepared.project {
        exclude_data_dir(project, &rig.data_dir);
    }
    let mut events = bus.subscribe();
    let started = match arena.start_battle(prepared.spec).await {
        Ok(view) => view,
        Err(e) => {
            arena.shutdown(Duration::from_secs(5)).await;
            bus.shutdown();
            return super::fail(WHAT, &e);
        }
    };
    let id = started.id.clone();
    let mut progress = Progress::new(json, &started);
    let mut view = started;
    let mut interrupted: Option<u8> = None;
    // A second signal: quit without waiting for the agents' cleanup.
    let mut forced = false;
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    let mut ticks: u32 = 0;
    while !view.is_finished() {
        let mut reread = false;
        tokio::select! {
            event = events.next() => match event {
                Some(BusEvent::Live(Event::AgentOutput(output))) => progress.output(&output),
                Some(BusEvent::Stored(stored)) => {
                    reread = stored.event.battle_id() == Some(id.as_str());
                }
                Some(BusEvent::Live(_)) => {}
                // The bus stopped: nothing more will come.
                None => break,
            },
            _ = tick.tick() => {
                ticks = ticks.wrapping_add(1);
                // Events say when something changed; the occasional read
                // covers what another server committed between polls.
                reread = ticks.is_multiple_of(8);
            }
            _ = sigint.recv() => {
                if interrupted.is_some() { forced = true; break; }
                interrupted = Some(130);
                reread = stop_for_signal(&arena, &id, &mut progress).await;
            }
            _ = sigterm.recv() => {
                if interrupted.is_some() { forced = true; break; }
                interrupted = Some(143);
                reread = stop_for_signal(&arena, &id, &mut progress).await;
            }
        }
        if reread {
            match arena.battle(&id).await {
                Ok(fresh) => view = fresh,
                Err(e) => {
                    progress.clear();
                    arena.shutdown(Duration::from_secs(10)).await;
                    bus.shutdown();
                    return super::fail(WHAT, &e);
                }
            }
        }
        progress.draw(&view);
    }
    if interrupted.is_some() && !forced {
        // The stopped battle's tasks end by themselves once their agents'
        // process groups are stopped, archiving what the agents did and
        // removing their worktrees; a shutdown now would cut that short
        // (shut-down tasks are left for a lease rescue). Bounded: a second
        // Ctrl-C, or tasks of other battles this worker picked up, do not
        // hold the command forever.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while arena.running_tasks() > 0 && tokio::time::Instant::now() < deadline {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(50)) => {}
                _ = sigint.recv() => break,
                _ = sigterm.recv() => break,
            }
        }
    }
    // Whatever still runs is stopped; shutdown waits for it.
    arena.shutdown(Duration::from_secs(15)).await;
    if let Ok(fresh) = arena.battle(&id).await {
        view = fresh;
    }
    bus.shutdown();
    progress.clear();
    let printed = if json {
        serde_json::to_string_pretty(&view)
            .map(|text| format!("{text}\n"))
            .map_err(|e| e.to_string())
    } else {
        Ok(summary(&view))
    };
    let text = match printed {
        Ok(text) => text,
        Err(e) => {
            return super::fail(
                WHAT,
                &coderig::Error::internal(format!("cannot serialize the battle: {e}")),
            )
        }
    };
    let mut stdout = std::io::stdout().lock();
    let _ = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
    match (interrupted, view.status) {
        (Some(code), _) => ExitCode::from(code),
        (None, BattleStatus::Completed) => ExitCode::SUCCESS,
        _ => ExitCode::FAILURE,
    }
}

/// Ctrl-C: the battle is stopped (a battle that just finished is left as
/// it is). Returns true: the view must be read again.
async fn stop_for_signal(arena: &Arena, id: &str, progress: &mut Progress) -> bool {
    progress.note("interrupted: stopping the battle and its agents (Ctrl-C again to quit at once)");
    if let Err(e) = arena.stop(id).await {
        if e.kind() != coderig::ErrorKind::Conflict {
            progress.note(&format!("cannot stop the battle: {}", e.message()));
        }
    }
    true
}

/// How progress is shown.
enum Display {
    /// indicatif on stderr (a terminal).
    Bars {
        multi: MultiProgress,
        battle: ProgressBar,
        contestants: Vec<(String, ProgressBar)>,
    },
    /// One line on stderr per change (no terminal, no `--json`).
    Plain,
    /// Nothing (`--json` without a terminal).
    Quiet,
}

/// The live progress of one battle.
struct Progress {
    display: Display,
    /// Each contestant's status when last shown.
    shown: HashMap<String, ContestantStatus>,
    battle_status: BattleStatus,
    /// Characters of output streamed per contestant so far (a live sign of
    /// work before the usage is known).
    chars: HashMap<String, usize>,
    /// Contestants whose agent just streamed its first output (a change the
    /// plain display reports: the agent is at work).
    first_output: Vec<String>,
    /// The width of the widest `identity/model`.
    label_width: usize,
}

impl Progress {
    fn new(json: bool, view: &BattleView) -> Self {
        let label_width = view
            .contestants
            .iter()
            .map(|c| label(c).chars().count())
            .max()
            .unwrap_or(0);
        let header = format!(
            "battle {}: {} · {} contestants · judge {}/{}",
            view.id,
            view.battle_type,
            view.contestants.len(),
            view.judge.identity,
            view.judge.model
        );
        let display = if std::io::stderr().is_terminal() {
            let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
            let style = ProgressStyle::with_template("{spinner} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner());
            let _ = multi.println(&header);
            let contestants = view
                .contestants
                .iter()
                .map(|c| {
                    let bar = multi.add(ProgressBar::new_spinner().with_style(style.clone()));
                    (c.id.clone(), bar)
                })
                .collect();
            let battle = multi.add(ProgressBar::new_spinner().with_style(style));
            Display::Bars {
                multi,
                battle,
                contestants,
            }
        } else if json {
            Display::Quiet
        } else {
            eprintln!("{header}");
            Display::Plain
        };
        let mut progress = Progress {
            display,
            shown: HashMap::new(),
            battle_status: view.status,
            chars: HashMap::new(),
            first_output: Vec::new(),
            label_width,
        };
        progress.draw(view);
        progress
    }

    fn output(&mut self, output: &AgentOutput) {
        if let OutputSource::Contestant { contestant_id, .. } = &output.source {
            let chars = self.chars.entry(contestant_id.clone()).or_default();
            if *chars == 0 && !output.text.is_empty() {
                self.first_output.push(contestant_id.clone());
            }
            *chars += output.text.chars().count();
        }
    }

    fn note(&mut self, line: &str) {
        match &self.display {
            Display::Bars { multi, .. } => {
                let _ = multi.println(line);
            }
            Display::Plain => eprintln!("{line}"),
            Display::Quiet => {}
        }
    }

    fn line(&self, c: &ContestantView, now_ms: i64) -> String {
        let elapsed = match c.status {
            ContestantStatus::Queued => "-".to_owned(),
            ContestantStatus::Running => c
                .started_at_ms
                .map(|s| millis(u64::try_from(now_ms - s).unwrap_or(0)))
                .unwrap_or_else(|| "-".to_owned()),
            _ => finished_duration(c),
        };
        let tokens = match (&c.usage, self.chars.get(&c.id)) {
            (Some(_), _) => tokens(c),
            (None, Some(n)) if *n > 0 => format!("{n} chars"),
            _ => "-".to_owned(),
        };
        format!(
            "{:<lw$}  {:<5}  {:<9}  {:>8}  {}",
            label(c),
            c.lane.as_str(),
            c.status.as_str(),
            elapsed,
            tokens,
            lw = self.label_width
        )
    }

    fn draw(&mut self, view: &BattleView) {
        let now = now_ms();
        match &self.display {
            Display::Bars {
                battle,
                contestants,
                ..
            } => {
                for (id, bar) in contestants {
                    let Some(c) = view.contestant(id) else {
                        continue;
                    };
                    let line = self.line(c, now);
                    if matches!(
                        c.status,
                        ContestantStatus::Queued | ContestantStatus::Running
                    ) {
                        bar.set_message(line);
                        bar.tick();
                    } else if !bar.is_finished() {
                        bar.finish_with_message(line);
                    }
                }
                let elapsed = millis(u64::try_from(now - view.created_at_ms).unwrap_or(0));
                battle.set_message(format!("{} · {elapsed}", view.status));
                battle.tick();
            }
            Display::Plain => {
                let mut lines = Vec::new();
                for c in &view.contestants {
                    if self.shown.get(&c.id) != Some(&c.status) || self.first_output.contains(&c.id)
                    {
                        lines.push(format!("  {}", self.line(c, now)));
                    }
                }
                if self.battle_status != view.status {
                    lines.push(format!("battle {}: {}", view.id, view.status));
                }
                for line in lines {
                    eprintln!("{line}");
                }
            }
            Display::Quiet => {}
        }
        for c in &view.contestants {
            self.shown.insert(c.id.clone(), c.status);
        }
        self.first_output.clear();
        self.battle_status = view.status;
    }

    /// Removes the bars, so the summary starts on a clean screen.
    fn clear(&mut self) {
        if let Display::Bars { multi, .. } = &self.display {
            let _ = multi.clear();
        }
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// `16 ms`, `1.2 s`, `3m05s`.
pub(crate) fn millis(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        format!("{:.1} s", ms as f64 / 1000.0)
    } else {
        format!("{}m{:02}s", ms / 60_000, (ms % 60_000) / 1000)
    }
}

fn label(c: &ContestantView) -> String {
    format!("{}/{}", c.identity, c.model)
}

fn finished_duration(c: &ContestantView) -> String {
    let ms = c.duration_ms.or_else(|| {
        c.started_at_ms
            .zip(c.ended_at_ms)
            .and_then(|(s, e)| u64::try_from(e - s).ok())
    });
    ms.map(millis).unwrap_or_else(|| "-".to_owned())
}

fn tokens(c: &ContestantView) -> String {
    match &c.usage {
        Some(u) => format!("{} in / {} out", u.input, u.output),
        None => "-".to_owned(),
    }
}

/// An oracle command's cell: its exit code, `timeout`, `killed` (no exit
/// code), or `-` when it did not run.
fn exit_cell(command: Option<&CommandEvidence>) -> String {
    match command {
        None => "-".to_owned(),
        Some(c) if c.timed_out => "timeout".to_owned(),
        Some(c) => c
            .exit_code
            .map(|code| code.to_string())
            .unwrap_or_else(|| "killed".to_owned()),
    }
}

/// The contestants' table: status, tier, oracle exit codes, duration,
/// tokens and the winner's mark.
fn contestants_table(view: &BattleView) -> String {
    let rows: Vec<Vec<String>> = view
        .contestants
        .iter()
        .map(|c| {
            let evidence = c.evidence.as_ref();
            let winner = view.winner_contestant_id.as_deref() == Some(c.id.as_str());
            vec![
                label(c),
                c.id.clone(),
                c.lane.as_str().to_owned(),
                c.status.as_str().to_owned(),
                if c.evidence.is_some() || c.tier != EvidenceTier::None {
                    c.tier.as_str().to_owned()
                } else {
                    "-".to_owned()
                },
                exit_cell(evidence.and_then(|e| e.repro.as_ref())),
                exit_cell(evidence.and_then(|e| e.suite.as_ref())),
                finished_duration(c),
                tokens(c),
                if winner { "★ winner" } else { "" }.to_owned(),
            ]
        })
        .collect();
    table::render(
        &[
            "CONTESTANT",
            "ID",
            "LANE",
            "STATUS",
            "TIER",
            "REPRO",
            "SUITE",
            "DURATION",
            "TOKENS",
            "WINNER",
        ],
        &rows,
    )
}

/// The verdict lines: the winner and why, or why there is none; the
/// results folder.
fn verdict(view: &BattleView) -> String {
    let mut out = String::new();
    let winner = view
        .winner_contestant_id
        .as_deref()
        .and_then(|id| view.contestant(id));
    match (view.status, winner) {
        (_, Some(c)) => {
            let source = view
                .winner_source
                .map(|s| format!(" (by the {s})"))
                .unwrap_or_default();
            out.push_str(&format!("winner: {}{source}\n", label(c)));
        }
        (BattleStatus::Completed, None) => out.push_str("winner: none\n"),
        (BattleStatus::Failed, None) => out.push_str("the battle failed\n"),
        (BattleStatus::Cancelled, None) => out.push_str("the battle was cancelled\n"),
        (status, None) => out.push_str(&format!("the battle is {status}\n")),
    }
    if let Some(reason) = view.reason.as_deref().filter(|r| !r.trim().is_empty()) {
        out.push_str(&format!("reason: {}\n", reason.trim()));
    }
    if let Some(error) = &view.error {
        out.push_str(&format!("error: {error}\n"));
    }
    if view
        .base_run
        .as_ref()
        .is_some_and(|b| b.base_repro_passes())
    {
        out.push_str("note: the repro already passes on the base, so it proves nothing\n");
    }
    for c in &view.contestants {
        if let Some(error) = &c.error {
            out.push_str(&format!("{} {}: {error}\n", label(c), c.status));
        }
    }
    out.push_str(&format!("results: {}\n", view.results_dir));
    out
}

/// What `battle run` prints at the end (without `--json`).
fn summary(view: &BattleView) -> String {
    let took = view
        .ended_at_ms
        .and_then(|e| u64::try_from(e - view.created_at_ms).ok())
        .map(|ms| format!(" in {}", millis(ms)))
        .unwrap_or_default();
    format!(
        "battle {} {}{took}\n{}{}",
        view.id,
        view.status,
        contestants_table(view),
        verdict(view)
    )
}

// ---------------------------------------------------------- the others

/// Runs `body` on an arena without a worker (it reads and writes the store;
/// the workers of a running server, or of a `battle run`, do the work).
///
/// Its workspace root is a scratch directory: starting an arena sweeps its
/// worktrees root as if no other process used it, and a server may be using
/// the real one right now.
pub(crate) fn read_only<F, Fut>(what: &str, rig: &RigArgs, body: F) -> ExitCode
where
    F: FnOnce(Arena) -> Fut,
    Fut: std::future::Future<Output = Result<String, coderig::Error>>,
{
    let outcome = rig.registry().and_then(|registry| {
        super::runtime()?.block_on(async {
            let scratch = tempfile::Builder::new()
                .prefix("coderig-cli-")
                .tempdir()
                .map_err(|e| coderig::Error::io(format!("cannot create a scratch dir: {e}")))?;
            let store = open_store(rig).await?;
            let bus = EventBus::start(store.clone());
            let mut config = ArenaConfig::new(scratch.path());
            config.run_worker = false;
            let arena = Arena::start(store, registry, bus.clone(), config).await?;
            let result = body(arena.clone()).await;
            arena.shutdown(Duration::from_secs(5)).await;
            bus.shutdown();
            result
        })
    });
    match outcome {
        Ok(text) => {
            let mut stdout = std::io::stdout().lock();
            match stdout
                .write_all(text.as_bytes())
                .and_then(|()| stdout.flush())
            {
                Ok(()) => ExitCode::SUCCESS,
                Err(_) => ExitCode::from(3),
            }
        }
        Err(e) => super::fail(what, &e),
    }
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<String, coderig::Error> {
    serde_json::to_string_pretty(value)
        .map(|text| format!("{text}\n"))
        .map_err(|e| coderig::Error::internal(format!("cannot serialize: {e}")))
}

async fn list(arena: Arena, args: ListArgs) -> Result<String, coderig::Error> {
    let filter = BattleFilter {
        project: args.project.map(|p| p.display().to_string()),
        status: args.status,
        limit: args.limit,
        cursor: args.cursor,
    };
    let page: BattlePage = arena.list_battles(&filter).await?;
    if args.json {
        return to_json(&page);
    }
    if page.battles.is_empty() {
        eprintln!("no battles");
        return Ok(String::new());
    }
    let rows: Vec<Vec<String>> = page
        .battles
        .iter()
        .map(|b| {
            let winner = b
                .winner_contestant_id
                .as_deref()
                .and_then(|id| b.contestant(id))
                .map(label)
                .unwrap_or_else(|| "-".to_owned());
            vec![
                b.id.clone(),
                b.status.as_str().to_owned(),
                b.battle_type.as_str().to_owned(),
                rfc3339(b.created_at_ms),
                b.contestants
                    .iter()
                    .map(label)
                    .collect::<Vec<_>>()
                    .join(", "),
                winner,
                short(b.prompt.lines().next().unwrap_or_default(), 50),
            ]
        })
        .collect();
    let out = table::render(
        &[
            "ID",
            "STATUS",
            "TYPE",
            "CREATED",
            "CONTESTANTS",
            "WINNER",
            "PROMPT",
        ],
        &rows,
    );
    if let Some(cursor) = &page.next_cursor {
        eprintln!("more: coderig battle list --cursor {cursor}");
    }
    Ok(out)
}

fn evidence_lines(view: &BattleView) -> String {
    let describe = |name: &str, c: Option<&CommandEvidence>| {
        c.map(|c| {
            format!(
                "{name} {} in {}",
                match exit_cell(Some(c)).as_str() {
                    "timeout" => "timed out".to_owned(),
                    "killed" => "killed".to_owned(),
                    code => format!("exit {code}"),
                },
                millis(c.duration_ms)
            )
        })
    };
    let mut out = String::new();
    if let Some(base) = &view.base_run {
        let parts: Vec<String> = [
            describe("repro", base.repro.as_ref()),
            describe("suite", base.suite.as_ref()),
        ]
        .into_iter()
        .flatten()
        .chain(base.error.iter().map(|e| format!("error: {e}")))
        .collect();
        out.push_str(&format!("  base: {}\n", parts.join("; ")));
    }
    for c in &view.contestants {
        let Some(e) = &c.evidence else { continue };
        let mut parts = vec![if e.patch_applied {
            "patch applied".to_owned()
        } else {
            "patch not applied".to_owned()
        }];
        parts.extend(describe("repro", e.repro.as_ref()));
        parts.extend(describe("suite", e.suite.as_ref()));
        parts.extend(e.error.iter().map(|e| format!("error: {e}")));
        out.push_str(&format!("  {}: {}\n", label(c), parts.join("; ")));
        for (name, command) in [("repro", &e.repro), ("suite", &e.suite)] {
            if let Some(command) = command.as_ref().filter(|c| !c.passed()) {
                for line in tail(&command.output_tail, 5) {
                    out.push_str(&format!("    {name} | {line}\n"));
                }
            }
        }
    }
    out
}

/// The last `n` non-empty lines of `text`.
fn tail(text: &str, n: usize) -> Vec<&str> {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].to_vec()
}

async fn show(arena: Arena, args: ShowArgs) -> Result<String, coderig::Error> {
    let view = arena.battle(&args.id).await?;
    if args.json {
        return to_json(&view);
    }
    let mut out = format!(
        "battle {} {} ({})\ncreated: {}{}\n",
        view.id,
        view.status,
        view.battle_type,
        rfc3339(view.created_at_ms),
        view.ended_at_ms
            .map(|e| format!(", ended {}", rfc3339(e)))
            .unwrap_or_default()
    );
    if let Some(project) = &view.project {
        let commit = view
            .base_commit
            .as_deref()
            .map(|c| format!(", commit {}", &c[..c.len().min(12)]))
            .unwrap_or_default();
        out.push_str(&format!(
            "project: {project} (base {}{commit})\n",
            view.base
        ));
    }
    out.push_str(&format!(
        "judge: {}/{}\nprompt: {}\n\n",
        view.judge.identity,
        view.judge.model,
        view.prompt.trim()
    ));
    out.push_str(&contestants_table(&view));
    let instructions: Vec<String> = view
        .contestants
        .iter()
        .filter_map(|c| {
            let text = c.instruction.as_deref()?;
            let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
            Some(format!("  {}: {text}\n", label(c)))
        })
        .collect();
    if !instructions.is_empty() {
        out.push_str("\ninstructions (after the prompt, for that contestant only):\n");
        out.push_str(&instructions.concat());
    }
    let evidence = evidence_lines(&view);
    if !evidence.is_empty() {
        out.push_str("\nevidence:\n");
        out.push_str(&evidence);
    }
    out.push('\n');
    out.push_str(&verdict(&view));
    if view.analysis_ready {
        out.push_str(&format!(
            "analysis: {}\n",
            Path::new(&view.results_dir).join("analysis.md").display()
        ));
    }
    if !view.cross_exams.is_empty() {
        out.push_str("\ncross-examinations:\n");
        for x in &view.cross_exams {
            let verdict = x.verdict.as_deref().unwrap_or("no winner");
            out.push_str(&format!(
                "  {} {}/{} {}: verdict {verdict}\n",
                x.id, x.identity, x.model, x.status
            ));
            if let Some(error) = &x.error {
                out.push_str(&format!("    error: {error}\n"));
            }
        }
    }
    Ok(out)
}

async fn stop(arena: Arena, args: StopArgs) -> Result<String, coderig::Error> {
    let view = arena.stop(&args.id).await?;
    Ok(format!(
        "battle {} {}: its agents stop at their next heartbeat\n",
        view.id, view.status
    ))
}

async fn apply(arena: Arena, args: ApplyArgs) -> Result<String, coderig::Error> {
    let view = arena.battle(&args.id).await?;
    // A contestant may be named by its id or by `identity:model` (or
    // `identity/model`, as the tables show it).
    let contestant = match args.contestant.as_deref() {
        None => None,
        Some(given) => Some(
            view.contestants
                .iter()
                .find(|c| {
                    c.id == given
                        || format!("{}:{}", c.identity, c.model) == given
                        || label(c) == given
                })
                .map(|c| c.id.clone())
                .ok_or_else(|| {
                    coderig::Error::not_found_id("contestant", given)
                        .with_detail("battle_id", view.id.clone())
                })?,
        ),
    };
    let applied = arena.apply(&view.id, contestant.as_deref()).await?;
    let who = view
        .contestant(&applied.contestant_id)
        .map(label)
        .unwrap_or_else(|| applied.contestant_id.clone());
    Ok(if applied.patch_bytes == 0 {
        format!("{who} changed nothing: {} is as it was\n", applied.project)
    } else {
        format!(
            "applied {who}'s patch ({} bytes) to {}\n",
            applied.patch_bytes, applied.project
        )
    })
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

    #[test]
    fn agents_are_identity_colon_model() {
        assert_eq!(
            agent_json("-c", "local:qwen3-coder:30b").unwrap(),
            json!({"identity": "local", "model": "qwen3-coder:30b"})
        );
        for bad in ["alice", "alice:", ":m", ""] {
            let e = agent_json("-c", bad).unwrap_err();
            assert_eq!(e.kind(), coderig::ErrorKind::InvalidInput, "{bad:?}");
        }
    }

    #[test]
    fn durations_read_like_a_clock() {
        assert_eq!(millis(16), "16 ms");
        assert_eq!(millis(1234), "1.2 s");
        assert_eq!(millis(185_000), "3m05s");
    }

    #[test]
    fn exit_cells_say_what_happened() {
        let run = |exit_code, timed_out| CommandEvidence {
            exit_code,
            duration_ms: 1,
            timed_out,
            output_tail: String::new(),
            sandbox: None,
        };
        assert_eq!(exit_cell(None), "-");
        assert_eq!(exit_cell(Some(&run(Some(0), false))), "0");
        assert_eq!(exit_cell(Some(&run(None, true))), "timeout");
        assert_eq!(exit_cell(Some(&run(None, false))), "killed");
    }
}
