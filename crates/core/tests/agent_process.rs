//! The subprocess runner on real processes (`sh -c`): every way a turn can
//! end leaves no process of its group alive, grandchildren included; lines
//! and the stderr tail stay bounded; a missing program is an error, not a
//! panic. Outcomes are asserted, never durations.

#![cfg(unix)]

mod procs;

use coderig::agent::process::{run_process, Ended, Limits, ProcessExit, ProcessSpec};
use nix::sys::signal::kill;
use nix::unistd::Pid;
use std::path::Path;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

fn sh(script: &str) -> ProcessSpec {
    ProcessSpec {
        program: "sh".into(),
        args: vec!["-c".into(), script.into()],
        ..ProcessSpec::default()
    }
}

fn limits() -> Limits {
    Limits {
        kill_grace: Duration::from_millis(300),
        ..Limits::default()
    }
}

/// A process that spawns a grandchild (recording its pid in `dir/gc.pid`)
/// and its own pid in `dir/pg.pid`, prints `ready`, then runs `rest`.
/// A shell that records its group and a grandchild, then runs `rest`. The
/// limits of the tests that use it leave the shell time (seconds, on a
/// loaded 2-core machine) to write both pid files before it is killed.
fn with_grandchild(dir: &Path, rest: &str) -> ProcessSpec {
    sh(&format!(
        "echo $$ > '{d}/pg.pid'; sleep 300 & echo $! > '{d}/gc.pid'; echo ready; {rest}",
        d = dir.display()
    ))
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

/// Asserts that the group `pgid` and the grandchild are gone. Orphans are
/// reaped by init asynchronously, so an exited-but-unreaped grandchild
/// (a zombie) is waited for, up to a generous bound.
fn assert_gone(dir: &Path, exit: &ProcessExit) {
    let pgid = read_pid(&dir.join("pg.pid"));
    assert_eq!(pgid as u32, exit.pid, "the leader is the group");
    let grandchild = read_pid(&dir.join("gc.pid"));
    // SIGKILL is delivered asynchronously: the runner has sent it when it
    // returns, the kernel may take a moment to end the processes.
    for _ in 0..200 {
        if !alive(grandchild) && !procs::group_alive(pgid) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!alive(grandchild), "grandchild {grandchild} survived");
    panic!("process group {pgid} still exists");
}

#[tokio::test]
async fn a_cancelled_process_group_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    let cancel = CancellationToken::new();
    let token = cancel.clone();
    let exit = run_process(
        &with_grandchild(dir.path(), "sleep 300"),
        &limits(),
        &cancel,
        |line| {
            if line == "ready" {
                token.cancel();
            }
            true
        },
    )
    .await
    .unwrap();
    assert_eq!(exit.ended, Ended::Cancelled);
    assert_eq!(exit.signal, Some(libc_sigterm()), "{exit:?}");
    assert_gone(dir.path(), &exit);
}

#[tokio::test]
async fn a_timed_out_process_group_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits {
        timeout: Some(Duration::from_millis(2000)),
        ..limits()
    };
    // Keeps printing, so only the wall clock can end it.
    let script = with_grandchild(dir.path(), "while :; do echo tick; sleep 0.05; done");
    let exit = run_process(&script, &limits, &CancellationToken::new(), |_| true)
        .await
        .unwrap();
    assert_eq!(exit.ended, Ended::Timeout);
    assert_eq!(exit.exit_code, None);
    assert_gone(dir.path(), &exit);
}

#[tokio::test]
async fn an_idle_process_group_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits {
        idle_timeout: Some(Duration::from_millis(1500)),
        ..limits()
    };
    let exit = run_process(
        &with_grandchild(dir.path(), "sleep 300"),
        &limits,
        &CancellationToken::new(),
        |_| true,
    )
    .await
    .unwrap();
    assert_eq!(exit.ended, Ended::Idle);
    assert_gone(dir.path(), &exit);
}

#[tokio::test]
async fn lines_that_are_not_activity_do_not_keep_a_process_alive() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits {
        idle_timeout: Some(Duration::from_millis(1500)),
        ..limits()
    };
    let script = with_grandchild(dir.path(), "while :; do echo noise; sleep 0.05; done");
    let mut noise = 0;
    let exit = run_process(&script, &limits, &CancellationToken::new(), |line| {
        noise += usize::from(line == "noise");
        false
    })
    .await
    .unwrap();
    assert_eq!(exit.ended, Ended::Idle);
    assert!(noise > 0, "the lines were still delivered");
    assert_gone(dir.path(), &exit);
}

#[tokio::test]
async fn a_clean_exit_still_kills_the_grandchild_it_left_behind() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines = Vec::new();
    // The grandchild keeps stdout open: without the group kill the read
    // would wait for it.
    let exit = run_process(
        &with_grandchild(dir.path(), "echo bye; exit 3"),
        &limits(),
        &CancellationToken::new(),
        |line| {
            lines.push(line.to_string());
            true
        },
    )
    .await
    .unwrap();
    assert_eq!(exit.ended, Ended::Exited);
    assert_eq!(exit.exit_code, Some(3));
    assert_eq!(exit.signal, None);
    assert_eq!(lines, ["ready", "bye"]);
    assert_gone(dir.path(), &exit);
}

#[tokio::test]
async fn a_group_that_ignores_sigterm_is_sigkilled_after_the_grace() {
    let dir = tempfile::tempdir().unwrap();
    let cancel = CancellationToken::new();
    let token = cancel.clone();
    // SIG_IGN is inherited: the grandchild ignores TERM too.
    let script = sh(&format!(
        "trap '' TERM; echo $$ > '{d}/pg.pid'; sleep 300 & echo $! > '{d}/gc.pid'; \
         echo ready; while :; do sleep 1; done",
        d = dir.path().display()
    ));
    let exit = run_process(&script, &limits(), &cancel, |line| {
        if line == "ready" {
            token.cancel();
        }
        true
    })
    .await
    .unwrap();
    assert_eq!(exit.ended, Ended::Cancelled);
    assert_eq!(exit.signal, Some(9), "SIGKILL, not TERM: {exit:?}");
    assert_gone(dir.path(), &exit);
}

#[tokio::test]
async fn a_dropped_run_kills_its_group() {
    let dir = tempfile::tempdir().unwrap();
    let spec = with_grandchild(dir.path(), "sleep 300");
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
    let mut ready_tx = Some(ready_tx);
    let cancel = CancellationToken::new();
    let limits = limits();
    let run = run_process(&spec, &limits, &cancel, move |_| {
        if let Some(tx) = ready_tx.take() {
            let _ = tx.send(());
        }
        true
    });
    tokio::select! {
        _ = run => panic!("the script hangs; it cannot end by itself"),
        _ = ready_rx => {}
    }
    // `run` is dropped here, mid-flight.
    let pgid = read_pid(&dir.path().join("pg.pid"));
    let grandchild = read_pid(&dir.path().join("gc.pid"));
    for _ in 0..200 {
        if !procs::group_alive(pgid) && !alive(grandchild) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("process group {pgid} survived the drop");
}

#[tokio::test]
async fn long_lines_are_cut_to_the_bound_and_the_next_line_survives() {
    let limits = Limits {
        max_line_bytes: 1000,
        ..limits()
    };
    // 10 MB on one line, then a short one, then 5 MB with no newline.
    let script = sh(
        "head -c 10000000 /dev/zero | tr '\\0' a; echo; echo short; \
         head -c 5000000 /dev/zero | tr '\\0' b",
    );
    let mut lines = Vec::new();
    let exit = run_process(&script, &limits, &CancellationToken::new(), |line| {
        lines.push(line.to_string());
        true
    })
    .await
    .unwrap();
    assert_eq!(exit.exit_code, Some(0));
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0], "a".repeat(1000));
    assert_eq!(lines[1], "short");
    assert_eq!(lines[2], "b".repeat(1000));
    assert_eq!(exit.truncated_lines, 2);
}

#[tokio::test]
async fn the_stderr_tail_is_bounded_and_ends_on_the_last_bytes() {
    let limits = Limits {
        stderr_tail_bytes: 63,
        ..limits()
    };
    // 1 MB of stderr, then two-byte chars so the cut lands inside one.
    let script = sh("head -c 1000000 /dev/zero | tr '\\0' e >&2; \
         i=0; while [ $i -lt 40 ]; do printf 'é' >&2; i=$((i+1)); done; echo out");
    let exit = run_process(&script, &limits, &CancellationToken::new(), |_| true)
        .await
        .unwrap();
    assert_eq!(exit.exit_code, Some(0));
    assert_eq!(exit.stderr_tail, "é".repeat(31), "cut on a char boundary");
}

#[tokio::test]
async fn a_missing_program_is_a_not_found_error() {
    let spec = ProcessSpec {
        program: "/nonexistent/coderig-no-such-agent".into(),
        ..ProcessSpec::default()
    };
    let err = run_process(&spec, &limits(), &CancellationToken::new(), |_| true)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
    assert!(err.to_string().contains("coderig-no-such-agent"), "{err}");
}

#[tokio::test]
async fn env_cwd_and_stdin_are_as_specified() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = sh("echo \"$CODERIG_T1|${HOME-unset}|$(pwd)\"; cat; echo eof");
    spec.env.insert("CODERIG_T1".into(), "one".into());
    spec.env_remove.push("HOME".into());
    spec.cwd = Some(dir.path().to_path_buf());
    let mut lines = Vec::new();
    let exit = run_process(&spec, &limits(), &CancellationToken::new(), |line| {
        lines.push(line.to_string());
        true
    })
    .await
    .unwrap();
    assert_eq!(exit.exit_code, Some(0));
    let cwd = dir.path().canonicalize().unwrap();
    // `cat` on /dev/null ends at once.
    assert_eq!(
        lines,
        [format!("one|unset|{}", cwd.display()), "eof".into()]
    );
}

fn libc_sigterm() -> i32 {
    nix::sys::signal::Signal::SIGTERM as i32
}

/// The "server" of [`an_agent_dies_with_the_server_that_ran_it_even_on_kill_9`]:
/// runs only when the test binary re-executes itself with the variable set.
#[tokio::test]
async fn child_server_mode() {
    let Ok(dir) = std::env::var("CODERIG_TEST_CHILD_SERVER") else {
        return;
    };
    let spec = sh(&format!("echo $$ > '{dir}/leader.pid'; exec sleep 300"));
    let _ = run_process(&spec, &limits(), &CancellationToken::new(), |_| true).await;
}

#[cfg(target_os = "linux")]
#[test]
fn an_agent_dies_with_the_server_that_ran_it_even_on_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_server_mode",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("CODERIG_TEST_CHILD_SERVER", dir.path())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pidfile = dir.path().join("leader.pid");
    let mut leader = None;
    for _ in 0..600 {
        if let Some(pid) = std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|s| s.trim().parse::<i32>().ok())
        {
            leader = Some(pid);
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let leader = leader.expect("the agent started");
    assert!(alive(leader));
    kill(
        Pid::from_raw(server.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    server.wait().unwrap();
    // SIGKILL is delivered asynchronously: wait (bounded) for it to land.
    for _ in 0..200 {
        if !alive(leader) {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    assert!(
        !alive(leader),
        "the agent {leader} outlived its server's kill -9"
    );
}
