//! The arena runtime end to end on real parts: a real SQLite store (and a
//! real PostgreSQL when `DATABASE_URL` is set, for the two-server test), a
//! real git repository with a failing shell test, scripted contestants and
//! judges (in-process agents that write files in their worktree), the
//! oracle's real `sh` runs.

#![cfg(unix)]

#[path = "../common/mod.rs"]
mod common;

#[path = "../procs/mod.rs"]
mod procs;
#[path = "../workspace_support/mod.rs"]
mod workspace_support;
use coderig::agent::Registry;
use coderig::arena::lifecycle::CrossExamStatus;
use coderig::arena::runner::{Arena, ArenaConfig, BattleFilter, BattleView};
use coderig::arena::{BattleSpec, ContestantStatus, EvidenceTier, WinnerSource};
use coderig::bus::EventBus;
use coderig::event::BattleStatus;
use coderig::store::Store;
use coderig::ErrorKind;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;
use workspace_support::{calc_project, git, CALC_BUGGY, CALC_FIXED};

fn agents_toml() -> String {
    format!(
        r#"
[agents.fixer]
kind = "scripted"
script = [ {{ text = "no script for this model" }} ]
scripts.good = [ {{ write = {{ path = "calc.sh", content = {fixed:?} }} }}, {{ write = {{ path = "NOTES.md", content = "a new file\n" }} }}, {{ text = "fixed add" }} ]
scripts.good2 = [ {{ write = {{ path = "calc.sh", content = {fixed:?} }} }}, {{ text = "fixed add too" }} ]
scripts.wrong = [ {{ write = {{ path = "calc.sh", content = "add() {{ echo 0; }}\n" }} }}, {{ text = "changed it" }} ]
scripts.idle = [ {{ text = "nothing to change" }} ]
scripts.hang = [ {{ text = "thinking" }}, {{ hang = true }} ]
scripts.slow = [ {{ sleep_ms = 1500 }}, {{ write = {{ path = "calc.sh", content = {fixed:?} }} }}, {{ text = "slow fix" }} ]
scripts.unsafe = [ {{ delete = {{ path = "vendor" }} }}, {{ write = {{ path = "vendor/calc.sh", content = {fixed:?} }} }}, {{ text = "replaced the vendor link" }} ]
scripts.crash = [ {{ text = "about to fail" }}, {{ fail = {{ message = "model exploded", class = "fatal" }} }} ]

[agents.gpu]
kind = "scripted"
lane = "local"
scripts.a = [ {{ sleep_ms = 400 }}, {{ write = {{ path = "calc.sh", content = {fixed:?} }} }}, {{ text = "a" }} ]
scripts.b = [ {{ sleep_ms = 400 }}, {{ write = {{ path = "calc.sh", content = {fixed:?} }} }}, {{ text = "b" }} ]
scripts.c = [ {{ sleep_ms = 400 }}, {{ text = "c" }} ]

[agents.judge]
kind = "scripted"
scripts.j = [ {{ text = "Both are fine, the first is cleaner.\nWINNER: fixer/good" }} ]
scripts.broken = [ {{ fail = {{ message = "judge down", class = "fatal" }} }} ]
scripts.examiner = [ {{ text = "I checked the evidence.\nVERDICT: fixer/good" }} ]
"#,
        fixed = CALC_FIXED
    )
}

struct World {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    project: PathBuf,
    data: PathBuf,
    store: Arc<dyn Store>,
    arena: Arena,
}

fn make_project(root: &Path) -> PathBuf {
    calc_project(&root.join("projects").join("calc"))
}

fn config(data: &Path, root: &Path) -> ArenaConfig {
    let mut config = ArenaConfig::new(data);
    config.project_roots = vec![root.join("projects")];
    config.lease_ttl = Duration::from_secs(3);
    config.poll = Duration::from_millis(100);
    config.reconcile_every = Duration::from_millis(300);
    config
}

async fn world() -> World {
    world_with(&agents_toml()).await
}

/// A world whose registry is `toml`.
async fn world_with(toml: &str) -> World {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let project = make_project(&root);
    let data = root.join("data");
    let store: Arc<dyn Store> = Arc::new(
        coderig::store::SqliteStore::open(&data)
            .await
            .expect("sqlite store"),
    );
    let arena = start_arena_with(&store, &data, &root, toml).await;
    World {
        _tmp: tmp,
        root,
        project,
        data,
        store,
        arena,
    }
}

async fn start_arena(store: &Arc<dyn Store>, data: &Path, root: &Path) -> Arena {
    start_arena_with(store, data, root, &agents_toml()).await
}

async fn start_arena_with(store: &Arc<dyn Store>, data: &Path, root: &Path, toml: &str) -> Arena {
    let registry = Registry::from_toml_str(toml).expect("agents");
    let bus = EventBus::start(store.clone());
    Arena::start(store.clone(), registry, bus, config(data, root))
        .await
        .expect("arena")
}

fn spec(project: &Path, contestants: &[&str], judge: &str, oracle: bool) -> BattleSpec {
    let contestants: Vec<Value> = contestants
        .iter()
        .map(|c| {
            let (identity, model) = c.split_once('/').unwrap();
            json!({"identity": identity, "model": model})
        })
        .collect();
    let (ji, jm) = judge.split_once('/').unwrap();
    let mut spec = json!({
        "battle_type": "coding",
        "prompt": "Fix add in calc.sh so that tests/test_add.sh passes",
        "project": project.display().to_string(),
        "contestants": contestants,
        "judge": {"identity": ji, "model": jm},
        "contestant_timeout": "3s",
    });
    if oracle {
        spec["oracle"] = json!({"repro": "sh tests/test_add.sh", "suite": "for t in tests/*.sh; do sh \"$t\" || exit 1; done", "timeout": "30s"});
    }
    BattleSpec::from_json(&spec).expect("spec")
}

async fn finished(arena: &Arena, id: &str) -> BattleView {
    let view = arena
        .wait(id, Some(Duration::from_secs(90)))
        .await
        .expect("wait");
    assert!(view.is_finished(), "battle did not finish: {view:#?}");
    view
}

fn by_model<'a>(view: &'a BattleView, model: &str) -> &'a coderig::arena::runner::ContestantView {
    view.contestants
        .iter()
        .find(|c| c.model == model)
        .unwrap_or_else(|| panic!("no {model} in {view:#?}"))
}

async fn stored_events(store: &Arc<dyn Store>, battle: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for e in store.events_after(0, 10_000).await.unwrap() {
        if e.work_id == battle {
            let mut v = e.payload.clone();
            v["type"] = json!(e.kind.as_str());
            out.push(v);
        }
    }
    out
}

fn coderig_worktrees(project: &Path) -> Vec<String> {
    git(project, &["worktree", "list", "--porcelain"])
        .lines()
        .filter(|l| l.starts_with("worktree "))
        .map(str::to_owned)
        .skip(1)
        .collect()
}

fn coderig_branches(project: &Path) -> String {
    git(project, &["branch", "--list", "coderig/*"])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_oracle_decides_and_the_results_folder_says_everything() {
    let w = world().await;
    let view = w
        .arena
        .start_battle(spec(
            &w.project,
            &["fixer/good", "fixer/wrong"],
            "judge/j",
            true,
        ))
        .await
        .unwrap();
    assert_eq!(view.status, BattleStatus::Running);
    let view = finished(&w.arena, &view.id).await;
    assert_eq!(view.status, BattleStatus::Completed, "{view:#?}");
    let good = by_model(&view, "good");
    let wrong = by_model(&view, "wrong");
    assert_eq!(good.status, ContestantStatus::Done);
    assert_eq!(good.tier, EvidenceTier::Full);
    assert_eq!(wrong.tier, EvidenceTier::None);
    assert_eq!(view.winner_contestant_id.as_deref(), Some(good.id.as_str()));
    assert_eq!(view.winner_source, Some(WinnerSource::Oracle));
    let base = view.base_run.as_ref().expect("base run");
    assert_eq!(
        base.repro.as_ref().unwrap().exit_code,
        Some(1),
        "the repro fails on the base"
    );

    // The results folder.
    let dir = PathBuf::from(&view.results_dir);
    assert!(
        dir.starts_with(w.project.join("Arena")),
        "{}",
        dir.display()
    );
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["base_commit"], json!(view.base_commit));
    let analysis = std::fs::read_to_string(dir.join("analysis.md")).unwrap();
    assert!(analysis.contains("fixer/good"), "{analysis}");
    assert_eq!(w.arena.analysis(&view.id).await.unwrap(), analysis);
    let patch = std::fs::read_to_string(dir.join(&good.dir).join("diff.patch")).unwrap();
    assert!(
        patch.contains("NOTES.md") && patch.contains("calc.sh"),
        "new files are in the patch: {patch}"
    );
    let result = std::fs::read_to_string(dir.join(&good.dir).join("result.md")).unwrap();
    assert!(result.contains("fixed add"), "{result}");
    assert_eq!(
        w.arena.diff(&view.id, &good.id).await.unwrap(),
        patch.as_bytes()
    );

    // The user's tree is untouched and git status is clean (Arena/ excluded);
    // no worktree and no coderig branch is left.
    assert_eq!(git(&w.project, &["status", "--porcelain"]), "");
    assert_eq!(
        std::fs::read_to_string(w.project.join("calc.sh")).unwrap(),
        CALC_BUGGY
    );
    assert!(
        coderig_worktrees(&w.project).is_empty(),
        "{:?}",
        coderig_worktrees(&w.project)
    );
    assert_eq!(coderig_branches(&w.project), "");

    // The events, each stored state change once.
    let events = stored_events(&w.store, &view.id).await;
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types.first(), Some(&"battle_started"));
    assert_eq!(
        types.iter().filter(|t| **t == "contestant_updated").count(),
        4,
        "{types:?}"
    );
    let last = events.last().unwrap();
    assert_eq!(last["type"], "battle_updated");
    assert_eq!(last["status"], "completed");
    assert_eq!(last["winner_source"], "oracle");
    let done = events
        .iter()
        .find(|e| {
            e["type"] == "contestant_updated"
                && e["contestant_id"] == json!(good.id)
                && e["status"] == "done"
        })
        .unwrap();
    assert_eq!(done["evidence"]["patch_applied"], true);

    // `battle apply` puts the winner's patch in the user's tree; a second
    // apply does not apply cleanly and changes nothing.
    let applied = w.arena.apply(&view.id, None).await.unwrap();
    assert_eq!(applied.contestant_id, good.id);
    assert_eq!(
        std::fs::read_to_string(w.project.join("calc.sh")).unwrap(),
        CALC_FIXED
    );
    let again = w.arena.apply(&view.id, None).await.unwrap_err();
    assert_eq!(again.kind(), ErrorKind::Conflict, "{again}");
    assert_eq!(
        std::fs::read_to_string(w.project.join("calc.sh")).unwrap(),
        CALC_FIXED
    );
    w.arena.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_judge_decides_a_tie_of_evidence_in_both_orders_and_a_human_override_survives() {
    let w = world().await;
    let view = w
        .arena
        .start_battle(spec(
            &w.project,
            &["fixer/good", "fixer/good2"],
            "judge/j",
            true,
        ))
        .await
        .unwrap();
    let view = finished(&w.arena, &view.id).await;
    let good = by_model(&view, "good").id.clone();
    let good2 = by_model(&view, "good2").id.clone();
    assert_eq!(
        view.winner_contestant_id.as_deref(),
        Some(good.as_str()),
        "{view:#?}"
    );
    assert_eq!(view.winner_source, Some(WinnerSource::Judge));
    let analysis = w.arena.analysis(&view.id).await.unwrap();
    assert!(analysis.contains("fixer/good2"), "{analysis}");

    let view = w.arena.set_winner(&view.id, Some(&good2)).await.unwrap();
    assert_eq!(view.winner_source, Some(WinnerSource::Human));
    w.arena.analyze(&view.id, false).await.unwrap();
    let after = finished(&w.arena, &view.id).await;
    assert_eq!(
        after.winner_contestant_id.as_deref(),
        Some(good2.as_str()),
        "kept: {after:#?}"
    );
    assert_eq!(after.winner_source, Some(WinnerSource::Human));
    w.arena.analyze(&view.id, true).await.unwrap();
    let forced = finished(&w.arena, &view.id).await;
    assert_eq!(forced.winner_contestant_id.as_deref(), Some(good.as_str()));
    assert_eq!(forced.winner_source, Some(WinnerSource::Judge));

    // Cross-examination: its own row, its verdict, cross-exam.md, events.
    let xid = w
        .arena
        .cross_examine(
            &view.id,
            coderig::arena::AgentRef {
                identity: "judge".into(),
                model: "examiner".into(),
            },
        )
        .await
        .unwrap();
    let mut exam = None;
    for _ in 0..200 {
        let v = w.arena.battle(&view.id).await.unwrap();
        if let Some(x) = v.cross_exams.iter().find(|x| {
            x.id == xid && matches!(x.status, CrossExamStatus::Done | CrossExamStatus::Error)
        }) {
            exam = Some(x.clone());
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let exam = exam.expect("the cross-examination finished");
    assert_eq!(exam.status, CrossExamStatus::Done, "{exam:?}");
    assert_eq!(exam.verdict.as_deref(), Some("fixer/good"));
    let text =
        std::fs::read_to_string(PathBuf::from(&view.results_dir).join("cross-exam.md")).unwrap();
    assert!(text.contains("VERDICT: fixer/good"), "{text}");
    let events = stored_events(&w.store, &view.id).await;
    assert!(
        events
            .iter()
            .filter(|e| e["cross_exam_id"] == json!(xid))
            .count()
            >= 2,
        "requested and finished"
    );
    // A cross-examination needs a known examiner.
    let bad = w
        .arena
        .cross_examine(
            &view.id,
            coderig::arena::AgentRef {
                identity: "nobody".into(),
                model: "m".into(),
            },
        )
        .await
        .unwrap_err();
    assert_eq!(bad.kind(), ErrorKind::InvalidInput, "{bad}");
    w.arena.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hang_a_crash_and_no_change_are_recorded_and_the_battle_completes() {
    let w = world().await;
    let view = w
        .arena
        .start_battle(spec(
            &w.project,
            &["fixer/hang", "fixer/crash", "fixer/idle", "fixer/good"],
            "judge/j",
            true,
        ))
        .await
        .unwrap();
    let view = finished(&w.arena, &view.id).await;
    assert_eq!(view.status, BattleStatus::Completed, "{view:#?}");
    let hang = by_model(&view, "hang");
    assert_eq!(hang.status, ContestantStatus::Error);
    assert!(
        hang.error.as_deref().unwrap().contains("timed out"),
        "{hang:?}"
    );
    let crash = by_model(&view, "crash");
    assert_eq!(crash.status, ContestantStatus::Error);
    assert!(
        crash.error.as_deref().unwrap().contains("model exploded"),
        "{crash:?}"
    );
    let idle = by_model(&view, "idle");
    assert_eq!(idle.status, ContestantStatus::Done);
    assert_eq!(idle.patch_bytes, Some(0));
    assert_eq!(idle.tier, EvidenceTier::None);
    assert!(idle
        .evidence
        .as_ref()
        .unwrap()
        .error
        .as_deref()
        .unwrap()
        .contains("no change"));
    let good = by_model(&view, "good");
    // Every contestant's result is archived, whatever its outcome.
    for c in &view.contestants {
        let dir = PathBuf::from(&view.results_dir).join(&c.dir);
        assert!(dir.join("result.md").is_file(), "{}", c.dir);
        assert!(dir.join("diff.patch").is_file(), "{}", c.dir);
    }
    // Only one contestant produced a result, and the oracle proved it: it
    // wins by the oracle, without the judge.
    assert_eq!(
        view.winner_contestant_id.as_deref(),
        Some(good.id.as_str()),
        "{view:#?}"
    );
    assert_eq!(view.winner_source, Some(WinnerSource::Oracle));
    assert_eq!(
        view.reason.as_deref(),
        Some("fixer/good is the only contestant that produced a result, with full evidence")
    );
    assert!(coderig_worktrees(&w.project).is_empty());
    w.arena.shutdown(Duration::from_secs(5)).await;
}

/// Records each turn's `(model, prompt)`, then lets `inner` play it.
struct Recording {
    inner: Arc<dyn coderig::agent::Agent>,
    prompts: Arc<std::sync::Mutex<Vec<(String, String)>>>,
}

#[async_trait::async_trait]
impl coderig::agent::Agent for Recording {
    async fn run(
        &self,
        turn: coderig::agent::Turn,
        events: tokio::sync::mpsc::Sender<coderig::agent::AgentEvent>,
        cancel: tokio_util::sync::CancellationToken,
    ) -> Result<coderig::agent::TurnOutcome, coderig::agent::AgentError> {
        self.prompts
            .lock()
            .unwrap()
            .push((turn.model.clone().unwrap_or_default(), turn.prompt.clone()));
        self.inner.run(turn, events, cancel).await
    }

    async fn models(&self) -> Result<Vec<String>, coderig::agent::AgentError> {
        self.inner.models().await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_contestant_gets_its_own_instruction_and_a_lone_proven_fix_wins_without_the_judge() {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let project = make_project(&root);
    let data = root.join("data");
    let store: Arc<dyn Store> = Arc::new(coderig::store::SqliteStore::open(&data).await.unwrap());
    let mut registry = Registry::from_toml_str(&agents_toml()).unwrap();
    let prompts = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut fixer = registry.get("fixer").unwrap().clone();
    fixer.agent = Arc::new(Recording {
        inner: fixer.agent.clone(),
        prompts: prompts.clone(),
    });
    registry.insert("fixer", fixer);
    let arena = Arena::start(
        store.clone(),
        registry,
        EventBus::start(store.clone()),
        config(&data, &root),
    )
    .await
    .unwrap();
    let mut spec = spec(
        &project,
        &["fixer/good", "fixer/idle"],
        "judge/broken",
        true,
    )
    .to_json();
    spec["contestants"][0]["instruction"] = json!("Keep the diff small.\nNo new dependencies.");
    let spec = BattleSpec::from_json(&spec).unwrap();
    let view = arena.start_battle(spec).await.unwrap();
    let view = finished(&arena, &view.id).await;
    assert_eq!(view.status, BattleStatus::Completed, "{view:#?}");

    // The prompt + a blank line + the instruction, for that contestant only.
    let mut prompts = prompts.lock().unwrap().clone();
    prompts.sort();
    assert_eq!(
        prompts,
        [
            (
                "good".to_owned(),
                "Fix add in calc.sh so that tests/test_add.sh passes\n\n\
                 Keep the diff small.\nNo new dependencies."
                    .to_owned()
            ),
            (
                "idle".to_owned(),
                "Fix add in calc.sh so that tests/test_add.sh passes".to_owned()
            ),
        ]
    );
    // The view (from the stored rows), the spec, the manifest and result.md.
    let good = by_model(&view, "good");
    let idle = by_model(&view, "idle");
    assert_eq!(
        good.instruction.as_deref(),
        Some("Keep the diff small.\nNo new dependencies.")
    );
    assert_eq!(idle.instruction, None);
    assert_eq!(
        view.spec["contestants"][0]["instruction"],
        "Keep the diff small.\nNo new dependencies."
    );
    assert!(view.spec["contestants"][1].get("instruction").is_none());
    let dir = PathBuf::from(&view.results_dir);
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    let instructions: Vec<&Value> = manifest["contestants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["instruction"])
        .collect();
    assert_eq!(
        instructions,
        [
            &json!("Keep the diff small.\nNo new dependencies."),
            &json!(null)
        ]
    );
    let result = std::fs::read_to_string(dir.join(&good.dir).join("result.md")).unwrap();
    assert!(result.contains("## Instruction"), "{result}");

    // idle changed nothing; good's patch passes repro and suite: it wins
    // by the oracle, and the judge (which fails whenever it is asked) was
    // never asked.
    assert_eq!(idle.patch_bytes, Some(0));
    assert_eq!(good.tier, EvidenceTier::Full);
    assert_eq!(view.winner_contestant_id.as_deref(), Some(good.id.as_str()));
    assert_eq!(view.winner_source, Some(WinnerSource::Oracle));
    assert_eq!(view.error, None, "{view:#?}");
    assert_eq!(manifest["winner"]["source"], "oracle");
    assert_eq!(manifest["analysis"]["wins"], json!({}));
    arena.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failing_judge_completes_the_battle_with_its_error_and_an_event() {
    let w = world().await;
    let view = w
        .arena
        .start_battle(spec(
            &w.project,
            &["fixer/good", "fixer/good2"],
            "judge/broken",
            true,
        ))
        .await
        .unwrap();
    let view = finished(&w.arena, &view.id).await;
    assert_eq!(view.status, BattleStatus::Completed);
    assert_eq!(view.winner_contestant_id, None);
    assert!(
        view.error.as_deref().unwrap().contains("judge down"),
        "{view:#?}"
    );
    let events = stored_events(&w.store, &view.id).await;
    let last = events.last().unwrap();
    assert_eq!(last["status"], "completed");
    assert!(last["error"].as_str().unwrap().contains("judge down"));
    assert!(view.analysis_ready);
    w.arena.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_worker_that_dies_mid_battle_is_rescued_and_every_contestant_finishes_once() {
    let w = world().await;
    let view = w
        .arena
        .start_battle(spec(
            &w.project,
            &["fixer/slow", "fixer/good"],
            "judge/j",
            true,
        ))
        .await
        .unwrap();
    // Let the slow contestant start, then the worker "dies": its tasks stay
    // claimed in the store until their leases expire.
    for _ in 0..100 {
        let v = w.arena.battle(&view.id).await.unwrap();
        if v.contestants
            .iter()
            .any(|c| c.model == "slow" && c.status == ContestantStatus::Running)
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    w.arena.shutdown(Duration::from_secs(5)).await;
    let second = start_arena(&w.store, &w.data, &w.root).await;
    let done = finished(&second, &view.id).await;
    assert_eq!(done.status, BattleStatus::Completed, "{done:#?}");
    assert!(
        done.contestants
            .iter()
            .all(|c| c.status == ContestantStatus::Done),
        "{done:#?}"
    );
    let events = stored_events(&w.store, &view.id).await;
    for c in &done.contestants {
        let settled = events
            .iter()
            .filter(|e| e["contestant_id"] == json!(c.id) && e["status"] == "done")
            .count();
        assert_eq!(settled, 1, "{} finished exactly once", c.model);
    }
    assert!(
        coderig_worktrees(&w.project).is_empty(),
        "{:?}",
        coderig_worktrees(&w.project)
    );
    assert_eq!(coderig_branches(&w.project), "");
    second.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_servers_share_the_work_and_the_local_lane_never_runs_two() {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let project = make_project(&root);
    let harness = match common::postgres("arena_runner").await {
        Some(h) => h,
        None => common::sqlite().await,
    };
    // scripts/test.sh's PostgreSQL stage checks this line.
    println!("arena two-server test on {}", harness.store.backend());
    let other = harness.another().await;
    let a = start_arena(&harness.store, &root.join("data-a"), &root).await;
    let b = start_arena(&other, &root.join("data-b"), &root).await;
    let mut ids = Vec::new();
    for _ in 0..2 {
        let v = a
            .start_battle(spec(
                &project,
                &["gpu/a", "gpu/b", "gpu/c"],
                "judge/j",
                false,
            ))
            .await
            .unwrap();
        ids.push(v.id);
    }
    let mut intervals = Vec::new();
    for id in &ids {
        let v = finished(&b, id).await;
        assert_eq!(v.status, BattleStatus::Completed, "{v:#?}");
        for c in &v.contestants {
            assert_eq!(c.status, ContestantStatus::Done, "{c:?}");
            intervals.push((c.started_at_ms.unwrap(), c.ended_at_ms.unwrap()));
        }
    }
    intervals.sort();
    for pair in intervals.windows(2) {
        assert!(
            pair[0].1 <= pair[1].0,
            "two local contestants overlapped: {pair:?}"
        );
    }
    let events = harness.store.events_after(0, 10_000).await.unwrap();
    for id in &ids {
        let runs = events
            .iter()
            .filter(|e| {
                &e.work_id == id
                    && e.payload["status"] == "running"
                    && e.kind.as_str() == "contestant_updated"
            })
            .count();
        assert_eq!(runs, 3, "each contestant ran once");
    }
    a.shutdown(Duration::from_secs(5)).await;
    b.shutdown(Duration::from_secs(5)).await;
    harness.finish().await;
}

// The rest of this test binary, by subject.
mod results;
mod sandbox;
mod stops;
