//! Battles across server deaths and servers, with the real `coderig`
//! binary: a `coderig serve` killed with SIGKILL while its contestants'
//! CLI agents (real process groups of `sh`) run leaves no agent behind,
//! and a restart on the same data dir finishes the battle with every
//! contestant done once; two servers on one PostgreSQL share battles
//! without ever running two local-lane contestants at once.

#![cfg(unix)]

mod common;

use common::calc::{git, repository};
use common::server::serve;
use common::{get, post};
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn make_project(root: &Path) -> PathBuf {
    repository(
        &root.join("projects").join("calc"),
        &[("calc.txt", "broken\n")],
    )
}

/// Polls `GET /api/battles/{id}` until it is finished (bounded: a broken
/// server fails the test instead of hanging it).
async fn finished(url: &str, id: &str) -> Value {
    for _ in 0..1200 {
        let (status, battle) = get(format!("{url}/api/battles/{id}")).await;
        assert_eq!(status, StatusCode::OK, "{battle}");
        if ["completed", "failed", "cancelled"].contains(&battle["status"].as_str().unwrap()) {
            return battle;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("battle {id} did not finish within 120 s");
}

/// Every stored event of the battle, replayed by `GET /api/events` from
/// the start of the log up to its `battle_updated` `status`.
async fn replay(url: &str, id: &str, status: &str) -> Vec<(String, Value)> {
    let mut sse =
        common::SseClient::open(&format!("{url}/api/events?battle_id={id}&after=0"), &[]).await;
    let mut events = Vec::new();
    loop {
        let frame = sse.event().await;
        let kind = frame.event.clone().unwrap_or_default();
        let data = frame.json();
        let last = kind == "battle_updated" && data["status"] == status;
        if frame.id.is_some() {
            events.push((kind, data));
        }
        if last {
            return events;
        }
    }
}

/// Whether any process is in process group `pgid` (Linux: /proc).
fn group_alive(pgid: u32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|entry| {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            return false;
        };
        // pid (comm) state ppid pgrp ...: comm may hold spaces, so split
        // after its closing parenthesis.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            return false;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        // A zombie is dead, only not yet reaped by its parent.
        fields.len() > 2 && fields[0] != "Z" && fields[2] == pgid.to_string()
    })
}

/// Waits (bounded) for every process of each group to be gone: SIGKILL is
/// delivered asynchronously, and a sleeping child of a killed leader ends
/// on its own.
async fn groups_gone(pids: &[u32]) -> Vec<u32> {
    for _ in 0..150 {
        let alive: Vec<u32> = pids.iter().copied().filter(|p| group_alive(*p)).collect();
        if alive.is_empty() {
            return alive;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    pids.iter().copied().filter(|p| group_alive(*p)).collect()
}

fn pids(file: &Path) -> Vec<u32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

fn coderig_worktrees(project: &Path) -> Vec<String> {
    git(project, &["worktree", "list", "--porcelain"])
        .lines()
        .filter(|l| l.starts_with("worktree "))
        .map(str::to_owned)
        .skip(1)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_server_killed_mid_battle_leaves_no_agent_and_its_restart_finishes_the_battle() {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let project = make_project(&root);
    let pidfile = root.join("agent-pids");
    // Each contestant: a real CLI agent (`custom`, text output), a `sh`
    // that records its pid (the group leader's). Its first run becomes a
    // long `sleep` (exec: the leader itself, so only PR_SET_PDEATHSIG can
    // end it early: an orphan would outlive every check below); a rescued
    // run sleeps briefly, fixes the file and ends. The sandbox is off: this
    // test follows the agents' own pids and records them outside their
    // worktrees, which a sandboxed agent can do neither of (its pids are
    // those of its PID namespace, its writes stay in its worktree); what
    // survives a SIGKILL under the sandbox is tested in sandbox_hostile.rs.
    let script = format!(
        "echo $$ >> {pids}; if [ -e {root}/ran-{{model}} ]; then sleep 1; echo fixed > calc.txt; echo done; \
         else touch {root}/ran-{{model}}; exec sleep 120; fi",
        pids = pidfile.display(),
        root = root.display(),
    );
    let config = format!(
        r#"
[agents.sh]
kind = "cli"
preset = "custom"
command = "sh"
args = ["-c", {script:?}, "{{model}}"]
format = "text"

[agents.judge]
kind = "scripted"
script = [ {{ text = "Both fixed it.\nWINNER: sh/a" }} ]

[sandbox]
mode = "off"
"#
    );
    std::fs::write(root.join("coderig.toml"), config).unwrap();
    let projects = root.join("projects").display().to_string();
    let args = [
        "--data-dir",
        "data",
        "--config",
        "coderig.toml",
        "--project-root",
        &projects,
        "--lease-ttl",
        "3s",
    ];
    let mut first = serve(&root, &args).await;
    let spec = json!({
        "battle_type": "coding",
        "prompt": "Fix calc.txt",
        "project": project.display().to_string(),
        "contestants": [{"identity": "sh", "model": "a"}, {"identity": "sh", "model": "b"}],
        "judge": {"identity": "judge", "model": "j"},
        "oracle": {"repro": "grep -q fixed calc.txt", "timeout": "30s"},
        "contestant_timeout": "60s",
    });
    let (status, created) = post(format!("{}/api/battles", first.url), spec).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let id = created["battle_id"].as_str().unwrap().to_owned();

    // Both agents are running (each wrote its pid): kill -9 the server.
    for _ in 0..300 {
        if pids(&pidfile).len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let before = pids(&pidfile);
    assert_eq!(before.len(), 2, "both agents started: {before:?}");
    first.child.kill().unwrap(); // SIGKILL
    first.child.wait().unwrap();
    // No agent outlives its server: the leaders die with it
    // (PR_SET_PDEATHSIG), their short-lived children end on their own.
    let orphans = groups_gone(&before).await;
    assert!(orphans.is_empty(), "orphaned agent groups: {orphans:?}");
    drop(first);

    // The restart rescues the expired leases and finishes the battle.
    let second = serve(&root, &args).await;
    let battle = finished(&second.url, &id).await;
    assert_eq!(battle["status"], "completed", "{battle}");
    for c in battle["contestants"].as_array().unwrap() {
        assert_eq!(c["status"], "done", "{c}");
    }
    let events = replay(&second.url, &id, "completed").await;
    let mut done: BTreeMap<String, usize> = BTreeMap::new();
    for (kind, data) in &events {
        if kind == "contestant_updated" && data["status"] == "done" {
            *done
                .entry(data["contestant_id"].as_str().unwrap().to_owned())
                .or_default() += 1;
        }
    }
    assert_eq!(done.len(), 2, "{done:?}");
    assert!(done.values().all(|n| *n == 1), "each done once: {done:?}");
    // The rescued runs started fresh agents; every agent group is gone.
    let all = pids(&pidfile);
    assert!(all.len() >= 4, "the rescue reran both: {all:?}");
    let left = groups_gone(&all).await;
    assert!(left.is_empty(), "agent groups left: {left:?}");
    // No coderig worktree or branch is left in the user's repository.
    assert!(
        coderig_worktrees(&project).is_empty(),
        "{:?}",
        coderig_worktrees(&project)
    );
    assert_eq!(git(&project, &["branch", "--list", "coderig/*"]), "");
    assert_eq!(
        std::fs::read_to_string(project.join("calc.txt")).unwrap(),
        "broken\n",
        "the user's tree is untouched"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_servers_postgres_share_battles_and_the_local_lane_never_runs_two() {
    let Some(url) = common::database_url("two_servers_postgres") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let project = make_project(&root);
    std::fs::write(
        root.join("coderig.toml"),
        r#"
[agents.gpu]
kind = "scripted"
lane = "local"
scripts.a = [ { sleep_ms = 400 }, { write = { path = "calc.txt", content = "fixed a\n" } }, { text = "a" } ]
scripts.b = [ { sleep_ms = 400 }, { write = { path = "calc.txt", content = "fixed b\n" } }, { text = "b" } ]
scripts.c = [ { sleep_ms = 400 }, { text = "c" } ]

[agents.judge]
kind = "scripted"
script = [ { text = "WINNER: gpu/a" } ]
"#,
    )
    .unwrap();
    let projects = root.join("projects").display().to_string();
    let args = |data: &'static str| {
        vec![
            "--db".to_owned(),
            url.clone(),
            "--data-dir".to_owned(),
            data.to_owned(),
            "--config".to_owned(),
            "coderig.toml".to_owned(),
            "--project-root".to_owned(),
            projects.clone(),
            "--lease-ttl".to_owned(),
            "3s".to_owned(),
        ]
    };
    let a_args = args("data-a");
    let b_args = args("data-b");
    let a = serve(
        &root,
        &a_args.iter().map(String::as_str).collect::<Vec<_>>(),
    )
    .await;
    let b = serve(
        &root,
        &b_args.iter().map(String::as_str).collect::<Vec<_>>(),
    )
    .await;
    let (_, health) = get(format!("{}/api/health", a.url)).await;
    assert_eq!(health["store"], "postgres");
    let mut ids = Vec::new();
    for _ in 0..2 {
        let (status, created) = post(
            format!("{}/api/battles", a.url),
            json!({
                "battle_type": "coding",
                "prompt": "Fix calc.txt",
                "project": project.display().to_string(),
                "contestants": [{"identity": "gpu", "model": "a"}, {"identity": "gpu", "model": "b"}, {"identity": "gpu", "model": "c"}],
                "judge": {"identity": "judge", "model": "j"},
                "contestant_timeout": "60s",
            }),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
        ids.push(created["battle_id"].as_str().unwrap().to_owned());
    }
    let mut intervals = Vec::new();
    for id in &ids {
        // Read through the other server: the same store.
        let battle = finished(&b.url, id).await;
        assert_eq!(battle["status"], "completed", "{battle}");
        for c in battle["contestants"].as_array().unwrap() {
            assert_eq!(c["status"], "done", "{c}");
            intervals.push((
                c["started_at_ms"].as_i64().unwrap(),
                c["ended_at_ms"].as_i64().unwrap(),
            ));
        }
        let events = replay(&a.url, id, "completed").await;
        let mut runs: BTreeMap<String, usize> = BTreeMap::new();
        for (kind, data) in &events {
            if kind == "contestant_updated" && data["status"] == "running" {
                *runs
                    .entry(data["contestant_id"].as_str().unwrap().to_owned())
                    .or_default() += 1;
            }
        }
        assert_eq!(runs.len(), 3, "{runs:?}");
        assert!(
            runs.values().all(|n| *n == 1),
            "no contestant ran twice: {runs:?}"
        );
    }
    intervals.sort();
    for pair in intervals.windows(2) {
        assert!(
            pair[0].1 <= pair[1].0,
            "two local contestants overlapped: {pair:?}"
        );
    }
    let _ = writeln!(std::io::stderr(), "battles two-server test on postgres");
}
