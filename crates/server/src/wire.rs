//! The JSON shapes shared by the HTTP routes and the CLI's `--json` mode, and
//! their one-line conversions to and from core types.
//!
//! Keeping both faces on these types is what makes `POST /api/edit` and
//! `coderig edit --json` accept and answer exactly the same documents.

use crate::ApiError;
use coderig::{Applied, ApplyOptions, Edit, Match};
use serde::{Deserialize, Serialize};

fn yes() -> bool {
    true
}

/// Body of `POST /api/edit` and stdin of `coderig edit --json`.
///
/// Either one edit (`old` + `new`, optional `replace_all`) or a batch
/// (`edits`, applied atomically by [`coderig::apply_edits`]); giving both or
/// neither is `invalid_input`. Unknown fields are rejected.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EditRequest {
    /// The file content the edit applies to.
    pub content: String,
    /// Text to find (single-edit form).
    #[serde(default)]
    pub old: Option<String>,
    /// Replacement text (single-edit form).
    #[serde(default)]
    pub new: Option<String>,
    /// Replace every occurrence instead of refusing several (single-edit form).
    #[serde(default)]
    pub replace_all: bool,
    /// Several edits, all located against `content`, all or nothing.
    #[serde(default)]
    pub edits: Option<Vec<Edit>>,
    /// File path, only used by the guards to pick a language.
    #[serde(default)]
    pub path: Option<String>,
    /// Run the guards (default `true`).
    #[serde(default = "yes")]
    pub guards: bool,
}

impl EditRequest {
    /// Applies the request with the core.
    ///
    /// Guarantees: exactly the core's answer ([`coderig::apply_edit_with`] for
    /// the single form, [`coderig::apply_edits`] for `edits`); a request that
    /// mixes or lacks both forms is an `invalid_input` [`ApiError`].
    pub fn apply(&self) -> Result<EditResponse, ApiError> {
        let opts = ApplyOptions {
            path: self.path.clone(),
            guards: self.guards,
        };
        let applied = match (&self.old, &self.new, &self.edits) {
            (Some(old), Some(new), None) => {
                let edit = Edit {
                    old: old.clone(),
                    new: new.clone(),
                    replace_all: self.replace_all,
                };
                coderig::apply_edit_with(&self.content, &edit, &opts)?
            }
            (None, None, Some(edits)) if !self.replace_all => {
                coderig::apply_edits(&self.content, edits, &opts)?
            }
            (None, None, Some(_)) => {
                return Err(ApiError::invalid_input(
                    "`replace_all` belongs inside each entry of `edits`, not next to it",
                ))
            }
            (_, _, Some(_)) => {
                return Err(ApiError::invalid_input(
                    "send either `old` + `new` or `edits`, not both",
                ))
            }
            (Some(_), None, None) | (None, Some(_), None) => {
                return Err(ApiError::invalid_input(
                    "`old` and `new` go together: send both (an empty `new` deletes)",
                ))
            }
            (None, None, None) => {
                return Err(ApiError::invalid_input(
                    "nothing to apply: send `old` + `new`, or `edits: [{old, new}]`",
                ))
            }
        };
        Ok(EditResponse::from(applied))
    }
}

/// A successful edit: `{"ok": true, "content", "tier", "replacements"}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EditResponse {
    /// Always `true`.
    pub ok: bool,
    /// The edited content.
    pub content: String,
    /// The weakest tier used: `exact`, `whitespace`, `unicode` or `fuzzy`.
    pub tier: coderig::Tier,
    /// Number of spans replaced.
    pub replacements: usize,
}

impl From<Applied> for EditResponse {
    fn from(a: Applied) -> Self {
        EditResponse {
            ok: true,
            content: a.content,
            tier: a.tier,
            replacements: a.replacements,
        }
    }
}

/// Body of `POST /api/locate`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LocateRequest {
    /// Text searched.
    pub content: String,
    /// Text looked for.
    pub needle: String,
}

/// [`coderig::Match`] as JSON. Offsets are **UTF-8 byte offsets** into
/// `content` (`content.as_bytes()[start..end]` is the match); `start_line`
/// and `end_line` are the 1-based inclusive lines the match covers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LocateResponse {
    /// Always `true` (a `not_found` or `ambiguous` kind is an answer, not an error).
    pub ok: bool,
    /// `exact`, `whitespace`, `unicode`, `fuzzy`, `ambiguous` or `not_found`.
    pub kind: coderig::MatchKind,
    /// Byte offset of the match start, when found.
    pub start: Option<usize>,
    /// Byte offset just past the match, when found.
    pub end: Option<usize>,
    /// First line of the match (1-based), when found.
    pub start_line: Option<usize>,
    /// Last line of the match (1-based, inclusive), when found.
    pub end_line: Option<usize>,
    /// Similarity in `[0, 1]`, when found.
    pub score: Option<f64>,
    /// Number of candidate locations (1 found, ≥ 2 ambiguous, 0 not found).
    pub count: usize,
    /// `[first_line, last_line]` of each candidate, when ambiguous.
    pub candidates: Vec<(usize, usize)>,
    /// The closest window, when not found and one scored at all.
    pub nearest: Option<coderig::Nearest>,
}

/// 1-based number of the line holding byte `offset` of `content`.
fn line_of(content: &str, offset: usize) -> usize {
    1 + content.as_bytes()[..offset]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
}

impl LocateResponse {
    /// The JSON form of `m`, a [`coderig::locate`] result over `content`.
    pub fn new(content: &str, m: Match) -> Self {
        let (start, end) = match &m.span {
            Some(span) => (Some(span.start), Some(span.end)),
            None => (None, None),
        };
        let start_line = start.map(|s| line_of(content, s));
        // The last byte of the span decides its last line (a span ending in
        // `\n` does not reach into the next line).
        let end_line = m
            .span
            .as_ref()
            .map(|span| line_of(content, span.end.max(span.start + 1) - 1));
        LocateResponse {
            ok: true,
            kind: m.kind,
            start,
            end,
            start_line,
            end_line,
            score: m.score,
            count: m.count,
            candidates: m.candidates,
            nearest: m.nearest,
        }
    }
}

/// Body of `POST /api/hashline/format`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HashlineFormatRequest {
    /// Content to show with `LINE#HH|` prefixes.
    pub content: String,
}

/// Body of `POST /api/hashline/apply`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HashlineApplyRequest {
    /// Content the refs were read from.
    pub content: String,
    /// `{op: replace|append|prepend, pos?, end?, lines}` edits.
    pub edits: Vec<coderig::hashline::HashlineEdit>,
}

/// Body of `POST /api/hashline/validate`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HashlineValidateRequest {
    /// Content the refs were read from.
    pub content: String,
    /// `LINE#HH` refs (lenient forms accepted).
    pub refs: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn request(body: Value) -> EditRequest {
        serde_json::from_value(body).unwrap()
    }

    #[test]
    fn edit_request_forms_and_their_refusals() {
        let ok = |v: Value| request(v).apply().unwrap();
        let refused = |v: Value| request(v).apply().unwrap_err();
        let single = ok(json!({"content": "a b", "old": "b", "new": "c"}));
        assert_eq!((single.content.as_str(), single.replacements), ("a c", 1));
        let batch = ok(
            json!({"content": "a b", "edits": [{"old": "a", "new": "x"}, {"old": "b", "new": "y"}]}),
        );
        assert_eq!((batch.content.as_str(), batch.replacements), ("x y", 2));
        let all = ok(json!({"content": "b b", "old": "b", "new": "c", "replace_all": true}));
        assert_eq!(all.content, "c c");
        let cases = [
            (json!({"content": "a"}), "invalid_input"),
            (json!({"content": "a", "old": "a"}), "invalid_input"),
            (json!({"content": "a", "new": "a"}), "invalid_input"),
            (
                json!({"content": "a", "old": "a", "new": "b", "edits": []}),
                "invalid_input",
            ),
            (
                json!({"content": "a", "replace_all": true, "edits": [{"old": "a", "new": "b"}]}),
                "invalid_input",
            ),
            (json!({"content": "a", "edits": []}), "invalid_input"),
            (json!({"content": "a", "old": "z", "new": "b"}), "not_found"),
            (
                json!({"content": "a a", "old": "a", "new": "b"}),
                "ambiguous",
            ),
            (json!({"content": "a", "old": "a", "new": "a"}), "no_op"),
        ];
        for (body, kind) in cases {
            assert_eq!(refused(body.clone()).kind, kind, "{body}");
        }
    }

    #[test]
    fn guards_default_on_and_can_be_turned_off() {
        let content = "import os\nimport sys\nprint(os, sys)\n";
        let body = json!({"content": content, "old": "import os\nimport sys\n", "new": "", "path": "a.py"});
        assert_eq!(request(body.clone()).apply().unwrap_err().kind, "guard");
        let mut off = body;
        off["guards"] = json!(false);
        assert_eq!(request(off).apply().unwrap().content, "print(os, sys)\n");
    }

    #[test]
    fn locate_lines_follow_byte_offsets() {
        let content = "é1\nb2\nc3\n";
        type Pair = Option<(usize, usize)>;
        let cases: [(&str, Pair, Pair); 4] = [
            ("é1", Some((0, 3)), Some((1, 1))),
            ("b2\n", Some((4, 7)), Some((2, 2))),
            ("b2\nc3", Some((4, 9)), Some((2, 3))),
            ("zzzz", None, None),
        ];
        for (needle, span, lines) in cases {
            let r = LocateResponse::new(content, coderig::locate(content, needle));
            assert_eq!(r.start.zip(r.end), span, "{needle:?}");
            assert_eq!(r.start_line.zip(r.end_line), lines, "{needle:?}");
        }
    }
}
