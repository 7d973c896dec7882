//! The oracle under the sandbox, on the real kernel: a hostile suite contained, the network opt-in, daemons ended, a kernel without Landlock.

use super::*;

/// A listener on the host's loopback, owned by the test, that counts the
/// connections it accepted.
fn listener() -> (std::net::TcpListener, u16) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let port = l.local_addr().unwrap().port();
    (l, port)
}

fn connections(l: &std::net::TcpListener) -> usize {
    let mut n = 0;
    while l.accept().is_ok() {
        n += 1;
    }
    n
}

/// The Python interpreter itself (not a version manager's shim, which
/// looks for its versions under `$HOME`).
fn python() -> String {
    let out = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 runs");
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// A shell test that tries each escape in `attempts` (`(label, command)`),
/// prints `label: ok` or `label: refused: <the error>`, and fails when
/// any was refused.
fn hostile_test(attempts: &[(&str, String)]) -> String {
    let mut script = String::from("#!/bin/sh\nstatus=0\n");
    for (label, command) in attempts {
        script += &format!("{label}() {{\n    {command}\n}}\n");
    }
    let labels: Vec<&str> = attempts.iter().map(|(l, _)| *l).collect();
    script += &format!(
        "for t in {}; do\n    if msg=$($t 2>&1); then echo \"$t: ok\"; else echo \"$t: refused: $msg\"; status=1; fi\ndone\nexit $status\n",
        labels.join(" ")
    );
    script
}

/// The command of a hostile test that connects to `port` on the host's
/// loopback.
fn connect(python: &str, port: u16) -> String {
    format!("'{python}' -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5)\"")
}

/// What `label` came to in the output of [`hostile_test`].
fn verdict<'a>(out: &'a str, label: &str) -> &'a str {
    out.lines()
        .find_map(|l| l.strip_prefix(&format!("{label}: ")))
        .unwrap_or_else(|| panic!("no line for {label} in:\n{out}"))
}

/// A contestant's patch that adds `tests/test_hostile.sh` (and fixes calc).
fn hostile_patch(ws: &dyn Workspace, fx: &Fixture, base: &str, test: &str) -> Patch {
    let wt = ws
        .create(&fx.repo, &Base::Ref(base.to_owned()), &name("hostile"))
        .unwrap();
    write(&wt.path, "calc.sh", CALC_FIXED);
    write(&wt.path, "tests/test_hostile.sh", test);
    let patch = ws.diff(&wt).unwrap();
    ws.unlock(&wt).unwrap();
    ws.remove(&wt, &RemoveProof::Discard).unwrap();
    patch
}

/// Every file under `dir` with its bytes (symlinks by their target).
fn tree(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                out.insert(path.clone(), b"<dir>".to_vec());
                stack.push(path);
            } else if kind.is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                out.insert(path, target.to_string_lossy().as_bytes().to_vec());
            } else {
                out.insert(path.clone(), std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

/// Removes a file an escape might have created, whatever the test's outcome.
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

const FAKE_KEY: &str = "-----BEGIN OPENSSH PRIVATE KEY----- coderig fake credential";

/// What the parent of [`hostile_suite_child`] hands it, as JSON in
/// `CODERIG_ORACLE_HOSTILE`.
#[derive(serde::Serialize, serde::Deserialize)]
struct HostileScene {
    port: u16,
    outside: PathBuf,
    real_home_file: PathBuf,
    python: String,
}

/// Runs as a child of this test binary (`CODERIG_ORACLE_HOSTILE` set, and
/// `HOME` a fake home with a credential store): the oracle runs a patch
/// whose suite tries to escape, and the evidence must say it failed.
#[tokio::test]
async fn hostile_suite_child() {
    let Ok(scene) = std::env::var("CODERIG_ORACLE_HOSTILE") else {
        return;
    };
    let scene: HostileScene = serde_json::from_str(&scene).unwrap();
    let home = coderig::sandbox::home_dir().expect("HOME is set");
    let test = hostile_test(&[
        (
            "home_write",
            format!(
                "echo pwned > \"$HOME/coderig-oracle-escape-{}\"",
                std::process::id()
            ),
        ),
        (
            "real_home_write",
            format!("echo pwned > '{}'", scene.real_home_file.display()),
        ),
        (
            "outside_write",
            format!("echo pwned >> '{}/victim'", scene.outside.display()),
        ),
        (
            "outside_create",
            format!("echo pwned > '{}/new'", scene.outside.display()),
        ),
        ("credential", "cat \"$HOME/.ssh/id_ed25519\"".to_owned()),
        ("connect", connect(&scene.python, scene.port)),
        ("checkout_write", "echo mine > ./scratch.txt".to_owned()),
        (
            "tmp_write",
            "echo mine > \"$TMPDIR/scratch.txt\"".to_owned(),
        ),
    ]);
    let (fx, base) = fixture();
    let ws: Arc<dyn Workspace> = Arc::new(fx.workspace());
    let patch = hostile_patch(ws.as_ref(), &fx, &base, &test);
    let spec = OracleSpec {
        repro: Some("sh tests/test_add.sh".to_owned()),
        suite: Some("sh tests/test_hostile.sh".to_owned()),
        timeout: Duration::from_secs(60),
        network: NetworkPolicy::Deny,
    };
    let run = run_oracle(
        ws,
        &fx.repo,
        &base,
        Some(&patch),
        &spec,
        SandboxMode::Enforce,
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    assert!(run.patch_applied, "{run:?}");
    assert!(passed(&run.repro), "{run:?}");
    let suite = run.suite.as_ref().unwrap();
    let out = &suite.output_tail;
    // The suite failed, and its tail says what was refused and why.
    assert_eq!(suite.exit_code, Some(1), "{suite:?}");
    assert!(!suite.timed_out);
    for label in [
        "home_write",
        "real_home_write",
        "outside_write",
        "outside_create",
    ] {
        let v = verdict(out, label);
        assert!(
            v.starts_with("refused:") && v.contains("Permission denied"),
            "{label}: {v}\n{out}"
        );
    }
    let v = verdict(out, "credential");
    assert!(
        v.starts_with("refused:") && v.contains("Permission denied"),
        "{v}"
    );
    assert!(
        !out.contains("BEGIN OPENSSH"),
        "the credential leaked:\n{out}"
    );
    let v = verdict(out, "connect");
    assert!(
        v.starts_with("refused:") && out.contains("Connection refused"),
        "{v}\n{out}"
    );
    // What it may write, it writes.
    assert_eq!(verdict(out, "checkout_write"), "ok", "{out}");
    assert_eq!(verdict(out, "tmp_write"), "ok", "{out}");
    let report = suite.sandbox.as_ref();
    assert_confined(report, "deny");
    assert!(
        report.unwrap().hidden.contains(&home.join(".ssh")),
        "{report:?}"
    );
    assert_confined(run.repro.as_ref().unwrap().sandbox.as_ref(), "deny");
    // Graded: the repro passes, the suite fails.
    let evidence = run.into_evidence();
    assert_eq!(
        tier(&evidence, spec.commands(), None),
        EvidenceTier::Partial
    );
    assert!(!home
        .join(format!("coderig-oracle-escape-{}", std::process::id()))
        .exists());
    assert_clean(&fx);
}

#[test]
fn a_hostile_suite_is_contained_and_its_failure_is_the_evidence() {
    let scratch = tempfile::tempdir().unwrap();
    let root = scratch.path().canonicalize().unwrap();
    // A fake home with a credential store, for the child's $HOME.
    let fake_home = root.join("home");
    std::fs::create_dir_all(fake_home.join(".ssh")).unwrap();
    std::fs::write(fake_home.join(".ssh/id_ed25519"), FAKE_KEY).unwrap();
    std::fs::write(fake_home.join(".bashrc"), "# rc\n").unwrap();
    let outside = root.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("victim"), "precious\n").unwrap();
    // The real home of the user running the tests.
    let real_home = coderig::sandbox::home_dir().expect("HOME is set");
    let real_home_file = real_home.join(format!("coderig-oracle-escape-{}", std::process::id()));
    assert!(!real_home_file.exists(), "{}", real_home_file.display());
    let _guard = RemoveOnDrop(real_home_file.clone());
    let (l, port) = listener();
    let home_before = tree(&fake_home);
    let outside_before = tree(&outside);
    let scene = HostileScene {
        port,
        outside: outside.clone(),
        real_home_file: real_home_file.clone(),
        python: python(),
    };

    let out = procs::child_test("sandbox::hostile_suite_child")
        .env(
            "CODERIG_ORACLE_HOSTILE",
            serde_json::to_string(&scene).unwrap(),
        )
        .env("HOME", &fake_home)
        .output()
        .unwrap();
    procs::passed(out);
    assert!(
        !real_home_file.exists(),
        "the suite wrote into the user's home"
    );
    assert_eq!(tree(&fake_home), home_before, "the home changed");
    assert_eq!(tree(&outside), outside_before, "the outside folder changed");
    assert_eq!(connections(&l), 0, "the host's listener saw a connection");
}

#[tokio::test]
async fn with_network_allow_the_suite_reaches_the_host() {
    let (fx, base) = fixture();
    let ws: Arc<dyn Workspace> = Arc::new(fx.workspace());
    let (l, port) = listener();
    let test = hostile_test(&[("connect", connect(&python(), port))]);
    let patch = hostile_patch(ws.as_ref(), &fx, &base, &test);
    let spec = OracleSpec {
        repro: None,
        suite: Some("sh tests/test_hostile.sh".to_owned()),
        timeout: Duration::from_secs(60),
        network: NetworkPolicy::Allow,
    };
    let run = run_oracle(
        ws,
        &fx.repo,
        &base,
        Some(&patch),
        &spec,
        SandboxMode::Enforce,
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    let suite = run.suite.unwrap();
    assert!(suite.passed(), "{suite:?}");
    assert_eq!(verdict(&suite.output_tail, "connect"), "ok");
    assert_confined(suite.sandbox.as_ref(), "allow");
    assert_eq!(connections(&l), 1);
    assert_clean(&fx);
}

/// Shell lines that leave daemons behind, each a sleeper whose command line
/// carries `marker`: one `setsid`, one double-forked; each drops a file
/// `<marker>.<pid>` in the checkout, and once both did, the script prints
/// `daemons: N` with their count.
fn daemons(python: &str, marker: &str) -> String {
    let sleeper = format!(
        "'{python}' -c 'import os, time; open(\"{marker}.%d\" % os.getpid(), \"w\").close(); time.sleep(600)' {marker}"
    );
    format!(
        "setsid {sleeper} </dev/null >/dev/null 2>&1 &\n\
         ( ( {sleeper} </dev/null >/dev/null 2>&1 & ) & )\n\
         for i in $(seq 200); do n=$(ls {marker}.* 2>/dev/null | wc -l); [ \"$n\" -ge 2 ] && break; sleep 0.05; done\n\
         echo \"daemons: $n\"\n"
    )
}

#[tokio::test]
async fn the_timeout_and_a_cancel_end_a_sandboxed_tree_daemons_included() {
    let (fx, base) = fixture();
    let ws: Arc<dyn Workspace> = Arc::new(fx.workspace());
    let python = python();
    let marker = format!("coderig-oracle-daemon-{}", std::process::id());
    // The repro leaves its daemons and exits; the suite leaves its own and
    // hangs until the timeout.
    let spec = OracleSpec {
        repro: Some(daemons(&python, &format!("{marker}-repro"))),
        suite: Some(format!(
            "{}sleep 300\n",
            daemons(&python, &format!("{marker}-suite"))
        )),
        timeout: Duration::from_secs(6),
        network: NetworkPolicy::Deny,
    };
    let run = run_oracle(
        ws.clone(),
        &fx.repo,
        &base,
        None,
        &spec,
        SandboxMode::Enforce,
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    let repro = run.repro.unwrap();
    assert_eq!(repro.exit_code, Some(0), "{repro:?}");
    let suite = run.suite.unwrap();
    assert!(suite.timed_out, "{suite:?}");
    assert!(suite.output_tail.contains("timed out"), "{suite:?}");
    for record in [&repro, &suite] {
        // Both daemons ran.
        assert_eq!(verdict(&record.output_tail, "daemons"), "2", "{record:?}");
        assert_confined(record.sandbox.as_ref(), "deny");
    }
    assert_eq!(
        wait_none_with(&marker, Duration::from_secs(10)),
        Vec::<u32>::new(),
        "processes of the oracle outlived its commands"
    );
    assert_clean(&fx);

    // A cancel mid-suite ends its daemons too.
    let spec = OracleSpec {
        repro: None,
        suite: Some(format!(
            "{}sleep 300\n",
            daemons(&python, &format!("{marker}-cancel"))
        )),
        timeout: Duration::from_secs(300),
        network: NetworkPolicy::Deny,
    };
    let cancel = CancellationToken::new();
    let task = spawn_oracle(&ws, &fx, &base, &spec, SandboxMode::Enforce, &cancel);
    let deadline = Instant::now() + Duration::from_secs(60);
    // Both sleepers run (and the shell whose script names the marker).
    while processes_with(&format!("{marker}-cancel")).len() < 3 {
        assert!(Instant::now() < deadline, "the daemons never started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    cancel.cancel();
    let error = task.await.unwrap().unwrap_err();
    assert!(is_cancelled(&error), "{error:?}");
    assert_eq!(
        wait_none_with(&marker, Duration::from_secs(10)),
        Vec::<u32>::new(),
        "processes of a cancelled oracle run survived"
    );
    assert_clean(&fx);
}

/// Runs as a child of this test binary, with `CODERIG_ORACLE_NO_LANDLOCK`
/// and `CODERIG_SANDBOX_PRETEND_MISSING=landlock` set: a kernel without
/// Landlock, as the sandbox sees it.
#[tokio::test]
async fn no_landlock_child() {
    if std::env::var_os("CODERIG_ORACLE_NO_LANDLOCK").is_none() {
        return;
    }
    let (fx, base) = fixture();
    let ws: Arc<dyn Workspace> = Arc::new(fx.workspace());
    let marker = fx.scratch("marker").join("ran");
    let spec = OracleSpec {
        repro: Some(format!("touch '{}'", marker.display())),
        suite: Some("true".to_owned()),
        timeout: Duration::from_secs(30),
        network: NetworkPolicy::Deny,
    };
    let cancel = CancellationToken::new();
    // enforce: refused, before the command starts, the checkout removed.
    for patch in [None, Some(Patch::new(Vec::new(), Some(base.clone())))] {
        let e = run_oracle(
            ws.clone(),
            &fx.repo,
            &base,
            patch.as_ref(),
            &spec,
            SandboxMode::Enforce,
            &cancel,
        )
        .await
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unavailable, "{e:?}");
        assert!(
            e.message()
                .starts_with("the oracle's repro command cannot run sandboxed: ")
                && e.message().contains("Landlock"),
            "{}",
            e.message()
        );
        assert_eq!(e.details()["command"], "repro");
        assert!(
            e.details()["missing"]
                .as_str()
                .is_some_and(|m| m.contains("filesystem not confined")),
            "{e:?}"
        );
        assert!(!marker.exists(), "the command ran although refused");
        assert_clean(&fx);
    }
    let e = run_base(
        ws.clone(),
        &fx.repo,
        &base,
        &spec,
        SandboxMode::Enforce,
        &cancel,
    )
    .await
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e:?}");

    // auto: runs with what the kernel can do, and the report says what not.
    let run = run_oracle(
        ws.clone(),
        &fx.repo,
        &base,
        None,
        &spec,
        SandboxMode::Auto,
        &cancel,
    )
    .await
    .unwrap();
    let repro = run.repro.unwrap();
    assert!(repro.passed(), "{repro:?}");
    let r = repro.sandbox.unwrap();
    assert_eq!(r.mode, SandboxMode::Auto);
    assert!(!r.confined, "{r:?}");
    assert_eq!((r.landlock_abi, r.filesystem), (None, Enforcer::None));
    assert!(
        r.unenforced
            .iter()
            .any(|u| u.contains("filesystem not confined")),
        "{r:?}"
    );
    assert_eq!(r.network_enforced_by, Enforcer::Namespace);
    assert_eq!(r.processes, Enforcer::Namespace);
    // Unconfined files: the marker outside the checkout was written.
    assert!(marker.exists());
    assert_clean(&fx);
}

#[test]
fn under_enforce_a_kernel_without_landlock_is_a_refusal_and_auto_runs() {
    let out = procs::child_test("sandbox::no_landlock_child")
        .env("CODERIG_ORACLE_NO_LANDLOCK", "1")
        .env("CODERIG_SANDBOX_PRETEND_MISSING", "landlock")
        .output()
        .unwrap();
    procs::passed(out);
}
