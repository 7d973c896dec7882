//! Where an edit changed the text: its splices, and the whole lines around
//! them that the guards need to look at.
//!
//! An edit replaces a few byte ranges of the original and leaves everything
//! else byte-for-byte as it was. A line-based guard therefore only has to
//! look at the lines a splice touches — including the two junction lines,
//! where text before or after the splice joins the inserted text and may
//! form something that neither had (`<<<<<<<` split across a boundary, a
//! comment opener before the splice and a placeholder phrase in it). Those
//! lines are the splice's [`Window`]: every other line of `updated` is a
//! line of `original`, in the same order.

use memchr::{memchr, memrchr, memrchr_iter};
use std::ops::Range;

/// One replaced region of an edit.
///
/// `old` is the byte range of the original that was replaced and `new` the
/// byte range of the updated text that replaced it. A list of splices
/// describes an edit when the splices are in order, do not overlap, and the
/// text between (and around) them is the same in both texts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Splice {
    /// The replaced bytes of the original.
    pub(crate) old: Range<usize>,
    /// The bytes of the updated text that replaced them.
    pub(crate) new: Range<usize>,
}

impl Splice {
    /// The splices of replacements written in one left-to-right pass: each
    /// item is a replaced span of the original (in order, not overlapping)
    /// and the length of the text written in its place.
    pub(crate) fn from_replacements<I>(replacements: I) -> Vec<Splice>
    where
        I: IntoIterator<Item = (Range<usize>, usize)>,
    {
        // The updated text is the original with each span swapped for its
        // text, so a splice starts in the updated text as far after the
        // previous one as it does in the original. Saturating arithmetic: a
        // list that is not in order yields splices `windows` rejects, never
        // a panic.
        let (mut old_end, mut new_end) = (0usize, 0usize);
        let mut out = Vec::new();
        for (span, len) in replacements {
            let start = new_end.saturating_add(span.start.saturating_sub(old_end));
            let end = start.saturating_add(len);
            old_end = span.end;
            new_end = end;
            out.push(Splice {
                old: span,
                new: start..end,
            });
        }
        out
    }
}

/// Whole lines around one or more splices: `old` in the original and `new`
/// in the updated text. Both ranges start at a line start and end after a
/// line break or at the end of their text, and the text before `old` (after
/// it) and before `new` (after it) differ only in other windows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Window {
    /// The lines of the original that the splices touched.
    pub(super) old: Range<usize>,
    /// The lines of the updated text that replaced them.
    pub(super) new: Range<usize>,
}

/// The windows of `splices`, in order; splices whose lines touch one
/// another share a window. `None` when the splices do not describe an edit
/// of `original` into `updated` (out of order, overlapping, out of bounds,
/// not on character boundaries, or lengths that do not add up): the caller
/// then checks the whole texts. The text between splices is trusted to be
/// equal in both texts (checking it would cost a pass over the file).
pub(super) fn windows(original: &str, updated: &str, splices: &[Splice]) -> Option<Vec<Window>> {
    if !describes_edit(original, updated, splices) {
        return None;
    }
    let o = original.as_bytes();
    let mut out = Vec::with_capacity(splices.len());
    let mut open: Option<Window> = None;
    for (k, s) in splices.iter().enumerate() {
        let mut w = match open.take() {
            // No line break between the previous splice and this one: they
            // share a line, so they share a window.
            Some(w) => w,
            None => {
                let gap_start = if k == 0 { 0 } else { splices[k - 1].old.end };
                let line_start = memrchr(b'\n', &o[gap_start..s.old.start])
                    .map_or(gap_start, |i| gap_start + i + 1);
                let back = s.old.start - line_start;
                Window {
                    old: line_start..s.old.end,
                    new: s.new.start - back..s.new.end,
                }
            }
        };
        let gap_end = splices.get(k + 1).map_or(o.len(), |n| n.old.start);
        match memchr(b'\n', &o[s.old.end..gap_end]) {
            Some(i) => {
                w.old.end = s.old.end + i + 1;
                w.new.end = s.new.end + i + 1;
                out.push(w);
            }
            None if k + 1 == splices.len() => {
                w.old.end = o.len();
                w.new.end = updated.len();
                out.push(w);
            }
            None => {
                w.old.end = s.old.end;
                w.new.end = s.new.end;
                open = Some(w);
            }
        }
    }
    Some(out)
}

/// Whether `splices` are in order, inside both texts, on character
/// boundaries, and leave gaps of equal length in both texts.
fn describes_edit(original: &str, updated: &str, splices: &[Splice]) -> bool {
    let (mut old_end, mut new_end) = (0, 0);
    for s in splices {
        let in_order = old_end <= s.old.start
            && s.old.start <= s.old.end
            && s.old.end <= original.len()
            && new_end <= s.new.start
            && s.new.start <= s.new.end
            && s.new.end <= updated.len();
        if !in_order || s.old.start - old_end != s.new.start - new_end {
            return false;
        }
        let boundaries = original.is_char_boundary(s.old.start)
            && original.is_char_boundary(s.old.end)
            && updated.is_char_boundary(s.new.start)
            && updated.is_char_boundary(s.new.end);
        if !boundaries {
            return false;
        }
        old_end = s.old.end;
        new_end = s.new.end;
    }
    original.len() - old_end == updated.len() - new_end
}

/// The start of the line `count` lines before byte `at` (a line start) of
/// `text`, or 0 when there are fewer: one SIMD pass over those lines.
pub(super) fn lookback_start(text: &str, at: usize, count: usize) -> usize {
    let at = at.min(text.len());
    if at == 0 || count == 0 {
        return at;
    }
    // The break at `at - 1` ends the line just before `at`; the `count`-th
    // break before it ends the line before the first one wanted.
    memrchr_iter(b'\n', &text.as_bytes()[..at - 1])
        .nth(count - 1)
        .map_or(0, |i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn splice(old: Range<usize>, new: Range<usize>) -> Splice {
        Splice { old, new }
    }

    #[test]
    fn windows_cover_whole_lines_and_merge_splices_on_one_line() {
        // (original, updated, splices, expected windows as (old text, new text))
        type Case = (
            &'static str,
            &'static str,
            Vec<Splice>,
            Vec<(&'static str, &'static str)>,
        );
        let cases: Vec<Case> = vec![
            (
                "a\nb\nc\n",
                "a\nX\nc\n",
                vec![splice(2..3, 2..3)],
                vec![("b\n", "X\n")],
            ),
            // Deleting a whole line: the junction is the next line.
            (
                "a\nb\nc\n",
                "a\nc\n",
                vec![splice(2..4, 2..2)],
                vec![("b\nc\n", "c\n")],
            ),
            // Joining two lines.
            (
                "ab\ncd\nef\n",
                "abXd\nef\n",
                vec![splice(2..4, 2..3)],
                vec![("ab\ncd\n", "abXd\n")],
            ),
            // At the end of a text without a final newline.
            ("a\nb", "a\nbc", vec![splice(3..3, 3..4)], vec![("b", "bc")]),
            // Two splices on one line share a window; one further down has its own.
            (
                "one two three\nx\ny\n",
                "1 two 3\nx\nY\n",
                vec![
                    splice(0..3, 0..1),
                    splice(8..13, 6..7),
                    splice(16..17, 10..11),
                ],
                vec![("one two three\n", "1 two 3\n"), ("y\n", "Y\n")],
            ),
            ("", "new\n", vec![splice(0..0, 0..4)], vec![("", "new\n")]),
        ];
        for (original, updated, splices, want) in cases {
            let got: Vec<(&str, &str)> = windows(original, updated, &splices)
                .unwrap()
                .into_iter()
                .map(|w| (&original[w.old], &updated[w.new]))
                .collect();
            assert_eq!(got, want, "{original:?} → {updated:?}");
        }
    }

    #[test]
    fn splices_that_do_not_describe_an_edit_are_rejected() {
        #[allow(clippy::reversed_empty_ranges)]
        let backwards = splice(2..1, 2..2);
        let cases = [
            vec![backwards],
            vec![splice(0..9, 0..1)],
            vec![splice(0..1, 0..1), splice(0..1, 1..2)],
            vec![splice(0..1, 0..2)],
            vec![splice(1..2, 0..1)],
        ];
        for splices in cases {
            assert_eq!(windows("abc", "abc", &splices), None, "{splices:?}");
        }
        // Not on a character boundary.
        assert_eq!(windows("é", "é", &[splice(1..1, 1..1)]), None);
    }

    #[test]
    fn replacements_become_splices() {
        let s = Splice::from_replacements([(2..4, 1), (6..6, 3), (8..10, 0)]);
        assert_eq!(
            s,
            vec![
                splice(2..4, 2..3),
                splice(6..6, 5..8),
                splice(8..10, 10..10)
            ]
        );
    }

    #[test]
    fn lookback_starts_count_lines_back() {
        let text = "a\nb\r\nc\nd\n";
        // (at, count, start)
        let cases = [
            (7, 2, 2),
            (7, 1, 5),
            (7, 9, 0),
            (0, 3, 0),
            (7, 0, 7),
            (9, 1, 7),
        ];
        for (at, count, want) in cases {
            assert_eq!(lookback_start(text, at, count), want, "{at} {count}");
        }
    }
}
