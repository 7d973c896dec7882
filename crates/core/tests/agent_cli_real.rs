//! The CLI agents against the real, pinned CLIs (`scripts/install-agents.sh`
//! installs them; `CODERIG_AGENT_BIN` names its `.bin` dir) and a scripted
//! model server on loopback, every turn in coderig's sandbox (mode
//! `enforce`). Per preset: two write turns with `edit` access (a file tool,
//! the shell), two `read_only` turns asked for the same writes, a turn
//! whose provider fails, and a `read_only` and an `edit` turn asked to
//! write with the shell to an absolute path under the home directory,
//! outside the work dir (for opencode also at `read_only` with every
//! permission reopened by its config): the file never appears and the turn
//! reports who refused it.
//!
//! Without `CODERIG_AGENT_BIN` the test says it is SKIPPED and passes, unless
//! `CODERIG_REQUIRE_AGENTS=1`, which makes it fail instead (CI sets it).

#![cfg(unix)]

use coderig::agent::cli::OPENCODE_PERMISSIONS;
use coderig::agent::AgentError;
use coderig::agent::{
    Access, Agent, AgentErrorKind, AgentEvent, CliAgent, CliConfig, CliPreset, Turn, TurnOutcome,
};
use coderig_scripted_model::ScriptedModelServer;
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const MODEL: &str = "scripted-model";
const WRITE: &str = "Create hello.txt containing hi";
const SHELL: &str = "Create hello.txt containing hi using the shell";

fn agent_bin() -> Option<PathBuf> {
    match std::env::var("CODERIG_AGENT_BIN") {
        Ok(dir) if !dir.is_empty() => Some(PathBuf::from(dir)),
        _ => {
            if std::env::var("CODERIG_REQUIRE_AGENTS").as_deref() == Ok("1") {
                panic!("CODERIG_REQUIRE_AGENTS=1 but CODERIG_AGENT_BIN is not set");
            }
            // Straight to fd 2: libtest captures only print!/eprint!.
            let _ = writeln!(
                std::io::stderr(),
                "real CLI agents: SKIPPED (set CODERIG_AGENT_BIN, see scripts/install-agents.sh)"
            );
            None
        }
    }
}

/// A fresh HOME and a fresh one-commit git repo for one turn.
struct Sandbox {
    _root: tempfile::TempDir,
    home: PathBuf,
    work: PathBuf,
}

fn sandbox() -> Sandbox {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    let work = root.path().join("work");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(&work)
            .env("HOME", &home)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    git(&["init", "-q"]);
    git(&[
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "init",
    ]);
    Sandbox {
        _root: root,
        home,
        work,
    }
}

/// The config isolating `preset` in `sb` and pointing it at `base` (the
/// caller's job, not the preset's: the preset adds only access and format).
fn config(preset: CliPreset, bin: &Path, sb: &Sandbox, base: &str) -> CliConfig {
    let h = |p: &str| sb.home.join(p).display().to_string();
    let mut c = CliConfig::new(preset);
    c.command = Some(bin.join(preset.binary().unwrap()));
    c.timeout = Duration::from_secs(240);
    c.idle_timeout = Duration::from_secs(120);
    let mut env: BTreeMap<&str, String> = BTreeMap::new();
    env.insert("HOME", h(""));
    env.insert("XDG_CONFIG_HOME", h(".config"));
    env.insert("XDG_DATA_HOME", h(".local/share"));
    env.insert("XDG_CACHE_HOME", h(".cache"));
    env.insert("XDG_STATE_HOME", h(".local/state"));
    match preset {
        CliPreset::Claude => {
            env.insert("CLAUDE_CONFIG_DIR", h(".claude"));
            env.insert("ANTHROPIC_BASE_URL", base.to_string());
            env.insert("ANTHROPIC_API_KEY", "sk-ant-dummy".into());
            for v in [
                "DISABLE_AUTOUPDATER",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
                "DISABLE_TELEMETRY",
                "DISABLE_ERROR_REPORTING",
            ] {
                env.insert(v, "1".into());
            }
            env.insert("CLAUDE_CODE_MAX_RETRIES", "0".into());
        }
        CliPreset::Qwen => {
            std::fs::create_dir_all(sb.home.join(".qwen")).unwrap();
            std::fs::write(
                sb.home.join(".qwen/settings.json"),
                r#"{"general":{"enableAutoUpdate":false},"privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false},"security":{"auth":{"selectedType":"openai"}}}"#,
            )
            .unwrap();
            env.insert("OPENAI_API_KEY", "dummy".into());
            env.insert("OPENAI_BASE_URL", format!("{base}/v1"));
        }
        CliPreset::Codex => {
            std::fs::create_dir_all(sb.home.join(".codex")).unwrap();
            env.insert("CODEX_HOME", h(".codex"));
            env.insert("LOCAL_API_KEY", "dummy".into());
            let catalog = sb.home.join("catalog.json");
            std::fs::write(&catalog, codex_catalog()).unwrap();
            c.extra_args = [
                "--ephemeral".to_string(),
                "--strict-config".into(),
                "-c".into(),
                "model_provider=local".into(),
                "-c".into(),
                format!("model_catalog_json={}", catalog.display()),
                "-c".into(),
                "model_providers.local.name=local".into(),
                "-c".into(),
                format!("model_providers.local.base_url={base}/v1"),
                "-c".into(),
                "model_providers.local.wire_api=responses".into(),
                "-c".into(),
                "model_providers.local.env_key=LOCAL_API_KEY".into(),
                "-c".into(),
                "model_providers.local.request_max_retries=0".into(),
                "-c".into(),
                "model_providers.local.stream_max_retries=0".into(),
                "-c".into(),
                "model_providers.local.stream_idle_timeout_ms=20000".into(),
                "-c".into(),
                "check_for_update_on_startup=false".into(),
                "-c".into(),
                "analytics.enabled=false".into(),
            ]
            .to_vec();
        }
        CliPreset::Opencode => {
            // No `permission` block: the preset's OPENCODE_PERMISSION decides.
            let models: String = [MODEL, "scripted-model+status_400"]
                .iter()
                .map(|m| format!(r#""{m}":{{"name":"{m}","tool_call":true}}"#))
                .collect::<Vec<_>>()
                .join(",");
            // The base URL comes from the environment (opencode's `{env:…}`),
            // where the sandbox finds the model server's port.
            let json = format!(
                r#"{{"$schema":"https://opencode.ai/config.json",
 "provider":{{"local":{{"npm":"@ai-sdk/openai-compatible","name":"Local scripted",
   "options":{{"baseURL":"{{env:LOCAL_BASE_URL}}","apiKey":"dummy"}},"models":{{{models}}}}}}},
 "model":"local/{MODEL}","small_model":"local/{MODEL}","autoupdate":false,"share":"disabled"}}"#
            );
            std::fs::write(sb.home.join("opencode.json"), json).unwrap();
            env.insert("OPENCODE_CONFIG", h("opencode.json"));
            env.insert("LOCAL_BASE_URL", format!("{base}/v1"));
            for v in [
                "OPENCODE_DISABLE_AUTOUPDATE",
                "OPENCODE_DISABLE_MODELS_FETCH",
                "OPENCODE_DISABLE_LSP_DOWNLOAD",
                "OPENCODE_DISABLE_SHARE",
                "OPENCODE_DISABLE_DEFAULT_PLUGINS",
            ] {
                env.insert(v, "1".into());
            }
            // No registry: opencode must not need the network.
            env.insert("NPM_CONFIG_REGISTRY", "http://127.0.0.1:9/".into());
            c.extra_args = vec!["--pure".into()];
        }
        CliPreset::Custom => unreachable!("presets only"),
    }
    c.env = env.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    c
}

fn codex_catalog() -> String {
    let model = |slug: &str| {
        format!(
            r#"{{"slug":"{slug}","display_name":"{slug}","description":"x",
 "supports_reasoning_summaries":false,"support_verbosity":false,"default_verbosity":null,
 "apply_patch_tool_type":"freeform","input_modalities":["text"],
 "truncation_policy":{{"mode":"tokens","limit":10000}},"supports_parallel_tool_calls":false,
 "context_window":128000,"default_reasoning_level":"medium",
 "supported_reasoning_levels":[{{"effort":"medium","description":"medium"}}],
 "shell_type":"shell_command","visibility":"list","minimal_client_version":"0.0.1",
 "supported_in_api":true,"upgrade":null,"priority":0,
 "base_instructions":"You are a scripted test agent.","experimental_supported_tools":[]}}"#
        )
    };
    format!(
        r#"{{"models":[{},{}]}}"#,
        model(MODEL),
        model("scripted-model+status_400")
    )
}

fn model_for(preset: CliPreset, model: &str) -> String {
    match preset {
        CliPreset::Opencode => format!("local/{model}"),
        _ => model.to_string(),
    }
}

async fn run(agent: &CliAgent, turn: Turn) -> (Result<TurnOutcome, AgentError>, Vec<AgentEvent>) {
    let (tx, mut rx) = mpsc::channel(1024);
    let result = agent.run(turn, tx, CancellationToken::new()).await;
    let mut events = Vec::new();
    while let Ok(e) = rx.try_recv() {
        events.push(e);
    }
    (result, events)
}

fn hello(sb: &Sandbox) -> Option<String> {
    std::fs::read_to_string(sb.work.join("hello.txt")).ok()
}

/// The write turn: the file is written, and the events tell the story.
async fn write_turn(
    preset: CliPreset,
    bin: &Path,
    base: &str,
    prompt: &str,
) -> Result<String, String> {
    let sb = sandbox();
    let agent = CliAgent::new(config(preset, bin, &sb, base));
    let turn = Turn::new(prompt)
        .model(model_for(preset, MODEL))
        .workdir(&sb.work)
        .access(Access::Edit);
    let (result, events) = run(&agent, turn).await;
    let outcome = result.map_err(|e| format!("{e:?}"))?;
    let kinds: Vec<&str> = events.iter().map(|e| e.type_name()).collect();
    for want in ["session_started", "tool_call", "usage", "finished"] {
        if !kinds.contains(&want) {
            return Err(format!("no {want} event in {kinds:?}"));
        }
    }
    if !events
        .iter()
        .any(|e| matches!(e, AgentEvent::ToolResult { ok: true, .. }))
    {
        return Err(format!("no successful tool result in {events:?}"));
    }
    let sessions = kinds.iter().filter(|k| **k == "session_started").count();
    if sessions != 1 {
        return Err(format!("{sessions} session_started events"));
    }
    if outcome.final_text.trim() != "done" {
        return Err(format!("final text {:?}", outcome.final_text));
    }
    if outcome.usage.output == 0 {
        return Err(format!("no output tokens counted: {:?}", outcome.usage));
    }
    // The write happened inside the sandbox: confined, the work dir writable.
    match &outcome.sandbox {
        Some(r) if r.confined && r.writable.contains(&sb.work) => {}
        other => return Err(format!("sandbox {other:?}")),
    }
    let tools: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolCall { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    match hello(&sb) {
        Some(t) if t.trim() == "hi" => Ok(format!("tools {tools:?}, usage {:?}", outcome.usage)),
        other => Err(format!("hello.txt is {other:?}")),
    }
}

/// A read-only turn asked to write: no file appears (or the preset refuses).
async fn read_only_turn(
    preset: CliPreset,
    bin: &Path,
    base: &str,
    prompt: &str,
) -> Result<String, String> {
    let sb = sandbox();
    let agent = CliAgent::new(config(preset, bin, &sb, base));
    let turn = Turn::new(prompt)
        .model(model_for(preset, MODEL))
        .workdir(&sb.work)
        .access(Access::ReadOnly);
    let (result, _) = run(&agent, turn).await;
    if let Some(t) = hello(&sb) {
        return Err(format!("read_only wrote hello.txt ({t:?})"));
    }
    match result {
        Ok(o) if o.final_text.trim() == "done" => Ok("no file".into()),
        Ok(o) => Err(format!("final text {:?}", o.final_text)),
        Err(e) if e.kind == AgentErrorKind::Unavailable => Ok("refused".into()),
        Err(e) => Err(format!("{e:?}")),
    }
}

/// The provider answers 400: the turn is a classified error, not a success.
async fn error_turn(preset: CliPreset, bin: &Path, base: &str) -> Result<String, String> {
    let sb = sandbox();
    let agent = CliAgent::new(config(preset, bin, &sb, base));
    let turn = Turn::new(WRITE)
        .model(model_for(preset, "scripted-model+status_400"))
        .workdir(&sb.work)
        .access(Access::Edit);
    let (result, _) = run(&agent, turn).await;
    match result {
        Ok(o) => Err(format!("a failing provider gave an outcome: {o:?}")),
        Err(e) if matches!(e.kind, AgentErrorKind::Provider | AgentErrorKind::Exit) => {
            if e.class == coderig::model::ErrorClass::Retry {
                return Err(format!("HTTP 400 classified as retryable: {e:?}"));
            }
            Ok(format!("{} / {}: {}", e.kind, e.class, e.message))
        }
        Err(e) => Err(format!("unexpected kind: {e:?}")),
    }
}

/// Who refuses a write outside the work dir, as observed with the pinned
/// CLIs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    /// The CLI offers the model no shell and no write tool (its own
    /// `read_only` flags), so no tool call happens.
    Cli,
    /// The shell command runs and the kernel refuses the write: its tool
    /// result says `Permission denied`.
    Kernel,
}

/// A turn asked to write, with the shell, to an absolute path under the
/// (isolated) home directory, outside the work dir: the file does not
/// appear, the turn reports the refusal, and its outcome records the
/// sandbox — writable state dirs and tmp (and the work dir at `edit`), the
/// model server's loopback port.
async fn outside_turn(
    preset: CliPreset,
    bin: &Path,
    base: &str,
    access: Access,
    open_permissions: bool,
) -> Result<String, String> {
    let sb = sandbox();
    let target = sb.home.join(format!("outside-{preset}.txt"));
    let mut c = config(preset, bin, &sb, base);
    if open_permissions {
        // The user's config opens every permission, read_only or not: the
        // kernel still refuses.
        c.env.insert(
            "OPENCODE_PERMISSION".into(),
            OPENCODE_PERMISSIONS[2].1.to_string(),
        );
    }
    let agent = CliAgent::new(c);
    let prompt = format!("Create {} containing hi using the shell", target.display());
    let turn = Turn::new(prompt)
        .model(model_for(preset, MODEL))
        .workdir(&sb.work)
        .access(access);
    let (result, events) = run(&agent, turn).await;
    if target.exists() {
        return Err(format!("{} was written: {events:?}", target.display()));
    }
    let outcome = result.map_err(|e| format!("{e:?}"))?;
    if outcome.final_text.trim() != "done" {
        return Err(format!("final text {:?}", outcome.final_text));
    }
    let report = outcome.sandbox.ok_or("the outcome records no sandbox")?;
    let port = base.rsplit(':').next().unwrap_or_default();
    let writable_work = report.writable.iter().any(|w| w == &sb.work);
    if !report.confined
        || !report.network.starts_with("loopback:")
        || !report.network.split([':', ',']).any(|p| p == port)
        || writable_work != (access == Access::Edit)
        || report.writable.contains(&sb.home)
    {
        return Err(format!("sandbox {report:?}"));
    }
    let calls = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::ToolCall { .. }))
        .count();
    let denied = events.iter().find_map(|e| match e {
        AgentEvent::ToolResult { ok, output, .. } if output.contains("Permission denied") => {
            Some(*ok)
        }
        _ => None,
    });
    let want = match (preset, access) {
        (CliPreset::Codex, _) | (_, Access::Edit) => Refusal::Kernel,
        (CliPreset::Opencode, _) if open_permissions => Refusal::Kernel,
        _ => Refusal::Cli,
    };
    match (want, calls, denied) {
        (Refusal::Cli, 0, None) => Ok(format!(
            "no file; refused by the CLI (no shell at {access}); {}",
            report.summary()
        )),
        // opencode reports a command that ran and failed as a completed
        // tool call; the others as a failed one.
        (Refusal::Kernel, 1, Some(ok)) if ok == (preset == CliPreset::Opencode) => Ok(format!(
            "no file; refused by the kernel (Permission denied); {}",
            report.summary()
        )),
        _ => Err(format!(
            "expected a refusal by the {want:?}, got {calls} tool calls: {events:?}"
        )),
    }
}

type Outcomes = Vec<(String, Result<String, String>)>;

async fn preset_turns(preset: CliPreset, bin: PathBuf, base: String) -> Outcomes {
    let (bin, base) = (bin.as_path(), base.as_str());
    let mut turns = vec![
        (
            format!("{preset} edit (file tool)"),
            write_turn(preset, bin, base, WRITE).await,
        ),
        (
            format!("{preset} edit (shell)"),
            write_turn(preset, bin, base, SHELL).await,
        ),
        (
            format!("{preset} read_only (file tool)"),
            read_only_turn(preset, bin, base, WRITE).await,
        ),
        (
            format!("{preset} read_only (shell)"),
            read_only_turn(preset, bin, base, SHELL).await,
        ),
        (
            format!("{preset} provider error"),
            error_turn(preset, bin, base).await,
        ),
        (
            format!("{preset} read_only (shell, outside the work dir)"),
            outside_turn(preset, bin, base, Access::ReadOnly, false).await,
        ),
        (
            format!("{preset} edit (shell, outside the work dir)"),
            outside_turn(preset, bin, base, Access::Edit, false).await,
        ),
    ];
    if preset == CliPreset::Opencode {
        // Only opencode's permissions can be reopened by the agent's config
        // (its env wins over the preset's); claude's and qwen's read_only
        // flags cannot be undone by appended ones.
        turns.push((
            format!("{preset} read_only, every permission opened by its config (shell, outside)"),
            outside_turn(preset, bin, base, Access::ReadOnly, true).await,
        ));
    }
    turns
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_cli_agents_write_refuse_and_fail_as_specified() {
    let Some(bin) = agent_bin() else { return };
    let server = ScriptedModelServer::start().unwrap();
    let base = server.base_url();
    let presets = [
        CliPreset::Claude,
        CliPreset::Qwen,
        CliPreset::Codex,
        CliPreset::Opencode,
    ];
    let runs = presets.map(|p| tokio::spawn(preset_turns(p, bin.clone(), base.clone())));
    let mut results = Vec::new();
    for run in runs {
        results.extend(run.await.unwrap());
    }
    let passed = results.iter().filter(|(_, r)| r.is_ok()).count();
    let mut report = String::new();
    for (name, r) in &results {
        match r {
            Ok(how) => report.push_str(&format!("  ok   {name}: {how}\n")),
            Err(e) => report.push_str(&format!("  FAIL {name}: {e}\n")),
        }
    }
    let _ = writeln!(
        std::io::stderr(),
        "{report}real CLI agents: {passed} of {} turns passed",
        results.len()
    );
    assert_eq!(passed, results.len(), "\n{report}");
}
