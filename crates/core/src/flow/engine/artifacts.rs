//! A run's files under `<data_dir>/runs/<run_id>/`: per step
//! `<step_id>/output.txt` (a command's `stderr.txt` beside it), and the
//! rendered `report.md`. Each file is written to a temporary name and
//! renamed, so a reader never sees half of one.

use crate::error::Error;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The run's directory.
pub(crate) fn run_dir(data_dir: &Path, run_id: &str) -> PathBuf {
    data_dir.join("runs").join(run_id)
}

/// The step's directory (created on demand).
pub(crate) fn step_dir(data_dir: &Path, run_id: &str, step_id: &str) -> Result<PathBuf, Error> {
    let dir = run_dir(data_dir, run_id).join(step_id);
    std::fs::create_dir_all(&dir)
        .map_err(|e| Error::io(format!("cannot create {}: {e}", dir.display())))?;
    Ok(dir)
}

/// Writes `bytes` to `dir/name` atomically (temp file, optional fsync,
/// rename).
pub(crate) fn write(dir: &Path, name: &str, bytes: &[u8], sync: bool) -> Result<PathBuf, Error> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::io(format!("cannot create {}: {e}", dir.display())))?;
    let path = dir.join(name);
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let io = |e: std::io::Error| Error::io(format!("cannot write {}: {e}", path.display()));
    let mut f = std::fs::File::create(&tmp).map_err(io)?;
    f.write_all(bytes).map_err(io)?;
    if sync {
        f.sync_all().map_err(io)?;
    }
    drop(f);
    std::fs::rename(&tmp, &path).map_err(io)?;
    Ok(path)
}
