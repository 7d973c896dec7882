//! The native agent end to end: real HTTP on loopback against the
//! project's scripted model server (multi-step tool scripts and the
//! quirks of real local servers, in all three wire formats), real files
//! in real git repositories, real `python3` test runs under the real
//! sandbox.
//!
//! The repositories are the 12 exercises of `tests/agentbench/
//! polyglot-python` (a stub and its failing tests each). A script plays
//! what a model would: list, grep, read, an edit that the engine refuses
//! as AMBIGUOUS, a retry with the whole stub as `old` — drifted in
//! indentation and quotes — replaced by the known-good answer, the tests,
//! and `finish`. The tests must pass afterwards.

mod native;
use coderig::agent::native::control::StopReason;
use coderig::agent::native::{Api, NativeAgent, NativeConfig};
use coderig::agent::{Access, AgentEvent, Turn, TurnOutcome};
use coderig_scripted_model::script::Script;
use coderig_scripted_model::ScriptedModelServer;
use native::{agent, call, calls, results, run};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

fn bench_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/agentbench/polyglot-python")
}

const EXERCISES: &[&str] = &[
    "affine-cipher",
    "bowling",
    "connect",
    "go-counting",
    "grade-school",
    "hangman",
    "list-ops",
    "react",
    "rest-api",
    "scale-generator",
    "variable-length-quantity",
    "zebra-puzzle",
];

/// One exercise as a fresh git repository: the stub and its tests, no
/// answer.
struct Exercise {
    _dir: tempfile::TempDir,
    repo: PathBuf,
    module: String,
    stub: String,
    answer: String,
}

fn exercise(name: &str) -> Exercise {
    let src = bench_dir().join(name);
    let module = name.replace('-', "_");
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join(name);
    std::fs::create_dir_all(&repo).unwrap();
    let stub = std::fs::read_to_string(src.join(format!("{module}.py"))).unwrap();
    std::fs::write(repo.join(format!("{module}.py")), &stub).unwrap();
    std::fs::copy(
        src.join(format!("{module}_test.py")),
        repo.join(format!("{module}_test.py")),
    )
    .unwrap();
    std::fs::write(repo.join(".gitignore"), "__pycache__/\n").unwrap();
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "."]);
    git(
        &repo,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "stub",
        ],
    );
    let answer = std::fs::read_to_string(src.join(".meta/example.py")).unwrap();
    Exercise {
        _dir: dir,
        repo,
        module,
        stub,
        answer,
    }
}

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(args)
        .current_dir(dir)
        .status()
        .unwrap()
        .success();
    assert!(ok, "git {args:?}");
}

fn tests_pass(ex: &Exercise) -> bool {
    Command::new("python3")
        .args(["-m", "unittest", "-q", &format!("{}_test", ex.module)])
        .current_dir(&ex.repo)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap()
        .status
        .success()
}

/// `text` as a model that copied it sloppily would send it: indented by
/// two spaces where the file has four, and its quotes curly.
fn drifted(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let indent = line.len() - line.trim_start_matches(' ').len();
        out.push_str(&" ".repeat(indent / 2));
        out.push_str(
            &line
                .trim_start_matches(' ')
                .replace('"', "\u{201c}")
                .replace('\'', "\u{2019}"),
        );
        out.push('\n');
    }
    out
}

/// The script that fixes `ex`: look around, meet AMBIGUOUS where the
/// stub has a repeated line, replace the whole (drifted) stub by the
/// answer, run the tests, finish.
fn fix_script(ex: &Exercise) -> Script {
    let file = format!("{}.py", ex.module);
    let whole = json!({"calls": [call("edit_file", json!({
        "path": file, "old": drifted(&ex.stub), "new": ex.answer}))]});
    let repeated = ["        pass", "    pass"]
        .into_iter()
        .find(|l| ex.stub.lines().filter(|x| x == l).count() > 1);
    let edit = match repeated {
        Some(line) => json!({
            "say": "Let me fill in the stub.",
            "calls": [call("edit_file", json!({"path": file, "old": line, "new": line.replace("pass", "return None")}))],
            "on": [{"contains": "AMBIGUOUS", "then": [whole]}]
        }),
        None => whole,
    };
    let steps = json!([
        {"think": "I should look at the repository first.", "calls": [call("list_files", json!({}))]},
        {"calls": [call("grep", json!({"pattern": "def |class "}))]},
        {"calls": [call("read_file", json!({"path": file}))]},
        edit,
        {"calls": [call("run", json!({"command": format!("python3 -m unittest -q {}_test", ex.module), "timeout_s": 60}))]},
        {"calls": [call("finish", json!({"summary": "Implemented the exercise; its tests pass."}))]}
    ]);
    Script::from_json(&json!({ "steps": steps }).to_string()).unwrap()
}

fn turn(ex: &Exercise, model: &str) -> Turn {
    Turn::new(format!(
        "Implement {}.py so that {}_test.py passes. Do not change the tests.",
        ex.module, ex.module
    ))
    .model(model)
    .workdir(&ex.repo)
    .access(Access::Edit)
    .timeout(Duration::from_secs(120))
}

/// Runs the fix script of `name` against `model` (with its flags) and
/// checks the tests pass afterwards; returns the outcome and events.
async fn fix(
    server: &ScriptedModelServer,
    api: Api,
    name: &str,
    flags: &str,
) -> (Exercise, TurnOutcome, Vec<AgentEvent>) {
    let ex = exercise(name);
    assert!(!tests_pass(&ex), "{name}: the stub passes its tests");
    let script = format!("fix-{name}");
    server.add_script(&script, fix_script(&ex));
    let a = agent(server, api);
    let (result, events) = run(&a, turn(&ex, &format!("{script}{flags}"))).await;
    let outcome = result.unwrap_or_else(|e| panic!("{name} {api} {flags}: {e}\n{events:#?}"));
    assert_eq!(
        outcome.stop_reason.as_deref(),
        Some(StopReason::Finished.as_str()),
        "{name} {api} {flags}: {:#?}",
        results(&events)
    );
    assert!(
        tests_pass(&ex),
        "{name} {api} {flags}: the tests fail after the turn: {:#?}",
        results(&events)
    );
    (ex, outcome, events)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_exercise_is_fixed_over_chat_completions() {
    let server = ScriptedModelServer::start().unwrap();
    for name in EXERCISES {
        let (ex, outcome, events) = fix(&server, Api::Chat, name, "").await;
        let names = calls(&events);
        assert_eq!(names[..3], ["list_files", "grep", "read_file"], "{name}");
        assert_eq!(names.last().map(String::as_str), Some("finish"));
        let res = results(&events);
        let ambiguous = ex.stub.lines().filter(|l| l.trim() == "pass").count() > 1;
        assert_eq!(
            res.iter().any(|(ok, o)| !ok && o.starts_with("AMBIGUOUS")),
            ambiguous,
            "{name}: {res:#?}"
        );
        // The run of the tests inside the turn passed too.
        assert!(
            res.iter().any(|(ok, o)| *ok && o.contains("exit code 0")),
            "{name}: {res:#?}"
        );
        assert_eq!(outcome.requests, Some(names.len() as u32), "{name}");
        assert_eq!(outcome.tool_calls, Some(names.len() as u32));
        let read = outcome.calls_read.unwrap();
        assert_eq!(read.structured as usize, names.len(), "{name}: {read:?}");
        assert!(outcome.usage.input > 0 && outcome.usage.output > 0);
        assert!(outcome.ttft_ms.is_some());
        // Every event type of a tool loop came.
        for ty in [
            "session_started",
            "reasoning_delta",
            "text_delta",
            "tool_call",
            "tool_result",
            "usage",
            "finished",
        ] {
            assert!(
                events.iter().any(|e| e.type_name() == ty),
                "{name}: no {ty}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exercises_are_fixed_over_anthropic_messages_and_responses() {
    let server = ScriptedModelServer::start().unwrap();
    for api in [Api::Anthropic, Api::Responses] {
        for name in ["bowling", "hangman", "list-ops", "react"] {
            fix(&server, api, name, "").await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_server_quirk_ends_in_a_correct_turn_in_every_wire_format() {
    let server = ScriptedModelServer::start().unwrap();
    for api in [Api::Chat, Api::Anthropic, Api::Responses] {
        for (flags, from_text) in [
            ("+xml_calls", true),
            ("+hermes_calls", true),
            ("+split_args", false),
            ("+no_ids", false),
            ("+index_reuse", false),
            ("+bad_json", false),
            ("+split_args+no_ids+reasoning", false),
        ] {
            let (_, outcome, _) = fix(&server, api, "scale-generator", flags).await;
            let read = outcome.calls_read.unwrap();
            if from_text {
                assert!(
                    read.from_text > 0 && read.structured == 0,
                    "{api}{flags}: {read:?}"
                );
            } else if flags.contains("bad_json") {
                assert!(read.repaired > 0, "{api}{flags}: {read:?}");
            }
            assert_eq!(read.malformed + read.cut, 0, "{api}{flags}: {read:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_calls_with_a_reused_index_are_each_run() {
    let server = ScriptedModelServer::start().unwrap();
    let ex = exercise("bowling");
    let script = json!({"steps": [
        {"calls": [call("read_file", json!({"path": "bowling.py"})), call("read_file", json!({"path": "bowling_test.py", "limit": 5}))]},
        {"calls": [call("write_file", json!({"path": "bowling.py", "content": ex.answer}))]},
        {"calls": [call("finish", json!({"summary": "done"}))]}
    ]});
    server.add_script("par", Script::from_json(&script.to_string()).unwrap());
    for flags in ["", "+index_reuse", "+index_reuse+no_ids"] {
        std::fs::write(ex.repo.join("bowling.py"), &ex.stub).unwrap();
        let (result, events) = run(
            &agent(&server, Api::Chat),
            turn(&ex, &format!("par{flags}")),
        )
        .await;
        let outcome = result.unwrap();
        let res = results(&events);
        assert_eq!(res.len(), 4, "{flags}: {res:#?}");
        assert!(
            res[0].1.contains("class BowlingGame") && res[1].1.contains("import unittest"),
            "{flags}: {res:#?}"
        );
        assert!(tests_pass(&ex), "{flags}");
        assert_eq!(outcome.stop_reason.as_deref(), Some("finished"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_cut_by_the_length_limit_is_never_run() {
    let server = ScriptedModelServer::start().unwrap();
    let ex = exercise("bowling");
    for api in [Api::Chat, Api::Anthropic, Api::Responses] {
        let script = json!({"steps": [
            {"calls": [call("write_file", json!({"path": "new.py", "content": ex.answer}))]},
            {"calls": [call("write_file", json!({"path": "new.py", "content": ex.answer}))]},
            {"calls": [call("write_file", json!({"path": "new.py", "content": ex.answer}))]},
            {"say": "giving up"}
        ]});
        server.add_script("cut", Script::from_json(&script.to_string()).unwrap());
        let (result, events) = run(&agent(&server, api), turn(&ex, "cut+length_cut")).await;
        let outcome = result.unwrap();
        assert!(!ex.repo.join("new.py").exists(), "{api}: a cut call ran");
        assert_eq!(
            outcome.stop_reason.as_deref(),
            Some("format_errors"),
            "{api}"
        );
        let read = outcome.calls_read.unwrap();
        assert_eq!(read.cut, 3, "{api}: {read:?}");
        assert!(
            results(&events)
                .iter()
                .all(|(ok, o)| !ok && o.contains("output")),
            "{api}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tiny_context_window_is_read_from_the_server_and_never_overrun() {
    let server = ScriptedModelServer::start().unwrap();
    for api in [Api::Chat, Api::Anthropic, Api::Responses] {
        // 4,096 tokens (Ollama's default): the whole fix, refusal included.
        let (_, outcome, _) = fix(&server, api, "list-ops", "+ctx_4096").await;
        assert_eq!(outcome.context_window, Some(4096), "{api}");
        // 2,048 tokens: the compact prompt and tools leave room for a
        // short fix: read, write, test, finish.
        let ex = exercise("list-ops");
        let file = format!("{}.py", ex.module);
        let script = json!({"steps": [
            {"calls": [call("read_file", json!({"path": file}))]},
            {"calls": [call("write_file", json!({"path": file, "content": ex.answer}))]},
            {"calls": [call("run", json!({"command": "python3 -m unittest -q list_ops_test"}))]},
            {"calls": [call("finish", json!({"summary": "done"}))]}
        ]});
        server.add_script("short", Script::from_json(&script.to_string()).unwrap());
        let (result, events) = run(&agent(&server, api), turn(&ex, "short+tiny_context")).await;
        let outcome = result.unwrap_or_else(|e| panic!("{api}: {e}\n{events:#?}"));
        assert_eq!(outcome.context_window, Some(2048), "{api}");
        assert_eq!(
            outcome.stop_reason.as_deref(),
            Some("finished"),
            "{api}: {:#?}",
            results(&events)
        );
        assert!(tests_pass(&ex), "{api}");
    }
    // The server refuses an over-long request with 400, which would have
    // failed the turn: every turn above finished, so none was sent.
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_task_in_a_small_window_is_summarized_and_still_finishes() {
    // The whole fix of the biggest exercise at 3,072 tokens: its reads and
    // its two edits do not fit beside each other, so the older steps
    // become coderig's digest; the scripted model reads the digest back as
    // the replies it replaced and keeps its place.
    let server = ScriptedModelServer::start().unwrap();
    for api in [Api::Chat, Api::Anthropic, Api::Responses] {
        let ex = exercise("zebra-puzzle");
        let script = format!("long-{api}");
        server.add_script(&script, fix_script(&ex));
        let records = ex.repo.parent().unwrap().join("records");
        let mut t = turn(&ex, &format!("{script}+ctx_3072"));
        t.artifacts = Some(records.clone());
        let (result, events) = run(&agent(&server, api), t).await;
        let outcome = result.unwrap_or_else(|e| panic!("{api}: {e}\n{events:#?}"));
        assert_eq!(
            outcome.stop_reason.as_deref(),
            Some("finished"),
            "{api}: {:#?}",
            results(&events)
        );
        assert!(tests_pass(&ex), "{api}");
        let log = std::fs::read_to_string(records.join("transcript.jsonl")).unwrap();
        let summarized: Vec<u64> = log
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|v| v["type"] == "request")
            .map(|v| v["summarized"].as_u64().unwrap())
            .collect();
        assert!(
            summarized.iter().any(|n| *n > 0),
            "{api}: never summarized: {summarized:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_window_the_config_overstates_is_learned_from_the_refusal() {
    // The config says 32,768 tokens, the server holds 2,048 and refuses
    // longer requests with 400: the agent shapes the refused request again
    // for a smaller window and the turn finishes, with no error event.
    let server = ScriptedModelServer::start().unwrap();
    for api in [Api::Chat, Api::Anthropic, Api::Responses] {
        let ex = exercise("list-ops");
        let script = format!("overstated-{api}");
        server.add_script(&script, fix_script(&ex));
        let mut config = NativeConfig::new(format!("{}/v1", server.base_url()), api);
        config.context_window = Some(32_768);
        let agent = NativeAgent::new(config).unwrap();
        let records = ex.repo.parent().unwrap().join("records");
        let mut t = turn(&ex, &format!("{script}+ctx_2048"));
        t.artifacts = Some(records.clone());
        let (result, events) = run(&agent, t).await;
        let outcome = result.unwrap_or_else(|e| panic!("{api}: {e}\n{events:#?}"));
        assert_eq!(outcome.stop_reason.as_deref(), Some("finished"), "{api}");
        assert!(tests_pass(&ex), "{api}");
        assert!(
            outcome.context_window.unwrap() < 2048,
            "{api}: {:?}",
            outcome.context_window
        );
        assert!(!events.iter().any(|e| e.type_name() == "error"), "{api}");
        let log = std::fs::read_to_string(records.join("transcript.jsonl")).unwrap();
        assert!(log.contains("\"context_overflow\""), "{api}");
    }
}
