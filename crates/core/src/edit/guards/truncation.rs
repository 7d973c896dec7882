//! The truncation guard: a result that lost most of the file.
//!
//! A truncation is a rewrite that lost the rest of the file: a whole-file
//! write that stops halfway, or an edit whose `new` is a partial rewrite of
//! an `old` that is (nearly) the whole file. It is not a deliberate
//! deletion the model spelled out: an edit that replaces a located block
//! with nothing, or with a small remainder, keeps every line outside that
//! block by construction, however small the file.

use super::splice::Splice;
use super::{GuardViolation, ViolationKind};

/// An edit rewrites the file, rather than a block of it, when its replaced
/// text spans at least this share (in %) of the original's lines.
const REWRITE_PERCENT: usize = 80;

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

/// A truncation by an edit given as `splices` of `original` into
/// `updated`: the whole-file test of [`whole_file`] holds, the edit writes
/// some text (replacing text with nothing is a deletion the model spelled
/// out), and its replaced text spans at least [`REWRITE_PERCENT`] % of the
/// original's lines (a rewrite of the file, not of a located block). Costs
/// O(1) when the edit replaces at most 15 % of the file's bytes.
pub(super) fn edit(original: &str, updated: &str, splices: &[Splice]) -> Option<GuardViolation> {
    if splices.iter().all(|s| s.new.is_empty()) {
        return None;
    }
    // Chars lost ≤ bytes replaced, and the file has at least a quarter as
    // many chars as bytes: replacing ≤ 15 % of the bytes can never lose
    // more than 60 % of the chars, so skip the counting passes.
    let replaced: usize = splices.iter().map(|s| s.old.len()).sum();
    if replaced.saturating_mul(100) <= original.len().saturating_mul(15) {
        return None;
    }
    let found = whole_file(original, updated)?;
    let lines = original.lines().count();
    let replaced_lines: usize = splices
        .iter()
        .filter_map(|s| original.get(s.old.clone()))
        .map(|old| old.lines().count())
        .sum();
    (replaced_lines.saturating_mul(100) >= lines.saturating_mul(REWRITE_PERCENT)).then_some(found)
}
