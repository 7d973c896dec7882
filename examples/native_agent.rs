//! coderig's own coding agent on a model server: one turn that reads a
//! buggy file, fixes it with an edit the model copied sloppily (wrong
//! indentation), runs the test under the sandbox and finishes.
//!
//! The model here is the project's scripted model server playing a tool
//! script, so the example runs anywhere; point `NativeConfig::new` at
//! llama.cpp (`http://127.0.0.1:8080/v1`), vLLM or Ollama for a real one.
//!
//! `cargo run -p coderig --features http --example native_agent`

use coderig::agent::native::{Api, NativeAgent, NativeConfig};
use coderig::agent::{Access, Agent, AgentEvent, Turn};
use coderig_scripted_model::script::Script;
use coderig_scripted_model::ScriptedModelServer;
use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let work = tempfile::tempdir()?;
    std::fs::write(
        work.path().join("calc.py"),
        "def add(a, b):\n    return a - b\n",
    )?;
    std::fs::write(
        work.path().join("test_calc.py"),
        "from calc import add\nassert add(2, 3) == 5, add(2, 3)\nprint('ok')\n",
    )?;

    // What a model would do; the edit's `old` has two spaces where the
    // file has four, and the edit engine still places it with certainty.
    let server = ScriptedModelServer::start()?;
    let script = json!({"steps": [
        {"calls": [{"name": "read_file", "arguments": {"path": "calc.py"}}]},
        {"say": "The subtraction is the bug.", "calls": [{"name": "edit_file", "arguments":
            {"path": "calc.py", "old": "def add(a, b):\n  return a - b", "new": "def add(a, b):\n  return a + b"}}]},
        {"calls": [{"name": "run", "arguments": {"command": "python3 test_calc.py"}}]},
        {"calls": [{"name": "finish", "arguments": {"summary": "add() adds now; test_calc.py passes."}}]}
    ]});
    server.add_script("fixer", Script::from_json(&script.to_string())?);

    let agent = NativeAgent::new(NativeConfig::new(
        format!("{}/v1", server.base_url()),
        Api::Chat,
    ))?;
    let turn = Turn::new("Make test_calc.py pass.")
        .model("fixer")
        .workdir(work.path())
        .access(Access::Edit);
    let (tx, mut rx) = mpsc::channel(256);
    let printer = tokio::spawn(async move {
        while let Some(event) = rx.recv().await {
            match event {
                AgentEvent::ToolCall { name, input, .. } => println!("→ {name} {input}"),
                AgentEvent::ToolResult { ok, output, .. } => {
                    let first = output.lines().next().unwrap_or_default();
                    println!("  {} {first}", if ok { "ok" } else { "refused" });
                }
                _ => {}
            }
        }
    });
    let outcome = agent.run(turn, tx, CancellationToken::new()).await?;
    printer.await?;
    println!(
        "stop_reason={} requests={} tool_calls={} final_text={:?}",
        outcome.stop_reason.as_deref().unwrap_or("?"),
        outcome.requests.unwrap_or(0),
        outcome.tool_calls.unwrap_or(0),
        outcome.final_text
    );
    let fixed = std::fs::read_to_string(work.path().join("calc.py"))?;
    assert_eq!(
        fixed, "def add(a, b):\n    return a + b\n",
        "the file keeps its own indentation"
    );
    assert_eq!(outcome.stop_reason.as_deref(), Some("finished"));
    Ok(())
}
