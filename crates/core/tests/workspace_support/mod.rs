//! Real repositories for the workspace tests: `git init` in temporary
//! directories, the identity set per command (never in the user's config).
#![allow(dead_code)]

use coderig::workspace::{GitWorkspace, GitWorkspaceConfig, WorktreeName};
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The slug of the battle every test uses.
pub const BATTLE: &str = "2025-01-31-coding-0123abcd";

/// A command for the test's own git calls: identity by environment, no
/// system or global configuration, no hooks.
pub fn git_cmd(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "Test")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_NAME", "Test")
        .env("GIT_COMMITTER_EMAIL", "test@example.com")
        .env("GIT_AUTHOR_DATE", "2025-01-31T12:00:00Z")
        .env("GIT_COMMITTER_DATE", "2025-01-31T12:00:00Z")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE");
    cmd
}

/// Runs git in `dir`; panics with its stderr when it fails; returns stdout.
pub fn git_bytes(dir: &Path, args: &[&str]) -> Vec<u8> {
    let out = git_cmd(dir).args(args).output().expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} in {} failed: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// [`git_bytes`] as trimmed text.
pub fn git(dir: &Path, args: &[&str]) -> String {
    String::from_utf8_lossy(&git_bytes(dir, args))
        .trim()
        .to_owned()
}

/// Runs git in `dir`, feeding `stdin`; returns (success, stderr).
pub fn git_with_input(dir: &Path, args: &[&str], stdin: &[u8]) -> (bool, String) {
    use std::io::Write;
    let mut child = git_cmd(dir)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("git runs");
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Writes `bytes` to `dir/rel`, creating directories.
pub fn write(dir: &Path, rel: &str, bytes: impl AsRef<[u8]>) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// Makes `dir/rel` executable.
pub fn make_executable(dir: &Path, rel: &str) {
    let path = dir.join(rel);
    let mut perms = std::fs::metadata(&path).unwrap().permissions();
    perms.set_mode(0o755);
    std::fs::set_permissions(path, perms).unwrap();
}

/// Bytes that are certainly binary to git (NULs, every byte value).
pub fn binary_bytes(seed: u8) -> Vec<u8> {
    (0..4096u32)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .chain([0, 0, 0, 255, 254])
        .collect()
}

/// `git init` with one commit: a README, a source file, a binary file, a
/// `.gitignore` (`target/`, `*.log`).
pub fn init_repo(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "--quiet", "-b", "main"]);
    write(dir, "README.md", "# demo\n\nline two\n");
    write(
        dir,
        "src/lib.rs",
        "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n\npub fn sub(a: i32, b: i32) -> i32 {\n    a - b\n}\n",
    );
    write(dir, "assets/logo.bin", binary_bytes(1));
    write(dir, ".gitignore", "target/\n*.log\n");
    commit_all(dir, "initial");
}

/// `add` as the calc project has it: it subtracts.
pub const CALC_BUGGY: &str = "add() { echo $(( $1 - $2 )); }\n";
/// `add` fixed.
pub const CALC_FIXED: &str = "add() { echo $(( $1 + $2 )); }\n";
/// The calc project's test, failing until `add` is fixed.
pub const TEST_ADD: &str = "#!/bin/sh\n. ./calc.sh\ngot=$(add 2 3)\n\
    if [ \"$got\" = 5 ]; then echo 'test_add ok'; else echo \"test_add FAILED: add 2 3 = $got\" >&2; exit 1; fi\n";

/// The calc project: a new repository at `project` (branch `main`) whose
/// one commit has `calc.sh` and its failing `tests/test_add.sh` — the
/// git repository with a failing test that battles are fought over.
pub fn calc_project(project: &Path) -> PathBuf {
    std::fs::create_dir_all(project).unwrap();
    git(project, &["init", "-q", "-b", "main"]);
    write(project, "calc.sh", CALC_BUGGY);
    write(project, "tests/test_add.sh", TEST_ADD);
    commit_all(project, "buggy add");
    project.to_path_buf()
}

/// `git add -A && git commit`.
pub fn commit_all(dir: &Path, message: &str) {
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "--quiet", "-m", message]);
}

/// One file as the tests compare it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A regular file: bytes and the executable bit.
    File(Vec<u8>, bool),
    /// A symlink and its target.
    Link(PathBuf),
}

/// Every file under `dir` except `.git` (a directory or a worktree's file),
/// by relative path.
pub fn files(dir: &Path) -> BTreeMap<String, Entry> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, Entry>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let path = entry.path();
            let rel = path
                .strip_prefix(base)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if rel == ".git" {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.file_type().is_symlink() {
                out.insert(rel, Entry::Link(std::fs::read_link(&path).unwrap()));
            } else if meta.is_dir() {
                walk(base, &path, out);
            } else {
                let exec = meta.permissions().mode() & 0o111 != 0;
                out.insert(rel, Entry::File(std::fs::read(&path).unwrap(), exec));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// Everything about a repository that must not change behind the user's
/// back: the files, the index file's bytes, every ref, HEAD, packed-refs,
/// the worktree registrations.
#[derive(Debug, PartialEq, Eq)]
pub struct RepoState {
    pub files: BTreeMap<String, Entry>,
    pub index: Option<Vec<u8>>,
    pub refs: String,
    pub head: String,
    pub packed_refs: Option<Vec<u8>>,
    pub worktrees: String,
}

/// The [`RepoState`] of the repository at `dir` (its `.git` directory).
pub fn repo_state(dir: &Path) -> RepoState {
    let dot_git = dir.join(".git");
    RepoState {
        files: files(dir),
        index: std::fs::read(dot_git.join("index")).ok(),
        refs: git(dir, &["for-each-ref", "--format=%(refname) %(objectname)"]),
        head: std::fs::read_to_string(dot_git.join("HEAD")).unwrap(),
        packed_refs: std::fs::read(dot_git.join("packed-refs")).ok(),
        worktrees: git(dir, &["worktree", "list", "--porcelain"]),
    }
}

/// A temporary world: a project root holding one repository, and a data
/// directory.
pub struct Fixture {
    _tmp: tempfile::TempDir,
    pub projects: PathBuf,
    pub data: PathBuf,
    pub repo: PathBuf,
}

impl Fixture {
    /// A project root with `repo` made by [`init_repo`].
    pub fn new() -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let projects = base.join("projects");
        let data = base.join("data");
        let repo = projects.join("repo");
        init_repo(&repo);
        Fixture {
            _tmp: tmp,
            projects,
            data,
            repo,
        }
    }

    /// A scratch directory outside the project root and the data directory.
    pub fn scratch(&self, name: &str) -> PathBuf {
        let dir = self.projects.parent().unwrap().join("scratch").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// The workspace, libgit2 where the repository allows it.
    pub fn workspace(&self) -> GitWorkspace {
        GitWorkspace::new(GitWorkspaceConfig::new(
            &self.data,
            vec![self.projects.clone()],
        ))
        .unwrap()
    }

    /// The workspace, git CLI everywhere.
    pub fn workspace_cli(&self) -> GitWorkspace {
        let mut config = GitWorkspaceConfig::new(&self.data, vec![self.projects.clone()]);
        config.always_cli = true;
        GitWorkspace::new(config).unwrap()
    }

    /// A worktree of [`Fixture::repo`] at its `HEAD`, for contestant
    /// `<label>-<suffix>` (underscores made dashes), made by `ws`.
    pub fn worktree(
        &self,
        ws: &dyn coderig::workspace::Workspace,
        label: &str,
        suffix: &str,
    ) -> coderig::workspace::Worktree {
        ws.create(
            &self.repo,
            &coderig::workspace::Base::default(),
            &name(&format!("{label}-{suffix}").replace('_', "-")),
        )
        .unwrap()
    }

    /// Both workspaces, with a label for messages.
    pub fn both(&self) -> Vec<(&'static str, GitWorkspace)> {
        vec![
            ("libgit2", self.workspace()),
            ("git_cli", self.workspace_cli()),
        ]
    }
}

/// The name of contestant `dir` in [`BATTLE`].
pub fn name(dir: &str) -> WorktreeName {
    WorktreeName::new(BATTLE, dir).unwrap()
}

/// A fresh clone of `repo` checked out (detached) at `commit`, made with
/// the real git: the oracle's "fresh checkout of the base". A local clone
/// copies the object store, so unreferenced snapshot commits are there too.
pub fn fresh_checkout(repo: &Path, commit: &str, dir: &Path) {
    git(
        dir.parent().unwrap(),
        &[
            "clone",
            "--quiet",
            "--no-checkout",
            repo.to_str().unwrap(),
            dir.to_str().unwrap(),
        ],
    );
    git(dir, &["checkout", "--quiet", "--detach", commit]);
}
