//! Planning: locate each edit and compute the text of every span it
//! replaces, in the file's line breaks; reject overlapping spans.

use super::report::{ambiguous, label, not_found, overlap};
use super::transfer::transfer;
use super::types::Edit;
use crate::edit::error::EditError;
use crate::edit::locate::{locate_all, Outcome, Tier};
use crate::edit::normalize::{escaped_alike, line_range, to_lf, unescape};
use similar::{capture_diff_slices, Algorithm, DiffTag};
use std::ops::Range;

/// One span to replace.
pub(super) struct Planned {
    /// Byte span of the original content.
    pub span: Range<usize>,
    /// Replacement text, already in the file's conventions.
    pub text: String,
    /// Index of the edit it comes from.
    pub edit: usize,
}

/// Locate one edit and compute the text of each span it replaces.
pub(super) fn plan_edit(
    content: &str,
    edit: &Edit,
    idx: usize,
    all: &[Edit],
    multi: bool,
) -> Result<(Vec<Planned>, Tier), EditError> {
    let lab = label(multi, idx);
    if edit.old.is_empty() {
        return Err(EditError::invalid(format!(
            "{lab}`old` is empty. Send the exact text to replace (copy a few complete lines from the file); to create a file, write it instead of editing."
        )));
    }
    let located = match locate_all(content, &edit.old) {
        Outcome::Found(l) => l,
        Outcome::NotFound(nearest) => {
            return Err(not_found(edit, idx, all, multi, nearest));
        }
    };
    if located.uncertain || (located.spans.len() > 1 && !edit.replace_all) {
        return Err(ambiguous(content, &located, &lab));
    }
    let spans = if edit.replace_all {
        non_overlapping(&located.spans)
    } else {
        located.spans.clone()
    };
    let new_text = if located.unescaped && escaped_alike(&edit.new, &edit.old) {
        unescape(&edit.new).unwrap_or_else(|| edit.new.clone())
    } else {
        edit.new.clone()
    };
    let new_lf = to_lf(&new_text).into_owned();
    let file_crlf = is_crlf_file(content);
    let mut planned = Vec::with_capacity(spans.len());
    for span in spans {
        let region = &content[span.clone()];
        let region_lf = to_lf(region);
        let exactish =
            located.tier == Tier::Exact || (located.unescaped && region_lf == located.needle);
        let mut repl = if exactish {
            new_lf.clone()
        } else {
            transfer(&located.needle, &region_lf, &new_lf, located.tier)
        };
        let mut span = span;
        let at_line_start = span.start == 0
            || content[..span.start].ends_with('\n')
            || (span.start == 3 && content.starts_with('\u{FEFF}'));
        if repl.is_empty() && !exactish && at_line_start {
            // A line-wise match deletes whole lines: take the line break too
            // (not after a substring match that only ends a line).
            let rest = &content[span.end..];
            if rest.starts_with("\r\n") {
                span.end += 2;
            } else if rest.starts_with('\n') {
                span.end += 1;
            }
        }
        let crlf = if region.contains('\n') {
            region.contains("\r\n")
        } else {
            file_crlf
        };
        if crlf && has_bare_lf(region) {
            repl = with_region_breaks(&repl, region);
        } else if crlf {
            repl = repl.replace('\n', "\r\n");
        }
        planned.push(Planned {
            span,
            text: repl,
            edit: idx,
        });
    }
    Ok((planned, located.tier))
}

/// Whether `text` has a line break without a `\r` before it.
fn has_bare_lf(text: &str) -> bool {
    let bytes = text.as_bytes();
    memchr::memchr_iter(b'\n', bytes).any(|i| i == 0 || bytes[i - 1] != b'\r')
}

/// `text` (LF line breaks) with each break written like those of `region`,
/// a span of the file whose lines end in both CRLF and LF: a line that is a
/// line of `region` keeps its break, other lines take the break of the
/// region line they replace or follow. So the bytes of lines the edit did
/// not change stay as they were (and an edit that changes nothing stays a
/// no-op).
fn with_region_breaks(text: &str, region: &str) -> String {
    let pieces: Vec<&str> = region.split('\n').collect();
    let last_region = pieces.len() - 1;
    let r_text: Vec<&str> = pieces
        .iter()
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    // Whether region line i ends in CRLF (the last line ends the span, not a line).
    let r_crlf = |i: usize| i < last_region && pieces[i].ends_with('\r');
    let t: Vec<&str> = text.split('\n').collect();
    let mut crlf_after = vec![false; t.len()];
    let mut last = r_crlf(0);
    for op in capture_diff_slices(Algorithm::Myers, &r_text, &t) {
        let (tag, o, b) = op.as_tag_tuple();
        for k in 0..o.len().max(b.len()) {
            let i = o.start + k;
            if i < o.end && i < last_region {
                last = r_crlf(i);
            }
            if k < b.len() && tag != DiffTag::Delete {
                crlf_after[b.start + k] = last;
            }
        }
    }
    let mut out = String::with_capacity(text.len() + t.len());
    for (j, line) in t.iter().enumerate() {
        if j > 0 {
            out.push_str(if crlf_after[j - 1] { "\r\n" } else { "\n" });
        }
        out.push_str(line);
    }
    out
}

fn is_crlf_file(content: &str) -> bool {
    let lf = memchr::memchr_iter(b'\n', content.as_bytes()).count();
    let crlf = memchr::memmem::find_iter(content.as_bytes(), b"\r\n").count();
    crlf * 2 > lf
}

fn non_overlapping(spans: &[Range<usize>]) -> Vec<Range<usize>> {
    let mut out: Vec<Range<usize>> = Vec::new();
    for s in spans {
        if out.last().is_none_or(|l| l.end <= s.start) {
            out.push(s.clone());
        }
    }
    out
}

/// Refuses planned spans (sorted by start) that overlap: two edits of a
/// batch, or two occurrences of one `replace_all` edit, may not claim the
/// same bytes.
pub(super) fn check_overlaps(
    content: &str,
    planned: &[Planned],
    multi: bool,
) -> Result<(), EditError> {
    for w in planned.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        if b.span.start < a.span.end {
            // a starts first; together they cover a.start .. max(ends).
            let lines = line_range(content, a.span.start, a.span.end.max(b.span.end));
            return Err(overlap(multi, a.edit, b.edit, lines));
        }
    }
    Ok(())
}
