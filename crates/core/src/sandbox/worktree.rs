//! The git directories of a linked worktree (feature `runtime`): what a
//! confined process editing a worktree must also be able to write for git
//! to work there. Read from the worktree's `.git` file, so it is IO, kept
//! apart from the pure policy.

use std::path::{Path, PathBuf};

/// The git directories an `edit` turn in a linked worktree needs to use
/// git there (`git add`, `git commit` on a detached head, `git stash`):
/// the worktree's own git dir (its `HEAD`, index, logs) and the
/// repository's object store. The rest of the repository's `.git` — the
/// user's refs, config, hooks, other worktrees — stays read-only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorktreeGit {
    /// `<repo>/.git/worktrees/<name>`, as the worktree's `.git` file says.
    pub git_dir: PathBuf,
    /// The common dir's `objects/`.
    pub objects: PathBuf,
}

/// The worktree `workdir` lies in, if it lies in a linked worktree (or any
/// checkout whose `.git` is a `gitdir:` file): the nearest `.git` at or
/// above `workdir`. A `.git` directory (a main checkout) gives `None`:
/// it is inside the work dir when the work dir is the checkout, and stays
/// read-only when the work dir is below it.
pub fn find_worktree(workdir: &Path) -> Option<WorktreeGit> {
    for dir in workdir.ancestors() {
        let dot_git = dir.join(".git");
        let Ok(meta) = std::fs::metadata(&dot_git) else {
            continue;
        };
        if meta.is_dir() {
            return None;
        }
        let text = std::fs::read_to_string(&dot_git).ok()?;
        let git_dir = text.lines().next()?.strip_prefix("gitdir:")?.trim();
        let git_dir = dir.join(git_dir);
        let common = match std::fs::read_to_string(git_dir.join("commondir")) {
            Ok(common) => git_dir.join(common.trim()),
            Err(_) => git_dir.clone(),
        };
        let real = |p: PathBuf| p.canonicalize().unwrap_or(p);
        return Some(WorktreeGit {
            objects: real(common.join("objects")),
            git_dir: real(git_dir),
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worktrees_are_found_by_their_git_file() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path().canonicalize().unwrap();
        let main = r.join("repo");
        let gitdir = main.join(".git/worktrees/wt");
        std::fs::create_dir_all(&gitdir).unwrap();
        std::fs::create_dir_all(main.join(".git/objects")).unwrap();
        std::fs::write(gitdir.join("commondir"), "../..\n").unwrap();
        let wt = r.join("wt");
        std::fs::create_dir_all(wt.join("sub")).unwrap();
        std::fs::write(wt.join(".git"), format!("gitdir: {}\n", gitdir.display())).unwrap();
        let want = Some(WorktreeGit {
            git_dir: gitdir.clone(),
            objects: main.join(".git/objects"),
        });
        assert_eq!(find_worktree(&wt), want);
        assert_eq!(find_worktree(&wt.join("sub")), want, "from a subdirectory");
        // A main checkout, and a directory in no repository.
        assert_eq!(find_worktree(&main), None);
        assert_eq!(find_worktree(&r), None);
        // A relative gitdir without a commondir (a separate git dir).
        let sep = r.join("sep");
        std::fs::create_dir_all(sep.join("g/objects")).unwrap();
        std::fs::create_dir_all(sep.join("w")).unwrap();
        std::fs::write(sep.join("w/.git"), "gitdir: ../g\n").unwrap();
        assert_eq!(
            find_worktree(&sep.join("w")),
            Some(WorktreeGit {
                git_dir: sep.join("g"),
                objects: sep.join("g/objects"),
            })
        );
    }
}
