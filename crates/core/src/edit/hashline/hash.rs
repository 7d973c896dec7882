//! The line hash, its two-letter spelling, and [`format()`].

use unicode_properties::{GeneralCategoryGroup, UnicodeGeneralCategory};

/// The sixteen letters a hash is written with; index = nibble value.
pub const ALPHABET: &[u8; 16] = b"ZPMQVRWSNKTXJBYH";

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
pub(super) fn hash_line_byte(line_no: usize, text: &str, scratch: &mut String) -> u8 {
    let cleaned = if memchr::memchr(b'\r', text.as_bytes()).is_some() {
        scratch.clear();
        scratch.extend(text.chars().filter(|&c| c != '\r'));
        scratch.as_str()
    } else {
        text
    };
    hash_cleaned(line_no, trim_js_end(cleaned))
}

pub(super) fn legacy_hash_byte(line_no: usize, text: &str) -> u8 {
    let cleaned: String = text.chars().filter(|&c| !is_js_whitespace(c)).collect();
    hash_cleaned(line_no, &cleaned)
}

pub(super) fn hash_letters(byte: u8) -> [u8; 2] {
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
///
/// [`validate`]: super::validate
/// [`apply`]: super::apply()
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
