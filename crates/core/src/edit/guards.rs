//! Guards against catastrophic edits.
//!
//! [`check`] compares an original text with an edited one and reports what
//! looks like damage rather than intent: a truncation, imports that
//! disappeared, placeholder comments (`// ... existing code ...`) that leaked
//! in, and new merge-conflict markers. Every check is relative to the
//! original, so text that was already there never trips a guard.
//!
//! `check_splices` is the same check for an edit whose replaced regions
//! are known (what `apply` runs): it looks only at the lines the edit
//! touched, and falls back to the whole-file analysis of a guard only when
//! those lines could trip it, so an edit that touches no import, placeholder
//! or conflict-marker line costs the size of the edit, not of the file.

mod imports;
mod markers;
mod splice;
#[cfg(test)]
mod tests;
mod truncation;

pub use imports::Lang;
pub(crate) use splice::Splice;

/// What a guard caught.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ViolationKind {
    /// Chars lost > 60 % and lines lost > 50 %.
    Truncation,
    /// An import of the original is gone while the file still needs it.
    DroppedImports,
    /// A placeholder such as `// ... existing code ...` appeared.
    MarkerLeak,
    /// A merge conflict marker appeared.
    ConflictMarker,
}

crate::names::macros::named_enum!(ViolationKind, "violation kind", {
    Truncation => "truncation",
    DroppedImports => "dropped_imports",
    MarkerLeak => "marker_leak",
    ConflictMarker => "conflict_marker",
});

/// One guard violation.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GuardViolation {
    /// Which guard.
    pub kind: ViolationKind,
    /// What it saw, written for a model to act on.
    pub message: String,
}

/// Runs every guard on an edit of `original` into `updated`.
///
/// `path` (when given) picks the import syntax by extension; without it the
/// syntax is detected from the original's content, and when neither tells,
/// imports are not checked. Guarantees, each relative to `original`:
/// - [`ViolationKind::Truncation`]: both texts non-empty, more than 60 % of
///   the characters and more than 50 % of the lines lost;
/// - [`ViolationKind::DroppedImports`]: imports of the original (compared
///   as parsed, normalized statements, per imported name or path) are absent
///   from `updated` while the file still needs them: a name such an import
///   bound is still referenced in `updated` (as a whole identifier, outside
///   import statements, comments and strings included) and no remaining
///   import binds it, or the import binds no name that can be checked
///   (side-effect imports, globs, Go `_`/`.` imports, re-exports, Rust
///   `mod`) — and more such needed imports are gone than new imports
///   arrived. Removing an import whose names nothing references any more is
///   not a drop, nor is moving, re-ordering, reformatting or rewriting an
///   import one for one (a renamed module or name, named imports collapsed
///   into a glob of the same module). The message names each dropped import
///   and the name still used;
/// - [`ViolationKind::MarkerLeak`]: a placeholder such as
///   `// ... existing code ...` occurs more often than in the original;
/// - [`ViolationKind::ConflictMarker`]: more lines starting with `<<<<<<< `,
///   `|||||||`, `>>>>>>> ` or equal to `=======` than in the original; in a
///   Markdown, reStructuredText or `.txt` file (by `path`) a `=======` line
///   counts only next to a `<<<<<<<` or `>>>>>>>` line (else it underlines
///   a heading).
///
/// At most one violation per kind, in the order above. Pure; never panics.
pub fn check(original: &str, updated: &str, path: Option<&str>) -> Vec<GuardViolation> {
    let mut found = Vec::new();
    if let Some(v) = truncation::whole_file(original, updated) {
        found.push(v);
    }
    if let Some(v) = imports::dropped(original, updated, path) {
        found.push(v);
    }
    if let Some(v) = markers::leaked_placeholders(original, updated) {
        found.push(v);
    }
    let prose = path.is_some_and(markers::is_prose_document);
    if let Some(v) = markers::new_conflict_markers(original, updated, prose) {
        found.push(v);
    }
    found
}

/// [`check`] for an edit whose replaced regions are `splices` (see
/// [`Splice`]): the same violations, messages included, for every guard
/// but one, at the cost of the lines the splices touch (plus a bounded look
/// back for import statements) unless those lines could trip a guard.
///
/// The exception is [`ViolationKind::Truncation`]: knowing the edit, it
/// tells a truncated rewrite from a deliberate deletion. It is reported
/// only when [`check`] reports it *and* the edit writes some text *and* its
/// replaced text spans at least 80 % of the original's lines — a rewrite of
/// (nearly) the whole file that lost the rest. Deleting a located block, or
/// replacing it with a small remainder, is what the model asked for, however
/// small the file.
///
/// Splices that do not describe an edit of `original` into `updated` (out
/// of order, overlapping, out of bounds, off a character boundary) are not
/// trusted: the result is then [`check`]'s. Pure; never panics.
pub(crate) fn check_splices(
    original: &str,
    updated: &str,
    path: Option<&str>,
    splices: &[Splice],
) -> Vec<GuardViolation> {
    let Some(windows) = splice::windows(original, updated, splices) else {
        return check(original, updated, path);
    };
    let mut found = Vec::new();
    if let Some(v) = truncation::edit(original, updated, splices) {
        found.push(v);
    }
    // Each incremental test is `false` only when the full guard finds
    // nothing; when it is `true`, the full guard decides (and writes the
    // same message as `check`).
    if imports::may_drop(original, updated, path, &windows) {
        if let Some(v) = imports::dropped(original, updated, path) {
            found.push(v);
        }
    }
    if markers::placeholders_grew(original, updated, &windows) {
        if let Some(v) = markers::leaked_placeholders(original, updated) {
            found.push(v);
        }
    }
    if markers::conflict_markers_grew(original, updated, &windows) {
        let prose = path.is_some_and(markers::is_prose_document);
        if let Some(v) = markers::new_conflict_markers(original, updated, prose) {
            found.push(v);
        }
    }
    found
}
