//! File-level facts of git's worktree administration and coderig's own
//! records, read and written without libgit2 or the CLI (the layout is
//! git's documented one: `$GIT_COMMON_DIR/worktrees/<id>/{gitdir,HEAD,locked}`,
//! see gitrepository-layout(5)), so both backends share one definition of
//! "this registration is coderig's".

use super::super::Worktree;
use crate::error::Error;
use serde::{Deserialize, Serialize};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

pub(super) fn io_err(what: &str, path: &Path, e: &io::Error) -> Error {
    Error::io(format!("{what} {}: {e}", path.display()))
        .with_detail("path", path.to_string_lossy().as_ref())
}

/// True when something (file, directory, symlink, even dangling) is at `path`.
pub(super) fn exists(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

/// Removes the directory tree at `path` (symlinks inside are removed, never
/// followed); a missing directory is fine.
pub(super) fn remove_tree(path: &Path) -> Result<(), Error> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_err("cannot inspect", path, &e)),
        Ok(meta) if meta.is_dir() => {
            std::fs::remove_dir_all(path).map_err(|e| io_err("cannot remove", path, &e))
        }
        Ok(_) => std::fs::remove_file(path).map_err(|e| io_err("cannot remove", path, &e)),
    }
}

/// Removes `dir` if it is empty; anything else (not empty, gone) is fine.
pub(super) fn remove_dir_if_empty(dir: &Path) {
    let _ = std::fs::remove_dir(dir);
}

/// `path` with `.` and `..` resolved by the text.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The worktree a registration's `gitdir` file names (the directory holding
/// `.git`), absolute; relative contents (`worktree.useRelativePaths`) are
/// relative to the registration directory.
fn registered_worktree(admin: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(admin.join("gitdir")).ok()?;
    let dot_git = Path::new(text.trim_end_matches(['\n', '\r']));
    let dot_git = if dot_git.is_absolute() {
        dot_git.to_path_buf()
    } else {
        lexical(&admin.join(dot_git))
    };
    dot_git.parent().map(Path::to_path_buf)
}

fn same_place(a: &Path, b: &Path) -> bool {
    a == b
        || match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
}

/// The name of the registration under `<common>/worktrees/` whose `gitdir`
/// names the worktree at `path`, if any.
pub(super) fn find_registration(common: &Path, path: &Path) -> Result<Option<String>, Error> {
    let dir = common.join("worktrees");
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err("cannot list", &dir, &e)),
    };
    for entry in entries {
        let entry = entry.map_err(|e| io_err("cannot list", &dir, &e))?;
        if let Some(registered) = registered_worktree(&entry.path()) {
            if same_place(&registered, path) {
                return Ok(entry.file_name().to_str().map(str::to_owned));
            }
        }
    }
    Ok(None)
}

/// The registration directory `<common>/worktrees/<name>`.
pub(super) fn registration_dir(common: &Path, name: &str) -> PathBuf {
    common.join("worktrees").join(name)
}

/// True when the registration `name` is locked.
pub(super) fn is_locked(common: &Path, name: &str) -> bool {
    exists(&registration_dir(common, name).join("locked"))
}

/// Deletes the registration of the worktree at `path` (and only that one:
/// found by its `gitdir`, never by a repository-wide prune). Returns whether
/// there was one. The caller has removed or will remove the directory.
pub(super) fn remove_registration(common: &Path, path: &Path) -> Result<bool, Error> {
    match find_registration(common, path)? {
        Some(name) => {
            remove_tree(&registration_dir(common, &name))?;
            Ok(true)
        }
        None => Ok(false),
    }
}

/// True when `refname` is the `HEAD` of the main worktree or of any linked
/// worktree of the repository whose common directory is `common`.
pub(super) fn branch_checked_out(common: &Path, refname: &str) -> bool {
    let names_it = |head: &Path| {
        std::fs::read_to_string(head)
            .map(|t| t.trim() == format!("ref: {refname}"))
            .unwrap_or(false)
    };
    if names_it(&common.join("HEAD")) {
        return true;
    }
    std::fs::read_dir(common.join("worktrees"))
        .map(|entries| {
            entries
                .flatten()
                .any(|entry| names_it(&entry.path().join("HEAD")))
        })
        .unwrap_or(false)
}

/// The state of a record: what coderig was doing with the worktree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum RecordState {
    /// Written before anything is created; a crash leaves it for sweep to undo.
    Creating,
    /// The worktree exists, locked or not.
    Ready,
    /// Removal was proven and has begun; sweep finishes it.
    Removing,
}

/// coderig's record of one worktree: `<root>/<battle>/<contestant>.worktree.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Record {
    /// The format version (1).
    pub version: u32,
    /// What coderig was doing.
    pub state: RecordState,
    /// The worktree as `create` returns it.
    pub worktree: Worktree,
    /// The repository's common git directory (where `worktrees/` and the
    /// refs live), canonical.
    pub common_dir: PathBuf,
}

/// The suffix of record files; a slug never contains a `.`.
pub(super) const RECORD_SUFFIX: &str = ".worktree.json";

/// Where the record of the worktree at `<root>/<battle>/<contestant>` lives.
pub(super) fn record_path(worktree_path: &Path) -> PathBuf {
    let mut name = worktree_path
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(RECORD_SUFFIX);
    worktree_path.with_file_name(name)
}

/// Writes `record` atomically (temp file, fsync, rename), creating the
/// battle directory if a concurrent removal took it away.
pub(super) fn write_record(path: &Path, record: &Record) -> Result<(), Error> {
    let bytes = serde_json::to_vec_pretty(record)
        .map_err(|e| Error::internal(format!("cannot encode a worktree record: {e}")))?;
    let mut attempt = 0;
    loop {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| io_err("cannot create", dir, &e))?;
        }
        match crate::edit::file::write_atomic(path, &bytes) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound && attempt == 0 => attempt += 1,
            Err(e) => return Err(io_err("cannot write", path, &e)),
        }
    }
}

/// Publishes the first record of a worktree, exclusively: written to a
/// temporary file, then hard-linked to `path`, which fails when a record is
/// there already. So of two concurrent creates of one name exactly one
/// proceeds, and the other can undo nothing of it. `Ok(false)`: taken.
pub(super) fn claim_record(path: &Path, record: &Record) -> Result<bool, Error> {
    let bytes = serde_json::to_vec_pretty(record)
        .map_err(|e| Error::internal(format!("cannot encode a worktree record: {e}")))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| io_err("cannot create", dir, &e))?;
    let tmp = dir.join(format!(
        ".{}.{}.{}.tmp",
        path.file_name().unwrap_or_default().to_string_lossy(),
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let written = (|| {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        file.write_all(&bytes)?;
        file.sync_all()
    })();
    let linked = written.and_then(|()| std::fs::hard_link(&tmp, path));
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => {
            if let Ok(d) = std::fs::File::open(dir) {
                let _ = d.sync_all();
            }
            Ok(true)
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(io_err("cannot write", path, &e)),
    }
}

/// Reads the record at `path`; `None` when there is none.
pub(super) fn read_record(path: &Path) -> Result<Option<Record>, Error> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err("cannot read", path, &e)),
    };
    serde_json::from_slice(&bytes).map(Some).map_err(|e| {
        Error::io(format!(
            "the worktree record {} is corrupt: {e}",
            path.display()
        ))
        .with_detail("path", path.to_string_lossy().as_ref())
    })
}

/// Deletes the record at `path` (a missing one is fine).
pub(super) fn delete_record(path: &Path) -> Result<(), Error> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(io_err("cannot remove", path, &e)),
        _ => Ok(()),
    }
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A private temporary directory under `<root>/.tmp/`, removed on drop.
pub(super) struct TempDir(PathBuf);

impl TempDir {
    /// Creates `<root>/.tmp/<pid>-<n>/`.
    pub(super) fn new(root: &Path) -> Result<TempDir, Error> {
        let base = root.join(".tmp");
        std::fs::create_dir_all(&base).map_err(|e| io_err("cannot create", &base, &e))?;
        loop {
            let dir = base.join(format!(
                "{}-{}",
                std::process::id(),
                TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
            ));
            match std::fs::create_dir(&dir) {
                Ok(()) => return Ok(TempDir(dir)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(io_err("cannot create", &dir, &e)),
            }
        }
    }

    /// The directory.
    pub(super) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// True when `dir` holds a `.git` file naming a registration whose `gitdir`
/// names `dir` back: git knows `dir` as a linked worktree.
pub(super) fn is_registered_dir(dir: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(dir.join(".git")) else {
        return false;
    };
    let Some(admin) = text.trim_end().strip_prefix("gitdir: ") else {
        return false;
    };
    let admin = Path::new(admin);
    let admin = if admin.is_absolute() {
        admin.to_path_buf()
    } else {
        lexical(&dir.join(admin))
    };
    registered_worktree(&admin).is_some_and(|back| same_place(&back, dir))
}
