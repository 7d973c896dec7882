//! The truncation guard: a result that lost most of the file.

use super::{GuardViolation, ViolationKind};

/// A truncation of `original` into `updated`, compared as whole files: both
/// non-empty, more than 60 % of the characters and more than 50 % of the
/// lines lost.
pub(super) fn whole_file(original: &str, updated: &str) -> Option<GuardViolation> {
    if original.is_empty() || updated.is_empty() {
        return None;
    }
    let (chars_before, chars_after) = (original.chars().count(), updated.chars().count());
    let (lines_before, lines_after) = (original.lines().count(), updated.lines().count());
    // Integer comparisons: lost/before > 60 % ⇔ 100·lost > 60·before.
    let chars_lost = chars_before.saturating_sub(chars_after);
    let lines_lost = lines_before.saturating_sub(lines_after);
    if chars_lost * 100 > chars_before * 60 && lines_lost * 100 > lines_before * 50 {
        Some(GuardViolation {
            kind: ViolationKind::Truncation,
            message: format!(
                "the edit shrinks the file from {lines_before} to {lines_after} lines and from \
                 {chars_before} to {chars_after} characters ({}% of the characters lost): this \
                 looks like an accidental truncation. Send a targeted edit of the part that \
                 changes instead of rewriting the file, or the complete content.",
                chars_lost * 100 / chars_before
            ),
        })
    } else {
        None
    }
}
