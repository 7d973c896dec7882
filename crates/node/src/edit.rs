//! The edit capability: `locate`, `applyEdit`, `applyEdits`, `checkGuards`
//! and the file helpers `editFile`, `editsFile`, `hashlineEditFile`.
//!
//! Arguments are decoded by the core, as the HTTP server decodes its
//! bodies: `applyEdit(content, old, newText, options)` is the request
//! `{content, old, new, ...options}` of `POST /api/edit`, so a wrong type
//! gets the server's message (`` `old`: invalid type: integer `1`, expected
//! a string ``). Option keys may be camelCase (`replaceAll`) or the core's
//! snake_case; an option that is `null` is not set.
//!
//! Offsets are UTF-16 code units, the unit of a JavaScript string:
//! `content.slice(m.start, m.end)` is the match, also when astral characters
//! (emoji) come before it. Line numbers are 1-based and inclusive.

use crate::helpers::{arg, js, js_count, options, to_json, Res};
use coderig::json::{self, EditPlan, EditRequest, LocateRequest};
use coderig::Error;
use napi::bindgen_prelude::Unknown;
use napi::{Env, ValueType};
use napi_derive::napi;
use serde_json::{Map, Value};
use std::ops::Range;
use std::path::Path;

/// The byte span `span` of `content` as UTF-16 offsets `(start, end)`.
fn utf16_span(content: &str, span: &Range<usize>) -> (usize, usize) {
    let start = content[..span.start].encode_utf16().count();
    (start, start + content[span.clone()].encode_utf16().count())
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
    #[napi(ts_type = "MatchKind")]
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
/// give `kind: 'ambiguous'` with their line ranges in `candidates`. An empty
/// needle (which every text contains everywhere) throws `INVALID_INPUT`.
#[napi]
pub fn locate(
    env: Env,
    #[napi(ts_arg_type = "string")] content: Unknown,
    #[napi(ts_arg_type = "string")] needle: Unknown,
) -> napi::Result<Match> {
    js(&env, || locate_in(&env, content, needle))
}

fn locate_in(env: &Env, content: Unknown, needle: Unknown) -> Res<Match> {
    let mut body = Map::new();
    body.insert("content".into(), to_json(env, content, "content")?);
    body.insert("needle".into(), to_json(env, needle, "needle")?);
    let request: LocateRequest = json::decode_object(Value::Object(body))?;
    let (content, needle) = (request.content, request.needle);
    let m = coderig::try_locate(&content, &needle)?;
    let span = m.span.as_ref().map(|s| utf16_span(&content, s));
    Ok(Match {
        kind: m.kind.as_str().to_owned(),
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
    })
}

/// A successful application.
#[napi(object)]
pub struct Applied {
    /// The new content.
    pub content: String,
    /// The weakest tier any edit needed.
    #[napi(ts_type = "Tier")]
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

impl From<json::EditResponse> for Applied {
    fn from(r: json::EditResponse) -> Self {
        Applied {
            content: r.content,
            tier: r.tier.as_str().to_owned(),
            replacements: js_count(r.replacements),
        }
    }
}

/// Options of `applyEdit` / `editFile` (the optional fields of the edit
/// request; `null` is not set). Only names the shape in `index.d.ts`.
#[napi(object)]
pub struct ApplyEditOptions {
    /// Replace every non-overlapping occurrence found at the winning tier
    /// instead of refusing several as ambiguous (default `false`).
    #[napi(ts_type = "boolean | null")]
    pub replace_all: Option<bool>,
    /// Path of the file; picks the import syntax the guards check.
    #[napi(ts_type = "string | null")]
    pub path: Option<String>,
    /// Run the guards on the result (default `true`).
    #[napi(ts_type = "boolean | null")]
    pub guards: Option<bool>,
}

/// Options of `applyEdits` / `editsFile` (see `ApplyEditOptions`).
#[napi(object)]
pub struct ApplyEditsOptions {
    /// Path of the file; picks the import syntax the guards check.
    #[napi(ts_type = "string | null")]
    pub path: Option<String>,
    /// Run the guards on the result (default `true`).
    #[napi(ts_type = "boolean | null")]
    pub guards: Option<bool>,
}

/// One edit of `applyEdits` / `editsFile` (`[old, new]` and
/// `[old, new, replaceAll]` lists work too). Decoded by the core, strictly;
/// only names the shape in `index.d.ts`.
#[napi(object)]
pub struct EditInput {
    /// Text to find (must not be empty).
    pub old: String,
    /// Replacement text (taken literally: a `$` is a `$`).
    pub new: String,
    /// Replace every occurrence found at the winning tier (default
    /// `false`); `replace_all` is the same field.
    #[napi(ts_type = "boolean | null")]
    pub replace_all: Option<bool>,
}

/// The edit request `{...body, ...options}`, decoded by the core. An
/// option may not repeat an argument.
fn edit_request(
    env: &Env,
    mut body: Map<String, Value>,
    opts: Option<Unknown>,
) -> Res<EditRequest> {
    for (key, value) in options(env, opts, "options")? {
        if body.contains_key(&key) {
            return Err(Error::invalid_at(
                &format!("options.{key}"),
                format!("`{key}` is an argument of its own, not an option"),
            )
            .into());
        }
        body.insert(key, value);
    }
    Ok(json::decode_object(Value::Object(body))?)
}

/// The arguments as the fields of a request body; an `undefined` one is
/// left out (a missing field), a `null` one is given as `null`.
fn body<const N: usize>(env: &Env, fields: [(&str, Unknown); N]) -> Res<Map<String, Value>> {
    let mut body = Map::new();
    for (name, value) in fields {
        if value.get_type()? != ValueType::Undefined {
            body.insert(name.to_owned(), to_json(env, value, name)?);
        }
    }
    Ok(body)
}

/// Replaces `old` by `newText` (taken literally: a `$` is a `$`) in `content`
/// and returns the result (`new` is a reserved word in TypeScript).
///
/// Throws an `Error` whose `code` is `INVALID_INPUT` (empty `old`, a wrong
/// type), `NOT_FOUND` (with `nearest`), `AMBIGUOUS` (with `count` and
/// `lines`), `NO_OP` (the result equals `content`) or `GUARD` (with
/// `violations`). Line endings, BOM and final newline of `content` are kept.
#[napi]
pub fn apply_edit(
    env: Env,
    #[napi(ts_arg_type = "string")] content: Unknown,
    #[napi(ts_arg_type = "string")] old: Unknown,
    #[napi(ts_arg_type = "string")] new_text: Unknown,
    #[napi(ts_arg_type = "ApplyEditOptions | null")] options: Option<Unknown>,
) -> napi::Result<Applied> {
    js(&env, || {
        let fields = body(
            &env,
            [("content", content), ("old", old), ("new", new_text)],
        )?;
        Ok(edit_request(&env, fields, options)?.apply()?.into())
    })
}

/// Applies several edits to `content` atomically: all are located in the
/// original, overlapping targets are `INVALID_INPUT`, and either all apply
/// or the call throws (codes as for `applyEdit`; an empty list is
/// `INVALID_INPUT`). The guards run once, on the final result. A malformed
/// edit is `INVALID_INPUT` naming it: `` `edits[1].old`: ... ``.
#[napi]
pub fn apply_edits(
    env: Env,
    #[napi(ts_arg_type = "string")] content: Unknown,
    #[napi(
        ts_arg_type = "Array<EditInput | [old: string, new: string] | [old: string, new: string, replaceAll: boolean]>"
    )]
    edits: Unknown,
    #[napi(ts_arg_type = "ApplyEditsOptions | null")] options: Option<Unknown>,
) -> napi::Result<Applied> {
    js(&env, || {
        let fields = batch_body(&env, [("content", content), ("edits", edits)])?;
        Ok(edit_request(&env, fields, options)?.apply()?.into())
    })
}

/// One guard violation.
#[napi(object)]
pub struct Violation {
    /// Which guard.
    #[napi(ts_type = "ViolationKind")]
    pub kind: String,
    /// What it saw, written for a model to act on.
    pub message: String,
}

/// Runs every guard on an edit of `original` into `updated` and returns the
/// violations (empty when the edit looks intended). `path` picks the import
/// syntax by extension. Truncation is checked only when both texts are
/// non-empty.
#[napi]
pub fn check_guards(
    env: Env,
    #[napi(ts_arg_type = "string")] original: Unknown,
    #[napi(ts_arg_type = "string")] updated: Unknown,
    #[napi(ts_arg_type = "string | null")] path: Option<Unknown>,
) -> napi::Result<Vec<Violation>> {
    js(&env, || {
        let original: String = arg(&env, "original", original)?;
        let updated: String = arg(&env, "updated", updated)?;
        let path: Option<String> = arg(&env, "path", path)?;
        Ok(coderig::check_guards(&original, &updated, path.as_deref())
            .into_iter()
            .map(|v| Violation {
                kind: v.kind.as_str().to_owned(),
                message: v.message,
            })
            .collect())
    })
}

/// [`body`] for the batch form, where `edits` is required: a missing list
/// is the core's refusal of a list that is not one (`json::edits`), as when
/// the list is given alone, rather than the request's "nothing to apply".
fn batch_body<const N: usize>(env: &Env, fields: [(&str, Unknown); N]) -> Res<Map<String, Value>> {
    let fields = body(env, fields)?;
    if let Some(Value::Null) | None = fields.get("edits") {
        json::edits(Value::Null)?;
    }
    Ok(fields)
}

/// Applies the request `{content: "", ...body, ...options}` to the file
/// `file` (its form checked by the core, the file standing for `content`).
fn apply_to_file(
    env: &Env,
    file: Unknown,
    mut body: Map<String, Value>,
    opts: Option<Unknown>,
) -> Res<Applied> {
    let file: String = arg(env, "file", file)?;
    body.insert("content".into(), Value::String(String::new()));
    let (plan, opts) = edit_request(env, body, opts)?.plan()?;
    let path = Path::new(&file);
    let applied = match plan {
        EditPlan::One(edit) => coderig::edit_file(path, &edit, &opts)?,
        EditPlan::Batch(edits) => coderig::edits_file(path, &edits, &opts)?,
    };
    Ok(applied.into())
}

/// Reads the UTF-8 file `file`, applies one edit as `applyEdit` does (the
/// guards use the file's path unless `options.path` is given) and writes it
/// back atomically (temp file, fsync, rename; permissions kept). On any
/// error, including `IO` and `INVALID_INPUT` for a non-UTF-8 file, the file
/// is untouched.
#[napi]
pub fn edit_file(
    env: Env,
    #[napi(ts_arg_type = "string")] file: Unknown,
    #[napi(ts_arg_type = "string")] old: Unknown,
    #[napi(ts_arg_type = "string")] new_text: Unknown,
    #[napi(ts_arg_type = "ApplyEditOptions | null")] options: Option<Unknown>,
) -> napi::Result<Applied> {
    js(&env, || {
        let fields = body(&env, [("old", old), ("new", new_text)])?;
        apply_to_file(&env, file, fields, options)
    })
}

/// `applyEdits` on the file `file`, written back atomically as by
/// `editFile`; on any error the file is untouched.
#[napi]
pub fn edits_file(
    env: Env,
    #[napi(ts_arg_type = "string")] file: Unknown,
    #[napi(
        ts_arg_type = "Array<EditInput | [old: string, new: string] | [old: string, new: string, replaceAll: boolean]>"
    )]
    edits: Unknown,
    #[napi(ts_arg_type = "ApplyEditsOptions | null")] options: Option<Unknown>,
) -> napi::Result<Applied> {
    js(&env, || {
        let fields = batch_body(&env, [("edits", edits)])?;
        apply_to_file(&env, file, fields, options)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
