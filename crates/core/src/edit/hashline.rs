//! Hashline anchors: `LINE#HH` references that detect stale line edits.
//!
//! [`format()`] shows a file as `12#VK|text` lines; a model then names the
//! lines it wants to change by their `LINE#HH` reference, and [`apply`]
//! refuses the edit when any referenced line changed since it was read.
//!
//! The hash ([`line_hash`]) is xxHash32 of the line with `\r` removed and
//! trailing whitespace trimmed, seeded with 0 — or with the line number when
//! the line has no letter or digit, so that blank lines and lone braces get
//! different hashes at different places — taken mod 256 and written as two
//! letters of [`ALPHABET`], high nibble first. "Whitespace" is the set
//! JavaScript's `trimEnd` removes (Unicode `White_Space` minus U+0085, plus
//! U+FEFF) and "letter or digit" means general category `L*` or `N*`; both
//! choices are pinned by the shared vectors in `tests/vectors/hashline.json`.
//!
//! Line numbering is that of [`format()`]: the content is split on `\n`, so a
//! file ending with a newline shows one last empty line (`8#XW|`). That last
//! line is not a real line of the file: edits anchored on it act at the end
//! of the file, and a file that ended with one newline still ends with
//! exactly one.

use crate::edit::error::EditError;
use std::collections::BTreeMap;
use std::fmt;
use unicode_properties::{GeneralCategoryGroup, UnicodeGeneralCategory};

/// The sixteen letters a hash is written with; index = nibble value.
pub const ALPHABET: &[u8; 16] = b"ZPMQVRWSNKTXJBYH";

/// The byte-order mark a file may start with.
const BOM: char = '\u{FEFF}';

/// How many context lines around a stale line a mismatch message shows.
const CONTEXT: usize = 2;

/// Whitespace as JavaScript's `String.prototype.trimEnd` sees it.
fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202F}'
                | '\u{205F}'
                | '\u{3000}'
                | '\u{FEFF}'
    )
}

/// General category L* or N* (Unicode letters and numbers, not marks).
fn is_letter_or_digit(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_alphanumeric()
    } else {
        matches!(
            c.general_category_group(),
            GeneralCategoryGroup::Letter | GeneralCategoryGroup::Number
        )
    }
}

fn has_letter_or_digit(s: &str) -> bool {
    let bytes = s.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if b.is_ascii_alphanumeric() {
            return true;
        }
        if b >= 0x80 {
            // Every byte before `i` was ASCII, so `i` is a char boundary.
            return s[i..].chars().any(is_letter_or_digit);
        }
    }
    false
}

/// Hash byte of an already cleaned line (no `\r`, end trimmed).
fn hash_cleaned(line_no: usize, cleaned: &str) -> u8 {
    // Line numbers beyond u32::MAX wrap; such files cannot be held in memory anyway.
    let seed = if has_letter_or_digit(cleaned) {
        0
    } else {
        line_no as u32
    };
    (crate::xxhash32(cleaned.as_bytes(), seed) & 0xFF) as u8
}

/// Hash byte of a raw line; `scratch` is reused when the line holds a `\r`.
fn hash_line_byte(line_no: usize, text: &str, scratch: &mut String) -> u8 {
    let cleaned = if memchr::memchr(b'\r', text.as_bytes()).is_some() {
        scratch.clear();
        scratch.extend(text.chars().filter(|&c| c != '\r'));
        scratch.as_str()
    } else {
        text
    };
    hash_cleaned(line_no, trim_js_end(cleaned))
}

fn legacy_hash_byte(line_no: usize, text: &str) -> u8 {
    let cleaned: String = text.chars().filter(|&c| !is_js_whitespace(c)).collect();
    hash_cleaned(line_no, &cleaned)
}

fn hash_letters(byte: u8) -> [u8; 2] {
    [
        ALPHABET[usize::from(byte >> 4)],
        ALPHABET[usize::from(byte & 0x0F)],
    ]
}

fn hash_string(byte: u8) -> String {
    let [hi, lo] = hash_letters(byte);
    let mut s = String::with_capacity(2);
    s.push(char::from(hi));
    s.push(char::from(lo));
    s
}

/// The two-letter hash of line `line_no` (1-based) whose text is `text`.
///
/// Guarantees: always two letters of [`ALPHABET`]; independent of a trailing
/// `\r`, of any `\r`, and of trailing whitespace; independent of `line_no`
/// whenever the line has a letter or digit. Matches every `line_hash` vector
/// of `tests/vectors/hashline.json`.
pub fn line_hash(line_no: usize, text: &str) -> String {
    hash_string(hash_line_byte(line_no, text, &mut String::new()))
}

/// The legacy two-letter hash: like [`line_hash`] but with *all* whitespace
/// removed (so re-indenting a line does not change it). Accepted by
/// [`validate`] and [`apply`] as an alternative to the current hash.
pub fn legacy_line_hash(line_no: usize, text: &str) -> String {
    hash_string(legacy_hash_byte(line_no, text))
}

/// The end-trim of [`line_hash`], with a fast path for the usual line that
/// ends in a visible ASCII character.
fn trim_js_end(s: &str) -> &str {
    match s.as_bytes().last() {
        Some(&b) if b < 0x80 && !matches!(b, b' ' | b'\t' | 0x0B | 0x0C | b'\r' | b'\n') => s,
        None => s,
        _ => s.trim_end_matches(is_js_whitespace),
    }
}

/// A line number kept as ASCII digits, incremented in place (no division
/// per line).
struct DecimalCounter {
    digits: [u8; 20],
    start: usize,
}

impl DecimalCounter {
    fn one() -> Self {
        let mut digits = [b'0'; 20];
        digits[19] = b'1';
        DecimalCounter { digits, start: 19 }
    }

    fn as_bytes(&self) -> &[u8] {
        &self.digits[self.start..]
    }

    fn increment(&mut self) {
        let mut i = self.digits.len() - 1;
        loop {
            if self.digits[i] == b'9' {
                self.digits[i] = b'0';
                if i == 0 {
                    // 20 digits exceed usize; unreachable for in-memory content.
                    return;
                }
                i -= 1;
            } else {
                self.digits[i] += 1;
                break;
            }
        }
        self.start = self.start.min(i);
    }
}

/// Shows `content` as `LINE#HH|text` lines joined by `\n`.
///
/// Lines are the pieces between `\n`s (a CRLF line is shown without its
/// `\r`), so content ending with a newline shows a last empty line, and an
/// empty content shows `1#KM|`. Single pass over memchr-found newlines into
/// one preallocated buffer; no allocation per line.
pub fn format(content: &str) -> String {
    let bytes = content.as_bytes();
    let line_count = memchr::memchr_iter(b'\n', bytes).count() + 1;
    let has_cr = memchr::memchr(b'\r', bytes).is_some();
    let digits = line_count.checked_ilog10().unwrap_or(0) as usize + 1;
    let mut out: Vec<u8> = Vec::with_capacity(content.len() + line_count * (digits + 4));
    let mut scratch = String::new();
    let mut number = DecimalCounter::one();
    let mut start = 0;
    let ends = memchr::memchr_iter(b'\n', bytes).chain(std::iter::once(bytes.len()));
    for (line_no, end) in (1..).zip(ends) {
        let raw = &content[start..end];
        let (text, byte) = if has_cr {
            let text = raw.strip_suffix('\r').unwrap_or(raw);
            (text, hash_line_byte(line_no, text, &mut scratch))
        } else {
            (raw, hash_cleaned(line_no, trim_js_end(raw)))
        };
        if line_no > 1 {
            out.push(b'\n');
        }
        out.extend_from_slice(number.as_bytes());
        let [hi, lo] = hash_letters(byte);
        out.extend_from_slice(&[b'#', hi, lo, b'|']);
        out.extend_from_slice(text.as_bytes());
        number.increment();
        start = end + 1;
    }
    // Only whole UTF-8 lines and ASCII were written, so this never fails;
    // the fallback keeps the function total without `unsafe`.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// A parsed `LINE#HH` reference: a 1-based line number and a two-letter hash.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LineRef {
    /// 1-based line number.
    pub line: usize,
    /// Two uppercase letters of [`ALPHABET`].
    pub hash: String,
}

impl fmt::Display for LineRef {
    /// The normalized form `12#VK`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}#{}", self.line, self.hash)
    }
}

impl std::str::FromStr for LineRef {
    type Err = EditError;

    /// Same as [`parse_ref`].
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_ref(s)
    }
}

fn malformed_ref(s: &str, why: &str) -> EditError {
    let shown: String = s.chars().take(80).collect();
    EditError::invalid(format!(
        "malformed line ref {shown:?}: {why}. Expected LINE#HH, e.g. 12#VK: the 1-based \
         line number, '#', and the two-letter hash shown by hashline format"
    ))
}

/// Parses a line reference, leniently.
///
/// Accepts `12#VK` and what a model or a diff wraps around it: surrounding
/// whitespace, leading `>`, `+`, `-` (e.g. `>>> 12#VK`, `+12#VK`), spaces
/// around `#` (`12 # VK`) and a trailing `|text` (an echoed `format` line).
/// Hash letters are accepted in either case and normalized to uppercase
/// (they are unambiguous: the alphabet has no case-only pairs).
///
/// Rejects, as [`EditError::InvalidInput`] with a message naming the expected
/// form `LINE#HH`: a missing or zero line number, a missing `#`, a hash that is
/// not exactly two letters of [`ALPHABET`], and anything else after the hash.
pub fn parse_ref(s: &str) -> Result<LineRef, EditError> {
    let rest = s.trim_start_matches(|c: char| c.is_whitespace() || matches!(c, '>' | '+' | '-'));
    let digits_len = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits_len == 0 {
        return Err(malformed_ref(s, "no line number"));
    }
    let line: usize = rest[..digits_len]
        .parse()
        .map_err(|_| malformed_ref(s, "line number too large"))?;
    if line == 0 {
        return Err(malformed_ref(s, "line numbers start at 1"));
    }
    let rest = rest[digits_len..].trim_start();
    let Some(rest) = rest.strip_prefix('#') else {
        return Err(malformed_ref(s, "no '#' after the line number"));
    };
    let rest = rest.trim_start();
    let mut chars = rest.chars();
    let mut hash = String::with_capacity(2);
    for _ in 0..2 {
        match chars.next().map(|c| c.to_ascii_uppercase()) {
            Some(c) if c.is_ascii() && ALPHABET.contains(&(c as u8)) => hash.push(c),
            _ => {
                return Err(malformed_ref(
                    s,
                    "the hash must be two letters of ZPMQVRWSNKTXJBYH",
                ))
            }
        }
    }
    let tail = chars.as_str().trim_start();
    if !(tail.is_empty() || tail.starts_with('|')) {
        return Err(malformed_ref(
            s,
            "unexpected text after the hash (only '|text' may follow)",
        ));
    }
    Ok(LineRef { line, hash })
}

/// The content split as [`format()`] numbers it.
struct Snapshot<'a> {
    /// Line texts without `\n` and without a trailing `\r`.
    texts: Vec<&'a str>,
    /// Whether line i (0-based) had a `\r\n` terminator.
    crlf: Vec<bool>,
    /// The content ended with `\n` (so the last numbered line is virtual).
    final_newline: bool,
}

impl<'a> Snapshot<'a> {
    fn new(content: &'a str) -> Self {
        let mut texts = Vec::new();
        let mut crlf = Vec::new();
        let mut start = 0;
        for end in memchr::memchr_iter(b'\n', content.as_bytes()) {
            let raw = &content[start..end];
            match raw.strip_suffix('\r') {
                Some(t) => {
                    texts.push(t);
                    crlf.push(true);
                }
                None => {
                    texts.push(raw);
                    crlf.push(false);
                }
            }
            start = end + 1;
        }
        texts.push(&content[start..]);
        crlf.push(false);
        Snapshot {
            texts,
            crlf,
            final_newline: content.ends_with('\n'),
        }
    }

    /// Numbered lines (as in [`format()`]).
    fn numbered(&self) -> usize {
        self.texts.len()
    }

    /// Real lines: the numbered ones minus a virtual empty last line.
    fn real(&self) -> usize {
        if self.texts.last().is_some_and(|t| t.is_empty()) {
            self.texts.len() - 1
        } else {
            self.texts.len()
        }
    }

    fn hash_of(&self, line: usize, scratch: &mut String) -> u8 {
        hash_line_byte(line, self.texts[line - 1], scratch)
    }

    fn matches(&self, r: &LineRef, scratch: &mut String) -> bool {
        let text = self.texts[r.line - 1];
        let want = r.hash.as_bytes();
        hash_letters(hash_line_byte(r.line, text, scratch)) == want
            || hash_letters(legacy_hash_byte(r.line, text)) == want
    }

    fn fresh_ref(&self, line: usize, scratch: &mut String) -> String {
        let [hi, lo] = hash_letters(self.hash_of(line, scratch));
        format!("{line}#{}{}", char::from(hi), char::from(lo))
    }

    /// Lines (nearest to `near` first, at most `limit`) whose current hash
    /// is `hash`, excluding `except`. Legacy hashes are left out: hints are
    /// for refs copied from `format`, and each extra hash adds chance matches.
    fn lines_with_hash(&self, hash: &str, near: usize, except: usize, limit: usize) -> Vec<usize> {
        let mut scratch = String::new();
        let want = hash.as_bytes();
        let mut found: Vec<usize> = (1..=self.numbered())
            .filter(|&n| n != except)
            .filter(|&n| hash_letters(self.hash_of(n, &mut scratch)) == want)
            .collect();
        found.sort_by_key(|&n| (n.abs_diff(near), n));
        found.truncate(limit);
        found
    }
}

fn out_of_range_message(snap: &Snapshot<'_>, bad: &[&LineRef]) -> String {
    let mut msg = String::new();
    for r in bad {
        msg.push_str(&format!(
            "line {} does not exist (the file has {} lines as numbered by hashline format)",
            r.line,
            snap.numbered()
        ));
        let hits = snap.lines_with_hash(&r.hash, r.line, 0, 3);
        if hits.is_empty() {
            msg.push_str(&format!("; no line has the hash {}.\n", r.hash));
        } else {
            let refs: Vec<String> = hits
                .iter()
                .map(|&n| snap.fresh_ref(n, &mut String::new()))
                .collect();
            msg.push_str(&format!(
                "; the hash {} matches line {}: did you mean {}?\n",
                r.hash,
                hits.iter()
                    .map(|n| n.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                refs.join(" or ")
            ));
        }
    }
    msg.push_str("Re-read the file with hashline format and use the refs it shows.");
    msg
}

fn mismatch_error(snap: &Snapshot<'_>, stale: &[&LineRef]) -> EditError {
    let mut scratch = String::new();
    let mut remaps = BTreeMap::new();
    let mut fresh_pairs = Vec::new();
    for r in stale {
        let fresh = snap.fresh_ref(r.line, &mut scratch);
        remaps.insert(r.to_string(), fresh.clone());
        fresh_pairs.push((r.to_string(), fresh));
    }
    let stale_lines: Vec<usize> = {
        let mut v: Vec<usize> = stale.iter().map(|r| r.line).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let mut msg = format!(
        "{} line ref{} {} stale: the file changed since it was read. Current content \
         around each stale line (marked >>>):\n",
        stale_lines.len(),
        if stale_lines.len() == 1 { "" } else { "s" },
        if stale_lines.len() == 1 { "is" } else { "are" },
    );
    // Merge the ±CONTEXT windows so shared context is shown once.
    let mut windows: Vec<(usize, usize)> = Vec::new();
    for &n in &stale_lines {
        let lo = n.saturating_sub(CONTEXT).max(1);
        let hi = (n + CONTEXT).min(snap.numbered());
        match windows.last_mut() {
            Some(last) if lo <= last.1 + 1 => last.1 = last.1.max(hi),
            _ => windows.push((lo, hi)),
        }
    }
    for (i, &(lo, hi)) in windows.iter().enumerate() {
        if i > 0 {
            msg.push_str("    ...\n");
        }
        for n in lo..=hi {
            let mark = if stale_lines.binary_search(&n).is_ok() {
                ">>> "
            } else {
                "    "
            };
            msg.push_str(mark);
            msg.push_str(&snap.fresh_ref(n, &mut scratch));
            msg.push('|');
            msg.push_str(snap.texts[n - 1]);
            msg.push('\n');
        }
    }
    msg.push_str("Fresh refs:");
    for (old, fresh) in &fresh_pairs {
        msg.push_str(&format!(" {old} -> {fresh};"));
    }
    msg.pop();
    msg.push('\n');
    for r in stale {
        let moved = snap.lines_with_hash(&r.hash, r.line, r.line, 1);
        if let Some(&n) = moved.first() {
            msg.push_str(&format!(
                "(The hash {} of {} now matches line {}: {} — check whether that line moved.)\n",
                r.hash,
                r,
                n,
                snap.fresh_ref(n, &mut scratch)
            ));
        }
    }
    msg.push_str(
        "Check that the edit still fits the current lines, then retry with the fresh refs.",
    );
    EditError::HashlineMismatch {
        message: msg,
        remaps,
    }
}

fn validate_snapshot(snap: &Snapshot<'_>, refs: &[&LineRef]) -> Result<(), EditError> {
    let out_of_range: Vec<&LineRef> = refs
        .iter()
        .copied()
        .filter(|r| r.line == 0 || r.line > snap.numbered())
        .collect();
    if !out_of_range.is_empty() {
        return Err(EditError::invalid(out_of_range_message(
            snap,
            &out_of_range,
        )));
    }
    let mut scratch = String::new();
    let mut stale: Vec<&LineRef> = Vec::new();
    for r in refs.iter().copied() {
        if !snap.matches(r, &mut scratch) && !stale.contains(&r) {
            stale.push(r);
        }
    }
    if stale.is_empty() {
        Ok(())
    } else {
        Err(mismatch_error(snap, &stale))
    }
}

/// Checks that every ref names an existing line whose current (or legacy)
/// hash is the ref's hash.
///
/// Errors: any line outside `1..=N` (N as numbered by [`format()`]) ⇒
/// [`EditError::InvalidInput`] listing each such ref with a "did you mean"
/// hint (the lines whose hash is the given hash, nearest first); otherwise
/// any stale ref ⇒ [`EditError::HashlineMismatch`] whose message shows every
/// stale line (marked `>>>`) with ±2 lines of context in hashline format plus
/// the fresh refs, and whose `remaps` maps each stale ref (`"12#VK"`) to the
/// fresh ref of the same line (`"12#QX"`).
pub fn validate(content: &str, refs: &[LineRef]) -> Result<(), EditError> {
    let snap = Snapshot::new(content);
    let refs: Vec<&LineRef> = refs.iter().collect();
    validate_snapshot(&snap, &refs)
}

/// [`validate`] for refs given as strings: each is read with [`parse_ref`]
/// first (a malformed one ⇒ [`EditError::InvalidInput`]).
pub fn validate_strs(content: &str, refs: &[&str]) -> Result<(), EditError> {
    let parsed = refs
        .iter()
        .map(|s| parse_ref(s))
        .collect::<Result<Vec<_>, _>>()?;
    validate(content, &parsed)
}

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
/// [`parse_ref`], so the lenient forms work).
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

fn parse_edit_ref(s: &str, edit: usize, field: &str) -> Result<LineRef, EditError> {
    parse_ref(s).map_err(|e| EditError::invalid(format!("edit {edit}, {field}: {}", e.message())))
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
/// - a result equal to `content` ⇒ [`EditError::NoOp`].
///
/// Prefix rule: a prefix is exactly `N#HH|` (uppercase alphabet letters),
/// optionally behind the `>>> ` or four-space gutter of a mismatch message.
/// It is stripped when every non-empty sent line of that edit has one, or
/// when its hash equals the hash of the rest of the line at that line number
/// (a pasted, unedited line). So real content that merely looks like a
/// prefix is kept unless all the edit's lines look like that.
pub fn apply(content: &str, edits: &[HashlineEdit]) -> Result<String, EditError> {
    let snap = Snapshot::new(content);
    let real = snap.real();

    // Parse every ref, then validate them all at once.
    let mut parsed: Vec<(Option<LineRef>, Option<LineRef>)> = Vec::with_capacity(edits.len());
    for (i, edit) in edits.iter().enumerate() {
        let n = i + 1;
        parsed.push(match edit {
            HashlineEdit::Replace { pos, end, .. } => (
                Some(parse_edit_ref(pos, n, "pos")?),
                end.as_deref()
                    .map(|e| parse_edit_ref(e, n, "end"))
                    .transpose()?,
            ),
            HashlineEdit::Append { pos, .. } | HashlineEdit::Prepend { pos, .. } => (
                pos.as_deref()
                    .map(|p| parse_edit_ref(p, n, "pos"))
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
                        "edit {}: end (line {last}) is before pos (line {pos}); \
                         a range goes from pos down to end",
                        i + 1
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
