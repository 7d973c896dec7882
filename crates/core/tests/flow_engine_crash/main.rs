//! Flow runs survive kill -9: a child process (this test binary, re-invoked
//! with `CODERIG_FLOW_CRASH_CHILD` set) opens the store and runs an
//! [`Engine`] that drives the run; the parent SIGKILLs it in the middle —
//! during a running command, while an approval waits, inside a do-while —
//! and a new engine on the same store (short lease, so the rescue is quick)
//! finishes the run as it would have ended without the crash: nothing that
//! finished runs again, the interrupted attempt is recorded as such, no
//! process of the dead engine's step is left, a loop resumes at its
//! persisted iteration.
//!
//! Every command appends one line naming itself (step, iteration, attempt)
//! to a log file with `>>` (O_APPEND, one short write per line), so the log
//! is the evidence of what ran how often.
//!
//! The kill tests run on a real SQLite file, and again on PostgreSQL when
//! `DATABASE_URL` is set. Two engines (two child processes) on one
//! PostgreSQL run 50 runs of a 20-step flow when `DATABASE_URL` is set
//! (scripts/test.sh's PostgreSQL stage sets it and checks the marker
//! lines); without it the PostgreSQL tests say so and pass.

#[path = "../common/mod.rs"]
mod common;

use coderig::agent::Registry;
use coderig::bus::EventBus;
use coderig::event::RunStatus;
use coderig::flow::engine::{Decision, Engine, EngineConfig, NewRun, RunFilter, RunView};
use coderig::flow::runspec::FlowSpec;
use coderig::flow::StepStatus;
use coderig::store::Store;
use common::{open_at, Location};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const CHILD_ENV: &str = "CODERIG_FLOW_CRASH_CHILD";
const CHILD_TEST: &str = "flow_child_entry";
/// How an engine of these tests runs.
#[derive(Debug, Clone, Copy)]
struct Tuning {
    /// Runs it drives at once.
    max_runs: u32,
    /// Its driver lease.
    lease: Duration,
    /// Its worker's poll.
    poll: Duration,
}

/// The kill tests' engines: a short lease, so a dead engine's run comes
/// back soon — but not so short that a live driver on a loaded machine
/// (heartbeats every third of it, each a store write that can take a
/// second there) loses it.
const KILL: Tuning = Tuning {
    max_runs: 16,
    lease: Duration::from_secs(5),
    poll: Duration::from_millis(50),
};

/// The two-engine test's: nobody dies there, so the default lease; each
/// engine drives at most 6 runs at once, so neither can take all 50.
const SHARE: Tuning = Tuning {
    max_runs: 6,
    lease: coderig::store::DEFAULT_LEASE_TTL,
    poll: Duration::from_millis(200),
};
/// Bounds every wait: only a hang reaches it.
const WAIT: Duration = Duration::from_secs(120);

fn location_json(location: &Location) -> Value {
    match location {
        Location::Sqlite(path) => json!({"sqlite": path}),
        Location::Postgres { url, schema } => json!({"postgres": url, "schema": schema}),
    }
}

fn location_of(v: &Value) -> Location {
    match v.get("sqlite") {
        Some(path) => Location::Sqlite(path.as_str().unwrap().into()),
        None => Location::Postgres {
            url: v["postgres"].as_str().unwrap().into(),
            schema: v["schema"].as_str().unwrap().into(),
        },
    }
}

fn config(data_dir: &Path, worker: &str, tuning: Tuning, run_worker: bool) -> EngineConfig {
    let mut c = EngineConfig::new(data_dir);
    c.worker = worker.into();
    c.lease_ttl = tuning.lease;
    c.poll = tuning.poll;
    c.max_runs = tuning.max_runs;
    c.run_worker = run_worker;
    c
}

/// An engine of these tests. Its commands run with the sandbox `off`: what
/// is tested here is what survives a SIGKILL of the engine — the orphan
/// killer finding an attempt's processes by their tag, and the host pids
/// the commands record. A sandboxed command's tree lives in a PID namespace
/// that dies with the engine, and its pids are the namespace's
/// (`sandbox_hostile.rs` and `flow_engine.rs` test that path).
async fn engine_on(
    store: Arc<dyn Store>,
    data_dir: &Path,
    worker: &str,
    tuning: Tuning,
    run_worker: bool,
) -> Engine {
    let bus = EventBus::start(store.clone());
    let mut registry = Registry::new();
    registry.set_sandbox_mode(coderig::sandbox::SandboxMode::Off);
    Engine::start(
        store,
        registry,
        bus,
        config(data_dir, worker, tuning, run_worker),
    )
    .await
    .unwrap()
}

/// Not a test of its own: the child's body when `CODERIG_FLOW_CRASH_CHILD`
/// is set (otherwise it returns at once). It drives runs until it is killed,
/// or until its stdin closes (then it shuts down and exits).
#[test]
fn flow_child_entry() {
    let Ok(arg) = std::env::var(CHILD_ENV) else {
        return;
    };
    let arg: Value = serde_json::from_str(&arg).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let store = open_at(&location_of(&arg["location"])).await;
        let engine = engine_on(
            store,
            Path::new(arg["data_dir"].as_str().unwrap()),
            arg["worker"].as_str().unwrap(),
            Tuning {
                max_runs: arg["max_runs"].as_u64().unwrap() as u32,
                lease: Duration::from_millis(arg["lease_ms"].as_u64().unwrap()),
                poll: Duration::from_millis(arg["poll_ms"].as_u64().unwrap()),
            },
            true,
        )
        .await;
        {
            let mut out = std::io::stdout().lock();
            writeln!(out, "FLOWCHILD READY").unwrap();
            out.flush().unwrap();
        }
        // EOF on stdin: the parent is done with this engine.
        let _ = tokio::task::spawn_blocking(|| {
            let mut sink = String::new();
            while std::io::stdin()
                .read_line(&mut sink)
                .map(|n| n > 0)
                .unwrap_or(false)
            {}
        })
        .await;
        engine.shutdown(Duration::from_secs(10)).await;
    });
}

/// A child engine process.
struct ChildEngine {
    child: Child,
    name: String,
}

impl ChildEngine {
    /// Starts one and waits until its engine runs.
    fn start(location: &Location, data_dir: &Path, name: &str, tuning: Tuning) -> ChildEngine {
        let arg = json!({
            "location": location_json(location),
            "data_dir": data_dir,
            "worker": name,
            "max_runs": tuning.max_runs,
            "lease_ms": tuning.lease.as_millis() as u64,
            "poll_ms": tuning.poll.as_millis() as u64,
        });
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", CHILD_TEST, "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, arg.to_string())
            // The commands it runs inherit this: it tells whose they were.
            .env("FLOW_ENGINE", name)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn the child engine");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                // libtest may print "test flow_child_entry ... " in front.
                if line.contains("FLOWCHILD READY") {
                    let _ = tx.send(());
                }
            }
        });
        rx.recv_timeout(WAIT)
            .unwrap_or_else(|_| panic!("the child engine {name} never got ready"));
        ChildEngine {
            child,
            name: name.into(),
        }
    }

    /// kill -9, and reap it.
    fn kill9(mut self) {
        self.child.kill().unwrap();
        let status = self.child.wait().unwrap();
        assert_eq!(status.signal(), Some(9), "{}: {status:?}", self.name);
    }

    /// Closes its stdin (it shuts its engine down) and waits for its exit.
    fn stop(mut self) {
        drop(self.child.stdin.take());
        let status = self.child.wait().unwrap();
        assert!(status.success(), "{}: {status:?}", self.name);
    }
}

/// A test's world: a store in a tempdir, a parent engine that creates and
/// reads runs but drives none, and the commands' log.
struct World {
    location: Location,
    client: Engine,
    root: PathBuf,
    /// The PostgreSQL schema's owner (dropped at the end), when on one.
    harness: Option<common::Harness>,
    _tmp: tempfile::TempDir,
}

impl World {
    async fn sqlite() -> World {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        let location = Location::Sqlite(root.join("coderig.db"));
        World::on(location, None, tmp, root).await
    }

    /// A world on a fresh schema of `DATABASE_URL`; `None` without one.
    async fn postgres() -> Option<World> {
        let harness = common::postgres("flow_engine_crash").await?;
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        Some(World::on(harness.location.clone(), Some(harness), tmp, root).await)
    }

    async fn on(
        location: Location,
        harness: Option<common::Harness>,
        tmp: tempfile::TempDir,
        root: PathBuf,
    ) -> World {
        let store = open_at(&location).await;
        let client = engine_on(store.clone(), &root.join("data"), "client", KILL, false).await;
        std::fs::create_dir_all(root.join("files")).unwrap();
        World {
            location,
            client,
            root,
            harness,
            _tmp: tmp,
        }
    }

    fn data_dir(&self) -> PathBuf {
        self.root.join("data")
    }

    fn file(&self, name: &str) -> PathBuf {
        self.root.join("files").join(name)
    }

    fn child(&self, name: &str, tuning: Tuning) -> ChildEngine {
        ChildEngine::start(&self.location, &self.data_dir(), name, tuning)
    }

    /// A new engine in this process on its own store handle.
    async fn restarted(&self, name: &str) -> Engine {
        let store = open_at(&self.location).await;
        engine_on(store, &self.data_dir(), name, KILL, true).await
    }

    async fn start(&self, yaml: &str, input: Value) -> String {
        let spec = FlowSpec::parse(yaml).unwrap_or_else(|e| panic!("{e}\n{yaml}"));
        let mut input = input;
        input["log"] = json!(self.file("log"));
        input["dir"] = json!(self.root.join("files"));
        self.client
            .start_run(NewRun::spec(spec, input))
            .await
            .unwrap()
    }

    async fn until(&self, id: &str, what: &str, cond: impl Fn(&RunView) -> bool) -> RunView {
        let deadline = Instant::now() + WAIT;
        loop {
            let view = self.client.run(id).await.unwrap();
            if cond(&view) {
                return view;
            }
            assert!(Instant::now() < deadline, "never {what}: {view:#?}");
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    async fn ended(&self, id: &str) -> RunView {
        self.until(id, "ended", |v| {
            !matches!(v.status, RunStatus::Running | RunStatus::Waiting)
        })
        .await
    }

    /// The log's lines, in order.
    fn log(&self) -> Vec<String> {
        std::fs::read_to_string(self.file("log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// Waits for a file a command of run `id` writes.
    async fn wait_for_file(&self, id: &str, name: &str) -> String {
        let path = self.file(name);
        let deadline = Instant::now() + WAIT;
        loop {
            if let Ok(text) = std::fs::read_to_string(&path) {
                return text;
            }
            if Instant::now() >= deadline {
                let view = self.client.run(id).await.unwrap();
                panic!("{} never appeared: {view:#?}", path.display());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn finish(self) {
        self.client.shutdown(Duration::from_secs(5)).await;
        if let Some(h) = self.harness {
            h.finish().await;
        }
    }
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

fn outcomes(view: &RunView, id: &str) -> Vec<String> {
    view.step(id)
        .unwrap()
        .attempts
        .iter()
        .map(|a| a.outcome.as_str().to_owned())
        .collect()
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

/// Waits up to 20 s for every process of `pids` to be gone ([`process_gone`]);
/// panics naming the first one still alive then, as `whose` process.
async fn await_gone(pids: impl IntoIterator<Item = i32>, whose: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    for pid in pids {
        while !process_gone(pid) {
            assert!(
                Instant::now() < deadline,
                "{whose} process {pid} is still alive"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// The kill tests run on a SQLite file, and on PostgreSQL when
/// `DATABASE_URL` is set (scripts/test.sh's PostgreSQL stage runs the
/// `_postgres` ones).
macro_rules! on_both {
    ($body:ident, $sqlite:ident, $postgres:ident) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $sqlite() {
            $body(World::sqlite().await).await
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $postgres() {
            if let Some(w) = World::postgres().await {
                println!("flow kill -9 test on postgres");
                $body(w).await
            }
        }
    };
}

/// A line the step's command appends: `<step> <iteration> <attempt>`.
fn logged(step: &str) -> String {
    format!(
        r#"echo "{step} {{{{ iteration }}}} {{{{ steps["{step}"].attempt }}}}" >> '{{{{ input.log }}}}'"#
    )
}

/// The 20-step flow: a start, 18 parallel workers, a join.
fn fan_flow() -> String {
    let line = |step: &str| {
        format!(
            r#"echo "{{{{ input.run }}}} {step} {{{{ steps["{step}"].attempt }}}} $FLOW_ENGINE $(date +%s%3N)" >> '{{{{ input.log }}}}'"#
        )
    };
    let mut yaml = String::from("steps:\n");
    yaml.push_str(&format!(
        "  - id: start\n    kind: command\n    shell: |\n      {}\n",
        line("start")
    ));
    let workers: Vec<String> = (1..=18).map(|k| format!("w-{k:02}")).collect();
    for wk in &workers {
        yaml.push_str(&format!(
            "  - id: {wk}\n    kind: command\n    deps: [start]\n    shell: |\n      {}\n",
            line(wk)
        ));
    }
    yaml.push_str(&format!(
        "  - id: join\n    kind: command\n    deps: [{}]\n    shell: |\n      {}\n",
        workers.join(", "),
        line("join")
    ));
    yaml
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_engines_postgres_share_50_runs_and_run_every_step_once() {
    let Some(w) = World::postgres().await else {
        return;
    };
    // scripts/test.sh's PostgreSQL stage checks this line.
    println!("flow two-engine test on {}", w.client.store().backend());
    let a = w.child("engine-a", SHARE);
    let b = w.child("engine-b", SHARE);
    let yaml = fan_flow();
    let mut ids = Vec::new();
    for n in 0..50 {
        ids.push(w.start(&yaml, json!({"run": format!("r{n:02}")})).await);
    }
    let mut views = Vec::new();
    for id in &ids {
        views.push(w.ended(id).await);
    }
    a.stop();
    b.stop();
    // Each line: `<run> <step> <attempt> <engine> <ms>`.
    let log = w.log();
    let run_lines = |run: &str| -> Vec<&String> {
        log.iter()
            .filter(|l| l.split(' ').next() == Some(run))
            .collect()
    };
    for (n, view) in views.iter().enumerate() {
        let tag = format!("r{n:02}");
        assert_eq!(view.status, RunStatus::Completed, "{view:#?}");
        assert_eq!(view.steps.len(), 20);
        for s in &view.steps {
            assert_eq!(
                (s.status, s.attempt),
                (StepStatus::Done, 1),
                "{s:#?}\nthe run's log: {:#?}",
                run_lines(&tag)
            );
            assert_eq!(outcomes(view, &s.id), ["done"], "{s:?}");
        }
    }
    let mut per_run: HashMap<String, BTreeSet<String>> = HashMap::new();
    let mut per_engine: BTreeMap<String, usize> = BTreeMap::new();
    for l in &log {
        let f: Vec<&str> = l.split(' ').collect();
        assert_eq!(f.len(), 5, "{l:?}");
        assert_eq!(f[2], "1", "a second attempt ran: {l:?}");
        assert!(
            per_run.entry(f[0].into()).or_default().insert(f[1].into()),
            "{} {} ran twice: {:#?}",
            f[0],
            f[1],
            run_lines(f[0])
        );
        *per_engine.entry(f[3].into()).or_default() += 1;
    }
    assert_eq!(per_run.len(), 50);
    for (run, steps) in &per_run {
        assert_eq!(steps.len(), 20, "{run}: {steps:?}");
    }
    assert_eq!(log.len(), 1000);
    assert_eq!(
        per_engine.keys().collect::<Vec<_>>(),
        ["engine-a", "engine-b"],
        "both engines drove runs: {per_engine:?}"
    );
    println!("flow two-engine steps per engine: {per_engine:?}");
    let page = w
        .client
        .list_runs(&RunFilter {
            status: Some(RunStatus::Completed),
            limit: Some(100),
            cursor: None,
        })
        .await
        .unwrap();
    assert_eq!(page.runs.len(), 50);
    w.finish().await;
}

/// A driver whose lease ran out while it lived (a stalled process, a slow
/// store) is replaced, here by the same engine: `driving()` must name the
/// run as long as the successor drives it, also after the stale driver
/// stopped. The lease is expired by hand in the SQLite file (what a stall
/// past the lease does).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_driver_that_lost_its_lease_hands_the_run_to_its_successor() {
    let w = World::sqlite().await;
    let yaml = format!(
        r#"
steps:
  - id: hang
    kind: command
    shell: |
      {hang}
      d='{{{{ input.dir }}}}'
      if [ {{{{ steps.hang.attempt }}}} -eq 1 ]; then
        sleep 300 & echo "$$ $!" > "$d/pids.tmp"; mv "$d/pids.tmp" "$d/pids"
        wait
      fi
      while [ ! -e "$d/release" ]; do sleep 0.05; done
  - id: after
    kind: command
    deps: [hang]
    shell: |
      {after}
"#,
        hang = logged("hang"),
        after = logged("after"),
    );
    let e = w.restarted("engine-e").await;
    let id = w.start(&yaml, json!({})).await;
    let pids: Vec<i32> = w
        .wait_for_file(&id, "pids")
        .await
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    assert_eq!(e.driving(), std::slice::from_ref(&id));
    let common::Raw::Sqlite(pool) = common::raw(&w.location).await else {
        unreachable!()
    };
    let expired = sqlx::query("UPDATE tasks SET lease_expires_at = 1 WHERE id = ?1")
        .bind(format!("{id}-driver"))
        .execute(&pool)
        .await
        .unwrap();
    assert_eq!(expired.rows_affected(), 1);
    // The engine rescues and claims the driver again; the new driver
    // starts attempt 2 and the first attempt's processes are gone.
    w.until(&id, "started attempt 2", |v| {
        let s = v.step("hang").unwrap();
        s.attempt == 2 && s.status == StepStatus::Running
    })
    .await;
    await_gone(pids, "attempt 1's").await;
    // The stale driver notices (its next write or heartbeat is refused)
    // and stops, within a heartbeat; all along the run is driven here.
    let watch = Instant::now() + KILL.lease;
    while Instant::now() < watch {
        assert_eq!(
            e.driving(),
            std::slice::from_ref(&id),
            "the run lost its driver entry"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    std::fs::write(w.file("release"), "").unwrap();
    let view = w.ended(&id).await;
    assert_eq!(view.status, RunStatus::Completed, "{view:#?}");
    assert_eq!(outcomes(&view, "hang"), ["interrupted", "done"]);
    assert_eq!(sorted(&w.log()), ["after 0 1", "hang 0 1", "hang 0 2"]);
    let deadline = Instant::now() + WAIT;
    while !e.driving().is_empty() {
        assert!(Instant::now() < deadline, "{:?}", e.driving());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    pool.close().await;
    e.shutdown(Duration::from_secs(5)).await;
    w.finish().await;
}

// The rest of this test binary, by subject.
mod kills;
