//! Checking refs against a snapshot of the content, and the messages that
//! tell the model which refs to use instead.

use super::hash::{hash_letters, hash_line_byte, legacy_hash_byte};
use super::refs::{read_ref, LineRef};
use crate::edit::error::EditError;
use std::collections::BTreeMap;

/// How many context lines around a stale line a mismatch message shows.
const CONTEXT: usize = 2;

/// The content split as [`format()`] numbers it.
pub(super) struct Snapshot<'a> {
    /// Line texts without `\n` and without a trailing `\r`.
    pub texts: Vec<&'a str>,
    /// Whether line i (0-based) had a `\r\n` terminator.
    pub crlf: Vec<bool>,
    /// The content ended with `\n` (so the last numbered line is virtual).
    pub final_newline: bool,
}

impl<'a> Snapshot<'a> {
    pub(super) fn new(content: &'a str) -> Self {
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
    pub(super) fn real(&self) -> usize {
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

/// What a ref's `hash` says when its line number is unusable: the lines
/// (nearest to `near` first, at most 3) whose current hash it is, as refs to
/// use instead — or that no line has it.
fn hash_hint(snap: &Snapshot<'_>, hash: &str, near: usize) -> String {
    let hits = snap.lines_with_hash(hash, near, 0, 3);
    if hits.is_empty() {
        return format!("no line has the hash {hash}.");
    }
    let lines: Vec<String> = hits.iter().map(|n| n.to_string()).collect();
    let refs: Vec<String> = hits
        .iter()
        .map(|&n| snap.fresh_ref(n, &mut String::new()))
        .collect();
    format!(
        "the hash {hash} matches line {}: did you mean {}?",
        lines.join(", "),
        refs.join(" or ")
    )
}

fn out_of_range_message(snap: &Snapshot<'_>, bad: &[&LineRef]) -> String {
    let mut msg = String::new();
    for r in bad {
        if r.line == 0 {
            msg.push_str("line 0 does not exist (line numbers start at 1)");
        } else {
            msg.push_str(&format!(
                "line {} does not exist (the file has {} lines as numbered by hashline format)",
                r.line,
                snap.numbered()
            ));
        }
        msg.push_str("; ");
        msg.push_str(&hash_hint(snap, &r.hash, r.line));
        msg.push('\n');
    }
    msg.push_str("Re-read the file with hashline format and use the refs it shows.");
    msg
}

/// [`parse_ref`] against `snap`: a ref whose line number is unusable but
/// whose hash is readable also gets the [`hash_hint`].
pub(super) fn parse_ref_in(snap: &Snapshot<'_>, s: &str) -> Result<LineRef, EditError> {
    read_ref(s).map_err(|bad| {
        let mut msg = bad.message(s);
        if let Some(hash) = &bad.hash {
            msg.push_str(". In this file, ");
            msg.push_str(&hash_hint(snap, hash, bad.near));
        }
        EditError::invalid(msg)
    })
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

pub(super) fn validate_snapshot(snap: &Snapshot<'_>, refs: &[&LineRef]) -> Result<(), EditError> {
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
/// hint (the lines whose hash is the given hash, nearest first; line 0 is
/// said to be no line number); otherwise
/// any stale ref ⇒ [`EditError::HashlineMismatch`] whose message shows every
/// stale line (marked `>>>`) with ±2 lines of context in hashline format plus
/// the fresh refs, and whose `remaps` maps each stale ref (`"12#VK"`) to the
/// fresh ref of the same line (`"12#QX"`).
///
/// [`format()`]: super::format
pub fn validate(content: &str, refs: &[LineRef]) -> Result<(), EditError> {
    let snap = Snapshot::new(content);
    let refs: Vec<&LineRef> = refs.iter().collect();
    validate_snapshot(&snap, &refs)
}

/// [`validate`] for refs given as strings: each is read with [`parse_ref`]
/// first. A malformed one ⇒ [`EditError::InvalidInput`]; when only its line
/// number is unusable (zero, missing, not a number, too large: `0#VK`,
/// `line#VK`) and its hash names lines of `content`, the message ends with
/// the same "did you mean `N#HH`" hint as an out-of-range line.
///
/// [`parse_ref`]: super::parse_ref
pub fn validate_strs(content: &str, refs: &[&str]) -> Result<(), EditError> {
    let snap = Snapshot::new(content);
    let parsed = refs
        .iter()
        .map(|s| parse_ref_in(&snap, s))
        .collect::<Result<Vec<_>, _>>()?;
    let parsed: Vec<&LineRef> = parsed.iter().collect();
    validate_snapshot(&snap, &parsed)
}
