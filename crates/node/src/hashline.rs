//! `hashline.*`: `LINE#HH` anchors for stale-edit detection.
//!
//! Edits are plain objects `{op: 'replace', pos, end?, lines}`,
//! `{op: 'append' | 'prepend', pos?, lines}` (`lines`: an array of strings or
//! one string), decoded by the core as the HTTP server decodes them: a
//! malformed edit is an `INVALID_INPUT` naming it, `` `edits[1].pos`: ... ``.

use crate::helpers::{arg, js, js_count, to_json, LineNo, Res};
use coderig::hashline;
use coderig::json::{self, HashlineApplyRequest, HashlineValidateRequest};
use napi::bindgen_prelude::Unknown;
use napi::Env;
use napi_derive::napi;
use serde_json::{json, Value};
use std::path::Path;

/// `(lineNo, text)` as the core's arguments; `lineNo` is 1-based.
fn line_args(env: &Env, line_no: Unknown, text: Unknown) -> Res<(usize, String)> {
    let line_no: LineNo = arg(env, "line_no", line_no)?;
    Ok((line_no.as_usize(), arg(env, "text", text)?))
}

/// The two-letter hash of line `lineNo` (1-based) whose text is `text`:
/// xxHash32 of the line without `\r` and trailing whitespace, seed 0 (or the
/// line number when the line has no letter or digit), mod 256, as two letters
/// of `ZPMQVRWSNKTXJBYH`. A `lineNo` that is not an integer ≥ 1 throws
/// `INVALID_INPUT`.
#[napi(namespace = "hashline")]
pub fn line_hash(
    env: Env,
    #[napi(ts_arg_type = "number")] line_no: Unknown,
    #[napi(ts_arg_type = "string")] text: Unknown,
) -> napi::Result<String> {
    js(&env, || {
        let (n, text) = line_args(&env, line_no, text)?;
        Ok(hashline::line_hash(n, &text))
    })
}

/// The legacy hash: as `lineHash` but with all whitespace removed (so
/// re-indenting does not change it). Accepted wherever a ref is checked.
#[napi(namespace = "hashline")]
pub fn legacy_line_hash(
    env: Env,
    #[napi(ts_arg_type = "number")] line_no: Unknown,
    #[napi(ts_arg_type = "string")] text: Unknown,
) -> napi::Result<String> {
    js(&env, || {
        let (n, text) = line_args(&env, line_no, text)?;
        Ok(hashline::legacy_line_hash(n, &text))
    })
}

/// `content` as `LINE#HH|text` lines joined by line feeds (a CRLF line is shown
/// without its `\r`; content ending in a newline shows a last empty line).
#[napi(namespace = "hashline")]
pub fn format(env: Env, #[napi(ts_arg_type = "string")] content: Unknown) -> napi::Result<String> {
    js(&env, || {
        let request: json::HashlineFormatRequest =
            json::decode_object(json!({"content": to_json(&env, content, "content")?}))?;
        Ok(hashline::format(&request.content))
    })
}

/// A parsed `LINE#HH` reference.
#[napi(object, namespace = "hashline")]
pub struct LineRef {
    /// 1-based line number.
    pub line: u32,
    /// Two uppercase letters of `ZPMQVRWSNKTXJBYH`.
    pub hash: String,
}

/// Parses a line reference leniently (`12#VK`, `>>> 12 # VK|text`,
/// `+12#vk`); anything else throws `INVALID_INPUT` naming the expected form.
#[napi(namespace = "hashline")]
pub fn parse_ref(
    env: Env,
    #[napi(ts_arg_type = "string")] line_ref: Unknown,
) -> napi::Result<LineRef> {
    js(&env, || {
        let r = hashline::parse_ref(&arg::<String>(&env, "line_ref", line_ref)?)?;
        Ok(LineRef {
            line: js_count(r.line),
            hash: r.hash,
        })
    })
}

/// Checks that every ref names an existing line with that (current or
/// legacy) hash. Throws `INVALID_INPUT` for a malformed or out-of-range ref
/// (with "did you mean" lines), else `HASHLINE_MISMATCH` listing every stale
/// line with context, with `remaps: {staleRef: freshRef}`.
#[napi(namespace = "hashline")]
pub fn validate(
    env: Env,
    #[napi(ts_arg_type = "string")] content: Unknown,
    #[napi(ts_arg_type = "string[]")] refs: Unknown,
) -> napi::Result<()> {
    js(&env, || {
        let request: HashlineValidateRequest = json::decode_object(json!({
            "content": to_json(&env, content, "content")?,
            "refs": to_json(&env, refs, "refs")?,
        }))?;
        let refs: Vec<&str> = request.refs.iter().map(String::as_str).collect();
        Ok(hashline::validate_strs(&request.content, &refs)?)
    })
}

/// Applies hashline edits to `content` and returns the new content. All refs
/// are validated first, together (`HASHLINE_MISMATCH` with `remaps`);
/// positions refer to the original; overlapping edits and malformed edits are
/// `INVALID_INPUT`; a result equal to `content` is `NO_OP`. Line endings and
/// the final newline are kept; echoed `N#HH|` prefixes are stripped.
#[napi(namespace = "hashline")]
pub fn apply(
    env: Env,
    #[napi(ts_arg_type = "string")] content: Unknown,
    #[napi(ts_arg_type = "Array<hashline.ReplaceEdit | hashline.InsertEdit>")] edits: Unknown,
) -> napi::Result<String> {
    js(&env, || {
        let request: HashlineApplyRequest = json::decode_object(json!({
            "content": to_json(&env, content, "content")?,
            "edits": to_json(&env, edits, "edits")?,
        }))?;
        Ok(hashline::apply(&request.content, &request.core_edits()?)?)
    })
}

/// `hashline.apply` on the file `file`, written back atomically (temp
/// file, fsync, rename; permissions kept); returns the new content. On any
/// error the file is untouched.
#[napi]
pub fn hashline_edit_file(
    env: Env,
    #[napi(ts_arg_type = "string")] file: Unknown,
    #[napi(ts_arg_type = "Array<hashline.ReplaceEdit | hashline.InsertEdit>")] edits: Unknown,
) -> napi::Result<String> {
    js(&env, || {
        let file: String = arg(&env, "file", file)?;
        let edits = json::hashline_edits(to_json(&env, edits, "edits")?)?;
        Ok(coderig::hashline_edit_file(Path::new(&file), &edits)?)
    })
}

/// The TypeScript shape of a replace edit of `hashline.apply` /
/// `hashlineEditFile`; the core decodes the edits.
#[napi(object, namespace = "hashline")]
pub struct ReplaceEdit {
    /// `'replace'`.
    #[napi(ts_type = "'replace'")]
    pub op: String,
    /// `LINE#HH` ref of the first line replaced.
    pub pos: String,
    /// `LINE#HH` ref of the last line replaced (inclusive); defaults to `pos`.
    #[napi(ts_type = "string | null")]
    pub end: Option<String>,
    /// Replacement lines: one string per line, or one string split on line
    /// feeds; `[]` or `''` deletes the lines.
    #[napi(ts_type = "string[] | string")]
    pub lines: Value,
}

/// The TypeScript shape of an append / prepend edit (see `ReplaceEdit`).
#[napi(object, namespace = "hashline")]
pub struct InsertEdit {
    /// `'append'` (after `pos`, or after the last line) or `'prepend'`
    /// (before `pos`, or before the first line).
    #[napi(ts_type = "'append' | 'prepend'")]
    pub op: String,
    /// `LINE#HH` ref of the anchor line.
    #[napi(ts_type = "string | null")]
    pub pos: Option<String>,
    /// Inserted lines, as for `ReplaceEdit.lines`.
    #[napi(ts_type = "string[] | string")]
    pub lines: Value,
}
