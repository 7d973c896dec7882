//! The edit capability: `locate`, `applyEdit`, `applyEdits`, `checkGuards`
//! and the file helpers `editFile`, `editsFile`, `hashlineEditFile`.
//!
//! Offsets are UTF-16 code units, the unit of a JavaScript string:
//! `content.slice(m.start, m.end)` is the match, also when astral characters
//! (emoji) come before it. Line numbers are 1-based and inclusive.

use crate::arena::nullable;
use crate::errors::to_js_error;
use coderig::{EditError, GuardViolation, MatchKind, ViolationKind};
use napi::bindgen_prelude::{Either, Null};
use napi::Env;
use napi_derive::napi;
use serde_json::Value;
use std::ops::Range;
use std::path::Path;

/// A count or offset as a JS number. A V8 string holds fewer than 2^30
/// UTF-16 units, so every offset, line number and count derived from one
/// fits; saturating keeps the conversion total all the same.
pub(crate) fn js_count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The byte span `span` of `content` as UTF-16 offsets `(start, end)`.
fn utf16_span(content: &str, span: &Range<usize>) -> (usize, usize) {
    let start = content[..span.start].encode_utf16().count();
    (start, start + content[span.clone()].encode_utf16().count())
}

fn match_kind(kind: MatchKind) -> &'static str {
    match kind {
        MatchKind::Exact => "exact",
        MatchKind::Whitespace => "whitespace",
        MatchKind::Unicode => "unicode",
        MatchKind::Fuzzy => "fuzzy",
        MatchKind::Ambiguous => "ambiguous",
        MatchKind::NotFound => "not_found",
    }
}

/// The closest window when nothing qualified.
#[napi(object)]
pub struct Nearest {
    /// First line (1-based).
    pub first_line: u32,
    /// Last line (1-based, inclusive).
    pub last_line: u32,
    /// Similarity in `[0, 1]`.
    pub score: f64,
}

/// Where `locate` found the needle, or why it did not.
#[napi(object, use_nullable = true)]
pub struct Match {
    /// The tier that found the one location, or `ambiguous` / `not_found`.
    #[napi(ts_type = "'exact' | 'whitespace' | 'unicode' | 'fuzzy' | 'ambiguous' | 'not_found'")]
    pub kind: String,
    /// UTF-16 offset of the match in `content`; `null` unless found.
    pub start: Option<u32>,
    /// UTF-16 offset just past the match; `null` unless found.
    pub end: Option<u32>,
    /// Similarity in `[0, 1]` (1 outside the fuzzy tier); `null` unless found.
    pub score: Option<f64>,
    /// Candidate locations: 1 when found, ≥ 2 when ambiguous, 0 when not found.
    pub count: u32,
    /// 1-based inclusive line ranges of the candidates, when ambiguous.
    #[napi(ts_type = "Array<[firstLine: number, lastLine: number]>")]
    pub candidates: Vec<Vec<u32>>,
    /// The closest window, when not found and one scored at all.
    pub nearest: Option<Nearest>,
}

/// Finds where `needle` is in `content`, tier by tier (exact, whitespace,
/// unicode, fuzzy). Two or more locations at the first tier that finds any
/// give `kind: 'ambiguous'` with their line ranges in `candidates`; an empty
/// needle is `not_found` with `count` 0. Never throws for string inputs.
#[napi]
pub fn locate(content: String, needle: String) -> Match {
    let m = coderig::locate(&content, &needle);
    let span = m.span.as_ref().map(|s| utf16_span(&content, s));
    Match {
        kind: match_kind(m.kind).to_owned(),
        start: span.map(|(start, _)| js_count(start)),
        end: span.map(|(_, end)| js_count(end)),
        score: m.score,
        count: js_count(m.count),
        candidates: m
            .candidates
            .iter()
            .map(|&(first, last)| vec![js_count(first), js_count(last)])
            .collect(),
        nearest: m.nearest.map(|n| Nearest {
            first_line: js_count(n.first_line),
            last_line: js_count(n.last_line),
            score: n.score,
        }),
    }
}

/// A successful application.
#[napi(object)]
pub struct Applied {
    /// The new content.
    pub content: String,
    /// The weakest tier any edit needed.
    #[napi(ts_type = "'exact' | 'whitespace' | 'unicode' | 'fuzzy'")]
    pub tier: String,
    /// Number of spans replaced.
    pub replacements: u32,
}

impl From<coderig::Applied> for Applied {
    fn from(a: coderig::Applied) -> Self {
        Applied {
            content: a.content,
            tier: a.tier.as_str().to_owned(),
            replacements: js_count(a.replacements),
        }
    }
}

// Every optional field of an options object takes `null` as "not set", as
// `undefined` is: napi itself maps only `undefined` to `None` in an object.

/// Options of `applyEdit` / `editFile`.
#[napi(object)]
#[derive(Default)]
pub struct ApplyEditOptions {
    /// Replace every non-overlapping occurrence found at the winning tier
    /// instead of refusing several as ambiguous (default `false`).
    pub replace_all: Option<Either<bool, Null>>,
    /// Path of the file; picks the import syntax the guards check.
    pub path: Option<Either<String, Null>>,
    /// Run the guards on the result (default `true`).
    pub guards: Option<Either<bool, Null>>,
}

/// Options of `applyEdits` / `editsFile`.
#[napi(object)]
#[derive(Default)]
pub struct ApplyEditsOptions {
    /// Path of the file; picks the import syntax the guards check.
    pub path: Option<Either<String, Null>>,
    /// Run the guards on the result (default `true`).
    pub guards: Option<Either<bool, Null>>,
}

/// One edit of `applyEdits` / `editsFile` (an `[old, new]` pair works too).
/// Edits are read as JSON and checked field by field, so a malformed one is
/// an `INVALID_INPUT` naming the field; this struct names the shape in
/// `index.d.ts`.
#[napi(object)]
pub struct EditInput {
    /// Text to find (must not be empty).
    pub old: String,
    /// Replacement text (taken literally: a `$` is a `$`).
    pub new: String,
    /// Replace every occurrence found at the winning tier (default `false`).
    pub replace_all: Option<Either<bool, Null>>,
}

fn apply_options(
    path: Option<Either<String, Null>>,
    guards: Option<Either<bool, Null>>,
) -> coderig::ApplyOptions {
    coderig::ApplyOptions {
        path: nullable(path),
        guards: nullable(guards).unwrap_or(true),
    }
}

fn split_options(
    options: Option<ApplyEditOptions>,
    old: String,
    new: String,
) -> (coderig::Edit, coderig::ApplyOptions) {
    let o = options.unwrap_or_default();
    (
        coderig::Edit {
            old,
            new,
            replace_all: nullable(o.replace_all).unwrap_or(false),
        },
        apply_options(o.path, o.guards),
    )
}

/// "a number", "null", … for messages about a JS value of the wrong type.
pub(crate) fn describe(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The edits of `applyEdits`: `{old, new, replaceAll?}` objects or
/// `[old, new]` pairs. Read as JSON so that a malformed edit is an
/// `INVALID_INPUT` naming the edit (1-based, as the core's messages do) and
/// the field, instead of napi's "none of these types".
fn to_edits(edits: Value) -> Result<Vec<coderig::Edit>, EditError> {
    let Value::Array(edits) = edits else {
        return Err(EditError::invalid(format!(
            "edits must be an array of {{old, new, replaceAll?}} objects or [old, new] pairs, got {}",
            describe(&edits)
        )));
    };
    edits
        .into_iter()
        .enumerate()
        .map(|(i, edit)| to_edit(i + 1, edit))
        .collect()
}

fn to_edit(n: usize, edit: Value) -> Result<coderig::Edit, EditError> {
    let invalid =
        |field: &str, why: String| EditError::invalid(format!("edit {n}, {field}: {why}"));
    match edit {
        Value::Array(pair) => match <[Value; 2]>::try_from(pair) {
            Ok([Value::String(old), Value::String(new)]) => Ok(coderig::Edit {
                old,
                new,
                replace_all: false,
            }),
            Ok([old, new]) => {
                let (at, bad) = if old.is_string() { (1, new) } else { (0, old) };
                Err(invalid(
                    &format!("[{at}]"),
                    format!("must be a string, got {}", describe(&bad)),
                ))
            }
            Err(pair) => Err(EditError::invalid(format!(
                "edit {n}: a pair must be [old, new], got {} elements",
                pair.len()
            ))),
        },
        Value::Object(mut fields) => {
            if let Some(unknown) = fields
                .keys()
                .find(|k| !matches!(k.as_str(), "old" | "new" | "replaceAll"))
            {
                return Err(invalid(
                    unknown,
                    "unknown field; an edit takes only old, new, replaceAll".to_owned(),
                ));
            }
            let mut text = |field: &str| match fields.remove(field) {
                Some(Value::String(s)) => Ok(s),
                None => Err(invalid(field, "missing; it must be a string".to_owned())),
                Some(other) => Err(invalid(
                    field,
                    format!("must be a string, got {}", describe(&other)),
                )),
            };
            let (old, new) = (text("old")?, text("new")?);
            let replace_all = match fields.remove("replaceAll") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => b,
                Some(other) => {
                    return Err(invalid(
                        "replaceAll",
                        format!("must be a boolean, got {}", describe(&other)),
                    ))
                }
            };
            Ok(coderig::Edit {
                old,
                new,
                replace_all,
            })
        }
        other => Err(EditError::invalid(format!(
            "edit {n}: must be an {{old, new, replaceAll?}} object or an [old, new] pair, got {}",
            describe(&other)
        ))),
    }
}

/// Replaces `old` by `newText` (taken literally: a `$` is a `$`) in `content`
/// and returns the result (`new` is a reserved word in TypeScript).
///
/// Throws an `Error` whose `code` is `INVALID_INPUT` (empty `old`),
/// `NOT_FOUND` (with `nearest`), `AMBIGUOUS` (with `count` and `lines`),
/// `NO_OP` (the result equals `content`) or `GUARD` (with `violations`).
/// Line endings, BOM and final newline of `content` are kept.
#[napi]
pub fn apply_edit(
    env: Env,
    content: String,
    old: String,
    new_text: String,
    options: Option<ApplyEditOptions>,
) -> napi::Result<Applied> {
    let (edit, opts) = split_options(options, old, new_text);
    coderig::apply_edit_with(&content, &edit, &opts)
        .map(Applied::from)
        .map_err(|e| to_js_error(&env, e))
}

/// Applies several edits to `content` atomically: all are located in the
/// original, overlapping targets are `INVALID_INPUT`, and either all apply
/// or the call throws (codes as for `applyEdit`; an empty list is
/// `INVALID_INPUT`). The guards run once, on the final result.
#[napi]
pub fn apply_edits(
    env: Env,
    content: String,
    #[napi(ts_arg_type = "Array<EditInput | [old: string, new: string]>")] edits: Value,
    options: Option<ApplyEditsOptions>,
) -> napi::Result<Applied> {
    let o = options.unwrap_or_default();
    to_edits(edits)
        .and_then(|edits| coderig::apply_edits(&content, &edits, &apply_options(o.path, o.guards)))
        .map(Applied::from)
        .map_err(|e| to_js_error(&env, e))
}

/// One guard violation.
#[napi(object)]
pub struct Violation {
    /// Which guard.
    #[napi(ts_type = "'truncation' | 'dropped_imports' | 'marker_leak' | 'conflict_marker'")]
    pub kind: String,
    /// What it saw, written for a model to act on.
    pub message: String,
}

impl From<GuardViolation> for Violation {
    fn from(v: GuardViolation) -> Self {
        Violation {
            kind: ViolationKind::as_str(v.kind).to_owned(),
            message: v.message,
        }
    }
}

/// Runs every guard on an edit of `original` into `updated` and returns the
/// violations (empty when the edit looks intended). `path` picks the import
/// syntax by extension. Truncation is checked only when both texts are
/// non-empty.
#[napi]
pub fn check_guards(original: String, updated: String, path: Option<String>) -> Vec<Violation> {
    coderig::check_guards(&original, &updated, path.as_deref())
        .into_iter()
        .map(Violation::from)
        .collect()
}

/// Reads the UTF-8 file at `path`, applies one edit as `applyEdit` does
/// (the guards use `path` unless `options.path` is given) and writes it back
/// atomically (temp file, fsync, rename; permissions kept). On any error,
/// including `IO` and `INVALID_INPUT` for a non-UTF-8 file, the file is
/// untouched.
#[napi]
pub fn edit_file(
    env: Env,
    path: String,
    old: String,
    new_text: String,
    options: Option<ApplyEditOptions>,
) -> napi::Result<Applied> {
    let (edit, opts) = split_options(options, old, new_text);
    coderig::edit_file(Path::new(&path), &edit, &opts)
        .map(Applied::from)
        .map_err(|e| to_js_error(&env, e))
}

/// `applyEdits` on the file at `path`, written back atomically as by
/// `editFile`; on any error the file is untouched.
#[napi]
pub fn edits_file(
    env: Env,
    path: String,
    #[napi(ts_arg_type = "Array<EditInput | [old: string, new: string]>")] edits: Value,
    options: Option<ApplyEditsOptions>,
) -> napi::Result<Applied> {
    let o = options.unwrap_or_default();
    to_edits(edits)
        .and_then(|edits| {
            coderig::edits_file(Path::new(&path), &edits, &apply_options(o.path, o.guards))
        })
        .map(Applied::from)
        .map_err(|e| to_js_error(&env, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn byte_spans_become_utf16_offsets() {
        // (content, byte span) → UTF-16 (start, end)
        let cases: &[(&str, Range<usize>, (usize, usize))] = &[
            ("abc", 1..2, (1, 2)),
            ("é-x", 3..4, (2, 3)),
            ("😀 x", 5..6, (3, 4)),
            ("😀😀 héllo", 9..15, (5, 10)),
            ("a😀b", 1..5, (1, 3)),
            ("", 0..0, (0, 0)),
        ];
        for (content, span, expected) in cases {
            assert_eq!(utf16_span(content, span), *expected, "{content:?} {span:?}");
        }
    }

    #[test]
    fn pairs_and_objects_become_core_edits() {
        let edit = |old: &str, new: &str, replace_all| coderig::Edit {
            old: old.into(),
            new: new.into(),
            replace_all,
        };
        let edits = to_edits(json!([
            ["a", "b"],
            {"old": "c", "new": "d", "replaceAll": true},
            {"old": "e", "new": "f", "replaceAll": null},
            {"old": "g", "new": ""},
        ]))
        .unwrap();
        assert_eq!(
            edits,
            vec![
                edit("a", "b", false),
                edit("c", "d", true),
                edit("e", "f", false),
                edit("g", "", false)
            ]
        );
    }

    #[test]
    fn malformed_edits_name_the_edit_and_field() {
        let cases = [
            (json!({"old": "a", "new": "b"}), "edits must be an array"),
            (json!([["a", "b"], "a"]), "edit 2: must be an {old, new, replaceAll?} object or an [old, new] pair, got a string"),
            (json!([[]]), "edit 1: a pair must be [old, new], got 0 elements"),
            (json!([["a", "b", "c"]]), "edit 1: a pair must be [old, new], got 3 elements"),
            (json!([[1, "b"]]), "edit 1, [0]: must be a string, got a number"),
            (json!([["a", null]]), "edit 1, [1]: must be a string, got null"),
            (json!([{"old": "a"}]), "edit 1, new: missing"),
            (json!([{"new": "a"}]), "edit 1, old: missing"),
            (json!([{"old": 1, "new": "a"}]), "edit 1, old: must be a string, got a number"),
            (json!([{"old": "a", "new": "b", "replaceAll": "yes"}]), "edit 1, replaceAll: must be a boolean, got a string"),
            (json!([{"old": "a", "new": "b", "replace_all": true}]), "edit 1, replace_all: unknown field"),
        ];
        for (edits, expected) in cases {
            let e = to_edits(edits.clone()).unwrap_err();
            assert_eq!(e.code(), "INVALID_INPUT", "{edits}");
            assert!(e.message().contains(expected), "{edits}: {}", e.message());
        }
    }

    #[test]
    fn counts_saturate_instead_of_wrapping() {
        assert_eq!(js_count(7), 7);
        assert_eq!(js_count(usize::MAX), u32::MAX);
    }
}
