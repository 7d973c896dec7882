//! The lines around an edit that the import scanners look at to tell
//! whether an edit may have changed the imports (see [`super::may_drop`]).

use super::super::splice::Window;
use super::MAX_STATEMENT_LINES;

/// Whether a line of the windows (of `text`, in `original` or `updated`
/// as `side` picks) satisfies `pred`.
pub(super) fn any_window_line(
    text: &str,
    windows: &[Window],
    side: fn(&Window) -> std::ops::Range<usize>,
    pred: impl Fn(&str) -> bool,
) -> bool {
    windows.iter().any(|w| text[side(w)].lines().any(&pred))
}

/// The lines of `text[from..to]` (`from` a line start, `to` a line start
/// or the end) that contain one of `needles`, in order and each once: its
/// start byte, the byte of its line break (or `to`), and its text as
/// [`str::lines`] spells it. Found with SIMD substring search, so a look
/// back costs little more than the bytes it covers.
pub(super) fn lines_containing<'a>(
    text: &'a str,
    from: usize,
    to: usize,
    needles: &[&str],
) -> Vec<(usize, usize, &'a str)> {
    let region = &text.as_bytes()[from..to];
    let mut starts: Vec<usize> = needles
        .iter()
        .flat_map(|n| memchr::memmem::find_iter(region, n.as_bytes()))
        .map(|hit| memchr::memrchr(b'\n', &region[..hit]).map_or(0, |i| i + 1))
        .collect();
    starts.sort_unstable();
    starts.dedup();
    starts
        .into_iter()
        .map(|ls| {
            let le = memchr::memchr(b'\n', &region[ls..]).map_or(region.len(), |i| ls + i);
            let line = &text[from + ls..from + le];
            (
                from + ls,
                from + le,
                line.strip_suffix('\r').unwrap_or(line),
            )
        })
        .collect()
}

/// Whether a statement of `text` that starts before byte `at` (a line
/// start) would still go on at `at`, for a scanner whose statements go on
/// line after line until one of them `ends` it (Python: a `)` without a
/// trailing `\\`; Rust: a `;`), for at most `MAX_STATEMENT_LINES` lines.
///
/// Such a statement started after the last line before `at` that `ends`
/// one, or on that line, and at most `MAX_STATEMENT_LINES + 1` lines back:
/// only those lines are looked at, walking back from `at` — usually one or
/// two. Of them, each that `starts` a statement is read by `read` as the
/// scanner reads it, pulling continuation lines from the iterator only
/// while it goes on. A line the real scan had consumed into an earlier
/// statement is read as if a statement started there, which can only
/// answer `true` too often.
pub(super) fn continues_into(
    text: &str,
    at: usize,
    ends: impl Fn(&str) -> bool,
    starts: impl Fn(&str) -> bool,
    read: impl Fn(&str, &mut dyn Iterator<Item = &str>),
) -> bool {
    let bytes = text.as_bytes();
    let mut from = at.min(text.len());
    for _ in 0..=MAX_STATEMENT_LINES {
        if from == 0 {
            break;
        }
        // `from - 1` is the line break that ends the line before `from`.
        from = memchr::memrchr(b'\n', &bytes[..from - 1]).map_or(0, |i| i + 1);
        let line =
            &text[from..memchr::memchr(b'\n', &bytes[from..]).map_or(text.len(), |i| from + i)];
        if ends(line.strip_suffix('\r').unwrap_or(line)) {
            break;
        }
    }
    let mut line_start = from;
    text[from..at].lines().any(|line| {
        let next = (line_start + text[line_start..].find('\n').map_or(at, |i| i + 1)).min(at);
        line_start = next;
        if !starts(line) {
            return false;
        }
        // After the lines up to `at`, a stand-in for the line at `at`: a
        // statement that pulls it goes on there, whatever it holds (and at
        // the end of the text, into a line appended there).
        let reached = std::cell::Cell::new(false);
        let mut rest = text[next..at].lines().chain(std::iter::once_with(|| {
            reached.set(true);
            ""
        }));
        read(line, &mut rest);
        reached.get()
    })
}
