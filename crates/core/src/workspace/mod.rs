//! Workspaces: one git worktree per coding contestant, its patch, and the
//! application of a patch to another checkout.
//!
//! - [`Workspace`]: the trait the arena runtime drives — [`create`]
//!   a worktree from a [`Base`], [`lock`]/[`unlock`] it while its agent
//!   runs, take its [`diff`] as a [`Patch`], [`apply`] a patch to a
//!   checkout, [`remove`] it (only with a [`RemoveProof`]) and [`sweep`]
//!   the app-owned root at start.
//! - `GitWorkspace` (feature `git`): the implementation over libgit2,
//!   with a git CLI path for repositories libgit2 cannot handle faithfully
//!   (submodules, filter drivers such as Git LFS, sparse checkouts).
//! - [`confine`]: path confinement — every path a request names is
//!   canonicalized and must lie under a configured root (always compiled,
//!   std only).
//!
//! # Why the trait is synchronous
//!
//! libgit2 and the git CLI block. The trait is plain `Send + Sync` with
//! blocking methods, so it builds without the `runtime` feature and never
//! pretends to be asynchronous; an async caller holds an
//! `Arc<dyn Workspace>` and runs each call with
//! `tokio::task::spawn_blocking`. Every method opens what it needs per
//! call (no repository handle is cached), so one value serves any number
//! of threads.
//!
//! # Layout under the data directory
//!
//! ```text
//! <data_dir>/worktrees/<battle-slug>/<contestant-dir>/                the worktree
//! <data_dir>/worktrees/<battle-slug>/<contestant-dir>.worktree.json   coderig's record of it
//! <data_dir>/worktrees/.tmp/                                          temporary index files
//! ```
//!
//! The record is written *before* anything is created in the repository and
//! deleted *after* everything is gone, so [`Workspace::sweep`] can finish or
//! undo whatever a crash interrupted. The caller records the worktree in its
//! store as well; the record is what lets coderig prove, without the store,
//! that a branch or a directory is its own.
//!
//! [`create`]: Workspace::create
//! [`lock`]: Workspace::lock
//! [`unlock`]: Workspace::unlock
//! [`diff`]: Workspace::diff
//! [`apply`]: Workspace::apply
//! [`remove`]: Workspace::remove
//! [`sweep`]: Workspace::sweep

pub mod confine;
#[cfg(feature = "git")]
mod git;

pub use confine::{confine_lexically, ProjectRoots};
#[cfg(feature = "git")]
pub use git::{GitWorkspace, GitWorkspaceConfig};

use crate::error::Error;
use crate::names::macros::named_enum;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// The prefix of every branch coderig creates: `coderig/<battle 8 hex>/<contestant-dir>`.
pub const BRANCH_PREFIX: &str = "coderig/";

/// The lock reason [`Workspace::create`] leaves on a new worktree.
pub const AGENT_LOCK_REASON: &str = "coderig: an agent is running in this worktree";

/// Where a new worktree starts.
///
/// As a string (JSON, the battle spec's `base`): `"snapshot"` (any ASCII
/// case, surrounding whitespace ignored) is [`Base::Snapshot`]; anything else
/// is a [`Base::Ref`]. A branch literally named `snapshot` is reached as
/// `refs/heads/snapshot`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Base {
    /// A revision that resolves to a commit: a branch, a tag, a commit id,
    /// `HEAD`, `HEAD~2`, ... It is resolved once, when the worktree is
    /// created; the worktree never follows the ref afterwards.
    Ref(String),
    /// The user's working tree as it is now: tracked changes (staged or
    /// not) and untracked files that are not ignored, captured as a commit
    /// object whose parent is `HEAD` (none on an unborn branch). Taking it
    /// never touches the user's index, working tree or refs; it only adds
    /// objects to the object database. Identical states give the identical
    /// commit, so several worktrees created from the same untouched tree
    /// share one base; to be sure they do, call [`Workspace::snapshot`]
    /// once and create each with `Base::Ref(commit)`.
    Snapshot,
}

impl Default for Base {
    /// `HEAD`.
    fn default() -> Self {
        Base::Ref("HEAD".to_owned())
    }
}

impl fmt::Display for Base {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Base::Ref(rev) => f.write_str(rev),
            Base::Snapshot => f.write_str("snapshot"),
        }
    }
}

impl FromStr for Base {
    type Err = Error;

    /// `"snapshot"` is [`Base::Snapshot`]; an empty (or all-whitespace)
    /// string is refused with `invalid_input`; anything else is a
    /// [`Base::Ref`] (checked only when it is resolved).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let trimmed = s.trim();
        if trimmed.is_empty() {
            return Err(Error::invalid_input(
                "a base must be a ref (e.g. \"HEAD\") or \"snapshot\", not empty",
            )
            .with_detail("path", "base"));
        }
        if trimmed.eq_ignore_ascii_case("snapshot") {
            Ok(Base::Snapshot)
        } else {
            Ok(Base::Ref(trimmed.to_owned()))
        }
    }
}

impl Serialize for Base {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Base {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// The name of a worktree: the battle's folder slug and the contestant's
/// folder, as [`crate::arena::battle_slug`] and
/// [`crate::arena::contestant_dir`] make them.
///
/// Guarantees (checked by [`WorktreeName::new`] and by deserialization):
/// both parts match `^[a-z0-9]+(-[a-z0-9]+)*$` and are at most 64
/// characters, and the battle slug ends with `-` and 8 hex digits (the
/// battle id's). So the derived directory, branch and registration names
/// are always valid, never contain `/` or `..`, and never collide with
/// coderig's own files (which contain a `.`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "RawName")]
pub struct WorktreeName {
    battle_slug: String,
    contestant_dir: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawName {
    battle_slug: String,
    contestant_dir: String,
}

impl TryFrom<RawName> for WorktreeName {
    type Error = Error;

    fn try_from(raw: RawName) -> Result<Self, Self::Error> {
        WorktreeName::new(&raw.battle_slug, &raw.contestant_dir)
    }
}

fn is_slug(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= crate::arena::paths::MAX_SLUG_LEN
        && s.split('-').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
}

impl WorktreeName {
    /// Checks both parts (see the type's guarantees); `invalid_input` with
    /// the `path` of the bad part otherwise.
    pub fn new(battle_slug: &str, contestant_dir: &str) -> Result<WorktreeName, Error> {
        if !is_slug(battle_slug) {
            return Err(Error::invalid_at(
                "battle_slug",
                format!("{battle_slug:?} is not a slug (lowercase ASCII letters and digits joined by single '-', at most 64)"),
            ));
        }
        let hex = battle_slug.rsplit('-').next().unwrap_or("");
        if hex.len() != 8
            || !hex.bytes().all(|b| b.is_ascii_hexdigit())
            || !battle_slug.contains('-')
        {
            return Err(Error::invalid_at(
                "battle_slug",
                format!("{battle_slug:?} must end with '-' and the battle id's 8 hex digits"),
            ));
        }
        if !is_slug(contestant_dir) {
            return Err(Error::invalid_at(
                "contestant_dir",
                format!("{contestant_dir:?} is not a slug (lowercase ASCII letters and digits joined by single '-', at most 64)"),
            ));
        }
        Ok(WorktreeName {
            battle_slug: battle_slug.to_owned(),
            contestant_dir: contestant_dir.to_owned(),
        })
    }

    /// The battle's folder slug (`2025-01-31-coding-0123abcd`).
    pub fn battle_slug(&self) -> &str {
        &self.battle_slug
    }

    /// The contestant's folder (`claude-sonnet`).
    pub fn contestant_dir(&self) -> &str {
        &self.contestant_dir
    }

    /// The battle id's 8 hex digits: the last part of the slug.
    pub fn battle_hex(&self) -> &str {
        &self.battle_slug[self.battle_slug.len() - 8..]
    }

    /// The branch coderig creates: `coderig/<battle 8 hex>/<contestant-dir>`.
    pub fn branch(&self) -> String {
        format!(
            "{BRANCH_PREFIX}{}/{}",
            self.battle_hex(),
            self.contestant_dir
        )
    }

    /// The worktree's directory relative to the worktrees root:
    /// `<battle-slug>/<contestant-dir>`.
    pub fn relative_dir(&self) -> PathBuf {
        Path::new(&self.battle_slug).join(&self.contestant_dir)
    }
}

impl fmt::Display for WorktreeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.battle_slug, self.contestant_dir)
    }
}

/// Which implementation handles a repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Backend {
    /// libgit2, in-process.
    Libgit2,
    /// The `git` program (`git worktree add`, `git add` into a temporary
    /// index, `git diff --binary`, `git apply`).
    GitCli,
}
named_enum!(Backend, "workspace backend", {
    Libgit2 => "libgit2",
    GitCli => "git_cli",
});

/// Why a repository takes the git CLI path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CliReason {
    /// The configuration asks for the CLI everywhere.
    Configured,
    /// `.gitmodules` exists: submodules.
    Submodules,
    /// A `filter=lfs` attribute (top-level `.gitattributes` or
    /// `info/attributes`): Git LFS, whose filter libgit2 cannot run.
    Lfs,
    /// Another `filter=` attribute: a filter driver libgit2 cannot run.
    Filter,
    /// A sparse checkout (`core.sparseCheckout`, or an
    /// `info/sparse-checkout` file): libgit2 would see the files outside
    /// the cone as deleted.
    SparseCheckout,
    /// A split index (`core.splitIndex`, `sharedindex.*` files), which
    /// libgit2 cannot read.
    SplitIndex,
    /// libgit2 could not open the repository (e.g. an extension it does
    /// not support) but `git` can.
    Libgit2CannotOpen,
}
named_enum!(CliReason, "git CLI reason", {
    Configured => "configured",
    Submodules => "submodules",
    Lfs => "lfs",
    Filter => "filter",
    SparseCheckout => "sparse_checkout",
    SplitIndex => "split_index",
    Libgit2CannotOpen => "libgit2_cannot_open",
});

/// A worktree coderig created, as [`Workspace::create`] returns it and as a
/// caller stores it.
///
/// Guarantees for a value `create` returned: `path` is
/// `<data_dir>/worktrees/<battle-slug>/<contestant-dir>` (canonical), the
/// branch `refs/heads/<branch>` was created by coderig at `base_commit` and
/// is checked out in `path`, and `repo` is the canonical top level of the
/// repository's working tree. The other methods re-check a value against
/// coderig's record, so a forged or stale value is refused, never acted on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Worktree {
    /// Battle and contestant.
    pub name: WorktreeName,
    /// The user's repository (top level of its working tree).
    pub repo: PathBuf,
    /// The worktree's directory.
    pub path: PathBuf,
    /// The branch checked out in it (short name, `coderig/<hex>/<dir>`).
    pub branch: String,
    /// The commit the worktree started from (full hex id).
    pub base_commit: String,
    /// The implementation that created it and handles it.
    pub backend: Backend,
}

/// A patch: the changes of a worktree against its base commit, in the
/// format of `git diff --binary` (binary files as git binary patches,
/// renames as renames, new files and modes included).
///
/// Guarantees for a patch [`Workspace::diff`] returned: `git apply` on a
/// clean checkout of `base_commit` reproduces the worktree's non-ignored
/// files byte for byte; an empty patch means no change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    base_commit: Option<String>,
    bytes: Vec<u8>,
}

impl Patch {
    /// A patch from its bytes (e.g. an archived `diff.patch` read back),
    /// with the commit it was taken against when known. The bytes are not
    /// checked here; [`Workspace::apply`] refuses a malformed patch.
    pub fn new(bytes: Vec<u8>, base_commit: Option<String>) -> Patch {
        Patch { base_commit, bytes }
    }

    /// The patch text (bytes: a binary patch or a file name need not be UTF-8).
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The patch text, owned.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    /// The commit the patch was taken against, when known.
    pub fn base_commit(&self) -> Option<&str> {
        self.base_commit.as_deref()
    }

    /// True when the patch changes nothing.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

/// What the caller proves before [`Workspace::remove`] may delete a
/// worktree and its branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RemoveProof {
    /// The worktree's patch is archived in this file. `remove` reads it and
    /// refuses (`conflict`) unless it holds exactly the bytes
    /// [`Workspace::diff`] gives now: a worktree whose changes are not all
    /// in the archive is never removed.
    Archived(PathBuf),
    /// The caller gives the worktree's changes up on purpose (an oracle's
    /// verification checkout, a contestant whose work is not kept).
    Discard,
}

/// What [`Workspace::remove`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Removed {
    /// The branch was deleted. False only when the branch is checked out in
    /// another worktree (the user checked it out): it is then kept.
    pub branch_deleted: bool,
}

/// A branch [`Workspace::sweep`] left in place although its worktree is
/// gone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeptBranch {
    /// The repository.
    pub repo: PathBuf,
    /// The branch (short name).
    pub branch: String,
    /// Why it was kept: `"has commits beyond the base"` or
    /// `"checked out in another worktree"`.
    pub reason: String,
}

/// A problem [`Workspace::sweep`] met with one entry; the sweep goes on
/// with the others.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SweepProblem {
    /// The entry (a worktree directory or record).
    pub path: PathBuf,
    /// What went wrong.
    pub message: String,
}

/// What [`Workspace::sweep`] found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SweepReport {
    /// Intact worktrees (directory, registration and branch present), left
    /// as they are: the caller compares them with its store and removes
    /// the ones it no longer needs (after archiving their patches).
    pub live: Vec<Worktree>,
    /// Creations a crash interrupted, undone.
    pub rolled_back: Vec<PathBuf>,
    /// Removals a crash interrupted, finished.
    pub finished_removals: Vec<PathBuf>,
    /// Worktrees whose directory was gone: registration and record removed.
    pub pruned: Vec<PathBuf>,
    /// Directories git no longer knows as worktrees (registration or whole
    /// repository gone): removed.
    pub removed_unregistered: Vec<PathBuf>,
    /// Branches kept although their worktree went.
    pub kept_branches: Vec<KeptBranch>,
    /// Directories under the root without a record that git still knows as
    /// worktrees: coderig cannot prove they are its own, so they are left
    /// alone.
    pub left_alone: Vec<PathBuf>,
    /// Leftover temporary files removed.
    pub temp_files_removed: usize,
    /// Entries the sweep could not handle.
    pub problems: Vec<SweepProblem>,
}

/// Worktrees for coding contestants.
///
/// Synchronous and blocking (see the module docs: async callers use
/// `spawn_blocking`). Errors are [`Error`]s of kinds `invalid_input` (a
/// path outside the configured roots, a bad ref, a malformed patch, not a
/// repository), `conflict` (the state forbids it: a stale branch, a
/// locked worktree, an archive that does not match, a patch that does not
/// apply), `unavailable` (the git program is needed and missing) and `io`.
pub trait Workspace: Send + Sync {
    /// Captures the working tree of `repo` as a commit ([`Base::Snapshot`])
    /// and returns its id, touching neither the index, the files nor any
    /// ref. When the working tree equals `HEAD`, that is `HEAD`'s commit.
    fn snapshot(&self, repo: &Path) -> Result<String, Error>;

    /// Creates the worktree `name` of `repo` at `base`.
    ///
    /// Guarantees: a new branch `coderig/<battle 8 hex>/<contestant-dir>` is
    /// created at the base commit — an existing branch of that name is
    /// never reused or replaced (`conflict`), whoever made it; the
    /// directory must not exist (`conflict`); the new worktree is locked
    /// with [`AGENT_LOCK_REASON`]. On any error nothing is left behind: no
    /// branch, no directory, no registration, no record (a snapshot commit
    /// object may stay in the object database, unreferenced).
    fn create(&self, repo: &Path, base: &Base, name: &WorktreeName) -> Result<Worktree, Error>;

    /// Locks the worktree (git's worktree lock, so `git worktree prune` and
    /// `git worktree remove` leave it alone). Locking a locked worktree is
    /// a no-op that keeps the first reason.
    fn lock(&self, worktree: &Worktree, reason: &str) -> Result<(), Error>;

    /// Unlocks the worktree (a no-op when it is not locked). Call it when
    /// the worktree's agent has ended.
    fn unlock(&self, worktree: &Worktree) -> Result<(), Error>;

    /// The worktree's changes against its base commit: tracked changes
    /// (committed on the branch or not), untracked files that are not
    /// ignored, binary files, renames, mode changes. Reads only: the
    /// worktree's index, files and refs are untouched.
    fn diff(&self, worktree: &Worktree) -> Result<Patch, Error>;

    /// Applies `patch` to the working tree of the repository at `target`
    /// (an oracle's fresh checkout of the base, or the user's tree for
    /// `battle apply`), leaving the index alone.
    ///
    /// Guarantees: `target` must be the top of a git working tree under a
    /// configured project root or coderig's worktrees root (`invalid_input`); no file the patch names may
    /// resolve outside `target`, through a symlink or otherwise
    /// (`invalid_input`); a patch that does not apply cleanly is refused
    /// with `conflict` and nothing is changed (it is checked as a whole
    /// before anything is written). An empty patch changes nothing.
    fn apply(&self, patch: &Patch, target: &Path) -> Result<(), Error>;

    /// Removes the worktree: its directory, its registration (by name,
    /// never a repository-wide prune) and its branch (which coderig
    /// created; kept only if checked out elsewhere), then its record.
    ///
    /// Refused with `conflict` while the worktree is locked (its agent may
    /// still run) or when `proof` does not hold (see [`RemoveProof`]);
    /// refused with `invalid_input` for a worktree coderig has no record
    /// of. Other worktrees and branches are never touched.
    fn remove(&self, worktree: &Worktree, proof: &RemoveProof) -> Result<Removed, Error>;

    /// Reconciles the root with the repositories, at start, while no other
    /// process uses the same data directory: undoes interrupted creations,
    /// finishes interrupted removals, drops registrations whose directory
    /// is gone and directories git no longer knows, and reports intact
    /// worktrees without touching them. A branch is deleted only when
    /// coderig's record shows it created it and nothing would be lost (its
    /// tip is still the base commit, or the removal was already proven).
    fn sweep(&self) -> Result<SweepReport, Error>;
}
