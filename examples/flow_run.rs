//! A flow run, start to finish, on an embedded SQLite store: a scripted
//! agent drafts a change, a command step counts its words, a native Rust
//! closure judges the count, and a switch routes on the verdict. The run's
//! every state change lands in the store with its event; the report is
//! rendered from the results at the end.
//!
//! The same code drives real agents: swap the TOML for your `coderig.toml`
//! (`Registry::load`) and name `claude`, `codex`, a local OpenAI-compatible
//! server… in the agent steps.
//!
//! Run: `cargo run -p coderig --features runtime,sqlite --example flow_run`

use coderig::agent::Registry;
use coderig::bus::EventBus;
use coderig::flow::engine::{code_fn, Engine, EngineConfig, NewRun};
use coderig::flow::FlowSpec;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

const AGENTS: &str = r#"
[agents.writer]
kind = "scripted"
script = [ { text = "Use leased claims so a dead worker's task comes back." } ]
"#;

const FLOW: &str = r#"
name: draft-and-check
steps:
  - id: draft
    kind: agent
    agent: writer
    prompt: "Explain in one sentence how {{ input.topic }} survives a crash."
  - id: word-count
    kind: command
    deps: [draft]
    shell: 'printf %s "$DRAFT" | wc -w'
    env: { DRAFT: "{{ results.draft }}" }
  - id: judge
    kind: code
    deps: [word-count]
  - id: route
    kind: switch
    deps: [judge]
    cases:
      - { label: short, condition: 'results["judge"].short', steps: [ship] }
    default: [trim]
  - { id: ship, kind: command, deps: [route], argv: ["echo", "shipped"] }
  - { id: trim, kind: command, deps: [route], argv: ["echo", "too long"] }
report: |
  Draft: {{ results.draft }}
  Words: {{ results["word-count"] | trim }}; route: {{ results.route }}
"#;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tmp = tempfile::tempdir()?;
    let store = coderig::store::open(None, tmp.path()).await?;
    let bus = EventBus::start(Arc::clone(&store));
    let engine = Engine::start(
        store,
        Registry::from_toml_str(AGENTS)?,
        bus,
        EngineConfig::new(tmp.path()),
    )
    .await?;

    // A code step is a closure over the context: `results` holds the
    // results of its dependencies.
    let judge = code_fn(|ctx: Value| async move {
        let words: u64 = ctx["results"]["word-count"]
            .as_str()
            .unwrap_or("")
            .trim()
            .parse()
            .unwrap_or(u64::MAX);
        Ok(json!({"words": words, "short": words <= 20}))
    });
    let spec = FlowSpec::parse(FLOW)?;
    let run_id = engine
        .start_run(NewRun::spec(spec, json!({"topic": "a job queue"})).code("judge", judge))
        .await?;
    let run = engine.wait(&run_id, Some(Duration::from_secs(60))).await?;

    for step in &run.steps {
        let skip = step
            .skip_reason
            .map(|r| format!(" ({r})"))
            .unwrap_or_default();
        println!("{:<11} {:<9}{skip}", step.id, step.status.as_str());
    }
    println!("\n{}", run.report.clone().unwrap_or_default());
    assert_eq!(run.status.as_str(), "completed", "{:?}", run.error);
    assert_eq!(run.step("ship").map(|s| s.status.as_str()), Some("done"));
    assert_eq!(
        run.step("trim").map(|s| s.skip_reason.map(|r| r.as_str())),
        Some(Some("branch_not_taken"))
    );
    engine.shutdown(Duration::from_secs(5)).await;
    Ok(())
}
