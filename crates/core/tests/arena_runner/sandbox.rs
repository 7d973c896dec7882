//! The sandboxed oracle: a contestant whose test escapes is contained, and a kernel without Landlock is refused.

use super::*;

// --- the sandboxed oracle -------------------------------------------------------

/// The Python interpreter itself (not a version manager's shim).
fn python() -> String {
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 runs");
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// Removes a file an escape might have created, whatever the test's outcome.
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// What `label` came to in a hostile test's output (`label: ok` or
/// `label: refused: <the error>`).
fn verdict<'a>(out: &'a str, label: &str) -> &'a str {
    out.lines()
        .find_map(|l| l.strip_prefix(&format!("{label}: ")))
        .unwrap_or_else(|| panic!("no line for {label} in:\n{out}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_contestant_whose_test_escapes_is_contained_and_the_battle_completes() {
    let home = coderig::sandbox::home_dir().expect("HOME is set");
    let escape = home.join(format!("coderig-oracle-escape-{}", std::process::id()));
    assert!(!escape.exists(), "{}", escape.display());
    let _guard = RemoveOnDrop(escape.clone());
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let outside = tempfile::tempdir().unwrap();
    let outside = outside.path().canonicalize().unwrap();
    std::fs::write(outside.join("victim"), "precious\n").unwrap();

    // A test the contestant adds: it writes into the user's home and a
    // folder outside the checkout and connects to the host's listener,
    // and fails when any of that is refused.
    let test = format!(
        "#!/bin/sh\nstatus=0\n\
         home_write() {{ echo pwned > \"$HOME/coderig-oracle-escape-{pid}\"; }}\n\
         outside_write() {{ echo pwned >> '{outside}/victim'; }}\n\
         connect() {{ '{python}' -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5)\"; }}\n\
         for t in home_write outside_write connect; do\n\
         if msg=$($t 2>&1); then echo \"$t: ok\"; else echo \"$t: refused: $msg\"; status=1; fi\n\
         done\nexit $status\n",
        pid = std::process::id(),
        outside = outside.display(),
        python = python(),
    );
    let toml = format!(
        "{}\n[agents.sly]\nkind = \"scripted\"\n\
         scripts.hostile = [ {{ write = {{ path = \"calc.sh\", content = {fixed:?} }} }}, \
         {{ write = {{ path = \"tests/test_hostile.sh\", content = {test:?} }} }}, {{ text = \"fixed, with a test\" }} ]\n",
        agents_toml(),
        fixed = CALC_FIXED,
    );
    let w = world_with(&toml).await;
    let view = w
        .arena
        .start_battle(spec(
            &w.project,
            &["sly/hostile", "fixer/good"],
            "judge/j",
            true,
        ))
        .await
        .unwrap();
    let view = finished(&w.arena, &view.id).await;
    assert_eq!(view.status, BattleStatus::Completed, "{view:#?}");

    // The hostile contestant: its repro passes, its suite fails, and the
    // suite's tail says what was refused and why.
    let sly = by_model(&view, "hostile");
    assert_eq!(sly.status, ContestantStatus::Done, "{sly:?}");
    let evidence = sly.evidence.as_ref().expect("evidence");
    assert!(
        evidence.patch_applied && evidence.error.is_none(),
        "{evidence:?}"
    );
    assert!(evidence.repro.as_ref().unwrap().passed(), "{evidence:?}");
    let suite = evidence.suite.as_ref().unwrap();
    assert_eq!(suite.exit_code, Some(1), "{suite:?}");
    let out = &suite.output_tail;
    for label in ["home_write", "outside_write"] {
        let v = verdict(out, label);
        assert!(
            v.starts_with("refused:") && v.contains("Permission denied"),
            "{label}: {v}\n{out}"
        );
    }
    assert!(
        verdict(out, "connect").starts_with("refused:") && out.contains("Connection refused"),
        "{out}"
    );
    let report = suite.sandbox.as_ref().expect("the suite's sandbox report");
    assert!(report.confined, "{report:?}");
    assert!(
        report.landlock_abi.is_some_and(|abi| abi >= 3),
        "{report:?}"
    );
    assert_eq!(report.network, "deny");
    assert_eq!(sly.tier, EvidenceTier::Partial);
    // The other contestant wins by the oracle.
    let good = by_model(&view, "good");
    assert_eq!(good.tier, EvidenceTier::Full);
    assert_eq!(view.winner_contestant_id.as_deref(), Some(good.id.as_str()));
    assert_eq!(view.winner_source, Some(WinnerSource::Oracle));
    // The base run was sandboxed too.
    let base = view.base_run.as_ref().expect("base run");
    assert!(
        base.repro
            .as_ref()
            .unwrap()
            .sandbox
            .as_ref()
            .is_some_and(|r| r.confined),
        "{base:?}"
    );

    // Nothing escaped.
    assert!(!escape.exists(), "the suite wrote into the user's home");
    assert_eq!(
        std::fs::read_to_string(outside.join("victim")).unwrap(),
        "precious\n"
    );
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);
    let mut seen = 0;
    while listener.accept().is_ok() {
        seen += 1;
    }
    assert_eq!(seen, 0, "the host's listener saw a connection");

    // The results folder records the sandbox with the evidence.
    let dir = PathBuf::from(&view.results_dir);
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    let recorded = &manifest["evidence"]["contestants"][&sly.id]["suite"]["sandbox"];
    assert_eq!(recorded["confined"], true, "{manifest:#}");
    assert_eq!(recorded["network"], "deny");
    assert_eq!(manifest["battle"]["oracle"]["network"], "deny");
    let result = std::fs::read_to_string(dir.join(&sly.dir).join("result.md")).unwrap();
    assert!(
        result.contains("Sandbox of the suite: enforce: landlock v"),
        "{result}"
    );
    assert!(coderig_worktrees(&w.project).is_empty());
    w.arena.shutdown(Duration::from_secs(5)).await;
}

/// Runs as a child of this test binary (`CODERIG_ARENA_NO_LANDLOCK` and
/// `CODERIG_SANDBOX_PRETEND_MISSING=landlock` set): a battle on a kernel
/// without Landlock, under the registry's default mode, `enforce`.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn no_landlock_battle_child() {
    if std::env::var_os("CODERIG_ARENA_NO_LANDLOCK").is_none() {
        return;
    }
    let w = world().await;
    assert_eq!(
        w.arena.registry().sandbox_mode(),
        coderig::sandbox::SandboxMode::Enforce
    );
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
    let view = finished(&w.arena, &view.id).await;
    // The refusal is each oracle run's error; the battle still completes.
    assert_eq!(view.status, BattleStatus::Completed, "{view:#?}");
    for c in &view.contestants {
        assert_eq!(c.status, ContestantStatus::Done, "{c:?}");
        let evidence = c.evidence.as_ref().expect("evidence");
        let error = evidence.error.as_deref().unwrap_or_default();
        assert!(
            error.contains("cannot run sandboxed") && error.contains("Landlock"),
            "{evidence:?}"
        );
        assert!(evidence.repro.is_none() && evidence.suite.is_none());
        assert_eq!(c.tier, EvidenceTier::None);
    }
    let base = view.base_run.as_ref().expect("base run");
    assert!(
        base.error
            .as_deref()
            .is_some_and(|e| e.contains("cannot run sandboxed")),
        "{base:?}"
    );
    assert!(coderig_worktrees(&w.project).is_empty());
    assert_eq!(coderig_branches(&w.project), "");
    w.arena.shutdown(Duration::from_secs(5)).await;
}

#[test]
fn on_a_kernel_without_landlock_the_oracle_refuses_and_the_battle_completes() {
    let out = procs::child_test("sandbox::no_landlock_battle_child")
        .env("CODERIG_ARENA_NO_LANDLOCK", "1")
        .env("CODERIG_SANDBOX_PRETEND_MISSING", "landlock")
        .env_remove("DATABASE_URL")
        .output()
        .unwrap();
    procs::passed(out);
}
