//! `coderig battle run|list|show|stop|apply` and `coderig leaderboard` run
//! as processes on a temporary rig: a `coderig.toml` of scripted agents, a
//! generated git repository with a failing shell test, the oracle's real
//! `sh` runs, a real SQLite store in a data directory outside the project.

#![cfg(unix)]

mod common;

use common::calc::{calc_project, git, CALC_BUGGY, CALC_FIXED, REPRO, SUITE};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn rig_toml() -> String {
    format!(
        r#"
[agents.fixer]
kind = "scripted"
scripts.good = [ {{ write = {{ path = "calc.sh", content = {fixed:?} }} }}, {{ text = "fixed add" }}, {{ usage = {{ input = 12, output = 5 }} }} ]
scripts.wrong = [ {{ write = {{ path = "calc.sh", content = "add() {{ echo 0; }}\n" }} }}, {{ text = "changed it" }} ]
scripts.hang = [ {{ text = "thinking" }}, {{ hang = true }} ]

[agents.judge]
kind = "scripted"
scripts.j = [ {{ text = "Both tried.\nWINNER: fixer/good" }} ]
"#,
        fixed = CALC_FIXED
    )
}

/// A rig: `coderig.toml`, the data dir `data/` and the project `calc/`
/// (a git repository whose test fails), side by side.
struct Rig {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    project: PathBuf,
}

fn rig() -> Rig {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    std::fs::write(root.join("coderig.toml"), rig_toml()).unwrap();
    let project = calc_project(&root.join("calc"));
    Rig {
        _tmp: tmp,
        root,
        project,
    }
}

impl Rig {
    /// `coderig --config … --data-dir … ARGS` in `cwd`, untouched by the
    /// caller's rig settings, stdin closed, no terminal.
    fn command(&self, cwd: &Path, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_coderig"));
        command
            .arg("--config")
            .arg(self.root.join("coderig.toml"))
            .arg("--data-dir")
            .arg(self.root.join("data"))
            .args(args)
            .current_dir(cwd)
            .env_remove("CODERIG_CONFIG")
            .env_remove("CODERIG_DATA_DIR")
            .env_remove("DATABASE_URL")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    }

    fn coderig(&self, args: &[&str]) -> Output {
        self.command(&self.root, args).output().unwrap()
    }

    /// `battle run` of `contestants` on the project with the oracle.
    fn battle(&self, contestants: &[&str], extra: &[&str]) -> Output {
        let project = self.project.display().to_string();
        let mut args = vec![
            "battle",
            "run",
            "--prompt",
            "Fix add in calc.sh so that tests/test_add.sh passes",
            "--project",
            &project,
            "--judge",
            "judge:j",
            "--repro",
            REPRO,
            "--suite",
            SUITE,
            "--oracle-timeout",
            "60s",
            "--timeout",
            "60s",
        ];
        for c in contestants {
            args.extend(["-c", c]);
        }
        args.extend(extra);
        self.coderig(&args)
    }

    fn json(&self, args: &[&str]) -> Value {
        let out = self.coderig(args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            text(&out.stderr)
        );
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", text(&out.stdout)))
    }

    fn calc(&self) -> String {
        std::fs::read_to_string(self.project.join("calc.sh")).unwrap()
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn contestant<'a>(view: &'a Value, model: &str) -> &'a Value {
    view["contestants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["model"] == model)
        .unwrap_or_else(|| panic!("no {model} in {view:#}"))
}

#[test]
fn a_coding_battle_runs_end_to_end_and_list_show_apply_stop_work_on_it() {
    let rig = rig();
    // `=` gives a contestant its own instruction (`:` may be in the model).
    let out = rig.battle(
        &["fixer:good=Keep the diff small: one line.", "fixer:wrong"],
        &["--json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // Each stored event as it comes, then the battle as it ended.
    let (events, view) = common::json_stream(&out.stdout, "battle");
    assert_eq!(events[0]["type"], "battle_started", "{events:#?}");
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "battle_updated" && e["status"] == "completed"),
        "{events:#?}"
    );
    assert_eq!(view["status"], "completed", "{view:#}");
    let good = contestant(&view, "good");
    let wrong = contestant(&view, "wrong");
    assert_eq!(view["winner_contestant_id"], good["id"], "{view:#}");
    assert_eq!(view["winner_source"], "oracle");
    assert_eq!(good["tier"], "full");
    assert_eq!(good["evidence"]["repro"]["exit_code"], 0);
    assert_eq!(wrong["tier"], "none");
    assert_eq!(wrong["evidence"]["repro"]["exit_code"], 1);
    assert_eq!(view["base_run"]["repro"]["exit_code"], 1);
    assert_eq!(good["usage"]["output"], 5);
    assert_eq!(good["instruction"], "Keep the diff small: one line.");
    assert_eq!(wrong["instruction"], Value::Null);
    assert_eq!(
        view["spec"]["contestants"][0]["instruction"],
        "Keep the diff small: one line."
    );

    // The results folder, inside the project, invisible to git.
    let dir = PathBuf::from(view["results_dir"].as_str().unwrap());
    assert!(dir.starts_with(rig.project.join("Arena")), "{dir:?}");
    for file in ["manifest.json", "analysis.md"] {
        assert!(dir.join(file).is_file(), "{file} in {dir:?}");
    }
    for c in [good, wrong] {
        let folder = dir.join(c["dir"].as_str().unwrap());
        assert!(folder.join("result.md").is_file(), "{folder:?}");
        assert!(folder.join("diff.patch").is_file(), "{folder:?}");
    }
    let patch = std::fs::read_to_string(dir.join(good["dir"].as_str().unwrap()).join("diff.patch"))
        .unwrap();
    assert!(patch.contains("calc.sh"), "{patch}");
    assert_eq!(git(&rig.project, &["status", "--porcelain"]), "");
    assert_eq!(rig.calc(), CALC_BUGGY, "the user's tree is untouched");

    // list and show read the same battle back.
    let page = rig.json(&["battle", "list", "--json"]);
    let battles = page["battles"].as_array().unwrap();
    assert_eq!(battles.len(), 1, "{page:#}");
    assert_eq!(battles[0]["id"], view["id"]);
    assert_eq!(page["next_cursor"], Value::Null);
    let project = rig.project.display().to_string();
    let same_project = rig.json(&["battle", "list", "--project", &project, "--json"]);
    assert_eq!(same_project["battles"].as_array().unwrap().len(), 1);
    let running = rig.json(&["battle", "list", "--status", "running", "--json"]);
    assert_eq!(running["battles"].as_array().unwrap().len(), 0);
    let id = view["id"].as_str().unwrap();
    let shown = rig.json(&["battle", "show", id, "--json"]);
    // The final line is the battle as `show` has it, tagged with its type.
    let mut ended = view.clone();
    ended.as_object_mut().unwrap().remove("type");
    assert_eq!(shown, ended);
    let human = rig.coderig(&["battle", "show", id]);
    assert_eq!(human.status.code(), Some(0));
    let human = text(&human.stdout);
    assert!(
        human.contains("fixer/good") && human.contains("★ winner"),
        "{human}"
    );
    assert!(
        human.contains("evidence:") && human.contains("patch applied"),
        "{human}"
    );
    assert!(
        human.contains("fixer/good: Keep the diff small: one line."),
        "{human}"
    );
    let missing = rig.coderig(&["battle", "show", "nope", "--json"]);
    assert_eq!(missing.status.code(), Some(1), "{}", text(&missing.stderr));

    // stop: the battle is finished, a conflict.
    let stop = rig.coderig(&["battle", "stop", id]);
    assert_eq!(stop.status.code(), Some(1));
    let message = text(&stop.stderr);
    assert!(
        message.contains("conflict") && message.contains("only a running or judging battle"),
        "{message}"
    );

    // apply: the winner's patch lands in the tree; a second one does not
    // apply cleanly and leaves the tree as it is.
    let apply = rig.coderig(&["battle", "apply", id]);
    assert_eq!(apply.status.code(), Some(0), "{}", text(&apply.stderr));
    assert!(
        text(&apply.stdout).contains("fixer/good"),
        "{}",
        text(&apply.stdout)
    );
    assert_eq!(rig.calc(), CALC_FIXED);
    let again = rig.coderig(&["battle", "apply", id, "--contestant", "fixer:good"]);
    assert_eq!(again.status.code(), Some(1), "{}", text(&again.stderr));
    assert!(
        text(&again.stderr).contains("does not apply cleanly"),
        "{}",
        text(&again.stderr)
    );
    assert_eq!(rig.calc(), CALC_FIXED);
    let unknown = rig.coderig(&["battle", "apply", id, "--contestant", "nobody:x"]);
    assert_eq!(unknown.status.code(), Some(1));
    assert_eq!(rig.calc(), CALC_FIXED);
}

#[test]
fn without_json_the_output_shows_each_contestant_and_a_summary_table() {
    let rig = rig();
    // From inside the project: --project defaults to the current directory.
    let out = rig
        .command(
            &rig.project,
            &[
                "battle",
                "run",
                "--prompt",
                "Fix add",
                "-c",
                "fixer:wrong",
                "-c",
                "fixer:good",
                "--judge",
                "judge:j",
                "--repro",
                REPRO,
                "--suite",
                SUITE,
            ],
        )
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    // Progress: a plain line per contestant change on stderr (no terminal).
    for model in ["good", "wrong"] {
        let lines: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains(&format!("fixer/{model} ")))
            .collect();
        assert!(
            lines.iter().any(|l| l.contains(" done ")),
            "fixer/{model}: {stderr}"
        );
    }
    assert!(stderr.contains(": completed"), "{stderr}");
    // The summary table.
    let header = stdout
        .lines()
        .find(|l| l.starts_with("CONTESTANT"))
        .unwrap_or_else(|| panic!("{stdout}"));
    for column in [
        "STATUS", "TIER", "REPRO", "SUITE", "DURATION", "TOKENS", "WINNER",
    ] {
        assert!(header.contains(column), "{header}");
    }
    let good = stdout
        .lines()
        .find(|l| l.starts_with("fixer/good "))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        good.contains("done") && good.contains("full") && good.contains("★ winner"),
        "{good}"
    );
    assert!(good.contains("12 in / 5 out"), "{good}");
    let wrong = stdout
        .lines()
        .find(|l| l.starts_with("fixer/wrong "))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        wrong.contains("none") && !wrong.contains("winner"),
        "{wrong}"
    );
    assert!(
        stdout.contains("winner: fixer/good (by the oracle)"),
        "{stdout}"
    );
    assert!(stdout.contains("results: "), "{stdout}");
    assert!(stdout.contains("/calc/Arena/"), "{stdout}");
    assert_eq!(git(&rig.project, &["status", "--porcelain"]), "");
}

#[test]
fn bad_usage_exits_2_and_creates_no_battle() {
    let rig = rig();
    let plain = rig.root.join("plain");
    std::fs::create_dir(&plain).unwrap();
    let plain = plain.display().to_string();
    let project = rig.project.display().to_string();
    let base = |contestants: &[&str], extra: &[&str]| {
        let mut args: Vec<String> = ["battle", "run", "--prompt", "Fix add", "--judge", "judge:j"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        for c in contestants {
            args.extend(["-c".to_string(), c.to_string()]);
        }
        args.extend(extra.iter().map(|s| s.to_string()));
        args
    };
    let cases: Vec<(&str, Vec<String>, &str)> = vec![
        (
            "one contestant",
            base(&["fixer:good"], &["--project", &project]),
            "contestants",
        ),
        (
            "an unknown identity",
            base(&["fixer:good", "nobody:x"], &["--project", &project]),
            "unknown identity \"nobody\"",
        ),
        (
            "a project that is no git repository",
            base(&["fixer:good", "fixer:wrong"], &["--project", &plain]),
            "git",
        ),
        (
            "a contestant without a model",
            base(&["fixer:good", "fixer"], &["--project", &project]),
            "IDENTITY:MODEL",
        ),
        (
            "a contestant with an instruction but without a model",
            base(&["fixer:good", "fixer=Be quick"], &["--project", &project]),
            "IDENTITY:MODEL=INSTRUCTION",
        ),
        (
            "a blank instruction",
            base(&["fixer:good", "fixer:wrong= "], &["--project", &project]),
            "`contestants[1].instruction`: must not be blank",
        ),
        (
            "a bad duration",
            base(
                &["fixer:good", "fixer:wrong"],
                &["--project", &project, "--timeout", "soon"],
            ),
            "contestant_timeout",
        ),
        (
            "an oracle timeout without a command",
            base(
                &["fixer:good", "fixer:wrong"],
                &["--project", &project, "--oracle-timeout", "5s"],
            ),
            "oracle",
        ),
        (
            "a bad oracle network",
            base(
                &["fixer:good", "fixer:wrong"],
                &[
                    "--project",
                    &project,
                    "--suite",
                    "true",
                    "--oracle-network",
                    "sometimes",
                ],
            ),
            "oracle.network",
        ),
        (
            "a missing project",
            base(
                &["fixer:good", "fixer:wrong"],
                &["--project", "/nonexistent/coderig-project"],
            ),
            "--project",
        ),
        (
            "an unknown battle type",
            base(&["fixer:good", "fixer:wrong"], &["--type", "poetry"]),
            "poetry",
        ),
    ];
    for (what, args, says) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = rig.coderig(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{what}: {stderr}");
        assert!(stderr.contains(says), "{what}: {stderr}");
        assert!(out.stdout.is_empty(), "{what}: {}", text(&out.stdout));
    }
    let page = rig.json(&["battle", "list", "--json"]);
    assert_eq!(page["battles"], serde_json::json!([]), "{page:#}");
    assert_eq!(git(&rig.project, &["status", "--porcelain"]), "");
    assert!(!rig.project.join("Arena").exists());
}

#[test]
fn the_leaderboard_rates_the_contestants_of_finished_battles() {
    let rig = rig();
    let empty = rig.json(&["leaderboard", "--json"]);
    for board in empty.as_array().unwrap() {
        assert_eq!(board["entries"], serde_json::json!([]), "{empty:#}");
    }
    for _ in 0..2 {
        let out = rig.battle(&["fixer:good", "fixer:wrong"], &["--json"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    let boards = rig.json(&["leaderboard", "--type", "coding", "--json"]);
    let boards = boards.as_array().unwrap();
    assert_eq!(boards.len(), 1, "{boards:#?}");
    let coding = &boards[0];
    assert_eq!(coding["battle_type"], "coding");
    assert_eq!(coding["n_battles"], 2);
    let entries = coding["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 2, "{coding:#}");
    assert_eq!(entries[0]["name"], "fixer/good");
    assert_eq!(entries[1]["name"], "fixer/wrong");
    assert!(entries[0]["score"].as_f64().unwrap() > entries[1]["score"].as_f64().unwrap());
    for e in entries {
        assert_eq!(e["n_battles"], 2);
        assert!(e["ci_low"].as_f64().unwrap() <= e["ci_high"].as_f64().unwrap());
    }
    let project = rig.project.display().to_string();
    let human = rig.coderig(&["leaderboard", "--project", &project]);
    assert_eq!(human.status.code(), Some(0), "{}", text(&human.stderr));
    let human = text(&human.stdout);
    assert!(
        human.contains("coding (2 battles with a winner)"),
        "{human}"
    );
    let first = human
        .lines()
        .find(|l| l.starts_with("1 "))
        .unwrap_or_else(|| panic!("{human}"));
    assert!(first.contains("fixer/good"), "{human}");
}

#[test]
fn ctrl_c_stops_the_battle_and_its_agents_and_exits_130() {
    let rig = rig();
    let project = rig.project.display().to_string();
    let mut child = rig
        .command(
            &rig.root,
            &[
                "battle",
                "run",
                "--prompt",
                "Fix add",
                "--project",
                &project,
                "-c",
                "fixer:hang",
                "-c",
                "fixer:good",
                "--judge",
                "judge:j",
            ],
        )
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    // Wait for the hanging agent to be at work (its first output is a line
    // of its own: a line per change) and the other to be done, so the stop
    // lands on a running agent and a settled contestant.
    let (mut hang_at_work, mut good_done) = (false, false);
    while !(hang_at_work && good_done) {
        let mut line = String::new();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "ended early: {seen}"
        );
        seen.push_str(&line);
        hang_at_work |= line.contains("fixer/hang ") && line.contains(" chars");
        good_done |= line.contains("fixer/good ") && line.contains(" done ");
    }
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{seen}{rest}");
    assert!(rest.contains("interrupted"), "{rest}");
    let stdout = text(&out.stdout);
    assert!(stdout.contains("cancelled"), "{stdout}");

    let page = rig.json(&["battle", "list", "--json"]);
    let view = &page["battles"][0];
    assert_eq!(view["status"], "cancelled", "{page:#}");
    assert_eq!(contestant(view, "hang")["status"], "cancelled", "{view:#}");
    assert_eq!(contestant(view, "good")["status"], "done", "{view:#}");
    // The agents ended with the command: no worktree is left registered.
    let worktrees = git(&rig.project, &["worktree", "list", "--porcelain"]);
    assert_eq!(
        worktrees
            .lines()
            .filter(|l| l.starts_with("worktree "))
            .count(),
        1,
        "{worktrees}"
    );
}

/// Moves every battle and event of the rig's SQLite store two hours back
/// (compaction measures age by the database's clock).
fn age_everything(rig: &Rig) {
    let db = rig.root.join("data").join("coderig.db");
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let options = sqlx::sqlite::SqliteConnectOptions::new().filename(&db);
            let pool = sqlx::sqlite::SqlitePoolOptions::new()
                .max_connections(1)
                .connect_with(options)
                .await
                .unwrap();
            for statement in [
                "UPDATE works SET updated_at = updated_at - 7200000",
                "UPDATE events SET created_at = created_at - 7200000",
            ] {
                sqlx::query(statement).execute(&pool).await.unwrap();
            }
            pool.close().await;
        });
}

#[test]
fn store_compact_deletes_old_finished_battles_and_says_what_it_needs() {
    let rig = rig();
    let out = rig.battle(&["fixer:good", "fixer:wrong"], &["--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let (_, view) = common::json_stream(&out.stdout, "battle");
    let id = view["id"].as_str().unwrap();

    let young = rig.json(&["store", "compact", "--retain", "1m", "--json"]);
    assert_eq!(
        young,
        serde_json::json!({"works": 0, "tasks": 0, "events": 0})
    );
    rig.json(&["battle", "show", id, "--json"]);

    age_everything(&rig);
    let done = rig.json(&["store", "compact", "--retain", "1h", "--json"]);
    assert_eq!(done["works"], 1, "{done}");
    assert!(
        done["tasks"].as_u64().unwrap() >= 3,
        "contestants and judge: {done}"
    );
    assert!(done["events"].as_u64().unwrap() >= 2, "{done}");
    let gone = rig.coderig(&["battle", "show", id, "--json"]);
    assert_eq!(gone.status.code(), Some(1), "{}", text(&gone.stdout));
    let human = rig.coderig(&["store", "compact", "--retain", "30d"]);
    assert_eq!(human.status.code(), Some(0), "{}", text(&human.stderr));
    assert!(
        text(&human.stdout)
            .contains("0 battle(s) and run(s), 0 task(s), 0 event(s) older than 30d"),
        "{}",
        text(&human.stdout)
    );

    // No retention given or configured: a usage error that says what to pass.
    let bare = rig.coderig(&["store", "compact", "--json"]);
    assert_eq!(bare.status.code(), Some(2));
    let body: Value = serde_json::from_slice(&bare.stdout).unwrap();
    assert_eq!(body["error"]["kind"], "invalid_input", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--retain"),
        "{body}"
    );
    let tiny = rig.coderig(&["store", "compact", "--retain", "10s", "--json"]);
    assert_eq!(tiny.status.code(), Some(2), "{}", text(&tiny.stdout));
}
