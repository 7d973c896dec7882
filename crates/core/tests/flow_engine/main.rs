//! The flow engine in one process, on a real SQLite file, with real `sh`
//! processes: timeouts and retries with their backoff (read back from the
//! stored timestamps), trigger rules after failures, a failed leaf failing
//! the run, cancel killing a hung command's process group, native code
//! steps, a switch's persisted choice, and templates over hyphenated ids.
//!
//! No assertion on wall-clock durations: waits are bounded only so a hang
//! fails the test instead of stalling it; what is asserted is what the store
//! holds (statuses, attempts, outcomes, timestamps the engine wrote).
//!
//! Command steps run in their sandbox (writable: their `cwd` and `TMPDIR`),
//! so a step that writes into the test's files dir runs there (`cwd: '{{
//! input.dir }}'`), and processes are found by a marker in their command
//! line (a PID namespace renumbers `$$`). The sandbox's own tests are at
//! the end: an escape refused and recorded, paths refused at start, and a
//! kernel without Landlock (`enforce` refuses, `auto` says so).

#[path = "../common/pass_through.rs"]
mod pass_through;
#[path = "../procs/mod.rs"]
mod procs;
use coderig::agent::Registry;
use coderig::bus::EventBus;
use coderig::event::RunStatus;
use coderig::flow::engine::{code_fn, Engine, EngineConfig, NewRun, RunFilter, RunView};
use coderig::flow::runspec::FlowSpec;
use coderig::flow::{SkipReason, StepStatus};
use coderig::sandbox::{Enforcer, SandboxMode};
use coderig::store::{SqliteStore, Store};
use coderig::{Error, ErrorKind};
use procs::processes_with;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Generous: only a hang should ever reach it.
const WAIT: Duration = Duration::from_secs(60);

struct World {
    engine: Engine,
    store: Arc<dyn Store>,
    /// Where the commands keep their files (counters, pids).
    files: PathBuf,
    _tmp: tempfile::TempDir,
}

async fn world() -> World {
    world_with(&[], SandboxMode::Enforce).await
}

/// A world whose engine confines commands' `cwd` and writable paths to
/// `roots` (under its temp dir; created) and whose registry's sandbox mode
/// is `mode`.
async fn world_with(roots: &[&str], mode: SandboxMode) -> World {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&root.join("db")).await.unwrap());
    let bus = EventBus::start(store.clone());
    let mut config = EngineConfig::new(root.join("data"));
    config.poll = Duration::from_millis(50);
    for r in roots {
        std::fs::create_dir_all(root.join(r)).unwrap();
        config.project_roots.push(root.join(r));
    }
    let mut registry = Registry::new();
    registry.set_sandbox_mode(mode);
    let engine = Engine::start(store.clone(), registry, bus, config)
        .await
        .unwrap();
    let files = root.join("files");
    std::fs::create_dir_all(&files).unwrap();
    World {
        engine,
        store,
        files,
        _tmp: tmp,
    }
}

impl World {
    /// Starts `yaml` (with `{{ input.dir }}` the files dir) and waits for
    /// its end.
    async fn run(&self, yaml: &str) -> RunView {
        let id = self.start(yaml, NewRun::spec).await;
        self.finished(&id).await
    }

    async fn start(&self, yaml: &str, make: impl FnOnce(FlowSpec, Value) -> NewRun) -> String {
        let spec = FlowSpec::parse(yaml).unwrap_or_else(|e| panic!("{e}\n{yaml}"));
        let input = json!({"dir": self.files.display().to_string()});
        self.engine.start_run(make(spec, input)).await.unwrap()
    }

    async fn finished(&self, id: &str) -> RunView {
        let view = self.engine.wait(id, Some(WAIT)).await.unwrap();
        assert!(
            !matches!(view.status, RunStatus::Running | RunStatus::Waiting),
            "the run did not end: {view:#?}"
        );
        view
    }

    /// Polls the run until `cond` holds (bounded by [`WAIT`]).
    async fn until(&self, id: &str, what: &str, cond: impl Fn(&RunView) -> bool) -> RunView {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let view = self.engine.run(id).await.unwrap();
            if cond(&view) {
                return view;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "never {what}: {view:#?}"
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    fn file(&self, name: &str) -> PathBuf {
        self.files.join(name)
    }

    async fn wait_for_file(&self, name: &str) -> String {
        let path = self.file(name);
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            if let Ok(text) = std::fs::read_to_string(&path) {
                if text.ends_with('\n') {
                    return text;
                }
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{} never appeared",
                path.display()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn shutdown(self) {
        self.engine.shutdown(Duration::from_secs(10)).await;
    }
}

fn step<'a>(view: &'a RunView, id: &str) -> &'a coderig::flow::engine::StepView {
    view.step(id)
        .unwrap_or_else(|| panic!("no step {id:?}: {view:#?}"))
}

fn outcomes(view: &RunView, id: &str) -> Vec<String> {
    step(view, id)
        .attempts
        .iter()
        .map(|a| a.outcome.as_str().to_owned())
        .collect()
}

/// Waits until no process carries `marker` (bounded).
async fn wait_none_with(marker: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let left = processes_with(marker);
        if left.is_empty() {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "processes {left:?} ({marker}) are still alive"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_command_is_killed_at_its_timeout_and_retried_after_the_backoff() {
    let w = world().await;
    // The first run hangs (a sleep in the background and a wait, so the
    // group has two processes); the second answers at once.
    let yaml = r#"
steps:
  - id: hang
    kind: command
    cwd: '{{ input.dir }}'
    timeout: 1s
    retry: {max_attempts: 3, initial: 1s, multiplier: 2, on: [timeout]}
    shell: |
      d='{{ input.dir }}'
      n=$(cat "$d/count" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$d/count"
      if [ $n -eq 1 ]; then
        python3 -c 'import time; time.sleep(120)' '{{ input.dir }}/hang-marker' & echo started > "$d/started"
        wait
      fi
      echo "run $n"
"#;
    let view = w.run(yaml).await;
    assert_eq!(view.status, RunStatus::Completed, "{view:#?}");
    let s = step(&view, "hang");
    assert_eq!(s.status, StepStatus::Done);
    assert_eq!(s.attempt, 2);
    assert_eq!(s.output, Some(json!("run 2\n")));
    assert_eq!(outcomes(&view, "hang"), ["timed_out", "done"]);
    let first = &s.attempts[0];
    let second = &s.attempts[1];
    assert_eq!((first.attempt, second.attempt), (1, 2));
    assert_eq!(first.error.as_ref().unwrap()["timed_out"], json!(true));
    // The timer fired on the persisted deadline, not before it.
    assert!(
        first.finished_at - first.started_at >= 1000,
        "the first attempt ended before its 1 s timeout: {first:?}"
    );
    // The retry waited the backoff: 1 s ±10 % jitter.
    let gap = second.started_at - first.finished_at;
    assert!(gap >= 900, "the retry started {gap} ms after the timeout");
    // Both processes of the hung attempt (its shell and the sleeper, each
    // naming the marker) are gone.
    assert_eq!(w.wait_for_file("started").await, "started\n");
    wait_none_with(&w.file("hang-marker").display().to_string()).await;
    assert_eq!(std::fs::read_to_string(w.file("count")).unwrap(), "2\n");
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_that_fails_twice_then_succeeds_ends_done_at_its_third_attempt() {
    let w = world().await;
    let yaml = r#"
steps:
  - id: flaky
    kind: command
    cwd: '{{ input.dir }}'
    retry: {max_attempts: 3, initial: 100ms, multiplier: 2}
    shell: |
      d='{{ input.dir }}'
      n=$(cat "$d/count" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$d/count"
      echo "run $n"
      [ $n -ge 3 ] || { echo "not yet" >&2; exit 3; }
  - id: after
    kind: command
    deps: [flaky]
    argv: ["echo", "after {{ results.flaky | trim }}"]
"#;
    let view = w.run(yaml).await;
    assert_eq!(view.status, RunStatus::Completed, "{view:#?}");
    let s = step(&view, "flaky");
    assert_eq!((s.status, s.attempt), (StepStatus::Done, 3));
    assert_eq!(outcomes(&view, "flaky"), ["failed", "failed", "done"]);
    for a in &s.attempts[..2] {
        let e = a.error.as_ref().unwrap();
        assert_eq!(e["exit_code"], json!(3), "{e}");
    }
    // Exponential backoff: 100 ms then 200 ms, each ±10 %.
    let gaps: Vec<i64> = s
        .attempts
        .windows(2)
        .map(|p| p[1].started_at - p[0].finished_at)
        .collect();
    assert!(gaps[0] >= 90 && gaps[1] >= 180, "{gaps:?}");
    assert_eq!(s.output, Some(json!("run 3\n")));
    assert_eq!(step(&view, "after").output, Some(json!("after run 3\n")));
    assert_eq!(std::fs::read_to_string(w.file("count")).unwrap(), "3\n");
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_success_fans_in_past_a_failed_branch_and_the_run_completes() {
    let w = world().await;
    let yaml = r#"
steps:
  - {id: bad, kind: command, shell: "echo broken >&2; exit 1"}
  - {id: good, kind: command, argv: ["echo", "fine"]}
  - id: join
    kind: command
    deps: [bad, good]
    trigger_rule: one_success
    argv: ["echo", "joined {{ results.good | trim }}"]
"#;
    let view = w.run(yaml).await;
    assert_eq!(view.status, RunStatus::Completed, "{view:#?}");
    assert_eq!(view.error, None);
    assert_eq!(step(&view, "bad").status, StepStatus::Failed);
    assert_eq!(step(&view, "good").status, StepStatus::Done);
    let join = step(&view, "join");
    assert_eq!(join.status, StepStatus::Done);
    assert_eq!(join.output, Some(json!("joined fine\n")));
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_done_runs_after_a_failure_and_sees_it() {
    let w = world().await;
    let yaml = r#"
steps:
  - {id: bad, kind: command, shell: "exit 7"}
  - {id: good, kind: command, argv: ["echo", "fine"]}
  - id: cleanup
    kind: command
    deps: [bad, good]
    trigger_rule: all_done
    argv: ["echo", "{{ steps.bad.status }} {{ steps.bad.exit_code }} {{ steps.good.status }}"]
  - id: strict
    kind: command
    deps: [bad, good]
    argv: ["echo", "never"]
"#;
    let view = w.run(yaml).await;
    let cleanup = step(&view, "cleanup");
    assert_eq!(cleanup.status, StepStatus::Done, "{view:#?}");
    assert_eq!(cleanup.output, Some(json!("failed 7 done\n")));
    // The all_success sibling is skipped for its failed upstream, and as a
    // leaf that did not succeed it fails the run, naming the failure.
    let strict = step(&view, "strict");
    assert_eq!(strict.status, StepStatus::Skipped);
    assert_eq!(strict.skip_reason, Some(SkipReason::UpstreamFailed));
    assert_eq!(view.status, RunStatus::Failed);
    let error = view.error.clone().unwrap();
    assert_eq!(error["failed_steps"], json!(["strict"]), "{error}");
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_leaf_fails_the_run_naming_the_step() {
    let w = world().await;
    let yaml = r#"
steps:
  - {id: build, kind: command, argv: ["echo", "built"]}
  - {id: test-suite, kind: command, deps: [build], shell: "echo '3 failed' >&2; exit 2"}
"#;
    let view = w.run(yaml).await;
    assert_eq!(view.status, RunStatus::Failed, "{view:#?}");
    assert_eq!(step(&view, "build").status, StepStatus::Done);
    let t = step(&view, "test-suite");
    assert_eq!(t.status, StepStatus::Failed);
    assert_eq!(t.exit_code, Some(2));
    let error = view.error.clone().unwrap();
    assert_eq!(error["step"], json!("test-suite"), "{error}");
    assert_eq!(error["failed_steps"], json!(["test-suite"]), "{error}");
    assert_eq!(error["exit_code"], json!(2), "{error}");
    assert!(
        error["stderr_tail"].as_str().unwrap().contains("3 failed"),
        "{error}"
    );
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_kills_a_hung_commands_process_group_and_cancels_the_rest() {
    let w = world().await;
    let yaml = r#"
steps:
  - id: hang
    kind: command
    cwd: '{{ input.dir }}'
    shell: |
      d='{{ input.dir }}'
      python3 -c 'import sys, time; open(sys.argv[1] + ".up", "w").write("up\n"); time.sleep(120)' '{{ input.dir }}/cancel-marker' &
      wait
  - {id: later, kind: command, deps: [hang], argv: ["echo", "never"]}
  - {id: last, kind: command, deps: [later], argv: ["echo", "never"]}
"#;
    let id = w.start(yaml, NewRun::spec).await;
    let marker = w.file("cancel-marker").display().to_string();
    // The sleeper says it is up; it and the shell waiting for it name the
    // marker.
    assert_eq!(w.wait_for_file("cancel-marker.up").await, "up\n");
    assert_eq!(
        processes_with(&marker).len(),
        2,
        "{:?}",
        processes_with(&marker)
    );
    let view = w.engine.cancel(&id).await.unwrap();
    assert_eq!(view.status, RunStatus::Cancelled);
    // Terminal everywhere at once: the view cancel returned, and the first
    // read after it, have no step left running or pending — although the
    // command's processes may still be dying.
    let read = w.engine.run(&id).await.unwrap();
    for v in [&view, &read] {
        assert_eq!(v.status, RunStatus::Cancelled);
        let statuses: Vec<_> = v.steps.iter().map(|s| (s.id.as_str(), s.status)).collect();
        assert_eq!(
            statuses,
            [
                ("hang", StepStatus::Cancelled),
                ("later", StepStatus::Cancelled),
                ("last", StepStatus::Cancelled)
            ],
            "{v:#?}"
        );
    }
    assert_eq!(step(&read, "hang").attempt, 1);
    assert_eq!(step(&read, "later").attempt, 0);
    // In the log: the steps' cancellations, then the run's — its last
    // event, also once the driver has wound the run up.
    let ends_with_the_cancel = |events: &[coderig::store::EventRecord]| {
        let tail: Vec<_> = events[events.len() - 4..]
            .iter()
            .map(|e| {
                (
                    e.kind.as_str(),
                    e.payload["step_id"].as_str(),
                    e.payload["status"].clone(),
                )
            })
            .collect();
        assert_eq!(
            tail,
            [
                ("step_updated", Some("hang"), json!("cancelled")),
                ("step_updated", Some("later"), json!("cancelled")),
                ("step_updated", Some("last"), json!("cancelled")),
                ("run_updated", None, json!("cancelled")),
            ],
            "{events:#?}"
        );
    };
    ends_with_the_cancel(&w.store.work_events(&id, 0, 1000).await.unwrap());
    wait_none_with(&marker).await;
    let view = w
        .until(&id, "wound up by its driver", |_| {
            w.engine.driving().is_empty()
        })
        .await;
    ends_with_the_cancel(&w.store.work_events(&id, 0, 1000).await.unwrap());
    assert!(
        view.steps.iter().all(|s| s.status == StepStatus::Cancelled),
        "{view:#?}"
    );
    // The stopped attempt is not taken for a crash.
    assert!(outcomes(&view, "hang").is_empty(), "{view:#?}");
    // Cancelling an ended run is a conflict.
    let again = w.engine.cancel(&id).await.unwrap_err();
    assert_eq!(again.kind(), coderig::ErrorKind::Conflict, "{again}");
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_steps_see_their_dependencies_and_a_failing_one_is_retried() {
    let w = world().await;
    let calls = Arc::new(AtomicU32::new(0));
    let c = calls.clone();
    let flaky = code_fn(move |ctx: Value| {
        let n = c.fetch_add(1, Ordering::SeqCst) + 1;
        async move {
            if n == 1 {
                return Err(Error::unavailable("first call fails"));
            }
            let words = ctx["results"]["words"]
                .as_str()
                .unwrap_or("")
                .trim()
                .to_owned();
            Ok(json!({"call": n, "words": words, "input": ctx["input"]["dir"].is_string()}))
        }
    });
    let double = code_fn(|ctx: Value| async move {
        Ok(json!(
            ctx["results"]["count"]["call"].as_u64().unwrap_or(0) * 2
        ))
    });
    let yaml = r#"
steps:
  - {id: words, kind: command, argv: ["echo", "three little words"]}
  - id: count
    kind: code
    deps: [words]
    retry: {max_attempts: 2, initial: 50ms}
  - {id: double, kind: code, deps: [count]}
  - {id: show, kind: command, deps: [double], argv: ["echo", "{{ results.count.words }}={{ results.double }}"]}
"#;
    let id = w
        .start(yaml, |spec, input| {
            NewRun::spec(spec, input)
                .code("count", flaky)
                .code("double", double)
        })
        .await;
    let view = w.finished(&id).await;
    assert_eq!(view.status, RunStatus::Completed, "{view:#?}");
    let count = step(&view, "count");
    assert_eq!(outcomes(&view, "count"), ["failed", "done"]);
    assert_eq!(
        count.attempts[0].error.as_ref().unwrap()["kind"],
        json!("unavailable")
    );
    assert_eq!(
        count.output,
        Some(json!({"call": 2, "words": "three little words", "input": true}))
    );
    assert_eq!(step(&view, "double").output, Some(json!(4)));
    assert_eq!(
        step(&view, "show").output,
        Some(json!("three little words=4\n"))
    );
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_code_step_without_its_callable_is_refused_and_nothing_is_created() {
    let w = world().await;
    let spec = FlowSpec::parse("steps: [{id: calc, kind: code}]").unwrap();
    let e = w
        .engine
        .start_run(NewRun::spec(spec, json!({})))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), coderig::ErrorKind::InvalidInput, "{e}");
    let page = w
        .engine
        .list_runs(&coderig::flow::engine::RunFilter::default())
        .await
        .unwrap();
    assert!(page.runs.is_empty(), "{page:?}");
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_switch_choice_is_persisted_and_the_untaken_branch_never_runs() {
    let w = world().await;
    let yaml = r#"
steps:
  - {id: measure, kind: command, argv: ["printf", "42"]}
  - id: route
    kind: switch
    deps: [measure]
    cases:
      - {label: small, condition: 'int(results.measure) < 10', steps: [tiny]}
      - {label: big, condition: 'int(results.measure) >= 10', steps: [huge, huge-2]}
    default: [none]
  - {id: tiny, kind: command, deps: [route], shell: "touch '{{ input.dir }}/tiny'"}
  - {id: huge, kind: command, deps: [route], argv: ["echo", "big {{ results.route }}"]}
  - {id: huge-2, kind: command, deps: [huge], argv: ["echo", "bigger"]}
  - {id: none, kind: command, deps: [route], shell: "touch '{{ input.dir }}/none'"}
"#;
    let view = w.run(yaml).await;
    assert_eq!(view.status, RunStatus::Completed, "{view:#?}");
    let route = step(&view, "route");
    assert_eq!(route.status, StepStatus::Done);
    assert_eq!(route.output, Some(json!("big")));
    let sw = route.switch.clone().unwrap();
    assert_eq!(sw.chosen.as_deref(), Some("big"));
    let mut excluded = sw.excluded.clone();
    excluded.sort();
    assert_eq!(excluded, ["none", "tiny"]);
    // What the store holds, not only what the view shows.
    let owner = w.store.owner(&format!("{}:route", view.id)).await.unwrap();
    assert_eq!(
        owner.data["switch"]["chosen"],
        json!("big"),
        "{}",
        owner.data
    );
    for id in ["tiny", "none"] {
        let s = step(&view, id);
        assert_eq!(s.status, StepStatus::Skipped, "{s:?}");
        assert_eq!(s.skip_reason, Some(SkipReason::BranchNotTaken));
        assert!(!w.file(id).exists(), "{id} ran");
    }
    assert_eq!(step(&view, "huge").output, Some(json!("big big\n")));
    assert_eq!(step(&view, "huge-2").status, StepStatus::Done);
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn templates_conditions_and_the_report_reach_hyphenated_ids() {
    let w = world().await;
    let yaml = r#"
steps:
  - {id: angle-web, kind: command, argv: ["printf", "web"]}
  - {id: angle-docs, kind: command, argv: ["printf", "docs"]}
  - id: merge
    kind: command
    deps: [angle-web, angle-docs]
    argv: ["echo", "{{ results[\"angle-web\"] }}+{{ results[\"angle-docs\"] }}"]
  - id: guarded
    kind: command
    deps: [angle-web]
    when: 'results["angle-web"] == "web" && steps["angle-web"].status == "done"'
    argv: ["echo", "guard passed"]
  - id: guarded-off
    kind: command
    deps: [angle-web]
    when: 'results["angle-web"] == "nope"'
    shell: "touch '{{ input.dir }}/off'"
report: 'merged: {{ results["merge"] | trim }}; web={{ results["angle-web"] }}'
"#;
    let view = w.run(yaml).await;
    assert_eq!(view.status, RunStatus::Completed, "{view:#?}");
    assert_eq!(step(&view, "merge").output, Some(json!("web+docs\n")));
    assert_eq!(step(&view, "guarded").status, StepStatus::Done);
    let off = step(&view, "guarded-off");
    assert_eq!(off.status, StepStatus::Skipped);
    assert_eq!(off.skip_reason, Some(SkipReason::ConditionFalse));
    assert!(!w.file("off").exists());
    assert_eq!(view.report.as_deref(), Some("merged: web+docs; web=web"));
    let report = data_file(&w, &view.id, "report.md");
    assert_eq!(report, "merged: web+docs; web=web");
    let out = data_file(&w, &view.id, "angle-web/output.txt");
    assert_eq!(out, "web");
    w.shutdown().await;
}

fn data_file(w: &World, run: &str, rel: &str) -> String {
    let path = w
        .files
        .parent()
        .unwrap()
        .join("data/runs")
        .join(run)
        .join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_do_while_runs_its_body_until_the_condition_fails() {
    let w = world().await;
    let yaml = r#"
steps:
  - {id: prep, kind: command, argv: ["echo", "prep"]}
  - id: loop
    kind: do_while
    deps: [prep]
    body: [body-a, body-b]
    condition: 'iteration < 3'
    max_iterations: 10
  - id: body-a
    kind: command
    deps: [loop]
    cwd: '{{ input.dir }}'
    shell: echo "a {{ iteration }} {{ steps["body-a"].attempt }}" >> '{{ input.dir }}/log'
  - id: body-b
    kind: command
    deps: [body-a]
    cwd: '{{ input.dir }}'
    shell: echo "b {{ iteration }} {{ steps["body-b"].attempt }}" >> '{{ input.dir }}/log'
  - {id: after, kind: command, deps: [loop], argv: ["echo", "{{ results.loop }}"]}
"#;
    let view = w.run(yaml).await;
    assert_eq!(view.status, RunStatus::Completed, "{view:#?}");
    assert_eq!(
        std::fs::read_to_string(w.file("log")).unwrap(),
        "a 1 1\nb 1 1\na 2 1\nb 2 1\na 3 1\nb 3 1\n"
    );
    assert_eq!(step(&view, "loop").output, Some(json!(3)));
    assert_eq!(step(&view, "after").output, Some(json!("3\n")));
    // Each iteration is a fresh start of every body step: attempt 1 of
    // iteration 1, 2, 3 (the first body step too, which the scheduler hands
    // out again the moment the loop iterates).
    for id in ["body-a", "body-b"] {
        let s = step(&view, id);
        assert_eq!((s.attempt, s.iteration), (1, 3), "{s:#?}");
        let runs: Vec<(u32, u32, &str)> = s
            .attempts
            .iter()
            .map(|a| (a.iteration, a.attempt, a.outcome.as_str()))
            .collect();
        assert_eq!(
            runs,
            [(1, 1, "done"), (2, 1, "done"), (3, 1, "done")],
            "{id}"
        );
    }
    // Every iteration's ending is a stored `step_updated` too (the last
    // body step's `done` is written before its row starts over).
    let events = w.store.events_after(0, 10_000).await.unwrap();
    for id in ["body-a", "body-b"] {
        let done = events
            .iter()
            .filter(|e| {
                e.kind.as_str() == "step_updated"
                    && e.payload["run_id"] == json!(view.id)
                    && e.payload["step_id"] == json!(id)
                    && e.payload["status"] == json!("done")
            })
            .count();
        assert_eq!(done, 3, "{id}: one stored `done` per iteration");
    }
    w.shutdown().await;
}

// The rest of this test binary, by subject.
mod clock;
mod sandbox;
