//! Path confinement: every path a request names must lie under a
//! configured root, and no symlink may lead a write outside it.
//!
//! Two layers:
//!
//! - [`confine_lexically`] (pure): joins a relative path to the root,
//!   removes `.`, resolves `..` by the text alone and checks that the result
//!   stays under the root. It refuses `../x` before any IO happens.
//! - [`resolve_under`] / [`resolve_entry_under`] / [`ProjectRoots`] (std
//!   IO): the same, then every existing component is resolved on the file
//!   system (symlinks followed), and the resolved path must still lie under
//!   the canonical root. The path they return is the one to use: the check
//!   holds for it, not for the spelling the request gave.
//!
//! Limits (documented, not hidden): components that do not exist yet are
//! taken as spelled, so a symlink created there *after* the check (a race
//! with another writer inside the root) is not seen. Inside coderig the
//! roots are the user's project and coderig's own data directory, where no
//! other process is expected to plant symlinks while a request runs.

use crate::error::Error;
use std::io;
use std::path::{Component, Path, PathBuf};

fn outside(path: &Path, root: &Path) -> Error {
    Error::invalid_input(format!(
        "{} is outside the project root {}",
        path.display(),
        root.display()
    ))
    .with_detail("path", path.to_string_lossy().as_ref())
    .with_detail("root", root.to_string_lossy().as_ref())
}

/// `path` with `.` removed and each `..` taking away the component before
/// it (`..` at the file-system root stays there, as the OS does). Pure.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => match out.components().next_back() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                // `/..` is `/`, as the OS has it.
                Some(Component::RootDir | Component::Prefix(_)) => {}
                // A relative path climbing above its start keeps its `..`.
                None | Some(Component::ParentDir | Component::CurDir) => out.push(".."),
            },
            other => out.push(other.as_os_str()),
        }
    }
    out
}

fn is_normal_absolute(path: &Path) -> bool {
    path.is_absolute()
        && path
            .components()
            .all(|c| !matches!(c, Component::CurDir | Component::ParentDir))
}

/// True when `path` is `root` or lies under it, compared component by
/// component (`/a/bc` is not under `/a/b`). Pure: both are taken as spelled.
pub fn is_within(root: &Path, path: &Path) -> bool {
    path.starts_with(root)
}

/// The pure check: `path` (relative paths are relative to `root`) with `.`
/// and `..` resolved by the text, which must be `root` or lie under it.
///
/// Guarantees: the result is absolute, has no `.` or `..` component, and
/// starts with `root` component by component. Errors (`invalid_input`,
/// naming the root, details `path` and `root`): the path climbs out of the
/// root (`../x`, `a/../../x`) or is an absolute path elsewhere; `root`
/// itself is not absolute or contains `.`/`..` (a caller bug, refused
/// rather than guessed). Symlinks are not seen (no IO): use
/// [`resolve_under`] before writing.
pub fn confine_lexically(root: &Path, path: &Path) -> Result<PathBuf, Error> {
    if !is_normal_absolute(root) {
        return Err(Error::invalid_input(format!(
            "the project root {} must be an absolute path without . or .. components",
            root.display()
        ))
        .with_detail("root", root.to_string_lossy().as_ref()));
    }
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        root.join(path)
    };
    let normal = normalize(&joined);
    if is_within(root, &normal) {
        Ok(normal)
    } else {
        Err(outside(path, root))
    }
}

fn io_error(what: &str, path: &Path, e: &io::Error) -> Error {
    Error::io(format!("{what} {}: {e}", path.display()))
        .with_detail("path", path.to_string_lossy().as_ref())
}

fn canonical_root(root: &Path) -> Result<PathBuf, Error> {
    let canonical = std::fs::canonicalize(root)
        .map_err(|e| io_error("cannot resolve the project root", root, &e))?;
    if !canonical.is_dir() {
        return Err(Error::invalid_input(format!(
            "the project root {} is not a directory",
            root.display()
        ))
        .with_detail("root", root.to_string_lossy().as_ref()));
    }
    Ok(canonical)
}

fn resolve(root: &Path, path: &Path, follow_leaf: bool) -> Result<PathBuf, Error> {
    if path.as_os_str().as_encoded_bytes().contains(&0) {
        // The file system would refuse it as an IO error; it is the
        // request's mistake.
        return Err(Error::invalid_input(format!(
            "{:?} contains a NUL character, which no path can hold",
            path.display().to_string()
        ))
        .with_detail("path", path.to_string_lossy().as_ref()));
    }
    let root = canonical_root(root)?;
    // A relative path is refused lexically before any IO; an absolute one
    // may spell the root differently (through a symlink), so it is checked
    // after resolution only.
    let spelled = if path.is_absolute() {
        normalize(path)
    } else {
        confine_lexically(&root, path)?
    };
    let components: Vec<Component<'_>> = spelled.components().collect();
    let mut resolved = PathBuf::new();
    let mut missing_from = components.len();
    for (i, component) in components.iter().enumerate() {
        let next = resolved.join(component.as_os_str());
        if matches!(component, Component::RootDir | Component::Prefix(_)) {
            resolved = next;
            continue;
        }
        let leaf = i + 1 == components.len();
        match std::fs::symlink_metadata(&next) {
            Ok(meta) if meta.file_type().is_symlink() && (follow_leaf || !leaf) => {
                resolved = std::fs::canonicalize(&next).map_err(|e| {
                    Error::invalid_input(format!(
                        "{} goes through the symlink {}, which does not resolve ({e}); refused under the project root {}",
                        path.display(),
                        next.display(),
                        root.display()
                    ))
                    .with_detail("path", path.to_string_lossy().as_ref())
                    .with_detail("root", root.to_string_lossy().as_ref())
                })?;
            }
            Ok(_) => resolved = next,
            Err(e)
                if e.kind() == io::ErrorKind::NotFound
                    || e.kind() == io::ErrorKind::NotADirectory =>
            {
                missing_from = i;
                break;
            }
            Err(e) => return Err(io_error("cannot inspect", &next, &e)),
        }
    }
    for component in &components[missing_from..] {
        resolved.push(component.as_os_str());
    }
    if is_within(&root, &resolved) {
        Ok(resolved)
    } else {
        Err(outside(path, &root))
    }
}

/// `path` (relative paths are relative to `root`) resolved on the file
/// system, every symlink followed — the last component too, as a write
/// with `std::fs` would follow it — and checked to lie under the canonical
/// `root`.
///
/// Guarantees: the result is absolute, every existing component of it is
/// resolved (no symlink left in the existing part), and it is the
/// canonical root or lies under it. Errors: `invalid_input` naming the
/// root (details `path`, `root`) when the path or a symlink on it leads
/// outside, or goes through a symlink that does not resolve (dangling or a
/// loop: where it would write cannot be known); `invalid_input` (detail
/// `path`) for a path with a NUL character, which no file can have; `io`
/// when the root or a component cannot be inspected.
pub fn resolve_under(root: &Path, path: &Path) -> Result<PathBuf, Error> {
    resolve(root, path, true)
}

/// Like [`resolve_under`], except that the last component is not followed
/// when it is a symlink: for operations that replace or delete an entry
/// rather than write through it (`git apply` replaces a symlink). Every
/// directory on the way is still resolved and checked.
pub fn resolve_entry_under(root: &Path, path: &Path) -> Result<PathBuf, Error> {
    resolve(root, path, false)
}

/// The configured roots under which requests may name paths (canonical,
/// existing directories).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectRoots {
    roots: Vec<PathBuf>,
}

impl ProjectRoots {
    /// Canonicalizes each root. Errors: no root at all (`invalid_input`), a
    /// root that does not exist or cannot be resolved (`io`), or that is
    /// not a directory (`invalid_input`).
    pub fn new<I, P>(roots: I) -> Result<ProjectRoots, Error>
    where
        I: IntoIterator<Item = P>,
        P: AsRef<Path>,
    {
        let roots = roots
            .into_iter()
            .map(|root| canonical_root(root.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        if roots.is_empty() {
            return Err(Error::invalid_input(
                "at least one project root must be configured",
            ));
        }
        Ok(ProjectRoots { roots })
    }

    /// The canonical roots, in the configured order.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// [`resolve_under`] against the roots: an absolute path must lie
    /// under one of them (after resolution); a relative path is relative
    /// to the first root. The error names every root.
    pub fn resolve(&self, path: &Path) -> Result<PathBuf, Error> {
        self.resolve_with(path, resolve_under)
    }

    /// [`resolve_entry_under`] against the roots (see [`ProjectRoots::resolve`]).
    pub fn resolve_entry(&self, path: &Path) -> Result<PathBuf, Error> {
        self.resolve_with(path, resolve_entry_under)
    }

    fn resolve_with(
        &self,
        path: &Path,
        one: fn(&Path, &Path) -> Result<PathBuf, Error>,
    ) -> Result<PathBuf, Error> {
        if path.is_relative() {
            return one(&self.roots[0], path);
        }
        let mut first_error = None;
        for root in &self.roots {
            match one(root, path) {
                Ok(resolved) => return Ok(resolved),
                Err(e) if e.kind() == crate::ErrorKind::InvalidInput => {
                    first_error.get_or_insert(e);
                }
                Err(e) => return Err(e),
            }
        }
        match (self.roots.len(), first_error) {
            (1, Some(e)) => Err(e),
            (_, e) => {
                let names: Vec<String> =
                    self.roots.iter().map(|r| r.display().to_string()).collect();
                let mut error = Error::invalid_input(format!(
                    "{} is outside every project root ({})",
                    path.display(),
                    names.join(", ")
                ))
                .with_detail("path", path.to_string_lossy().as_ref())
                .with_detail("roots", names);
                if let Some(e) = e {
                    if let Some(root) = e.details().get("root") {
                        error = error.with_detail("root", root.clone());
                    }
                }
                Err(error)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_follows_the_text() {
        for (given, expected) in [
            ("/a/./b/../c", "/a/c"),
            ("/..", "/"),
            ("/a/b/../../..", "/"),
            ("a/../../b", "../b"),
            ("../../b", "../../b"),
            ("/a//b/", "/a/b"),
        ] {
            assert_eq!(
                normalize(Path::new(given)),
                PathBuf::from(expected),
                "{given}"
            );
        }
    }

    #[test]
    fn lexical_confinement_keeps_paths_under_the_root() {
        let root = Path::new("/srv/project");
        for (given, expected) in [
            ("src/main.rs", Some("/srv/project/src/main.rs")),
            ("./src/../README.md", Some("/srv/project/README.md")),
            ("", Some("/srv/project")),
            (".", Some("/srv/project")),
            ("/srv/project", Some("/srv/project")),
            ("/srv/project/a/../b", Some("/srv/project/b")),
            ("..", None),
            ("../project-evil/x", None),
            ("a/../../x", None),
            ("/srv/projectx", None),
            ("/etc/passwd", None),
            ("/srv/project/../other", None),
        ] {
            let got = confine_lexically(root, Path::new(given));
            match expected {
                Some(e) => assert_eq!(got.unwrap(), PathBuf::from(e), "{given}"),
                None => {
                    let err = got.unwrap_err();
                    assert_eq!(err.kind(), crate::ErrorKind::InvalidInput, "{given}");
                    assert!(err.message().contains("/srv/project"), "{err}");
                    assert_eq!(err.details()["root"], "/srv/project");
                }
            }
        }
    }

    #[test]
    fn a_root_that_is_not_normal_and_absolute_is_refused() {
        // (`/a/./b` is `/a/b` to `Path::components`, so it is normal.)
        for root in ["relative", "/a/../b", "./a"] {
            let err = confine_lexically(Path::new(root), Path::new("x")).unwrap_err();
            assert_eq!(err.kind(), crate::ErrorKind::InvalidInput, "{root}");
        }
    }
}
