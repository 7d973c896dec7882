//! The native agent's hard limits and fault handling end to end: real HTTP
//! on loopback against the scripted model server, real files, real
//! processes under the real sandbox. Each test checks the files, the
//! events and the outcome: `max_steps` (and its nudge), the doom loop,
//! format errors, bad arguments and paths, cancel / timeout / `max_wall`
//! with no process left behind, the server's faults as typed errors in
//! every wire format, read-only and bash-only tool sets, hashline edits,
//! and the turn's artifacts.

mod procs;

mod native;
use coderig::agent::native::{Api, NativeAgent, ToolsMode};
use coderig::agent::{Access, Agent, AgentError, AgentErrorKind, AgentEvent, Turn, TurnOutcome};
use coderig::hashline::line_hash;
use coderig::model::ErrorClass;
use coderig_scripted_model::script::Script;
use coderig_scripted_model::ScriptedModelServer;
use native::{agent, agent_with, call, results, run};
use procs::{processes_with, wait_none_with};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const APIS: [Api; 3] = [Api::Chat, Api::Anthropic, Api::Responses];

fn script(steps: Value) -> Script {
    Script::from_json(&json!({ "steps": steps }).to_string()).unwrap()
}

/// An editing turn in `dir` playing `model`.
fn turn(dir: &Path, model: &str) -> Turn {
    Turn::new("Do the task.")
        .model(model)
        .workdir(dir)
        .access(Access::Edit)
        .timeout(Duration::from_secs(120))
}

fn stop(outcome: &TurnOutcome) -> &str {
    outcome.stop_reason.as_deref().unwrap_or("")
}

/// The tool names a recorded request offered, whatever its wire format.
fn offered(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().or(t["name"].as_str()))
        .map(String::from)
        .collect()
}

/// The recorded model requests (not the context-window probes) of `model`.
fn model_requests(server: &ScriptedModelServer, model: &str) -> Vec<Value> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && !r.path.contains("/api/show") && r.body["model"] == model)
        .map(|r| r.body)
        .collect()
}

const NUDGE: &str = "This is your last step";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_steps_stops_the_turn_after_the_nudge() {
    let server = ScriptedModelServer::start().unwrap();
    let steps: Vec<Value> = (1..=6)
        .map(|n| json!({"calls": [call("run", json!({"command": format!("echo {n} >> steps.txt")}))]}))
        .collect();
    server.add_script("long", script(json!(steps)));
    for api in APIS {
        let dir = tempfile::tempdir().unwrap();
        let a = agent_with(&server, api, |c| c.limits.max_steps = 3);
        let model = format!("long+{}", api.as_str());
        let (result, events) = run(&a, turn(dir.path(), &model)).await;
        let outcome = result.unwrap_or_else(|e| panic!("{api}: {e}"));
        assert_eq!(
            stop(&outcome),
            "max_steps",
            "{api}: {:#?}",
            results(&events)
        );
        assert_eq!(outcome.requests, Some(3), "{api}");
        // Each of the 3 replies' calls ran, no more.
        let lines = std::fs::read_to_string(dir.path().join("steps.txt")).unwrap();
        assert_eq!(lines, "1\n2\n3\n", "{api}");
        let sent = model_requests(&server, &model);
        assert_eq!(sent.len(), 3, "{api}");
        let nudged: Vec<bool> = sent.iter().map(|b| b.to_string().contains(NUDGE)).collect();
        assert_eq!(
            nudged,
            [false, false, true],
            "{api}: the 3rd request carries the nudge"
        );
        assert!(
            matches!(events.last(), Some(AgentEvent::Finished { stop_reason: Some(s), .. }) if s == "max_steps")
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_call_five_times_warns_twice_then_stops() {
    let server = ScriptedModelServer::start().unwrap();
    let same = json!({"calls": [call("run", json!({"command": "echo x >> count.txt"}))]});
    server.add_script("loop", script(json!([same, same, same, same, same, same])));
    let dir = tempfile::tempdir().unwrap();
    let (result, events) = run(&agent(&server, Api::Chat), turn(dir.path(), "loop")).await;
    let outcome = result.unwrap();
    assert_eq!(stop(&outcome), "doom_loop");
    assert_eq!(outcome.requests, Some(5));
    // Runs 1 and 2 ran; 3 and 4 were warnings; 5 stopped the turn.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("count.txt")).unwrap(),
        "x\nx\n"
    );
    let res = results(&events);
    assert_eq!(res.len(), 5, "{res:#?}");
    assert!(res[0].0 && res[1].0, "{res:#?}");
    for (i, (ok, out)) in res[2..].iter().enumerate() {
        assert!(
            !ok && out.starts_with("REPEATED_CALL") && out.contains("Not run"),
            "{i}: {out}"
        );
    }
    assert!(
        res[2].1.contains("3 times") && res[3].1.contains("4 times"),
        "{res:#?}"
    );
    assert!(res[4].1.contains("turn stops"), "{}", res[4].1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_unreadable_calls_in_a_row_stop_the_turn_and_nothing_runs() {
    let server = ScriptedModelServer::start().unwrap();
    let steps = json!([
        // Broken beyond repair (a fence inside the arguments).
        {"calls": [call("write_file", json!("```json\n{\"path\": \"one.txt\", \"content\": \"1\"}\n```"))]},
        // Tools that do not exist.
        {"calls": [call("create_file", json!({"path": "two.txt", "content": "2"}))]},
        {"calls": [call("shell_exec", json!({"command": "touch three.txt"}))]},
        {"calls": [call("write_file", json!({"path": "four.txt", "content": "4"}))]}
    ]);
    server.add_script("broken", script(steps));
    for api in APIS {
        let dir = tempfile::tempdir().unwrap();
        let (result, events) = run(&agent(&server, api), turn(dir.path(), "broken")).await;
        let outcome = result.unwrap_or_else(|e| panic!("{api}: {e}"));
        assert_eq!(
            stop(&outcome),
            "format_errors",
            "{api}: {:#?}",
            results(&events)
        );
        assert_eq!(outcome.requests, Some(3), "{api}");
        let read = outcome.calls_read.unwrap();
        assert_eq!(read.malformed, 3, "{api}: {read:?}");
        assert_eq!(
            read.structured + read.repaired + read.from_text,
            0,
            "{api}: {read:?}"
        );
        let files: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(files.is_empty(), "{api}: something ran: {files:?}");
        let res = results(&events);
        assert_eq!(res.len(), 3, "{api}");
        assert!(res[0].1.contains("not valid JSON"), "{api}: {}", res[0].1);
        for (ok, out) in &res[1..] {
            assert!(
                !ok && out.starts_with("UNKNOWN_TOOL") && out.contains("The tools are"),
                "{api}: {out}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_arguments_and_paths_are_answered_and_the_turn_goes_on() {
    let server = ScriptedModelServer::start().unwrap();
    let root = tempfile::tempdir().unwrap();
    let work = root.path().join("work");
    std::fs::create_dir_all(work.join("src")).unwrap();
    std::fs::write(work.join("src/main.py"), "print('hi')\n").unwrap();
    let victim = root.path().join("outside.txt");
    std::fs::write(&victim, "keep me\n").unwrap();
    let steps = json!([
        {"calls": [call("read_file", json!({"path": "src/main.py", "colour": "red"}))]},
        {"calls": [call("read_file", json!({"path": "src/main.py", "offset": "ten"}))]},
        {"calls": [call("write_file", json!({"path": "../outside.txt", "content": "pwned"}))]},
        {"calls": [call("edit_file", json!({"path": victim.to_str().unwrap(), "old": "keep me", "new": "pwned"}))]},
        {"calls": [call("read_file", json!({"path": "src/mian.py"}))]},
        {"calls": [call("read_file", json!({"path": "src/main.py"}))]},
        {"calls": [call("finish", json!({"summary": "read it"}))]}
    ]);
    server.add_script("bad", script(steps));
    let (result, events) = run(&agent(&server, Api::Chat), turn(&work, "bad")).await;
    let outcome = result.unwrap();
    let res = results(&events);
    assert_eq!(stop(&outcome), "finished", "{res:#?}");
    assert_eq!(res.len(), 7, "{res:#?}");
    let code = |i: usize| res[i].1.split(':').next().unwrap_or("").to_string();
    assert_eq!(code(0), "BAD_ARGUMENTS", "{}", res[0].1);
    assert!(
        res[0].1.contains("colour") && res[0].1.contains("path"),
        "{}",
        res[0].1
    );
    assert_eq!(code(1), "BAD_ARGUMENTS", "{}", res[1].1);
    assert!(res[1].1.contains("offset"), "{}", res[1].1);
    assert_eq!(code(2), "OUTSIDE_WORKDIR", "{}", res[2].1);
    assert_eq!(code(3), "OUTSIDE_WORKDIR", "{}", res[3].1);
    assert_eq!(code(4), "NOT_FOUND", "{}", res[4].1);
    assert!(
        res[4].1.contains("src/main.py"),
        "a suggestion: {}",
        res[4].1
    );
    assert!(res[..5].iter().all(|(ok, _)| !ok));
    assert!(res[5].0 && res[5].1.contains("print('hi')"), "{}", res[5].1);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me\n");
    assert_eq!(
        std::fs::read_dir(root.path()).unwrap().count(),
        2,
        "nothing new outside"
    );
}

/// What a turn watched while it runs saw: its result, its events, how
/// long after the trigger it ended, and whether the marked processes
/// were seen alive.
struct Watched {
    result: Result<TurnOutcome, AgentError>,
    events: Vec<AgentEvent>,
    after_trigger: Option<Duration>,
    seen_alive: bool,
}

/// Runs `turn`; once its `run` call started and processes carrying
/// `marker` are alive, cancels the turn when `cancel` is set.
async fn watched(agent: &NativeAgent, turn: Turn, marker: &str, cancel: bool) -> Watched {
    let token = CancellationToken::new();
    let (tx, mut rx) = mpsc::channel(100_000);
    let triggered: Mutex<Option<Instant>> = Mutex::new(None);
    let mut seen_alive = false;
    let work = async {
        let r = agent.run(turn, tx, token.clone()).await;
        (r, Instant::now())
    };
    let watch = async {
        let mut events = vec![];
        while let Some(e) = rx.recv().await {
            if matches!(&e, AgentEvent::ToolCall { name, .. } if name == "run") {
                for _ in 0..100 {
                    if !processes_with(marker).is_empty() {
                        seen_alive = true;
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                *triggered.lock().unwrap() = Some(Instant::now());
                if cancel {
                    token.cancel();
                }
            }
            events.push(e);
        }
        events
    };
    let ((result, ended), events) = tokio::join!(work, watch);
    let after_trigger = triggered.lock().unwrap().map(|t| ended.duration_since(t));
    Watched {
        result,
        events,
        after_trigger,
        seen_alive,
    }
}

/// A `run` whose tree holds children, a grandchild that ignores SIGTERM
/// and a `setsid` daemon, every one carrying `marker`.
fn tree_script(marker: &str) -> Script {
    let command = format!(
        "sleep {marker} & sleep {marker} & setsid sleep {marker} & \
         bash -c 'trap \"\" TERM; sleep {marker}' & echo started; wait"
    );
    script(json!([
        {"calls": [call("run", json!({"command": command, "timeout_s": 300}))]},
        {"calls": [call("finish", json!({"summary": "never"}))]}
    ]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_and_timeout_end_the_turn_and_kill_the_whole_tree() {
    let server = ScriptedModelServer::start().unwrap();
    // Cancel once the tree is up.
    let marker = "876541";
    server.add_script("tree-cancel", tree_script(marker));
    let dir = tempfile::tempdir().unwrap();
    let w = watched(
        &agent(&server, Api::Chat),
        turn(dir.path(), "tree-cancel"),
        marker,
        true,
    )
    .await;
    assert!(
        w.seen_alive,
        "the tree never started: {:#?}",
        results(&w.events)
    );
    let e = w.result.unwrap_err();
    assert_eq!(e.kind, AgentErrorKind::Cancelled, "{e}");
    let took = w.after_trigger.unwrap();
    assert!(took < Duration::from_secs(4), "cancel took {took:?}");
    let left = wait_none_with(marker, Duration::from_secs(5));
    assert!(left.is_empty(), "survivors after cancel: {left:?}");
    assert!(!w
        .events
        .iter()
        .any(|e| matches!(e, AgentEvent::Finished { .. })));

    // The turn's timeout, while the tree runs.
    let marker = "876542";
    server.add_script("tree-timeout", tree_script(marker));
    let t = turn(dir.path(), "tree-timeout").timeout(Duration::from_secs(3));
    let started = Instant::now();
    let w = watched(&agent(&server, Api::Chat), t, marker, false).await;
    assert!(
        w.seen_alive,
        "the tree never started: {:#?}",
        results(&w.events)
    );
    let e = w.result.unwrap_err();
    assert_eq!(e.kind, AgentErrorKind::Timeout, "{e}");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(3) && took < Duration::from_secs(7),
        "{took:?}"
    );
    let left = wait_none_with(marker, Duration::from_secs(5));
    assert!(left.is_empty(), "survivors after the timeout: {left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_wall_ends_the_turn_cleanly_before_the_next_request() {
    let server = ScriptedModelServer::start().unwrap();
    server.add_script(
        "slow",
        script(json!([
            {"calls": [call("run", json!({"command": "sleep 1.5; echo slept > slept.txt"}))]},
            {"calls": [call("write_file", json!({"path": "late.txt", "content": "late"}))]},
            {"calls": [call("finish", json!({"summary": "done"}))]}
        ])),
    );
    let dir = tempfile::tempdir().unwrap();
    let a = agent_with(&server, Api::Chat, |c| {
        c.limits.max_wall = Some(Duration::from_secs(1))
    });
    let (result, events) = run(&a, turn(dir.path(), "slow")).await;
    let outcome = result.unwrap();
    assert_eq!(stop(&outcome), "max_wall", "{:#?}", results(&events));
    assert_eq!(outcome.requests, Some(1));
    assert!(dir.path().join("slept.txt").exists());
    assert!(!dir.path().join("late.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_faults_are_typed_errors_in_every_wire_format() {
    let server = ScriptedModelServer::start().unwrap();
    server.add_script(
        "f",
        script(json!([{"say": "partial answer", "calls": [call("list_files", json!({}))]}])),
    );
    use AgentErrorKind::{Idle, Protocol, Provider};
    use ErrorClass::{Fallback, Fatal, Retry, Stop};
    let cases = [
        ("status_500", Provider, Retry, Some(500)),
        ("status_503", Provider, Retry, Some(503)),
        ("status_429", Provider, Retry, Some(429)),
        ("status_400", Provider, Fatal, Some(400)),
        ("status_401", Provider, Fatal, Some(401)),
        ("status_404", Provider, Fallback, Some(404)),
        ("status_402", Provider, Stop, Some(402)),
        ("midstream_error", Provider, Retry, None),
        ("no_done", Protocol, Retry, None),
        ("hang", Idle, Retry, None),
    ];
    for api in APIS {
        for (flag, kind, class, status) in cases {
            let dir = tempfile::tempdir().unwrap();
            let t = turn(dir.path(), &format!("f+{flag}")).idle_timeout(Duration::from_millis(500));
            let started = Instant::now();
            let (result, events) = run(&agent(&server, api), t).await;
            let e = result.unwrap_err();
            let at = format!("{api} {flag}: {e:?}");
            assert_eq!((e.kind, e.class), (kind, class), "{at}");
            if flag.starts_with("status_") {
                assert_eq!(e.http_status, status, "{at}");
            }
            if flag == "status_429" || flag == "status_503" {
                assert!(e.retry_after_ms.is_some(), "{at}");
            }
            if kind == Provider {
                // The error is an event too, with the same class.
                assert!(
                    events
                        .iter()
                        .any(|ev| matches!(ev, AgentEvent::Error { class: c, .. } if *c == class)),
                    "{at}: {events:#?}"
                );
            }
            assert!(started.elapsed() < Duration::from_secs(5), "{at}");
            assert!(
                !events.iter().any(|e| matches!(
                    e,
                    AgentEvent::ToolCall { .. } | AgentEvent::Finished { .. }
                )),
                "{at}"
            );
        }
    }
}

/// The agentbench exercise `name` in a fresh directory: the stub and its
/// tests; returns the tempdir, the directory, the module and the answer.
fn exercise(name: &str) -> (tempfile::TempDir, PathBuf, String, String) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/agentbench/polyglot-python")
        .join(name);
    let module = name.replace('-', "_");
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join(name);
    std::fs::create_dir_all(&repo).unwrap();
    for f in [format!("{module}.py"), format!("{module}_test.py")] {
        std::fs::copy(src.join(&f), repo.join(&f)).unwrap();
    }
    let answer = std::fs::read_to_string(src.join(".meta/example.py")).unwrap();
    (dir, repo, module, answer)
}

fn tests_pass(repo: &Path, module: &str) -> bool {
    Command::new("python3")
        .args(["-m", "unittest", "-q", &format!("{module}_test")])
        .current_dir(repo)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap()
        .status
        .success()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_offers_no_writer_and_a_write_is_an_unknown_tool() {
    let server = ScriptedModelServer::start().unwrap();
    server.add_script(
        "ro",
        script(json!([
            {"calls": [call("write_file", json!({"path": "a.txt", "content": "pwned"}))]},
            {"calls": [call("read_file", json!({"path": "a.txt"}))]},
            {"calls": [call("finish", json!({"summary": "looked"}))]}
        ])),
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "original\n").unwrap();
    let t = turn(dir.path(), "ro").access(Access::ReadOnly);
    let (result, events) = run(&agent(&server, Api::Chat), t).await;
    let outcome = result.unwrap();
    assert_eq!(stop(&outcome), "finished");
    let sent = model_requests(&server, "ro");
    assert_eq!(
        offered(&sent[0]),
        ["read_file", "list_files", "grep", "finish"]
    );
    let res = results(&events);
    assert!(
        !res[0].0 && res[0].1.starts_with("UNKNOWN_TOOL"),
        "{}",
        res[0].1
    );
    assert!(res[1].0 && res[1].1.contains("original"), "{}", res[1].1);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "original\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bash_tools_offer_run_and_finish_and_fix_an_exercise_with_the_shell() {
    let server = ScriptedModelServer::start().unwrap();
    let (_dir, repo, module, answer) = exercise("bowling");
    assert!(!tests_pass(&repo, &module));
    let heredoc = format!("cat > {module}.py <<'CODERIG_EOF'\n{answer}\nCODERIG_EOF");
    server.add_script(
        "sh",
        script(json!([
            {"calls": [call("run", json!({"command": "ls && grep -n 'def ' *.py | head"}))]},
            {"calls": [call("run", json!({"command": heredoc}))]},
            {"calls": [call("run", json!({"command": format!("python3 -m unittest -q {module}_test")}))]},
            {"calls": [call("finish", json!({"summary": "fixed with the shell"}))]}
        ])),
    );
    let a = agent_with(&server, Api::Chat, |c| c.tools = ToolsMode::Bash);
    let (result, events) = run(&a, turn(&repo, "sh")).await;
    let outcome = result.unwrap();
    let res = results(&events);
    assert_eq!(stop(&outcome), "finished", "{res:#?}");
    for body in model_requests(&server, "sh") {
        assert_eq!(offered(&body), ["run", "finish"]);
    }
    assert!(res[..3].iter().all(|(ok, _)| *ok), "{res:#?}");
    assert!(tests_pass(&repo, &module), "{res:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hashline_offers_edit_lines_and_a_stale_anchor_is_refused_then_fixed() {
    let server = ScriptedModelServer::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.py"), "x = 1\ny = 2\nz = 3\n").unwrap();
    let fresh = format!("2#{}", line_hash(2, "y = 2"));
    let stale = format!("2#{}", line_hash(2, "y = 20"));
    assert_ne!(fresh, stale);
    let edit = |anchor: &str| json!({"calls": [call("edit_lines", json!({"path": "a.py", "start": anchor, "end": anchor, "lines": ["y = 42"]}))]});
    let mut stale_edit = edit(&stale);
    stale_edit["on"] = json!([{"contains": "HASHLINE_MISMATCH", "then": [edit(&fresh)]}]);
    server.add_script(
        "hl",
        script(json!([
            {"calls": [call("read_file", json!({"path": "a.py"}))]},
            stale_edit,
            {"calls": [call("finish", json!({"summary": "edited"}))]}
        ])),
    );
    let a = agent_with(&server, Api::Chat, |c| c.hashline = true);
    let (result, events) = run(&a, turn(dir.path(), "hl")).await;
    let outcome = result.unwrap();
    let res = results(&events);
    assert_eq!(stop(&outcome), "finished", "{res:#?}");
    assert!(offered(&model_requests(&server, "hl")[0]).contains(&"edit_lines".to_string()));
    assert!(res[0].1.contains(&format!("{fresh}|y = 2")), "{}", res[0].1);
    assert!(
        res[0]
            .1
            .contains(&format!("1#{}|x = 1", line_hash(1, "x = 1"))),
        "{}",
        res[0].1
    );
    assert!(
        !res[1].0 && res[1].1.starts_with("HASHLINE_MISMATCH"),
        "{}",
        res[1].1
    );
    assert!(
        res[1].1.contains(&fresh),
        "the fresh anchor is given: {}",
        res[1].1
    );
    assert!(res[2].0, "{}", res[2].1);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.py")).unwrap(),
        "x = 1\ny = 42\nz = 3\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn artifacts_hold_the_transcript_and_the_whole_cut_output() {
    let server = ScriptedModelServer::start().unwrap();
    server.add_script(
        "big",
        script(json!([
            {"calls": [call("run", json!({"command": "head -c 50000 /dev/zero | tr '\\0' x; echo; echo END"}))]},
            {"calls": [call("finish", json!({"summary": "printed"}))]}
        ])),
    );
    let dir = tempfile::tempdir().unwrap();
    let artifacts = dir.path().join("artifacts");
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let mut t = turn(&work, "big");
    t.artifacts = Some(artifacts.clone());
    let (result, events) = run(&agent(&server, Api::Chat), t).await;
    let outcome = result.unwrap();
    assert_eq!(stop(&outcome), "finished");
    let res = results(&events);
    let run_id = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::ToolCall { id, name, .. } if name == "run" => Some(id.clone()),
            _ => None,
        })
        .unwrap();
    assert!(
        res[0].0 && res[0].1.contains("characters cut"),
        "{}",
        &res[0].1[..200]
    );
    assert!(res[0].1.chars().count() < 12_000 && res[0].1.contains("END"));
    let full =
        std::fs::read_to_string(artifacts.join("outputs").join(format!("{run_id}.txt"))).unwrap();
    assert!(
        full.contains(&"x".repeat(50_000)) && full.contains("END"),
        "{}",
        full.len()
    );
    // The finish call's short output was not cut: only one file.
    assert_eq!(
        std::fs::read_dir(artifacts.join("outputs"))
            .unwrap()
            .count(),
        1
    );
    let records: Vec<Value> = std::fs::read_to_string(artifacts.join("transcript.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records[0]["type"], "start");
    assert_eq!(records[0]["model"], "big");
    let messages: Vec<&Value> = records
        .iter()
        .filter(|r| r["type"] == "message")
        .map(|r| &r["message"])
        .collect();
    let roles: Vec<&str> = messages.iter().filter_map(|m| m["role"].as_str()).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant", "tool"]);
    assert_eq!(messages[1]["calls"][0]["id"], run_id.as_str());
    assert_eq!(messages[2]["call_id"], run_id.as_str());
    assert_eq!(records.iter().filter(|r| r["type"] == "request").count(), 2);
}
