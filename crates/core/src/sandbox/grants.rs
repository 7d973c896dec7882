//! The read grants of a policy — everything under its read roots but the
//! hidden paths — opened once and kept while the directories they were
//! computed from are unchanged (Linux).
//!
//! Computing them walks the directories that lead to a hidden path (`/`,
//! the home directory, `~/.config`, …) and opens every other entry; on a
//! machine with slow system calls that is most of a sandbox's set-up cost,
//! and it is the same for every process of a rig. A cached entry is reused
//! only while the modification time of every directory it listed is the
//! one seen then (an entry added to or removed from the home directory
//! changes it); otherwise it is computed again. Fails closed either way: an
//! entry created since the grants were computed has no rule, so it stays
//! unreadable until the next computation.

use super::policy::SandboxPolicy;
use landlock::{AccessFs, BitFlags, PathFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// How many distinct (roots, hidden, readable) sets are kept.
const CACHED: usize = 8;

/// What a policy may read, opened.
#[derive(Debug)]
pub(super) struct ReadGrants {
    /// Each rule: the opened path, whether it is a directory, and the
    /// rights (`read` for whole subtrees, `ReadDir` for split directories).
    pub rules: Vec<(PathFd, bool, Grant)>,
    /// The hidden paths (real, sorted) that exist.
    pub hidden_existing: Vec<PathBuf>,
    /// Each listed directory with the modification time it had.
    stamps: Vec<(PathBuf, Option<SystemTime>)>,
}

/// The rights of a read grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Grant {
    /// Read, list and execute the whole subtree.
    Read,
    /// List this directory only (it was split to leave a hidden path out).
    List,
}

impl Grant {
    pub(super) fn access(self, read: BitFlags<AccessFs>) -> BitFlags<AccessFs> {
        match self {
            Grant::Read => read,
            Grant::List => AccessFs::ReadDir.into(),
        }
    }
}

type Key = (Vec<PathBuf>, Vec<PathBuf>, Vec<PathBuf>);

static CACHE: Mutex<Vec<(Key, Arc<ReadGrants>)>> = Mutex::new(Vec::new());

/// The read grants of `policy`, from the cache when still valid.
pub(super) fn read_grants(policy: &SandboxPolicy) -> Arc<ReadGrants> {
    let key: Key = (
        policy.read_roots.clone(),
        policy.hidden.clone(),
        policy.readable.clone(),
    );
    {
        let cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, grants)) = cache.iter().find(|(k, _)| *k == key) {
            if grants.stamps.iter().all(|(dir, seen)| mtime(dir) == *seen) {
                return grants.clone();
            }
        }
    }
    let grants = Arc::new(compute(policy));
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    cache.retain(|(k, _)| *k != key);
    if cache.len() >= CACHED {
        cache.remove(0);
    }
    cache.push((key, grants.clone()));
    grants
}

fn mtime(dir: &Path) -> Option<SystemTime> {
    std::fs::metadata(dir).and_then(|m| m.modified()).ok()
}

fn compute(policy: &SandboxPolicy) -> ReadGrants {
    let hidden = effective_hidden(policy);
    let mut rules = Vec::new();
    let mut stamps = Vec::new();
    let mut list = |dir: &Path| -> Vec<(PathBuf, bool)> {
        // The time is taken before the listing: a change in between makes
        // the next use compute again rather than miss it.
        stamps.push((dir.to_path_buf(), mtime(dir)));
        list_dir(dir)
    };
    let (mut full, mut listed) = (Vec::new(), Vec::new());
    for root in &policy.read_roots {
        read_grants_of(&real_path(root), &hidden, &mut list, &mut full, &mut listed);
    }
    full.extend(policy.readable.iter().filter(|p| p.exists()).cloned());
    for (path, grant) in full
        .iter()
        .map(|p| (p, Grant::Read))
        .chain(listed.iter().map(|p| (p, Grant::List)))
    {
        // Gone since it was listed, or not openable by us: no rule.
        if let Ok(fd) = PathFd::new(path) {
            rules.push((fd, path.is_dir(), grant));
        }
    }
    let hidden_existing = hidden.iter().filter(|h| h.exists()).cloned().collect();
    ReadGrants {
        rules,
        hidden_existing,
        stamps,
    }
}

/// The hidden paths minus those a `readable` entry re-opens, made absolute
/// through their nearest existing ancestor (so a symlinked home is split
/// where the files really are).
pub(super) fn effective_hidden(policy: &SandboxPolicy) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = policy
        .hidden
        .iter()
        .filter(|h| !policy.readable.iter().any(|r| h.starts_with(r)))
        .map(|h| real_path(h))
        .collect();
    out.sort();
    out.dedup();
    out
}

pub(super) fn real_path(path: &Path) -> PathBuf {
    if let Ok(real) = path.canonicalize() {
        return real;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => real_path(parent).join(name),
        _ => path.to_path_buf(),
    }
}

/// The read grants that make everything under `root` readable except the
/// `hidden` paths: whole subtrees (`full`), and the directories split to
/// leave a hidden path out, which keep only the right to be listed
/// (`listed`). Symlinks get no rule: Landlock checks where they lead.
/// Pure but for `list`, which reads a directory.
pub(super) fn read_grants_of(
    root: &Path,
    hidden: &[PathBuf],
    list: &mut dyn FnMut(&Path) -> Vec<(PathBuf, bool)>,
    full: &mut Vec<PathBuf>,
    listed: &mut Vec<PathBuf>,
) {
    if hidden.iter().any(|h| h == root) {
        return;
    }
    if !hidden.iter().any(|h| h.starts_with(root)) {
        full.push(root.to_path_buf());
        return;
    }
    listed.push(root.to_path_buf());
    for (child, is_symlink) in list(root) {
        if !is_symlink {
            read_grants_of(&child, hidden, list, full, listed);
        }
    }
}

fn list_dir(dir: &Path) -> Vec<(PathBuf, bool)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .map(|e| {
            let symlink = e.file_type().map(|t| t.is_symlink()).unwrap_or(true);
            (e.path(), symlink)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_grants_split_only_the_ancestors_of_hidden_paths() {
        // A fake tree: / has home and usr; home has .ssh, .bashrc, a
        // symlink, and .config with gcloud and nvim.
        let tree: &[(&str, &[(&str, bool)])] = &[
            ("/", &[("/home", false), ("/usr", false)]),
            (
                "/home",
                &[
                    ("/home/.ssh", false),
                    ("/home/.bashrc", false),
                    ("/home/keys", true),
                    ("/home/.config", false),
                ],
            ),
            (
                "/home/.config",
                &[
                    ("/home/.config/gcloud", false),
                    ("/home/.config/nvim", false),
                ],
            ),
        ];
        let mut list = |dir: &Path| -> Vec<(PathBuf, bool)> {
            tree.iter()
                .find(|(d, _)| Path::new(d) == dir)
                .map(|(_, kids)| kids.iter().map(|(p, s)| (PathBuf::from(p), *s)).collect())
                .unwrap_or_default()
        };
        let hidden = vec![
            PathBuf::from("/home/.ssh"),
            PathBuf::from("/home/.config/gcloud"),
        ];
        let (mut full, mut listed) = (Vec::new(), Vec::new());
        read_grants_of(Path::new("/"), &hidden, &mut list, &mut full, &mut listed);
        let s = |v: &[PathBuf]| {
            v.iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(s(&full), ["/home/.bashrc", "/home/.config/nvim", "/usr"]);
        assert_eq!(s(&listed), ["/", "/home", "/home/.config"]);

        // Nothing hidden: one rule for the whole tree.
        let (mut full, mut listed) = (Vec::new(), Vec::new());
        read_grants_of(Path::new("/"), &[], &mut list, &mut full, &mut listed);
        assert_eq!(s(&full), ["/"]);
        assert!(listed.is_empty());
    }

    #[test]
    fn readable_entries_reopen_hidden_paths() {
        let mut policy = SandboxPolicy::new(Some(Path::new("/nonexistent-home")));
        policy.readable.push("/nonexistent-home/.ssh".into());
        let hidden = effective_hidden(&policy);
        assert!(!hidden.contains(&PathBuf::from("/nonexistent-home/.ssh")));
        assert!(hidden.contains(&PathBuf::from("/nonexistent-home/.aws")));
    }

    #[test]
    fn the_cache_is_reused_until_a_listed_directory_changes() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir(home.path().join(".ssh")).unwrap();
        std::fs::write(home.path().join("notes"), "n").unwrap();
        let mut policy = SandboxPolicy::new(Some(home.path()));
        policy.read_roots = vec![home.path().to_path_buf()];
        let first = read_grants(&policy);
        assert!(
            Arc::ptr_eq(&first, &read_grants(&policy)),
            "reused while unchanged"
        );
        let count = |g: &ReadGrants| g.rules.iter().filter(|(_, _, k)| *k == Grant::Read).count();
        assert_eq!(count(&first), 1, "{:?}", first.rules);
        // A new entry in the home directory: computed again, and granted.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(home.path().join("later"), "l").unwrap();
        let again = read_grants(&policy);
        assert!(!Arc::ptr_eq(&first, &again));
        assert_eq!(count(&again), 2);
    }
}
