//! `--json` answers every error as JSON: each subcommand that takes the
//! flag, run as a process with bad usage (an unknown flag, a missing
//! argument, a bad value) and with errors of its own work, answers the
//! core's error body `{"ok": false, "error": {"kind", "code", "message",
//! ...details}}` on one line of stdout, nothing on stderr, with the exit
//! code of its kind (2 bad usage). `--help` and `--version` stay plain;
//! without `--json` bad usage stays clap's text on stderr.

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output, Stdio};

const RIG: &str = r#"
[agents.alice]
kind = "scripted"
script = [ { text = "hi" } ]
"#;

/// `coderig ARGS` in `dir` (a `coderig.toml` of one scripted agent, the
/// data dir `data/`), untouched by the caller's rig settings, stdin closed.
fn coderig(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_coderig"))
        .args(args)
        .current_dir(dir)
        .env_remove("CODERIG_CONFIG")
        .env_remove("CODERIG_DATA_DIR")
        .env_remove("DATABASE_URL")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

fn rig() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("coderig.toml"), RIG).unwrap();
    dir
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

/// The error body `args` answer: one JSON line on stdout, nothing on
/// stderr, `kind` and `code` agreeing, the exit code `expected`.
fn error_of(dir: &Path, args: &[&str], kind: &str, expected: i32) -> Value {
    let output = coderig(dir, args);
    let stdout = text(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(expected),
        "{args:?}: {stdout} {}",
        text(&output.stderr)
    );
    assert_eq!(text(&output.stderr), "", "{args:?}");
    assert_eq!(stdout.lines().count(), 1, "{args:?}: {stdout}");
    let body: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("{args:?}: stdout is not JSON ({e}): {stdout}"));
    assert_eq!(body["ok"], false, "{args:?}: {body}");
    let error = &body["error"];
    assert_eq!(error["kind"], kind, "{args:?}: {body}");
    assert_eq!(
        error["code"],
        kind.to_ascii_uppercase().as_str(),
        "{args:?}: {body}"
    );
    assert!(
        error["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{args:?}: {body}"
    );
    body
}

/// Every subcommand that takes `--json`, as `coderig help` lists them.
const JSON_SUBCOMMANDS: &[&str] = &[
    "agents",
    "battle list",
    "battle run",
    "battle show",
    "edit",
    "leaderboard",
    "run",
    "sandbox",
    "store compact",
    "turn",
];

/// The subcommands (and their subcommands) of `coderig help` whose help
/// offers `--json`: the list above, so a new one gets tested.
#[test]
fn the_list_of_json_subcommands_is_complete() {
    let dir = rig();
    let commands = |prefix: &[&str]| -> Vec<String> {
        let mut args = prefix.to_vec();
        args.push("--help");
        let help = text(&coderig(dir.path(), &args).stdout);
        help.split("Commands:")
            .nth(1)
            .map(|list| {
                list.lines()
                    .skip(1)
                    .take_while(|line| line.starts_with("  "))
                    .filter_map(|line| line.split_whitespace().next())
                    .filter(|name| *name != "help")
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut found = BTreeSet::new();
    for top in commands(&[]) {
        let nested = commands(&[&top]);
        let names: Vec<String> = if nested.is_empty() {
            vec![top.clone()]
        } else {
            nested.iter().map(|n| format!("{top} {n}")).collect()
        };
        for name in names {
            let mut args: Vec<&str> = name.split(' ').collect();
            args.push("--help");
            if text(&coderig(dir.path(), &args).stdout).contains("--json") {
                found.insert(name);
            }
        }
    }
    let listed: BTreeSet<String> = JSON_SUBCOMMANDS.iter().map(|s| s.to_string()).collect();
    assert_eq!(found, listed);
}

#[test]
fn bad_usage_of_every_json_subcommand_is_a_json_invalid_input() {
    let dir = rig();
    // (args, the argument at fault)
    let cases: &[(&[&str], &str)] = &[
        (&["agents", "--json", "--bogus"], "--bogus"),
        (&["battle", "list", "--json", "--limit", "many"], "--limit"),
        (&["battle", "list", "--json", "--bogus"], "--bogus"),
        (&["battle", "run", "--json"], "--contestant"),
        (
            &[
                "battle", "run", "--json", "--type", "chess", "-c", "a:b", "-c", "c:d", "--judge",
                "a:b", "--prompt", "p",
            ],
            "--type",
        ),
        (
            &[
                "battle",
                "run",
                "--json",
                "-c",
                "a:b",
                "--judge",
                "a:b",
                "--prompt",
                "p",
                "--prompt-file",
                "f",
            ],
            "--prompt",
        ),
        (&["battle", "show", "--json"], "<ID>"),
        (&["edit", "--json", "--bogus"], "--bogus"),
        (&["edit", "--json", "file.txt"], "--json"),
        (&["leaderboard", "--json", "--type", "chess"], "--type"),
        (&["run", "--json"], "<FLOW>"),
        (
            &["run", "flow.yaml", "--json", "--approve", "--reject"],
            "--approve",
        ),
        (&["sandbox", "--json"], "<CMD>..."),
        (
            &["sandbox", "--json", "--network", "everywhere", "--", "true"],
            "--network",
        ),
        (
            &["store", "compact", "--json", "--retain", "forever"],
            "--retain",
        ),
        (&["turn", "--json"], "--prompt"),
        (
            &[
                "turn", "alice", "--prompt", "hi", "--json", "--access", "root",
            ],
            "--access",
        ),
        (
            &[
                "turn",
                "alice",
                "--prompt",
                "hi",
                "--json",
                "--timeout",
                "soon",
            ],
            "--timeout",
        ),
        // --json before the subcommand's own options, and a global option
        (
            &["--data-dir", "d", "agents", "--json", "--bogus"],
            "--bogus",
        ),
    ];
    for (args, argument) in cases {
        let body = error_of(dir.path(), args, "invalid_input", 2);
        assert_eq!(body["error"]["path"], *argument, "{args:?}: {body}");
    }
    // What clap lists is in the one-line message; the usage is a detail.
    let body = error_of(dir.path(), &["turn", "--json"], "invalid_input", 2);
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("--prompt <PROMPT>") && message.contains("<IDENTITY[:MODEL]>"),
        "{message}"
    );
    assert!(!message.contains('\n'), "{message}");
    assert!(
        body["error"]["usage"]
            .as_str()
            .unwrap()
            .starts_with("coderig turn"),
        "{body}"
    );
}

#[test]
fn help_and_version_stay_plain_and_usage_without_json_stays_on_stderr() {
    let dir = rig();
    for args in [
        &["battle", "run", "--json", "--help"][..],
        &["turn", "--help", "--json"][..],
        &["--version", "--json"][..],
    ] {
        let output = coderig(dir.path(), args);
        assert_eq!(output.status.code(), Some(0), "{args:?}");
        let stdout = text(&output.stdout);
        assert!(serde_json::from_str::<Value>(&stdout).is_err(), "{stdout}");
        assert!(
            stdout.starts_with("coderig ") || stdout.contains("Usage:"),
            "{stdout}"
        );
    }
    // `--json` after `--` is the command's own argument, not coderig's.
    for args in [
        &["battle", "run"][..],
        &["agents", "--bogus"][..],
        &["sandbox", "--bogus", "--", "echo", "--json"][..],
    ] {
        let output = coderig(dir.path(), args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(output.stdout.is_empty(), "{args:?}");
        assert!(text(&output.stderr).starts_with("error: "), "{args:?}");
    }
}

/// The errors of the work itself, with `--json`, are JSON too: on stdout,
/// with the exit code of their kind.
#[test]
fn errors_of_the_work_are_json_with_their_exit_codes() {
    let dir = rig();
    std::fs::write(
        dir.path().join("bad.yaml"),
        "steps:\n  - {id: a, kind: command, argv: [\"true\"], deps: [nowhere]}\n",
    )
    .unwrap();
    let missing = dir.path().join("missing.toml");
    let missing = missing.to_str().unwrap();
    // A spec with problems: each with its path, as the HTTP API lists them.
    let body = error_of(
        dir.path(),
        &["run", "bad.yaml", "--json"],
        "invalid_input",
        2,
    );
    assert_eq!(
        body["error"]["problems"][0]["path"], "steps[0].deps[0]",
        "{body}"
    );
    error_of(
        dir.path(),
        &["run", "nowhere.yaml", "--json"],
        "invalid_input",
        2,
    );
    error_of(
        dir.path(),
        &["run", "bad.yaml", "--json", "--input-json", "[1]"],
        "invalid_input",
        2,
    );
    // No retention given or configured: the work's own usage error.
    let body = error_of(
        dir.path(),
        &["store", "compact", "--json"],
        "invalid_input",
        2,
    );
    assert_eq!(body["error"]["path"], "retain", "{body}");
    let body = error_of(
        dir.path(),
        &["battle", "show", "0123", "--json"],
        "not_found_id",
        1,
    );
    assert_eq!(body["error"]["id"], "0123", "{body}");
    error_of(
        dir.path(),
        &[
            "battle", "run", "--json", "-c", "alice:a", "-c", "carol:b", "--judge", "alice:j",
            "--prompt", "p", "--type", "qa",
        ],
        "invalid_input",
        2,
    );
    error_of(
        dir.path(),
        &[
            "battle", "run", "--json", "-c", "alice", "-c", "alice:b", "--judge", "alice:j",
            "--prompt", "p",
        ],
        "invalid_input",
        2,
    );
    error_of(
        dir.path(),
        &["turn", "carol:m", "--prompt", "hi", "--json"],
        "not_found_id",
        1,
    );
    error_of(
        dir.path(),
        &["turn", "alice:m", "--prompt-file", "nowhere.txt", "--json"],
        "io",
        3,
    );
    error_of(
        dir.path(),
        &["agents", "--json", "--config", missing],
        "io",
        3,
    );
    error_of(
        dir.path(),
        &["leaderboard", "--json", "--config", missing],
        "io",
        3,
    );
    let body = error_of(
        dir.path(),
        &["sandbox", "--json", "--write", "relative/dir", "--", "true"],
        "invalid_input",
        2,
    );
    assert_eq!(body["error"]["path"], "--write[0]", "{body}");
    error_of(dir.path(), &["edit", "--json"], "invalid_input", 2);
}
