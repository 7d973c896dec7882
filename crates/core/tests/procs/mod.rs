//! What the tests that prove "no process survives" share (Linux): finding
//! live processes by a marker in their command line, and waiting until
//! none is left.
#![allow(dead_code)]

use std::time::{Duration, Instant};

/// Live processes (not zombies or dead ones: a zombie waiting for a reaper
/// that never comes, as under a container's PID 1, is dead too) whose
/// command line holds `marker`, this process excepted.
pub fn processes_with(marker: &str) -> Vec<u32> {
    let mut pids = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return pids;
    };
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        // `pid (comm) S ...`: the state follows the last `)`.
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let dead = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next())
            .is_none_or(|state| matches!(state, 'Z' | 'X'));
        if !dead && String::from_utf8_lossy(&cmdline).contains(marker) {
            pids.push(pid);
        }
    }
    pids
}

/// True while a live process (not a zombie: the group's leader, killed, may
/// wait for a reaper that is the test's own runtime, blocked in the test)
/// is in the process group `pgid`.
pub fn group_alive(pgid: i32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|entry| {
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        // `pid (comm) state ppid pgrp ...`
        let Some((_, rest)) = stat.rsplit_once(')') else {
            return false;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next().unwrap_or("X");
        let pgrp = fields.nth(1).and_then(|p| p.parse::<i32>().ok());
        pgrp == Some(pgid) && !matches!(state, "Z" | "X")
    })
}

/// Polls until no process carries `marker` or `within` passed; returns
/// those still alive (empty: none).
pub fn wait_none_with(marker: &str, within: Duration) -> Vec<u32> {
    let until = Instant::now() + within;
    loop {
        let left = processes_with(marker);
        if left.is_empty() || Instant::now() > until {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A command that runs the test `name` of this test binary alone, in a
/// child process: how a test sets process-global state (an environment
/// variable such as `CODERIG_SANDBOX_PRETEND_MISSING`) without racing the
/// tests beside it, or kills the process that started something.
pub fn child_test(name: &str) -> std::process::Command {
    let mut command = std::process::Command::new(std::env::current_exe().unwrap());
    command.args(["--exact", name, "--nocapture", "--test-threads=1"]);
    command
}

/// Checks that a [`child_test`] ran its test and the test passed (a
/// filtered-out child "passes" with no test run); returns its stdout.
pub fn passed(out: std::process::Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "the child test failed or did not run:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}
