//! `create`: a locked worktree on a new branch at the base, never a reused
//! branch, and nothing left behind when it fails.
#![cfg(feature = "git")]

mod workspace_support;

use coderig::workspace::{
    Backend, Base, RemoveProof, Workspace, Worktree, WorktreeName, AGENT_LOCK_REASON,
};
use coderig::ErrorKind;
use std::path::Path;
use workspace_support::*;

/// Everything coderig could leave under the worktrees root, `.tmp` aside.
fn root_entries(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(root).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name != ".tmp" {
            out.push(name);
        }
    }
    out
}

#[test]
fn create_makes_a_locked_worktree_on_a_new_branch_at_the_base() {
    let fx = Fixture::new();
    let head = git(&fx.repo, &["rev-parse", "HEAD"]);
    for (label, ws) in fx.both() {
        let dir = format!("{label}-a").replace('_', "-");
        let wt = ws.create(&fx.repo, &Base::default(), &name(&dir)).unwrap();

        assert_eq!(wt.path, ws.root().join(BATTLE).join(&dir));
        assert_eq!(wt.path, fx.data.join("worktrees").join(BATTLE).join(&dir));
        assert_eq!(wt.branch, format!("coderig/0123abcd/{dir}"));
        assert_eq!(wt.base_commit, head);
        assert_eq!(wt.repo, fx.repo);
        let expected_backend = if label == "libgit2" {
            Backend::Libgit2
        } else {
            Backend::GitCli
        };
        assert_eq!(wt.backend, expected_backend);
        assert_eq!(
            git(
                &fx.repo,
                &["rev-parse", &format!("refs/heads/{}", wt.branch)]
            ),
            head
        );
        assert_eq!(
            git(&wt.path, &["symbolic-ref", "HEAD"]),
            format!("refs/heads/{}", wt.branch)
        );
        assert_eq!(
            git(&wt.path, &["status", "--porcelain"]),
            "",
            "{label}: a clean checkout"
        );
        assert_eq!(files(&wt.path), files(&fx.repo), "{label}");
        let list = git(&fx.repo, &["worktree", "list", "--porcelain"]);
        let entry = list
            .split("\n\n")
            .find(|e| e.starts_with(&format!("worktree {}", wt.path.display())))
            .unwrap_or_else(|| panic!("{label}: not registered:\n{list}"));
        assert!(
            entry.contains(&format!("locked {AGENT_LOCK_REASON}")),
            "{label}: not locked:\n{entry}"
        );
        // The value round-trips through JSON (the store keeps it).
        let json = serde_json::to_string(&wt).unwrap();
        assert_eq!(serde_json::from_str::<Worktree>(&json).unwrap(), wt);
    }
}

#[test]
fn a_base_is_any_revision_resolved_once() {
    let fx = Fixture::new();
    let first = git(&fx.repo, &["rev-parse", "HEAD"]);
    git(&fx.repo, &["tag", "v1"]);
    write(&fx.repo, "second.txt", "2\n");
    commit_all(&fx.repo, "second");
    for (label, ws) in fx.both() {
        let prefix = label.replace('_', "-");
        for (i, rev) in ["v1", "HEAD~1", first.as_str(), "main~1"]
            .iter()
            .enumerate()
        {
            let wt = ws
                .create(
                    &fx.repo,
                    &Base::Ref(rev.to_string()),
                    &name(&format!("{prefix}-{i}")),
                )
                .unwrap();
            assert_eq!(wt.base_commit, first, "{label}: {rev}");
            assert!(!wt.path.join("second.txt").exists(), "{label}: {rev}");
        }
    }
}

#[test]
fn a_stale_same_named_branch_is_never_reused() {
    let fx = Fixture::new();
    let old = git(&fx.repo, &["rev-parse", "HEAD"]);
    write(&fx.repo, "new.txt", "new\n");
    commit_all(&fx.repo, "newer");
    for (label, ws) in fx.both() {
        let dir = format!("{label}-stale").replace('_', "-");
        let branch = format!("coderig/0123abcd/{dir}");
        git(&fx.repo, &["branch", &branch, &old]);
        let before = repo_state(&fx.repo);

        let err = ws
            .create(&fx.repo, &Base::default(), &name(&dir))
            .unwrap_err();

        assert_eq!(err.kind(), ErrorKind::Conflict, "{label}: {err}");
        assert!(err.message().contains(&branch), "{label}: {err}");
        assert_eq!(err.details()["branch"], branch.as_str());
        assert_eq!(
            repo_state(&fx.repo),
            before,
            "{label}: the stale branch or repo changed"
        );
        assert_eq!(git(&fx.repo, &["rev-parse", &branch]), old, "{label}");
        assert!(
            root_entries(ws.root()).is_empty(),
            "{label}: {:?}",
            root_entries(ws.root())
        );
    }
}

#[test]
fn a_bad_base_ref_leaves_no_branch_no_directory_no_registration_no_record() {
    let fx = Fixture::new();
    for (label, ws) in fx.both() {
        let before = repo_state(&fx.repo);
        for bad in ["no-such-branch", "HEAD~99", "-rf", ""] {
            let err = ws
                .create(&fx.repo, &Base::Ref(bad.to_string()), &name("contestant"))
                .unwrap_err();
            assert_eq!(
                err.kind(),
                ErrorKind::InvalidInput,
                "{label} {bad:?}: {err}"
            );
            assert_eq!(err.details()["base"], bad, "{label}");
        }
        assert_eq!(repo_state(&fx.repo), before, "{label}");
        assert!(root_entries(ws.root()).is_empty(), "{label}");
    }
}

#[test]
fn a_create_that_fails_after_making_the_branch_undoes_everything() {
    let fx = Fixture::new();
    // A commit whose checkout must fail: a file name longer than any file
    // system allows. The branch gets created, then `worktree add` fails.
    let blob = git_with_output(&fx.repo, &["hash-object", "-w", "--stdin"], b"x");
    let long = "a".repeat(300);
    let tree = git_with_output(
        &fx.repo,
        &["mktree"],
        format!("100644 blob {blob}\t{long}\n").as_bytes(),
    );
    let commit = git(
        &fx.repo,
        &["commit-tree", &tree, "-m", "unfit for checkout"],
    );
    for (label, ws) in fx.both() {
        let before = repo_state(&fx.repo);
        let err = ws
            .create(&fx.repo, &Base::Ref(commit.clone()), &name("doomed"))
            .unwrap_err();
        // It failed in the checkout, after the branch was made.
        assert_eq!(err.kind(), ErrorKind::Io, "{label}: {err}");
        assert!(
            err.message().contains("worktree") && err.message().contains("too long"),
            "{label}: {err}"
        );
        assert!(
            !err.details().contains_key("rollback_error"),
            "{label}: {:?}",
            err.details()
        );
        assert_eq!(repo_state(&fx.repo), before, "{label}: {err}");
        assert!(
            !fx.repo.join(".git/worktrees").exists()
                || std::fs::read_dir(fx.repo.join(".git/worktrees"))
                    .unwrap()
                    .count()
                    == 0,
            "{label}: a registration is left"
        );
        assert!(
            root_entries(ws.root()).is_empty(),
            "{label}: {:?}",
            root_entries(ws.root())
        );
    }
}

/// Runs git with `stdin`, returns trimmed stdout.
fn git_with_output(dir: &Path, args: &[&str], stdin: &[u8]) -> String {
    use std::io::Write;
    let mut child = git_cmd(dir)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

#[test]
fn an_existing_directory_or_a_second_create_is_a_conflict() {
    let fx = Fixture::new();
    let ws = fx.workspace();
    let wt = ws
        .create(&fx.repo, &Base::default(), &name("twice"))
        .unwrap();
    let err = ws
        .create(&fx.repo, &Base::default(), &name("twice"))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    assert!(wt.path.is_dir());

    std::fs::create_dir_all(ws.root().join(BATTLE).join("squatter")).unwrap();
    let err = ws
        .create(&fx.repo, &Base::default(), &name("squatter"))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    assert!(git(&fx.repo, &["branch", "--list", "coderig/0123abcd/squatter"]).is_empty());
}

#[test]
fn contestants_of_one_battle_and_one_contestant_in_two_battles_coexist() {
    let fx = Fixture::new();
    let ws = fx.workspace();
    let a = ws
        .create(&fx.repo, &Base::default(), &name("claude-sonnet"))
        .unwrap();
    let b = ws
        .create(&fx.repo, &Base::default(), &name("qwen-coder"))
        .unwrap();
    let other = WorktreeName::new("2025-02-01-coding-fedcba98", "claude-sonnet").unwrap();
    let c = ws.create(&fx.repo, &Base::default(), &other).unwrap();
    assert_ne!(a.path, b.path);
    assert_ne!(a.branch, c.branch);
    assert_eq!(c.branch, "coderig/fedcba98/claude-sonnet");
    for wt in [&a, &b, &c] {
        assert!(wt.path.join("README.md").is_file());
    }
}

#[test]
fn a_repository_outside_the_project_roots_or_not_at_its_top_is_refused() {
    let fx = Fixture::new();
    let ws = fx.workspace();
    let outside = fx.scratch("outside").join("repo");
    init_repo(&outside);
    let err = ws
        .create(&outside, &Base::default(), &name("x"))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert!(
        err.message().contains(fx.projects.to_str().unwrap()),
        "{err}"
    );

    // A symlink inside the root that leads to the outside repository.
    std::os::unix::fs::symlink(&outside, fx.projects.join("sneaky")).unwrap();
    let err = ws
        .create(&fx.projects.join("sneaky"), &Base::default(), &name("x"))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    let err = ws
        .create(
            &fx.projects.join("repo/../../scratch/outside/repo"),
            &Base::default(),
            &name("x"),
        )
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");

    let err = ws
        .create(&fx.repo.join("src"), &Base::default(), &name("x"))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert!(err.message().contains("not the top"), "{err}");

    // A relative path is relative to the (first) project root.
    let wt = ws
        .create(Path::new("repo"), &Base::default(), &name("relative"))
        .unwrap();
    assert_eq!(wt.repo, fx.repo);
    assert!(root_entries(ws.root()).iter().all(|e| e == BATTLE));
}

#[test]
fn names_and_bases_are_checked_before_anything_happens() {
    for (battle, contestant) in [
        ("2025-01-31-coding-0123abcd", ""),
        ("2025-01-31-coding-0123abcd", "../x"),
        ("2025-01-31-coding-0123abcd", "Claude"),
        ("2025-01-31-coding-0123abcd", "a--b"),
        ("2025-01-31-coding-0123abc", "a"),
        ("2025-01-31-coding-0123abcg", "a"),
        ("0123abcd", "a"),
        ("x/2025-01-31-coding-0123abcd", "a"),
    ] {
        let err = WorktreeName::new(battle, contestant).unwrap_err();
        assert_eq!(
            err.kind(),
            ErrorKind::InvalidInput,
            "{battle:?} {contestant:?}"
        );
    }
    let ok = WorktreeName::new("2025-01-31-coding-0123abcd", "claude-sonnet-4").unwrap();
    assert_eq!(ok.battle_hex(), "0123abcd");
    assert_eq!(ok.branch(), "coderig/0123abcd/claude-sonnet-4");
    assert!(serde_json::from_value::<WorktreeName>(serde_json::json!({
        "battle_slug": "2025-01-31-coding-0123abcd", "contestant_dir": "../etc"
    }))
    .is_err());

    assert_eq!("snapshot".parse::<Base>().unwrap(), Base::Snapshot);
    assert_eq!(" Snapshot ".parse::<Base>().unwrap(), Base::Snapshot);
    assert_eq!(
        "HEAD~1".parse::<Base>().unwrap(),
        Base::Ref("HEAD~1".into())
    );
    assert_eq!(Base::default(), Base::Ref("HEAD".into()));
    assert_eq!(
        "  ".parse::<Base>().unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    assert_eq!(serde_json::to_value(Base::Snapshot).unwrap(), "snapshot");
    assert_eq!(
        serde_json::from_value::<Base>(serde_json::json!("main")).unwrap(),
        Base::Ref("main".into())
    );
}

#[test]
fn of_concurrent_creates_of_one_name_exactly_one_wins_and_stays_intact() {
    let fx = Fixture::new();
    let ws = std::sync::Arc::new(fx.workspace());
    let results: Vec<_> = (0..4)
        .map(|_| {
            let ws = ws.clone();
            let repo = fx.repo.clone();
            std::thread::spawn(move || ws.create(&repo, &Base::default(), &name("racer")))
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|h| h.join().unwrap())
        .collect();
    let winners: Vec<&Worktree> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
    assert_eq!(winners.len(), 1, "{results:?}");
    for r in &results {
        if let Err(e) = r {
            assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
        }
    }
    let wt = winners[0];
    assert!(wt.path.join("README.md").is_file());
    assert_eq!(git(&fx.repo, &["rev-parse", &wt.branch]), wt.base_commit);
    assert_eq!(ws.sweep().unwrap().live, vec![wt.clone()]);
}

#[test]
fn a_repository_path_that_does_not_exist_is_invalid_input() {
    let fx = Fixture::new();
    let ws = fx.workspace();
    for missing in [fx.projects.join("nope"), fx.repo.join("README.md")] {
        let err = ws
            .create(&missing, &Base::default(), &name("x"))
            .unwrap_err();
        assert_eq!(
            err.kind(),
            ErrorKind::InvalidInput,
            "{}: {err}",
            missing.display()
        );
    }
}

/// Removing a worktree deletes its branch, and git prunes the emptied
/// `refs/heads/coderig/` directory: a creation running beside it (another
/// battle's contestant, an oracle checkout) must not fail because the
/// directory vanished under it.
#[test]
fn creations_beside_removals_in_one_repository_never_fail() {
    let fx = Fixture::new();
    for (label, ws) in fx.both() {
        let ws = std::sync::Arc::new(ws);
        let threads: Vec<_> = (0..3)
            .map(|t| {
                let ws = ws.clone();
                let repo = fx.repo.clone();
                std::thread::spawn(move || {
                    for i in 0..15 {
                        let slug = format!("oracle-{t:02x}{i:02x}{label_len:04x}", label_len = 0);
                        let name = WorktreeName::new(&slug, "checkout").unwrap();
                        let wt = ws
                            .create(&repo, &Base::Ref("HEAD".into()), &name)
                            .unwrap_or_else(|e| panic!("thread {t} creation {i}: {e}"));
                        ws.unlock(&wt).unwrap();
                        ws.remove(&wt, &RemoveProof::Discard).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join()
                .unwrap_or_else(|_| panic!("{label}: a creation failed"));
        }
    }
}
