//! The native agent's writing and running tools on real files and real
//! processes under the real kernel sandbox: `edit_file`, `write_file`,
//! `edit_lines` and `run`, called through the `ToolBox` the agent uses.

#![cfg(target_os = "linux")]

mod procs;
use coderig::agent::native::tools::{ToolBox, ToolResult, ToolSettings, OUTPUT_CAP_CHARS};
use coderig::agent::native::{ToolCall, ToolsMode};
use coderig::agent::Access;
use coderig::sandbox::NetworkPolicy;
use procs::wait_none_with;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// A workdir inside a temp dir, with a sibling directory outside it.
struct Scene {
    _root: tempfile::TempDir,
    work: PathBuf,
    outside: PathBuf,
}

fn scene() -> Scene {
    let root = tempfile::tempdir().unwrap();
    let work = root.path().join("work");
    let outside = root.path().join("outside");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    Scene {
        work: work.canonicalize().unwrap(),
        outside: outside.canonicalize().unwrap(),
        _root: root,
    }
}

impl Scene {
    fn settings(&self, access: Access) -> ToolSettings {
        ToolSettings {
            workdir: self.work.clone(),
            access,
            mode: ToolsMode::Coderig,
            hashline: false,
            sandbox: None,
            network: NetworkPolicy::Deny,
            run_timeout: Duration::from_secs(60),
            env: BTreeMap::new(),
        }
    }

    fn tools(&self) -> ToolBox {
        ToolBox::new(self.settings(Access::Edit)).unwrap()
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.work.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.work.join(name)).unwrap()
    }
}

async fn call(tools: &mut ToolBox, name: &str, arguments: Value) -> ToolResult {
    let call = ToolCall {
        id: "call_1".into(),
        name: name.into(),
        arguments,
    };
    tools.call(&call, &CancellationToken::new()).await
}

fn refused(result: &ToolResult, code: &str) {
    assert!(
        !result.ok,
        "expected {code}, got a success: {}",
        result.output
    );
    assert_eq!(
        result.code.as_deref(),
        Some(code),
        "output: {}",
        result.output
    );
}

// ---------------------------------------------------------------- edit_file

const PY: &str = "def greet(name):\n    if name:\n        print('hello', name)\n    return name\n";

#[tokio::test]
async fn edit_file_places_an_edit_whose_indentation_drifted() {
    let s = scene();
    s.write("greet.py", PY);
    let mut tools = s.tools();
    // The model wrote the block with 2-space indentation; the file has 4.
    let r = call(
        &mut tools,
        "edit_file",
        json!({"path": "greet.py", "old": "  if name:\n      print('hello', name)", "new": "  if name:\n      print('hi', name)"}),
    )
    .await;
    assert!(r.ok, "{}", r.output);
    assert!(
        r.output
            .starts_with("Edited greet.py (whitespace match, lines 3-3):"),
        "{}",
        r.output
    );
    assert!(
        r.output.contains("3|        print('hi', name)"),
        "{}",
        r.output
    );
    assert!(r.output.contains("1|def greet(name):"), "{}", r.output);
    assert_eq!(s.read("greet.py"), PY.replace("'hello'", "'hi'"));
}

#[tokio::test]
async fn edit_file_places_an_edit_whose_quotes_drifted() {
    let s = scene();
    let text = "# Say “hello” to the user.\nmsg = 'hello'\n";
    s.write("q.py", text);
    let mut tools = s.tools();
    let r = call(
        &mut tools,
        "edit_file",
        json!({"path": "q.py", "old": "# Say \"hello\" to the user.", "new": "# Say \"hi\" to the user."}),
    )
    .await;
    assert!(r.ok, "{}", r.output);
    assert!(
        r.output.contains("(unicode match, lines 1-1)"),
        "{}",
        r.output
    );
    // The file keeps its own quote style.
    assert_eq!(s.read("q.py"), "# Say “hi” to the user.\nmsg = 'hello'\n");
}

#[tokio::test]
async fn edit_file_refuses_an_ambiguous_edit_listing_every_match() {
    let s = scene();
    let text = "fn a() {\n    step();\n}\n\nfn b() {\n    step();\n}\n";
    s.write("lib.rs", text);
    let mut tools = s.tools();
    let r = call(
        &mut tools,
        "edit_file",
        json!({"path": "lib.rs", "old": "    step();", "new": "    leap();"}),
    )
    .await;
    refused(&r, "AMBIGUOUS");
    assert!(
        r.output.contains("lines 2-2:\n2|    step();"),
        "{}",
        r.output
    );
    assert!(
        r.output.contains("lines 6-6:\n6|    step();"),
        "{}",
        r.output
    );
    assert_eq!(
        r.output.matches("set replace_all").count(),
        1,
        "{}",
        r.output
    );
    assert_eq!(s.read("lib.rs"), text, "a refused edit changed the file");

    // replace_all changes every exact occurrence.
    let r = call(
        &mut tools,
        "edit_file",
        json!({"path": "lib.rs", "old": "    step();", "new": "    leap();", "replace_all": true}),
    )
    .await;
    assert!(r.ok, "{}", r.output);
    assert!(
        r.output.contains("2 replacements, lines 2-6"),
        "{}",
        r.output
    );
    assert_eq!(s.read("lib.rs"), text.replace("step", "leap"));
}

#[tokio::test]
async fn edit_file_not_found_shows_the_nearest_lines_numbered() {
    let s = scene();
    let text: String = (1..=20)
        .map(|i| format!("let value_{i} = compute({i});\n"))
        .collect();
    s.write("v.rs", &text);
    let mut tools = s.tools();
    let r = call(
        &mut tools,
        "edit_file",
        json!({"path": "v.rs", "old": "let value_12 = compute(12, extra_argument);", "new": "x"}),
    )
    .await;
    refused(&r, "NOT_FOUND");
    assert!(r.output.contains("The nearest lines"), "{}", r.output);
    assert!(
        r.output.contains("|let value_12 = compute(12);"),
        "{}",
        r.output
    );
    assert!(r.output.contains("12|let value_12"), "{}", r.output);
    assert!(
        r.output.contains("Copy the lines exactly from read_file"),
        "{}",
        r.output
    );
    assert_eq!(s.read("v.rs"), text);
}

#[tokio::test]
async fn edit_file_suggests_write_file_after_two_refusals_and_forgets_on_success() {
    let s = scene();
    s.write("a.txt", "alpha\nbeta\n");
    let mut tools = s.tools();
    let bad = json!({"path": "a.txt", "old": "gamma delta epsilon", "new": "x"});
    let first = call(&mut tools, "edit_file", bad.clone()).await;
    refused(&first, "NOT_FOUND");
    assert!(!first.output.contains("write_file"), "{}", first.output);
    let second = call(&mut tools, "edit_file", bad.clone()).await;
    refused(&second, "NOT_FOUND");
    assert!(
        second.output.ends_with(
            "This file refused 2 edits: re-read it with read_file, or replace it whole with write_file."
        ),
        "{}",
        second.output
    );
    let third = call(&mut tools, "edit_file", bad.clone()).await;
    assert!(third.output.contains("refused 3 edits"), "{}", third.output);
    let ok = call(
        &mut tools,
        "edit_file",
        json!({"path": "a.txt", "old": "beta", "new": "BETA"}),
    )
    .await;
    assert!(ok.ok, "{}", ok.output);
    let again = call(&mut tools, "edit_file", bad.clone()).await;
    assert!(!again.output.contains("refused"), "{}", again.output);
    // Replacing the file whole with write_file clears the count too.
    let refused_twice = call(&mut tools, "edit_file", bad.clone()).await;
    assert!(
        refused_twice.output.contains("refused 2 edits"),
        "{}",
        refused_twice.output
    );
    let written = call(
        &mut tools,
        "write_file",
        json!({"path": "a.txt", "content": "alpha\nBETA\ngamma\n"}),
    )
    .await;
    assert!(written.ok, "{}", written.output);
    let after = call(&mut tools, "edit_file", bad).await;
    assert!(!after.output.contains("refused"), "{}", after.output);
}

#[tokio::test]
async fn edit_file_refuses_empty_old_missing_files_and_paths_outside() {
    let s = scene();
    s.write("a.txt", "alpha\n");
    std::fs::write(s.outside.join("victim.txt"), "precious\n").unwrap();
    let mut tools = s.tools();
    let r = call(
        &mut tools,
        "edit_file",
        json!({"path": "a.txt", "old": "", "new": "x"}),
    )
    .await;
    refused(&r, "INVALID_INPUT");
    assert!(r.output.contains("write_file"), "{}", r.output);

    let r = call(
        &mut tools,
        "edit_file",
        json!({"path": "../outside/victim.txt", "old": "precious", "new": "stolen"}),
    )
    .await;
    refused(&r, "OUTSIDE_WORKDIR");
    let r = call(
        &mut tools,
        "edit_file",
        json!({"path": s.outside.join("victim.txt").to_str().unwrap(), "old": "precious", "new": "stolen"}),
    )
    .await;
    refused(&r, "OUTSIDE_WORKDIR");
    // Through a link inside the workdir that leads out.
    std::os::unix::fs::symlink(&s.outside, s.work.join("door")).unwrap();
    let r = call(
        &mut tools,
        "edit_file",
        json!({"path": "door/victim.txt", "old": "precious", "new": "stolen"}),
    )
    .await;
    refused(&r, "OUTSIDE_WORKDIR");
    let r = call(
        &mut tools,
        "write_file",
        json!({"path": "door/new.txt", "content": "x\n"}),
    )
    .await;
    refused(&r, "OUTSIDE_WORKDIR");
    let r = call(
        &mut tools,
        "write_file",
        json!({"path": "../outside/new.txt", "content": "x\n"}),
    )
    .await;
    refused(&r, "OUTSIDE_WORKDIR");
    assert_eq!(
        std::fs::read_to_string(s.outside.join("victim.txt")).unwrap(),
        "precious\n"
    );
    assert!(!s.outside.join("new.txt").exists());

    let r = call(
        &mut tools,
        "edit_file",
        json!({"path": "missing.txt", "old": "a", "new": "b"}),
    )
    .await;
    refused(&r, "NOT_FOUND");

    let r = call(
        &mut tools,
        "edit_file",
        json!({"path": "a.txt", "old": "alpha", "new": "b", "bogus": 1}),
    )
    .await;
    refused(&r, "BAD_ARGUMENTS");
}

// --------------------------------------------------------------- write_file

#[tokio::test]
async fn write_file_creates_with_parents_and_replaces() {
    let s = scene();
    let mut tools = s.tools();
    let r = call(
        &mut tools,
        "write_file",
        json!({"path": "src/deep/new.txt", "content": "one\ntwo\n"}),
    )
    .await;
    assert!(r.ok, "{}", r.output);
    assert_eq!(r.output, "Wrote src/deep/new.txt (2 lines, created)");
    assert_eq!(s.read("src/deep/new.txt"), "one\ntwo\n");
    let r = call(
        &mut tools,
        "write_file",
        json!({"path": "src/deep/new.txt", "content": "one\ntwo\nthree\n"}),
    )
    .await;
    assert_eq!(r.output, "Wrote src/deep/new.txt (3 lines, replaced)");
    assert_eq!(s.read("src/deep/new.txt"), "one\ntwo\nthree\n");
}

#[tokio::test]
async fn write_file_refuses_a_rewrite_that_leaks_placeholders_or_truncates() {
    let s = scene();
    let body: String = (1..=40)
        .map(|i| format!("function f{i}() {{\n  return {i};\n}}\n"))
        .collect();
    s.write("app.js", &body);
    let mut tools = s.tools();

    let leaked = format!(
        "function f1() {{\n  return 100;\n}}\n// ... rest of code ...\n{}",
        &body[body.find("function f2").unwrap()..]
    );
    let r = call(
        &mut tools,
        "write_file",
        json!({"path": "app.js", "content": leaked}),
    )
    .await;
    refused(&r, "GUARD");
    assert!(r.output.contains("- marker_leak:"), "{}", r.output);
    assert_eq!(s.read("app.js"), body, "a refused write changed the file");

    let r = call(
        &mut tools,
        "write_file",
        json!({"path": "app.js", "content": "function f1() {\n  return 1;\n}\n"}),
    )
    .await;
    refused(&r, "GUARD");
    assert!(r.output.contains("- truncation:"), "{}", r.output);
    assert_eq!(s.read("app.js"), body);

    // A new file is checked for placeholders too.
    let r = call(
        &mut tools,
        "write_file",
        json!({"path": "fresh.js", "content": "function a() {}\n// ... existing code ...\n"}),
    )
    .await;
    refused(&r, "GUARD");
    assert!(!s.work.join("fresh.js").exists());
}

// --------------------------------------------------------------- edit_lines

#[tokio::test]
async fn edit_lines_refuses_stale_anchors_with_fresh_ones_and_applies_fresh_ones() {
    use coderig::edit::hashline::line_hash;
    let s = scene();
    s.write("list.txt", "one\ntwo\nthree\nfour\n");
    let mut settings = s.settings(Access::Edit);
    settings.hashline = true;
    let mut tools = ToolBox::new(settings).unwrap();
    let stale = format!("2#{}", line_hash(2, "two"));
    // Someone changes line 2 after the model read it.
    s.write("list.txt", "one\nTWO\nthree\nfour\n");
    let fresh = format!("2#{}", line_hash(2, "TWO"));
    let r = call(
        &mut tools,
        "edit_lines",
        json!({"path": "list.txt", "start": stale, "end": stale, "lines": ["2"]}),
    )
    .await;
    refused(&r, "HASHLINE_MISMATCH");
    assert!(r.output.contains(&fresh), "{}", r.output);
    assert_eq!(s.read("list.txt"), "one\nTWO\nthree\nfour\n");

    let end = format!("3#{}", line_hash(3, "three"));
    let r = call(
        &mut tools,
        "edit_lines",
        json!({"path": "list.txt", "start": fresh, "end": end, "lines": ["2", "3", "3.5"]}),
    )
    .await;
    assert!(r.ok, "{}", r.output);
    assert_eq!(s.read("list.txt"), "one\n2\n3\n3.5\nfour\n");
    assert!(
        r.output.contains(&format!("4#{}|3.5", line_hash(4, "3.5"))),
        "{}",
        r.output
    );
    assert!(
        r.output
            .contains(&format!("5#{}|four", line_hash(5, "four"))),
        "{}",
        r.output
    );
}

// ---------------------------------------------------------------------- run

#[tokio::test]
async fn run_reports_exit_codes_and_merges_output_in_order() {
    let s = scene();
    let mut tools = s.tools();
    let r = call(
        &mut tools,
        "run",
        json!({"command": "echo one; echo two >&2; echo three; echo four >&2"}),
    )
    .await;
    assert!(r.ok, "{}", r.output);
    assert!(r.output.starts_with("exit code 0 in "), "{}", r.output);
    assert!(r.output.contains("one\ntwo\nthree\nfour\n"), "{}", r.output);
    assert!(!r.output.contains("sandbox:"), "{}", r.output);

    let r = call(
        &mut tools,
        "run",
        json!({"command": "echo failing; exit 3"}),
    )
    .await;
    refused(&r, "EXIT_3");
    assert!(r.output.starts_with("exit code 3 in "), "{}", r.output);
    assert!(r.output.contains("failing"), "{}", r.output);

    // A syntax error of the command itself is in the output too.
    let r = call(&mut tools, "run", json!({"command": "if then fi"})).await;
    refused(&r, "EXIT_2");
    assert!(r.output.contains("syntax error"), "{}", r.output);

    // Runs in the workdir, with the settings' environment.
    let mut settings = s.settings(Access::Edit);
    settings
        .env
        .insert("CODERIG_PROBE".into(), "probe-42".into());
    let mut tools = ToolBox::new(settings).unwrap();
    let r = call(
        &mut tools,
        "run",
        json!({"command": "pwd; echo $CODERIG_PROBE"}),
    )
    .await;
    assert!(
        r.output
            .contains(&format!("{}\nprobe-42", s.work.display())),
        "{}",
        r.output
    );
}

#[tokio::test]
async fn run_under_edit_writes_inside_the_workdir_only() {
    let s = scene();
    let mut tools = s.tools();
    let outside = s.outside.join("escape.txt");
    let r = call(
        &mut tools,
        "run",
        json!({"command": format!("echo no > {}", outside.display())}),
    )
    .await;
    assert!(!r.ok, "{}", r.output);
    assert!(r.output.contains("ermission denied"), "{}", r.output);
    assert!(!outside.exists(), "the sandbox let a write out");

    let r = call(
        &mut tools,
        "run",
        json!({"command": "echo yes > inside.txt && mkdir -p d && touch d/e && echo tmp > $TMPDIR/t && cat $TMPDIR/t"}),
    )
    .await;
    assert!(r.ok, "{}", r.output);
    assert_eq!(s.read("inside.txt"), "yes\n");
    assert!(s.work.join("d/e").exists());

    // The network is denied by default: the host's loopback listener is
    // out of reach.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let r = call(
        &mut tools,
        "run",
        json!({"command": format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected")}),
    )
    .await;
    assert!(!r.ok, "{}", r.output);
    assert!(!r.output.contains("connected\n"), "{}", r.output);
}

#[tokio::test]
async fn run_in_a_linked_worktree_can_commit_there_but_not_touch_the_repository() {
    // An arena contestant's workdir is a linked worktree: git add / commit
    // there must work under the sandbox, the repository's own .git stay
    // read-only.
    let s = scene();
    let repo = s.outside.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let git = |dir: &Path, args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(dir)
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("a.txt"), "a\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "a"]);
    let wt = s.work.join("wt");
    git(
        &repo,
        &["worktree", "add", "-q", "--detach", wt.to_str().unwrap()],
    );
    let mut settings = s.settings(Access::Edit);
    settings.workdir = wt.clone();
    let mut tools = ToolBox::new(settings).unwrap();
    let r = call(
        &mut tools,
        "run",
        json!({"command": "echo b > b.txt && git add b.txt && git -c user.name=m -c user.email=m@m commit -qm b && git log --oneline | wc -l"}),
    )
    .await;
    assert!(r.ok, "{}", r.output);
    assert!(
        r.output.contains("\n2\n") || r.output.ends_with("2\n"),
        "{}",
        r.output
    );
    let config = repo.join(".git/config");
    let before = std::fs::read_to_string(&config).unwrap();
    let r = call(
        &mut tools,
        "run",
        json!({"command": format!("echo '[evil]' >> {}", config.display())}),
    )
    .await;
    assert!(!r.ok, "{}", r.output);
    assert_eq!(std::fs::read_to_string(&config).unwrap(), before);
}

#[tokio::test]
async fn run_under_full_access_is_unconfined_and_says_so() {
    let s = scene();
    let mut tools = ToolBox::new(s.settings(Access::Full)).unwrap();
    let outside = s.outside.join("allowed.txt");
    let r = call(
        &mut tools,
        "run",
        json!({"command": format!("echo yes > {}", outside.display())}),
    )
    .await;
    assert!(r.ok, "{}", r.output);
    assert!(
        r.output.contains("sandbox: none (full access)"),
        "{}",
        r.output
    );
    assert!(outside.exists());
}

#[tokio::test]
async fn run_is_not_offered_nor_run_at_read_only() {
    let s = scene();
    let mut tools = ToolBox::new(s.settings(Access::ReadOnly)).unwrap();
    assert!(tools.specs().iter().all(|t| t.name != "run"));
    let r = call(&mut tools, "run", json!({"command": "touch x"})).await;
    assert!(!r.ok);
    assert!(!s.work.join("x").exists());
}

#[tokio::test]
async fn run_timeout_kills_the_whole_tree() {
    let s = scene();
    let mut tools = s.tools();
    let marker = "987651";
    let started = Instant::now();
    let r = call(
        &mut tools,
        "run",
        json!({"command": format!("echo started; sleep {marker} & sleep {marker}"), "timeout_s": 1}),
    )
    .await;
    let took = started.elapsed();
    refused(&r, "TIMEOUT");
    assert!(
        r.output
            .starts_with("killed after 1 s; run it with a longer timeout_s, at most 60 s"),
        "{}",
        r.output
    );
    assert!(r.output.contains("started"), "{}", r.output);
    assert!(took < Duration::from_secs(6), "took {took:?}");
    let left = wait_none_with(marker, Duration::from_secs(3));
    assert!(left.is_empty(), "survivors: {left:?}");
}

#[tokio::test]
async fn run_timeout_under_the_sandbox_kills_daemons_and_term_ignorers() {
    let s = scene();
    let mut tools = s.tools();
    let marker = "987654";
    let started = Instant::now();
    // A daemon in a session of its own (out of the process group) and a
    // shell that ignores SIGTERM: the PID namespace takes both.
    let r = call(
        &mut tools,
        "run",
        json!({"command": format!("setsid sleep {marker} & bash -c 'trap \"\" TERM; sleep {marker}; sleep {marker}'"), "timeout_s": 1}),
    )
    .await;
    refused(&r, "TIMEOUT");
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
    let left = wait_none_with(marker, Duration::from_secs(3));
    assert!(left.is_empty(), "survivors: {left:?}");
}

/// Set in the child process of
/// [`run_without_landlock_enforce_refuses_and_auto_says_so`].
const CHILD: &str = "CODERIG_NATIVE_TOOLS_CHILD";

/// Runs only in a child process with `CODERIG_SANDBOX_PRETEND_MISSING=landlock`.
#[tokio::test]
async fn no_landlock_child() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let s = scene();
    let mut tools = s.tools();
    let r = call(&mut tools, "run", json!({"command": "touch ran"})).await;
    refused(&r, "SANDBOX_UNAVAILABLE");
    assert!(r.output.contains("Landlock"), "{}", r.output);
    assert!(
        !s.work.join("ran").exists(),
        "an unconfined run under enforce"
    );

    let mut settings = s.settings(Access::Edit);
    settings.sandbox = Some(coderig::sandbox::SandboxMode::Auto);
    let mut tools = ToolBox::new(settings).unwrap();
    let r = call(&mut tools, "run", json!({"command": "touch ran"})).await;
    assert!(r.ok, "{}", r.output);
    assert!(
        r.output.contains("sandbox: auto: filesystem unconfined"),
        "{}",
        r.output
    );
    assert!(s.work.join("ran").exists());
    println!("child checks passed");
}

#[test]
fn run_without_landlock_enforce_refuses_and_auto_says_so() {
    let out = procs::child_test("no_landlock_child")
        .env(CHILD, "1")
        .env("CODERIG_SANDBOX_PRETEND_MISSING", "landlock")
        .output()
        .unwrap();
    let text = procs::passed(out);
    assert!(text.contains("child checks passed"), "{text}");
}

#[tokio::test]
async fn run_cancel_kills_the_whole_tree_confined_or_not() {
    for (access, marker) in [(Access::Edit, "987652"), (Access::Full, "987653")] {
        let s = scene();
        let mut tools = ToolBox::new(s.settings(access)).unwrap();
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(700)).await;
            trigger.cancel();
        });
        let started = Instant::now();
        let call = ToolCall {
            id: "c".into(),
            name: "run".into(),
            arguments: json!({"command": format!("sleep {marker} & sleep {marker}")}),
        };
        let r = tools.call(&call, &cancel).await;
        refused(&r, "CANCELLED");
        assert!(started.elapsed() < Duration::from_secs(6));
        let left = wait_none_with(marker, Duration::from_secs(3));
        assert!(left.is_empty(), "{access:?}: survivors: {left:?}");
    }
}

#[tokio::test]
async fn run_output_over_the_cap_keeps_head_and_tail_and_the_whole_in_full() {
    let s = scene();
    let mut tools = s.tools();
    let r = call(&mut tools, "run", json!({"command": "seq 1 20000"})).await;
    assert!(r.ok);
    assert!(
        r.output.chars().count() < OUTPUT_CAP_CHARS + 200,
        "{}",
        r.output.len()
    );
    assert!(
        r.output.starts_with("exit code 0 in "),
        "{}",
        &r.output[..100]
    );
    assert!(r.output.contains("\n1\n2\n3\n"));
    assert!(r.output.contains("characters cut"));
    assert!(r.output.ends_with("19999\n20000\n"));
    let full = r.full.expect("the whole output is kept");
    let expected: String = (1..=20000).map(|i| format!("{i}\n")).collect();
    assert!(full.contains(&expected));
}
