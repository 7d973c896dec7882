//! Text normalisations shared by [`locate`](super::locate) and
//! [`apply`](super::apply): unicode punctuation folding (with a byte map back
//! to the original), whitespace collapsing, doubled-escape undoing, line
//! splitting and indentation arithmetic. All pure.

/// ASCII replacement of a "typographic" character models and word processors
/// emit in place of plain punctuation, or `None` when `c` is not one.
pub(crate) fn fold_char(c: char) -> Option<&'static str> {
    Some(match c {
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' => "'",
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' => "\"",
        // Autocorrect turns "--" into an em dash and "-" into an en dash.
        '\u{2014}' => "--",
        '\u{2010}'..='\u{2013}' | '\u{2015}' | '\u{2212}' => "-",
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => " ",
        '\u{2026}' => "...",
        _ => return None,
    })
}

/// Whether `s` contains any character [`fold_char`] would rewrite.
pub(crate) fn has_foldable(s: &str) -> bool {
    !s.is_ascii() && s.chars().any(|c| fold_char(c).is_some())
}

/// `s` with every typographic character folded to ASCII.
pub(crate) fn fold(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match fold_char(c) {
            Some(r) => out.push_str(r),
            None => out.push(c),
        }
    }
    out
}

/// A folded text plus, for each folded byte, the original byte offset of the
/// character it came from, and whether that folded byte starts the expansion
/// of an original character (only such bytes may start or end a match).
pub(crate) struct Folded {
    pub text: String,
    map: Vec<usize>,
    starts: Vec<bool>,
    orig_len: usize,
}

impl Folded {
    pub fn new(s: &str) -> Folded {
        let mut text = String::with_capacity(s.len());
        let mut map = Vec::with_capacity(s.len() + 1);
        let mut starts = Vec::with_capacity(s.len() + 1);
        for (i, c) in s.char_indices() {
            let before = text.len();
            match fold_char(c) {
                Some(r) => text.push_str(r),
                None => text.push(c),
            }
            for k in 0..text.len() - before {
                map.push(i);
                // Interior bytes of a multi-byte char are never match boundaries
                // anyway (the needle is valid UTF-8); interior bytes of an
                // expansion such as "…" → "..." must not be either.
                starts.push(k == 0);
            }
        }
        map.push(s.len());
        starts.push(true);
        Folded {
            text,
            map,
            starts,
            orig_len: s.len(),
        }
    }

    /// Original byte range of the folded range `a..b`, when both ends fall on
    /// original character boundaries.
    pub fn original(&self, a: usize, b: usize) -> Option<std::ops::Range<usize>> {
        if !self.starts[a] || !self.starts[b] {
            return None;
        }
        let end = if b == self.text.len() {
            self.orig_len
        } else {
            self.map[b]
        };
        Some(self.map[a]..end)
    }
}

/// Line normalisation of the whitespace tier: ASCII whitespace runs collapsed
/// to one space, ends trimmed (an all-blank line becomes empty).
pub(crate) fn ws_norm(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    for part in line.split_ascii_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(part);
    }
    out
}

/// Line normalisation of the unicode and fuzzy tiers: [`fold`] then every
/// (unicode) whitespace run collapsed, ends trimmed.
pub(crate) fn fold_norm(line: &str) -> String {
    let folded;
    let src = if has_foldable(line) {
        folded = fold(line);
        folded.as_str()
    } else {
        line
    };
    let mut out = String::with_capacity(src.len());
    for part in src.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(part);
    }
    out
}

/// Undo one level of backslash escaping (`\n`, `\t`, `\r`, `\"`, `\'`, `\\`);
/// other backslashes are kept. `None` when nothing would change.
pub(crate) fn unescape(s: &str) -> Option<String> {
    if !s.contains('\\') {
        return None;
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    let mut changed = false;
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let rep = match chars.peek() {
            Some('n') => Some('\n'),
            Some('t') => Some('\t'),
            Some('r') => Some('\r'),
            Some('"') => Some('"'),
            Some('\'') => Some('\''),
            Some('\\') => Some('\\'),
            _ => None,
        };
        match rep {
            Some(r) => {
                chars.next();
                out.push(r);
                changed = true;
            }
            None => out.push('\\'),
        }
    }
    changed.then_some(out)
}

/// Whether `new` reads as escaped the way `old` was: no raw line break, and
/// no raw `"`, `'` or tab where `old` wrote that character as an escape
/// (`\"`, `\'`, `\t`). A model that escaped its `old` but wrote `new` as
/// plain source (`print("x\n")`) means the backslashes of `new` literally.
pub(crate) fn escaped_alike(new: &str, old: &str) -> bool {
    if new.contains('\n') {
        return false;
    }
    let escapes_in_old = escape_targets(old);
    let mut chars = new.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            chars.next();
        } else if escapes_in_old.contains(&c) {
            return false;
        }
    }
    true
}

/// The raw characters (`"`, `'`, tab) that `s` writes as backslash escapes.
fn escape_targets(s: &str) -> Vec<char> {
    let mut out = Vec::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            continue;
        }
        let raw = match chars.next() {
            Some('"') => '"',
            Some('\'') => '\'',
            Some('t') => '\t',
            _ => continue,
        };
        if !out.contains(&raw) {
            out.push(raw);
        }
    }
    out
}

/// `s` with CRLF (and lone CR) line breaks turned into LF.
pub(crate) fn to_lf(s: &str) -> std::borrow::Cow<'_, str> {
    if s.contains('\r') {
        std::borrow::Cow::Owned(s.replace("\r\n", "\n"))
    } else {
        std::borrow::Cow::Borrowed(s)
    }
}

/// The leading run of spaces and tabs of `line`.
pub(crate) fn indent_of(line: &str) -> &str {
    let n = line.len() - line.trim_start_matches([' ', '\t']).len();
    &line[..n]
}

/// Width in columns of an indentation, a tab counting `tab` columns.
pub(crate) fn indent_cols(indent: &str, tab: usize) -> usize {
    indent
        .chars()
        .map(|c| if c == '\t' { tab } else { 1 })
        .sum()
}

/// One line of a text: byte range of its content, without the line break
/// (nor a `\r` before it).
#[derive(Debug, Clone, Copy)]
pub(crate) struct LineSpan {
    pub start: usize,
    pub end: usize,
}

/// Split `text[base..]` into lines (absolute offsets). A final line break
/// yields a last empty line, like `str::split('\n')`.
pub(crate) fn split_lines(text: &str, base: usize) -> Vec<LineSpan> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut start = base;
    for nl in memchr::memchr_iter(b'\n', &bytes[base..]) {
        let nl = base + nl;
        let end = if nl > start && bytes[nl - 1] == b'\r' {
            nl - 1
        } else {
            nl
        };
        out.push(LineSpan { start, end });
        start = nl + 1;
    }
    out.push(LineSpan {
        start,
        end: text.len(),
    });
    out
}

/// 1-based line number of byte `offset` in `text`.
pub(crate) fn line_no(text: &str, offset: usize) -> usize {
    memchr::memchr_iter(b'\n', &text.as_bytes()[..offset.min(text.len())]).count() + 1
}

/// 1-based inclusive line range covered by the byte span `a..b` of `text`.
pub(crate) fn line_range(text: &str, a: usize, b: usize) -> (usize, usize) {
    let first = line_no(text, a);
    let last_off = if b > a { b - 1 } else { a };
    (first, first + line_no(&text[a..], last_off - a) - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fold_table() {
        let cases = [
            ("\u{201C}hi\u{201D}", "\"hi\""),
            ("it\u{2019}s", "it's"),
            ("a\u{2014}b\u{2013}c", "a--b-c"),
            ("x\u{00A0}y", "x y"),
            ("wait\u{2026}", "wait..."),
            ("plain", "plain"),
        ];
        for (input, want) in cases {
            assert_eq!(fold(input), want, "{input:?}");
        }
    }

    #[test]
    fn folded_map_rejects_cut_expansions() {
        let f = Folded::new("a\u{2026}b");
        assert_eq!(f.text, "a...b");
        assert_eq!(f.original(0, 5), Some(0..5));
        assert_eq!(f.original(1, 4), Some(1..4));
        assert_eq!(f.original(2, 4), None);
        assert_eq!(f.original(0, 2), None);
    }

    #[test]
    fn unescape_table() {
        let cases = [
            ("a\\nb", Some("a\nb")),
            ("\\tx = \\\"y\\\"", Some("\tx = \"y\"")),
            ("a\\\\n", Some("a\\n")),
            ("no escapes", None),
            ("a\\qb", None),
        ];
        for (input, want) in cases {
            assert_eq!(unescape(input).as_deref(), want, "{input:?}");
        }
    }

    #[test]
    fn escaped_alike_table() {
        // (new, old, whether new is escaped like old)
        let cases = [
            ("a\\nb", "x\\ny", true),
            ("a\nb", "x\\ny", false),
            ("print(\"x\\n\")", "print(\\\"x\\\")", false),
            ("print(\\\"y\\\")", "print(\\\"x\\\")", true),
            ("f('a')", "f(\\'b\\')", false),
            ("f('a')", "f(\\\"b\\\")", true),
            ("\tx", "\\tx = 1", false),
        ];
        for (new, old, want) in cases {
            assert_eq!(escaped_alike(new, old), want, "{new:?} {old:?}");
        }
    }

    #[test]
    fn lines_and_numbers() {
        let t = "a\r\nbb\nc";
        let l = split_lines(t, 0);
        let texts: Vec<&str> = l.iter().map(|s| &t[s.start..s.end]).collect();
        assert_eq!(texts, ["a", "bb", "c"]);
        assert_eq!(line_range(t, 3, 8), (2, 3));
        assert_eq!(line_range(t, 0, 1), (1, 1));
        assert_eq!(ws_norm("  a \t b  "), "a b");
        assert_eq!(fold_norm("\u{00A0}a\u{00A0} b"), "a b");
        assert_eq!(indent_cols("\t  ", 4), 6);
    }
}
