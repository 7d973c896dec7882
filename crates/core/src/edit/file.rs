//! Read → apply → write helpers that never leave a half-written file.
//!
//! The new content is written to a temporary file in the same directory,
//! flushed to disk, given the permissions of the file it replaces, and
//! renamed over it (an atomic step on POSIX file systems); the directory is
//! then synced, best-effort. A refused edit never touches the file.

use crate::edit::apply::{apply_edit_with, apply_edits, Applied, ApplyOptions, Edit};
use crate::edit::error::EditError;
use crate::edit::hashline::HashlineEdit;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Replace the contents of `path` with `bytes` atomically.
///
/// Guarantees: readers see either the old or the new content, never a mix;
/// an existing file keeps its permissions; writing through a symlink
/// replaces the link's target, not the link; on error the original file is
/// untouched and no temporary file is left behind.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let target: PathBuf = match fs::canonicalize(path) {
        Ok(p) => p,
        Err(e) if e.kind() == io::ErrorKind::NotFound => path.to_path_buf(),
        Err(e) => return Err(e),
    };
    let name = target
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path has no file name"))?;
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let permissions = fs::metadata(&target).ok().map(|m| m.permissions());
    let (tmp_path, mut tmp) = loop {
        let candidate = dir.join(format!(
            ".{}.{}.{}.tmp",
            name.to_string_lossy(),
            std::process::id(),
            TMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        match fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&candidate)
        {
            Ok(f) => break (candidate, f),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    };
    let result = (|| {
        tmp.write_all(bytes)?;
        if let Some(p) = permissions {
            tmp.set_permissions(p)?;
        }
        tmp.sync_all()?;
        drop(tmp);
        fs::rename(&tmp_path, &target)
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp_path);
        return Err(e);
    }
    // Persist the rename itself; not every platform can open a directory.
    if let Ok(d) = fs::File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

fn io_error(action: &str, path: &Path, e: io::Error) -> EditError {
    EditError::Io {
        message: format!("could not {action} {}: {e}", path.display()),
    }
}

fn read_text(path: &Path) -> Result<String, EditError> {
    let bytes = fs::read(path).map_err(|e| io_error("read", path, e))?;
    String::from_utf8(bytes).map_err(|e| {
        EditError::invalid(format!(
            "{} is not valid UTF-8 text (invalid byte at offset {}); only UTF-8 files can be edited",
            path.display(),
            e.utf8_error().valid_up_to()
        ))
    })
}

fn with_path(opts: &ApplyOptions, path: &Path) -> ApplyOptions {
    let mut o = opts.clone();
    if o.path.is_none() {
        o.path = Some(path.to_string_lossy().into_owned());
    }
    o
}

fn write(path: &Path, content: &str) -> Result<(), EditError> {
    write_atomic(path, content.as_bytes()).map_err(|e| io_error("write", path, e))
}

/// Apply one edit to the file at `path` and write it back atomically.
///
/// Guarantees: the same checks as [`apply_edit_with`] (guards use `path`
/// when `opts.path` is `None`); a non-UTF-8 file is
/// [`EditError::InvalidInput`], IO failures are [`EditError::Io`] naming the
/// path; on any error the file is byte-for-byte untouched.
pub fn edit_file(path: &Path, edit: &Edit, opts: &ApplyOptions) -> Result<Applied, EditError> {
    let content = read_text(path)?;
    let applied = apply_edit_with(&content, edit, &with_path(opts, path))?;
    write(path, &applied.content)?;
    Ok(applied)
}

/// Apply several edits to the file at `path` atomically (all or none, see
/// [`apply_edits`]) and write it back atomically.
///
/// Guarantees: as [`edit_file`].
pub fn edits_file(path: &Path, edits: &[Edit], opts: &ApplyOptions) -> Result<Applied, EditError> {
    let content = read_text(path)?;
    let applied = apply_edits(&content, edits, &with_path(opts, path))?;
    write(path, &applied.content)?;
    Ok(applied)
}

/// Apply hashline edits to the file at `path` and write it back atomically;
/// returns the new content.
///
/// Guarantees: the checks of [`crate::edit::hashline::apply`]; otherwise as
/// [`edit_file`].
pub fn hashline_edit_file(path: &Path, edits: &[HashlineEdit]) -> Result<String, EditError> {
    let content = read_text(path)?;
    let updated = crate::edit::hashline::apply(&content, edits)?;
    write(path, &updated)?;
    Ok(updated)
}
