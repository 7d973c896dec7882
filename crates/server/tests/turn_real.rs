//! `coderig turn`, `coderig agents` and `GET /api/agents` with the real
//! pinned agent CLIs (`scripts/install-agents.sh`; `CODERIG_AGENT_BIN`
//! names its `.bin` dir) against the project's scripted model server, each
//! CLI configured the way a user would: a `coderig.toml` with the preset,
//! the binary, and the provider settings in `env` / `extra_args`.
//!
//! Without `CODERIG_AGENT_BIN` it says SKIPPED and passes, unless
//! `CODERIG_REQUIRE_AGENTS=1` (the test command sets both).

use coderig_scripted_model::ScriptedModelServer;
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const MODEL: &str = "scripted-model";

fn agent_bin() -> Option<PathBuf> {
    match std::env::var("CODERIG_AGENT_BIN") {
        Ok(dir) if !dir.is_empty() => Some(PathBuf::from(dir)),
        _ => {
            assert_ne!(
                std::env::var("CODERIG_REQUIRE_AGENTS").as_deref(),
                Ok("1"),
                "CODERIG_REQUIRE_AGENTS=1 but CODERIG_AGENT_BIN is not set"
            );
            let _ = writeln!(
                std::io::stderr(),
                "turn_real: CODERIG_AGENT_BIN is not set: SKIPPED (see scripts/install-agents.sh)"
            );
            None
        }
    }
}

/// A rig dir: `home/` (the CLIs' isolated HOME), `work/` (a one-commit git
/// repo) and `coderig.toml` configuring the four CLIs and an openai agent against `base`.
fn rig(bin: &Path, base: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let work = dir.path().join("work");
    std::fs::create_dir_all(home.join(".codex")).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    for args in [
        &["init", "-q"][..],
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "init",
        ],
    ] {
        let ok = Command::new("git")
            .args(args)
            .current_dir(&work)
            .env("HOME", &home)
            .status()
            .unwrap();
        assert!(ok.success());
    }
    let catalog = home.join("catalog.json");
    std::fs::write(&catalog, codex_catalog()).unwrap();
    let h = home.display();
    let toml = format!(
        r#"
[agents.claude]
kind = "cli"
preset = "claude"
command = "{bin}/claude"
timeout = "240s"
env = {{ HOME = "{h}", CLAUDE_CONFIG_DIR = "{h}/.claude", XDG_CONFIG_HOME = "{h}/.config", XDG_DATA_HOME = "{h}/.local/share", XDG_CACHE_HOME = "{h}/.cache", XDG_STATE_HOME = "{h}/.local/state", ANTHROPIC_BASE_URL = "{base}", ANTHROPIC_API_KEY = "sk-ant-dummy", DISABLE_AUTOUPDATER = "1", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = "1", DISABLE_TELEMETRY = "1", DISABLE_ERROR_REPORTING = "1", CLAUDE_CODE_MAX_RETRIES = "0" }}

[agents.codex]
kind = "cli"
preset = "codex"
command = "{bin}/codex"
timeout = "240s"
env = {{ HOME = "{h}", CODEX_HOME = "{h}/.codex", LOCAL_API_KEY = "dummy", XDG_CONFIG_HOME = "{h}/.config", XDG_DATA_HOME = "{h}/.local/share", XDG_CACHE_HOME = "{h}/.cache", XDG_STATE_HOME = "{h}/.local/state" }}
extra_args = ["--ephemeral", "--strict-config",
  "-c", "model_provider=local", "-c", "model_catalog_json={catalog}",
  "-c", "model_providers.local.name=local", "-c", "model_providers.local.base_url={base}/v1",
  "-c", "model_providers.local.wire_api=responses", "-c", "model_providers.local.env_key=LOCAL_API_KEY",
  "-c", "model_providers.local.request_max_retries=0", "-c", "model_providers.local.stream_max_retries=0",
  "-c", "check_for_update_on_startup=false", "-c", "analytics.enabled=false"]

[agents.local]
kind = "openai"
base_url = "{base}/v1"
lane = "local"

[agents.qwen]
kind = "cli"
preset = "qwen"
command = "{bin}/qwen"

[agents.opencode]
kind = "cli"
preset = "opencode"
command = "{bin}/opencode"
"#,
        bin = bin.display(),
        catalog = catalog.display(),
    );
    std::fs::write(dir.path().join("coderig.toml"), toml).unwrap();
    dir
}

fn codex_catalog() -> String {
    format!(
        r#"{{"models":[{{"slug":"{MODEL}","display_name":"{MODEL}","description":"x",
 "supports_reasoning_summaries":false,"support_verbosity":false,"default_verbosity":null,
 "apply_patch_tool_type":"freeform","input_modalities":["text"],
 "truncation_policy":{{"mode":"tokens","limit":10000}},"supports_parallel_tool_calls":false,
 "context_window":128000,"default_reasoning_level":"medium",
 "supported_reasoning_levels":[{{"effort":"medium","description":"medium"}}],
 "shell_type":"shell_command","visibility":"list","minimal_client_version":"0.0.1",
 "supported_in_api":true,"upgrade":null,"priority":0,
 "base_instructions":"You are a scripted test agent.","experimental_supported_tools":[]}}]}}"#
    )
}

fn coderig(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_coderig"))
        .args(args)
        .current_dir(dir)
        .env_remove("CODERIG_CONFIG")
        .env_remove("DATABASE_URL")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// One `coderig turn --json` with a real CLI: the file the scripted model
/// asks for appears, and the normalized events of the turn come out.
fn turn(dir: &Path, identity: &str, access: &str, prompt: &str) -> Result<String, String> {
    let work = dir.join("work");
    let _ = std::fs::remove_file(work.join("hello.txt"));
    let target = format!("{identity}:{MODEL}");
    let args = [
        "turn",
        &target,
        "--prompt",
        prompt,
        "--workdir",
        work.to_str().unwrap(),
        "--access",
        access,
        "--json",
    ];
    let out = coderig(dir, &args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let types: Vec<&str> = lines.iter().filter_map(|l| l["type"].as_str()).collect();
    let why = || {
        format!(
            "exit {:?}, types {types:?}, stderr {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        )
    };
    let outcome = lines.last().ok_or_else(why)?;
    if outcome["type"] != "outcome" || outcome["ok"] != true || out.status.code() != Some(0) {
        return Err(why());
    }
    // Read-only presets take the write tools away, so the model calls none.
    let wanted: &[&str] = match access {
        "edit" => &[
            "session_started",
            "tool_call",
            "tool_result",
            "usage",
            "finished",
        ],
        _ => &["session_started", "usage", "finished"],
    };
    for &wanted in wanted {
        if !types.contains(&wanted) {
            return Err(format!("no {wanted}: {}", why()));
        }
    }
    if outcome["final_text"] != "done" {
        return Err(format!("final text {}: {}", outcome["final_text"], why()));
    }
    let written = std::fs::read_to_string(work.join("hello.txt")).ok();
    match (access, written.as_deref()) {
        ("edit", Some(text)) if text.trim() == "hi" => {
            Ok(format!("{} events, hello.txt written", lines.len()))
        }
        ("read_only", None) => Ok(format!("{} events, nothing written", lines.len())),
        (_, w) => Err(format!(
            "hello.txt = {w:?} after a {access} turn: {}",
            why()
        )),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn real_clis_through_coderig_turn_agents_and_the_agents_route() {
    let Some(bin) = agent_bin() else { return };
    let server = ScriptedModelServer::start().unwrap();
    let dir = rig(&bin, &server.base_url());

    // coderig agents --json: every preset resolved to its installed binary.
    let out = coderig(dir.path(), &["agents", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let agents: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let identities: Vec<&str> = agents
        .iter()
        .map(|a| a["identity"].as_str().unwrap())
        .collect();
    assert_eq!(identities, ["claude", "codex", "local", "opencode", "qwen"]);
    let local = &agents[2];
    assert_eq!(
        (local["kind"].as_str(), local["lane"].as_str()),
        (Some("openai"), Some("local"))
    );
    assert_eq!(local["reachable"], true, "{local}");
    assert!(
        local["models"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m == MODEL),
        "{local}"
    );
    for a in agents.iter().filter(|a| a["kind"] == "cli") {
        assert_eq!(
            (a["kind"].as_str(), a["installed"].as_bool()),
            (Some("cli"), Some(true)),
            "{a}"
        );
        assert_eq!(a["preset"], a["identity"]);
        assert!(
            a["command"]
                .as_str()
                .unwrap()
                .starts_with(bin.to_str().unwrap()),
            "{a}"
        );
    }

    // The same over HTTP from `coderig serve`.
    let mut serve = Command::new(env!("CARGO_BIN_EXE_coderig"))
        .args(["serve", "--port", "0", "--data-dir"])
        .arg(dir.path().join("data"))
        .current_dir(dir.path())
        .env_remove("DATABASE_URL")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(serve.stdout.take().unwrap()),
        &mut first,
    )
    .unwrap();
    let url = first.trim().rsplit(' ').next().unwrap().to_string();
    let listed: Vec<Value> = tokio::task::spawn_blocking(move || {
        let body = ureq_get(&format!("{url}/api/agents"));
        serde_json::from_str(&body).unwrap()
    })
    .await
    .unwrap();
    let _ = serve.kill();
    let _ = serve.wait();
    assert_eq!(
        listed, agents,
        "GET /api/agents answers what coderig agents prints"
    );

    // Real turns: claude and codex (about a second each); edit writes, read_only does not.
    let cases = [
        ("claude", "edit", "Create hello.txt containing hi"),
        ("claude", "read_only", "Create hello.txt containing hi"),
        (
            "codex",
            "edit",
            "Create hello.txt containing hi using the shell",
        ),
        (
            "codex",
            "read_only",
            "Create hello.txt containing hi using the shell",
        ),
    ];
    let mut report = String::new();
    let mut passed = 0;
    for (identity, access, prompt) in cases {
        match turn(dir.path(), identity, access, prompt) {
            Ok(how) => {
                passed += 1;
                report.push_str(&format!("  ok   coderig turn {identity} {access}: {how}\n"));
            }
            Err(e) => report.push_str(&format!("  FAIL coderig turn {identity} {access}: {e}\n")),
        }
    }
    let _ = writeln!(
        std::io::stderr(),
        "{report}real CLI agents: {passed} of {} turns passed",
        cases.len()
    );
    assert_eq!(passed, cases.len(), "\n{report}");
}

/// A blocking GET over a plain TCP socket (the body of a 200 answer).
fn ureq_get(url: &str) -> String {
    use std::io::Read;
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest
        .split_once('/')
        .map(|(h, p)| (h, format!("/{p}")))
        .unwrap();
    let mut stream = std::net::TcpStream::connect(host).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    body.to_string()
}
