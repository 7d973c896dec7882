//! Repo-relative paths, normalized so that every worktree names a file the
//! same way.

use crate::names::macros::named_enum;
use std::fmt;

/// A normalized path relative to the repository root: segments separated
/// by `/`, none empty, `.` or `..`.
///
/// Guarantees: built only by [`RepoPath::new`], so it never starts with `/`
/// or a drive letter, never contains `\`, `//`, a `.` or `..` segment or a
/// NUL, and is never empty; `RepoPath::new(p.as_str()) == Ok(p)`. Two
/// spellings of one file (`./src/../src/a.rs`, `src\a.rs`, `src//a.rs/`)
/// give equal values. Names are compared byte for byte (case-sensitive, no
/// Unicode normalization, symlinks not resolved: a pure function cannot
/// see the file system).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RepoPath(String);

impl RepoPath {
    /// Normalizes `path`: `\` becomes `/`; empty and `.` segments go; `..`
    /// removes the segment before it. Refused ([`PathError`]): an absolute
    /// path (`/x`, `\\server\share`, `C:\x`, `C:x`), a `..` that climbs
    /// above the root, a path that names the root itself (`""`, `.`,
    /// `a/..`), a NUL byte. Whitespace is kept: it is part of a file name.
    pub fn new(path: &str) -> Result<RepoPath, PathError> {
        let fail = |reason| Err(PathError::new(path, reason));
        if path.contains('\0') {
            return fail(PathErrorReason::NulByte);
        }
        let unified = path.replace('\\', "/");
        let b = unified.as_bytes();
        if unified.starts_with('/') || (b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':')
        {
            return fail(PathErrorReason::Absolute);
        }
        let mut segments: Vec<&str> = Vec::new();
        for segment in unified.split('/') {
            match segment {
                "" | "." => {}
                ".." => {
                    if segments.pop().is_none() {
                        return fail(PathErrorReason::EscapesRepo);
                    }
                }
                s => segments.push(s),
            }
        }
        if segments.is_empty() {
            return fail(PathErrorReason::Empty);
        }
        Ok(RepoPath(segments.join("/")))
    }

    /// The normalized path.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RepoPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for RepoPath {
    type Err = PathError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        RepoPath::new(s)
    }
}

impl serde::Serialize for RepoPath {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for RepoPath {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        RepoPath::new(&text).map_err(serde::de::Error::custom)
    }
}

/// Why a path is not a repo-relative file path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PathErrorReason {
    /// It names the repository root (or nothing), not a file.
    Empty,
    /// It is absolute (`/x`, `C:\x`, `\\server\share`).
    Absolute,
    /// A `..` climbs above the repository root.
    EscapesRepo,
    /// It contains a NUL byte.
    NulByte,
}
named_enum!(PathErrorReason, "path error reason", {
    Empty => "empty",
    Absolute => "absolute",
    EscapesRepo => "escapes_repo",
    NulByte => "nul_byte",
});

/// A path that is not a repo-relative file path.
///
/// Converts into [`crate::Error`] as `invalid_input` with the details
/// `file` (the path as given) and `reason`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("path {path:?} {}", describe(*.reason))]
pub struct PathError {
    /// The path as given.
    pub path: String,
    /// What is wrong with it.
    pub reason: PathErrorReason,
}

impl PathError {
    fn new(path: &str, reason: PathErrorReason) -> PathError {
        PathError {
            path: path.to_owned(),
            reason,
        }
    }
}

fn describe(reason: PathErrorReason) -> &'static str {
    match reason {
        PathErrorReason::Empty => {
            "names the repository root, not a file; give a path like src/main.rs"
        }
        PathErrorReason::Absolute => {
            "is absolute; give it relative to the repository root, like src/main.rs"
        }
        PathErrorReason::EscapesRepo => {
            "climbs out of the repository with `..`; give a path inside it"
        }
        PathErrorReason::NulByte => "contains a NUL byte",
    }
}

impl From<PathError> for crate::Error {
    fn from(e: PathError) -> Self {
        crate::Error::invalid_input(e.to_string())
            .with_detail("file", e.path.as_str())
            .with_detail("reason", e.reason.as_str())
    }
}
