//! One repository, opened over libgit2 or the git CLI: the operations the
//! workspace needs, each with the same contract on both backends. The
//! snapshot of a working tree and the patches live in rooms of their own.

use super::admin::{exists, io_err, TempDir};
use super::cli;
use crate::error::Error;
use crate::workspace::{Backend, CliReason};
use git2::{
    ApplyLocation, ApplyOptions, Diff, DiffFindOptions, DiffFormat, DiffOptions, Index,
    IndexAddOption, IndexTime, Oid, Repository, Signature, Time, TreeWalkMode, TreeWalkResult,
    WorktreeAddOptions,
};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

mod patch;
mod snapshot;

/// What every operation needs besides the repository.
pub(super) struct Ctx<'a> {
    /// The git program.
    pub program: &'a Path,
    /// Where temporary index files go.
    pub tmp_root: &'a Path,
}

/// Which backend to open a repository with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Want {
    /// Decide from the repository (or the CLI everywhere when `always_cli`).
    Detect { always_cli: bool },
    /// The backend a worktree was created with.
    Exactly(Backend),
}

/// An opened repository.
pub(super) struct Repo {
    /// The top of its working tree, canonical.
    pub workdir: PathBuf,
    /// Its common git directory, canonical.
    pub common_dir: PathBuf,
    /// The backend that handles it.
    pub backend: Backend,
    /// Why the CLI, when it is the CLI and the repository decided it.
    pub reason: Option<CliReason>,
    lib: Option<Repository>,
}

pub(super) fn lib_err(what: impl std::fmt::Display, e: &git2::Error) -> Error {
    Error::io(format!("{what}: {}", e.message()))
        .with_detail("git_class", format!("{:?}", e.class()))
        .with_detail("git_code", format!("{:?}", e.code()))
}

fn canonical(path: &Path) -> Result<PathBuf, Error> {
    std::fs::canonicalize(path).map_err(|e| io_err("cannot resolve", path, &e))
}

fn not_top(path: &Path, top: &Path) -> Error {
    Error::invalid_input(format!(
        "{} is not the top of a git working tree (the top is {})",
        path.display(),
        top.display()
    ))
    .with_detail("path", path.to_string_lossy().as_ref())
}

/// Scans `.gitattributes` text for `filter=` attributes: (lfs, other).
fn scan_attributes(text: &str) -> (bool, bool) {
    let (mut lfs, mut other) = (false, false);
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        for token in line.split_whitespace().skip(1) {
            if token == "filter=lfs" {
                lfs = true;
            } else if token.starts_with("filter=") {
                other = true;
            }
        }
    }
    (lfs, other)
}

/// Why libgit2 would not handle this repository faithfully, if it would not.
fn detect(repo: &Repository, workdir: &Path, git_dir: &Path, common: &Path) -> Option<CliReason> {
    if exists(&workdir.join(".gitmodules")) {
        return Some(CliReason::Submodules);
    }
    let mut texts: Vec<String> = [
        workdir.join(".gitattributes"),
        common.join("info/attributes"),
    ]
    .iter()
    .filter_map(|p| std::fs::read_to_string(p).ok())
    .collect();
    // Nested .gitattributes files of the committed tree.
    if let Ok(tree) = repo.head().and_then(|h| h.peel_to_tree()) {
        let _ = tree.walk(TreeWalkMode::PreOrder, |_, entry| {
            if entry.name().ok() == Some(".gitattributes") {
                if let Ok(blob) = repo.find_blob(entry.id()) {
                    texts.push(String::from_utf8_lossy(blob.content()).into_owned());
                }
            }
            TreeWalkResult::Ok
        });
    }
    let (mut lfs, mut other) = (false, false);
    for text in &texts {
        let (l, o) = scan_attributes(text);
        lfs |= l;
        other |= o;
    }
    if lfs {
        return Some(CliReason::Lfs);
    }
    if other {
        return Some(CliReason::Filter);
    }
    let sparse_config = repo
        .config()
        .and_then(|c| c.get_bool("core.sparseCheckout"))
        .unwrap_or(false);
    if sparse_config
        || exists(&git_dir.join("info/sparse-checkout"))
        || exists(&common.join("info/sparse-checkout"))
    {
        return Some(CliReason::SparseCheckout);
    }
    let split_config = repo
        .config()
        .and_then(|c| c.get_bool("core.splitIndex"))
        .unwrap_or(false);
    let shared_index = std::fs::read_dir(git_dir)
        .map(|entries| {
            entries
                .flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with("sharedindex."))
        })
        .unwrap_or(false);
    if split_config || shared_index {
        return Some(CliReason::SplitIndex);
    }
    None
}

fn check_rev(rev: &str) -> Result<(), Error> {
    if rev.is_empty() || rev.starts_with('-') || rev.contains(['\0', '\n', '\r']) {
        return Err(Error::invalid_input(format!(
            "{rev:?} is not a usable revision (empty, starting with '-', or with a NUL or newline)"
        ))
        .with_detail("base", rev));
    }
    Ok(())
}

impl Repo {
    /// Opens the repository whose working tree's top is `path` (canonical).
    ///
    /// Errors: `invalid_input` when `path` is not a git working tree, is a
    /// bare repository, or is below the top; `unavailable` when only the
    /// git program could open it and it is missing.
    pub(super) fn open(ctx: &Ctx<'_>, path: &Path, want: Want) -> Result<Repo, Error> {
        match Repository::open(path) {
            Ok(repo) => {
                let Some(workdir) = repo.workdir() else {
                    return Err(Error::invalid_input(format!(
                        "{} is a bare repository; a working tree is needed",
                        path.display()
                    ))
                    .with_detail("path", path.to_string_lossy().as_ref()));
                };
                let workdir = canonical(workdir)?;
                if workdir != path {
                    return Err(not_top(path, &workdir));
                }
                let common_dir = canonical(repo.commondir())?;
                let git_dir = canonical(repo.path())?;
                let reason = match want {
                    Want::Detect { always_cli: true } => Some(CliReason::Configured),
                    Want::Detect { always_cli: false } => {
                        detect(&repo, &workdir, &git_dir, &common_dir)
                    }
                    Want::Exactly(_) => None,
                };
                let backend = match want {
                    Want::Exactly(backend) => backend,
                    Want::Detect { .. } if reason.is_some() => Backend::GitCli,
                    Want::Detect { .. } => Backend::Libgit2,
                };
                Ok(Repo {
                    workdir,
                    common_dir,
                    backend,
                    reason,
                    lib: (backend == Backend::Libgit2).then_some(repo),
                })
            }
            Err(lib_error) => {
                let not_a_repo = || {
                    Error::invalid_input(format!(
                        "{} is not a git working tree: {}",
                        path.display(),
                        lib_error.message()
                    ))
                    .with_detail("path", path.to_string_lossy().as_ref())
                };
                // Not a directory at all: the CLI would fail to start in it.
                if want == Want::Exactly(Backend::Libgit2) || !path.is_dir() {
                    return Err(not_a_repo());
                }
                let mut cmd = cli::git(ctx.program, path);
                cmd.args([
                    "rev-parse",
                    "--show-toplevel",
                    "--git-common-dir",
                    "--is-bare-repository",
                ]);
                let output = match cli::run(&mut cmd, None) {
                    Ok(output) if output.status.success() => output,
                    Ok(_) => return Err(not_a_repo()),
                    Err(e) if lib_error.code() == git2::ErrorCode::NotFound => {
                        let _ = e;
                        return Err(not_a_repo());
                    }
                    Err(e) => return Err(e),
                };
                let text = String::from_utf8_lossy(&output.stdout).into_owned();
                let lines: Vec<&str> = text.lines().collect();
                if lines.len() < 2 {
                    return Err(not_a_repo());
                }
                let top = canonical(Path::new(lines[0]))?;
                if top != path {
                    return Err(not_top(path, &top));
                }
                let common_dir = canonical(&path.join(lines[1]))?;
                Ok(Repo {
                    workdir: top,
                    common_dir,
                    backend: Backend::GitCli,
                    reason: match want {
                        Want::Detect { .. } => Some(CliReason::Libgit2CannotOpen),
                        Want::Exactly(_) => None,
                    },
                    lib: None,
                })
            }
        }
    }

    /// The repository behind the common git directory `common`, for ref
    /// operations only: its working tree may be gone.
    pub(super) fn for_refs(common: &Path, backend: Backend) -> Result<Repo, Error> {
        let lib = match backend {
            Backend::Libgit2 => Some(Repository::open(common).map_err(|e| {
                lib_err(
                    format!("cannot open the repository at {}", common.display()),
                    &e,
                )
            })?),
            Backend::GitCli => None,
        };
        Ok(Repo {
            workdir: common.to_path_buf(),
            common_dir: common.to_path_buf(),
            backend,
            reason: None,
            lib,
        })
    }

    fn git(&self, ctx: &Ctx<'_>) -> std::process::Command {
        cli::git(ctx.program, &self.workdir)
    }

    /// The commit `rev` names (full hex id). A revision that names nothing,
    /// or no commit, is `invalid_input` (detail `base`).
    pub(super) fn resolve_commit(&self, ctx: &Ctx<'_>, rev: &str) -> Result<String, Error> {
        check_rev(rev)?;
        let bad = |why: String| {
            Error::invalid_input(format!(
                "the base {rev:?} does not name a commit in {}: {why}",
                self.workdir.display()
            ))
            .with_detail("base", rev)
        };
        match &self.lib {
            Some(repo) => repo
                .revparse_single(rev)
                .and_then(|o| o.peel_to_commit())
                .map(|c| c.id().to_string())
                .map_err(|e| bad(e.message().to_owned())),
            None => {
                let mut cmd = self.git(ctx);
                cmd.args(["rev-parse", "--verify", "--quiet"])
                    .arg(format!("{rev}^{{commit}}"));
                let output = cli::run(&mut cmd, None)?;
                if output.status.success() {
                    Ok(cli::line(&output.stdout))
                } else {
                    Err(bad("unknown revision".to_owned()))
                }
            }
        }
    }

    /// `HEAD`'s commit and its committer time, `None` on an unborn branch.
    pub(super) fn head(&self, ctx: &Ctx<'_>) -> Result<Option<(String, i64)>, Error> {
        match &self.lib {
            Some(repo) => match repo.head() {
                Ok(head) => {
                    let commit = head
                        .peel_to_commit()
                        .map_err(|e| lib_err("cannot read HEAD", &e))?;
                    Ok(Some((commit.id().to_string(), commit.time().seconds())))
                }
                Err(e)
                    if matches!(
                        e.code(),
                        git2::ErrorCode::UnbornBranch | git2::ErrorCode::NotFound
                    ) =>
                {
                    Ok(None)
                }
                Err(e) => Err(lib_err("cannot read HEAD", &e)),
            },
            None => {
                let mut cmd = self.git(ctx);
                cmd.args(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"]);
                let output = cli::run(&mut cmd, None)?;
                if !output.status.success() {
                    return Ok(None);
                }
                let id = cli::line(&output.stdout);
                let mut cmd = self.git(ctx);
                cmd.args(["show", "-s", "--format=%ct", &id]);
                let time = cli::line(&cli::run_ok(&mut cmd, None)?)
                    .parse()
                    .map_err(|_| Error::io(format!("cannot read the time of {id}")))?;
                Ok(Some((id, time)))
            }
        }
    }

    /// The commit `refname` (a full ref name) points at, `None` when it does
    /// not exist.
    pub(super) fn ref_tip(&self, ctx: &Ctx<'_>, refname: &str) -> Result<Option<String>, Error> {
        match &self.lib {
            Some(repo) => match repo.find_reference(refname) {
                Ok(r) => Ok(r
                    .resolve()
                    .ok()
                    .and_then(|r| r.target())
                    .map(|t| t.to_string())),
                Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(None),
                Err(e) => Err(lib_err(format!("cannot read {refname}"), &e)),
            },
            None => {
                let mut cmd = self.git(ctx);
                cmd.args(["rev-parse", "--verify", "--quiet", refname]);
                let output = cli::run(&mut cmd, None)?;
                Ok(output.status.success().then(|| cli::line(&output.stdout)))
            }
        }
    }

    /// Creates `refname` at `commit` (retrying when a concurrent deletion
    /// pruned the directory it goes in); `conflict` when it exists already
    /// (it is never overwritten).
    pub(super) fn create_branch(
        &self,
        ctx: &Ctx<'_>,
        refname: &str,
        commit: &str,
        message: &str,
    ) -> Result<(), Error> {
        let exists_already = || {
            let branch = refname.strip_prefix("refs/heads/").unwrap_or(refname);
            Error::conflict(format!(
                "the branch {branch} already exists in {}; coderig never reuses a branch",
                self.workdir.display()
            ))
            .with_detail("branch", branch)
        };
        match &self.lib {
            Some(repo) => {
                let id = Oid::from_str(commit).map_err(|e| lib_err("bad commit id", &e))?;
                // Deleting a branch prunes its empty parent directories
                // (`refs/heads/coderig/`): a concurrent deletion (another
                // contestant's or oracle checkout's removal) can take the
                // directory away between this creation's mkdir and its
                // lock file. The creation is atomic, so trying again is safe.
                let mut attempt = 0;
                loop {
                    attempt += 1;
                    match repo.reference(refname, id, false, message) {
                        Ok(_) => return Ok(()),
                        Err(e) if e.code() == git2::ErrorCode::Exists => {
                            return Err(exists_already())
                        }
                        Err(e) if attempt < 5 && vanished_dir(e.message()) => {
                            std::thread::sleep(std::time::Duration::from_millis(5 * attempt));
                        }
                        Err(e) => return Err(lib_err(format!("cannot create {refname}"), &e)),
                    }
                }
            }
            None => {
                let mut cmd = self.git(ctx);
                cmd.args([
                    "update-ref",
                    "--create-reflog",
                    "-m",
                    message,
                    refname,
                    commit,
                    "",
                ]);
                let mut output = cli::run(&mut cmd, None)?;
                // The same race as above, for `git update-ref`.
                for attempt in 1..5u64 {
                    if output.status.success()
                        || !vanished_dir(&String::from_utf8_lossy(&output.stderr))
                    {
                        break;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(5 * attempt));
                    output = cli::run(&mut cmd, None)?;
                }
                if output.status.success() {
                    Ok(())
                } else if self.ref_tip(ctx, refname)?.is_some() {
                    Err(exists_already())
                } else {
                    Err(cli::failed(&cmd, &output))
                }
            }
        }
    }

    /// Deletes `refname` if it still points at `expected`; returns whether
    /// it did (false: gone already, or moved).
    pub(super) fn delete_ref(
        &self,
        ctx: &Ctx<'_>,
        refname: &str,
        expected: &str,
    ) -> Result<bool, Error> {
        match &self.lib {
            Some(repo) => {
                let mut reference = match repo.find_reference(refname) {
                    Ok(r) => r,
                    Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(false),
                    Err(e) => return Err(lib_err(format!("cannot read {refname}"), &e)),
                };
                if reference.target().map(|t| t.to_string()).as_deref() != Some(expected) {
                    return Ok(false);
                }
                reference
                    .delete()
                    .map(|()| true)
                    .map_err(|e| lib_err(format!("cannot delete {refname}"), &e))
            }
            None => {
                if self.ref_tip(ctx, refname)?.as_deref() != Some(expected) {
                    return Ok(false);
                }
                let mut cmd = self.git(ctx);
                cmd.args(["update-ref", "-d", refname, expected]);
                cli::run_ok(&mut cmd, None).map(|_| true)
            }
        }
    }

    /// Adds the worktree `path` with the existing branch `branch` checked
    /// out; `registration` names it under `worktrees/` (libgit2; the CLI
    /// derives its own name from the directory). Hooks do not run.
    pub(super) fn add_worktree(
        &self,
        ctx: &Ctx<'_>,
        registration: &str,
        path: &Path,
        branch: &str,
    ) -> Result<(), Error> {
        let refname = format!("refs/heads/{branch}");
        match &self.lib {
            Some(repo) => {
                let fail = |e: git2::Error| {
                    lib_err(format!("cannot add the worktree {}", path.display()), &e)
                };
                let reference = repo.find_reference(&refname).map_err(fail)?;
                let mut opts = WorktreeAddOptions::new();
                opts.reference(Some(&reference));
                repo.worktree(registration, path, Some(&opts))
                    .map(|_| ())
                    .map_err(fail)
            }
            None => {
                let mut cmd = self.git(ctx);
                cmd.args(["worktree", "add", "--quiet"])
                    .arg(path)
                    .arg(branch);
                cli::run_ok(&mut cmd, None).map(|_| ())
            }
        }
    }

    /// Locks the registered worktree `registration` (at `path`).
    pub(super) fn lock(
        &self,
        ctx: &Ctx<'_>,
        registration: &str,
        path: &Path,
        reason: &str,
    ) -> Result<(), Error> {
        match &self.lib {
            Some(repo) => repo
                .find_worktree(registration)
                .and_then(|wt| wt.lock(Some(reason)))
                .map_err(|e| lib_err(format!("cannot lock {}", path.display()), &e)),
            None => {
                let mut cmd = self.git(ctx);
                cmd.args(["worktree", "lock", "--reason", reason]).arg(path);
                cli::run_ok(&mut cmd, None).map(|_| ())
            }
        }
    }

    /// Unlocks the registered worktree `registration` (at `path`).
    pub(super) fn unlock(
        &self,
        ctx: &Ctx<'_>,
        registration: &str,
        path: &Path,
    ) -> Result<(), Error> {
        match &self.lib {
            Some(repo) => repo
                .find_worktree(registration)
                .and_then(|wt| wt.unlock())
                .map_err(|e| lib_err(format!("cannot unlock {}", path.display()), &e)),
            None => {
                let mut cmd = self.git(ctx);
                cmd.args(["worktree", "unlock"]).arg(path);
                cli::run_ok(&mut cmd, None).map(|_| ())
            }
        }
    }
}

/// A ref could not be written because a directory on its path vanished
/// (libgit2 and git word it differently).
fn vanished_dir(message: &str) -> bool {
    message.contains("failed to make directory")
        || message.contains("unable to create directory")
        || message.contains("No such file or directory")
}

#[cfg(test)]
mod tests {
    use super::patch::parse_numstat_z;
    use super::*;

    #[test]
    fn attributes_name_lfs_and_other_filters() {
        assert_eq!(
            scan_attributes("*.bin filter=lfs diff=lfs merge=lfs -text\n"),
            (true, false)
        );
        assert_eq!(
            scan_attributes("# *.bin filter=lfs\n*.c text\n"),
            (false, false)
        );
        assert_eq!(scan_attributes("*.x filter=crypt\n"), (false, true));
        assert_eq!(
            scan_attributes("*.x -filter\n*.y !filter\n"),
            (false, false)
        );
    }

    #[test]
    fn numstat_paths_include_both_sides_of_a_rename() {
        let out = b"1\t0\ta.txt\x00-\t-\tbin.dat\x000\t0\t\x00old name\x00new name\x00";
        assert_eq!(
            parse_numstat_z(out),
            ["a.txt", "bin.dat", "old name", "new name"]
                .iter()
                .map(PathBuf::from)
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn revisions_that_look_like_options_are_refused() {
        for rev in ["", "-h", "--output=/tmp/x", "a\nb"] {
            assert!(check_rev(rev).is_err(), "{rev:?}");
        }
        assert!(check_rev("HEAD~2").is_ok());
    }
}
