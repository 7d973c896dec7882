//! One repository's worktree administration, one change at a time.
//!
//! git keeps every worktree's registration in `<common dir>/worktrees/`,
//! and its commands read all of them: a `git worktree unlock` beside a
//! concurrent `git worktree add` can read a half-written registration and
//! fail (`failed to read .git/worktrees/<name>/commondir`), and branch
//! deletions prune directories a concurrent creation is using. Contestants
//! of one battle (and oracle checkouts) change the same repository at once,
//! so every mutating step — create, lock, unlock, remove — takes this
//! repository's lock: a process-wide mutex per common directory, and, with
//! the `runtime` feature on Unix, an `flock` on
//! `<common dir>/coderig-worktrees.lock` so two servers on one machine
//! serialize too. Reads (diff) take no lock.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

type Locks = Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>;

fn locks() -> &'static Locks {
    static LOCKS: OnceLock<Locks> = OnceLock::new();
    LOCKS.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Runs `f` holding `common_dir`'s worktree lock.
pub(super) fn with_repo_lock<T>(common_dir: &Path, f: impl FnOnce() -> T) -> T {
    let lock = locks()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(common_dir.to_path_buf())
        .or_default()
        .clone();
    let _in_process = lock.lock().unwrap_or_else(|e| e.into_inner());
    let _across_processes = file_lock(common_dir);
    f()
}

#[cfg(all(unix, feature = "runtime"))]
fn file_lock(common_dir: &Path) -> Option<nix::fcntl::Flock<std::fs::File>> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(common_dir.join("coderig-worktrees.lock"))
        .ok()?;
    // Best effort: a repository we cannot write a lock file into still
    // gets the in-process lock.
    nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive).ok()
}

#[cfg(not(all(unix, feature = "runtime")))]
fn file_lock(_common_dir: &Path) -> Option<()> {
    None
}
