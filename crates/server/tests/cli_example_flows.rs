//! The example flows of `examples/flows/`, each run end to end by the real
//! binary with the scripted agents of `examples/flows/coderig.toml`, as a
//! reader would run them: `coderig run examples/flows/X.yaml --config
//! examples/flows/coderig.toml --data-dir DIR ...`.

#![cfg(unix)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/flows")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `coderig run examples/flows/FLOW.yaml --config examples/flows/coderig.toml
/// --data-dir DATA ARGS` from the repository's top, stdin closed.
fn run_example(flow: &str, data: &Path, args: &[&str]) -> Output {
    let top = examples().join("../..");
    Command::new(env!("CARGO_BIN_EXE_coderig"))
        .arg("run")
        .arg(format!("examples/flows/{flow}.yaml"))
        .args(["--config", "examples/flows/coderig.toml"])
        .arg("--data-dir")
        .arg(data)
        .args(args)
        .current_dir(top)
        .env_remove("CODERIG_CONFIG")
        .env_remove("CODERIG_DATA_DIR")
        .env_remove("DATABASE_URL")
        .env("USER", "reader")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

/// The run with `--json`: its event lines and the final run line.
fn run_json(flow: &str, data: &Path, args: &[&str]) -> (Vec<Value>, Value) {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let out = run_example(flow, data, &all);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{flow}: {}\n{}",
        text(&out.stderr),
        text(&out.stdout)
    );
    let mut lines: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let run = lines.pop().unwrap();
    assert_eq!(run["type"], "run");
    (lines, run)
}

fn step<'a>(run: &'a Value, id: &str) -> &'a Value {
    run["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .unwrap_or_else(|| panic!("no step {id} in {run:#}"))
}

/// The summary table's row of `step`, its cells split on runs of spaces.
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

#[test]
fn parallel_research_completes_although_one_angle_fails() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let question = "question=How do workers survive a crash?";
    let (_, run) = run_json("parallel-research", &data, &["--input", question]);
    assert_eq!(run["status"], "completed", "{run:#}");
    assert_eq!(step(&run, "angle-web")["status"], "done");
    assert_eq!(step(&run, "angle-code")["status"], "done");
    let history = step(&run, "angle-history");
    assert_eq!(history["status"], "failed", "{history:#}");
    assert!(
        history["error"].to_string().contains("archive unreachable"),
        "{history:#}"
    );
    let synth = step(&run, "synthesize");
    assert_eq!(synth["status"], "done", "{synth:#}");
    assert_eq!(synth["output"], "Use leased claims with SKIP LOCKED.");
    let report = run["report"].as_str().unwrap();
    assert!(
        report.starts_with("# How do workers survive a crash?"),
        "{report}"
    );
    assert!(
        report.contains("Use leased claims with SKIP LOCKED."),
        "{report}"
    );

    // The human summary says the same.
    let out = run_example("parallel-research", &data, &["--input", question]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        stdout.lines().next().unwrap().contains(" completed"),
        "{stdout}"
    );
    assert_eq!(row(&stdout, "angle-history")[2], "failed");
    assert_eq!(row(&stdout, "synthesize")[2], "done");
}

#[test]
fn code_review_takes_the_approve_branch_and_ships_on_approval() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let change = "change=the lease patch";
    // Without --approve and without a terminal nobody could decide: refused.
    let out = run_example("code-review", &data, &["--input", change]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("approval steps (ship)"));

    let (events, run) = run_json("code-review", &data, &["--input", change, "--approve"]);
    assert_eq!(run["status"], "completed", "{run:#}");
    let route = step(&run, "route");
    assert_eq!(route["status"], "done");
    assert_eq!(route["switch"]["chosen"], "approve", "{route:#}");
    let ship = step(&run, "ship");
    assert_eq!(ship["status"], "done", "{ship:#}");
    assert_eq!(
        ship["message"],
        "The reviewer approved: ship the lease patch?"
    );
    assert_eq!(ship["approval"]["by"], "reader");
    let revise = step(&run, "revise");
    assert_eq!(revise["status"], "skipped");
    assert_eq!(revise["skip_reason"], "branch_not_taken");
    let summary = step(&run, "summary");
    assert_eq!(summary["status"], "done", "{summary:#}");
    assert_eq!(summary["output"], "route=approve\n");
    let report = run["report"].as_str().unwrap();
    assert!(report.contains("Verdict route: approve"), "{report}");
    assert!(report.contains("Shipped by reader."), "{report}");
    assert!(events
        .iter()
        .any(|e| e["step_id"] == "ship" && e["status"] == "waiting"));
}

const CALC_BROKEN: &str = "def add(a, b):\n    return a - b\n";
const RUN_TESTS: &str = r#"#!/bin/sh
# add(2, 3) == 5, by python3 when there is one, else by reading calc.py.
if command -v python3 >/dev/null 2>&1; then
  if python3 -c 'from calc import add; import sys; sys.exit(0 if add(2, 3) == 5 else 1)'; then
    echo "1 passed"
  else
    echo "1 failed: add(2, 3) != 5"; exit 1
  fi
elif grep -q 'return a + b' calc.py; then
  echo "1 passed"
else
  echo "1 failed: add(2, 3) != 5"; exit 1
fi
"#;

#[test]
fn fix_until_green_fixes_the_project_in_one_iteration() {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let project = root.join("calc");
    std::fs::create_dir(&project).unwrap();
    std::fs::write(project.join("calc.py"), CALC_BROKEN).unwrap();
    std::fs::write(project.join("run-tests.sh"), RUN_TESTS).unwrap();
    // The project's tests fail before the flow runs.
    let before = Command::new("sh")
        .arg("./run-tests.sh")
        .current_dir(&project)
        .output()
        .unwrap();
    assert!(!before.status.success(), "{}", text(&before.stdout));

    let data = root.join("data");
    let input = format!("project={}", project.display());
    let dir = project.display().to_string();
    let (_, run) = run_json(
        "fix-until-green",
        &data,
        &["--input", &input, "--project-root", &dir],
    );
    assert_eq!(run["status"], "completed", "{run:#}");
    let attempt = step(&run, "attempt");
    assert_eq!(attempt["status"], "done", "{attempt:#}");
    assert_eq!(attempt["output"], 1, "one iteration: {attempt:#}");
    let fix = step(&run, "fix");
    assert_eq!(fix["status"], "done", "{fix:#}");
    let tests = step(&run, "tests");
    assert_eq!(tests["status"], "done", "{tests:#}");
    assert_eq!(tests["output"], "1 passed\n");
    assert_eq!(
        tests["attempts"].as_array().map(Vec::len),
        Some(1),
        "{tests:#}"
    );
    let done = step(&run, "done");
    assert_eq!(done["status"], "done", "{done:#}");
    assert_eq!(done["output"], "green after 1 iteration(s)\n", "{done:#}");
    assert_eq!(
        std::fs::read_to_string(project.join("calc.py")).unwrap(),
        "def add(a, b):\n    return a + b\n"
    );
    let report = run["report"].as_str().unwrap();
    assert!(report.contains("green after 1 iteration(s)"), "{report}");
    assert!(report.contains("1 passed"), "{report}");
}
