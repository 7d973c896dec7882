//! The git repository with a failing test that the battle tests fight
//! over: `calc.sh`, whose `add` subtracts, and `tests/test_add.sh`, which
//! fails on it; `CALC_FIXED` is the fix a good contestant writes.

use std::path::{Path, PathBuf};
use std::process::Command;

/// `add` as the repository has it: wrong.
pub const CALC_BUGGY: &str = "add() { echo $(( $1 - $2 )); }\n";
/// `add` fixed.
pub const CALC_FIXED: &str = "add() { echo $(( $1 + $2 )); }\n";
/// The test that fails until `add` is fixed.
pub const TEST_ADD: &str = "#!/bin/sh\n. ./calc.sh\ngot=$(add 2 3)\n\
    if [ \"$got\" = 5 ]; then echo 'test_add ok'; else echo \"test_add FAILED: add 2 3 = $got\" >&2; exit 1; fi\n";
/// The oracle's repro command.
pub const REPRO: &str = "sh tests/test_add.sh";
/// The oracle's suite command.
pub const SUITE: &str = "for t in tests/*.sh; do sh \"$t\" || exit 1; done";

/// `git ARGS` in `dir` with a fixed identity; its stdout. Panics with
/// git's stderr when it fails.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Commits `files` (path, content) as the first commit on `main` of a new
/// repository at `project`; returns `project`.
pub fn repository(project: &Path, files: &[(&str, &str)]) -> PathBuf {
    for (path, content) in files {
        let path = project.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
    git(project, &["init", "-q", "-b", "main"]);
    git(project, &["add", "-A"]);
    git(project, &["commit", "-q", "-m", "the base"]);
    project.to_path_buf()
}

/// The calc repository at `project`, its test failing.
pub fn calc_project(project: &Path) -> PathBuf {
    repository(
        project,
        &[("calc.sh", CALC_BUGGY), ("tests/test_add.sh", TEST_ADD)],
    )
}
