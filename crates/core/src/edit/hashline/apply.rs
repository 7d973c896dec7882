//! Hashline edits (`replace`, `append`, `prepend`) and their application.

use super::hash::{hash_letters, hash_line_byte, ALPHABET};
use super::refs::LineRef;
use super::validate::{parse_ref_in, validate_snapshot, Snapshot};
use crate::edit::error::EditError;

/// The byte-order mark a file may start with.
const BOM: char = '\u{FEFF}';

/// The lines of an edit: a JSON array of strings or a single string.
///
/// A single string is split on `\n` after dropping one trailing newline, so
/// `"a\nb\n"` is two lines and `""` is no line at all. Array elements are
/// split on `\n` too (an element holding a newline is several lines). A
/// trailing `\r` is dropped from every line: the file's own line ending is
/// used when writing.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum Lines {
    /// One string per line.
    Many(Vec<String>),
    /// All lines in one string.
    One(String),
}

impl Lines {
    /// The individual lines, as described on [`Lines`].
    pub fn to_lines(&self) -> Vec<&str> {
        let pieces: Vec<&str> = match self {
            Lines::Many(v) => v.iter().flat_map(|s| s.split('\n')).collect(),
            Lines::One(s) if s.is_empty() => Vec::new(),
            Lines::One(s) => s.strip_suffix('\n').unwrap_or(s).split('\n').collect(),
        };
        pieces
            .into_iter()
            .map(|l| l.strip_suffix('\r').unwrap_or(l))
            .collect()
    }
}

impl From<Vec<String>> for Lines {
    fn from(v: Vec<String>) -> Self {
        Lines::Many(v)
    }
}

impl From<&str> for Lines {
    fn from(s: &str) -> Self {
        Lines::One(s.to_string())
    }
}

/// One hashline edit; `pos` and `end` are `LINE#HH` refs (read with
/// [`parse_ref`](super::parse_ref), so the lenient forms work).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum HashlineEdit {
    /// Replace lines `pos..=end` (just `pos` without `end`) by `lines`;
    /// empty `lines` deletes them.
    Replace {
        /// First line replaced.
        pos: String,
        /// Last line replaced (inclusive); defaults to `pos`.
        #[serde(default)]
        end: Option<String>,
        /// Replacement lines.
        lines: Lines,
    },
    /// Insert `lines` after `pos`, or after the last line without `pos`.
    Append {
        /// Anchor line.
        #[serde(default)]
        pos: Option<String>,
        /// Inserted lines.
        lines: Lines,
    },
    /// Insert `lines` before `pos`, or before the first line without `pos`.
    Prepend {
        /// Anchor line.
        #[serde(default)]
        pos: Option<String>,
        /// Inserted lines.
        lines: Lines,
    },
}

/// Whether `line` starts with an echoed `N#HH|` prefix (exact form: digits,
/// `#`, two uppercase alphabet letters, `|`), optionally behind the `>>> ` or
/// four-space gutter of a mismatch message; returns (line number, hash, rest).
fn echoed_prefix(line: &str) -> Option<(usize, &str, &str)> {
    let line = line
        .strip_prefix(">>> ")
        .or_else(|| line.strip_prefix("    "))
        .unwrap_or(line);
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let bytes = line.as_bytes();
    if bytes.len() < digits + 4 || bytes[digits] != b'#' || bytes[digits + 3] != b'|' {
        return None;
    }
    let hash = &bytes[digits + 1..digits + 3];
    if !hash.iter().all(|b| ALPHABET.contains(b)) {
        return None;
    }
    let n = line[..digits].parse().ok()?;
    Some((n, &line[digits + 1..digits + 3], &line[digits + 4..]))
}

/// Removes `N#HH|` prefixes a model echoed from [`format()`] output.
///
/// A prefix is stripped when every non-empty line of the edit carries one
/// (the model pasted formatted lines), or, line by line, when the prefix's
/// hash is the hash of the rest at that line number (an unedited pasted line).
/// Real content that merely looks like a prefix is therefore kept unless it
/// also hashes to itself (1 in 256) in an edit where other lines lack it.
fn strip_echoed_prefixes<'l>(lines: &[&'l str]) -> Vec<&'l str> {
    let all_prefixed = lines.iter().any(|l| !l.is_empty())
        && lines
            .iter()
            .all(|l| l.is_empty() || echoed_prefix(l).is_some());
    let mut scratch = String::new();
    lines
        .iter()
        .map(|&l| match echoed_prefix(l) {
            Some((_, _, rest)) if all_prefixed => rest,
            Some((n, hash, rest))
                if hash_letters(hash_line_byte(n, rest, &mut scratch)) == hash.as_bytes() =>
            {
                rest
            }
            _ => l,
        })
        .collect()
}

/// An edit reduced to snapshot positions over the real lines (0-based).
enum Op<'e> {
    /// Replace real lines `start..end` (non-empty range).
    Replace {
        start: usize,
        end: usize,
        lines: Vec<&'e str>,
        index: usize,
    },
    /// Insert before real line `at` (`at == real` ⇒ at the end).
    Insert { at: usize, lines: Vec<&'e str> },
}

fn parse_edit_ref(
    snap: &Snapshot<'_>,
    s: &str,
    edit: usize,
    field: &str,
) -> Result<LineRef, EditError> {
    parse_ref_in(snap, s)
        .map_err(|e| EditError::invalid(format!("`edits[{edit}].{field}`: {}", e.message())))
}

/// Applies hashline edits to `content` and returns the new content.
///
/// Guarantees:
/// - every ref is checked first, all together ([`validate`]): nothing is
///   applied unless all are fresh, and one [`EditError::HashlineMismatch`]
///   lists every stale line;
/// - all positions refer to the original snapshot (as if applied bottom-up),
///   so earlier edits never shift later ones;
/// - `end` before `pos`, or two edits touching the same line (overlapping
///   replace ranges, or an insert strictly inside a replaced range) ⇒
///   [`EditError::InvalidInput`];
/// - inserts at the same place keep their given order; an insert after a
///   line comes after that line's replacement, an insert before a line comes
///   before it;
/// - append without `pos` inserts after the last line, prepend without `pos`
///   before the first; the virtual empty line [`format()`] shows after a final
///   newline anchors at the end of the file;
/// - a byte-order mark stays at the start of the file, whatever happens to
///   line 1;
/// - untouched lines keep their bytes and line endings; replacement lines
///   end like the last line they replace, inserted lines get the file's line
///   ending (the one most of its lines use; CRLF on a tie); the final newline
///   is kept as it was (present ⇒ exactly one);
/// - sent lines are split as described on [`Lines`], and echoed `N#HH|`
///   prefixes are stripped from them (rule below);
/// - a malformed `pos` or `end` ⇒ [`EditError::InvalidInput`] naming the
///   edit and field; when only its line number is unusable (`0#VK`,
///   `line#VK`) and its hash names lines of `content`, with the "did you
///   mean `N#HH`" hint of [`validate_strs`](super::validate_strs);
/// - a result equal to `content` ⇒ [`EditError::NoOp`].
///
/// Prefix rule: a prefix is exactly `N#HH|` (uppercase alphabet letters),
/// optionally behind the `>>> ` or four-space gutter of a mismatch message.
/// It is stripped when every non-empty sent line of that edit has one, or
/// when its hash equals the hash of the rest of the line at that line number
/// (a pasted, unedited line). So real content that merely looks like a
/// prefix is kept unless all the edit's lines look like that.
///
/// [`validate`]: super::validate
/// [`format()`]: super::format
pub fn apply(content: &str, edits: &[HashlineEdit]) -> Result<String, EditError> {
    let snap = Snapshot::new(content);
    let real = snap.real();

    // Parse every ref, then validate them all at once.
    let mut parsed: Vec<(Option<LineRef>, Option<LineRef>)> = Vec::with_capacity(edits.len());
    for (i, edit) in edits.iter().enumerate() {
        // 0-based, as the JSON path of the edit (`edits[0].pos`) that every
        // face's decoder reports.
        let n = i;
        parsed.push(match edit {
            HashlineEdit::Replace { pos, end, .. } => (
                Some(parse_edit_ref(&snap, pos, n, "pos")?),
                end.as_deref()
                    .map(|e| parse_edit_ref(&snap, e, n, "end"))
                    .transpose()?,
            ),
            HashlineEdit::Append { pos, .. } | HashlineEdit::Prepend { pos, .. } => (
                pos.as_deref()
                    .map(|p| parse_edit_ref(&snap, p, n, "pos"))
                    .transpose()?,
                None,
            ),
        });
    }
    let all_refs: Vec<&LineRef> = parsed
        .iter()
        .flat_map(|(a, b)| a.iter().chain(b.iter()))
        .collect();
    validate_snapshot(&snap, &all_refs)?;

    // Line `n` (1-based, validated ≤ numbered) as a position among real lines.
    let clamp = |n: usize| n.min(real);
    let mut ops: Vec<Op<'_>> = Vec::with_capacity(edits.len());
    for (i, (edit, (pos, end))) in edits.iter().zip(&parsed).enumerate() {
        match edit {
            HashlineEdit::Replace { lines, .. } => {
                let pos = pos.as_ref().map_or(1, |r| r.line);
                let last = end.as_ref().map_or(pos, |r| r.line);
                if last < pos {
                    return Err(EditError::invalid(format!(
                        "`edits[{i}].end`: end (line {last}) is before pos (line {pos}); \
                         a range goes from pos down to end"
                    )));
                }
                let lines = strip_echoed_prefixes(&lines.to_lines());
                let (start, stop) = (clamp(pos - 1), clamp(last));
                if start == stop {
                    ops.push(Op::Insert { at: start, lines });
                } else {
                    ops.push(Op::Replace {
                        start,
                        end: stop,
                        lines,
                        index: i + 1,
                    });
                }
            }
            HashlineEdit::Append { lines, .. } => {
                let at = pos.as_ref().map_or(real, |r| clamp(r.line));
                let lines = strip_echoed_prefixes(&lines.to_lines());
                ops.push(Op::Insert { at, lines });
            }
            HashlineEdit::Prepend { lines, .. } => {
                let at = pos.as_ref().map_or(0, |r| clamp(r.line - 1));
                let lines = strip_echoed_prefixes(&lines.to_lines());
                ops.push(Op::Insert { at, lines });
            }
        }
    }

    // Reject overlaps: ranges sharing a line, or inserts strictly inside a range.
    let mut ranges: Vec<(usize, usize, usize)> = ops
        .iter()
        .filter_map(|op| match op {
            Op::Replace {
                start, end, index, ..
            } => Some((*start, *end, *index)),
            Op::Insert { .. } => None,
        })
        .collect();
    ranges.sort_unstable();
    for pair in ranges.windows(2) {
        let ((s1, e1, i1), (s2, e2, i2)) = (pair[0], pair[1]);
        if s2 < e1 {
            return Err(EditError::invalid(format!(
                "edits {i1} (lines {}-{e1}) and {i2} (lines {}-{e2}) overlap; merge them into \
                 one replace or make their ranges disjoint",
                s1 + 1,
                s2 + 1,
            )));
        }
    }
    for op in &ops {
        if let Op::Insert { at, .. } = op {
            if let Some(&(s, e, idx)) = ranges.iter().find(|&&(s, e, _)| s < *at && *at < e) {
                return Err(EditError::invalid(format!(
                    "an insert between lines {at} and {} falls inside the range of edit {idx} \
                     (lines {}-{e}); put the inserted lines into that replace instead",
                    at + 1,
                    s + 1
                )));
            }
        }
    }

    // One forward pass over the snapshot.
    // The file's line ending: the one most of its lines use (CRLF on a tie).
    let terminated = snap.texts.len() - 1;
    let crlf_count = snap.crlf.iter().filter(|&&c| c).count();
    let eol = if terminated > 0 && crlf_count * 2 >= terminated {
        "\r\n"
    } else {
        "\n"
    };
    let mut inserts: Vec<Vec<&str>> = vec![Vec::new(); real + 1];
    let mut replace_at: Vec<Option<(usize, Vec<&str>)>> = vec![None; real + 1];
    for op in ops {
        match op {
            Op::Insert { at, lines } => inserts[at].extend(lines),
            Op::Replace {
                start, end, lines, ..
            } => replace_at[start] = Some((end, lines)),
        }
    }
    // (text, Some(original terminator) | None for new lines)
    let mut out_lines: Vec<(&str, Option<&str>)> = Vec::with_capacity(real + 8);
    let original_eol = |i: usize| -> Option<&str> {
        if i + 1 < snap.texts.len() {
            Some(if snap.crlf[i] { "\r\n" } else { "\n" })
        } else {
            None
        }
    };
    let mut i = 0;
    loop {
        out_lines.extend(inserts[i].iter().map(|&l| (l, None)));
        if i == real {
            break;
        }
        if let Some((end, lines)) = replace_at[i].take() {
            // Replacement lines end like the last line they replace, so a
            // mixed-ending file keeps each region's style.
            let term = original_eol(end - 1);
            out_lines.extend(lines.into_iter().map(|l| (l, term)));
            i = end;
        } else {
            let text = if i == 0 {
                snap.texts[0].strip_prefix(BOM).unwrap_or(snap.texts[0])
            } else {
                snap.texts[i]
            };
            out_lines.push((text, original_eol(i)));
            i += 1;
        }
    }

    let mut result = String::with_capacity(content.len() + 64);
    // The BOM belongs to the file, not to line 1: it stays first whatever
    // replaces or precedes that line (and a BOM echoed from `format()` output
    // in the first sent line is not doubled).
    let bom = content.starts_with(BOM);
    if bom {
        result.push(BOM);
    }
    let count = out_lines.len();
    for (k, (text, term)) in out_lines.into_iter().enumerate() {
        let text = if bom && k == 0 {
            text.strip_prefix(BOM).unwrap_or(text)
        } else {
            text
        };
        result.push_str(text);
        if k + 1 < count || snap.final_newline {
            result.push_str(term.unwrap_or(eol));
        }
    }
    if result == content {
        return Err(EditError::NoOp {
            message: "the hashline edits leave the file unchanged (the new lines equal the \
                      old ones); nothing was written. Re-read the file and send lines that \
                      differ, or stop if the change is already there."
                .to_string(),
        });
    }
    Ok(result)
}
