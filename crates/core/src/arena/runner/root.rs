//! Which process may sweep the worktree root of a data directory.
//!
//! The sweep at start removes what a crashed process left (interrupted
//! worktree creations, oracle checkouts), which is only safe while no other
//! live process works in the same root: a server and a `coderig battle run`
//! or `coderig run` on one data directory would otherwise remove each
//! other's live checkouts. Every arena that runs work holds a shared
//! `flock(2)` on `<data_dir>/worktrees.lock` for its lifetime and sweeps
//! only when it got the lock exclusively first, without waiting. The kernel
//! drops the lock when its process dies (kill -9 included), so a crash's
//! leftovers are swept by the next process that starts alone.

use crate::error::Error;
use std::fs::{File, OpenOptions};
use std::path::Path;

/// The arena's hold on its worktree root (see the [module docs](self)).
/// Dropping it releases the lock.
pub(crate) struct RootHold {
    #[cfg(unix)]
    lock: nix::fcntl::Flock<File>,
    alone: bool,
}

impl RootHold {
    /// Takes the lock: exclusively when no other process holds it (then
    /// [`RootHold::alone`] is true until [`RootHold::share`]), shared
    /// otherwise, waiting only while another process sweeps.
    pub(crate) fn take(data_dir: &Path) -> Result<RootHold, Error> {
        let path = data_dir.join("worktrees.lock");
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| Error::io(format!("cannot open {}: {e}", path.display())))?;
        Self::lock(file, &path)
    }

    #[cfg(unix)]
    fn lock(file: File, path: &Path) -> Result<RootHold, Error> {
        use nix::errno::Errno;
        use nix::fcntl::{Flock, FlockArg};
        let refused = |e: Errno| Error::io(format!("cannot lock {}: {e}", path.display()));
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(lock) => Ok(RootHold { lock, alone: true }),
            Err((file, Errno::EWOULDBLOCK)) => {
                let lock = Flock::lock(file, FlockArg::LockShared).map_err(|(_, e)| refused(e))?;
                Ok(RootHold { lock, alone: false })
            }
            Err((_, e)) => Err(refused(e)),
        }
    }

    #[cfg(not(unix))]
    fn lock(_file: File, _path: &Path) -> Result<RootHold, Error> {
        // No flock: never sweep what another process may be using.
        Ok(RootHold { alone: false })
    }

    /// True while this process holds the root alone: it may sweep.
    pub(crate) fn alone(&self) -> bool {
        self.alone
    }

    /// After the sweep: the lock becomes shared, so other processes can
    /// start beside this one (and skip their sweep).
    pub(crate) fn share(&mut self) -> Result<(), Error> {
        #[cfg(unix)]
        if self.alone {
            self.lock
                .relock(nix::fcntl::FlockArg::LockShared)
                .map_err(|e| Error::io(format!("cannot share the worktree root's lock: {e}")))?;
        }
        self.alone = false;
        Ok(())
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn the_first_holder_is_alone_and_later_ones_share() {
        let dir = tempfile::tempdir().unwrap();
        let mut first = RootHold::take(dir.path()).unwrap();
        assert!(first.alone());
        first.share().unwrap();
        assert!(!first.alone());
        // flock is per open file: a second open in this process is a
        // second holder, as another process would be.
        let second = RootHold::take(dir.path()).unwrap();
        assert!(!second.alone(), "another holder: no sweep");
        drop(first);
        drop(second);
        assert!(RootHold::take(dir.path()).unwrap().alone());
    }
}
