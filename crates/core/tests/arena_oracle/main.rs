//! The oracle on real git repositories and real `sh` processes: a
//! contestant's patch (taken with `diff`: new, binary and renamed files)
//! applied to a fresh checkout of the base, repro and suite run there,
//! and nothing left behind — no worktree, no branch, no directory, no
//! process — while the user's tree, index, HEAD and refs stay as they were.

#![cfg(unix)]

#[path = "../workspace_support/mod.rs"]
mod workspace_support;

#[path = "../procs/mod.rs"]
mod procs;
use coderig::arena::evidence::{tier, CommandEvidence, EvidenceTier};
use coderig::arena::oracle::{
    is_cancelled, is_oracle_checkout, run_base, run_oracle, OracleRun, OUTPUT_TAIL_BYTES,
};
use coderig::arena::OracleSpec;
use coderig::sandbox::{Enforcer, NetworkPolicy, SandboxMode, SandboxReport};
use coderig::workspace::{Base, Patch, RemoveProof, Workspace};
use coderig::ErrorKind;
use nix::sys::signal::kill;
use nix::unistd::Pid;
use procs::{processes_with, wait_none_with};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use workspace_support::*;

const RUN_ALL: &str =
    "#!/bin/sh\nstatus=0\nfor t in tests/test_*.sh; do sh \"$t\" || status=1; done\nexit $status\n";

/// The fixture's repository plus a shell project with a failing test, and
/// the user's own uncommitted work: a modified tracked file and an
/// untracked one.
fn fixture() -> (Fixture, String) {
    let fx = Fixture::new();
    write(&fx.repo, "calc.sh", CALC_BUGGY);
    write(&fx.repo, "tests/test_add.sh", TEST_ADD);
    write(&fx.repo, "tests/run_all.sh", RUN_ALL);
    commit_all(&fx.repo, "calc with a bug");
    let base = git(&fx.repo, &["rev-parse", "HEAD"]);
    write(&fx.repo, "README.md", "# demo\n\nthe user's unsaved edit\n");
    write(&fx.repo, "notes.txt", "the user's untracked notes\n");
    (fx, base)
}

fn spec(timeout: Duration) -> OracleSpec {
    OracleSpec {
        repro: Some("sh tests/test_add.sh".to_owned()),
        suite: Some("sh tests/run_all.sh".to_owned()),
        timeout,
        network: NetworkPolicy::Deny,
    }
}

/// A contestant's patch as the runner takes it: a worktree of the base,
/// the fix, a new test file (untracked), a binary file and a rename, then
/// `diff`; the contestant's worktree is removed afterwards.
fn fixing_patch(ws: &dyn Workspace, fx: &Fixture, base: &str, dir: &str) -> Patch {
    let wt = ws
        .create(&fx.repo, &Base::Ref(base.to_owned()), &name(dir))
        .unwrap();
    write(&wt.path, "calc.sh", CALC_FIXED);
    write(
        &wt.path,
        "tests/test_add_more.sh",
        ". ./calc.sh\n[ \"$(add 10 5)\" = 15 ] || exit 1\n[ -f assets/new.bin ] || exit 2\n[ -f README.txt ] || exit 3\necho more ok\n",
    );
    write(&wt.path, "assets/new.bin", binary_bytes(7));
    std::fs::rename(wt.path.join("README.md"), wt.path.join("README.txt")).unwrap();
    let patch = ws.diff(&wt).unwrap();
    // The workspace's own guarantee, checked here so a miss is pinned on
    // `diff` rather than on the oracle: the same-size rewrite of calc.sh
    // right after the checkout must be in the patch.
    let text = String::from_utf8_lossy(patch.as_bytes()).into_owned();
    if !text.contains("a/calc.sh b/calc.sh") {
        let index = git(
            &wt.path,
            &["rev-parse", "--path-format=absolute", "--git-path", "index"],
        );
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "git ls-files --debug calc.sh; stat calc.sh '{index}'; git status --short"
            ))
            .current_dir(&wt.path)
            .output()
            .unwrap();
        panic!(
            "diff left out the change to calc.sh:\n{text}\n{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    ws.unlock(&wt).unwrap();
    ws.remove(&wt, &RemoveProof::Discard).unwrap();
    patch
}

/// The user's repository as a whole, plus `git status --porcelain`.
fn user_state(repo: &Path) -> (RepoState, Vec<u8>) {
    (
        repo_state(repo),
        git_bytes(repo, &["status", "--porcelain", "--untracked-files=all"]),
    )
}

/// No worktree but the main one, no coderig branch, nothing under the
/// scratch root but (possibly) the empty temporary folder.
fn assert_clean(fx: &Fixture) {
    let list = git(&fx.repo, &["worktree", "list", "--porcelain"]);
    assert_eq!(
        list.matches("worktree ").count(),
        1,
        "leftover worktree: {list}"
    );
    assert_eq!(
        git(&fx.repo, &["for-each-ref", "refs/heads/coderig/"]),
        "",
        "leftover branch"
    );
    let root = fx.data.join("worktrees");
    let left: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            !(p.file_name().unwrap() == ".tmp" && std::fs::read_dir(p).unwrap().next().is_none())
        })
        .collect();
    assert!(left.is_empty(), "leftovers in the scratch root: {left:?}");
    let registrations = fx.repo.join(".git/worktrees");
    if registrations.exists() {
        assert!(
            std::fs::read_dir(&registrations).unwrap().next().is_none(),
            "leftover registration"
        );
    }
}

/// The report of a command the kernel confined in full: Landlock (ABI 3 or
/// later) for files, a PID namespace, the network as `network` says (its
/// own namespace for `deny`), the private temp dir and one checkout
/// writable, nothing left unenforced.
fn assert_confined(report: Option<&SandboxReport>, network: &str) {
    let r = report.expect("the command's evidence records its sandbox");
    assert_eq!(r.mode, SandboxMode::Enforce, "{r:?}");
    assert!(r.confined, "{r:?}");
    assert!(r.landlock_abi.is_some_and(|abi| abi >= 3), "{r:?}");
    assert_eq!(r.filesystem, Enforcer::Landlock, "{r:?}");
    assert_eq!(r.processes, Enforcer::Namespace, "{r:?}");
    assert_eq!(r.network, network, "{r:?}");
    let by = if network == "deny" {
        Enforcer::Namespace
    } else {
        Enforcer::None
    };
    assert_eq!(r.network_enforced_by, by, "{r:?}");
    assert!(r.unenforced.is_empty(), "{r:?}");
    // The private temp dir and the checkout, nothing else.
    assert_eq!(r.writable.len(), 2, "{r:?}");
    assert!(
        r.writable[1].ends_with("checkout")
            && r.writable[1]
                .to_string_lossy()
                .contains(coderig::arena::oracle::ORACLE_SLUG_PREFIX),
        "{r:?}"
    );
}

fn passed(e: &Option<CommandEvidence>) -> bool {
    e.as_ref().is_some_and(CommandEvidence::passed)
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
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| !rest.trim_start().starts_with('Z'))
            .unwrap_or(true),
        Err(_) => kill(Pid::from_raw(pid), None).is_ok(),
    }
}

/// The leader's group and the grandchild are gone (orphans are reaped
/// asynchronously, so wait a generous bound).
fn assert_gone(pgid: i32, grandchild: i32) {
    for _ in 0..200 {
        if !alive(grandchild) && !procs::group_alive(pgid) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("process group {pgid} or grandchild {grandchild} survived");
}

/// A command that records its group and a grandchild's pid in `dir`, then
/// Runs the oracle on the fixture's repository in a task of its own, so the
/// test can cancel it midway.
fn spawn_oracle(
    ws: &Arc<dyn Workspace>,
    fx: &Fixture,
    base: &str,
    spec: &OracleSpec,
    mode: SandboxMode,
    cancel: &CancellationToken,
) -> tokio::task::JoinHandle<Result<OracleRun, coderig::Error>> {
    let (ws, repo, base, spec, cancel) = (
        ws.clone(),
        fx.repo.clone(),
        base.to_owned(),
        spec.clone(),
        cancel.clone(),
    );
    tokio::spawn(async move { run_oracle(ws, &repo, &base, None, &spec, mode, &cancel).await })
}

/// runs `rest`.
fn with_grandchild(dir: &Path, rest: &str) -> String {
    format!(
        "echo $$ > '{d}/pg.pid'; sleep 300 & echo $! > '{d}/gc.pid'; {rest}",
        d = dir.display()
    )
}

#[tokio::test]
async fn a_fixing_patch_passes_repro_and_suite_on_both_backends_and_the_base_fails() {
    let (fx, base) = fixture();
    for (label, ws) in fx.both() {
        let ws: Arc<dyn Workspace> = Arc::new(ws);
        let patch = fixing_patch(
            ws.as_ref(),
            &fx,
            &base,
            &format!("{}-fix", label.replace('_', "-")),
        );
        let before = user_state(&fx.repo);
        let cancel = CancellationToken::new();
        let spec = spec(Duration::from_secs(60));

        let run = run_oracle(
            ws.clone(),
            &fx.repo,
            &base,
            Some(&patch),
            &spec,
            SandboxMode::Enforce,
            &cancel,
        )
        .await
        .unwrap();
        assert!(run.patch_applied, "{label}: {run:?}");
        assert_eq!(run.apply_error, None);
        assert!(passed(&run.repro), "{label}: {run:?}");
        assert!(passed(&run.suite), "{label}: {run:?}");
        let suite = run.suite.as_ref().unwrap();
        assert!(suite.output_tail.contains("test_add ok"), "{suite:?}");
        assert!(suite.output_tail.contains("more ok"), "{suite:?}");
        // Each command ran in a sandbox of its own, and says so.
        for record in [&run.repro, &run.suite] {
            assert_confined(record.as_ref().unwrap().sandbox.as_ref(), "deny");
        }

        let base_run = run_base(
            ws.clone(),
            &fx.repo,
            &base,
            &spec,
            SandboxMode::Enforce,
            &cancel,
        )
        .await
        .unwrap();
        assert!(!base_run.patch_applied);
        assert_eq!(base_run.apply_error, None);
        let repro = base_run.repro.as_ref().unwrap();
        assert_eq!(repro.exit_code, Some(1), "{label}: {base_run:?}");
        assert!(!repro.timed_out);
        // stderr is in the tail, interleaved with stdout.
        assert!(
            repro.output_tail.contains("test_add FAILED: add 2 3 = -1"),
            "{repro:?}"
        );
        assert_eq!(base_run.suite.as_ref().unwrap().exit_code, Some(1));

        // The pure grading reads the runs as they are.
        let base_run = base_run.into_base_run();
        assert!(!base_run.base_repro_passes());
        assert_eq!(
            tier(&run.into_evidence(), spec.commands(), Some(&base_run)),
            EvidenceTier::Full
        );

        assert_eq!(
            user_state(&fx.repo),
            before,
            "{label}: the user's repository changed"
        );
        assert_clean(&fx);
    }
}

/// Unconfined (`off`), so that a command that did run would leave its
/// marker outside the checkout.
#[tokio::test]
async fn a_patch_that_does_not_apply_is_evidence_and_no_command_runs() {
    let (fx, base) = fixture();
    let ws: Arc<dyn Workspace> = Arc::new(fx.workspace());
    let marker = fx.scratch("marker").join("ran");
    let spec = OracleSpec {
        repro: Some(format!("touch '{}'", marker.display())),
        suite: Some(format!("touch '{}'", marker.display())),
        timeout: Duration::from_secs(30),
        network: NetworkPolicy::Deny,
    };
    let before = user_state(&fx.repo);
    let cancel = CancellationToken::new();
    let stale = Patch::new(
        b"diff --git a/calc.sh b/calc.sh\n--- a/calc.sh\n+++ b/calc.sh\n@@ -1 +1 @@\n-no such line\n+replacement\n"
            .to_vec(),
        Some(base.clone()),
    );
    let run = run_oracle(
        ws.clone(),
        &fx.repo,
        &base,
        Some(&stale),
        &spec,
        SandboxMode::Off,
        &cancel,
    )
    .await
    .unwrap();
    assert!(!run.patch_applied);
    assert!(
        run.apply_error.as_deref().is_some_and(|e| !e.is_empty()),
        "{run:?}"
    );
    assert_eq!((&run.repro, &run.suite), (&None, &None));
    let evidence = run.into_evidence();
    assert!(evidence.error.unwrap().contains("does not apply"));

    // Taken against another commit: refused as well, with the reason.
    let elsewhere = Patch::new(b"".to_vec(), Some("0".repeat(40)));
    let run = run_oracle(
        ws.clone(),
        &fx.repo,
        &base,
        Some(&elsewhere),
        &spec,
        SandboxMode::Off,
        &cancel,
    )
    .await
    .unwrap();
    assert!(!run.patch_applied);
    assert!(run.apply_error.unwrap().contains("taken against"));

    assert!(
        !marker.exists(),
        "a command ran although the patch was refused"
    );
    assert_eq!(user_state(&fx.repo), before);
    assert_clean(&fx);
}

#[tokio::test]
async fn an_empty_patch_applies_and_the_commands_run() {
    let (fx, base) = fixture();
    let ws: Arc<dyn Workspace> = Arc::new(fx.workspace());
    let run = run_oracle(
        ws,
        &fx.repo,
        &base,
        Some(&Patch::new(Vec::new(), Some(base.clone()))),
        &spec(Duration::from_secs(30)),
        SandboxMode::Enforce,
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    assert!(run.patch_applied);
    assert_eq!(run.repro.unwrap().exit_code, Some(1));
    assert_clean(&fx);
}

/// Unconfined (`off`): the command records its pids in a scratch folder
/// outside the checkout, which a sandbox refuses (and a PID namespace would
/// number them its own way). The sandboxed timeout, daemons included, is
/// `the_timeout_and_a_cancel_end_a_sandboxed_tree_daemons_included`.
#[tokio::test]
async fn a_hanging_command_times_out_and_its_process_group_dies() {
    let (fx, base) = fixture();
    let ws: Arc<dyn Workspace> = Arc::new(fx.workspace());
    let pids = fx.scratch("pids");
    let spec = OracleSpec {
        repro: Some(with_grandchild(&pids, "echo hanging; sleep 300")),
        suite: Some("echo suite still runs".to_owned()),
        timeout: Duration::from_secs(1),
        network: NetworkPolicy::Deny,
    };
    let started = Instant::now();
    let run = run_oracle(
        ws,
        &fx.repo,
        &base,
        None,
        &spec,
        SandboxMode::Off,
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    assert!(started.elapsed() < Duration::from_secs(60));
    let repro = run.repro.unwrap();
    assert!(repro.timed_out, "{repro:?}");
    assert_eq!(repro.exit_code, None);
    assert!(!repro.passed());
    assert!(repro.duration_ms >= 1000, "{repro:?}");
    assert!(repro.output_tail.starts_with("hanging\n"), "{repro:?}");
    assert!(repro.output_tail.contains("timed out"), "{repro:?}");
    assert_gone(
        read_pid(&pids.join("pg.pid")),
        read_pid(&pids.join("gc.pid")),
    );
    let suite = run.suite.unwrap();
    assert!(
        suite.passed() && suite.output_tail == "suite still runs\n",
        "{suite:?}"
    );
    assert_clean(&fx);
}

#[tokio::test]
async fn the_output_tail_stays_bounded_for_a_megabyte_of_output() {
    let (fx, base) = fixture();
    let ws: Arc<dyn Workspace> = Arc::new(fx.workspace());
    let spec = OracleSpec {
        // 1 MiB in lines of 100, on stdout and stderr, then a last line.
        repro: Some(
            "head -c 1048576 /dev/zero | tr '\\0' a | fold -w 100; \
             head -c 1048576 /dev/zero | tr '\\0' e | fold -w 100 >&2; echo >&2; echo END"
                .to_owned(),
        ),
        // 1 MiB on one line, no newline at all.
        suite: Some("head -c 1048576 /dev/zero | tr '\\0' b".to_owned()),
        timeout: Duration::from_secs(60),
        network: NetworkPolicy::Deny,
    };
    let run = run_oracle(
        ws,
        &fx.repo,
        &base,
        None,
        &spec,
        SandboxMode::Enforce,
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    let repro = run.repro.unwrap();
    assert_eq!(repro.exit_code, Some(0));
    assert!(
        repro.output_tail.len() <= OUTPUT_TAIL_BYTES,
        "{}",
        repro.output_tail.len()
    );
    assert!(repro.output_tail.len() > OUTPUT_TAIL_BYTES - 200);
    assert!(
        repro.output_tail.ends_with("eeee\nEND\n"),
        "{:?}",
        &repro.output_tail[repro.output_tail.len() - 50..]
    );
    let suite = run.suite.unwrap();
    assert_eq!(suite.exit_code, Some(0));
    assert!(suite.output_tail.len() <= OUTPUT_TAIL_BYTES);
    assert!(suite.output_tail.bytes().all(|b| b == b'b' || b == b'\n'));
    assert_clean(&fx);
}

#[tokio::test]
async fn stdout_and_stderr_interleave_in_the_order_written() {
    let (fx, base) = fixture();
    let ws: Arc<dyn Workspace> = Arc::new(fx.workspace());
    let spec = OracleSpec {
        repro: Some("echo one; echo two >&2; echo three; exit 3".to_owned()),
        suite: None,
        timeout: Duration::from_secs(30),
        network: NetworkPolicy::Deny,
    };
    let run = run_oracle(
        ws,
        &fx.repo,
        &base,
        None,
        &spec,
        SandboxMode::Enforce,
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    let repro = run.repro.unwrap();
    assert_eq!(repro.exit_code, Some(3));
    assert_eq!(repro.output_tail, "one\ntwo\nthree\n");
    assert_eq!(run.suite, None);
}

/// Unconfined (`off`), for its pid files outside the checkout (as above).
#[tokio::test]
async fn cancel_mid_command_kills_the_group_removes_the_checkout_and_says_cancelled() {
    let (fx, base) = fixture();
    let ws: Arc<dyn Workspace> = Arc::new(fx.workspace());
    let pids = fx.scratch("pids");
    let before = user_state(&fx.repo);
    let spec = OracleSpec {
        repro: Some(with_grandchild(&pids, "sleep 300")),
        suite: Some(format!("touch '{}/suite-ran'", pids.display())),
        timeout: Duration::from_secs(300),
        network: NetworkPolicy::Deny,
    };
    let cancel = CancellationToken::new();
    let task = spawn_oracle(&ws, &fx, &base, &spec, SandboxMode::Off, &cancel);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !pids.join("gc.pid").exists() {
        assert!(Instant::now() < deadline, "the command never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    cancel.cancel();
    let error = task.await.unwrap().unwrap_err();
    assert!(is_cancelled(&error), "{error:?}");
    assert_gone(
        read_pid(&pids.join("pg.pid")),
        read_pid(&pids.join("gc.pid")),
    );
    assert!(!pids.join("suite-ran").exists());
    assert_eq!(user_state(&fx.repo), before);
    assert_clean(&fx);

    // Cancelled before it starts: nothing is made at all.
    let error = run_base(ws, &fx.repo, &base, &spec, SandboxMode::Off, &cancel)
        .await
        .unwrap_err();
    assert!(is_cancelled(&error));
    assert_clean(&fx);
}

/// Unconfined (`off`), for its pid files outside the checkout (as above).
#[tokio::test]
async fn a_dropped_run_still_removes_its_checkout() {
    let (fx, base) = fixture();
    let ws: Arc<dyn Workspace> = Arc::new(fx.workspace());
    let pids = fx.scratch("pids");
    let spec = OracleSpec {
        repro: Some(with_grandchild(&pids, "sleep 300")),
        suite: None,
        timeout: Duration::from_secs(300),
        network: NetworkPolicy::Deny,
    };
    let cancel = CancellationToken::new();
    let run = run_oracle(
        ws.clone(),
        &fx.repo,
        &base,
        None,
        &spec,
        SandboxMode::Off,
        &cancel,
    );
    let pid_file = pids.join("gc.pid");
    let dropped = tokio::time::timeout(Duration::from_secs(60), async {
        tokio::pin!(run);
        loop {
            tokio::select! {
                _ = &mut run => panic!("the run ended on its own"),
                _ = tokio::time::sleep(Duration::from_millis(20)) => {
                    if pid_file.exists() { break; }
                }
            }
        }
    })
    .await;
    assert!(dropped.is_ok(), "the command never started");
    assert_gone(read_pid(&pids.join("pg.pid")), read_pid(&pid_file));
    // The guard removes the checkout from a thread of its own.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let list = git(&fx.repo, &["worktree", "list", "--porcelain"]);
        if list.matches("worktree ").count() == 1 {
            break;
        }
        assert!(Instant::now() < deadline, "the checkout stayed: {list}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::panic::catch_unwind(|| assert_clean(&fx)).is_err() {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test]
async fn a_checkout_left_by_a_crash_is_known_by_its_name() {
    let (fx, base) = fixture();
    let ws = fx.workspace();
    // What a crash mid-run leaves: a live checkout the sweep reports.
    let name = coderig::workspace::WorktreeName::new("oracle-0123abcd", "checkout").unwrap();
    ws.create(&fx.repo, &Base::Ref(base.clone()), &name)
        .unwrap();
    let contestant = ws
        .create(&fx.repo, &Base::Ref(base), &self::name("claude-sonnet"))
        .unwrap();
    let report = ws.sweep().unwrap();
    let oracle: Vec<_> = report
        .live
        .iter()
        .filter(|w| is_oracle_checkout(&w.name))
        .collect();
    assert_eq!(oracle.len(), 1);
    assert!(!is_oracle_checkout(&contestant.name));
    for wt in oracle {
        ws.unlock(wt).unwrap();
        ws.remove(wt, &RemoveProof::Discard).unwrap();
    }
    ws.unlock(&contestant).unwrap();
    ws.remove(&contestant, &RemoveProof::Discard).unwrap();
    assert_clean(&fx);
}

#[tokio::test]
async fn a_bad_spec_is_refused_before_anything_is_made() {
    let (fx, base) = fixture();
    let ws: Arc<dyn Workspace> = Arc::new(fx.workspace());
    let cancel = CancellationToken::new();
    let mut bad = spec(Duration::ZERO);
    let e = run_base(
        ws.clone(),
        &fx.repo,
        &base,
        &bad,
        SandboxMode::Enforce,
        &cancel,
    )
    .await
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    bad.timeout = Duration::from_secs(1);
    bad.suite = Some("  ".to_owned());
    let e = run_base(
        ws.clone(),
        &fx.repo,
        &base,
        &bad,
        SandboxMode::Enforce,
        &cancel,
    )
    .await
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    let e = run_base(
        ws,
        &fx.repo,
        "no-such-ref",
        &spec(Duration::from_secs(1)),
        SandboxMode::Enforce,
        &cancel,
    )
    .await
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e:?}");
    assert_clean(&fx);
}

#[test]
fn evidence_serializes_with_snake_case_fields() {
    let run = OracleRun {
        patch_applied: true,
        apply_error: None,
        repro: Some(CommandEvidence {
            exit_code: Some(0),
            duration_ms: 12,
            timed_out: false,
            output_tail: "ok\n".to_owned(),
            sandbox: None,
        }),
        suite: None,
    };
    // A record without a sandbox report (as stored before commands were
    // sandboxed) has no `sandbox` key, and such JSON reads back.
    let json = serde_json::to_value(&run).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"patch_applied": true, "apply_error": null, "suite": null,
            "repro": {"exit_code": 0, "duration_ms": 12, "timed_out": false, "output_tail": "ok\n"}})
    );
    assert_eq!(serde_json::from_value::<OracleRun>(json).unwrap(), run);

    // With its report, the record round-trips with it.
    let mut sandboxed = run.clone();
    sandboxed.repro.as_mut().unwrap().sandbox = Some(SandboxReport::off());
    let json = serde_json::to_value(&sandboxed).unwrap();
    assert_eq!(json["repro"]["sandbox"]["mode"], "off");
    assert_eq!(json["repro"]["sandbox"]["network"], "allow");
    assert_eq!(
        serde_json::from_value::<OracleRun>(json).unwrap(),
        sandboxed
    );
}

mod sandbox;
