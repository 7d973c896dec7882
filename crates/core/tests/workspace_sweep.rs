//! `sweep`: at start, reconcile coderig's records, git's registrations and
//! the directories under the root, and say what was done.
#![cfg(feature = "git")]

mod workspace_support;

use coderig::workspace::{Base, SweepReport, Workspace, Worktree};
use std::path::{Path, PathBuf};
use workspace_support::*;

fn record_of(wt: &Worktree) -> PathBuf {
    wt.path
        .with_file_name(format!("{}.worktree.json", wt.name.contestant_dir()))
}

/// Rewrites the state in a worktree's record, as a crash would leave it.
fn set_record_state(wt: &Worktree, state: &str) {
    let path = record_of(wt);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("\"state\": \"ready\""), "{text}");
    std::fs::write(
        &path,
        text.replace("\"state\": \"ready\"", &format!("\"state\": \"{state}\"")),
    )
    .unwrap();
}

fn branch_exists(repo: &Path, branch: &str) -> bool {
    !git(repo, &["branch", "--list", branch]).is_empty()
}

fn registered(repo: &Path, wt: &Worktree) -> bool {
    git(repo, &["worktree", "list", "--porcelain"])
        .contains(&format!("worktree {}\n", wt.path.display()))
}

fn only(report: &SweepReport) -> SweepReport {
    let mut r = report.clone();
    r.live.clear();
    r
}

#[test]
fn sweep_reports_live_worktrees_and_touches_nothing() {
    let fx = Fixture::new();
    let ws = fx.workspace();
    let a = ws.create(&fx.repo, &Base::default(), &name("a")).unwrap();
    let b = ws.create(&fx.repo, &Base::default(), &name("b")).unwrap();
    write(&a.path, "work.txt", "unarchived work\n");
    let before = repo_state(&fx.repo);

    let report = ws.sweep().unwrap();

    assert_eq!(report.live, vec![a.clone(), b.clone()]);
    assert_eq!(only(&report), SweepReport::default());
    assert_eq!(repo_state(&fx.repo), before);
    assert!(a.path.join("work.txt").exists());
    assert_eq!(ws.sweep().unwrap(), report, "sweep is idempotent");
}

#[test]
fn a_worktree_whose_directory_is_gone_is_pruned_by_name_and_its_branch_deleted() {
    let fx = Fixture::new();
    // The user's own stale registration, which a repo-wide prune would drop.
    git(
        &fx.repo,
        &["worktree", "add", "--quiet", "-b", "users", "../users-wt"],
    );
    std::fs::remove_dir_all(fx.repo.parent().unwrap().join("users-wt")).unwrap();
    for (label, ws) in fx.both() {
        let wt = fx.worktree(&ws, label, "gone");
        std::fs::remove_dir_all(&wt.path).unwrap();

        let report = ws.sweep().unwrap();

        assert_eq!(report.pruned, vec![wt.path.clone()], "{label}: {report:?}");
        assert!(report.kept_branches.is_empty(), "{label}");
        assert!(!registered(&fx.repo, &wt), "{label}");
        assert!(!branch_exists(&fx.repo, &wt.branch), "{label}");
        assert!(!record_of(&wt).exists(), "{label}");
        assert!(
            fx.repo.join(".git/worktrees/users-wt").exists(),
            "{label}: the user's entry went"
        );
        assert!(branch_exists(&fx.repo, "users"), "{label}");
    }
}

#[test]
fn a_branch_with_commits_beyond_the_base_is_kept() {
    let fx = Fixture::new();
    let ws = fx.workspace();
    let wt = ws
        .create(&fx.repo, &Base::default(), &name("committer"))
        .unwrap();
    write(&wt.path, "kept.txt", "committed\n");
    commit_all(&wt.path, "the agent's commit");
    let tip = git(&wt.path, &["rev-parse", "HEAD"]);
    std::fs::remove_dir_all(&wt.path).unwrap();

    let report = ws.sweep().unwrap();

    assert_eq!(report.pruned, vec![wt.path.clone()]);
    assert_eq!(report.kept_branches.len(), 1, "{report:?}");
    assert_eq!(report.kept_branches[0].branch, wt.branch);
    assert_eq!(
        report.kept_branches[0].reason,
        "has commits beyond the base"
    );
    assert_eq!(git(&fx.repo, &["rev-parse", &wt.branch]), tip);
    assert!(!registered(&fx.repo, &wt));
}

#[test]
fn a_directory_git_no_longer_knows_is_removed() {
    let fx = Fixture::new();
    for (label, ws) in fx.both() {
        let wt = fx.worktree(&ws, label, "lost");
        // The registration vanished (someone deleted .git/worktrees/<id>).
        let id = std::fs::read_to_string(wt.path.join(".git")).unwrap();
        let admin = PathBuf::from(id.trim().strip_prefix("gitdir: ").unwrap());
        std::fs::remove_dir_all(admin).unwrap();

        let report = ws.sweep().unwrap();

        assert_eq!(
            report.removed_unregistered,
            vec![wt.path.clone()],
            "{label}: {report:?}"
        );
        assert!(!wt.path.exists(), "{label}");
        assert!(!branch_exists(&fx.repo, &wt.branch), "{label}");
        assert!(!record_of(&wt).exists(), "{label}");
    }
}

#[test]
fn interrupted_creations_are_rolled_back_and_interrupted_removals_finished() {
    let fx = Fixture::new();
    for (label, ws) in fx.both() {
        let prefix = label.replace('_', "-");
        // Crashed after every step but the final record update.
        let late = ws
            .create(&fx.repo, &Base::default(), &name(&format!("{prefix}-late")))
            .unwrap();
        set_record_state(&late, "creating");
        // Crashed after the record, before the branch: only the record exists.
        let early = ws
            .create(
                &fx.repo,
                &Base::default(),
                &name(&format!("{prefix}-early")),
            )
            .unwrap();
        let early_record = std::fs::read_to_string(record_of(&early)).unwrap();
        ws.unlock(&early).unwrap();
        ws.remove(&early, &coderig::workspace::RemoveProof::Discard)
            .unwrap();
        std::fs::create_dir_all(record_of(&early).parent().unwrap()).unwrap();
        std::fs::write(
            record_of(&early),
            early_record.replace("\"state\": \"ready\"", "\"state\": \"creating\""),
        )
        .unwrap();
        // Crashed in the middle of a proven removal.
        let removing = ws
            .create(
                &fx.repo,
                &Base::default(),
                &name(&format!("{prefix}-removing")),
            )
            .unwrap();
        ws.unlock(&removing).unwrap();
        set_record_state(&removing, "removing");
        let user_before = git(&fx.repo, &["status", "--porcelain"]);

        let report = ws.sweep().unwrap();

        let mut rolled = report.rolled_back.clone();
        rolled.sort();
        let mut expected = vec![early.path.clone(), late.path.clone()];
        expected.sort();
        assert_eq!(rolled, expected, "{label}: {report:?}");
        assert_eq!(
            report.finished_removals,
            vec![removing.path.clone()],
            "{label}"
        );
        assert!(report.problems.is_empty(), "{label}: {:?}", report.problems);
        for wt in [&late, &early, &removing] {
            assert!(!wt.path.exists(), "{label}: {}", wt.path.display());
            assert!(!registered(&fx.repo, wt), "{label}");
            assert!(!branch_exists(&fx.repo, &wt.branch), "{label}");
            assert!(!record_of(wt).exists(), "{label}");
        }
        assert_eq!(
            git(&fx.repo, &["status", "--porcelain"]),
            user_before,
            "{label}"
        );
    }
}

#[test]
fn strays_under_the_root_are_removed_unless_git_knows_them() {
    let fx = Fixture::new();
    let ws = fx.workspace();
    let battle = ws.root().join(BATTLE);
    write(&battle, "stray/file.txt", "no record, no registration\n");
    write(
        &battle,
        ".claude.worktree.json.123.4.tmp",
        "half-written record\n",
    );
    write(ws.root(), ".tmp/99-1/index", "a temporary index\n");
    // Someone put a real worktree of their own under the root.
    git(
        &fx.repo,
        &[
            "worktree",
            "add",
            "--quiet",
            "-b",
            "theirs",
            battle.join("theirs").to_str().unwrap(),
        ],
    );

    let report = ws.sweep().unwrap();

    assert_eq!(report.removed_unregistered, vec![battle.join("stray")]);
    assert_eq!(report.left_alone, vec![battle.join("theirs")]);
    assert_eq!(report.temp_files_removed, 2);
    assert!(battle.join("theirs/README.md").exists());
    assert!(branch_exists(&fx.repo, "theirs"));
    assert!(!ws.root().join(".tmp").exists());
}

#[test]
fn worktrees_of_a_repository_that_is_gone_are_removed() {
    let fx = Fixture::new();
    let other = fx.projects.join("doomed-repo");
    init_repo(&other);
    let ws = fx.workspace();
    let wt = ws
        .create(&other, &Base::default(), &name("orphan"))
        .unwrap();
    std::fs::remove_dir_all(&other).unwrap();

    let report = ws.sweep().unwrap();

    assert_eq!(
        report.removed_unregistered,
        vec![wt.path.clone()],
        "{report:?}"
    );
    assert!(!wt.path.exists());
    assert!(!record_of(&wt).exists());
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}
