//! `coderig sandbox -- CMD`, run as a process: what a policy allows and
//! refuses on the real kernel, the report it prints, its exit codes (the
//! command's own; 2 bad policy; 1 `enforce` cannot confine), and that
//! nothing the command started outlives it.

#![cfg(target_os = "linux")]

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs `coderig sandbox ARGS` in `cwd` with `HOME` set to `home`.
fn sandbox(cwd: &Path, home: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_coderig"));
    command
        .arg("sandbox")
        .args(args)
        .current_dir(cwd)
        .env("HOME", home)
        .env_remove("CODERIG_CONFIG")
        .env_remove("CODERIG_SANDBOX_PRETEND_MISSING")
        .stdin(Stdio::null());
    for (k, v) in env {
        command.env(k, v);
    }
    command.output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

struct Dirs {
    _root: tempfile::TempDir,
    work: std::path::PathBuf,
    home: std::path::PathBuf,
    outside: std::path::PathBuf,
}

fn dirs() -> Dirs {
    let root = tempfile::tempdir().unwrap();
    let work = root.path().join("work");
    let home = root.path().join("home");
    let outside = root.path().join("outside");
    for d in [&work, &home.join(".ssh"), &outside] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(home.join(".ssh/id_ed25519"), "SECRET KEY").unwrap();
    std::fs::write(outside.join("victim"), "keep me").unwrap();
    Dirs {
        work: work.canonicalize().unwrap(),
        home: home.canonicalize().unwrap(),
        outside: outside.canonicalize().unwrap(),
        _root: root,
    }
}

#[test]
fn a_policy_is_tried_and_reported() {
    let d = dirs();
    let script = format!(
        "echo inside > ./made; echo pwned > '{o}/victim'; cat '{h}/.ssh/id_ed25519'; \
         python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", 9), timeout=2)' 2>/dev/null || echo no-network; \
         echo tmp > \"$TMPDIR/t\" && echo tmp-ok; exit 5",
        o = d.outside.display(),
        h = d.home.display()
    );
    let out = sandbox(
        &d.work,
        &d.home,
        &["--access", "edit", "--json", "--", "sh", "-c", &script],
        &[],
    );
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("no-network") && stdout.contains("tmp-ok"),
        "{stdout}"
    );
    assert!(!stdout.contains("SECRET"), "{stdout}");
    assert!(stderr.contains("Permission denied"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(d.outside.join("victim")).unwrap(),
        "keep me"
    );
    assert_eq!(
        std::fs::read_to_string(d.work.join("made")).unwrap(),
        "inside\n"
    );
    let report: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(report["exit_code"], 5);
    let sb = &report["sandbox"];
    assert_eq!(sb["mode"], "enforce");
    assert_eq!(sb["confined"], true);
    assert!(sb["landlock_abi"].as_u64().unwrap() >= 3);
    assert_eq!(sb["network"], "deny");
    assert_eq!(sb["network_enforced_by"], "namespace");
    assert_eq!(sb["processes"], "namespace");
    let hidden = sb["hidden"].as_array().unwrap();
    assert!(
        hidden
            .iter()
            .any(|h| h.as_str().unwrap().ends_with("/.ssh")),
        "{sb}"
    );

    // read_only: the current directory is not writable either.
    let out = sandbox(&d.work, &d.home, &["--", "sh", "-c", "echo x > ./ro"], &[]);
    assert_ne!(out.status.code(), Some(0));
    assert!(!d.work.join("ro").exists());
    assert!(
        text(&out.stderr).contains("enforce: landlock v"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn bad_policies_and_missing_features_are_typed_refusals() {
    let d = dirs();
    for args in [
        vec!["--network", "sometimes", "--", "true"],
        vec!["--write", "/does/not/exist", "--", "true"],
        vec!["--access", "full", "--", "true"],
        vec!["--mode", "strict", "--", "true"],
    ] {
        let out = sandbox(&d.work, &d.home, &args, &[]);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
    let out = sandbox(
        &d.work,
        &d.home,
        &["--write", "/does/not/exist", "--json", "--", "true"],
        &[],
    );
    let doc: Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
    assert_eq!(doc["error"]["kind"], "invalid_input");
    assert_eq!(doc["error"]["path"], "--write[0]");

    for missing in ["landlock", "userns"] {
        let marker = d.work.join(format!("ran-{missing}"));
        let cmd = format!("touch '{}'", marker.display());
        let env = [("CODERIG_SANDBOX_PRETEND_MISSING", missing)];
        let out = sandbox(
            &d.work,
            &d.home,
            &["--access", "edit", "--json", "--", "sh", "-c", &cmd],
            &env,
        );
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        let doc: Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
        assert_eq!(doc["error"]["kind"], "unavailable", "{doc}");
        assert!(
            !marker.exists(),
            "enforce started a command it could not confine"
        );

        // auto runs it and says what was not enforced.
        let out = sandbox(
            &d.work,
            &d.home,
            &[
                "--mode", "auto", "--access", "edit", "--json", "--", "sh", "-c", &cmd,
            ],
            &env,
        );
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let doc: Value = serde_json::from_str(text(&out.stdout).lines().last().unwrap()).unwrap();
        assert_eq!(doc["sandbox"]["confined"], false);
        assert!(!doc["sandbox"]["unenforced"].as_array().unwrap().is_empty());
        assert!(marker.exists());
    }
    let out = sandbox(
        &d.work,
        &d.home,
        &["--mode", "off", "--json", "--", "true"],
        &[],
    );
    let doc: Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
    assert_eq!(doc["sandbox"]["mode"], "off");
}

#[test]
fn a_daemon_the_command_leaves_dies_with_it() {
    let d = dirs();
    let marker = format!("coderig-cli-daemon-{}", std::process::id());
    let script = format!(
        "setsid python3 -c 'import time; time.sleep(600)' {marker} </dev/null >/dev/null 2>&1 & sleep 0.5"
    );
    let out = sandbox(&d.work, &d.home, &["--", "sh", "-c", &script], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let alive = Command::new("pgrep")
            .args(["-f", &marker])
            .output()
            .unwrap();
        if alive.stdout.is_empty() {
            break;
        }
        assert!(
            Instant::now() < until,
            "the daemon outlived coderig sandbox"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
