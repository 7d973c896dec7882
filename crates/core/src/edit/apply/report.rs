//! The wording of refusals: what failed, where the closest text is, and
//! what to send instead.

use super::types::Edit;
use crate::edit::error::EditError;
use crate::edit::guards::GuardViolation;
use crate::edit::locate::{Located, Nearest};
use crate::edit::normalize::fold_norm;

pub(super) fn label(multi: bool, idx: usize) -> String {
    if multi {
        // The JSON path of the edit in the batch, as every face's decoder
        // reports it (0-based).
        format!("`edits[{idx}]`: ")
    } else {
        String::new()
    }
}

/// `line 3` or `lines 3–5`.
pub(super) fn line_span(first: usize, last: usize) -> String {
    if first == last {
        format!("line {first}")
    } else {
        format!("lines {first}–{last}")
    }
}

/// `3, 7–9, 12 (2 matches)`: candidate ranges, a range found several times
/// (several matches on one line) said once with its count, at most 10 shown.
fn fmt_ranges(lines: &[(usize, usize)]) -> String {
    let mut groups: Vec<((usize, usize), usize)> = Vec::new();
    for &range in lines {
        match groups.last_mut() {
            Some((last, n)) if *last == range => *n += 1,
            _ => groups.push((range, 1)),
        }
    }
    let shown: Vec<String> = groups
        .iter()
        .take(10)
        .map(|&((a, b), n)| {
            let range = if a == b {
                format!("{a}")
            } else {
                format!("{a}–{b}")
            };
            if n > 1 {
                format!("{range} ({n} matches)")
            } else {
                range
            }
        })
        .collect();
    let more = if groups.len() > 10 {
        format!(" and {} more", groups.len() - 10)
    } else {
        String::new()
    };
    format!("{}{more}", shown.join(", "))
}

pub(super) fn ambiguous(content: &str, l: &Located, lab: &str) -> EditError {
    let lines = l.candidate_lines(content);
    let message = if l.uncertain {
        format!(
            "{lab}`old` is ambiguous: it is not in the file verbatim, and {} places are about equally similar to it (lines {}; best similarity {:.2}). Nothing was changed. Re-read the file and copy `old` verbatim from the place you mean, with enough surrounding lines to make it unique.",
            lines.len(),
            fmt_ranges(&lines),
            l.score
        )
    } else {
        format!(
            "{lab}`old` is ambiguous: it matches {} places in the file ({} match) at lines {}. Nothing was changed. Include more surrounding lines in `old` so that it matches exactly one place, or set replace_all to change every occurrence.",
            lines.len(),
            l.tier.as_str(),
            fmt_ranges(&lines)
        )
    };
    EditError::Ambiguous {
        message,
        count: lines.len(),
        lines,
    }
}

pub(super) fn not_found(
    edit: &Edit,
    idx: usize,
    all: &[Edit],
    multi: bool,
    nearest: Option<Nearest>,
) -> EditError {
    let lab = label(multi, idx);
    let needle_norm = fold_norm(&edit.old);
    let producer = all.iter().enumerate().find(|(j, other)| {
        *j != idx
            && (other.new.contains(edit.old.as_str())
                || !needle_norm.is_empty() && fold_norm(&other.new).contains(&needle_norm))
    });
    let message = if let Some((j, _)) = producer {
        format!(
            "{lab}`old` was not found in the file: it exists only in the `new` text of `edits[{j}]`. All edits of a batch are matched against the file as it was before any of them. Nothing was changed. Fold this change into `edits[{j}]`, or send it in a later call."
        )
    } else {
        let mut m = format!(
            "{lab}`old` was not found in the file, even tolerating whitespace and indentation, typographic punctuation, escaped line breaks and small typos (similarity ≥ 0.85). Nothing was changed."
        );
        if let Some(n) = nearest {
            m.push_str(&format!(
                " The closest text is at {} (similarity {:.2}, below the 0.85 needed).",
                line_span(n.first_line, n.last_line),
                n.score
            ));
        }
        m.push_str(" Re-read the file and send `old` copied verbatim from its current content (complete lines, exact indentation).");
        m
    };
    EditError::NotFound { message, nearest }
}

/// Two planned spans overlap: `a` and `b` are their edit indices, `lines`
/// the 1-based line range they cover together.
pub(super) fn overlap(multi: bool, a: usize, b: usize, (first, last): (usize, usize)) -> EditError {
    let lines = line_span(first, last);
    EditError::invalid(if a == b {
        format!(
            "{}two replaced spans overlap ({lines}). Nothing was changed. Send one edit whose `old` covers the whole region.",
            label(multi, a)
        )
    } else {
        format!(
            "`edits[{}]` and `edits[{}]` target overlapping text ({lines}). Nothing was changed. Merge them into one edit whose `old` covers both, or send them in separate calls.",
            a.min(b),
            a.max(b)
        )
    })
}

/// The result reads exactly like the original.
pub(super) fn no_op() -> EditError {
    EditError::NoOp {
        message: "the edit changes nothing: with `new` applied the file reads exactly as it does now. Re-read the file (it may already contain the change) and send a `new` that differs from the current text.".to_string(),
    }
}

/// The guards found `violations` (non-empty) in the result.
pub(super) fn guard_refused(violations: Vec<GuardViolation>) -> EditError {
    let list: Vec<String> = violations
        .iter()
        .map(|v| format!("- {}: {}", v.kind.as_str(), v.message))
        .collect();
    EditError::Guard {
        message: format!(
            "the edit was refused by a safety guard and the file was not changed:\n{}\nSend `new` as complete, final text (no placeholders, keep the imports still in use) and try again.",
            list.join("\n")
        ),
        violations,
    }
}
