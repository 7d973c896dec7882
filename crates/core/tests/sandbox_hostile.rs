//! The sandbox against hostile programs: real processes on the real kernel
//! (Landlock, user, PID and network namespaces). Each escape is refused or
//! contained, the files outside are byte-for-byte unchanged, the listener
//! sees no connection, and no process remains — also after SIGKILL of the
//! process that started the sandbox (a child of this test binary).

#![cfg(target_os = "linux")]

mod procs;
use coderig::agent::process::{run_process, Ended, Limits, ProcessExit, ProcessSpec};
use coderig::sandbox::{
    Confinement, Enforcer, NetworkPolicy, ResourceLimits, SandboxMode, SandboxPolicy,
};
use procs::{processes_with, wait_none_with};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// A workdir (writable), a directory outside it with a victim file, and a
/// fake home with credentials.
struct Scene {
    _root: tempfile::TempDir,
    work: PathBuf,
    outside: PathBuf,
    home: PathBuf,
}

const VICTIM: &[u8] = b"precious bytes\n\x00\xff end";
const KEY: &str = "-----BEGIN OPENSSH PRIVATE KEY----- secret";

fn scene() -> Scene {
    let root = tempfile::tempdir().unwrap();
    let work = root.path().join("work");
    let outside = root.path().join("outside");
    let home = root.path().join("home");
    for dir in [
        &work,
        &outside,
        &home.join(".ssh"),
        &home.join(".config/gcloud"),
    ] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(outside.join("victim"), VICTIM).unwrap();
    std::fs::write(work.join("mine"), b"mine\n").unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), KEY).unwrap();
    std::fs::write(home.join(".config/gcloud/token"), KEY).unwrap();
    std::fs::write(home.join(".bashrc"), b"# rc\n").unwrap();
    Scene {
        _root: root,
        work: work.canonicalize().unwrap(),
        outside: outside.canonicalize().unwrap(),
        home: home.canonicalize().unwrap(),
    }
}

impl Scene {
    fn policy(&self) -> SandboxPolicy {
        SandboxPolicy::new(Some(&self.home)).with_writable(&self.work)
    }

    fn outside_unchanged(&self) {
        assert_eq!(std::fs::read(self.outside.join("victim")).unwrap(), VICTIM);
        let names: Vec<_> = std::fs::read_dir(&self.outside)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, ["victim"], "something appeared outside the workdir");
    }
}

struct Run {
    exit: ProcessExit,
    out: String,
}

async fn run_in(
    confinement: Confinement,
    cwd: &Path,
    script: &str,
    limits: Limits,
    cancel: &CancellationToken,
) -> Run {
    let spec = ProcessSpec {
        program: "sh".into(),
        args: vec!["-c".into(), format!("exec 2>&1\n{script}")],
        cwd: Some(cwd.to_path_buf()),
        sandbox: Some(Arc::new(confinement)),
        ..ProcessSpec::default()
    };
    let mut out = String::new();
    let exit = run_process(&spec, &limits, cancel, |line| {
        out.push_str(line);
        out.push('\n');
        true
    })
    .await
    .expect("the sandboxed program starts");
    Run { exit, out }
}

async fn run(policy: &SandboxPolicy, cwd: &Path, script: &str) -> Run {
    let confinement = Confinement::prepare(policy, SandboxMode::Enforce)
        .expect("this kernel has Landlock and user namespaces");
    let limits = Limits {
        timeout: Some(Duration::from_secs(60)),
        kill_grace: Duration::from_millis(500),
        ..Limits::default()
    };
    run_in(confinement, cwd, script, limits, &CancellationToken::new()).await
}

/// Each line of `out` that starts with `label:` says `ok` or `refused`.
fn verdict(out: &str, label: &str) -> String {
    out.lines()
        .find_map(|l| l.strip_prefix(&format!("{label}: ")))
        .unwrap_or_else(|| panic!("no line for {label} in:\n{out}"))
        .to_owned()
}

/// `label: ok` when `cmd` succeeds, else `label: refused`.
fn attempt(label: &str, cmd: &str) -> String {
    format!("if {cmd} 2>/dev/null; then echo '{label}: ok'; else echo '{label}: refused'; fi\n")
}

#[tokio::test]
async fn writes_out_of_the_workdir_are_refused_every_way() {
    let s = scene();
    let o = s.outside.display();
    let mut script = String::new();
    script += &attempt("inside", "echo new > ./created && echo more >> ./mine");
    script += &attempt("overwrite", &format!("echo pwned > '{o}/victim'"));
    script += &attempt("append", &format!("echo pwned >> '{o}/victim'"));
    script += &attempt("create", &format!("echo pwned > '{o}/new'"));
    script += &attempt("truncate", &format!("truncate -s 0 '{o}/victim'"));
    script += &attempt("remove", &format!("rm -f '{o}/victim'"));
    script += &attempt("rename-out", &format!("mv ./mine '{o}/moved'"));
    script += &attempt("rename-in", &format!("mv '{o}/victim' ./stolen"));
    script += &attempt("hardlink-out", &format!("ln ./created '{o}/link'"));
    script += &attempt(
        "hardlink-in",
        &format!("ln '{o}/victim' ./hard && echo pwned >> ./hard"),
    );
    script += &attempt(
        "symlink-out",
        &format!("ln -s '{o}/victim' ./sym && echo pwned > ./sym"),
    );
    script += &attempt(
        "proc-root",
        &format!("echo pwned > /proc/self/root'{o}/victim'"),
    );
    script += &attempt("mkdir", &format!("mkdir '{o}/dir'"));
    script += &attempt("chmod", &format!("chmod 777 '{o}/victim'"));
    script += &attempt("tmp", "echo t > \"$TMPDIR/t\" && test -s \"$TMPDIR/t\"");
    script += &attempt("system-tmp", "echo t > /tmp/coderig-sandbox-escape-$$");
    script += &attempt(
        "home",
        &format!("echo pwned >> '{}/.bashrc'", s.home.display()),
    );
    let r = run(&s.policy(), &s.work, &script).await;
    assert_eq!(verdict(&r.out, "inside"), "ok", "{}", r.out);
    assert_eq!(verdict(&r.out, "tmp"), "ok", "{}", r.out);
    for label in [
        "overwrite",
        "append",
        "create",
        "truncate",
        "remove",
        "rename-out",
        "rename-in",
        "hardlink-out",
        "hardlink-in",
        "symlink-out",
        "proc-root",
        "mkdir",
        "system-tmp",
        "home",
    ] {
        assert_eq!(verdict(&r.out, label), "refused", "{label}:\n{}", r.out);
    }
    s.outside_unchanged();
    assert_eq!(std::fs::read(s.home.join(".bashrc")).unwrap(), b"# rc\n");
    assert!(s.work.join("created").exists());
    assert_eq!(std::fs::read(s.work.join("mine")).unwrap(), b"mine\nmore\n");
    // chmod is metadata, which Landlock does not govern: the bytes stay.
    let _ = verdict(&r.out, "chmod");
}

#[tokio::test]
async fn credential_stores_are_unreadable_and_the_rest_readable() {
    let s = scene();
    let h = s.home.display();
    let mut script = String::new();
    script += &attempt("ssh-key", &format!("cat '{h}/.ssh/id_ed25519'"));
    script += &attempt("gcloud", &format!("cat '{h}/.config/gcloud/token'"));
    script += &attempt("ssh-copy", &format!("cp '{h}/.ssh/id_ed25519' ./k"));
    script += &attempt("bashrc", &format!("cat '{h}/.bashrc' >/dev/null"));
    script += &attempt(
        "system",
        "cat /etc/passwd >/dev/null && ls /usr/bin >/dev/null",
    );
    script += &attempt("list-home", &format!("ls -a '{h}' >/dev/null"));
    let r = run(&s.policy(), &s.work, &script).await;
    assert!(!r.out.contains("BEGIN OPENSSH"), "{}", r.out);
    assert_eq!(verdict(&r.out, "ssh-key"), "refused", "{}", r.out);
    assert_eq!(verdict(&r.out, "gcloud"), "refused", "{}", r.out);
    assert_eq!(verdict(&r.out, "ssh-copy"), "refused", "{}", r.out);
    assert_eq!(verdict(&r.out, "bashrc"), "ok", "{}", r.out);
    assert_eq!(verdict(&r.out, "system"), "ok", "{}", r.out);
    assert_eq!(verdict(&r.out, "list-home"), "ok", "{}", r.out);
    assert!(!s.work.join("k").exists() || std::fs::read(s.work.join("k")).unwrap().is_empty());

    // Listed as readable, a store is readable again.
    let mut policy = s.policy();
    policy.readable.push(s.home.join(".ssh"));
    let r = run(
        &policy,
        &s.work,
        &attempt("ssh-key", &format!("cat '{h}/.ssh/id_ed25519' >/dev/null")),
    )
    .await;
    assert_eq!(verdict(&r.out, "ssh-key"), "ok", "{}", r.out);
}

/// A listener on the host's loopback that counts the connections it sees.
fn listener() -> (TcpListener, u16) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let port = l.local_addr().unwrap().port();
    (l, port)
}

fn connections(l: &TcpListener) -> usize {
    let mut n = 0;
    while l.accept().is_ok() {
        n += 1;
    }
    n
}

const CONNECT: &str = "python3 -c 'import socket,sys; socket.create_connection((\"127.0.0.1\", int(sys.argv[1])), timeout=5)'";

#[tokio::test]
async fn the_network_is_denied_but_its_own_loopback_works() {
    let s = scene();
    let (l, port) = listener();
    let mut script = String::new();
    script += &attempt("host-listener", &format!("{CONNECT} {port}"));
    script += &attempt(
        "resolve",
        "python3 -c 'import socket; socket.getaddrinfo(\"example.com\", 80)'",
    );
    script += &attempt(
        "outside-ip",
        "python3 -c 'import socket; socket.create_connection((\"1.1.1.1\", 53), timeout=3)'",
    );
    script += &attempt(
        "own-loopback",
        "python3 -c 'import socket; s=socket.socket(); s.bind((\"127.0.0.1\",0)); s.listen(); c=socket.create_connection(s.getsockname(), timeout=5)'",
    );
    let policy = s.policy();
    assert_eq!(policy.network, NetworkPolicy::Deny);
    let r = run(&policy, &s.work, &script).await;
    assert_eq!(verdict(&r.out, "host-listener"), "refused", "{}", r.out);
    assert_eq!(verdict(&r.out, "resolve"), "refused", "{}", r.out);
    assert_eq!(verdict(&r.out, "outside-ip"), "refused", "{}", r.out);
    assert_eq!(verdict(&r.out, "own-loopback"), "ok", "{}", r.out);
    assert_eq!(connections(&l), 0, "the host's listener saw a connection");
}

#[tokio::test]
async fn loopback_ports_reach_only_the_listed_ports() {
    let s = scene();
    let (allowed, allowed_port) = listener();
    let (other, other_port) = listener();
    let policy = s
        .policy()
        .with_network(NetworkPolicy::Ports(vec![allowed_port]));
    let mut script = String::new();
    script += &attempt("allowed", &format!("{CONNECT} {allowed_port}"));
    script += &attempt("other", &format!("{CONNECT} {other_port}"));
    let r = run(&policy, &s.work, &script).await;
    assert_eq!(verdict(&r.out, "allowed"), "ok", "{}", r.out);
    assert_eq!(verdict(&r.out, "other"), "refused", "{}", r.out);
    assert_eq!(connections(&allowed), 1);
    assert_eq!(connections(&other), 0, "the unlisted port saw a connection");
}

/// A long sleeper whose command line carries `marker`.
fn sleeper(marker: &str) -> String {
    format!("python3 -c 'import time; time.sleep(600)' {marker}")
}

/// A shell that leaves daemons behind: a `setsid` one, a double-forked one
/// and a plain background one, each a sleeper under `marker`.
fn daemons(marker: &str) -> String {
    let sleeper = sleeper(marker);
    format!(
        "setsid {sleeper} </dev/null >/dev/null 2>&1 &\n\
         ( ( {sleeper} </dev/null >/dev/null 2>&1 & ) & )\n\
         {sleeper} </dev/null >/dev/null 2>&1 &\n\
         sleep 0.5; echo spawned\n"
    )
}

#[tokio::test]
async fn daemons_die_with_the_program() {
    let s = scene();
    let marker = format!("coderig-daemon-{}", std::process::id());
    let script = format!(
        "{}echo \"daemons: $(pgrep -c -f {marker})\"\n",
        daemons(&marker)
    );
    let r = run(&s.policy(), &s.work, &script).await;
    assert!(r.out.contains("spawned"), "{}", r.out);
    assert_eq!(r.exit.exit_code, Some(0));
    // The daemons ran before the program ended (pgrep also counts the
    // shells whose script names the marker).
    let seen: usize = verdict(&r.out, "daemons").parse().unwrap();
    assert!(seen >= 3, "{}", r.out);
    assert_eq!(
        wait_none_with(&marker, Duration::from_secs(5)),
        Vec::<u32>::new()
    );
}

/// Runs as a child of this test binary (`SANDBOX_KILL_CHILD` set): starts
/// a sandboxed program that leaves daemons, then waits to be SIGKILLed.
#[tokio::test]
async fn kill9_child_body() {
    let Ok(marker) = std::env::var("SANDBOX_KILL_CHILD") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let policy = SandboxPolicy::new(None).with_writable(work.path());
    let script = format!(
        "{}echo ready\nexec {}\n",
        daemons(&marker),
        sleeper(&marker)
    );
    let confinement = Confinement::prepare(&policy, SandboxMode::Enforce).unwrap();
    run_in(
        confinement,
        work.path(),
        &script,
        Limits::default(),
        &CancellationToken::new(),
    )
    .await;
}

#[test]
fn nothing_survives_a_sigkill_of_the_process_that_started_it() {
    let marker = format!("coderig-kill9-{}", std::process::id());
    let mut child = procs::child_test("kill9_child_body")
        .env("SANDBOX_KILL_CHILD", &marker)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Four marked processes: three daemons and the program itself.
    let until = Instant::now() + Duration::from_secs(30);
    while processes_with(&marker).len() < 4 {
        assert!(
            Instant::now() < until,
            "the sandboxed daemons never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap(); // SIGKILL: nobody gets to clean up.
    child.wait().unwrap();
    assert_eq!(
        wait_none_with(&marker, Duration::from_secs(10)),
        Vec::<u32>::new(),
        "processes outlived a SIGKILL of their starter"
    );
}

#[tokio::test]
async fn limits_contain_a_temp_dir_filler_and_a_fork_bomb() {
    let s = scene();
    let mut policy = s.policy();
    policy.limits = ResourceLimits {
        file_size: Some(1 << 20),
        processes: Some(32),
        ..Default::default()
    };
    let script = "head -c 8000000 /dev/zero > \"$TMPDIR/fill\"; echo \"fill: $(stat -c %s \"$TMPDIR/fill\")\"\n\
                  n=0; for i in $(seq 1 100); do sleep 5 & n=$((n+1)); done 2>/dev/null; echo spawned $n\n\
                  echo \"tmp: $TMPDIR\"";
    let r = run(&policy, &s.work, script).await;
    let size: u64 = verdict(&r.out, "fill").parse().unwrap();
    assert!(
        size <= 1 << 20,
        "the file grew past the limit: {size}\n{}",
        r.out
    );
    let alive = processes_with("sleep 5").len();
    assert!(
        alive <= 32,
        "{alive} sleeps ran under a limit of 32 processes"
    );
    let tmp = PathBuf::from(verdict(&r.out, "tmp"));
    assert!(tmp.starts_with(std::env::temp_dir()), "{}", tmp.display());
    assert!(
        !tmp.exists(),
        "the private temp dir outlived its process tree"
    );
}

#[tokio::test]
async fn endings_are_the_programs_own() {
    let s = scene();
    let r = run(&s.policy(), &s.work, "exit 3").await;
    assert_eq!((r.exit.exit_code, r.exit.signal), (Some(3), None));
    let r = run(&s.policy(), &s.work, "kill -KILL $$").await;
    assert_eq!((r.exit.exit_code, r.exit.signal), (None, Some(9)));

    // Cancel: SIGTERM reaches the program (its trap runs), not just the
    // scaffolding around it.
    let confinement = Confinement::prepare(&s.policy(), SandboxMode::Enforce).unwrap();
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        trigger.cancel();
    });
    let limits = Limits {
        kill_grace: Duration::from_secs(20),
        ..Limits::default()
    };
    let r = run_in(
        confinement,
        &s.work,
        "trap 'echo terminated > ./term; exit 0' TERM; echo ready; while :; do sleep 0.1; done",
        limits,
        &cancel,
    )
    .await;
    assert_eq!(r.exit.ended, Ended::Cancelled);
    assert_eq!(
        std::fs::read_to_string(s.work.join("term")).unwrap(),
        "terminated\n"
    );
}

#[test]
fn the_report_says_what_is_enforced() {
    let s = scene();
    let c = Confinement::prepare(&s.policy(), SandboxMode::Enforce).unwrap();
    let r = c.report();
    assert!(r.confined, "{r:?}");
    assert!(r.landlock_abi.unwrap() >= 3);
    assert_eq!(r.filesystem, Enforcer::Landlock);
    assert_eq!(r.network, "deny");
    assert_eq!(r.network_enforced_by, Enforcer::Namespace);
    assert_eq!(r.processes, Enforcer::Namespace);
    assert!(r.writable.contains(&s.work));
    assert!(r.writable.contains(&c.tmp_dir().unwrap().to_path_buf()));
    assert!(r.hidden.contains(&s.home.join(".ssh")));
    assert!(r.unenforced.is_empty());
    let off = Confinement::prepare(&s.policy(), SandboxMode::Off).unwrap();
    assert!(!off.report().confined);
    assert_eq!(off.report().mode, SandboxMode::Off);
    assert!(off.tmp_dir().is_none());
}

#[tokio::test]
async fn read_roots_narrow_what_is_readable() {
    let s = scene();
    std::fs::write(s.outside.join("notes"), "private").unwrap();
    let mut policy = s.policy();
    // The toolchain's directories stay readable so `sh` and `cat` run.
    policy.read_roots = ["/usr", "/bin", "/lib", "/lib64", "/etc"]
        .iter()
        .map(PathBuf::from)
        .filter(|p| p.exists())
        .collect();
    policy.read_roots.push(s.work.clone());
    let mut script = String::new();
    script += &attempt("outside", &format!("cat '{}/notes'", s.outside.display()));
    script += &attempt("inside", "cat ./mine >/dev/null");
    let r = run(&policy, &s.work, &script).await;
    assert_eq!(verdict(&r.out, "outside"), "refused", "{}", r.out);
    assert_eq!(verdict(&r.out, "inside"), "ok", "{}", r.out);
    assert!(!r.out.contains("private"));
}

#[tokio::test]
async fn a_size_limited_temp_dir_stops_a_filler_of_many_small_files() {
    let s = scene();
    let mut policy = s.policy();
    // No per-file limit: 40 files of 256 KiB each stay under any, so only
    // the temp dir's own size can stop them.
    policy.limits.tmp_size = Some(2 << 20);
    let script = "for i in $(seq 1 40); do head -c 262144 /dev/zero > \"$TMPDIR/f$i\" || { echo \"stopped at $i\"; break; }; done\n\
                  echo \"used: $(du -sk \"$TMPDIR\" | cut -f1)\"\n\
                  echo \"tmp: $TMPDIR\"\n\
                  echo ok > ./still-writable";
    let r = run(&policy, &s.work, script).await;
    assert!(r.out.contains("No space left on device"), "{}", r.out);
    assert!(r.out.contains("stopped at"), "{}", r.out);
    let used_kib: u64 = verdict(&r.out, "used").parse().unwrap();
    assert!(
        used_kib <= 2 << 10,
        "the temp dir grew past its size: {used_kib} KiB\n{}",
        r.out
    );
    // The filler's bytes lived in its own tmpfs: the host's directory under
    // the same path never saw them, and is gone afterwards.
    let tmp = PathBuf::from(verdict(&r.out, "tmp"));
    assert!(
        !tmp.exists(),
        "the private temp dir outlived its process tree"
    );
    assert_eq!(
        std::fs::read_to_string(s.work.join("still-writable")).unwrap(),
        "ok\n"
    );
    let confinement = Confinement::prepare(&policy, SandboxMode::Enforce).unwrap();
    assert_eq!(confinement.report().limits.tmp_size, Some(2 << 20));
}
