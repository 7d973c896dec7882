//! Placeholder comments (`// ... existing code ...`) and conflict markers.
//!
//! A placeholder is recognised by what its words say, not by its comment
//! syntax: every comment opener on a line (`//`, `#`, `/*`, `<!--`, `--`, `;`)
//! starts a candidate body, and a body is a placeholder when
//! - it has an ellipsis (`...` or `…`) followed by a placeholder phrase
//!   (`... existing code`, `... rest of the file`, `... (unchanged)`,
//!   `... keep existing`, `... same as before`), or
//! - all its words are placeholder vocabulary and they say that code was
//!   left out (`rest of the code`, `existing code`, `methods unchanged`,
//!   `omitted for brevity`; not wrapped prose such as `/// unchanged.`, nor a
//!   section heading such as `# Remaining tests` or `# rest of the tests are
//!   below`, which names no code noun).
//!
//! A line that is not a comment counts only when it consists of nothing but
//! an ellipsis and such a phrase (`... existing code ...`), so spreads such
//! as `...rest` or `...existing,` and Python's `...` body are never markers.

use super::splice::Window;
use super::{GuardViolation, ViolationKind};
use std::collections::BTreeMap;

const OPENERS: &[&str] = &["//", "#", "/*", "<!--", "--", ";"];
/// Longer lines are never taken for placeholders.
const MAX_LINE: usize = 1000;
/// How many occurrences of one opener per line start a candidate body.
const OPENINGS_PER_LINE: usize = 4;

/// Words that say "code was left out here" on their own.
const STRONG: &[&str] = &[
    "existing",
    "unchanged",
    "remaining",
    "omitted",
    "elided",
    "unmodified",
    "untouched",
    "snip",
    "snipped",
];

/// Words that may start the phrase after an ellipsis.
const FIRST: &[&str] = &[
    "existing",
    "rest",
    "the",
    "remaining",
    "unchanged",
    "omitted",
    "elided",
    "keep",
    "previous",
    "same",
    "other",
    "all",
    "code",
    "more",
    "snip",
    "snipped",
    "unmodified",
    "untouched",
    "original",
    "your",
    "everything",
];

/// Words a placeholder comment without an ellipsis may consist of.
const VOCAB: &[&str] = &[
    "existing",
    "unchanged",
    "remaining",
    "omitted",
    "elided",
    "unmodified",
    "untouched",
    "snip",
    "snipped",
    "rest",
    "of",
    "the",
    "code",
    "file",
    "function",
    "functions",
    "method",
    "methods",
    "class",
    "classes",
    "component",
    "implementation",
    "body",
    "content",
    "contents",
    "lines",
    "imports",
    "logic",
    "other",
    "remains",
    "is",
    "are",
    "stays",
    "stay",
    "for",
    "brevity",
    "here",
    "goes",
    "and",
    "props",
    "properties",
    "fields",
    "module",
    "tests",
    "handlers",
    "helpers",
    "original",
    "all",
    "everything",
    "else",
    "keep",
    "as",
    "same",
    "before",
    "above",
    "below",
    "previous",
    "previously",
];

fn words(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Nouns that say *what* was left out; a placeholder without an ellipsis
/// must name one, which keeps wrapped prose (`/// unchanged.`, `# The rest`)
/// from counting.
const NOUNS: &[&str] = &[
    "code",
    "file",
    "function",
    "functions",
    "method",
    "methods",
    "class",
    "classes",
    "component",
    "components",
    "implementation",
    "body",
    "content",
    "contents",
    "lines",
    "imports",
    "logic",
    "props",
    "properties",
    "fields",
    "module",
    "tests",
    "handlers",
    "helpers",
];

fn has_noun(words: &[String]) -> bool {
    words.iter().any(|w| NOUNS.contains(&w.as_str()))
}

/// A strong placeholder phrase among `words`; `after_ellipsis` also admits
/// the weaker ones (`same as before`, `previous code`, `keep …`, `more code`)
/// when they name what was left out or say "as before/above".
fn has_strong_phrase(words: &[String], after_ellipsis: bool) -> bool {
    let weak = || {
        words
            .iter()
            .any(|w| matches!(w.as_str(), "same" | "previous" | "keep" | "more"))
            && (has_noun(words)
                || words
                    .iter()
                    .any(|w| matches!(w.as_str(), "before" | "above" | "original")))
    };
    words.iter().any(|w| STRONG.contains(&w.as_str()))
        || words
            .windows(2)
            .any(|p| (p[0] == "rest" && p[1] == "of") || (p[0] == "the" && p[1] == "rest"))
        || after_ellipsis && weak()
}

/// The words of `body` when it holds an ellipsis next to a placeholder
/// phrase: a phrase right after an ellipsis (`... existing code`), or a
/// strong phrase opening the text before the first one (`rest of file ...`).
fn ellipsis_phrase(body: &str) -> Option<Vec<String>> {
    if !body.contains("...") {
        return None;
    }
    for (idx, seg) in body.split("...").enumerate() {
        let w = words(seg);
        let head = &w[..w.len().min(5)];
        if head
            .first()
            .is_some_and(|first| FIRST.contains(&first.as_str()))
            && has_strong_phrase(head, idx > 0)
        {
            return Some(words(body));
        }
    }
    None
}

/// Normalized key of a placeholder in a comment body.
fn comment_placeholder(body: &str) -> Option<String> {
    let body = body.replace('…', "...");
    if let Some(w) = ellipsis_phrase(&body) {
        return Some(w.join(" "));
    }
    let w = words(&body);
    if w.iter().all(|x| VOCAB.contains(&x.as_str())) && has_left_out_phrase(&w) {
        return Some(w.join(" "));
    }
    None
}

/// What code is called when a placeholder without an ellipsis says it was
/// left out. Narrower than [`NOUNS`]: `# Remaining tests` or `# rest of the
/// tests are below` head a section of real code, they do not replace one.
const CODE_NOUNS: &[&str] = &[
    "code",
    "file",
    "function",
    "functions",
    "class",
    "classes",
    "method",
    "methods",
    "implementation",
    "module",
    "component",
    "components",
    "body",
    "logic",
];

/// Adjectives that, next to a [`CODE_NOUNS`] word, say it was left out.
const LEFT_OUT: &[&str] = &[
    "existing",
    "unchanged",
    "remaining",
    "omitted",
    "elided",
    "unmodified",
    "untouched",
];

/// Whether `words` (of a comment without an ellipsis) say that code was left
/// out: `rest of [the] <code>`, `existing|unchanged|remaining|omitted <code>`
/// or `<code> unchanged|omitted…` (either order), `omitted for brevity`, or
/// `same as before` next to a code noun. A section heading such as
/// `# Remaining tests` names no code noun and does not count.
fn has_left_out_phrase(words: &[String]) -> bool {
    let code = |w: &String| CODE_NOUNS.contains(&w.as_str());
    let left_out = |w: &String| LEFT_OUT.contains(&w.as_str());
    let rest_of = (0..words.len()).any(|i| {
        if words[i] != "rest" || words.get(i + 1).is_none_or(|w| w != "of") {
            return false;
        }
        let next = match words.get(i + 2) {
            Some(w) if w == "the" => words.get(i + 3),
            other => other,
        };
        next.is_some_and(code)
    });
    rest_of
        || words
            .windows(2)
            .any(|p| (left_out(&p[0]) && code(&p[1])) || (code(&p[0]) && left_out(&p[1])))
        || words
            .windows(3)
            .any(|t| t[0] == "omitted" && t[1] == "for" && t[2] == "brevity")
        || words
            .windows(3)
            .any(|t| t[0] == "same" && t[1] == "as" && t[2] == "before")
            && words.iter().any(code)
}

/// Word stems of which every placeholder phrase contains one (each STRONG
/// word, `rest`, and the weak `same`/`previous`/`keep`/`more`): a cheap
/// filter that spares the word split for almost every line.
const STEMS: &[&str] = &[
    "exist", "unchang", "remain", "omit", "elid", "unmodif", "untouch", "snip", "rest", "same",
    "previous", "keep", "more",
];

fn mentions_placeholder_word(line: &str) -> bool {
    let lower = if line.is_ascii() {
        line.to_ascii_lowercase()
    } else {
        line.to_lowercase()
    };
    STEMS.iter().any(|s| lower.contains(s))
}

/// Normalized key of the placeholder on `line`, if it has one.
pub(super) fn placeholder_key(line: &str) -> Option<String> {
    // Placeholders are short comment lines; skipping very long lines (minified
    // code) and looking at a few openers per line keeps the scan linear.
    if line.len() > MAX_LINE || !mentions_placeholder_word(line) {
        return None;
    }
    for opener in OPENERS {
        for (i, _) in line.match_indices(opener).take(OPENINGS_PER_LINE) {
            let body = &line[i + opener.len()..];
            if let Some(k) = comment_placeholder(body) {
                return Some(k);
            }
        }
    }
    // A bare placeholder line: only an ellipsis and words, e.g. `... existing code ...`.
    let t = line
        .trim()
        .trim_start_matches('*')
        .trim()
        .replace('…', "...");
    if t.starts_with("...")
        && t.chars()
            .all(|c| c.is_alphanumeric() || c.is_whitespace() || ".()'-".contains(c))
    {
        if let Some(w) = ellipsis_phrase(&t) {
            if w.len() >= 2 {
                return Some(w.join(" "));
            }
        }
    }
    None
}

/// Whether some key occurs on more lines of the windows in `updated` than
/// in `original`. Every line outside the windows is a line of both texts,
/// so this says exactly whether some key occurs more often in `updated`
/// than in `original`, at the cost of the windows' lines.
fn grew<K: Ord>(
    original: &str,
    updated: &str,
    windows: &[Window],
    key: impl Fn(&str) -> Option<K>,
) -> bool {
    let mut delta: BTreeMap<K, isize> = BTreeMap::new();
    for w in windows {
        for line in original[w.old.clone()].lines() {
            if let Some(k) = key(line) {
                *delta.entry(k).or_default() -= 1;
            }
        }
        for line in updated[w.new.clone()].lines() {
            if let Some(k) = key(line) {
                *delta.entry(k).or_default() += 1;
            }
        }
    }
    delta.values().any(|&d| d > 0)
}

/// Whether [`leaked_placeholders`] can find a leak in an edit whose changed
/// lines are `windows`: `false` exactly when it would find none.
pub(super) fn placeholders_grew(original: &str, updated: &str, windows: &[Window]) -> bool {
    grew(original, updated, windows, placeholder_key)
}

/// Whether [`new_conflict_markers`] can find a new marker in an edit whose
/// changed lines are `windows`: `false` only when it would find none (a
/// `=======` line added to a prose document counts, though it may turn out
/// to be a heading underline).
pub(super) fn conflict_markers_grew(original: &str, updated: &str, windows: &[Window]) -> bool {
    grew(original, updated, windows, conflict_marker)
}

fn shown(line: &str) -> String {
    let t = line.trim();
    let mut s: String = t.chars().take(80).collect();
    if t.chars().count() > 80 {
        s.push('…');
    }
    s
}

pub(super) fn leaked_placeholders(original: &str, updated: &str) -> Option<GuardViolation> {
    let mut before: BTreeMap<String, usize> = BTreeMap::new();
    for line in original.lines() {
        if let Some(k) = placeholder_key(line) {
            *before.entry(k).or_default() += 1;
        }
    }
    let mut after: BTreeMap<String, Vec<(usize, &str)>> = BTreeMap::new();
    for (n, line) in updated.lines().enumerate() {
        if let Some(k) = placeholder_key(line) {
            after.entry(k).or_default().push((n + 1, line));
        }
    }
    let mut leaked: Vec<(usize, &str)> = Vec::new();
    for (key, at) in &after {
        let had = before.get(key).copied().unwrap_or(0);
        if at.len() > had {
            // The occurrences beyond the original's count are the new ones;
            // which of them is "new" is unknowable, so name the last ones.
            leaked.extend(&at[had..]);
        }
    }
    if leaked.is_empty() {
        return None;
    }
    leaked.sort_unstable();
    let listed: Vec<String> = leaked
        .iter()
        .take(10)
        .map(|(n, l)| format!("line {n}: `{}`", shown(l)))
        .collect();
    Some(GuardViolation {
        kind: ViolationKind::MarkerLeak,
        message: format!(
            "the result contains {} placeholder comment{} that the original did not have ({}). \
             A placeholder stands for code that would be deleted: send the real lines instead \
             (or a targeted edit that leaves them out of the replaced text).",
            leaked.len(),
            if leaked.len() == 1 { "" } else { "s" },
            listed.join("; ")
        ),
    })
}

/// Which conflict marker a line is, if any.
fn conflict_marker(line: &str) -> Option<&'static str> {
    let l = line.strip_suffix('\r').unwrap_or(line);
    let is = |m: &str| l == m || l.strip_prefix(m).is_some_and(|r| r.starts_with(' '));
    if is("<<<<<<<") {
        Some("<<<<<<<")
    } else if is(">>>>>>>") {
        Some(">>>>>>>")
    } else if is("|||||||") {
        Some("|||||||")
    } else if l == "=======" {
        Some("=======")
    } else {
        None
    }
}

/// Whether `path` names a prose document (Markdown, reStructuredText, plain
/// text), where a line of seven `=` underlines a heading.
pub(super) fn is_prose_document(path: &str) -> bool {
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
    name.rsplit_once('.').is_some_and(|(_, ext)| {
        matches!(
            ext.to_ascii_lowercase().as_str(),
            "md" | "markdown" | "mdx" | "rst" | "txt"
        )
    })
}

/// New conflict markers of `updated`. In a prose document (`prose`) a
/// `=======` line is a heading underline unless `updated` also has a
/// `<<<<<<<` or `>>>>>>>` marker, i.e. an actual conflict block.
pub(super) fn new_conflict_markers(
    original: &str,
    updated: &str,
    prose: bool,
) -> Option<GuardViolation> {
    let mut before: BTreeMap<&str, usize> = BTreeMap::new();
    for line in original.lines() {
        if let Some(m) = conflict_marker(line) {
            *before.entry(m).or_default() += 1;
        }
    }
    let mut after: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (n, line) in updated.lines().enumerate() {
        if let Some(m) = conflict_marker(line) {
            after.entry(m).or_default().push(n + 1);
        }
    }
    if prose && !after.contains_key("<<<<<<<") && !after.contains_key(">>>>>>>") {
        after.remove("=======");
    }
    let mut new: Vec<(usize, &str)> = Vec::new();
    for (m, at) in &after {
        let had = before.get(m).copied().unwrap_or(0);
        if at.len() > had {
            new.extend(at[had..].iter().map(|&n| (n, *m)));
        }
    }
    if new.is_empty() {
        return None;
    }
    new.sort_unstable();
    let listed: Vec<String> = new
        .iter()
        .take(10)
        .map(|(n, m)| format!("line {n}: `{m}`"))
        .collect();
    Some(GuardViolation {
        kind: ViolationKind::ConflictMarker,
        message: format!(
            "the result adds merge conflict marker{} ({}): resolve the conflict and send only \
             the resolved text.",
            if new.len() == 1 { "" } else { "s" },
            listed.join("; ")
        ),
    })
}
