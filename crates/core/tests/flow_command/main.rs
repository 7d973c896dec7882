//! Command steps on real processes (`sh`, `printf`, `cat`, `sleep`): output
//! captured byte for byte and bounded to its tail, argv passed verbatim,
//! env and cwd honoured, hung commands killed at their timeout or on
//! cancel with no process of their group left (grandchildren included),
//! start failures as typed errors, and `confine_dir`'s refusals on a real
//! directory tree with symlinks. Outcomes are asserted, never durations.
//!
//! Every command runs in its default sandbox (writable: its cwd and
//! `TMPDIR`; no network; mode `enforce`) unless a test says otherwise: the
//! sandbox's tests below run escapes on the real kernel, and the tests that
//! watch host pids (`$$`, `$!`) of a process group run [`unconfined`], since
//! a PID namespace renumbers them.

#![cfg(unix)]

#[path = "../procs/mod.rs"]
mod procs;
use coderig::flow::command::{
    confine_dir, default_policy, run_command, CommandOutcome, CommandRequest, CommandSandbox,
    Program, DEFAULT_MAX_STDOUT,
};
use coderig::sandbox::{SandboxMode, SandboxOverrides};
use coderig::ErrorKind;
use nix::sys::signal::kill;
use nix::unistd::Pid;
use procs::processes_with;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

fn shell(script: &str, cwd: &Path) -> CommandRequest {
    CommandRequest {
        kill_grace: Duration::from_millis(300),
        ..CommandRequest::new(Program::Shell(script.into()), cwd.to_path_buf())
    }
}

fn argv(args: &[&str], cwd: &Path) -> CommandRequest {
    CommandRequest::new(
        Program::Argv(args.iter().map(|a| a.to_string()).collect()),
        cwd.to_path_buf(),
    )
}

/// The same request with its sandbox `off`: for the tests of the runner's
/// own process-group guarantees, which read host pids from the script.
fn unconfined(mut request: CommandRequest) -> CommandRequest {
    request.sandbox = CommandSandbox::Policy {
        policy: Box::new(default_policy(&request.cwd)),
        mode: SandboxMode::Off,
    };
    request
}

async fn run(request: CommandRequest) -> CommandOutcome {
    run_command(request, CancellationToken::new())
        .await
        .expect("the command starts")
}

/// A script that records its pid (the group's id) in `pg.pid`, starts a
/// `sleep 1000` grandchild and records it in `gc.pid` (renamed into place,
/// so a file that exists is complete), then runs `rest`.
fn with_grandchild(rest: &str) -> String {
    format!("echo $$ > pg.pid; sleep 1000 & echo $! > gc.tmp && mv gc.tmp gc.pid; {rest}")
}

fn read_pid(path: &Path) -> i32 {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .trim()
        .parse()
        .unwrap()
}

/// Whether `pid` names a live (not zombie) process.
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state is the field after the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| !rest.trim_start().starts_with('Z'))
            .unwrap_or(true),
        Err(_) => kill(Pid::from_raw(pid), None).is_ok(),
    }
}

/// Asserts that the group recorded in `dir/pg.pid` and the grandchild in
/// `dir/gc.pid` are gone. SIGKILL is delivered asynchronously and orphans
/// are reaped by init when it gets to them, so this waits for the kernel,
/// up to a generous bound; it never asserts how long that took.
fn assert_group_gone(dir: &Path) {
    let pgid = read_pid(&dir.join("pg.pid"));
    let grandchild = read_pid(&dir.join("gc.pid"));
    for _ in 0..400 {
        if !alive(grandchild) && !procs::group_alive(pgid) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!alive(grandchild), "grandchild {grandchild} survived");
    panic!("process group {pgid} still exists");
}

/// Waits until the script has recorded its grandchild.
async fn wait_for_grandchild(dir: &Path) {
    while !dir.join("gc.pid").exists() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn stdout_is_captured_exactly_without_a_trailing_newline_and_with_binary_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(shell(r"printf 'one\n\ttwo  \r\nthree\000end'", dir.path())).await;
    assert!(out.success(), "{out:?}");
    assert_eq!(out.exit_code, Some(0));
    assert_eq!(out.signal, None);
    assert_eq!(out.stdout, "one\n\ttwo  \r\nthree\0end");
    assert!(!out.stdout_truncated);
    assert!(!out.timed_out && !out.cancelled);

    // Invalid UTF-8 is replaced, the rest kept.
    let out = run(shell(r"printf 'a\377b'", dir.path())).await;
    assert_eq!(out.stdout, "a\u{fffd}b");
    // Empty output is an empty string.
    let out = run(shell("true", dir.path())).await;
    assert_eq!(out.stdout, "");
    assert!(out.success());
}

#[tokio::test]
async fn a_non_zero_exit_is_an_outcome_that_did_not_succeed_with_its_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(shell(
        "echo partial; echo 'it broke' >&2; exit 3",
        dir.path(),
    ))
    .await;
    assert!(!out.success(), "{out:?}");
    assert_eq!(out.exit_code, Some(3));
    assert_eq!(out.signal, None);
    assert_eq!(out.stdout, "partial\n");
    assert_eq!(out.stderr_tail, "it broke\n");
    assert!(!out.timed_out && !out.cancelled);
}

#[tokio::test]
async fn a_command_killed_by_a_signal_has_no_exit_code_and_did_not_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(shell("kill -9 $$", dir.path())).await;
    assert_eq!(out.exit_code, None, "{out:?}");
    assert_eq!(out.signal, Some(9));
    assert!(!out.success());
    assert!(!out.timed_out && !out.cancelled);
}

#[tokio::test]
async fn argv_is_passed_verbatim_without_a_shell() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "printf",
        "[%s]\\n",
        "two words",
        "it's \"quoted\"",
        "$HOME",
        "*",
        "; rm -rf /",
        "",
        "back\\slash",
    ];
    let out = run(argv(&args, dir.path())).await;
    assert!(out.success(), "{out:?}");
    assert_eq!(
        out.stdout,
        "[two words]\n[it's \"quoted\"]\n[$HOME]\n[*]\n[; rm -rf /]\n[]\n[back\\slash]\n"
    );
}

#[tokio::test]
async fn env_is_added_to_the_inherited_environment() {
    let dir = tempfile::tempdir().unwrap();
    let mut request = shell(
        r#"printf '%s|%s|%s' "$CODERIG_STEP" "$WITH_SPACES" "${PATH:+path inherited}""#,
        dir.path(),
    );
    request.env.insert("CODERIG_STEP".into(), "tests".into());
    request.env.insert("WITH_SPACES".into(), "a b 'c'".into());
    let out = run(request).await;
    assert_eq!(out.stdout, "tests|a b 'c'|path inherited", "{out:?}");

    // An added variable wins over an inherited one.
    let mut request = argv(&["sh", "-c", "printf %s \"$HOME\""], dir.path());
    request.env.insert("HOME".into(), "/nowhere".into());
    assert_eq!(run(request).await.stdout, "/nowhere");
}

#[tokio::test]
async fn the_command_runs_in_its_cwd_and_stdin_is_closed() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("sub dir");
    std::fs::create_dir(&sub).unwrap();
    std::fs::write(sub.join("marker.txt"), "here").unwrap();
    let out = run(shell("pwd -P; cat marker.txt; cat", &sub)).await;
    assert!(out.success(), "{out:?}");
    let canonical = std::fs::canonicalize(&sub).unwrap();
    assert_eq!(out.stdout, format!("{}\nhere", canonical.display()));

    // A relative argv[0] with a slash is found from the cwd.
    std::fs::write(sub.join("tool.sh"), "#!/bin/sh\necho tool ran\n").unwrap();
    make_executable(&sub.join("tool.sh"));
    let out = run(argv(&["./tool.sh"], &sub)).await;
    assert_eq!(out.stdout, "tool ran\n", "{out:?}");
}

#[tokio::test]
async fn a_hung_command_is_killed_at_its_timeout_with_its_grandchild() {
    let dir = tempfile::tempdir().unwrap();
    let mut request = unconfined(shell(
        &with_grandchild("echo started; sleep 1000"),
        dir.path(),
    ));
    // Seconds, so a loaded machine still lets the script record its pids.
    request.timeout = Some(Duration::from_secs(3));
    let out = run(request).await;
    assert!(out.timed_out, "{out:?}");
    assert!(!out.cancelled);
    assert!(!out.success());
    assert_eq!(out.exit_code, None);
    assert_eq!(out.signal, Some(nix::sys::signal::Signal::SIGTERM as i32));
    assert_eq!(out.stdout, "started\n", "output before the kill is kept");
    assert_group_gone(dir.path());
}

#[tokio::test]
async fn a_command_that_ignores_sigterm_is_sigkilled_after_the_grace() {
    let dir = tempfile::tempdir().unwrap();
    let mut request = unconfined(shell(
        &with_grandchild("trap '' TERM; while :; do sleep 1; done"),
        dir.path(),
    ));
    request.timeout = Some(Duration::from_secs(3));
    let out = run(request).await;
    assert!(out.timed_out, "{out:?}");
    assert_eq!(out.signal, Some(nix::sys::signal::Signal::SIGKILL as i32));
    assert_group_gone(dir.path());
}

#[tokio::test]
async fn a_cancelled_command_is_killed_with_its_grandchild() {
    let dir = tempfile::tempdir().unwrap();
    let cancel = CancellationToken::new();
    let request = unconfined(shell(&with_grandchild("sleep 1000"), dir.path()));
    let task = tokio::spawn(run_command(request, cancel.clone()));
    wait_for_grandchild(dir.path()).await;
    cancel.cancel();
    let out = task.await.unwrap().unwrap();
    assert!(out.cancelled, "{out:?}");
    assert!(!out.timed_out);
    assert!(!out.success());
    assert_eq!(out.exit_code, None);
    assert_group_gone(dir.path());
}

#[tokio::test]
async fn a_token_cancelled_before_the_start_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cancel = CancellationToken::new();
    cancel.cancel();
    let out = run_command(shell("touch ran", dir.path()), cancel)
        .await
        .unwrap();
    assert!(out.cancelled && !out.success(), "{out:?}");
    assert!(!dir.path().join("ran").exists());
}

#[tokio::test]
async fn a_dropped_run_kills_its_group() {
    let dir = tempfile::tempdir().unwrap();
    let request = unconfined(shell(&with_grandchild("sleep 1000"), dir.path()));
    let task = tokio::spawn(run_command(request, CancellationToken::new()));
    wait_for_grandchild(dir.path()).await;
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    assert_group_gone(dir.path());
}

/// The choice documented in `flow::command`: a step ends when its command
/// does; a backgrounded grandchild holding stdout open is killed with the
/// group rather than hang the step.
#[tokio::test]
async fn a_grandchild_holding_stdout_does_not_hang_the_step_and_dies() {
    let dir = tempfile::tempdir().unwrap();
    // The grandchild inherits stdout and keeps it open for 1000 s.
    let out = run(unconfined(shell(
        &with_grandchild("echo leader done"),
        dir.path(),
    )))
    .await;
    assert!(out.success(), "{out:?}");
    assert_eq!(out.stdout, "leader done\n");
    assert_group_gone(dir.path());
}

#[tokio::test]
async fn five_mib_of_output_keeps_exactly_the_last_max_stdout_bytes() {
    let dir = tempfile::tempdir().unwrap();
    // A pattern with no period near the bound, so an off-by-one shows.
    let data: Vec<u8> = (0..5usize << 20)
        .map(|i| b' ' + ((i * 7 + i / 251) % 95) as u8)
        .collect();
    std::fs::write(dir.path().join("big.txt"), &data).unwrap();

    let out = run(argv(&["cat", "big.txt"], dir.path())).await;
    assert!(out.success(), "{out:?}");
    assert!(out.stdout_truncated);
    assert_eq!(out.stdout.len(), DEFAULT_MAX_STDOUT);
    assert!(out.stdout.as_bytes() == &data[data.len() - DEFAULT_MAX_STDOUT..]);

    let mut request = argv(&["cat", "big.txt"], dir.path());
    request.max_stdout = 1000;
    let out = run(request).await;
    assert!(out.stdout_truncated);
    assert!(out.stdout.as_bytes() == &data[data.len() - 1000..]);

    // Exactly at the bound nothing is dropped.
    let mut request = argv(&["cat", "big.txt"], dir.path());
    request.max_stdout = data.len();
    let out = run(request).await;
    assert!(!out.stdout_truncated);
    assert!(out.stdout.as_bytes() == &data[..]);
}

#[tokio::test]
async fn stderr_is_bounded_to_its_last_8_kib() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(shell(
        "i=0; while [ $i -lt 2000 ]; do echo \"line $i\" >&2; i=$((i+1)); done",
        dir.path(),
    ))
    .await;
    assert!(
        out.stderr_tail.len() <= 8 << 10,
        "{}",
        out.stderr_tail.len()
    );
    assert!(out.stderr_tail.ends_with("line 1999\n"));
    assert!(!out.stderr_tail.contains("line 0\n"));
}

#[tokio::test]
async fn a_missing_program_is_invalid_input_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let err = run_command(
        argv(&["coderig-no-such-program", "x"], dir.path()),
        CancellationToken::new(),
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert!(err.message().contains("coderig-no-such-program"), "{err}");
    assert!(err.message().contains("PATH"), "{err}");
    assert_eq!(err.details()["program"], "coderig-no-such-program");

    let err = run_command(
        argv(&["./missing.sh"], dir.path()),
        CancellationToken::new(),
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert!(err.message().contains("./missing.sh"), "{err}");
}

#[tokio::test]
async fn a_program_that_cannot_start_is_invalid_input() {
    let dir = tempfile::tempdir().unwrap();
    // Not executable.
    std::fs::write(dir.path().join("plain.sh"), "echo hi\n").unwrap();
    let err = run_command(argv(&["./plain.sh"], dir.path()), CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert!(err.message().contains("./plain.sh"), "{err}");
    assert!(err.message().contains("executable"), "{err}");

    // An empty argv and an empty program name.
    for args in [vec![], vec![String::new()]] {
        let request = CommandRequest::new(Program::Argv(args), dir.path().to_path_buf());
        let err = run_command(request, CancellationToken::new())
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    }

    // A missing cwd is named as such, not as a missing program.
    let err = run_command(
        shell("true", &dir.path().join("gone")),
        CancellationToken::new(),
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert!(err.message().contains("working directory"), "{err}");
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// `root/` (with `sub/deep/`, a file, a symlink inside and one leading
/// out) beside `outside/`, all in one temp dir; the paths canonical.
struct Tree {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
}

fn tree() -> Tree {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let root = base.join("root");
    let outside = base.join("outside");
    std::fs::create_dir_all(root.join("sub/deep")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    // A sibling whose name starts with the root's: not inside it.
    std::fs::create_dir_all(base.join("rootless")).unwrap();
    std::fs::write(root.join("file.txt"), "x").unwrap();
    std::os::unix::fs::symlink(&outside, root.join("escape")).unwrap();
    std::os::unix::fs::symlink(root.join("sub"), root.join("inner")).unwrap();
    Tree {
        _tmp: tmp,
        root,
        outside,
    }
}

fn assert_refused(result: Result<PathBuf, coderig::Error>, path: &str, roots: &[PathBuf]) {
    let err = result.expect_err("refused");
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert!(err.message().contains(path), "{err} names {path}");
    assert_eq!(err.details()["path"], path, "{err}");
    let shown: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
    assert_eq!(err.details()["roots"], serde_json::json!(shown), "{err}");
}

#[test]
fn confine_dir_admits_directories_inside_the_roots() {
    let t = tree();
    let roots = [t.root.clone()];
    let sub = t.root.join("sub");
    assert_eq!(confine_dir(None, &t.root, &roots).unwrap(), t.root);
    assert_eq!(confine_dir(Some("sub"), &t.root, &roots).unwrap(), sub);
    assert_eq!(
        confine_dir(Some("sub/deep/.."), &t.root, &roots).unwrap(),
        sub
    );
    assert_eq!(
        confine_dir(Some("./deep"), &sub, &roots).unwrap(),
        sub.join("deep")
    );
    // `..` that stays inside, an absolute path inside, a symlink inside.
    assert_eq!(confine_dir(Some(".."), &sub, &roots).unwrap(), t.root);
    let absolute = sub.join("deep").display().to_string();
    assert_eq!(
        confine_dir(Some(&absolute), &t.outside, &roots).unwrap(),
        sub.join("deep")
    );
    assert_eq!(confine_dir(Some("inner"), &t.root, &roots).unwrap(), sub);
    // Any of several roots.
    let two = [t.outside.clone(), t.root.clone()];
    assert_eq!(confine_dir(Some("sub"), &t.root, &two).unwrap(), sub);
}

#[test]
fn confine_dir_refuses_a_dotdot_escape() {
    let t = tree();
    let roots = [t.root.clone()];
    assert_refused(confine_dir(Some(".."), &t.root, &roots), "..", &roots);
    assert_refused(
        confine_dir(Some("sub/../../outside"), &t.root, &roots),
        "sub/../../outside",
        &roots,
    );
    assert_refused(
        confine_dir(Some("../rootless"), &t.root, &roots),
        "../rootless",
        &roots,
    );
    let outside = t.outside.display().to_string();
    assert_refused(
        confine_dir(Some(&outside), &t.root, &roots),
        &outside,
        &roots,
    );
    // The base itself must be inside when nothing is requested.
    assert_refused(confine_dir(None, &t.outside, &roots), &outside, &roots);
}

#[test]
fn confine_dir_refuses_a_symlink_that_leads_outside() {
    let t = tree();
    let roots = [t.root.clone()];
    assert_refused(
        confine_dir(Some("escape"), &t.root, &roots),
        "escape",
        &roots,
    );
    assert_refused(
        confine_dir(Some("inner/../escape"), &t.root, &roots),
        "inner/../escape",
        &roots,
    );
}

#[test]
fn confine_dir_refuses_what_is_not_an_existing_directory() {
    let t = tree();
    let roots = [t.root.clone()];
    assert_refused(
        confine_dir(Some("no-such-dir"), &t.root, &roots),
        "no-such-dir",
        &roots,
    );
    assert_refused(
        confine_dir(Some("file.txt"), &t.root, &roots),
        "file.txt",
        &roots,
    );
    // Even without confinement.
    assert_refused(
        confine_dir(Some("no-such-dir"), &t.root, &[]),
        "no-such-dir",
        &[],
    );
}

#[test]
fn confine_dir_with_empty_roots_allows_any_existing_directory() {
    let t = tree();
    assert_eq!(
        confine_dir(Some("escape"), &t.root, &[]).unwrap(),
        t.outside
    );
    assert_eq!(
        confine_dir(Some("../outside"), &t.root, &[]).unwrap(),
        t.outside
    );
    assert_eq!(
        confine_dir(Some("/"), &t.root, &[]).unwrap(),
        PathBuf::from("/")
    );
}

/// The other half of that choice: a process that left the group
/// (`setsid`) cannot be reached by the group kill; if it holds stdout, the
/// step waits for it at most `kill_grace` after the leader's exit, then
/// ends without it, keeping what was printed.
#[tokio::test]
async fn a_process_outside_the_group_holding_stdout_delays_the_end_by_the_grace_at_most() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(unconfined(shell(
        "setsid sleep 1000 & echo $! > escaped.pid; echo leader done",
        dir.path(),
    )))
    .await;
    let escaped = read_pid(&dir.path().join("escaped.pid"));
    // It is outside the group: the test cleans it up itself.
    let _ = kill(Pid::from_raw(escaped), nix::sys::signal::Signal::SIGKILL);
    assert!(out.success(), "{out:?}");
    assert_eq!(out.stdout, "leader done\n");
}

mod sandbox;
