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
