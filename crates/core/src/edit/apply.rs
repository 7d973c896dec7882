//! Splicing edits into content with faithful bytes.
//!
//! Every edit is first located with [`locate`](crate::edit::locate) and then
//! spliced in by byte span: nothing in `new` is interpreted (a `$` is a `$`).
//! When the match needed a tolerant tier, `new` is rewritten into the file's
//! conventions before splicing:
//!
//! - lines of `new` that the model left as they were in `old` are written as
//!   the file has them (indentation, trailing spaces, punctuation, typos),
//!   and so are the blank lines between them (ones the model left out of
//!   `old`, or added to it, included);
//! - other lines are re-indented by the needle→file indentation mapping
//!   (a constant column shift, tabs↔spaces at a detected tab width, or
//!   level for level when the needle uses another indent unit);
//! - at the unicode and fuzzy tiers, text copied from `old` takes the file's
//!   characters and new text takes the file's punctuation style (curly
//!   quotes, dashes, ellipsis and NBSP in comments; only in-word apostrophes
//!   when those are the file's only curly single quotes) — or is folded to
//!   plain ASCII when only the model used typographic characters;
//! - when doubled escapes made the match, `new` is unescaped too if it is
//!   escaped the same way (no raw line break, nor a raw quote or tab that
//!   `old` wrote as an escape);
//! - line breaks become the file's (CRLF/LF; in a replaced region that mixes
//!   both, each line keeps or inherits its own); BOM and final newline stay.

use crate::edit::error::EditError;
use crate::edit::locate::{locate_all, Located, Nearest, Outcome, Tier};
use crate::edit::normalize::{
    escaped_alike, fold_char, fold_norm, indent_cols, indent_of, line_range, to_lf, unescape,
};
use similar::{capture_diff_slices, Algorithm, DiffTag};
use std::collections::HashMap;
use std::ops::Range;

/// One search/replace edit.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Edit {
    /// Text to find (must not be empty).
    pub old: String,
    /// Replacement text.
    pub new: String,
    /// Replace every non-overlapping occurrence at the winning tier instead
    /// of refusing several as ambiguous.
    #[serde(default)]
    pub replace_all: bool,
}

/// Options for [`apply_edit_with`] / [`apply_edits`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplyOptions {
    /// Path of the file, used by the guards to pick a language.
    pub path: Option<String>,
    /// Run the guards on the result (default `true`).
    pub guards: bool,
}

impl Default for ApplyOptions {
    fn default() -> Self {
        ApplyOptions {
            path: None,
            guards: true,
        }
    }
}

/// A successful application.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    /// The new content.
    pub content: String,
    /// The weakest tier used by any of the edits.
    pub tier: Tier,
    /// Number of spans replaced.
    pub replacements: usize,
}

/// Apply one edit with [`ApplyOptions::default`] (guards on, no path).
///
/// Same guarantees as [`apply_edit_with`].
pub fn apply_edit(content: &str, edit: &Edit) -> Result<Applied, EditError> {
    apply_edit_with(content, edit, &ApplyOptions::default())
}

/// Apply one edit.
///
/// Guarantees: an empty `old` is [`EditError::InvalidInput`]; a target that
/// is not found is [`EditError::NotFound`] (with the nearest window), two or
/// more locations at the winning tier without `replace_all` are
/// [`EditError::Ambiguous`]; a result identical to `content` is
/// [`EditError::NoOp`]; guard violations (when `opts.guards`) are
/// [`EditError::Guard`]. On success everything outside the replaced spans is
/// byte-for-byte unchanged, and the replacement uses the file's line breaks.
pub fn apply_edit_with(
    content: &str,
    edit: &Edit,
    opts: &ApplyOptions,
) -> Result<Applied, EditError> {
    run(content, std::slice::from_ref(edit), opts, false)
}

/// Apply several edits atomically: all are located against the one original
/// `content`, then spliced together.
///
/// Guarantees: all or nothing; overlapping targets of two edits are
/// [`EditError::InvalidInput`] naming both; an edit whose `old` exists only in
/// another edit's `new` is refused as [`EditError::NotFound`]; guards run
/// once on the final result; `replacements` is the total number of spans
/// replaced and `tier` the weakest tier used. An empty list is
/// [`EditError::InvalidInput`].
pub fn apply_edits(
    content: &str,
    edits: &[Edit],
    opts: &ApplyOptions,
) -> Result<Applied, EditError> {
    if edits.is_empty() {
        return Err(EditError::invalid(
            "no edits were given: send at least one {old, new} pair",
        ));
    }
    run(content, edits, opts, edits.len() > 1)
}

/// One span to replace.
struct Planned {
    span: Range<usize>,
    text: String,
    edit: usize,
}

fn label(multi: bool, idx: usize) -> String {
    if multi {
        format!("edit #{} (of this batch): ", idx + 1)
    } else {
        String::new()
    }
}

fn run(
    content: &str,
    edits: &[Edit],
    opts: &ApplyOptions,
    multi: bool,
) -> Result<Applied, EditError> {
    let mut planned: Vec<Planned> = Vec::new();
    let mut weakest = Tier::Exact;
    for (idx, edit) in edits.iter().enumerate() {
        let (spans, tier) = plan_edit(content, edit, idx, edits, multi)?;
        if tier.rank() > weakest.rank() {
            weakest = tier;
        }
        planned.extend(spans);
    }
    planned.sort_by_key(|p| (p.span.start, p.span.end));
    for w in planned.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        if b.span.start < a.span.end {
            // a starts first; together they cover a.start .. max(ends).
            let (first, last) = line_range(content, a.span.start, a.span.end.max(b.span.end));
            let lines = format!("lines {first}–{last}");
            return Err(EditError::invalid(if a.edit == b.edit {
                format!(
                    "{}two replaced spans overlap ({lines}). Nothing was changed. Send one edit whose `old` covers the whole region.",
                    label(multi, a.edit)
                )
            } else {
                format!(
                    "edits #{} and #{} target overlapping text ({lines}). Nothing was changed. Merge them into one edit whose `old` covers both, or send them in separate calls.",
                    a.edit.min(b.edit) + 1,
                    a.edit.max(b.edit) + 1
                )
            }));
        }
    }
    let mut out = String::with_capacity(content.len() + 64);
    let mut pos = 0;
    for p in &planned {
        out.push_str(&content[pos..p.span.start]);
        out.push_str(&p.text);
        pos = p.span.end;
    }
    out.push_str(&content[pos..]);
    if out == content {
        return Err(EditError::NoOp {
            message: "the edit changes nothing: with `new` applied the file reads exactly as it does now. Re-read the file (it may already contain the change) and send a `new` that differs from the current text.".to_string(),
        });
    }
    if opts.guards {
        let splices = crate::edit::guards::Splice::from_replacements(
            planned.iter().map(|p| (p.span.clone(), p.text.len())),
        );
        let violations =
            crate::edit::guards::check_splices(content, &out, opts.path.as_deref(), &splices);
        if !violations.is_empty() {
            let list: Vec<String> = violations
                .iter()
                .map(|v| format!("- {}: {}", v.kind.as_str(), v.message))
                .collect();
            return Err(EditError::Guard {
                message: format!(
                    "the edit was refused by a safety guard and the file was not changed:\n{}\nSend `new` as complete, final text (no placeholders, keep the imports still in use) and try again.",
                    list.join("\n")
                ),
                violations,
            });
        }
    }
    Ok(Applied {
        content: out,
        tier: weakest,
        replacements: planned.len(),
    })
}

/// Locate one edit and compute the text of each span it replaces.
fn plan_edit(
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

fn fmt_ranges(lines: &[(usize, usize)]) -> String {
    let shown: Vec<String> = lines
        .iter()
        .take(10)
        .map(|&(a, b)| {
            if a == b {
                format!("{a}")
            } else {
                format!("{a}–{b}")
            }
        })
        .collect();
    let more = if lines.len() > 10 {
        format!(" and {} more", lines.len() - 10)
    } else {
        String::new()
    };
    format!("{}{more}", shown.join(", "))
}

fn ambiguous(content: &str, l: &Located, lab: &str) -> EditError {
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

fn not_found(
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
            "{lab}`old` was not found in the file: it exists only in the `new` text of edit #{}. All edits of a batch are matched against the file as it was before any of them. Nothing was changed. Fold this change into edit #{}, or send it in a later call.",
            j + 1,
            j + 1
        )
    } else {
        let mut m = format!(
            "{lab}`old` was not found in the file, even tolerating whitespace and indentation, typographic punctuation, escaped line breaks and small typos (similarity ≥ 0.85). Nothing was changed."
        );
        if let Some(n) = nearest {
            m.push_str(&format!(
                " The closest text is at lines {}–{} (similarity {:.2}, below the 0.85 needed).",
                n.first_line, n.last_line, n.score
            ));
        }
        m.push_str(" Re-read the file and send `old` copied verbatim from its current content (complete lines, exact indentation).");
        m
    };
    EditError::NotFound { message, nearest }
}

// ---------------------------------------------------------------- transfer

fn is_blank(line: &str) -> bool {
    fold_norm(line).is_empty()
}

/// How indentation written in the needle maps to the file's.
struct IndentRule {
    identity: bool,
    map: HashMap<String, Option<String>>,
    /// (tab width, column shift)
    linear: Option<(usize, isize)>,
    /// When no column shift fits: (needle indent unit, file indent unit,
    /// level shift), for a needle indented by another unit than the file
    /// (2 spaces per level where the file has 4).
    levels: Option<(usize, usize, isize)>,
    tabs: bool,
}

/// Tab width assumed when comparing indentation units.
const LEVEL_TAB: usize = 4;

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The indentation unit of some indents (in columns): the gcd of the
/// non-zero widths, or `None` when all are zero.
fn indent_unit<'s>(indents: impl Iterator<Item = &'s str>) -> Option<usize> {
    let unit = indents.map(|i| indent_cols(i, LEVEL_TAB)).fold(0, gcd);
    (unit > 0).then_some(unit)
}

impl IndentRule {
    fn new(pairs: &[(&str, &str)]) -> Self {
        let identity = pairs.iter().all(|(n, f)| n == f);
        let mut map: HashMap<String, Option<String>> = HashMap::new();
        for (n, f) in pairs {
            let e = map
                .entry(n.to_string())
                .or_insert_with(|| Some(f.to_string()));
            if e.as_deref() != Some(*f) {
                *e = None;
            }
        }
        let linear = [4usize, 2, 8, 3].into_iter().find_map(|w| {
            let mut d = None;
            for (n, f) in pairs {
                let x = indent_cols(f, w) as isize - indent_cols(n, w) as isize;
                match d {
                    None => d = Some(x),
                    Some(y) if y != x => return None,
                    _ => {}
                }
            }
            d.map(|d| (w, d))
        });
        let levels = if linear.is_none() {
            Self::level_rule(pairs)
        } else {
            None
        };
        let tab_lines = pairs.iter().filter(|(_, f)| f.starts_with('\t')).count();
        let space_lines = pairs.iter().filter(|(_, f)| f.starts_with(' ')).count();
        IndentRule {
            identity,
            map,
            linear,
            levels,
            tabs: tab_lines > space_lines,
        }
    }

    /// Needle and file indented in different units, level for level (plus
    /// a constant number of levels): `(needle unit, file unit, level shift)`.
    fn level_rule(pairs: &[(&str, &str)]) -> Option<(usize, usize, isize)> {
        let un = indent_unit(pairs.iter().map(|p| p.0))?;
        let uf = indent_unit(pairs.iter().map(|p| p.1))?;
        let mut shift = None;
        for (n, f) in pairs {
            let x = (indent_cols(f, LEVEL_TAB) / uf) as isize
                - (indent_cols(n, LEVEL_TAB) / un) as isize;
            match shift {
                None => shift = Some(x),
                Some(y) if y != x => return None,
                _ => {}
            }
        }
        shift.map(|d| (un, uf, d))
    }

    fn write_cols(&self, cols: usize, w: usize) -> String {
        if self.tabs {
            format!("{}{}", "\t".repeat(cols / w), " ".repeat(cols % w))
        } else {
            " ".repeat(cols)
        }
    }

    fn apply(&self, indent: &str) -> String {
        if self.identity {
            return indent.to_string();
        }
        if let Some(Some(f)) = self.map.get(indent) {
            return f.clone();
        }
        if let Some((w, d)) = self.linear {
            let cols = (indent_cols(indent, w) as isize + d).max(0) as usize;
            return self.write_cols(cols, w);
        }
        if let Some((un, uf, d)) = self.levels {
            let cols = indent_cols(indent, LEVEL_TAB);
            if cols.is_multiple_of(un) {
                let level = ((cols / un) as isize + d).max(0) as usize;
                return self.write_cols(level * uf, LEVEL_TAB);
            }
        }
        indent.to_string()
    }
}

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
struct Style {
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
    fn from_pairs(pairs: &[(&str, &str)]) -> Style {
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
    fn push(&self, out: &mut String, text: &[char]) {
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

    fn active(&self) -> bool {
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
fn char_transfer(new_body: &str, old_body: &str, file_body: &str, style: &Style) -> String {
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

/// Similarity of two lines' normalised text in `[0, 1]`.
fn line_similarity(a: &str, b: &str) -> f64 {
    rapidfuzz::distance::levenshtein::normalized_similarity(
        fold_norm(a).chars(),
        fold_norm(b).chars(),
    )
}

/// Rewrite `new` (LF) for a match of `needle` (LF) on `found` (the file's
/// matched text, LF) at a tolerant `tier`. See the module docs.
fn transfer(needle: &str, found: &str, new: &str, tier: Tier) -> String {
    let mut n: Vec<&str> = needle.split('\n').collect();
    let f: Vec<&str> = found.split('\n').collect();
    let mut nl: Vec<&str> = new.split('\n').collect();
    // Blank needle lines before/after the matched lines are not part of the
    // span: drop them, and the same blank lines of `new`.
    let f_first_blank = f.first().is_some_and(|l| is_blank(l));
    let f_last_blank = f.last().is_some_and(|l| is_blank(l));
    while n.len() > 1 && is_blank(n[0]) && !f_first_blank {
        n.remove(0);
        if nl.len() > 1 && is_blank(nl[0]) {
            nl.remove(0);
        }
    }
    while n.len() > 1 && is_blank(n[n.len() - 1]) && !f_last_blank {
        n.pop();
        if nl.len() > 1 && is_blank(nl[nl.len() - 1]) {
            nl.pop();
        }
    }
    let n_nb: Vec<usize> = (0..n.len()).filter(|&i| !is_blank(n[i])).collect();
    let f_nb: Vec<usize> = (0..f.len()).filter(|&i| !is_blank(f[i])).collect();
    if n_nb.len() != f_nb.len() {
        return nl.join("\n");
    }
    let mut pair: Vec<Option<usize>> = vec![None; n.len()];
    for (&a, &b) in n_nb.iter().zip(&f_nb) {
        pair[a] = Some(b);
    }
    let indent_pairs: Vec<(&str, &str)> = n_nb
        .iter()
        .zip(&f_nb)
        .map(|(&a, &b)| (indent_of(n[a]), indent_of(f[b])))
        .collect();
    let rule = IndentRule::new(&indent_pairs);
    let style = if matches!(tier, Tier::Unicode | Tier::Fuzzy) {
        let line_pairs: Vec<(&str, &str)> = n_nb
            .iter()
            .zip(&f_nb)
            .map(|(&a, &b)| (n[a], f[b]))
            .collect();
        Style::from_pairs(&line_pairs)
    } else {
        Style::default()
    };
    let char_level = matches!(tier, Tier::Unicode | Tier::Fuzzy);

    let inserted = |line: &str| -> String {
        if is_blank(line) {
            return line.to_string();
        }
        let ind = indent_of(line);
        let mut out = rule.apply(ind);
        let body: Vec<char> = line[ind.len()..].chars().collect();
        if style.active() {
            let mut b = String::new();
            style.push(&mut b, &body);
            out.push_str(&b);
        } else {
            out.extend(body);
        }
        out
    };
    let changed = |line: &str, old: &str, file: &str| -> String {
        let (ni, oi, fi) = (indent_of(line), indent_of(old), indent_of(file));
        let mut out = if ni == oi {
            fi.to_string()
        } else {
            rule.apply(ni)
        };
        if char_level {
            out.push_str(&char_transfer(
                &line[ni.len()..],
                &old[oi.len()..],
                &file[fi.len()..],
                &style,
            ));
        } else {
            out.push_str(&line[ni.len()..]);
        }
        out
    };

    // Each output line, with the needle line it stands for (an unchanged or
    // changed line of the needle; `None` for inserted and blank lines).
    let mut out: Vec<(String, Option<usize>)> = Vec::with_capacity(nl.len());
    for op in capture_diff_slices(Algorithm::Myers, &n, &nl) {
        let (tag, o, b) = op.as_tag_tuple();
        match tag {
            DiffTag::Equal => {
                for k in 0..o.len() {
                    out.push(match pair[o.start + k] {
                        Some(fi) => (f[fi].to_string(), Some(o.start + k)),
                        None => (nl[b.start + k].to_string(), None),
                    });
                }
            }
            DiffTag::Delete => {}
            DiffTag::Insert => out.extend(nl[b].iter().map(|l| (inserted(l), None))),
            DiffTag::Replace => {
                // Pair each new line with the most similar remaining old line
                // of the hunk (in order); unpaired new lines are insertions.
                let mut next = o.start;
                for &line in &nl[b] {
                    let best = if is_blank(line) {
                        None
                    } else {
                        (next..o.end)
                            .filter(|&i| pair[i].is_some())
                            .map(|i| (i, line_similarity(line, n[i])))
                            .filter(|&(_, s)| s >= 0.5)
                            .fold(None::<(usize, f64)>, |acc, (i, s)| match acc {
                                Some((_, bs)) if bs >= s => acc,
                                _ => Some((i, s)),
                            })
                    };
                    match best.and_then(|(i, _)| pair[i].map(|fi| (i, fi))) {
                        Some((i, fi)) => {
                            out.push((changed(line, n[i], f[fi]), Some(i)));
                            next = i + 1;
                        }
                        None => out.push((inserted(line), None)),
                    }
                }
            }
        }
    }
    keep_file_gaps(&out, &n_nb, &f_nb, &f).join("\n")
}

/// The blank lines between two consecutive needle lines are the model's
/// spelling of the file's blank lines there (the tolerant tiers ignore
/// blank lines, so a model that left one out of `old` still matched): where
/// `new` keeps the needle's gap between them unchanged, write the file's gap
/// instead, so that blank lines the model did not touch are neither dropped
/// nor added.
fn keep_file_gaps(
    out: &[(String, Option<usize>)],
    n_nb: &[usize],
    f_nb: &[usize],
    f: &[&str],
) -> Vec<String> {
    let rank: HashMap<usize, usize> = n_nb.iter().enumerate().map(|(j, &i)| (i, j)).collect();
    let mut result: Vec<String> = Vec::with_capacity(out.len());
    let mut idx = 0;
    while idx < out.len() {
        result.push(out[idx].0.clone());
        let mut next = idx + 1;
        while next < out.len() && out[next].1.is_none() && is_blank(&out[next].0) {
            next += 1;
        }
        let ranked = |l: Option<usize>| l.and_then(|i| rank.get(&i).map(|&j| (i, j)));
        if let (Some((a, ja)), Some((b, jb))) =
            (ranked(out[idx].1), ranked(out.get(next).and_then(|l| l.1)))
        {
            if jb == ja + 1 && next - idx - 1 == b - a - 1 {
                result.extend(f[f_nb[ja] + 1..f_nb[jb]].iter().map(|l| l.to_string()));
                idx = next;
                continue;
            }
        }
        idx += 1;
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indent_rule_table() {
        // (needle→file indent pairs, indent of a new line, expected file indent)
        type Pairs = &'static [(&'static str, &'static str)];
        let cases: &[(Pairs, &str, &str)] = &[
            (&[("", ""), ("  ", "  ")], "    ", "    "),
            (
                &[("    ", ""), ("        ", "    ")],
                "            ",
                "        ",
            ),
            (&[("", "  "), ("  ", "    ")], "    ", "      "),
            (
                &[("    ", "\t"), ("        ", "\t\t")],
                "            ",
                "\t\t\t",
            ),
            (
                &[("\t", "    "), ("\t\t", "        ")],
                "\t\t\t",
                "            ",
            ),
            (&[("\t", "  "), ("\t\t", "    ")], "\t\t\t", "      "),
            (&[("\t", "  "), ("\t\t\t", "      ")], "\t ", "   "),
            (&[("    ", "")], "  ", ""),
            // 2 spaces per level in the needle, 4 in the file.
            (&[("", ""), ("  ", "    ")], "    ", "        "),
            (
                &[("  ", "    "), ("    ", "        ")],
                "      ",
                "            ",
            ),
            // ... and one level deeper in the file.
            (&[("", "    "), ("  ", "        ")], "    ", "            "),
            // 4 spaces per level in the needle, 2 in the file.
            (&[("", ""), ("    ", "  ")], "        ", "    "),
            // Not a whole number of needle levels: left as written.
            (&[("", ""), ("    ", "  ")], "  ", "  "),
        ];
        for (pairs, new, want) in cases {
            let rule = IndentRule::new(pairs);
            assert_eq!(rule.apply(new), *want, "{pairs:?} {new:?}");
        }
    }

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
