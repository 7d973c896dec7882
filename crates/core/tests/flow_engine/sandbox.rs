//! The sandbox of command steps: escapes fail the step with the sandbox stored on the attempt, bad paths refused at start, network and limits, a kernel without Landlock.

use super::*;

// ---- the sandbox of command steps -----------------------------------------

/// The stored `step_updated` payloads of one step of one run, oldest first.
async fn step_events(w: &World, run: &str, step_id: &str) -> Vec<Value> {
    w.store
        .events_after(0, 10_000)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| {
            e.kind.as_str() == "step_updated"
                && e.payload["run_id"] == json!(run)
                && e.payload["step_id"] == json!(step_id)
        })
        .map(|e| e.payload)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_that_escapes_its_cwd_fails_and_its_sandbox_is_stored_with_the_attempt() {
    let w = world().await;
    std::fs::write(w.file("victim"), b"precious\n").unwrap();
    // `inside` writes where it may: its cwd (the step's own dir under the
    // run's) and its TMPDIR. `escape` tries the files dir, outside its cwd.
    let yaml = r#"
steps:
  - id: inside
    kind: command
    shell: echo mine > ./mine && echo t > "$TMPDIR/t" && cat ./mine "$TMPDIR/t"
  - id: escape
    kind: command
    shell: echo pwned > '{{ input.dir }}/victim'
"#;
    let view = w.run(yaml).await;
    assert_eq!(view.status, RunStatus::Failed, "{view:#?}");
    let inside = step(&view, "inside");
    assert_eq!(inside.status, StepStatus::Done, "{inside:#?}");
    assert_eq!(inside.output, Some(json!("mine\nt\n")));
    let escape = step(&view, "escape");
    assert_eq!(escape.status, StepStatus::Failed, "{escape:#?}");
    assert_eq!(std::fs::read(w.file("victim")).unwrap(), b"precious\n");
    // The kernel's refusal is in the step's error (the stderr tail) and
    // in its stderr artifact.
    let error = escape.error.as_ref().unwrap();
    assert!(
        error["stderr_tail"]
            .as_str()
            .unwrap()
            .contains("Permission denied"),
        "{error}"
    );
    assert!(data_file(&w, &view.id, "escape/stderr.txt").contains("Permission denied"));
    // Each attempt's outcome holds the sandbox the kernel enforced: the
    // step's own dir writable (its default cwd), nothing of the files dir.
    let step_dir = w
        .files
        .parent()
        .unwrap()
        .join("data/runs")
        .join(&view.id)
        .join("escape");
    let attempt = &escape.attempts[0];
    assert_eq!(attempt.outcome.as_str(), "failed");
    let report = attempt.sandbox.as_ref().expect("the attempt's sandbox");
    assert_eq!(report.mode, SandboxMode::Enforce);
    assert!(report.confined, "{report:?}");
    assert!(report.landlock_abi.unwrap() >= 3);
    assert_eq!(report.filesystem, Enforcer::Landlock);
    assert_eq!(report.network, "deny");
    assert!(report.writable.contains(&step_dir), "{report:?}");
    assert!(
        !report.writable.iter().any(|p| w.files.starts_with(p)),
        "{report:?}"
    );
    assert!(
        step(&view, "inside").attempts[0]
            .sandbox
            .as_ref()
            .unwrap()
            .confined
    );
    // As GET /api/runs/{id} shows it, and as stored.
    let shown = serde_json::to_value(&view).unwrap();
    assert_eq!(
        shown["steps"][1]["attempts"][0]["sandbox"]["confined"],
        json!(true)
    );
    let owner = w.store.owner(&format!("{}:escape", view.id)).await.unwrap();
    assert_eq!(
        owner.data["attempts"][0]["sandbox"]["mode"],
        json!("enforce")
    );
    // Fully confined: no event says otherwise.
    for e in step_events(&w, &view.id, "escape").await {
        assert!(e.get("sandbox").is_none(), "{e}");
    }
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandbox_paths_are_checked_at_start_and_a_bad_one_creates_nothing() {
    let w = world_with(&["projects"], SandboxMode::Enforce).await;
    let project = w.files.parent().unwrap().join("projects");
    let cache = project.join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    let start = |spec: String| {
        let engine = w.engine.clone();
        async move {
            let spec = FlowSpec::parse(&spec).unwrap_or_else(|e| panic!("{e}\n{spec}"));
            engine.start_run(NewRun::spec(spec, json!({}))).await
        }
    };
    let outside = w.files.display().to_string();
    let missing = project.join("missing").display().to_string();
    let cases = [
        (
            format!("{{id: a, kind: command, argv: ['true'], sandbox: {{writable: ['{outside}']}}}}"),
            "steps[1].sandbox.writable[0]",
            "outside the project roots",
        ),
        (
            format!("{{id: a, kind: command, argv: ['true'], sandbox: {{writable: ['{}', '{missing}']}}}}", cache.display()),
            "steps[1].sandbox.writable[1]",
            "create it first",
        ),
        (
            format!("{{id: a, kind: command, argv: ['true'], sandbox: {{readable: ['{missing}']}}}}"),
            "steps[1].sandbox.readable[0]",
            "create it first",
        ),
    ];
    for (step_yaml, path, why) in cases {
        let spec =
            format!("steps:\n  - {{id: ok, kind: command, argv: ['true']}}\n  - {step_yaml}\n");
        let e = start(spec).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
        assert_eq!(e.details()["path"], json!(path), "{e}");
        assert!(e.message().contains(why), "{e}");
        assert!(e.message().contains(path), "{e}");
    }
    // Nothing was stored, nothing ran.
    let page = w.engine.list_runs(&RunFilter::default()).await.unwrap();
    assert!(page.runs.is_empty(), "{:?}", page.runs);
    // A writable path under a project root widens the step's sandbox.
    let spec = format!(
        "steps:\n  - {{id: fill, kind: command, shell: 'echo filled > {}/out', sandbox: {{writable: ['{}']}}}}\n",
        cache.display(),
        cache.display()
    );
    let id = start(spec).await.unwrap();
    let view = w.finished(&id).await;
    assert_eq!(view.status, RunStatus::Completed, "{view:#?}");
    assert_eq!(std::fs::read(cache.join("out")).unwrap(), b"filled\n");
    let report = step(&view, "fill").attempts[0].sandbox.clone().unwrap();
    assert!(report.writable.contains(&cache), "{report:?}");
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn network_allow_and_limits_reach_the_step() {
    let w = world().await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect = format!(
        "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), timeout=5)'"
    );
    let yaml = format!(
        r#"
steps:
  - {{id: denied, kind: command, shell: "{connect} && echo reached || echo refused"}}
  - id: allowed
    kind: command
    shell: "{connect} && echo reached || echo refused"
    sandbox: {{network: allow}}
  - id: limited
    kind: command
    shell: 'ulimit -n'
    sandbox: {{limits: {{open_files: 77}}}}
"#,
        connect = connect.replace('"', "\\\"")
    );
    let id = w.start(&yaml, NewRun::spec).await;
    let view = w.finished(&id).await;
    assert_eq!(view.status, RunStatus::Completed, "{view:#?}");
    assert_eq!(step(&view, "denied").output, Some(json!("refused\n")));
    assert_eq!(step(&view, "allowed").output, Some(json!("reached\n")));
    assert_eq!(
        std::iter::from_fn(|| listener.accept().ok()).count(),
        1,
        "only the allowed step reached the test's listener"
    );
    assert_eq!(step(&view, "limited").output, Some(json!("77\n")));
    let report = |id: &str| step(&view, id).attempts[0].sandbox.clone().unwrap();
    assert_eq!(report("denied").network, "deny");
    assert_eq!(report("allowed").network, "allow");
    assert_eq!(report("limited").limits.open_files, Some(77));
    w.shutdown().await;
}

/// Runs in a child of this test binary (`FLOW_ENGINE_PRETEND` set to a
/// scratch dir, `CODERIG_SANDBOX_PRETEND_MISSING=landlock`): on a kernel
/// without Landlock a step under `enforce` fails with `unavailable` and
/// starts nothing, one under `auto` (its own, or the registry's) runs and
/// its outcome and its `step_updated` say it ran unconfined. Writes
/// `checked` at the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pretend_missing_child_body() {
    let Some(scratch) = std::env::var_os("FLOW_ENGINE_PRETEND") else {
        return;
    };
    let w = world().await;
    let yaml = r#"
steps:
  - {id: strict, kind: command, cwd: '{{ input.dir }}', shell: "touch strict-ran"}
  - {id: lenient, kind: command, cwd: '{{ input.dir }}', shell: "touch lenient-ran", sandbox: {mode: auto}}
"#;
    let view = w.run(yaml).await;
    assert_eq!(view.status, RunStatus::Failed, "{view:#?}");
    let strict = step(&view, "strict");
    assert_eq!(strict.status, StepStatus::Failed, "{strict:#?}");
    let error = strict.error.as_ref().unwrap();
    assert_eq!(error["kind"], json!("unavailable"), "{error}");
    assert!(
        error["missing"]
            .as_str()
            .unwrap()
            .contains("filesystem not confined"),
        "{error}"
    );
    assert!(
        !w.file("strict-ran").exists(),
        "enforce started the command"
    );
    assert!(strict.attempts[0].sandbox.is_none(), "{strict:#?}");

    let lenient = step(&view, "lenient");
    assert_eq!(lenient.status, StepStatus::Done, "{lenient:#?}");
    assert!(w.file("lenient-ran").exists());
    let report = lenient.attempts[0].sandbox.as_ref().unwrap();
    assert_eq!(report.mode, SandboxMode::Auto);
    assert!(!report.confined, "{report:?}");
    assert_eq!(report.filesystem, Enforcer::None);
    assert!(
        report
            .unenforced
            .iter()
            .any(|u| u.contains("filesystem not confined")),
        "{report:?}"
    );
    // The stored `step_updated` of its ending says so; the running one
    // (before the sandbox was prepared) and the strict step's do not.
    let events = step_events(&w, &view.id, "lenient").await;
    let done = events
        .iter()
        .find(|e| e["status"] == json!("done"))
        .unwrap();
    let note = done["sandbox"].as_str().unwrap();
    assert!(note.starts_with("auto: filesystem unconfined"), "{note}");
    assert!(
        note.contains("not enforced: filesystem not confined"),
        "{note}"
    );
    for e in events.iter().filter(|e| e["status"] != json!("done")) {
        assert!(e.get("sandbox").is_none(), "{e}");
    }
    for e in step_events(&w, &view.id, "strict").await {
        assert!(e.get("sandbox").is_none(), "{e}");
    }
    w.shutdown().await;

    // With the registry's mode `auto`, a step that states none runs too.
    let w = world_with(&[], SandboxMode::Auto).await;
    let view = w
        .run("steps:\n  - {id: plain, kind: command, argv: [echo, ran]}\n")
        .await;
    assert_eq!(view.status, RunStatus::Completed, "{view:#?}");
    let report = step(&view, "plain").attempts[0].sandbox.clone().unwrap();
    assert_eq!((report.mode, report.confined), (SandboxMode::Auto, false));
    w.shutdown().await;
    std::fs::write(PathBuf::from(scratch).join("checked"), b"ok").unwrap();
}

#[test]
fn on_a_kernel_without_landlock_enforce_refuses_the_step_and_auto_says_it_ran_unconfined() {
    let dir = tempfile::tempdir().unwrap();
    let out = procs::child_test("sandbox::pretend_missing_child_body")
        .env("FLOW_ENGINE_PRETEND", dir.path())
        .env("CODERIG_SANDBOX_PRETEND_MISSING", "landlock")
        .output()
        .unwrap();
    procs::passed(out);
    assert_eq!(std::fs::read(dir.path().join("checked")).unwrap(), b"ok");
}
