//! [`GitWorkspace`]: the [`Workspace`] over libgit2, with the git CLI for
//! repositories libgit2 cannot handle faithfully (see the type's docs).

mod admin;
mod cli;
mod repo;
mod serial;

use self::admin::{Record, RecordState};
use self::repo::{Ctx, Repo, Want};
use super::confine::{self, ProjectRoots};
use super::{
    Backend, Base, CliReason, KeptBranch, Patch, RemoveProof, Removed, SweepProblem, SweepReport,
    Workspace, Worktree, WorktreeName, AGENT_LOCK_REASON,
};
use crate::error::Error;
use std::path::{Path, PathBuf};

/// How to build a [`GitWorkspace`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitWorkspaceConfig {
    /// coderig's data directory; worktrees go under `<data_dir>/worktrees/`
    /// (created when missing).
    pub data_dir: PathBuf,
    /// The roots under which a request may name a repository or an apply
    /// target (at least one; each must exist).
    pub project_roots: Vec<PathBuf>,
    /// The git program (default `git`, looked up on `PATH`).
    pub git_program: PathBuf,
    /// Take the git CLI path for every repository (default false).
    pub always_cli: bool,
}

impl GitWorkspaceConfig {
    /// A configuration with the default git program and backend choice.
    pub fn new(data_dir: impl Into<PathBuf>, project_roots: Vec<PathBuf>) -> Self {
        GitWorkspaceConfig {
            data_dir: data_dir.into(),
            project_roots,
            git_program: PathBuf::from("git"),
            always_cli: false,
        }
    }
}

/// Git worktrees under `<data_dir>/worktrees/`, for repositories under the
/// configured project roots.
///
/// # Which backend
///
/// A repository takes the git CLI when it has a `.gitmodules` file
/// (submodules), a `filter=` attribute (Git LFS's `filter=lfs` or another
/// filter driver, in the top-level or a committed `.gitattributes`, or in
/// `info/attributes`), a sparse checkout, a split index, or when libgit2
/// cannot open it; otherwise libgit2 ([`CliReason`] names each case). A
/// worktree keeps the backend it was created with.
/// [`GitWorkspace::backend_for`] tells which one a repository gets and why.
///
/// # How each operation keeps its promises
///
/// - *Snapshot and diff* build a tree of the working tree in a private
///   index — libgit2: an in-memory [`git2::Index`] seeded with the
///   repository's entries (stat data zeroed, so every file is re-hashed);
///   CLI: `git add --all` into a temporary copy of the index
///   (`GIT_INDEX_FILE`). The repository's own index file, its files and its
///   refs are never written; `.gitignore` rules apply as for `git add`.
///   The diff is then tree to tree (`git diff --binary --full-index
///   --find-renames` or libgit2's equivalent), so untracked files, binary
///   files, renames and mode changes are in it. An untracked directory
///   that is a repository of its own (an agent's `git init` or clone) is
///   left out: a patch cannot carry it. Every file is hashed on each call,
///   so a snapshot or diff costs a read of the whole working tree.
/// - *Create* claims the name by publishing coderig's record exclusively
///   (of concurrent creates of one name exactly one proceeds), then creates
///   the branch with "must not exist" semantics, adds the worktree, locks
///   it, and marks the record ready. Any failure undoes every step already
///   done; a failed undo leaves the record for [`Workspace::sweep`].
/// - *Remove* and *sweep* delete a registration by finding the one entry
///   under `worktrees/` whose `gitdir` names the worktree — never `git
///   worktree prune` — and delete only the branch coderig's record names.
/// - *Apply* resolves every path the patch names under the target
///   (symlinks included) before anything is written, checks the whole patch
///   (`git apply --check`, or libgit2's apply in check mode), then applies
///   it to the working tree only.
/// - Hooks never run (`core.hooksPath=/dev/null` on every git command;
///   libgit2 runs none). Filter drivers do run on the CLI path: that is
///   what it is for.
///
/// # Limits
///
/// Submodules are not initialized in a new worktree (their gitlinks stay at
/// the base commit, which is no change). `sweep` must run while no other
/// process creates or removes worktrees under the same data directory.
/// Keep the data directory outside the project: a worktree root inside a
/// repository would show up in that repository's snapshots as untracked
/// files (unless ignored).
#[derive(Debug, Clone)]
pub struct GitWorkspace {
    root: PathBuf,
    projects: ProjectRoots,
    targets: ProjectRoots,
    program: PathBuf,
    always_cli: bool,
}

fn conflict_at(message: String, path: &Path) -> Error {
    Error::conflict(message).with_detail("path", path.to_string_lossy().as_ref())
}

fn registration_name(name: &WorktreeName) -> String {
    format!("coderig-{}-{}", name.battle_hex(), name.contestant_dir())
}

impl GitWorkspace {
    /// Creates `<data_dir>/worktrees/` if needed and canonicalizes it and
    /// the project roots. Errors: `invalid_input` for no root or a root
    /// that is not a directory, `io` when a directory cannot be created or
    /// resolved.
    pub fn new(config: GitWorkspaceConfig) -> Result<GitWorkspace, Error> {
        let root = config.data_dir.join("worktrees");
        std::fs::create_dir_all(&root).map_err(|e| admin::io_err("cannot create", &root, &e))?;
        let root =
            std::fs::canonicalize(&root).map_err(|e| admin::io_err("cannot resolve", &root, &e))?;
        let projects = ProjectRoots::new(&config.project_roots)?;
        let mut targets: Vec<PathBuf> = projects.roots().to_vec();
        targets.push(root.clone());
        Ok(GitWorkspace {
            targets: ProjectRoots::new(targets)?,
            root,
            projects,
            program: config.git_program,
            always_cli: config.always_cli,
        })
    }

    /// The worktrees root, `<data_dir>/worktrees` (canonical).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The configured project roots (canonical).
    pub fn project_roots(&self) -> &ProjectRoots {
        &self.projects
    }

    /// The backend `create` would use for `repo`, and why the CLI when it
    /// is the CLI.
    pub fn backend_for(&self, repo: &Path) -> Result<(Backend, Option<CliReason>), Error> {
        let repo = self.open_project(repo)?;
        Ok((repo.backend, repo.reason))
    }

    fn ctx(&self) -> Ctx<'_> {
        Ctx {
            program: &self.program,
            tmp_root: &self.root,
        }
    }

    fn open_project(&self, repo: &Path) -> Result<Repo, Error> {
        let path = self.projects.resolve(repo)?;
        Repo::open(
            &self.ctx(),
            &path,
            Want::Detect {
                always_cli: self.always_cli,
            },
        )
    }

    fn snapshot_of(&self, repo: &Repo) -> Result<String, Error> {
        let ctx = self.ctx();
        let tree = repo.capture_tree(&ctx)?;
        let head = repo.head(&ctx)?;
        if let Some((id, _)) = &head {
            if repo.tree_of(&ctx, id)? == tree {
                return Ok(id.clone());
            }
        }
        let time = head.as_ref().map_or(0, |(_, time)| *time);
        repo.commit_snapshot(&ctx, &tree, head.as_ref().map(|(id, _)| id.as_str()), time)
    }

    /// The record of `worktree`, which must be coderig's and match it.
    fn record_of(&self, worktree: &Worktree) -> Result<Record, Error> {
        let expected = self.root.join(worktree.name.relative_dir());
        confine::confine_lexically(&self.root, &worktree.path)?;
        if worktree.path != expected {
            return Err(Error::invalid_input(format!(
                "the worktree {} should be at {}, not {}",
                worktree.name,
                expected.display(),
                worktree.path.display()
            ))
            .with_detail("path", worktree.path.to_string_lossy().as_ref()));
        }
        let record = admin::read_record(&admin::record_path(&worktree.path))?.ok_or_else(|| {
            Error::invalid_input(format!(
                "coderig has no record of a worktree at {}",
                worktree.path.display()
            ))
            .with_detail("path", worktree.path.to_string_lossy().as_ref())
        })?;
        if record.worktree != *worktree {
            return Err(conflict_at(
                format!(
                    "the worktree {} does not match coderig's record of it (repo, branch, base or backend differ)",
                    worktree.name
                ),
                &worktree.path,
            ));
        }
        match record.state {
            RecordState::Ready => Ok(record),
            RecordState::Creating => Err(conflict_at(
                format!("the worktree {} is still being created", worktree.name),
                &worktree.path,
            )),
            RecordState::Removing => Err(conflict_at(
                format!("the worktree {} is being removed", worktree.name),
                &worktree.path,
            )),
        }
    }

    fn registration_of(record: &Record) -> Result<String, Error> {
        admin::find_registration(&record.common_dir, &record.worktree.path)?.ok_or_else(|| {
            conflict_at(
                format!(
                    "git has no registration for the worktree {}; run sweep",
                    record.worktree.name
                ),
                &record.worktree.path,
            )
        })
    }

    /// Deletes the record's branch unless it is checked out somewhere or,
    /// with `only_at_base`, has moved from the base commit. Returns whether
    /// the branch is gone.
    fn retire_branch(
        &self,
        record: &Record,
        only_at_base: bool,
        kept: &mut Vec<KeptBranch>,
    ) -> Result<bool, Error> {
        let wt = &record.worktree;
        if !admin::exists(&record.common_dir) {
            return Ok(true); // the whole repository is gone, its refs with it
        }
        let refname = format!("refs/heads/{}", wt.branch);
        let keep = |reason: &str, kept: &mut Vec<KeptBranch>| {
            kept.push(KeptBranch {
                repo: wt.repo.clone(),
                branch: wt.branch.clone(),
                reason: reason.to_owned(),
            });
            Ok(false)
        };
        if admin::branch_checked_out(&record.common_dir, &refname) {
            return keep("checked out in another worktree", kept);
        }
        let ctx = self.ctx();
        let repo = Repo::for_refs(&record.common_dir, wt.backend)?;
        let Some(tip) = repo.ref_tip(&ctx, &refname)? else {
            return Ok(true);
        };
        if only_at_base && tip != wt.base_commit {
            return keep("has commits beyond the base", kept);
        }
        if repo.delete_ref(&ctx, &refname, &tip)? {
            Ok(true)
        } else {
            keep("moved while it was being deleted", kept)
        }
    }

    /// Undoes a creation: directory, registration, branch (only when it
    /// is provably coderig's: `branch_is_ours`, and still at the base),
    /// record. The record goes last and only when the rest went, so a
    /// failed undo is retried by sweep.
    fn undo_create(&self, record: &Record, branch_is_ours: bool) -> Result<(), Error> {
        let wt = &record.worktree;
        admin::remove_tree(&wt.path)?;
        if admin::exists(&record.common_dir) {
            admin::remove_registration(&record.common_dir, &wt.path)?;
        }
        if branch_is_ours {
            self.retire_branch(record, true, &mut Vec::new())?;
        }
        let record_path = admin::record_path(&wt.path);
        admin::delete_record(&record_path)?;
        if let Some(battle) = wt.path.parent() {
            admin::remove_dir_if_empty(battle);
        }
        Ok(())
    }

    /// Finishes a proven removal (record state `removing`).
    fn finish_removal(
        &self,
        record: &Record,
        kept: &mut Vec<KeptBranch>,
    ) -> Result<Removed, Error> {
        let wt = &record.worktree;
        admin::remove_tree(&wt.path)?;
        if admin::exists(&record.common_dir) {
            admin::remove_registration(&record.common_dir, &wt.path)?;
        }
        let branch_deleted = self.retire_branch(record, false, kept)?;
        admin::delete_record(&admin::record_path(&wt.path))?;
        if let Some(battle) = wt.path.parent() {
            admin::remove_dir_if_empty(battle);
        }
        Ok(Removed { branch_deleted })
    }

    fn sweep_record(&self, record_path: &Path, report: &mut SweepReport) -> Result<(), Error> {
        let Some(mut record) = admin::read_record(record_path)? else {
            return Ok(());
        };
        let wt = record.worktree.clone();
        if admin::record_path(&wt.path) != record_path {
            return Err(Error::io(format!(
                "the record {} names another worktree ({})",
                record_path.display(),
                wt.path.display()
            )));
        }
        match record.state {
            RecordState::Creating => {
                // The pre-check saw no branch just before this record was
                // written, so a branch at the base commit is coderig's.
                self.undo_create(&record, true)?;
                report.rolled_back.push(wt.path);
            }
            RecordState::Removing => {
                self.finish_removal(&record, &mut report.kept_branches)?;
                report.finished_removals.push(wt.path);
            }
            RecordState::Ready => {
                let repo_exists = admin::exists(&record.common_dir);
                let dir_exists = wt.path.is_dir();
                let registered = repo_exists
                    && admin::find_registration(&record.common_dir, &wt.path)?.is_some();
                if dir_exists && registered {
                    report.live.push(wt);
                    return Ok(());
                }
                // Nothing git can diff is left: retire it like a removal, but
                // keep a branch that carries commits beyond the base.
                record.state = RecordState::Removing;
                admin::remove_tree(&wt.path)?;
                if repo_exists {
                    admin::remove_registration(&record.common_dir, &wt.path)?;
                }
                self.retire_branch(&record, true, &mut report.kept_branches)?;
                admin::delete_record(record_path)?;
                if dir_exists {
                    report.removed_unregistered.push(wt.path);
                } else {
                    report.pruned.push(wt.path);
                }
            }
        }
        Ok(())
    }

    fn sweep_battle(&self, battle: &Path, report: &mut SweepReport) -> Result<(), Error> {
        let mut records = Vec::new();
        let mut dirs = Vec::new();
        let entries =
            std::fs::read_dir(battle).map_err(|e| admin::io_err("cannot list", battle, &e))?;
        for entry in entries {
            let entry = entry.map_err(|e| admin::io_err("cannot list", battle, &e))?;
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.ends_with(admin::RECORD_SUFFIX) {
                records.push(path);
            } else if name.starts_with('.') && name.ends_with(".tmp") {
                // A leftover of an interrupted atomic write.
                if std::fs::remove_file(&path).is_ok() {
                    report.temp_files_removed += 1;
                }
            } else if path.is_dir() {
                dirs.push(path);
            } else {
                report.left_alone.push(path);
            }
        }
        records.sort();
        dirs.sort();
        for record_path in &records {
            if let Err(e) = self.sweep_record(record_path, report) {
                report.problems.push(SweepProblem {
                    path: record_path.clone(),
                    message: e.message().to_owned(),
                });
            }
        }
        for dir in dirs {
            if records.contains(&admin::record_path(&dir)) {
                continue;
            }
            if admin::is_registered_dir(&dir) {
                report.left_alone.push(dir);
            } else {
                match admin::remove_tree(&dir) {
                    Ok(()) => report.removed_unregistered.push(dir),
                    Err(e) => report.problems.push(SweepProblem {
                        path: dir,
                        message: e.message().to_owned(),
                    }),
                }
            }
        }
        admin::remove_dir_if_empty(battle);
        Ok(())
    }
}

impl Workspace for GitWorkspace {
    fn snapshot(&self, repo: &Path) -> Result<String, Error> {
        let repo = self.open_project(repo)?;
        self.snapshot_of(&repo)
    }

    fn create(&self, repo: &Path, base: &Base, name: &WorktreeName) -> Result<Worktree, Error> {
        let ctx = self.ctx();
        let repo = self.open_project(repo)?;
        let path = self.root.join(name.relative_dir());
        let record_path = admin::record_path(&path);
        if admin::exists(&path) || admin::exists(&record_path) {
            return Err(conflict_at(
                format!("the worktree {name} exists already at {}", path.display()),
                &path,
            ));
        }
        let branch = name.branch();
        let refname = format!("refs/heads/{branch}");
        if repo.ref_tip(&ctx, &refname)?.is_some() {
            return Err(Error::conflict(format!(
                "the branch {branch} already exists in {}; coderig never reuses or replaces a branch \
                 (a stale one from an earlier run is deleted by sweep when coderig's record shows it \
                 created it; otherwise delete it with `git branch -D {branch}`)",
                repo.workdir.display()
            ))
            .with_detail("branch", branch.as_str()));
        }
        let registration = registration_name(name);
        if admin::exists(&admin::registration_dir(&repo.common_dir, &registration)) {
            return Err(conflict_at(
                format!("git already has a worktree registered as {registration}"),
                &path,
            ));
        }
        let base_commit = match base {
            Base::Ref(rev) => repo.resolve_commit(&ctx, rev)?,
            Base::Snapshot => self.snapshot_of(&repo)?,
        };
        let worktree = Worktree {
            name: name.clone(),
            repo: repo.workdir.clone(),
            path: path.clone(),
            branch: branch.clone(),
            base_commit: base_commit.clone(),
            backend: repo.backend,
        };
        let mut record = Record {
            version: 1,
            state: RecordState::Creating,
            worktree: worktree.clone(),
            common_dir: repo.common_dir.clone(),
        };
        if !admin::claim_record(&record_path, &record)? {
            return Err(conflict_at(
                format!("the worktree {name} is being created by another call"),
                &path,
            ));
        }
        let mut branch_created = false;
        let mut steps = || -> Result<(), Error> {
            repo.create_branch(
                &ctx,
                &refname,
                &base_commit,
                &format!("coderig: branch for the worktree {name}"),
            )?;
            branch_created = true;
            repo.add_worktree(&ctx, &registration, &path, &branch)?;
            let registered = Self::registration_of(&record)?;
            repo.lock(&ctx, &registered, &path, AGENT_LOCK_REASON)?;
            record.state = RecordState::Ready;
            admin::write_record(&record_path, &record)
        };
        match serial::with_repo_lock(&repo.common_dir, &mut steps) {
            Ok(()) => Ok(worktree),
            Err(error) => {
                record.state = RecordState::Creating;
                match self.undo_create(&record, branch_created) {
                    Ok(()) => Err(error),
                    Err(undo) => Err(error.with_detail(
                        "rollback_error",
                        format!("{}; sweep retries the rollback", undo.message()),
                    )),
                }
            }
        }
    }

    fn lock(&self, worktree: &Worktree, reason: &str) -> Result<(), Error> {
        let record = self.record_of(worktree)?;
        let registration = Self::registration_of(&record)?;
        if admin::is_locked(&record.common_dir, &registration) {
            return Ok(());
        }
        let ctx = self.ctx();
        let repo = Repo::open(&ctx, &worktree.repo, Want::Exactly(worktree.backend))?;
        serial::with_repo_lock(&record.common_dir, || {
            repo.lock(&ctx, &registration, &worktree.path, reason)
        })
    }

    fn unlock(&self, worktree: &Worktree) -> Result<(), Error> {
        let record = self.record_of(worktree)?;
        let registration = Self::registration_of(&record)?;
        if !admin::is_locked(&record.common_dir, &registration) {
            return Ok(());
        }
        let ctx = self.ctx();
        let repo = Repo::open(&ctx, &worktree.repo, Want::Exactly(worktree.backend))?;
        serial::with_repo_lock(&record.common_dir, || {
            repo.unlock(&ctx, &registration, &worktree.path)
        })
    }

    fn diff(&self, worktree: &Worktree) -> Result<Patch, Error> {
        self.record_of(worktree)?;
        let ctx = self.ctx();
        let repo = Repo::open(&ctx, &worktree.path, Want::Exactly(worktree.backend))?;
        let tree = repo.capture_tree(&ctx)?;
        let bytes = repo.diff(&ctx, &worktree.base_commit, &tree)?;
        Ok(Patch::new(bytes, Some(worktree.base_commit.clone())))
    }

    fn apply(&self, patch: &Patch, target: &Path) -> Result<(), Error> {
        let target = self.targets.resolve(target)?;
        let ctx = self.ctx();
        let repo = Repo::open(
            &ctx,
            &target,
            Want::Detect {
                always_cli: self.always_cli,
            },
        )?;
        if patch.is_empty() {
            return Ok(());
        }
        for path in repo.patch_paths(&ctx, patch.as_bytes())? {
            confine::resolve_entry_under(&target, &path)?;
        }
        repo.apply(&ctx, patch.as_bytes(), true)?;
        repo.apply(&ctx, patch.as_bytes(), false)
    }

    fn remove(&self, worktree: &Worktree, proof: &RemoveProof) -> Result<Removed, Error> {
        let mut record = self.record_of(worktree)?;
        if let Some(registration) = admin::find_registration(&record.common_dir, &worktree.path)? {
            if admin::is_locked(&record.common_dir, &registration) {
                return Err(conflict_at(
                    format!(
                        "the worktree {} is locked (its agent may still run); unlock it first",
                        worktree.name
                    ),
                    &worktree.path,
                ));
            }
        }
        if let RemoveProof::Archived(archive) = proof {
            let archived = std::fs::read(archive).map_err(|e| {
                conflict_at(
                    format!(
                        "the archived patch {} cannot be read ({e}); the worktree {} is kept",
                        archive.display(),
                        worktree.name
                    ),
                    archive,
                )
            })?;
            if worktree.path.is_dir() && archived != self.diff(worktree)?.into_bytes() {
                return Err(conflict_at(
                    format!(
                        "the archived patch {} differs from the worktree's changes now; archive its diff again before removing {}",
                        archive.display(),
                        worktree.name
                    ),
                    archive,
                ));
            }
        }
        record.state = RecordState::Removing;
        admin::write_record(&admin::record_path(&worktree.path), &record)?;
        serial::with_repo_lock(&record.common_dir, || {
            self.finish_removal(&record, &mut Vec::new())
        })
    }

    fn sweep(&self) -> Result<SweepReport, Error> {
        let mut report = SweepReport::default();
        let tmp = self.root.join(".tmp");
        if let Ok(entries) = std::fs::read_dir(&tmp) {
            report.temp_files_removed += entries.count();
            admin::remove_tree(&tmp)?;
        }
        let entries = std::fs::read_dir(&self.root)
            .map_err(|e| admin::io_err("cannot list", &self.root, &e))?;
        let mut battles: Vec<PathBuf> = entries
            .flatten()
            .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        battles.sort();
        for battle in battles {
            if let Err(e) = self.sweep_battle(&battle, &mut report) {
                report.problems.push(SweepProblem {
                    path: battle,
                    message: e.message().to_owned(),
                });
            }
        }
        Ok(report)
    }
}
