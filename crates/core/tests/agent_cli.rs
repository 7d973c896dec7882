//! `CliAgent` on real processes: a `custom` agent whose command is `sh -c`
//! printing real stream lines, so every ending of a turn (result, exit
//! code, no result, cancel, idle, missing binary, a closed receiver) is
//! driven through the runner, the parser and the end-of-turn table.

#![cfg(unix)]

mod procs;
use coderig::agent::parse::StreamFormat;
use coderig::agent::{
    Access, Agent, AgentError, AgentErrorKind, AgentEvent, CliAgent, CliConfig, CliPreset, Turn,
    TurnOutcome,
};
use coderig::sandbox::{Enforcer, NetworkPolicy, SandboxMode};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const INIT: &str = r#"{"type":"system","subtype":"init","session_id":"s1","model":"m"}"#;
const TEXT: &str = r#"{"type":"assistant","message":{"content":[{"type":"text","text":"done"}]}}"#;
const RESULT: &str = r#"{"type":"result","subtype":"success","is_error":false,"result":"done","num_turns":1,"usage":{"input_tokens":3,"output_tokens":2}}"#;

fn agent(script: &str) -> CliAgent {
    let mut c = CliConfig::new(CliPreset::Custom);
    c.command = Some("sh".into());
    c.args = vec!["-c".into(), script.into(), "sh".into(), "{prompt}".into()];
    c.format = Some(StreamFormat::ClaudeStreamJson);
    c.kill_grace = Duration::from_millis(300);
    CliAgent::new(c)
}

/// `echo` of each line, single-quoted for sh.
fn lines(ls: &[&str]) -> String {
    ls.iter()
        .map(|l| format!("echo '{l}'; "))
        .collect::<String>()
}

async fn run(
    agent: &CliAgent,
    turn: Turn,
    cancel: CancellationToken,
) -> (Result<TurnOutcome, AgentError>, Vec<AgentEvent>) {
    let (tx, mut rx) = mpsc::channel(64);
    let result = agent.run(turn, tx, cancel).await;
    let mut events = Vec::new();
    while let Ok(e) = rx.try_recv() {
        events.push(e);
    }
    (result, events)
}

fn edit(prompt: &str) -> Turn {
    Turn::new(prompt).access(Access::Edit)
}

#[tokio::test]
async fn a_result_is_an_outcome_and_a_repeated_session_is_announced_once() {
    let a = agent(&(lines(&[INIT, "not json", INIT, TEXT, RESULT]) + "exit 0"));
    let (r, events) = run(&a, edit("hi"), CancellationToken::new()).await;
    let o = r.unwrap();
    assert_eq!(o.final_text, "done");
    assert_eq!(o.session_id.as_deref(), Some("s1"));
    assert_eq!((o.usage.input, o.usage.output), (3, 2));
    assert_eq!(o.exit_code, Some(0));
    let kinds: Vec<_> = events.iter().map(|e| e.type_name()).collect();
    assert_eq!(
        kinds,
        ["session_started", "text_delta", "usage", "finished"]
    );
}

#[tokio::test]
async fn the_prompt_and_the_work_dir_reach_the_command() {
    let dir = tempfile::tempdir().unwrap();
    // Echo the prompt ($1) and the cwd back as assistant text.
    let a = agent(
        r#"printf '{"type":"assistant","message":{"content":[{"type":"text","text":"%s|%s"}]}}\n' "$1" "$(pwd)""#,
    );
    let turn = edit("fix it").workdir(dir.path());
    let (r, _) = run(&a, turn, CancellationToken::new()).await;
    let cwd = dir.path().canonicalize().unwrap();
    assert_eq!(r.unwrap().final_text, format!("fix it|{}", cwd.display()));
}

#[tokio::test]
async fn a_closed_receiver_does_not_stop_the_turn() {
    let a = agent(&(lines(&[INIT, TEXT, TEXT, TEXT, RESULT]) + "exit 0"));
    let (tx, rx) = mpsc::channel(1);
    drop(rx);
    let o = a
        .run(edit("hi"), tx, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(o.final_text, "done");
}

#[tokio::test]
async fn endings_map_to_error_kinds() {
    let err = |r: Result<TurnOutcome, AgentError>| r.unwrap_err();
    // exit 0 without a result
    let e = err(run(
        &agent("echo noise; exit 0"),
        edit("x"),
        CancellationToken::new(),
    )
    .await
    .0);
    assert_eq!(e.kind, AgentErrorKind::Protocol, "{e:?}");
    assert!(e.message.contains("without a result"), "{e:?}");
    // a non-zero exit with no error event: the stderr tail is the evidence
    let e = err(run(
        &agent("echo 'auth failed: invalid api key' >&2; exit 2"),
        edit("x"),
        CancellationToken::new(),
    )
    .await
    .0);
    assert_eq!(
        (e.kind, e.exit_code),
        (AgentErrorKind::Exit, Some(2)),
        "{e:?}"
    );
    assert!(e.stderr_tail.contains("invalid api key"), "{e:?}");
    // a non-zero exit after the agent's own error result
    let failed = r#"{"type":"result","subtype":"error_during_execution","is_error":true,"result":"API Error: 429 rate limited","api_error_status":429}"#;
    let e = err(run(
        &agent(&(lines(&[INIT, failed]) + "exit 1")),
        edit("x"),
        CancellationToken::new(),
    )
    .await
    .0);
    assert_eq!(e.kind, AgentErrorKind::Provider, "{e:?}");
    assert_eq!(e.class, coderig::model::ErrorClass::Retry, "{e:?}");
    // a missing binary
    let mut c = CliConfig::new(CliPreset::Custom);
    c.command = Some("/nonexistent/coderig-agent".into());
    let e = err(run(&CliAgent::new(c), edit("x"), CancellationToken::new())
        .await
        .0);
    assert_eq!(e.kind, AgentErrorKind::Spawn, "{e:?}");
    // a work dir that is not there
    let turn = edit("x").workdir("/nonexistent/coderig-dir");
    let e = err(run(&agent("exit 0"), turn, CancellationToken::new())
        .await
        .0);
    assert_eq!(e.kind, AgentErrorKind::Spawn, "{e:?}");
    // read_only on a custom agent that does not enforce it, with no
    // sandbox to confine it either
    let mut unconfined = Turn::new("x");
    unconfined.sandbox = Some(SandboxMode::Off);
    let e = err(run(&agent("exit 0"), unconfined, CancellationToken::new())
        .await
        .0);
    assert_eq!(e.kind, AgentErrorKind::Unavailable, "{e:?}");
    assert!(e.message.contains("enforces_read_only"), "{e:?}");
}

#[tokio::test]
async fn cancel_and_idle_end_a_hung_agent() {
    let hung = lines(&[INIT]) + "sleep 300";
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let a = agent(&hung);
    let (tx, mut rx) = mpsc::channel(8);
    let run = a.run(edit("x"), tx, cancel);
    let watcher = async move {
        // Cancel once the agent has said something: it is running.
        if rx.recv().await.is_some() {
            trigger.cancel();
        }
    };
    let (r, ()) = tokio::join!(run, watcher);
    assert_eq!(r.unwrap_err().kind, AgentErrorKind::Cancelled);

    let turn = edit("x").idle_timeout(Duration::from_millis(300));
    let e = run_err(&agent(&hung), turn).await;
    assert_eq!(e.kind, AgentErrorKind::Idle, "{e:?}");

    let ticking = "while :; do echo tick; sleep 0.05; done";
    let turn = edit("x").timeout(Duration::from_millis(500));
    let e = run_err(&agent(ticking), turn).await;
    assert_eq!(e.kind, AgentErrorKind::Timeout, "{e:?}");
}

async fn run_err(a: &CliAgent, turn: Turn) -> AgentError {
    run(a, turn, CancellationToken::new()).await.0.unwrap_err()
}

// ---- The sandbox by access level (the real kernel: Landlock, namespaces) ----

/// A work dir, a fake home with a credential store, a directory outside
/// both, and a state dir the agent declares (missing until the turn).
struct Place {
    _root: tempfile::TempDir,
    work: PathBuf,
    home: PathBuf,
    outside: PathBuf,
    state: PathBuf,
}

fn place() -> Place {
    let root = tempfile::tempdir().unwrap();
    let r = root.path().canonicalize().unwrap();
    let (work, home, outside) = (r.join("work"), r.join("home"), r.join("outside"));
    for d in [&work, &home.join(".ssh"), &outside] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(home.join(".ssh/id_ed25519"), "secret key").unwrap();
    Place {
        state: home.join(".mystate"),
        _root: root,
        work,
        home,
        outside,
    }
}

/// Tries a write to each target and prints `name=yes|no` per target on one
/// line; also whether the fake home's private key could be read.
const PROBE: &str = r#"w() { if (echo x > "$1") 2>/dev/null; then echo yes; else echo no; fi; }
echo "in=$(w in.txt) home=$(w "$HOME/outside.txt") out=$(w "$OUT/out.txt") state=$(w "$STATE/state.txt") tmp=$(w "$TMPDIR/t.txt") key=$(cat "$HOME/.ssh/id_ed25519" >/dev/null 2>&1 && echo yes || echo no)""#;

/// The custom agent running [`PROBE`] with `p`'s home, declaring its
/// state dir as `~/.mystate`.
fn probe_agent(p: &Place) -> CliAgent {
    let mut c = CliConfig::new(CliPreset::Custom);
    c.command = Some("sh".into());
    c.args = vec!["-c".into(), PROBE.into()];
    c.format = Some(StreamFormat::Text);
    c.state_dirs = vec!["~/.mystate".into()];
    for (k, v) in [("HOME", &p.home), ("OUT", &p.outside), ("STATE", &p.state)] {
        c.env.insert(k.into(), v.display().to_string());
    }
    CliAgent::new(c)
}

async fn probe(p: &Place, access: Access) -> TurnOutcome {
    let turn = Turn::new("probe").workdir(&p.work).access(access);
    let (r, _) = run(&probe_agent(p), turn, CancellationToken::new()).await;
    r.unwrap_or_else(|e| panic!("{access}: {e:?}"))
}

#[tokio::test]
async fn read_only_writes_only_its_state_dir_and_tmp_whatever_its_command_does() {
    let p = place();
    let o = probe(&p, Access::ReadOnly).await;
    assert_eq!(
        o.final_text.trim(),
        "in=no home=no out=no state=yes tmp=yes key=no",
        "{o:?}"
    );
    assert!(!p.work.join("in.txt").exists());
    assert!(!p.home.join("outside.txt").exists());
    assert!(!p.outside.join("out.txt").exists());
    assert_eq!(
        std::fs::read_to_string(p.state.join("state.txt")).unwrap(),
        "x\n"
    );
    let report = o.sandbox.expect("the outcome records the sandbox");
    assert_eq!(report.mode, SandboxMode::Enforce);
    assert!(report.confined, "{report:?}");
    assert_eq!(report.filesystem, Enforcer::Landlock);
    assert!(report.writable.contains(&p.state), "{report:?}");
    assert!(!report.writable.contains(&p.work), "{report:?}");
    assert!(report.hidden.contains(&p.home.join(".ssh")), "{report:?}");
    // No loopback URL in its env or args: a cloud agent, `allow`.
    assert_eq!(report.network, "allow");
}

#[tokio::test]
async fn edit_writes_the_work_dir_too_and_full_is_unconfined() {
    let p = place();
    let o = probe(&p, Access::Edit).await;
    assert_eq!(
        o.final_text.trim(),
        "in=yes home=no out=no state=yes tmp=yes key=no",
        "{o:?}"
    );
    assert!(p.work.join("in.txt").exists());
    assert!(!p.home.join("outside.txt").exists());
    assert!(!p.outside.join("out.txt").exists());
    let report = o.sandbox.unwrap();
    assert!(
        report.confined && report.writable.contains(&p.work),
        "{report:?}"
    );

    let o = probe(&p, Access::Full).await;
    assert_eq!(
        o.final_text.trim(),
        "in=yes home=yes out=yes state=yes tmp=yes key=yes",
        "{o:?}"
    );
    let report = o.sandbox.unwrap();
    assert_eq!((report.mode, report.confined), (SandboxMode::Off, false));
}

#[tokio::test]
async fn the_network_is_its_model_servers_loopback_port() {
    let allowed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let (a, b) = (
        allowed.local_addr().unwrap().port(),
        other.local_addr().unwrap().port(),
    );
    let dir = tempfile::tempdir().unwrap();
    let mut c = CliConfig::new(CliPreset::Custom);
    c.command = Some("bash".into());
    let try_port = |port: u16| {
        format!("$( (echo > /dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo yes || echo no)")
    };
    c.args = vec![
        "-c".into(),
        format!("echo \"model={} other={}\"", try_port(a), try_port(b)),
    ];
    c.format = Some(StreamFormat::Text);
    c.env
        .insert("MODEL_URL".into(), format!("http://127.0.0.1:{a}/v1"));
    let agent = CliAgent::new(c.clone());
    let turn = edit("x").workdir(dir.path());
    let o = run(&agent, turn.clone(), CancellationToken::new())
        .await
        .0
        .unwrap();
    assert_eq!(o.final_text.trim(), "model=yes other=no", "{o:?}");
    let report = o.sandbox.unwrap();
    assert_eq!(report.network, format!("loopback:{a}"));
    assert_eq!(report.network_enforced_by, Enforcer::Landlock);

    // A configured `network` wins over the derived one.
    c.network = Some(NetworkPolicy::Deny);
    let o = run(&CliAgent::new(c), turn, CancellationToken::new())
        .await
        .0
        .unwrap();
    assert_eq!(o.final_text.trim(), "model=no other=no", "{o:?}");
    assert_eq!(o.sandbox.unwrap().network, "deny");
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[tokio::test]
async fn an_edit_turn_in_a_worktree_can_commit_there_but_not_touch_the_checkout() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path().canonicalize().unwrap();
    let main = r.join("main");
    std::fs::create_dir_all(&main).unwrap();
    git(&main, &["init", "-q"]);
    std::fs::write(main.join("a.txt"), "a\n").unwrap();
    git(&main, &["add", "a.txt"]);
    git(&main, &["commit", "-qm", "init"]);
    let wt = r.join("wt");
    git(
        &main,
        &["worktree", "add", "-q", "--detach", wt.to_str().unwrap()],
    );
    let head_before = git(&main, &["rev-parse", "HEAD"]);
    let config_before = std::fs::read(main.join(".git/config")).unwrap();

    let mut c = CliConfig::new(CliPreset::Custom);
    c.command = Some("sh".into());
    c.args = vec![
        "-c".into(),
        r#"echo b > b.txt && git add b.txt && git -c user.name=t -c user.email=t@t commit -qm agent && echo committed
(echo x > "$MAIN/a.txt") 2>/dev/null && echo checkout-written
(echo "[x]" >> "$MAIN/.git/config") 2>/dev/null && echo config-written
(git -C "$MAIN" branch stolen) 2>/dev/null && echo branch-created
echo end"#
            .into(),
    ];
    c.format = Some(StreamFormat::Text);
    c.env.insert("MAIN".into(), main.display().to_string());
    let turn = edit("x").workdir(&wt);
    let o = run(&CliAgent::new(c), turn, CancellationToken::new())
        .await
        .0
        .unwrap();
    assert_eq!(o.final_text, "committed\nend\n", "{o:?}");
    // The commit is there, in the worktree's own history.
    assert_eq!(git(&wt, &["log", "-1", "--format=%s"]).trim(), "agent");
    assert_eq!(git(&wt, &["show", "HEAD:b.txt"]), "b\n");
    // The user's checkout, its config and its branches are untouched.
    assert_eq!(std::fs::read_to_string(main.join("a.txt")).unwrap(), "a\n");
    assert_eq!(
        std::fs::read(main.join(".git/config")).unwrap(),
        config_before
    );
    assert_eq!(git(&main, &["rev-parse", "HEAD"]), head_before);
    assert!(git(&main, &["branch", "--list", "stolen"]).is_empty());
    let report = o.sandbox.unwrap();
    assert!(
        report.writable.contains(&main.join(".git/objects")),
        "{report:?}"
    );
    assert!(!report.writable.contains(&main), "{report:?}");
}

/// The env var that makes [`kernel_without_landlock_child`] run.
const CHILD: &str = "CODERIG_AGENT_CLI_NO_LANDLOCK_CHILD";

/// Run as a child process (the kernel probe's pretence is process-wide):
/// without Landlock, `enforce` refuses with `unavailable` naming what is
/// missing and how to run anyway, and `auto` runs what the agent itself
/// confines, saying what the kernel did not.
#[tokio::test]
async fn kernel_without_landlock_child() {
    if std::env::var(CHILD).is_err() {
        return;
    }
    let p = place();
    let turn = |mode| {
        let mut t = Turn::new("probe").workdir(&p.work).access(Access::ReadOnly);
        t.sandbox = Some(mode);
        t
    };
    let e = run(
        &probe_agent(&p),
        turn(SandboxMode::Enforce),
        CancellationToken::new(),
    )
    .await
    .0
    .unwrap_err();
    assert_eq!(e.kind, AgentErrorKind::Unavailable, "{e:?}");
    assert!(e.message.contains("filesystem not confined"), "{e:?}");
    assert!(e.message.contains("mode = \"auto\""), "{e:?}");
    let ce: coderig::Error = e.into();
    assert_eq!(ce.kind(), coderig::ErrorKind::Unavailable);
    assert!(!p.state.exists() || p.state.read_dir().unwrap().next().is_none());

    // auto: the filesystem is not confined, so a custom agent that does not
    // confine itself still refuses read_only...
    let e = run(
        &probe_agent(&p),
        turn(SandboxMode::Auto),
        CancellationToken::new(),
    )
    .await
    .0
    .unwrap_err();
    assert_eq!(e.kind, AgentErrorKind::Unavailable, "{e:?}");
    // ...and an edit turn runs, its report saying what was not enforced.
    let mut t = turn(SandboxMode::Auto);
    t.access = Access::Edit;
    let o = run(&probe_agent(&p), t, CancellationToken::new())
        .await
        .0
        .unwrap();
    let report = o.sandbox.unwrap();
    assert!(!report.confined, "{report:?}");
    assert_eq!(report.filesystem, Enforcer::None);
    assert!(
        report.unenforced.iter().any(|u| u.contains("filesystem")),
        "{report:?}"
    );
    println!("child checks passed");
}

#[test]
fn enforce_refuses_and_auto_says_so_on_a_kernel_without_landlock() {
    let out = procs::child_test("kernel_without_landlock_child")
        .env(CHILD, "1")
        .env("CODERIG_SANDBOX_PRETEND_MISSING", "landlock")
        .output()
        .unwrap();
    let text = procs::passed(out);
    assert!(text.contains("child checks passed"), "{text}");
}
