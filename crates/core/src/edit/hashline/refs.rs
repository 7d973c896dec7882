//! `LINE#HH` references and their lenient parser.

use super::hash::ALPHABET;
use crate::edit::error::EditError;
use std::fmt;

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

/// Why a ref could not be read, and what it still says.
pub(super) struct BadRef {
    /// The reason, as shown after `malformed line ref "…": `.
    pub why: &'static str,
    /// The hash the ref spells after its `#`, when only its line number is
    /// unusable (missing, not a number, zero, too large): with the content
    /// at hand it can say which lines were meant.
    pub hash: Option<String>,
    /// The line number the ref seems to mean, to list the nearest matching
    /// lines first.
    pub near: usize,
}

impl BadRef {
    /// The message without content: what is wrong and the expected form.
    pub(super) fn message(&self, s: &str) -> String {
        let shown: String = s.chars().take(80).collect();
        format!(
            "malformed line ref {shown:?}: {}. Expected LINE#HH, e.g. 12#VK: the 1-based \
             line number, '#', and the two-letter hash shown by hashline format",
            self.why
        )
    }
}

/// The two hash letters of `s` after `#` (leniently, as [`parse_ref`] reads
/// them), when that is how `s` ends.
fn hash_after_hash_sign(s: &str) -> Option<String> {
    let (_, after) = s.split_once('#')?;
    let mut chars = after.trim_start().chars();
    let mut hash = String::with_capacity(2);
    for _ in 0..2 {
        let c = chars.next()?.to_ascii_uppercase();
        if !(c.is_ascii() && ALPHABET.contains(&(c as u8))) {
            return None;
        }
        hash.push(c);
    }
    let tail = chars.as_str().trim_start();
    (tail.is_empty() || tail.starts_with('|')).then_some(hash)
}

/// [`parse_ref`] with the failure kept structured.
pub(super) fn read_ref(s: &str) -> Result<LineRef, BadRef> {
    let rest = s.trim_start_matches(|c: char| c.is_whitespace() || matches!(c, '>' | '+' | '-'));
    let bad_line = |why: &'static str, near: usize| BadRef {
        why,
        hash: hash_after_hash_sign(rest),
        near,
    };
    let digits_len = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits_len == 0 {
        // `line 12#VK`, `L12#VK`: a number before the `#` is still a clue.
        let before = rest.split('#').next().unwrap_or("");
        let near = before
            .split(|c: char| !c.is_ascii_digit())
            .find_map(|d| d.parse().ok())
            .unwrap_or(1);
        return Err(bad_line("no line number", near));
    }
    let Ok(line) = rest[..digits_len].parse::<usize>() else {
        return Err(bad_line("line number too large", usize::MAX));
    };
    if line == 0 {
        return Err(bad_line("line numbers start at 1", 1));
    }
    let rest = rest[digits_len..].trim_start();
    let Some(rest) = rest.strip_prefix('#') else {
        return Err(bad_line("no '#' after the line number", line));
    };
    let rest = rest.trim_start();
    let mut chars = rest.chars();
    let mut hash = String::with_capacity(2);
    let bad = |why: &'static str| BadRef {
        why,
        hash: None,
        near: line,
    };
    for _ in 0..2 {
        match chars.next().map(|c| c.to_ascii_uppercase()) {
            Some(c) if c.is_ascii() && ALPHABET.contains(&(c as u8)) => hash.push(c),
            _ => return Err(bad("the hash must be two letters of ZPMQVRWSNKTXJBYH")),
        }
    }
    let tail = chars.as_str().trim_start();
    if !(tail.is_empty() || tail.starts_with('|')) {
        return Err(bad(
            "unexpected text after the hash (only '|text' may follow)",
        ));
    }
    Ok(LineRef { line, hash })
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
/// Without the content it cannot say which line a hash names; the
/// functions that take refs as text together with the content
/// ([`validate_strs`](super::validate_strs), [`apply`](super::apply())) add
/// a "did you mean `N#HH`" hint to a bad line number whenever the hash
/// names a line.
pub fn parse_ref(s: &str) -> Result<LineRef, EditError> {
    read_ref(s).map_err(|bad| EditError::invalid(bad.message(s)))
}
