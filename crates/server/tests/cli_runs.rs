//! `coderig run FLOW.yaml` run as a process on a temporary rig: a
//! `coderig.toml` of scripted agents, flow specs written to files, real
//! `sh` commands, a real SQLite store in a data directory of its own.

#![cfg(unix)]

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const RIG_TOML: &str = r#"
[agents.writer]
kind = "scripted"
script = [ { text = "no draft" } ]
scripts.draft = [ { text = "Leases make a dead worker's task come back." } ]
scripts.broken = [ { fail = { message = "the model is down", class = "fatal" } } ]
"#;

/// A rig: `coderig.toml`, the data dir `data/` (not created until a run
/// needs it) and a working directory `work/`, the project root.
struct Rig {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    work: PathBuf,
}

fn rig() -> Rig {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    std::fs::write(root.join("coderig.toml"), RIG_TOML).unwrap();
    let work = root.join("work");
    std::fs::create_dir_all(&work).unwrap();
    Rig {
        _tmp: tmp,
        root,
        work,
    }
}

impl Rig {
    fn data(&self) -> PathBuf {
        self.root.join("data")
    }

    /// Writes a flow spec file and returns its path.
    fn flow(&self, name: &str, text: &str) -> PathBuf {
        let path = self.root.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    /// `coderig --config … --data-dir … run FLOW --project-root work ARGS`
    /// in `work/`, untouched by the caller's settings, stdin closed, no
    /// terminal.
    fn command(&self, flow: &Path, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_coderig"));
        command
            .arg("--config")
            .arg(self.root.join("coderig.toml"))
            .arg("--data-dir")
            .arg(self.data())
            .arg("run")
            .arg(flow)
            .arg("--project-root")
            .arg(&self.work)
            .args(args)
            .current_dir(&self.work)
            .env_remove("CODERIG_CONFIG")
            .env_remove("CODERIG_DATA_DIR")
            .env_remove("DATABASE_URL")
            .env("USER", "tester")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    }

    fn run(&self, flow: &Path, args: &[&str]) -> Output {
        self.command(flow, args).output().unwrap()
    }

    /// `run … --json`: the event lines and the final run line.
    fn run_json(&self, flow: &Path, args: &[&str], code: i32) -> (Vec<Value>, Value) {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let out = self.run(flow, &all);
        assert_eq!(
            out.status.code(),
            Some(code),
            "{}\n{}",
            text(&out.stderr),
            text(&out.stdout)
        );
        let mut lines: Vec<Value> = text(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect();
        let run = lines.pop().expect("a final line");
        assert_eq!(run["type"], "run", "{run:#}");
        (lines, run)
    }

    /// How many runs the store holds.
    fn stored_runs(&self) -> usize {
        self.stored_runs_json().len()
    }

    /// The runs in the store (opened as the command opens it), as
    /// `GET /api/runs/:id` shows them; none when there is no data dir.
    fn stored_runs_json(&self) -> Vec<Value> {
        if !self.data().exists() {
            return Vec::new();
        }
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async {
                let store = coderig::store::open(None, &self.data()).await.unwrap();
                let page = store
                    .list_works(&coderig::store::WorkFilter::new(
                        coderig::store::WorkKind::Run,
                    ))
                    .await
                    .unwrap();
                let mut runs = Vec::new();
                for work in page.works {
                    let snapshot = store.work(&work.id).await.unwrap();
                    let view = coderig::flow::engine::view::run_view(&snapshot).unwrap();
                    runs.push(serde_json::to_value(view).unwrap());
                }
                runs
            })
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn step<'a>(run: &'a Value, id: &str) -> &'a Value {
    run["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .unwrap_or_else(|| panic!("no step {id} in {run:#}"))
}

/// The summary table's row of `step` (its cells split on runs of spaces).
fn row<'a>(stdout: &'a str, step: &str) -> Vec<&'a str> {
    let line = stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some(step))
        .unwrap_or_else(|| panic!("no row {step} in\n{stdout}"));
    line.split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect()
}

const COMPLETES: &str = r#"
name: draft-and-count
steps:
  - id: draft
    kind: agent
    agent: writer
    model: draft
    prompt: "Explain leases for {{ input.topic }}"
  - id: word-count
    kind: command
    deps: [draft]
    shell: 'printf %s "$DRAFT" | wc -w | tr -d " "'
    env: { DRAFT: "{{ results.draft }}" }
  - id: route
    kind: switch
    deps: [word-count]
    cases:
      - { label: short, condition: 'results["draft"].contains("Leases") && size(results["draft"]) < 100', steps: [ship] }
    default: [trim]
  - { id: ship, kind: command, deps: [route], argv: ["echo", "shipped"] }
  - { id: trim, kind: command, deps: [route], argv: ["echo", "too long"] }
report: |
  Draft: {{ results.draft }}
  Words: {{ results["word-count"] | trim }}
"#;

#[test]
fn a_completed_run_exits_0_and_its_table_shows_every_step() {
    let rig = rig();
    let flow = rig.flow("complete.yaml", COMPLETES);
    let out = rig.run(&flow, &["--input", "topic=job queues"]);
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}\n{stdout}");

    // The header names the run; every step has its row.
    let first = stdout.lines().next().unwrap();
    assert!(first.starts_with("run "), "{stdout}");
    assert!(first.contains("(draft-and-count) completed"), "{stdout}");
    let id = first.split_whitespace().nth(1).unwrap().to_string();
    assert_eq!(id.len(), 32, "{first}");
    assert!(
        stdout.lines().nth(1).unwrap().starts_with("STEP"),
        "{stdout}"
    );
    for (name, kind, status) in [
        ("draft", "agent", "done"),
        ("word-count", "command", "done"),
        ("route", "switch", "done"),
        ("ship", "command", "done"),
        ("trim", "command", "skipped"),
    ] {
        let cells = row(&stdout, name);
        assert_eq!(cells[1], kind, "{name}: {cells:?}");
        assert_eq!(cells[2], status, "{name}: {cells:?}");
    }
    assert_eq!(row(&stdout, "draft")[3], "1", "one attempt");
    assert_eq!(
        row(&stdout, "trim").last(),
        Some(&"branch_not_taken"),
        "{stdout}"
    );
    // The report, and where the artifacts are.
    assert!(
        stdout.contains("Draft: Leases make a dead worker's task come back."),
        "{stdout}"
    );
    assert!(stdout.contains("Words: 8"), "{stdout}");
    let run_dir = rig.data().join("runs").join(&id);
    assert!(
        stdout.contains(&format!("artifacts: {}", run_dir.display())),
        "{stdout}"
    );
    assert_eq!(
        std::fs::read_to_string(run_dir.join("ship/output.txt")).unwrap(),
        "shipped\n"
    );
    assert!(run_dir.join("report.md").is_file());

    // Not a terminal: one plain line per step change on stderr, no agent
    // output dumped.
    assert!(
        stderr.contains(&format!("run {id}: draft-and-count")),
        "{stderr}"
    );
    assert!(
        stderr
            .lines()
            .any(|l| l.trim_start().starts_with("ship ") && l.contains(" running ")),
        "{stderr}"
    );
    assert!(
        stderr
            .lines()
            .any(|l| l.trim_start().starts_with("ship ") && l.contains(" done ")),
        "{stderr}"
    );
    assert!(stderr.contains(&format!("run {id}: completed")), "{stderr}");
    assert!(!stderr.contains("Leases make"), "{stderr}");
    assert_eq!(rig.stored_runs(), 1);
}

#[test]
fn a_failed_run_exits_1_with_the_error_in_its_table() {
    let rig = rig();
    let flow = rig.flow(
        "fails.yaml",
        r#"
steps:
  - id: build
    kind: command
    shell: "echo compiling; echo 'boom: no such symbol' >&2; exit 3"
  - { id: ship, kind: command, deps: [build], argv: ["echo", "shipped"] }
  - { id: notes, kind: agent, agent: writer, model: broken, prompt: "notes" }
"#,
    );
    let out = rig.run(&flow, &[]);
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}\n{stdout}",
        text(&out.stderr)
    );
    assert!(
        stdout.lines().next().unwrap().contains(" failed"),
        "{stdout}"
    );
    let build = row(&stdout, "build");
    assert_eq!(build[2], "failed", "{build:?}");
    assert!(
        build.last().unwrap().contains("exited with status 3"),
        "{build:?}"
    );
    let ship = row(&stdout, "ship");
    assert_eq!(ship[2], "skipped", "{ship:?}");
    assert_eq!(ship.last(), Some(&"upstream_failed"));
    let notes = row(&stdout, "notes");
    assert_eq!(notes[2], "failed", "{notes:?}");
    assert!(
        notes.last().unwrap().contains("the model is down"),
        "{notes:?}"
    );
    assert!(stdout.contains("\nerror: "), "{stdout}");
    assert!(!stdout.contains("report ("), "no report: {stdout}");

    let (_, run) = rig.run_json(&flow, &[], 1);
    assert_eq!(run["status"], "failed");
    assert_eq!(step(&run, "build")["exit_code"], 3);
    assert_eq!(step(&run, "build")["output"], "compiling\n");
}

#[test]
fn a_bad_spec_or_input_exits_2_and_creates_nothing() {
    let rig = rig();
    let cases: Vec<(&str, &str, Vec<&str>, Vec<&str>)> = vec![
        (
            "unknown.yaml",
            "steps:\n  - {id: a, kind: command, argv: [echo], colour: red}\n",
            vec![],
            vec!["steps[0].colour"],
        ),
        (
            "cycle.yaml",
            "steps:\n  - {id: a, kind: command, deps: [b], argv: [echo]}\n  - {id: b, kind: command, deps: [a], argv: [echo]}\n",
            vec![],
            vec!["cycle"],
        ),
        (
            "dep.yaml",
            "steps:\n  - {id: a, kind: command, deps: [ghost], argv: [echo]}\n",
            vec![],
            vec!["steps[0].deps", "ghost"],
        ),
        (
            "cel.yaml",
            "steps:\n  - {id: a, kind: command, argv: [echo], when: 'input.x ==='}\n",
            vec![],
            vec!["steps[0].when"],
        ),
        (
            "template.yaml",
            "steps:\n  - {id: a, kind: command, argv: [echo, '{{ input.x ']}\n  - {id: b, kind: command, deps: [ghost], argv: [echo]}\n",
            vec![],
            vec!["2 problems", "steps[0].argv[1]: bad template", "steps[1].deps[0]"],
        ),
        (
            "dup.yaml",
            "steps:\n  - {id: a, kind: command, argv: [echo]}\n  - {id: a, kind: command, argv: [echo]}\n",
            vec![],
            vec!["steps[1].id"],
        ),
        ("flow.txt", "steps: []\n", vec![], vec![".yaml"]),
        (
            "twice.yaml",
            "steps:\n  - {id: a, kind: command, argv: [echo]}\n",
            vec!["--input", "x=1", "--input", "x=2"],
            vec!["--input x is given twice"],
        ),
        (
            "notjson.yaml",
            "steps:\n  - {id: a, kind: command, argv: [echo]}\n",
            vec!["--input-json", "[1, 2]"],
            vec!["JSON object"],
        ),
        (
            "approval.yaml",
            "steps:\n  - {id: gate, kind: approval, message: Ship?}\n",
            vec![],
            vec!["approval steps (gate)", "--approve", "/approve"],
        ),
        (
            "code.yaml",
            "steps:\n  - {id: judge, kind: code}\n",
            vec![],
            vec!["steps[0]", "code step"],
        ),
        (
            "agent.yaml",
            "steps:\n  - {id: a, kind: agent, agent: nobody, prompt: hi}\n",
            vec![],
            vec!["steps[0].agent", "nobody"],
        ),
    ];
    for (file, spec, args, says) in &cases {
        let flow = rig.flow(file, spec);
        let out = rig.run(&flow, args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{file}: {stderr}");
        for s in says {
            assert!(stderr.contains(s), "{file}: {s:?} in {stderr}");
        }
        assert!(out.stdout.is_empty(), "{file}: {}", text(&out.stdout));
    }
    let out = rig.run(&rig.root.join("missing.yaml"), &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("no such file"));
    let flow = rig.flow(
        "ok.yaml",
        "steps:\n  - {id: a, kind: command, argv: [echo]}\n",
    );
    let out = rig.run(&flow, &["--approve", "--reject"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert_eq!(rig.stored_runs(), 0, "nothing was created");
}

#[test]
fn inputs_reach_a_command() {
    let rig = rig();
    let flow = rig.flow(
        "inputs.yaml",
        r#"
steps:
  - id: show
    kind: command
    argv: ["echo", "{{ input.x }}|{{ input.n + 1 }}|{% if input.flag %}on{% else %}off{% endif %}|{{ input.obj.a }}|{{ input.q }}|{{ input.base }}"]
"#,
    );
    let (_, run) = rig.run_json(
        &flow,
        &[
            "--input",
            "x=hello",
            "--input",
            "n=41",
            "--input",
            "flag=false",
            "--input",
            "obj={\"a\": [1, 2]}",
            "--input",
            "q=What is X?",
            "--input-json",
            r#"{"base": "from json"}"#,
        ],
        0,
    );
    assert_eq!(
        step(&run, "show")["output"],
        "hello|42|off|[1, 2]|What is X?|from json\n",
        "{run:#}"
    );
    assert_eq!(run["input"]["n"], 41);
    assert_eq!(run["input"]["flag"], false);
}

const GATED: &str = r#"
name: gated
steps:
  - { id: build, kind: command, argv: ["echo", "built"] }
  - { id: gate, kind: approval, deps: [build], message: "Ship {{ results.build | trim }}?" }
  - { id: deploy, kind: command, deps: [gate], argv: ["echo", "deployed"] }
report: "{% if results.gate is defined %}by {{ results.gate.by }}{% endif %}"
"#;

#[test]
fn approve_and_reject_decide_every_approval_step() {
    let rig = rig();
    let flow = rig.flow("gated.yaml", GATED);
    let out = rig.run(&flow, &["--approve"]);
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}\n{stdout}");
    assert!(
        stderr.contains("approved step gate (--approve)"),
        "{stderr}"
    );
    assert_eq!(row(&stdout, "gate")[2], "done", "{stdout}");
    assert_eq!(row(&stdout, "gate").last(), Some(&"approved by tester"));
    assert_eq!(row(&stdout, "deploy")[2], "done", "{stdout}");
    assert!(stdout.contains("by tester"), "{stdout}");

    let (events, run) = rig.run_json(&flow, &["--reject"], 1);
    assert_eq!(run["status"], "failed", "{run:#}");
    let gate = step(&run, "gate");
    assert_eq!(gate["status"], "failed");
    assert_eq!(gate["approval"]["approved"], false);
    assert_eq!(gate["approval"]["by"], "tester");
    assert_eq!(gate["message"], "Ship built?");
    assert_eq!(step(&run, "deploy")["skip_reason"], "upstream_failed");
    // The step waited before it was decided.
    assert!(events.iter().any(|e| e["type"] == "step_updated"
        && e["step_id"] == "gate"
        && e["status"] == "waiting"));
}

#[test]
fn json_prints_every_stored_event_of_the_run_then_the_run() {
    let rig = rig();
    let flow = rig.flow("complete.yaml", COMPLETES);
    let (events, run) = rig.run_json(&flow, &["--input", "topic=x"], 0);
    let id = run["id"].as_str().unwrap();
    assert_eq!(run["status"], "completed");
    assert!(
        run["report"].as_str().unwrap().contains("Words: "),
        "{run:#}"
    );
    assert_eq!(events[0]["type"], "run_updated", "{:#}", events[0]);
    assert_eq!(events[0]["status"], "running");
    let last = events.last().unwrap();
    assert_eq!(last["type"], "run_updated");
    assert_eq!(last["status"], "completed");
    let mut seqs = Vec::new();
    for e in &events {
        assert_eq!(e["run_id"], id, "{e:#}");
        assert!(
            e["type"] == "run_updated" || e["type"] == "step_updated",
            "{e:#}"
        );
        seqs.push(e["seq"].as_u64().unwrap());
    }
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    // Every step's last event says what the run says of it.
    for s in run["steps"].as_array().unwrap() {
        let last = events
            .iter()
            .rfind(|e| e["step_id"] == s["id"])
            .unwrap_or_else(|| panic!("no event of {s:#}"));
        assert_eq!(last["status"], s["status"], "{s:#}");
    }
    // Compare with a second run in the same store: each run's lines are its
    // own.
    let (again, run2) = rig.run_json(&flow, &["--input", "topic=y"], 0);
    assert_ne!(run2["id"], run["id"]);
    assert!(again.iter().all(|e| e["run_id"] == run2["id"]));
    assert_eq!(again.len(), events.len());
}

/// A flow of many steps: a chain of agent steps and a fan of switches off
/// its first, so many steps change at once. Its lines are written here.
fn many_steps(chain: usize, fan: usize) -> String {
    let mut spec = String::from("name: many\nsteps:\n");
    for i in 0..chain {
        let deps = if i == 0 {
            String::new()
        } else {
            format!(", deps: [c{}]", i - 1)
        };
        spec.push_str(&format!(
            "  - {{ id: c{i}, kind: agent, agent: writer, model: draft, prompt: \"step {i}\"{deps} }}\n"
        ));
    }
    for i in 0..fan {
        spec.push_str(&format!(
            "  - {{ id: f{i}, kind: switch, deps: [c0], cases: [{{ label: yes, condition: 'true', steps: [] }}] }}\n"
        ));
    }
    spec
}

/// `coderig run` follows a run of many steps with its watch: plain progress
/// for every step, and it stops where the run is final — the summary, the
/// `--json` lines and the store all end with every step final.
#[test]
fn a_run_of_many_steps_shows_each_step_and_ends_with_every_step_final() {
    let (chain, fan) = (30, 30);
    let rig = rig();
    let flow = rig.flow("many.yaml", &many_steps(chain, fan));
    let ids: Vec<String> = (0..chain)
        .map(|i| format!("c{i}"))
        .chain((0..fan).map(|i| format!("f{i}")))
        .collect();
    let out = rig.run(&flow, &[]);
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}\n{stdout}");
    let first = stdout.lines().next().unwrap();
    assert!(first.contains("(many) completed"), "{stdout}");
    let id = first.split_whitespace().nth(1).unwrap().to_string();
    // Progress: the header, a line for each step as it settles, then the
    // run's end — and nothing of a step after it.
    assert!(
        stderr.contains(&format!("run {id}: many · {} steps", ids.len())),
        "{stderr}"
    );
    let end = format!("run {id}: completed");
    let (during, after) = stderr
        .split_once(&end)
        .unwrap_or_else(|| panic!("no {end:?} in {stderr}"));
    for step in &ids {
        assert_eq!(row(&stdout, step)[2], "done", "{step}: {stdout}");
        assert!(
            during
                .lines()
                .any(|l| l.trim_start().starts_with(&format!("{step} ")) && l.contains(" done ")),
            "{step} settled: {stderr}"
        );
    }
    assert!(after.trim().is_empty(), "after the end: {after:?}");

    // With --json: every stored event of the run once, in order, ending at
    // the run's final update with every step final before it.
    let (events, run) = rig.run_json(&flow, &[], 0);
    assert_eq!(run["status"], "completed", "{run:#}");
    let last = events.last().unwrap();
    assert_eq!(
        (&last["type"], &last["status"]),
        (&json!("run_updated"), &json!("completed")),
        "{last:#}"
    );
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    for step in &ids {
        let final_event = events
            .iter()
            .rfind(|e| e["step_id"] == step.as_str())
            .unwrap_or_else(|| panic!("no event of {step}"));
        assert_eq!(final_event["status"], "done", "{final_event:#}");
        assert_eq!(self::step(&run, step)["status"], "done", "{step}");
    }
    let stored = rig.stored_runs_json();
    assert_eq!(stored.len(), 2);
    for run in &stored {
        assert_eq!(run["status"], "completed", "{run:#}");
        assert!(
            run["steps"]
                .as_array()
                .unwrap()
                .iter()
                .all(|s| s["status"] == "done"),
            "{run:#}"
        );
    }
}

/// `/proc/PID/stat`'s state letter, `None` when there is no such process.
fn process_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) S ...`: the state follows the last `)`.
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

#[test]
fn ctrl_c_cancels_the_run_kills_its_command_and_exits_130() {
    let rig = rig();
    let pidfile = rig.root.join("hang.pid");
    let flow = rig.flow(
        "hang.yaml",
        r#"
steps:
  - { id: quick, kind: command, argv: ["echo", "quick"] }
  - id: hang
    kind: command
    deps: [quick]
    shell: 'echo $$ > "$PIDFILE.tmp"; mv "$PIDFILE.tmp" "$PIDFILE"; exec sleep 600'
    env: { PIDFILE: "{{ input.pidfile }}" }
    # Unconfined: the test reads the command's host pid, written outside
    # its cwd (a sandboxed command's pid is its PID namespace's).
    sandbox: { mode: "off" }
  - { id: after, kind: command, deps: [hang], argv: ["echo", "after"] }
"#,
    );
    let pidarg = format!("pidfile={}", pidfile.display());
    let mut child = rig.command(&flow, &["--input", &pidarg]).spawn().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "ended early: {seen}"
        );
        seen.push_str(&line);
        if line.trim_start().starts_with("hang ") && line.contains(" running ") {
            break;
        }
    }
    // The step is running; its shell writes the pid file as it starts.
    let mut waited = 0;
    while !pidfile.exists() {
        assert!(waited < 600, "no pid file: {seen}");
        std::thread::sleep(std::time::Duration::from_millis(50));
        waited += 1;
    }
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        matches!(process_state(pid), Some(s) if s != 'Z'),
        "sleep runs"
    );
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{seen}{rest}");
    assert!(rest.contains("interrupted: cancelling run"), "{rest}");
    assert!(rest.contains("its steps were stopped"), "{rest}");
    let stdout = text(&out.stdout);
    assert!(
        stdout.lines().next().unwrap().contains(" cancelled"),
        "{stdout}"
    );
    assert_eq!(row(&stdout, "quick")[2], "done", "{stdout}");
    assert_eq!(row(&stdout, "hang")[2], "cancelled", "{stdout}");
    assert_eq!(row(&stdout, "after")[2], "cancelled", "{stdout}");
    // The hung command's process is gone (or a zombie, dead and waiting
    // to be reaped by whoever inherited it).
    assert!(
        matches!(process_state(pid), None | Some('Z') | Some('X')),
        "sleep {pid} still runs: {:?}",
        process_state(pid)
    );
}

/// The interactive question, on a real pseudo-terminal (`script` gives the
/// command one): a comment, then `y`.
#[test]
fn on_a_terminal_an_approval_is_asked_and_answered() {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: no `script` (util-linux) to make a pseudo-terminal");
        return;
    }
    let rig = rig();
    let flow = rig.flow("gated.yaml", GATED);
    let line = format!(
        "{} --config {} --data-dir {} run {} --project-root {}",
        env!("CARGO_BIN_EXE_coderig"),
        rig.root.join("coderig.toml").display(),
        rig.data().display(),
        flow.display(),
        rig.work.display()
    );
    let mut child = Command::new("script")
        .args(["-q", "-e", "-c", &line, "/dev/null"])
        .current_dir(&rig.work)
        .env_remove("CODERIG_CONFIG")
        .env_remove("CODERIG_DATA_DIR")
        .env_remove("DATABASE_URL")
        .env("USER", "tester")
        .env("TERM", "dumb")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let mut output = child.stdout.take().unwrap();
    let mut seen = Vec::new();
    let mut wait_for = |what: &str, seen: &mut Vec<u8>| {
        let mut buf = [0u8; 4096];
        while !String::from_utf8_lossy(seen).contains(what) {
            let n = std::io::Read::read(&mut output, &mut buf).unwrap();
            assert!(
                n > 0,
                "ended before {what:?}: {}",
                String::from_utf8_lossy(seen)
            );
            seen.extend_from_slice(&buf[..n]);
        }
    };
    wait_for("approve step gate? [y/n/comment]", &mut seen);
    assert!(
        String::from_utf8_lossy(&seen).contains("approval step gate: Ship built?"),
        "{}",
        String::from_utf8_lossy(&seen)
    );
    input.write_all(b"after the demo\n").unwrap();
    input.flush().unwrap();
    wait_for("with the comment \"after the demo\"? [y/n]", &mut seen);
    input.write_all(b"y\n").unwrap();
    input.flush().unwrap();
    wait_for("approved step gate", &mut seen);
    let mut rest = Vec::new();
    std::io::Read::read_to_end(&mut output, &mut rest).unwrap();
    seen.extend_from_slice(&rest);
    drop(input);
    let status = child.wait().unwrap();
    let all = String::from_utf8_lossy(&seen).into_owned();
    assert_eq!(status.code(), Some(0), "{all}");
    assert!(all.contains("approved by tester"), "{all}");

    // The decision with its comment is in the store.
    let runs = rig.stored_runs_json();
    assert_eq!(runs.len(), 1);
    let gate = step(&runs[0], "gate");
    assert_eq!(gate["approval"]["approved"], true, "{gate:#}");
    assert_eq!(gate["approval"]["by"], "tester");
    assert_eq!(gate["approval"]["comment"], "after the demo");
}
