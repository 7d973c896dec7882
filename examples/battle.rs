//! A coding battle, start to finish, on a throwaway git repository: two
//! scripted contestants (one fixes the bug, one breaks it differently), a
//! scripted judge, and an oracle that runs the project's failing test on a
//! fresh checkout of each contestant's patch. The oracle decides: only the
//! right fix passes it. Nothing here needs a model or the network.
//!
//! The same code drives real agents: swap the TOML for your `coderig.toml`
//! (`Registry::load`), with `claude`, `codex`, a local OpenAI-compatible
//! server… as contestants and judge.
//!
//! Run: `cargo run -p coderig --features runtime,git,sqlite --example battle`

use coderig::agent::Registry;
use coderig::arena::runner::{Arena, ArenaConfig};
use coderig::arena::BattleSpec;
use coderig::bus::EventBus;
use serde_json::json;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

/// The agents: `fixer` plays one script per model name, `judge` names a
/// winner (asked only when the oracle's evidence ties).
const AGENTS: &str = r#"
[agents.fixer]
kind = "scripted"
scripts.right = [
  { write = { path = "calc.sh", content = "add() { echo $(( $1 + $2 )); }\n" } },
  { text = "add() subtracted; it adds now." },
]
scripts.wrong = [
  { write = { path = "calc.sh", content = "add() { echo 5; }\n" } },
  { text = "add 2 3 is 5 now." },
]
[agents.judge]
kind = "scripted"
script = [ { text = "fixer/right is the general fix.\nWINNER: fixer/right" } ]
"#;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A project with a bug and two tests: the repro fails on it, the suite
    // catches a fix that only fits the repro.
    let tmp = tempfile::tempdir()?;
    let root = std::fs::canonicalize(tmp.path())?;
    let project = root.join("calc");
    std::fs::create_dir_all(project.join("tests"))?;
    std::fs::write(project.join("calc.sh"), "add() { echo $(( $1 - $2 )); }\n")?;
    std::fs::write(
        project.join("tests/test_add.sh"),
        ". ./calc.sh\n[ \"$(add 2 3)\" = 5 ] || { echo 'add 2 3 is not 5'; exit 1; }\n",
    )?;
    std::fs::write(
        project.join("tests/test_add_more.sh"),
        ". ./calc.sh\n[ \"$(add 1 1)\" = 2 ] || { echo 'add 1 1 is not 2'; exit 1; }\n",
    )?;
    git(&project, &["init", "-q", "-b", "main"])?;
    git(&project, &["add", "-A"])?;
    git(&project, &["commit", "-q", "-m", "add() subtracts"])?;

    // The runtime: a store (SQLite in the data dir), its event bus, the
    // agents, and the arena with the project's folder as its only root.
    let data_dir = root.join("data");
    let store = coderig::store::open(None, &data_dir).await?;
    let bus = EventBus::start(Arc::clone(&store));
    let registry = Registry::from_toml_str(AGENTS)?;
    let mut config = ArenaConfig::new(&data_dir);
    config.project_roots = vec![root.clone()];
    let arena = Arena::start(store, registry, Arc::clone(&bus), config).await?;

    // The spec is the JSON every face takes (HTTP, CLI, Python, Node).
    let spec = BattleSpec::from_json(&json!({
        "battle_type": "coding",
        "prompt": "add() in calc.sh is wrong: make tests/test_add.sh pass",
        "project": project.display().to_string(),
        "contestants": [
            {"identity": "fixer", "model": "right"},
            {"identity": "fixer", "model": "wrong"},
        ],
        "judge": {"identity": "judge", "model": "any"},
        "oracle": {
            "repro": "sh tests/test_add.sh",
            "suite": "for t in tests/*.sh; do sh \"$t\" || exit 1; done",
            "timeout": "30s",
        },
        "contestant_timeout": "60s",
    }))?;
    let started = arena.start_battle(spec).await?;
    println!("battle {} {}", started.id, started.status);

    let view = arena
        .wait(&started.id, Some(Duration::from_secs(120)))
        .await?;
    assert!(view.is_finished(), "the battle did not finish in time");
    for c in &view.contestants {
        let exit = |e: Option<&coderig::arena::CommandEvidence>| {
            e.and_then(|e| e.exit_code)
                .map_or("-".to_string(), |c| c.to_string())
        };
        let evidence = c.evidence.as_ref();
        println!(
            "  {}/{}: {}, evidence {} (repro exit {}, suite exit {})",
            c.identity,
            c.model,
            c.status,
            c.tier,
            exit(evidence.and_then(|e| e.repro.as_ref())),
            exit(evidence.and_then(|e| e.suite.as_ref())),
        );
    }
    let winner = view
        .winner_contestant_id
        .as_deref()
        .and_then(|id| view.contestant(id))
        .ok_or("no winner")?;
    println!(
        "winner: {}/{} (by the {})",
        winner.identity,
        winner.model,
        view.winner_source
            .map(|s| s.to_string())
            .unwrap_or_default()
    );
    if let Some(reason) = &view.reason {
        println!("reason: {reason}");
    }
    println!("results: {}", view.results_dir);
    for file in ["manifest.json", "analysis.md"] {
        assert!(Path::new(&view.results_dir).join(file).is_file());
    }
    assert_eq!(winner.model, "right", "only the real fix passes the suite");

    // The user's tree is untouched until they apply the winner's patch.
    let applied = arena.apply(&view.id, None).await?;
    println!(
        "applied {} bytes to {}",
        applied.patch_bytes, applied.project
    );
    assert_eq!(
        std::fs::read_to_string(project.join("calc.sh"))?,
        "add() { echo $(( $1 + $2 )); }\n"
    );

    arena.shutdown(Duration::from_secs(5)).await;
    bus.shutdown();
    Ok(())
}

/// Runs git in `dir` with a fixed identity (the example must not depend on
/// the user's git config).
fn git(dir: &Path, args: &[&str]) -> Result<(), Box<dyn std::error::Error>> {
    let status = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "example")
        .env("GIT_AUTHOR_EMAIL", "example@example.com")
        .env("GIT_COMMITTER_NAME", "example")
        .env("GIT_COMMITTER_EMAIL", "example@example.com")
        .status()?;
    if !status.success() {
        return Err(format!("git {args:?} failed").into());
    }
    Ok(())
}
