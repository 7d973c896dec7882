//! Flow runs across server deaths and servers, with the real `coderig`
//! binary: a `coderig serve` killed with SIGKILL during a running command
//! step leaves no process of it behind, and a restart on the same data dir
//! reruns only the interrupted attempt and finishes the run (its SSE
//! stream resumed with `Last-Event-ID` replays what the client missed,
//! each event once); a kill while an approval waits keeps it waiting for
//! the restarted server; two servers on one PostgreSQL share runs and run
//! every step once.

#![cfg(unix)]

mod common;

use common::server::{serve_command, start_server, Server};
use common::{get, post};
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

/// `coderig serve --port 0 ARGS` in `dir` ([`common::server::serve`]).
///
/// Its `./coderig.toml` turns the sandbox off: these tests follow a killed
/// server's command processes by their host pids and log every step to a
/// file outside its cwd, which a sandboxed command can do neither of (its
/// pids are its PID namespace's, its writes stay in its cwd); what
/// survives a SIGKILL under the sandbox is tested in coderig's
/// sandbox_hostile.rs.
async fn serve(dir: &Path, args: &[&str]) -> Server {
    serve_as(dir, args, "").await
}

/// [`serve`] with `RUNS_CRASH_SERVER=name` in its environment, which its
/// command steps inherit: the log then says which server ran a step.
async fn serve_as(dir: &Path, args: &[&str], name: &str) -> Server {
    std::fs::write(dir.join("coderig.toml"), "[sandbox]\nmode = \"off\"\n").unwrap();
    let mut command = serve_command(dir, args);
    command.env("RUNS_CRASH_SERVER", name);
    start_server(command).await
}

/// `POST /api/runs {spec, input}` on `url`; the run's id.
async fn start(url: &str, spec: &Value, input: Value) -> String {
    let (status, body) = post(
        format!("{url}/api/runs"),
        json!({"spec": spec, "input": input}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["run_id"].as_str().unwrap().to_owned()
}

async fn run(url: &str, id: &str) -> Value {
    let (status, run) = get(format!("{url}/api/runs/{id}")).await;
    assert_eq!(status, StatusCode::OK, "{run}");
    run
}

/// Polls `GET /api/runs/{id}` until `cond` holds (bounded: a broken server
/// fails the test instead of hanging it).
async fn until(url: &str, id: &str, what: &str, cond: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..1200 {
        let view = run(url, id).await;
        if cond(&view) {
            return view;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("run {id}: not {what} within 120 s: {}", run(url, id).await);
}

async fn ended(url: &str, id: &str) -> Value {
    until(url, id, "ended", |r| {
        matches!(
            r["status"].as_str(),
            Some("completed" | "failed" | "cancelled")
        )
    })
    .await
}

fn step<'a>(run: &'a Value, id: &str) -> &'a Value {
    run["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .unwrap_or_else(|| panic!("no step {id} in {run}"))
}

/// The outcomes of a step's finished attempts, oldest first.
fn outcomes(run: &Value, id: &str) -> Vec<String> {
    step(run, id)["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["outcome"].as_str().unwrap().to_owned())
        .collect()
}

/// A shell line a step runs first: appends `[<run> ]<step> <attempt>` to
/// the run's log (`input.log`), so a step that ran twice shows twice.
fn logged(step: &str, with_run: bool) -> String {
    let run = if with_run { "{{ input.run }} " } else { "" };
    format!(r#"echo "{run}{step} {{{{ steps["{step}"].attempt }}}}" >> '{{{{ input.log }}}}'"#)
}

fn log_lines(file: &Path) -> Vec<String> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn assert_unique(lines: &[String]) {
    let mut seen = BTreeSet::new();
    for l in lines {
        assert!(seen.insert(l), "{l:?} ran twice: {lines:#?}");
    }
}

fn sorted(lines: &[String]) -> Vec<String> {
    let mut v = lines.to_vec();
    v.sort();
    v
}

/// True when no live process has this pid (a zombie nobody reaps, as under
/// a container's PID 1, counts as gone).
fn process_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => matches!(
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.trim_start().chars().next()),
            Some('Z') | Some('X')
        ),
    }
}

/// The live processes whose environment tags them as a step attempt of
/// run `id` (`CODERIG_ATTEMPT=<run>/<step>/<iteration>/<attempt>`, which
/// the engine sets on every command step's process group).
fn tagged(id: &str) -> Vec<(i32, String)> {
    let prefix = format!("CODERIG_ATTEMPT={id}/");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            let environ = std::fs::read(entry.path().join("environ")).ok()?;
            let tag = environ
                .split(|b| *b == 0)
                .filter_map(|v| std::str::from_utf8(v).ok())
                .find(|v| v.starts_with(&prefix))?
                .to_owned();
            (!process_gone(pid)).then_some((pid, tag))
        })
        .collect()
}

/// Waits (bounded) for `cond`: SIGKILL and the new server's sweep of the
/// dead one's processes happen asynchronously.
async fn eventually(cond: impl Fn() -> bool) -> bool {
    for _ in 0..300 {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    cond()
}

/// One stored event of an SSE stream: its id, type and data.
type Seen = (String, String, Value);

/// Reads `sse` up to the run's `run_updated` `completed`; every frame must
/// be the run's and no `reset` or `gap`. Live `agent_output` (no id) is
/// left out: it is never replayed.
async fn follow_to_completed(sse: &mut common::SseClient, id: &str) -> Vec<Seen> {
    let mut seen = Vec::new();
    loop {
        let frame = sse.event().await;
        let kind = frame.event.clone().unwrap_or_default();
        assert!(kind != "reset" && kind != "gap", "{frame:?}");
        let data = frame.json();
        assert_eq!(data["run_id"], json!(id), "{kind}: {data}");
        let last = kind == "run_updated" && data["status"] == "completed";
        if let Some(event_id) = frame.id {
            seen.push((event_id, kind, data));
        }
        if last {
            return seen;
        }
    }
}

/// `(type, step, status, attempt)` of each event, for comparisons.
fn shape(events: &[Seen]) -> Vec<(String, String, String, i64)> {
    events
        .iter()
        .map(|(_, kind, data)| {
            (
                kind.clone(),
                data["step_id"].as_str().unwrap_or("").to_owned(),
                data["status"].as_str().unwrap_or("").to_owned(),
                data["attempt"].as_i64().unwrap_or(0),
            )
        })
        .collect()
}

fn sqlite_args() -> Vec<&'static str> {
    vec!["--data-dir", "data", "--lease-ttl", "3s"]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_server_killed_during_a_command_step_reruns_only_that_attempt_after_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let log = root.join("log");
    // `slow` hangs on its first attempt only (the marker file says it
    // started once): a `sleep` in the background of its shell, so the
    // sleep is no group leader and only the restarted server's sweep of
    // the dead one's tagged processes can end it.
    let slow = format!(
        r#"{line}
if [ ! -e '{{{{ input.dir }}}}/marker' ]; then
  touch '{{{{ input.dir }}}}/marker'
  sleep 1000 & echo "$$ $!" > '{{{{ input.dir }}}}/pids.tmp'
  mv '{{{{ input.dir }}}}/pids.tmp' '{{{{ input.dir }}}}/pids'
  wait
fi
echo "slow finished"
"#,
        line = logged("slow", false)
    );
    let spec = json!({
        "name": "crashy",
        "steps": [
            {"id": "prep", "kind": "command", "shell": logged("prep", false)},
            {"id": "slow", "kind": "command", "deps": ["prep"], "shell": slow},
            {"id": "after", "kind": "command", "deps": ["slow"], "shell": logged("after", false)},
        ],
    });
    let first = serve(&root, &sqlite_args()).await;
    let id = start(
        &first.url,
        &spec,
        json!({"log": log.display().to_string(), "dir": root.display().to_string()}),
    )
    .await;
    // A client follows the run from the start; it has seen `slow` running
    // when the server dies.
    let mut sse = common::SseClient::open(
        &format!("{}/api/events?run_id={id}&after=0", first.url),
        &[],
    )
    .await;
    let mut before: Vec<Seen> = Vec::new();
    loop {
        let frame = sse.event().await;
        let kind = frame.event.clone().unwrap_or_default();
        let data = frame.json();
        let slow_running =
            kind == "step_updated" && data["step_id"] == "slow" && data["status"] == "running";
        if let Some(event_id) = frame.id {
            before.push((event_id, kind, data));
        }
        if slow_running {
            break;
        }
    }
    let pids_file = root.join("pids");
    assert!(
        eventually(|| pids_file.exists()).await,
        "slow's first attempt never started its sleep"
    );
    let pids: Vec<i32> = std::fs::read_to_string(&pids_file)
        .unwrap()
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 2, "{pids:?}");
    let running = run(&first.url, &id).await;
    assert_eq!(running["status"], "running", "{running}");
    assert_eq!(step(&running, "slow")["status"], "running", "{running}");
    assert!(
        tagged(&id).iter().any(|(pid, _)| *pid == pids[1]),
        "the sleep carries its attempt's tag: {:?}",
        tagged(&id)
    );
    let cursor = before.last().unwrap().0.clone();
    drop(sse);
    first.kill9();

    // The restart on the same data dir rescues the run once the dead
    // driver's lease expires.
    let second = serve(&root, &sqlite_args()).await;
    let mut resumed = common::SseClient::open(
        &format!("{}/api/events?run_id={id}", second.url),
        &[("last-event-id", &cursor)],
    )
    .await;
    let view = ended(&second.url, &id).await;
    assert_eq!(view["status"], "completed", "{view}");
    let slow = step(&view, "slow");
    assert_eq!(slow["status"], "done", "{slow}");
    assert_eq!(slow["attempt"], 2, "{slow}");
    assert_eq!(outcomes(&view, "slow"), ["interrupted", "done"], "{slow}");
    assert_eq!(slow["output"], "slow finished\n", "{slow}");
    for other in ["prep", "after"] {
        let s = step(&view, other);
        assert_eq!((&s["status"], &s["attempt"]), (&json!("done"), &json!(1)));
        assert_eq!(outcomes(&view, other), ["done"], "{s}");
    }
    let lines = log_lines(&log);
    assert_unique(&lines);
    assert_eq!(
        sorted(&lines),
        ["after 1", "prep 1", "slow 1", "slow 2"],
        "{lines:#?}"
    );
    // The killed server's step left no process behind: its shell and the
    // sleep it started are gone, and nothing tagged with the run lives.
    for pid in &pids {
        assert!(
            eventually(|| process_gone(*pid)).await,
            "process {pid} of the killed server's step is still alive"
        );
    }
    assert!(
        eventually(|| tagged(&id).is_empty()).await,
        "tagged processes left: {:?}",
        tagged(&id)
    );

    // The resumed stream: exactly the stored events after the cursor, as
    // a replay of the whole log has them, each once, ending with the
    // run's completion.
    let after_cursor = follow_to_completed(&mut resumed, &id).await;
    let mut full = common::SseClient::open(
        &format!("{}/api/events?run_id={id}&after=0", second.url),
        &[],
    )
    .await;
    let all = follow_to_completed(&mut full, &id).await;
    let ids: Vec<&String> = after_cursor.iter().map(|(i, _, _)| i).collect();
    assert_eq!(
        ids.iter().collect::<BTreeSet<_>>().len(),
        ids.len(),
        "duplicates in the resumed stream: {after_cursor:?}"
    );
    let at = all
        .iter()
        .position(|(i, _, _)| *i == cursor)
        .expect("the cursor is in the log");
    assert_eq!(
        shape(&after_cursor),
        shape(&all[at + 1..]),
        "the resumed stream is the log after the cursor"
    );
    assert_eq!(
        after_cursor.iter().map(|(i, _, _)| i).collect::<Vec<_>>(),
        all[at + 1..].iter().map(|(i, _, _)| i).collect::<Vec<_>>()
    );
    // What the client missed: slow's second attempt, then `after`, then
    // the end; nothing of `prep` again.
    let shapes = shape(&after_cursor);
    let has = |kind: &str, step: &str, status: &str, attempt: i64| {
        shapes.contains(&(kind.into(), step.into(), status.into(), attempt))
    };
    assert!(has("step_updated", "slow", "running", 2), "{shapes:?}");
    assert!(has("step_updated", "slow", "done", 2), "{shapes:?}");
    assert!(has("step_updated", "after", "running", 1), "{shapes:?}");
    assert!(has("step_updated", "after", "done", 1), "{shapes:?}");
    assert!(
        !shapes.iter().any(|(_, step, _, _)| step == "prep"),
        "{shapes:?}"
    );
    assert_eq!(
        shapes.last().unwrap(),
        &("run_updated".into(), String::new(), "completed".into(), 0)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_server_killed_while_an_approval_waits_leaves_it_waiting_for_the_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let log = root.join("log");
    let spec = json!({
        "name": "gated",
        "steps": [
            {"id": "prep", "kind": "command", "shell": logged("prep", false)},
            {"id": "build", "kind": "command", "deps": ["prep"], "shell": logged("build", false)},
            {"id": "gate", "kind": "approval", "deps": ["build"], "message": "Ship it?"},
            {"id": "ship", "kind": "command", "deps": ["gate"], "shell": logged("ship", false)},
        ],
    });
    let first = serve(&root, &sqlite_args()).await;
    let id = start(&first.url, &spec, json!({"log": log.display().to_string()})).await;
    let waiting = until(&first.url, &id, "waiting", |r| r["status"] == "waiting").await;
    assert_eq!(step(&waiting, "gate")["status"], "waiting", "{waiting}");
    assert_eq!(step(&waiting, "ship")["status"], "pending", "{waiting}");
    first.kill9();

    let second = serve(&root, &sqlite_args()).await;
    let still = run(&second.url, &id).await;
    assert_eq!(still["status"], "waiting", "{still}");
    assert_eq!(step(&still, "gate")["status"], "waiting", "{still}");
    assert_eq!(step(&still, "gate")["message"], "Ship it?", "{still}");
    let (status, gate) = post(
        format!("{}/api/runs/{id}/steps/gate/approve", second.url),
        json!({"by": "ana", "comment": "after the crash"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{gate}");
    assert_eq!(gate["status"], "done", "{gate}");
    assert_eq!(gate["approval"]["approved"], true, "{gate}");
    let view = ended(&second.url, &id).await;
    assert_eq!(view["status"], "completed", "{view}");
    for s in ["prep", "build", "gate", "ship"] {
        let s = step(&view, s);
        assert_eq!(s["status"], "done", "{s}");
    }
    for s in ["prep", "build", "ship"] {
        assert_eq!(step(&view, s)["attempt"], 1, "{view}");
        assert_eq!(outcomes(&view, s), ["done"], "{view}");
    }
    assert_eq!(step(&view, "gate")["approval"]["by"], "ana");
    // No step before the approval ran again.
    let lines = log_lines(&log);
    assert_unique(&lines);
    assert_eq!(
        sorted(&lines),
        ["build 1", "prep 1", "ship 1"],
        "{lines:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_servers_postgres_share_runs_and_run_every_step_once() {
    let Some(db) = common::database_url("two_servers_postgres") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let log = root.join("log");
    let served = root.join("served");
    // Six steps: a start, four in parallel, a join. Each logs its line,
    // and the name of the server that ran it to another file.
    let shell = |step: &str| {
        format!(
            "{}\necho \"$RUNS_CRASH_SERVER\" >> '{{{{ input.served }}}}'\n",
            logged(step, true)
        )
    };
    let mut steps = vec![json!({"id": "start", "kind": "command", "shell": shell("start")})];
    let fan: Vec<String> = (1..=4).map(|k| format!("w{k}")).collect();
    for w in &fan {
        steps.push(json!({"id": w, "kind": "command", "deps": ["start"], "shell": shell(w)}));
    }
    steps.push(json!({"id": "join", "kind": "command", "deps": fan, "shell": shell("join")}));
    let spec = json!({"name": "fan", "steps": steps});
    let args = |data: &str| {
        vec![
            "--db".to_owned(),
            db.clone(),
            "--data-dir".to_owned(),
            data.to_owned(),
            "--lease-ttl".to_owned(),
            "3s".to_owned(),
        ]
    };
    let (a_args, b_args) = (args("data-a"), args("data-b"));
    let a = serve_as(
        &root,
        &a_args.iter().map(String::as_str).collect::<Vec<_>>(),
        "a",
    )
    .await;
    let b = serve_as(
        &root,
        &b_args.iter().map(String::as_str).collect::<Vec<_>>(),
        "b",
    )
    .await;
    let (_, health) = get(format!("{}/api/health", a.url)).await;
    assert_eq!(health["store"], "postgres", "{health}");
    let mut ids = Vec::new();
    for n in 0..10 {
        let (posted_to, read_on) = if n % 2 == 0 { (&a, &b) } else { (&b, &a) };
        let id = start(
            &posted_to.url,
            &spec,
            json!({
                "run": format!("r{n}"),
                "log": log.display().to_string(),
                "served": served.display().to_string(),
            }),
        )
        .await;
        ids.push((id, read_on.url.clone()));
    }
    for (id, url) in &ids {
        // Read through the other server: the same store.
        let view = ended(url, id).await;
        assert_eq!(view["status"], "completed", "{view}");
        for s in view["steps"].as_array().unwrap() {
            assert_eq!(
                (&s["status"], &s["attempt"]),
                (&json!("done"), &json!(1)),
                "{s}"
            );
        }
    }
    let lines = log_lines(&log);
    assert_unique(&lines);
    let mut expected = Vec::new();
    for n in 0..10 {
        for s in ["start", "w1", "w2", "w3", "w4", "join"] {
            expected.push(format!("r{n} {s} 1"));
        }
    }
    expected.sort();
    assert_eq!(sorted(&lines), expected);
    // Both servers ran steps: the runs were shared, not all left to one.
    let servers: BTreeSet<String> = log_lines(&served).into_iter().collect();
    assert_eq!(
        servers,
        BTreeSet::from(["a".to_owned(), "b".to_owned()]),
        "the servers that ran steps"
    );
    let _ = writeln!(std::io::stderr(), "flow two-serve test on postgres");
}
