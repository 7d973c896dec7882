//! `Base::Snapshot`: the user's working tree as a commit, taken without
//! touching the user's files, index or refs.
#![cfg(feature = "git")]

mod workspace_support;

use coderig::workspace::{Base, Workspace};
use std::path::Path;
use workspace_support::*;

/// A dirty tree: an unstaged edit, a staged edit edited again, a staged new
/// file, an untracked file in a new directory, an ignored file, an
/// unstaged deletion and a mode change.
fn make_dirty(repo: &Path) {
    write(repo, "README.md", "# demo\n\nunstaged edit\n");
    write(repo, "src/lib.rs", "pub fn staged() {}\n");
    git(repo, &["add", "src/lib.rs"]);
    write(repo, "src/lib.rs", "pub fn staged_then_edited() {}\n");
    write(repo, "staged-new.txt", "staged new file\n");
    git(repo, &["add", "staged-new.txt"]);
    write(repo, "notes/todo.md", "- untracked\n");
    write(repo, "debug.log", "ignored\n");
    std::fs::remove_file(repo.join("assets/logo.bin")).unwrap();
    write(repo, "tool.sh", "#!/bin/sh\n");
    git(repo, &["add", "tool.sh"]);
    make_executable(repo, "tool.sh");
}

/// The reflog of HEAD, by bytes.
fn head_log(repo: &Path) -> Option<Vec<u8>> {
    std::fs::read(repo.join(".git/logs/HEAD")).ok()
}

#[test]
fn a_snapshot_leaves_the_dirty_tree_byte_for_byte_unchanged_and_contains_it() {
    let fx = Fixture::new();
    make_dirty(&fx.repo);
    let head = git(&fx.repo, &["rev-parse", "HEAD"]);
    let status = git(&fx.repo, &["status", "--porcelain"]);
    let mut ids = Vec::new();
    for (label, ws) in fx.both() {
        let before = repo_state(&fx.repo);
        let log_before = head_log(&fx.repo);

        let snapshot = ws.snapshot(&fx.repo).unwrap();

        assert_eq!(
            repo_state(&fx.repo),
            before,
            "{label}: the user's repository changed"
        );
        assert_eq!(head_log(&fx.repo), log_before, "{label}");
        assert_eq!(git(&fx.repo, &["status", "--porcelain"]), status, "{label}");
        assert_ne!(snapshot, head, "{label}");
        assert_eq!(
            git(&fx.repo, &["rev-parse", &format!("{snapshot}^")]),
            head,
            "{label}"
        );
        let show = |path: &str| git(&fx.repo, &["show", &format!("{snapshot}:{path}")]);
        assert_eq!(show("README.md"), "# demo\n\nunstaged edit", "{label}");
        assert_eq!(
            show("src/lib.rs"),
            "pub fn staged_then_edited() {}",
            "{label}"
        );
        assert_eq!(show("staged-new.txt"), "staged new file", "{label}");
        assert_eq!(show("notes/todo.md"), "- untracked", "{label}");
        let listing = git(&fx.repo, &["ls-tree", "-r", &snapshot]);
        assert!(!listing.contains("debug.log"), "{label}: {listing}");
        assert!(!listing.contains("assets/logo.bin"), "{label}: {listing}");
        assert!(
            listing.contains("100755 blob") && listing.contains("tool.sh"),
            "{label}: {listing}"
        );
        ids.push(snapshot);
    }
    // Same state, same identity, same time: both backends give one commit.
    assert_eq!(ids[0], ids[1]);
}

#[test]
fn a_worktree_from_a_snapshot_starts_with_the_users_dirty_state() {
    let fx = Fixture::new();
    make_dirty(&fx.repo);
    for (label, ws) in fx.both() {
        let before = repo_state(&fx.repo);
        let wt = ws
            .create(
                &fx.repo,
                &Base::Snapshot,
                &name(&format!("{label}-s").replace('_', "-")),
            )
            .unwrap();
        let after = repo_state(&fx.repo);
        assert_eq!(after.files, before.files, "{label}");
        assert_eq!(
            after.index, before.index,
            "{label}: the user's index changed"
        );
        assert_eq!(after.head, before.head, "{label}");
        let new_refs: Vec<&str> = after
            .refs
            .lines()
            .filter(|l| !before.refs.lines().any(|b| b == *l))
            .collect();
        assert_eq!(
            new_refs,
            [format!("refs/heads/{} {}", wt.branch, wt.base_commit)],
            "{label}: only coderig's branch is new"
        );

        let mut expected = files(&fx.repo);
        expected.remove("debug.log");
        assert_eq!(files(&wt.path), expected, "{label}");
        assert!(ws.diff(&wt).unwrap().is_empty(), "{label}");
    }
}

#[test]
fn a_clean_tree_snapshots_to_head_and_an_unborn_branch_to_a_root_commit() {
    let fx = Fixture::new();
    let head = git(&fx.repo, &["rev-parse", "HEAD"]);
    for (label, ws) in fx.both() {
        assert_eq!(ws.snapshot(&fx.repo).unwrap(), head, "{label}");
    }
    // Only an ignored file is new: still HEAD.
    write(&fx.repo, "target/x.o", "ignored");
    assert_eq!(fx.workspace().snapshot(&fx.repo).unwrap(), head);

    let fresh = fx.projects.join("fresh");
    std::fs::create_dir_all(&fresh).unwrap();
    git(&fresh, &["init", "--quiet", "-b", "main"]);
    write(&fresh, "first.txt", "before any commit\n");
    let mut ids = Vec::new();
    for (label, ws) in fx.both() {
        let before = repo_state(&fresh);
        let snapshot = ws.snapshot(&fresh).unwrap();
        assert_eq!(repo_state(&fresh), before, "{label}");
        assert_eq!(
            git(&fresh, &["rev-list", "--parents", "-n1", &snapshot]),
            snapshot,
            "{label}: a root commit"
        );
        assert_eq!(
            git(&fresh, &["show", &format!("{snapshot}:first.txt")]),
            "before any commit"
        );
        ids.push(snapshot);
    }
    assert_eq!(ids[0], ids[1]);
}
