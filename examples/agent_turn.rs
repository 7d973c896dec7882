//! One agent turn through the registry: a scripted agent (no model, no
//! network) fixes a file in a scratch work dir; every normalized event is
//! printed as it streams, then the outcome. A second turn shows a failure
//! with what to do about it (its `ErrorClass`).
//!
//! The same code runs any agent of a `coderig.toml`
//! (`Registry::load("coderig.toml")`): CLI agents (claude, codex, qwen,
//! opencode) and OpenAI-compatible servers stream the same events.
//!
//! Run: `cargo run -p coderig --features runtime --example agent_turn`

use coderig::agent::{Access, Registry, Turn};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = Registry::from_toml_str(
        r#"
[agents.fixer]
kind = "scripted"
script = [
  { reasoning = "the test expects 2" },
  { text = "Fixing add()." },
  { write = { path = "calc.py", content = "def add(a, b):\n    return a + b\n" } },
  { usage = { input = 120, output = 30 } },
]
[agents.quota]
kind = "scripted"
script = [ { fail = { message = "You exceeded your current quota, please check your plan and billing details." } } ]
"#,
    )?;
    let work = tempfile::tempdir()?;
    std::fs::write(
        work.path().join("calc.py"),
        "def add(a, b):\n    return a - b\n",
    )?;

    let turn = Turn::new("make the test pass")
        .workdir(work.path())
        .access(Access::Edit);
    let mut handle = registry.start_turn("fixer", turn)?;
    while let Some(event) = handle.next_event().await {
        println!("event   {}", serde_json::to_string(&event)?);
    }
    let outcome = handle.wait().await?;
    println!("outcome {}", serde_json::to_string(&outcome)?);
    assert_eq!(
        std::fs::read_to_string(work.path().join("calc.py"))?,
        "def add(a, b):\n    return a + b\n"
    );

    let mut failed = registry.start_turn("quota", Turn::new("anything"))?;
    let error = failed.wait().await.expect_err("the quota script fails");
    println!(
        "failed  {} ({}): {}",
        error.kind, error.class, error.message
    );
    assert_eq!(
        error.class.as_str(),
        "stop",
        "no other model of the account will work either"
    );
    Ok(())
}
