//! Command steps under the sandbox, on the real kernel: writes confined to the cwd and TMPDIR, the network denied by default, overrides, limits, timeouts of sandboxed trees.

use super::*;

/// A cwd (`work/`, holding `mine`) beside `outside/` (holding `victim`),
/// canonical.
#[cfg(target_os = "linux")]
struct Scene {
    _tmp: tempfile::TempDir,
    work: PathBuf,
    outside: PathBuf,
}

#[cfg(target_os = "linux")]
const VICTIM: &[u8] = b"precious bytes\n\x00\xff end";

#[cfg(target_os = "linux")]
fn scene() -> Scene {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let (work, outside) = (base.join("work"), base.join("outside"));
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("victim"), VICTIM).unwrap();
    std::fs::write(work.join("mine"), b"mine\n").unwrap();
    Scene {
        _tmp: tmp,
        work,
        outside,
    }
}

#[cfg(target_os = "linux")]
impl Scene {
    /// `outside/` holds `victim`, byte for byte, and nothing else.
    fn outside_unchanged(&self) {
        assert_eq!(std::fs::read(self.outside.join("victim")).unwrap(), VICTIM);
        let names: Vec<String> = std::fs::read_dir(&self.outside)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, ["victim"], "something appeared outside the cwd");
    }
}

/// A line `label: ok` when `cmd` succeeds, else `label: refused`.
#[cfg(target_os = "linux")]
fn attempt(label: &str, cmd: &str) -> String {
    format!("if {cmd} 2>/dev/null; then echo '{label}: ok'; else echo '{label}: refused'; fi\n")
}

/// What the script said about `label`.
#[cfg(target_os = "linux")]
fn verdict<'a>(out: &'a CommandOutcome, label: &str) -> &'a str {
    let prefix = format!("{label}: ");
    out.stdout
        .lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .unwrap_or_else(|| panic!("no line for {label} in {out:?}"))
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_command_writes_only_in_its_cwd_and_tmpdir_and_the_outside_is_unchanged() {
    let s = scene();
    let o = s.outside.display();
    let mut script = String::new();
    script += &attempt("cwd", "echo new > ./created && echo more >> ./mine");
    script += &attempt("tmpdir", "echo t > \"$TMPDIR/t\" && test -s \"$TMPDIR/t\"");
    script += &attempt("overwrite", &format!("echo pwned > '{o}/victim'"));
    script += &attempt("append", &format!("echo pwned >> '{o}/victim'"));
    script += &attempt("create", &format!("echo pwned > '{o}/new'"));
    script += &attempt("remove", &format!("rm -f '{o}/victim'"));
    script += &attempt("rename-out", &format!("mv ./mine '{o}/moved'"));
    script += &attempt("escape-up", "echo pwned > ../outside/up");
    script += &attempt("system-tmp", "echo t > /tmp/coderig-flow-escape-$$");
    script += "echo \"tmp: $TMPDIR\"\n";
    let out = run(shell(&script, &s.work)).await;
    assert!(out.success(), "{out:?}");
    assert_eq!(verdict(&out, "cwd"), "ok");
    assert_eq!(verdict(&out, "tmpdir"), "ok");
    for label in [
        "overwrite",
        "append",
        "create",
        "remove",
        "rename-out",
        "escape-up",
        "system-tmp",
    ] {
        assert_eq!(verdict(&out, label), "refused", "{label}: {out:?}");
    }
    s.outside_unchanged();
    assert_eq!(std::fs::read(s.work.join("created")).unwrap(), b"new\n");
    assert_eq!(std::fs::read(s.work.join("mine")).unwrap(), b"mine\nmore\n");

    // The outcome says what was enforced: all of it, by the kernel.
    let report = out.sandbox.as_ref().expect("a report");
    let tmp = PathBuf::from(verdict(&out, "tmp"));
    assert_eq!(report.mode, SandboxMode::Enforce);
    assert!(report.confined, "{report:?}");
    assert!(report.unenforced.is_empty(), "{report:?}");
    assert!(report.landlock_abi.unwrap() >= 3, "{report:?}");
    assert_eq!(report.filesystem, coderig::sandbox::Enforcer::Landlock);
    assert_eq!(report.writable, [tmp.clone(), s.work.clone()]);
    assert_eq!(report.network, "deny");
    assert_eq!(
        report.network_enforced_by,
        coderig::sandbox::Enforcer::Namespace
    );
    assert_eq!(report.processes, coderig::sandbox::Enforcer::Namespace);
    assert!(!tmp.exists(), "the private TMPDIR outlived the command");
}

/// A listener on the host's loopback, owned by the test.
#[cfg(target_os = "linux")]
fn listener() -> (std::net::TcpListener, u16) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let port = l.local_addr().unwrap().port();
    (l, port)
}

/// The connections the listener has seen.
#[cfg(target_os = "linux")]
fn connections(l: &std::net::TcpListener) -> usize {
    std::iter::from_fn(|| l.accept().ok()).count()
}

#[cfg(target_os = "linux")]
const CONNECT: &str = "python3 -c 'import socket,sys; socket.create_connection((\"127.0.0.1\", int(sys.argv[1])), timeout=5)'";

#[cfg(target_os = "linux")]
#[tokio::test]
async fn the_network_is_denied_by_default_but_its_own_loopback_works_and_allow_opts_in() {
    let s = scene();
    let (l, port) = listener();
    let mut script = attempt("host", &format!("{CONNECT} {port}"));
    script += &attempt(
        "own-loopback",
        "python3 -c 'import socket; s=socket.socket(); s.bind((\"127.0.0.1\",0)); s.listen(); c=socket.create_connection(s.getsockname(), timeout=5)'",
    );
    let out = run(shell(&script, &s.work)).await;
    assert_eq!(verdict(&out, "host"), "refused", "{out:?}");
    assert_eq!(verdict(&out, "own-loopback"), "ok", "{out:?}");
    assert_eq!(connections(&l), 0, "the host's listener saw a connection");
    assert_eq!(out.sandbox.as_ref().unwrap().network, "deny");

    // `network: allow` reaches it.
    let allow = SandboxOverrides {
        network: Some("allow".parse().unwrap()),
        ..SandboxOverrides::default()
    };
    let request = shell(&attempt("host", &format!("{CONNECT} {port}")), &s.work)
        .with_sandbox(&allow, SandboxMode::Enforce);
    let out = run(request).await;
    assert_eq!(verdict(&out, "host"), "ok", "{out:?}");
    assert_eq!(connections(&l), 1);
    let report = out.sandbox.unwrap();
    assert_eq!(report.network, "allow");
    assert!(
        report.confined,
        "allow is the policy, fully enforced: {report:?}"
    );
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn overrides_widen_the_writable_paths_and_limits_apply() {
    let s = scene();
    let o = s.outside.display();
    let overrides = SandboxOverrides {
        writable: vec![s.outside.clone()],
        limits: coderig::sandbox::ResourceLimits {
            file_size: Some(1 << 20),
            ..Default::default()
        },
        ..SandboxOverrides::default()
    };
    let script = format!(
        "{}head -c 3000000 /dev/zero > ./big; echo \"big: $(stat -c %s ./big)\"\n",
        attempt("outside", &format!("echo granted > '{o}/granted'"))
    );
    let request = shell(&script, &s.work).with_sandbox(&overrides, SandboxMode::Enforce);
    let out = run(request).await;
    assert_eq!(verdict(&out, "outside"), "ok", "{out:?}");
    assert_eq!(
        std::fs::read(s.outside.join("granted")).unwrap(),
        b"granted\n"
    );
    let big: u64 = verdict(&out, "big").parse().unwrap();
    assert_eq!(big, 1 << 20, "the file grew past its limit: {out:?}");
    let report = out.sandbox.unwrap();
    assert_eq!(report.limits.file_size, Some(1 << 20));
    assert!(report.writable.contains(&s.outside), "{report:?}");
    assert!(report.writable.contains(&s.work), "{report:?}");
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_prepared_confinement_is_used_as_it_is() {
    let s = scene();
    let policy = default_policy(&s.work);
    let confinement =
        coderig::sandbox::Confinement::prepare(&policy, SandboxMode::Enforce).unwrap();
    let tmp = confinement.tmp_dir().unwrap().to_path_buf();
    let expected = confinement.report().clone();
    let mut request = shell("printf %s \"$TMPDIR\"", &s.work);
    request.sandbox = CommandSandbox::Prepared(std::sync::Arc::new(confinement));
    let out = run(request).await;
    assert_eq!(out.stdout, tmp.display().to_string(), "{out:?}");
    assert_eq!(out.sandbox, Some(expected));
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_sandboxed_hung_command_is_killed_at_its_timeout_with_every_descendant() {
    let s = scene();
    let marker = format!("coderig-flow-hang-{}", std::process::id());
    // A backgrounded sleeper, a `setsid` one and the hung leader, each
    // carrying the marker.
    let sleeper = format!("python3 -c 'import time; time.sleep(600)' {marker}");
    let script = format!(
        "{sleeper} </dev/null >/dev/null 2>&1 &\nsetsid {sleeper} </dev/null >/dev/null 2>&1 &\necho started\nexec {sleeper}\n"
    );
    let mut request = shell(&script, &s.work);
    request.timeout = Some(Duration::from_secs(3));
    let out = run(request).await;
    assert!(out.timed_out, "{out:?}");
    assert!(!out.success());
    assert_eq!(out.stdout, "started\n");
    assert!(out.sandbox.as_ref().unwrap().confined);
    // The PID namespace's init took every one of them with it.
    let mut left = processes_with(&marker);
    for _ in 0..200 {
        if left.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
        left = processes_with(&marker);
    }
    assert_eq!(left, Vec::<u32>::new(), "processes outlived the command");
}

/// Runs in a child of this test binary with `FLOW_COMMAND_PRETEND` set to a
/// scratch dir and `CODERIG_SANDBOX_PRETEND_MISSING=landlock`: `enforce`
/// refuses with `unavailable` and starts nothing; `auto` runs the command
/// and its report says what was not enforced. Writes `checked` at the end.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn pretend_missing_child_body() {
    let Some(dir) = std::env::var_os("FLOW_COMMAND_PRETEND") else {
        return;
    };
    let dir = PathBuf::from(dir);
    let err = run_command(shell("touch started", &dir), CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    assert!(err.message().contains("Landlock"), "{err}");
    assert!(
        err.details()["missing"]
            .as_str()
            .unwrap()
            .contains("filesystem not confined"),
        "{err}"
    );
    assert!(!dir.join("started").exists(), "enforce started the command");

    let request =
        shell("touch started", &dir).with_sandbox(&SandboxOverrides::default(), SandboxMode::Auto);
    let out = run(request).await;
    assert!(out.success(), "{out:?}");
    assert!(dir.join("started").exists());
    let report = out.sandbox.unwrap();
    assert_eq!(report.mode, SandboxMode::Auto);
    assert!(!report.confined, "{report:?}");
    assert_eq!(report.filesystem, coderig::sandbox::Enforcer::None);
    assert_eq!(report.landlock_abi, None);
    assert!(
        report
            .unenforced
            .iter()
            .any(|u| u.contains("filesystem not confined")),
        "{report:?}"
    );
    assert!(
        report.summary().contains("not enforced"),
        "{}",
        report.summary()
    );
    std::fs::write(dir.join("checked"), b"ok").unwrap();
}

#[cfg(target_os = "linux")]
#[test]
fn enforce_refuses_and_auto_says_so_on_a_kernel_without_landlock() {
    let dir = tempfile::tempdir().unwrap();
    let out = procs::child_test("sandbox::pretend_missing_child_body")
        .env("FLOW_COMMAND_PRETEND", dir.path())
        .env("CODERIG_SANDBOX_PRETEND_MISSING", "landlock")
        .output()
        .unwrap();
    procs::passed(out);
    assert_eq!(std::fs::read(dir.path().join("checked")).unwrap(), b"ok");
}
