//! `remove`: only unlocked, only with proof, only coderig's own
//! registration and branch.
#![cfg(feature = "git")]

mod workspace_support;

use coderig::workspace::{Base, RemoveProof, Workspace};
use coderig::ErrorKind;
use workspace_support::*;

#[test]
fn remove_needs_an_unlocked_worktree_and_an_archive_that_matches() {
    let fx = Fixture::new();
    for (label, ws) in fx.both() {
        let prefix = label.replace('_', "-");
        let wt = ws
            .create(&fx.repo, &Base::default(), &name(&format!("{prefix}-done")))
            .unwrap();
        write(&wt.path, "result.txt", "the agent's work\n");
        let archive = fx.scratch(&format!("{label}-archive")).join("diff.patch");
        std::fs::write(&archive, ws.diff(&wt).unwrap().as_bytes()).unwrap();
        let proof = RemoveProof::Archived(archive.clone());

        let err = ws.remove(&wt, &proof).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Conflict, "{label}: {err}");
        assert!(err.message().contains("locked"), "{label}: {err}");

        ws.unlock(&wt).unwrap();
        ws.unlock(&wt).unwrap(); // unlocking twice is fine
        write(&wt.path, "late.txt", "written after the archive\n");
        let err = ws.remove(&wt, &proof).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Conflict, "{label}: {err}");
        assert!(wt.path.join("late.txt").exists(), "{label}: work lost");

        let missing = RemoveProof::Archived(archive.with_file_name("missing.patch"));
        assert_eq!(
            ws.remove(&wt, &missing).unwrap_err().kind(),
            ErrorKind::Conflict
        );

        std::fs::write(&archive, ws.diff(&wt).unwrap().as_bytes()).unwrap();
        let removed = ws.remove(&wt, &proof).unwrap();
        assert!(removed.branch_deleted, "{label}");
        assert!(!wt.path.exists(), "{label}");
        assert!(
            git(&fx.repo, &["branch", "--list", &wt.branch]).is_empty(),
            "{label}"
        );
        assert!(
            !git(&fx.repo, &["worktree", "list", "--porcelain"])
                .contains(wt.path.to_str().unwrap()),
            "{label}"
        );
        assert!(
            !ws.root().join(BATTLE).exists(),
            "{label}: the empty battle dir stays"
        );
        // Gone for good: a second remove knows nothing of it.
        let err = ws.remove(&wt, &RemoveProof::Discard).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{label}: {err}");
    }
}

#[test]
fn remove_leaves_the_users_other_worktrees_and_branches_alone() {
    let fx = Fixture::new();
    let parent = fx.repo.parent().unwrap().to_path_buf();
    git(
        &fx.repo,
        &["worktree", "add", "--quiet", "-b", "feature", "../user-wt"],
    );
    // A registration whose directory the user deleted: a repository-wide
    // `git worktree prune` would drop it; coderig must not.
    git(
        &fx.repo,
        &["worktree", "add", "--quiet", "-b", "gone", "../user-gone"],
    );
    std::fs::remove_dir_all(parent.join("user-gone")).unwrap();
    git(&fx.repo, &["branch", "coderig/mine"]);
    git(&fx.repo, &["branch", "coderig-notes"]);
    for (label, ws) in fx.both() {
        let prefix = label.replace('_', "-");
        let keep = ws
            .create(&fx.repo, &Base::default(), &name(&format!("{prefix}-keep")))
            .unwrap();
        let doomed = ws
            .create(
                &fx.repo,
                &Base::default(),
                &name(&format!("{prefix}-doomed")),
            )
            .unwrap();
        let refs_before = git(
            &fx.repo,
            &["for-each-ref", "--format=%(refname) %(objectname)"],
        );
        let list_before = git(&fx.repo, &["worktree", "list", "--porcelain"]);
        let user_files = files(&parent.join("user-wt"));

        ws.unlock(&doomed).unwrap();
        ws.remove(&doomed, &RemoveProof::Discard).unwrap();

        let refs_after = git(
            &fx.repo,
            &["for-each-ref", "--format=%(refname) %(objectname)"],
        );
        let expected_refs: Vec<&str> = refs_before
            .lines()
            .filter(|l| !l.starts_with(&format!("refs/heads/{} ", doomed.branch)))
            .collect();
        assert_eq!(
            refs_after.lines().collect::<Vec<_>>(),
            expected_refs,
            "{label}"
        );
        let list_after = git(&fx.repo, &["worktree", "list", "--porcelain"]);
        let expected_list: Vec<&str> = list_before
            .split("\n\n")
            .filter(|e| !e.starts_with(&format!("worktree {}\n", doomed.path.display())))
            .collect();
        assert_eq!(
            list_after.split("\n\n").collect::<Vec<_>>(),
            expected_list,
            "{label}"
        );
        assert!(
            list_after.contains("user-gone"),
            "{label}: the user's stale entry was pruned"
        );
        assert!(fx.repo.join(".git/worktrees/user-gone").exists(), "{label}");
        assert_eq!(files(&parent.join("user-wt")), user_files, "{label}");
        assert!(keep.path.join("README.md").exists(), "{label}");
        assert!(
            list_after.contains(&format!(
                "worktree {}\nHEAD {}\nbranch refs/heads/{}\nlocked",
                keep.path.display(),
                keep.base_commit,
                keep.branch
            )),
            "{label}: the other coderig worktree lost its lock:\n{list_after}"
        );
    }
}

#[test]
fn a_forged_or_unknown_worktree_value_is_refused() {
    let fx = Fixture::new();
    let ws = fx.workspace();
    let wt = ws
        .create(&fx.repo, &Base::default(), &name("real"))
        .unwrap();
    ws.unlock(&wt).unwrap();

    let mut forged = wt.clone();
    forged.branch = "main".into();
    let err = ws.remove(&forged, &RemoveProof::Discard).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    let mut elsewhere = wt.clone();
    elsewhere.path = fx.repo.clone();
    let err = ws.remove(&elsewhere, &RemoveProof::Discard).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    let mut unknown = wt.clone();
    unknown.name = name("never-created");
    unknown.path = ws.root().join(BATTLE).join("never-created");
    let err = ws.remove(&unknown, &RemoveProof::Discard).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");

    assert!(wt.path.is_dir());
    assert_eq!(git(&fx.repo, &["branch", "--list", "main"]), "* main");
    assert_eq!(
        git(&fx.repo, &["branch", "--list", &wt.branch]),
        format!("+ {}", wt.branch)
    );
}

#[test]
fn a_branch_the_user_checked_out_elsewhere_is_kept() {
    let fx = Fixture::new();
    let ws = fx.workspace();
    let wt = ws
        .create(&fx.repo, &Base::default(), &name("shared"))
        .unwrap();
    git(
        &fx.repo,
        &[
            "worktree",
            "add",
            "--quiet",
            "--force",
            "../also-here",
            &wt.branch,
        ],
    );
    ws.unlock(&wt).unwrap();
    let removed = ws.remove(&wt, &RemoveProof::Discard).unwrap();
    assert!(!removed.branch_deleted);
    assert_eq!(
        git(&fx.repo, &["rev-parse", &wt.branch]),
        wt.base_commit,
        "the branch is still there"
    );
    assert!(!wt.path.exists());
}

#[test]
fn lock_and_unlock_are_gits_worktree_lock() {
    let fx = Fixture::new();
    for (label, ws) in fx.both() {
        let wt = fx.worktree(&ws, label, "l");
        let locked = |wt: &coderig::workspace::Worktree| {
            git(&fx.repo, &["worktree", "list", "--porcelain"])
                .split("\n\n")
                .find(|e| e.starts_with(&format!("worktree {}\n", wt.path.display())))
                .unwrap()
                .contains("\nlocked")
        };
        assert!(locked(&wt), "{label}");
        ws.unlock(&wt).unwrap();
        assert!(!locked(&wt), "{label}");
        ws.lock(&wt, "judging").unwrap();
        ws.lock(&wt, "again").unwrap();
        let list = git(&fx.repo, &["worktree", "list", "--porcelain"]);
        assert!(list.contains("locked judging"), "{label}: {list}");
        // git itself refuses to remove a locked worktree.
        let out = git_cmd(&fx.repo)
            .args(["worktree", "remove", wt.path.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(!out.status.success(), "{label}");
    }
}
