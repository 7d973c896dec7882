//! The regions an edit replaced.

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
        // list that is not in order yields splices that `describes_edit`
        // rejects, never a panic.
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

/// Whether `splices` are in order, inside both texts, on character
/// boundaries, and leave gaps of equal length in both texts.
pub(super) fn describes_edit(original: &str, updated: &str, splices: &[Splice]) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn splice(old: Range<usize>, new: Range<usize>) -> Splice {
        Splice { old, new }
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
            assert!(!describes_edit("abc", "abc", &splices), "{splices:?}");
        }
        // Not on a character boundary.
        assert!(!describes_edit("é", "é", &[splice(1..1, 1..1)]));
        assert!(describes_edit("abc", "aXc", &[splice(1..2, 1..2)]));
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
}
