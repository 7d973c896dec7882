//! Repositories libgit2 cannot handle faithfully take the git CLI:
//! submodules, filter drivers (Git LFS), sparse checkouts.
#![cfg(feature = "git")]

mod workspace_support;

use coderig::workspace::{Backend, Base, CliReason, Workspace};
use workspace_support::*;

#[test]
fn a_repository_with_gitmodules_takes_the_git_cli_and_its_patches_apply() {
    let fx = Fixture::new();
    let sub = fx.scratch("sub").join("lib");
    init_repo(&sub);
    git(
        &fx.repo,
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "--quiet",
            sub.to_str().unwrap(),
            "libs/lib",
        ],
    );
    commit_all(&fx.repo, "a submodule");
    let ws = fx.workspace();
    assert_eq!(
        ws.backend_for(&fx.repo).unwrap(),
        (Backend::GitCli, Some(CliReason::Submodules))
    );

    let wt = ws
        .create(&fx.repo, &Base::default(), &name("with-sub"))
        .unwrap();
    assert_eq!(wt.backend, Backend::GitCli);
    // `git worktree add` made it (a linked worktree git lists).
    assert!(git(&fx.repo, &["worktree", "list"]).contains(wt.path.to_str().unwrap()));
    // The submodule is not checked out in the worktree; that is no change.
    assert!(ws.diff(&wt).unwrap().is_empty());

    write(&wt.path, "src/lib.rs", "pub fn with_sub() {}\n");
    write(&wt.path, "new.bin", binary_bytes(4));
    let patch = ws.diff(&wt).unwrap();
    let t = String::from_utf8_lossy(patch.as_bytes()).into_owned();
    assert!(
        t.contains("GIT binary patch") && !t.contains("libs/lib"),
        "{t}"
    );

    let checkout = fx.scratch("checkout").join("repo");
    fresh_checkout(&fx.repo, &wt.base_commit, &checkout);
    let (ok, stderr) = git_with_input(&checkout, &["apply", "-"], patch.as_bytes());
    assert!(ok, "{stderr}");
    assert_eq!(
        std::fs::read(checkout.join("new.bin")).unwrap(),
        binary_bytes(4)
    );

    let oracle = ws
        .create(
            &fx.repo,
            &Base::Ref(wt.base_commit.clone()),
            &name("with-sub-verify"),
        )
        .unwrap();
    ws.apply(&patch, &oracle.path).unwrap();
    assert_eq!(
        std::fs::read(oracle.path.join("new.bin")).unwrap(),
        binary_bytes(4)
    );
}

#[test]
fn a_repository_with_an_lfs_filter_takes_the_git_cli_which_runs_the_filter() {
    let fx = Fixture::new();
    write(
        &fx.repo,
        ".gitattributes",
        "*.up filter=lfs diff=lfs merge=lfs -text\n",
    );
    commit_all(&fx.repo, "lfs attributes");
    // Stand-in filter commands under LFS's name (git-lfs itself is not on
    // this machine): clean upper-cases, smudge passes through. Only git runs
    // filter drivers, so the upper case proves the CLI did the work.
    git(&fx.repo, &["config", "filter.lfs.clean", "tr a-z A-Z"]);
    git(&fx.repo, &["config", "filter.lfs.smudge", "cat"]);
    let ws = fx.workspace();
    assert_eq!(
        ws.backend_for(&fx.repo).unwrap(),
        (Backend::GitCli, Some(CliReason::Lfs))
    );

    let wt = ws.create(&fx.repo, &Base::default(), &name("lfs")).unwrap();
    assert_eq!(wt.backend, Backend::GitCli);
    write(&wt.path, "data.up", "hello\n");
    write(&wt.path, "plain.txt", "hello\n");
    let t = String::from_utf8_lossy(ws.diff(&wt).unwrap().as_bytes()).into_owned();
    assert!(t.contains("b/data.up") && t.contains("+HELLO"), "{t}");
    assert!(t.contains("b/plain.txt") && t.contains("+hello"), "{t}");

    // A snapshot of the user's tree goes through the same filter.
    write(&fx.repo, "user.up", "mixed Case\n");
    let snapshot = ws.snapshot(&fx.repo).unwrap();
    assert_eq!(
        git(&fx.repo, &["show", &format!("{snapshot}:user.up")]),
        "MIXED CASE"
    );
}

#[test]
fn other_filter_drivers_even_in_nested_attributes_take_the_git_cli() {
    let fx = Fixture::new();
    write(&fx.repo, "secrets/.gitattributes", "*.key filter=crypt\n");
    commit_all(&fx.repo, "nested attributes");
    assert_eq!(
        fx.workspace().backend_for(&fx.repo).unwrap(),
        (Backend::GitCli, Some(CliReason::Filter))
    );
}

#[test]
fn a_sparse_checkout_takes_the_git_cli_and_files_outside_the_cone_are_not_deleted() {
    let fx = Fixture::new();
    git(&fx.repo, &["sparse-checkout", "set", "--no-cone", "/src/"]);
    assert!(
        !fx.repo.join("README.md").exists(),
        "sparse checkout active"
    );
    let ws = fx.workspace();
    assert_eq!(
        ws.backend_for(&fx.repo).unwrap(),
        (Backend::GitCli, Some(CliReason::SparseCheckout))
    );
    let head = git(&fx.repo, &["rev-parse", "HEAD"]);
    let before = repo_state(&fx.repo);
    assert_eq!(
        ws.snapshot(&fx.repo).unwrap(),
        head,
        "README.md is not a deletion"
    );
    assert_eq!(repo_state(&fx.repo), before);

    write(&fx.repo, "src/extra.rs", "// new\n");
    let snapshot = ws.snapshot(&fx.repo).unwrap();
    let listing = git(&fx.repo, &["ls-tree", "-r", "--name-only", &snapshot]);
    assert!(
        listing.contains("README.md") && listing.contains("src/extra.rs"),
        "{listing}"
    );
}

#[test]
fn a_plain_repository_takes_libgit2() {
    let fx = Fixture::new();
    assert_eq!(
        fx.workspace().backend_for(&fx.repo).unwrap(),
        (Backend::Libgit2, None)
    );
    assert_eq!(
        fx.workspace_cli().backend_for(&fx.repo).unwrap(),
        (Backend::GitCli, Some(CliReason::Configured))
    );
}

#[test]
fn the_repositorys_hooks_never_run() {
    let fx = Fixture::new();
    let marker = fx.scratch("hooks").join("ran");
    for hook in ["post-checkout", "reference-transaction", "pre-commit"] {
        let path = fx.repo.join(".git/hooks").join(hook);
        write(
            &fx.repo,
            &format!(".git/hooks/{hook}"),
            format!("#!/bin/sh\necho {hook} >> {}\n", marker.display()),
        );
        let _ = path;
        make_executable(&fx.repo, &format!(".git/hooks/{hook}"));
    }
    for (label, ws) in fx.both() {
        let wt = ws
            .create(
                &fx.repo,
                &Base::Snapshot,
                &name(&format!("{label}-h").replace('_', "-")),
            )
            .unwrap();
        write(&wt.path, "x.txt", "x\n");
        ws.diff(&wt).unwrap();
        ws.unlock(&wt).unwrap();
        ws.remove(&wt, &coderig::workspace::RemoveProof::Discard)
            .unwrap();
        assert!(
            !marker.exists(),
            "{label}: a hook ran: {}",
            std::fs::read_to_string(&marker).unwrap_or_default()
        );
    }
}

#[test]
fn a_split_index_takes_the_git_cli_and_stays_untouched() {
    let fx = Fixture::new();
    git(&fx.repo, &["config", "core.splitIndex", "true"]);
    git(&fx.repo, &["update-index", "--split-index"]);
    write(&fx.repo, "dirty.txt", "dirty\n");
    let ws = fx.workspace();
    assert_eq!(
        ws.backend_for(&fx.repo).unwrap(),
        (Backend::GitCli, Some(CliReason::SplitIndex))
    );
    let listing = |repo: &std::path::Path| {
        let mut names: Vec<String> = std::fs::read_dir(repo.join(".git"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let before = (repo_state(&fx.repo), listing(&fx.repo));
    let snapshot = ws.snapshot(&fx.repo).unwrap();
    assert_eq!((repo_state(&fx.repo), listing(&fx.repo)), before);
    assert_eq!(
        git(&fx.repo, &["show", &format!("{snapshot}:dirty.txt")]),
        "dirty"
    );
}
