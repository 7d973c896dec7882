//! Punctuation style (curly quotes, dashes, ellipsis, NBSP) and the
//! three-way character merge of a changed line.

use crate::edit::normalize::fold_char;
use similar::{capture_diff_slices, Algorithm, DiffTag};
use std::ops::Range;

/// Direction of one punctuation class between the model's text and the file.
#[derive(Clone, Copy, PartialEq, Eq, Default, Debug)]
enum Dir {
    #[default]
    Keep,
    /// The file uses the typographic form where the model wrote ASCII.
    Fancy,
    /// The model used the typographic form where the file has ASCII.
    Plain,
    /// Single quotes only: the file's typographic ones are all in-word
    /// apostrophes (`it’s`), which says nothing about how it quotes code, so
    /// only the model's in-word apostrophes take the typographic form.
    Apostrophe,
}

#[derive(Clone, Copy, Default, Debug)]
pub(super) struct Style {
    squote: Dir,
    dquote: Dir,
    dash: Dir,
    ellipsis: Dir,
    space: Dir,
}

#[derive(Clone, Copy)]
enum Class {
    SQuote,
    DQuote,
    Dash,
    Ellipsis,
    Space,
}

fn class_of(c: char) -> Option<Class> {
    Some(match fold_char(c)? {
        "'" => Class::SQuote,
        "\"" => Class::DQuote,
        "-" | "--" => Class::Dash,
        "..." => Class::Ellipsis,
        _ => Class::Space,
    })
}

impl Style {
    pub(super) fn from_pairs(pairs: &[(&str, &str)]) -> Style {
        let mut n_has = [false; 5];
        let mut f_has = [false; 5];
        let mut f_quotes_are_apostrophes = true;
        for (n, f) in pairs {
            for c in n.chars() {
                if let Some(k) = class_of(c) {
                    n_has[k as usize] = true;
                }
            }
            let fc: Vec<char> = f.chars().collect();
            for (i, &c) in fc.iter().enumerate() {
                if let Some(k) = class_of(c) {
                    f_has[k as usize] = true;
                    if matches!(k, Class::SQuote) && !is_in_word_apostrophe(&fc, i) {
                        f_quotes_are_apostrophes = false;
                    }
                }
            }
        }
        let dir = |k: Class| match (n_has[k as usize], f_has[k as usize]) {
            (false, true) => Dir::Fancy,
            (true, false) => Dir::Plain,
            _ => Dir::Keep,
        };
        let squote = match dir(Class::SQuote) {
            Dir::Fancy if f_quotes_are_apostrophes => Dir::Apostrophe,
            d => d,
        };
        Style {
            squote,
            dquote: dir(Class::DQuote),
            dash: dir(Class::Dash),
            ellipsis: dir(Class::Ellipsis),
            space: dir(Class::Space),
        }
    }

    fn dir(&self, k: Class) -> Dir {
        match k {
            Class::SQuote => self.squote,
            Class::DQuote => self.dquote,
            Class::Dash => self.dash,
            Class::Ellipsis => self.ellipsis,
            Class::Space => self.space,
        }
    }

    /// Append `text` (new text of the model) to `out` (the line so far) in
    /// the file's punctuation style. Quotes alternate open/close by their
    /// parity on the line; dashes, ellipses and NBSP only inside a comment.
    pub(super) fn push(&self, out: &mut String, text: &[char]) {
        let mut squotes = out
            .chars()
            .filter(|&c| c == '\'' || matches!(class_of(c), Some(Class::SQuote)))
            .count();
        let mut dquotes = out
            .chars()
            .filter(|&c| c == '"' || matches!(class_of(c), Some(Class::DQuote)))
            .count();
        let mut comment = out.contains('#') || out.contains("//");
        let mut prev = out.chars().last();
        let mut i = 0;
        while i < text.len() {
            let c = text[i];
            i += 1;
            if let Some(k) = class_of(c) {
                if self.dir(k) == Dir::Plain {
                    out.push_str(fold_char(c).unwrap_or(""));
                } else {
                    out.push(c);
                }
                match k {
                    Class::SQuote => squotes += 1,
                    Class::DQuote => dquotes += 1,
                    _ => {}
                }
                prev = Some(c);
                continue;
            }
            if c == '#' || (c == '/' && prev == Some('/')) {
                comment = true;
            }
            let pushed = match c {
                '\'' if self.squote == Dir::Fancy => {
                    squotes += 1;
                    Some(if squotes % 2 == 1 {
                        '\u{2018}'
                    } else {
                        '\u{2019}'
                    })
                }
                '\'' if self.squote == Dir::Apostrophe => {
                    squotes += 1;
                    let word_before = prev.is_some_and(char::is_alphanumeric);
                    let word_after = text.get(i).is_some_and(|c| c.is_alphanumeric());
                    (word_before && word_after).then_some('\u{2019}')
                }
                '\'' => {
                    squotes += 1;
                    None
                }
                '"' if self.dquote == Dir::Fancy => {
                    dquotes += 1;
                    Some(if dquotes % 2 == 1 {
                        '\u{201C}'
                    } else {
                        '\u{201D}'
                    })
                }
                '"' => {
                    dquotes += 1;
                    None
                }
                '-' if comment && self.dash == Dir::Fancy => {
                    if text.get(i) == Some(&'-') {
                        i += 1;
                        Some('\u{2014}')
                    } else {
                        Some('\u{2013}')
                    }
                }
                '.' if comment
                    && self.ellipsis == Dir::Fancy
                    && text.get(i) == Some(&'.')
                    && text.get(i + 1) == Some(&'.') =>
                {
                    i += 2;
                    Some('\u{2026}')
                }
                ' ' if comment && self.space == Dir::Fancy => Some('\u{00A0}'),
                _ => None,
            };
            out.push(pushed.unwrap_or(c));
            prev = Some(c);
        }
    }

    pub(super) fn active(&self) -> bool {
        [
            self.squote,
            self.dquote,
            self.dash,
            self.ellipsis,
            self.space,
        ]
        .iter()
        .any(|d| *d != Dir::Keep)
    }
}

/// Whether `line[i]` is a right single quote between two letters or digits
/// (an apostrophe as in `it’s`, not a closing quote).
fn is_in_word_apostrophe(line: &[char], i: usize) -> bool {
    line[i] == '\u{2019}'
        && i > 0
        && line[i - 1].is_alphanumeric()
        && line.get(i + 1).is_some_and(|c| c.is_alphanumeric())
}

/// The body of a changed line, merged three-way with the needle line as the
/// base: where only the file differs from the needle (its spelling of the
/// same text) the file's text is kept, where only the model changed it the
/// model's text is written in the file's punctuation style, and where both
/// touched the same place the model's text wins unless both agree.
pub(super) fn char_transfer(
    new_body: &str,
    old_body: &str,
    file_body: &str,
    style: &Style,
) -> String {
    let nc: Vec<char> = old_body.chars().collect();
    let fc: Vec<char> = file_body.chars().collect();
    let bc: Vec<char> = new_body.chars().collect();
    // (start, end, replacement, from_model) over needle char indices.
    let mut hunks: Vec<(usize, usize, Vec<char>, bool)> = Vec::new();
    for (other, model) in [(&fc, false), (&bc, true)] {
        let mut prev_end = 0;
        for op in capture_diff_slices(Algorithm::Myers, &nc, other) {
            let (tag, o, t) = op.as_tag_tuple();
            let (mut a, mut b, mut text) = (o.start, o.end, other[t].to_vec());
            // Slide pure insertions and deletions to their leftmost
            // equivalent place ("sss" minus one "s" is always the first),
            // so that the same change made on both sides lands on the same
            // needle position whatever the diff chose.
            match tag {
                DiffTag::Equal => continue,
                DiffTag::Delete => {
                    while a > prev_end && nc[a - 1] == nc[b - 1] {
                        a -= 1;
                        b -= 1;
                    }
                }
                DiffTag::Insert => {
                    while a > prev_end && text.last() == Some(&nc[a - 1]) {
                        text.pop();
                        text.insert(0, nc[a - 1]);
                        a -= 1;
                        b -= 1;
                    }
                }
                DiffTag::Replace => {}
            }
            prev_end = b;
            hunks.push((a, b, text, model));
        }
    }
    hunks.sort_by_key(|h| (h.0, h.1));
    let side_text = |group: &[(usize, usize, Vec<char>, bool)], model: bool, a: usize, b: usize| {
        let mut t: Vec<char> = Vec::new();
        let mut pos = a;
        for h in group.iter().filter(|h| h.3 == model) {
            t.extend_from_slice(&nc[pos..h.0.max(pos)]);
            t.extend_from_slice(&h.2);
            pos = h.1.max(pos);
        }
        t.extend_from_slice(&nc[pos..b]);
        t
    };
    // Groups of hunks that overlap or touch: (start, end, hunk range).
    let mut groups: Vec<(usize, usize, Range<usize>)> = Vec::new();
    let mut i = 0;
    while i < hunks.len() {
        let (ga, mut gb) = (hunks[i].0, hunks[i].1);
        let mut j = i + 1;
        while j < hunks.len() && hunks[j].0 <= gb {
            gb = gb.max(hunks[j].1);
            j += 1;
        }
        groups.push((ga, gb, i..j));
        i = j;
    }
    let mut out = String::with_capacity(new_body.len() + 8);
    let mut pos = 0;
    let mut g = 0;
    while g < groups.len() {
        // Equivalent edit scripts may place the same change a few chars
        // apart on the two sides: if nearby groups together give the same
        // text on both sides, that is one agreed change.
        let mut h = g + 1;
        while h < groups.len() && groups[h].0 <= groups[h - 1].1 + NEARBY {
            h += 1;
        }
        let (sa, sb) = (groups[g].0, groups[h - 1].1);
        let all = &hunks[groups[g].2.start..groups[h - 1].2.end];
        if h - g > 1
            && all.iter().any(|x| x.3)
            && all.iter().any(|x| !x.3)
            && side_text(all, true, sa, sb) == side_text(all, false, sa, sb)
        {
            out.extend(&nc[pos..sa]);
            out.extend(side_text(all, false, sa, sb));
            pos = sb;
            g = h;
            continue;
        }
        let (ga, gb, range) = groups[g].clone();
        let group = &hunks[range];
        out.extend(&nc[pos..ga]);
        let file_side = side_text(group, false, ga, gb);
        let has_model = group.iter().any(|h| h.3);
        let has_file = group.iter().any(|h| !h.3);
        if has_model {
            let model_side = side_text(group, true, ga, gb);
            if has_file && model_side == file_side {
                out.extend(&file_side);
            } else {
                style.push(&mut out, &model_side);
            }
        } else {
            out.extend(&file_side);
        }
        pos = gb;
        g += 1;
    }
    out.extend(&nc[pos..]);
    out
}

/// How far apart (in needle chars) two change groups may be and still be
/// compared as one change when looking for agreement between the sides.
const NEARBY: usize = 3;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn char_transfer_table() {
        let fancy = Style {
            squote: Dir::Fancy,
            ..Style::default()
        };
        // (new body, needle body, file body, style, expected)
        let cases = [
            (
                "x = 'ab_x'",
                "x = 'ab'",
                "x = \u{2018}ab\u{2019}",
                fancy,
                "x = \u{2018}ab_x\u{2019}",
            ),
            (
                "# Get the next one",
                "# Ge tthe next one",
                "# Get the next one",
                Style::default(),
                "# Get the next one",
            ),
            (
                "call(a, b2)",
                "cal(a, b)",
                "call(a, b)",
                Style::default(),
                "call(a, b2)",
            ),
            (
                "f('a', 'b')",
                "f('a')",
                "f(\u{2018}a\u{2019})",
                fancy,
                "f(\u{2018}a\u{2019}, \u{2018}b\u{2019})",
            ),
        ];
        for (new, old, file, style, want) in cases {
            assert_eq!(char_transfer(new, old, file, &style), want, "{new:?}");
        }
    }
}
