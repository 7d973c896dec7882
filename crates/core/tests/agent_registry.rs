//! coderig.toml → the registry: strict decoding with paths, turns through
//! the registry, and what `agents()` reports.

use coderig::agent::config::ConfigFile;
use coderig::agent::{AgentEvent, Registry, Turn};
use coderig::ErrorKind;
use std::time::Duration;

const TOML: &str = r#"
[agents.alice]
kind = "scripted"
script = [ { write = { path = "fix.py", content = "x = 1\n" } }, { text = "done" } ]
scripts = { slow = [ { sleep_ms = 5000 }, { text = "late" } ] }
timeout = "90s"
idle_timeout = 2.5
lane = "local"
[agents.ghost]
kind = "cli"
preset = "custom"
command = "/nonexistent/coderig-ghost"
args = ["--json", "{prompt}"]
format = "text"
[lanes]
local = 1
"#;

#[test]
fn bad_configs_name_every_problem_with_its_path() {
    let cases = [
        (
            "[agents.a]\nkind = \"robot\"\n",
            "agents.a.kind",
            "unknown agent kind",
        ),
        (
            "[agents.a]\nkind = \"cli\"\n",
            "agents.a.preset",
            "required",
        ),
        (
            "[agents.a]\nkind = \"cli\"\npreset = \"cursor\"\n",
            "agents.a.preset",
            "claude, qwen",
        ),
        (
            "[agents.a]\nkind = \"cli\"\npreset = \"claude\"\nbase_url = \"http://x\"\n",
            "agents.a.base_url",
            "kind \"openai\"",
        ),
        (
            "[agents.a]\nkind = \"cli\"\npreset = \"claude\"\nformat = \"text\"\n",
            "agents.a.format",
            "only the custom preset",
        ),
        (
            "[agents.a]\nkind = \"cli\"\npreset = \"custom\"\n",
            "agents.a.command",
            "required for the custom preset",
        ),
        (
            "[agents.a]\nkind = \"openai\"\n",
            "agents.a.base_url",
            "required",
        ),
        (
            "[agents.a]\nkind = \"openai\"\nbase_url = \"ftp://x\"\n",
            "agents.a.base_url",
            "not an http(s) URL",
        ),
        (
            "[agents.a]\nkind = \"scripted\"\n",
            "agents.a.script",
            "required",
        ),
        (
            "[agents.a]\nkind = \"scripted\"\nscript = [{ dance = 1 }]\n",
            "agents.a.script[0]",
            "unknown variant",
        ),
        (
            "[agents.a]\nkind = \"scripted\"\nscript = []\ntimeout = \"5 parsecs\"\n",
            "agents.a.timeout",
            "bad duration",
        ),
        (
            "[agents.a]\nkind = \"scripted\"\nscript = []\nlane = \"gpu\"\n",
            "agents.a.lane",
            "unknown lane",
        ),
        (
            "[agents.a]\nkind = \"scripted\"\nscript = []\ncolour = 1\n",
            "agents.a",
            "unknown field `colour`",
        ),
        ("[lanes]\nlocal = -1\n", "lanes.local", "invalid value"),
        (
            "[store]\nretain = \"5s\"\n",
            "store.retain",
            "under a minute",
        ),
        (
            "[store]\nretain = \"30 fortnights\"\n",
            "store.retain",
            "bad duration",
        ),
        ("[store]\nkeep = 1\n", "store", "unknown field `keep`"),
        ("[server]\nport = 1\n", "", "unknown field `server`"),
        ("[agents.a\n", "", "not valid TOML"),
    ];
    for (toml, path, words) in cases {
        let err = ConfigFile::from_toml_str(toml).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{toml}");
        assert!(
            err.message().contains(path) && err.message().contains(words),
            "{toml}: {}",
            err.message()
        );
    }
    // Every problem at once.
    let err =
        ConfigFile::from_toml_str("[agents.a]\nkind = \"cli\"\n[agents.b]\nkind = \"openai\"\n")
            .unwrap_err();
    assert!(
        err.message().contains("agents.a.preset") && err.message().contains("agents.b.base_url"),
        "{}",
        err.message()
    );
}

#[test]
fn a_config_decodes_with_durations_lanes_and_scripts() {
    let config = ConfigFile::from_toml_str(TOML).unwrap();
    let alice = &config.agents["alice"];
    assert_eq!(alice.timeout, Some(Duration::from_secs(90)));
    assert_eq!(alice.idle_timeout, Some(Duration::from_millis(2500)));
    assert_eq!(alice.scripts["slow"].len(), 2);
    assert_eq!(config.lanes[&coderig::arena::Lane::Local], 1);
    let kept = Registry::from_toml_str("[store]\nretain = \"30d\"\n").unwrap();
    assert_eq!(kept.retain(), Some(Duration::from_secs(30 * 86_400)));
    assert_eq!(Registry::new().retain(), None, "kept forever by default");
}

#[tokio::test]
async fn turns_run_through_the_registry_and_unknown_identities_are_named() {
    let registry = Registry::from_config(&ConfigFile::from_toml_str(
        "[agents.alice]\nkind = \"scripted\"\nscript = [ { write = { path = \"fix.py\", content = \"x = 1\\n\" } }, { text = \"done\" } ]\nscripts = { slow = [ { hang = true } ] }\nidle_timeout = \"50ms\"\n",
    ).unwrap())
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let turn = Turn::new("fix it")
        .workdir(dir.path())
        .access(coderig::agent::Access::Edit);
    let mut handle = registry.start_turn("alice", turn).unwrap();
    let mut types = vec![];
    while let Some(e) = handle.next_event().await {
        types.push(e.type_name());
    }
    assert_eq!(
        types,
        [
            "session_started",
            "tool_call",
            "tool_result",
            "text_delta",
            "finished"
        ]
    );
    assert_eq!(handle.wait().await.unwrap().final_text, "done");
    assert!(dir.path().join("fix.py").exists());
    let again = handle.wait().await.unwrap();
    assert_eq!(
        again.final_text, "done",
        "wait() again gives the same outcome"
    );

    // The entry's idle timeout applies when the turn sets none.
    let mut hung = registry
        .start_turn("alice", Turn::new("p").model("slow"))
        .unwrap();
    assert_eq!(
        hung.wait().await.unwrap_err().kind,
        coderig::agent::AgentErrorKind::Idle
    );

    // Cancel through the handle.
    let mut hung = registry
        .start_turn(
            "alice",
            Turn::new("p")
                .model("slow")
                .idle_timeout(Duration::from_secs(600)),
        )
        .unwrap();
    assert!(matches!(
        hung.next_event().await,
        Some(AgentEvent::SessionStarted { .. })
    ));
    hung.cancel();
    assert_eq!(
        hung.wait().await.unwrap_err().kind,
        coderig::agent::AgentErrorKind::Cancelled
    );

    // cancel_all stops every running turn, also through a clone.
    let mut hung = registry
        .clone()
        .start_turn(
            "alice",
            Turn::new("p")
                .model("slow")
                .idle_timeout(Duration::from_secs(600)),
        )
        .unwrap();
    assert!(matches!(
        hung.next_event().await,
        Some(AgentEvent::SessionStarted { .. })
    ));
    registry.cancel_all();
    assert_eq!(
        hung.wait().await.unwrap_err().kind,
        coderig::agent::AgentErrorKind::Cancelled
    );

    let err = registry.start_turn("bob", Turn::new("p")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFoundId);
    assert!(
        err.message().contains("\"bob\"") && err.message().contains("configured: alice"),
        "{}",
        err.message()
    );
    let err = Registry::new()
        .start_turn("bob", Turn::new("p"))
        .unwrap_err();
    assert!(
        err.message().contains("none are configured"),
        "{}",
        err.message()
    );
}

#[tokio::test]
async fn shutdown_cancels_every_turn_and_waits_until_they_ended() {
    let registry = Registry::from_toml_str(TOML).unwrap();
    let slow = || Turn::new("p").model("slow");
    let mut read = registry.start_turn("alice", slow()).unwrap();
    // A turn nobody holds a handle of any more is waited for too.
    drop(registry.clone().start_turn("alice", slow()).unwrap());
    assert!(matches!(
        read.next_event().await,
        Some(AgentEvent::SessionStarted { .. })
    ));
    assert_eq!(registry.running_turns(), 2);
    let started = std::time::Instant::now();
    assert!(registry.shutdown(Duration::from_secs(4)).await);
    assert!(started.elapsed() < Duration::from_secs(4));
    assert_eq!(registry.running_turns(), 0);
    assert_eq!(
        read.wait().await.unwrap_err().kind,
        coderig::agent::AgentErrorKind::Cancelled
    );
}

#[tokio::test]
async fn info_reports_installed_reachable_and_models() {
    let registry = Registry::from_toml_str(TOML).unwrap();
    let info = registry.info(coderig::agent::DEFAULT_PROBE_TIMEOUT).await;
    assert_eq!(info.len(), 2);
    assert_eq!(info[0].identity, "alice");
    assert_eq!(
        (info[0].kind.as_str(), info[0].lane.as_str()),
        ("scripted", "local")
    );
    assert_eq!((info[0].installed, info[0].reachable), (true, Some(true)));
    assert_eq!(info[0].models, ["slow"]);
    let ghost = &info[1];
    assert_eq!(
        (ghost.kind.as_str(), ghost.preset.as_deref()),
        ("cli", Some("custom"))
    );
    assert_eq!((ghost.installed, ghost.reachable), (false, None));
    assert!(
        ghost
            .error
            .as_deref()
            .unwrap()
            .contains("/nonexistent/coderig-ghost"),
        "{ghost:?}"
    );
    let json = serde_json::to_value(&info).unwrap();
    assert_eq!(json[0]["identity"], "alice");
    assert!(coderig::agent::find_executable(std::path::Path::new("sh"), None).is_some());
    assert!(
        coderig::agent::find_executable(std::path::Path::new("/nonexistent/x"), None).is_none()
    );
}

#[test]
fn open_chooses_one_source_and_load_errors_keep_their_details() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("coderig.toml");
    std::fs::write(&file, "[agents.a]\nkind = \"scripted\"\nscript = []\n").unwrap();
    let (registry, used) = Registry::open(Some(&file), None).unwrap();
    assert_eq!(
        (registry.identities(), used.as_deref()),
        (vec!["a".to_string()], Some(file.as_path()))
    );
    let agents = serde_json::json!({"b": {"kind": "scripted", "script": [{"text": "hi"}]}});
    let (registry, used) = Registry::open(None, Some(agents.clone())).unwrap();
    assert_eq!((registry.identities(), used), (vec!["b".to_string()], None));
    let err = Registry::open(Some(&file), Some(agents)).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    let err = Registry::open(None, Some(serde_json::json!({"b": {"kind": "robot"}}))).unwrap_err();
    assert!(err.message().contains("agents.b.kind"), "{}", err.message());

    std::fs::write(&file, "[agents.a]\nkind = \"robot\"\n").unwrap();
    let err = Registry::load(&file).unwrap_err();
    assert!(
        err.message().starts_with(&file.display().to_string()),
        "{}",
        err.message()
    );
    assert_eq!(err.details()["file"], file.display().to_string());
    let err = Registry::load(&dir.path().join("missing.toml")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Io);
}
