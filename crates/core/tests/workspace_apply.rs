//! `apply`: a patch onto the oracle's fresh checkout or the user's tree,
//! all or nothing, never through a symlink out of the target.
#![cfg(feature = "git")]

mod workspace_support;

use coderig::workspace::{Base, Patch, Workspace};
use coderig::ErrorKind;
use workspace_support::*;

const NEW_FILE_PATCH: &str = "diff --git a/escape/evil.txt b/escape/evil.txt
new file mode 100644
index 0000000000000000000000000000000000000000..0c23cc9b56fd4a7a1e2e7e2a1ba1e6c9a0c2f2a5
--- /dev/null
+++ b/escape/evil.txt
@@ -0,0 +1 @@
+evil
";

#[test]
fn a_contestants_patch_applies_to_the_oracles_fresh_checkout_of_the_base() {
    let fx = Fixture::new();
    for (label, ws) in fx.both() {
        let prefix = label.replace('_', "-");
        let wt = ws
            .create(&fx.repo, &Base::default(), &name(&format!("{prefix}-work")))
            .unwrap();
        write(&wt.path, "src/lib.rs", "pub fn rewritten() {}\n");
        write(&wt.path, "assets/extra.bin", binary_bytes(5));
        std::fs::rename(wt.path.join("README.md"), wt.path.join("README.txt")).unwrap();
        write(&wt.path, "target/ignored.o", "x");
        let patch = ws.diff(&wt).unwrap();

        // The oracle: a fresh checkout of the base, never the agent's worktree.
        let oracle = ws
            .create(
                &fx.repo,
                &Base::Ref(wt.base_commit.clone()),
                &name(&format!("{prefix}-verify")),
            )
            .unwrap();
        ws.apply(&patch, &oracle.path).unwrap();

        let mut expected = files(&wt.path);
        expected.remove("target/ignored.o");
        assert_eq!(files(&oracle.path), expected, "{label}");
        // The working tree only: the index still matches the base.
        assert_eq!(
            git(&oracle.path, &["diff", "--cached", "--name-only"]),
            "",
            "{label}"
        );
    }
}

#[test]
fn battle_apply_changes_the_users_files_but_not_their_index() {
    let fx = Fixture::new();
    let ws = fx.workspace();
    let wt = ws
        .create(&fx.repo, &Base::default(), &name("winner"))
        .unwrap();
    write(&wt.path, "src/lib.rs", "pub fn winner() {}\n");
    write(&wt.path, "new/file.txt", "from the winner\n");
    let patch = ws.diff(&wt).unwrap();
    let index_before = std::fs::read(fx.repo.join(".git/index")).unwrap();

    ws.apply(&patch, &fx.repo).unwrap();

    assert_eq!(
        std::fs::read_to_string(fx.repo.join("src/lib.rs")).unwrap(),
        "pub fn winner() {}\n"
    );
    assert_eq!(
        std::fs::read_to_string(fx.repo.join("new/file.txt")).unwrap(),
        "from the winner\n"
    );
    assert_eq!(
        std::fs::read(fx.repo.join(".git/index")).unwrap(),
        index_before
    );
}

#[test]
fn a_patch_that_does_not_apply_cleanly_changes_nothing() {
    let fx = Fixture::new();
    for (label, ws) in fx.both() {
        let prefix = label.replace('_', "-");
        let wt = ws
            .create(&fx.repo, &Base::default(), &name(&format!("{prefix}-late")))
            .unwrap();
        // Files that would apply cleanly, plus one that will not.
        write(&wt.path, "src/lib.rs", "pub fn clean_part() {}\n");
        write(&wt.path, "brand-new.txt", "new\n");
        write(&wt.path, "assets/logo.bin", binary_bytes(8));
        write(&wt.path, "README.md", "# demo\n\ncontestant's line two\n");
        let patch = ws.diff(&wt).unwrap();

        // Meanwhile the user changed README.md the other way.
        let user = fx.scratch(&format!("{label}-user")).join("repo");
        init_repo(&user);
        let user_in_root = fx.projects.join(format!("{prefix}-user"));
        std::fs::rename(&user, &user_in_root).unwrap();
        write(
            &user_in_root,
            "README.md",
            "# demo\n\nthe user's line two\n",
        );
        let before = repo_state(&user_in_root);

        let err = ws.apply(&patch, &user_in_root).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Conflict, "{label}: {err}");
        assert!(
            err.message().contains("nothing was changed"),
            "{label}: {err}"
        );
        assert_eq!(
            repo_state(&user_in_root),
            before,
            "{label}: the target changed"
        );

        // A new file that already exists, untracked, in the target.
        let adder = ws
            .create(&fx.repo, &Base::default(), &name(&format!("{prefix}-add")))
            .unwrap();
        write(&adder.path, "brand-new.txt", "new\n");
        let only_new = ws.diff(&adder).unwrap();
        write(&fx.repo, "brand-new.txt", "the user's own\n");
        let before = repo_state(&fx.repo);
        let err = ws.apply(&only_new, &fx.repo).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Conflict, "{label}: {err}");
        assert_eq!(repo_state(&fx.repo), before, "{label}");
        std::fs::remove_file(fx.repo.join("brand-new.txt")).unwrap();
    }
}

#[test]
fn a_patch_writing_through_a_symlink_out_of_the_target_is_refused() {
    let fx = Fixture::new();
    let outside = fx.scratch("outside-dir");
    std::os::unix::fs::symlink(&outside, fx.repo.join("escape")).unwrap();
    commit_all(&fx.repo, "a symlink to elsewhere");
    for (label, ws) in fx.both() {
        let before = repo_state(&fx.repo);
        let err = ws
            .apply(&Patch::new(NEW_FILE_PATCH.into(), None), &fx.repo)
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{label}: {err}");
        assert!(
            err.message().contains(fx.repo.to_str().unwrap()),
            "{label}: {err}"
        );
        assert_eq!(err.details()["root"], fx.repo.to_str().unwrap());
        assert!(!outside.join("evil.txt").exists(), "{label}: wrote outside");
        assert_eq!(repo_state(&fx.repo), before, "{label}");
    }
}

#[test]
fn targets_must_be_repositories_under_a_root_and_patches_well_formed() {
    let fx = Fixture::new();
    let ws = fx.workspace();
    let patch = Patch::new(NEW_FILE_PATCH.replace("escape/", "").into(), None);

    let outside = fx.scratch("elsewhere").join("repo");
    init_repo(&outside);
    let err = ws.apply(&patch, &outside).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert!(!outside.join("evil.txt").exists());

    let plain = fx.projects.join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let err = ws.apply(&patch, &plain).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");

    for (label, ws) in fx.both() {
        let garbage = Patch::new(b"diff --git a/x b/x\n@@ nonsense @@\n+".to_vec(), None);
        let err = ws.apply(&garbage, &fx.repo).unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::InvalidInput | ErrorKind::Conflict),
            "{label}: {err}"
        );
        let before = repo_state(&fx.repo);
        ws.apply(&Patch::new(Vec::new(), None), &fx.repo).unwrap();
        assert_eq!(repo_state(&fx.repo), before, "{label}");
    }
}
