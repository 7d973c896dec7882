//! Every path a tool touches, confined to the workdir. STUB: being written.

use std::path::{Path, PathBuf};

/// Why a path was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathRefusal {
    /// `OUTSIDE_WORKDIR` or `NOT_FOUND`.
    pub code: &'static str,
    /// What the model is told.
    pub message: String,
}

/// Resolves the model's `path` under `root` (canonical).
pub fn resolve(root: &Path, path: &str, must_exist: bool) -> Result<PathBuf, PathRefusal> {
    let _ = must_exist;
    Ok(root.join(path))
}
