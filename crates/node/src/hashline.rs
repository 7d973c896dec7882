//! `hashline.*`: `LINE#HH` anchors for stale-edit detection.
//!
//! Edits are plain objects `{op: 'replace', pos, end?, lines}`,
//! `{op: 'append' | 'prepend', pos?, lines}` (`lines`: an array of strings or
//! one string). They arrive as JSON values and are checked field by field
//! here, so a malformed edit is an `INVALID_INPUT` error naming the edit and
//! the field, never a bare napi type error.

use crate::edit::describe;
use crate::errors::to_js_error;
use coderig::hashline::{self, HashlineEdit};
use coderig::EditError;
use napi::Env;
use napi_derive::napi;
use serde_json::Value;
use std::path::Path;

/// A JS line number as a `usize`, refusing instead of wrapping or
/// truncating: lines are numbered from 1.
fn line_number(line_no: f64) -> Result<usize, EditError> {
    if line_no.fract() == 0.0 && (1.0..=f64::from(u32::MAX)).contains(&line_no) {
        // Integral and in range, so the cast is exact.
        Ok(line_no as usize)
    } else {
        Err(EditError::invalid(format!(
            "lineNo must be an integer in 1..=4294967295 (lines are numbered from 1), got {line_no}"
        )))
    }
}

/// The two-letter hash of line `lineNo` (1-based) whose text is `text`:
/// xxHash32 of the line without `\r` and trailing whitespace, seed 0 (or the
/// line number when the line has no letter or digit), mod 256, as two letters
/// of `ZPMQVRWSNKTXJBYH`. A `lineNo` that is not an integer ≥ 1 throws
/// `INVALID_INPUT`.
#[napi(namespace = "hashline")]
pub fn line_hash(env: Env, line_no: f64, text: String) -> napi::Result<String> {
    line_number(line_no)
        .map(|n| hashline::line_hash(n, &text))
        .map_err(|e| to_js_error(&env, e))
}

/// The legacy hash: as `lineHash` but with all whitespace removed (so
/// re-indenting does not change it). Accepted wherever a ref is checked.
#[napi(namespace = "hashline")]
pub fn legacy_line_hash(env: Env, line_no: f64, text: String) -> napi::Result<String> {
    line_number(line_no)
        .map(|n| hashline::legacy_line_hash(n, &text))
        .map_err(|e| to_js_error(&env, e))
}

/// `content` as `LINE#HH|text` lines joined by line feeds (a CRLF line is shown
/// without its `\r`; content ending in a newline shows a last empty line).
#[napi(namespace = "hashline")]
pub fn format(content: String) -> String {
    hashline::format(&content)
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
pub fn parse_ref(env: Env, s: String) -> napi::Result<LineRef> {
    hashline::parse_ref(&s)
        .map(|r| LineRef {
            line: crate::edit::js_count(r.line),
            hash: r.hash,
        })
        .map_err(|e| to_js_error(&env, e))
}

/// Checks that every ref names an existing line with that (current or
/// legacy) hash. Throws `INVALID_INPUT` for a malformed or out-of-range ref
/// (with "did you mean" lines), else `HASHLINE_MISMATCH` listing every stale
/// line with context, with `remaps: {staleRef: freshRef}`.
#[napi(namespace = "hashline")]
pub fn validate(env: Env, content: String, refs: Vec<String>) -> napi::Result<()> {
    let refs: Vec<&str> = refs.iter().map(String::as_str).collect();
    hashline::validate_strs(&content, &refs).map_err(|e| to_js_error(&env, e))
}

/// Applies hashline edits to `content` and returns the new content. All refs
/// are validated first, together (`HASHLINE_MISMATCH` with `remaps`);
/// positions refer to the original; overlapping edits and malformed edits are
/// `INVALID_INPUT`; a result equal to `content` is `NO_OP`. Line endings and
/// the final newline are kept; echoed `N#HH|` prefixes are stripped.
#[napi(namespace = "hashline")]
pub fn apply(
    env: Env,
    content: String,
    #[napi(ts_arg_type = "Array<hashline.ReplaceEdit | hashline.InsertEdit>")] edits: Value,
) -> napi::Result<String> {
    to_hashline_edits(edits)
        .and_then(|edits| hashline::apply(&content, &edits))
        .map_err(|e| to_js_error(&env, e))
}

/// `hashline.apply` on the file at `path`, written back atomically (temp
/// file, fsync, rename; permissions kept); returns the new content. On any
/// error the file is untouched.
#[napi]
pub fn hashline_edit_file(
    env: Env,
    path: String,
    #[napi(ts_arg_type = "Array<hashline.ReplaceEdit | hashline.InsertEdit>")] edits: Value,
) -> napi::Result<String> {
    to_hashline_edits(edits)
        .and_then(|edits| coderig::hashline_edit_file(Path::new(&path), &edits))
        .map_err(|e| to_js_error(&env, e))
}

/// The TypeScript shape of a replace edit of `hashline.apply` /
/// `hashlineEditFile`. Edits are read as JSON and checked field by field so
/// that a malformed one is an `INVALID_INPUT` naming the field; this struct
/// only names the shape in `index.d.ts`.
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

/// The edits as the core's [`HashlineEdit`]s. Errors name the edit (1-based,
/// as the core's messages do) and the field: not an array, an edit that is
/// not an object, a missing or unknown `op`, an unknown field, `pos`/`end`
/// that are not strings (or `null` where optional), `lines` that is neither
/// a string nor an array of strings.
fn to_hashline_edits(edits: Value) -> Result<Vec<HashlineEdit>, EditError> {
    let Value::Array(edits) = edits else {
        return Err(EditError::invalid(format!(
            "hashline edits must be an array of {{op, pos, end?, lines}} objects, got {}",
            describe(&edits)
        )));
    };
    edits
        .into_iter()
        .enumerate()
        .map(|(i, edit)| {
            check_shape(i + 1, &edit)?;
            serde_json::from_value(edit)
                .map_err(|e| EditError::invalid(format!("edit {}: {e}", i + 1)))
        })
        .collect()
}

/// Field-by-field checks that make serde's conversion succeed, with messages
/// that say which field is wrong (serde's own do not, for tagged enums).
fn check_shape(n: usize, edit: &Value) -> Result<(), EditError> {
    let invalid =
        |field: &str, why: String| EditError::invalid(format!("edit {n}, {field}: {why}"));
    let Value::Object(fields) = edit else {
        return Err(EditError::invalid(format!(
            "edit {n}: must be an object {{op, pos, end?, lines}}, got {}",
            describe(edit)
        )));
    };
    const OPS: &str = "must be 'replace', 'append' or 'prepend'";
    let op = match fields.get("op") {
        None => return Err(invalid("op", format!("missing; it {OPS}"))),
        Some(Value::String(op)) if matches!(op.as_str(), "replace" | "append" | "prepend") => {
            op.as_str()
        }
        Some(Value::String(op)) => return Err(invalid("op", format!("{OPS}, got {op:?}"))),
        Some(other) => return Err(invalid("op", format!("{OPS}, got {}", describe(other)))),
    };
    let allowed: &[&str] = if op == "replace" {
        &["op", "pos", "end", "lines"]
    } else {
        &["op", "pos", "lines"]
    };
    if let Some(unknown) = fields.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(invalid(
            unknown,
            format!("unknown field; {op} takes only {}", allowed.join(", ")),
        ));
    }
    let pos_required = op == "replace";
    for field in ["pos", "end"] {
        match fields.get(field) {
            Some(Value::String(_)) => {}
            None | Some(Value::Null) if field == "end" || !pos_required => {}
            None => return Err(invalid(
                field,
                "missing; a replace edit needs the LINE#HH ref of its first line, e.g. \"12#VK\""
                    .to_owned(),
            )),
            Some(other) => {
                return Err(invalid(
                    field,
                    format!(
                        "must be a LINE#HH ref string such as \"12#VK\", got {}",
                        describe(other)
                    ),
                ))
            }
        }
    }
    const LINES: &str = "must be an array of strings or one string";
    match fields.get("lines") {
        Some(Value::String(_)) => Ok(()),
        Some(Value::Array(lines)) => match lines.iter().position(|l| !l.is_string()) {
            None => Ok(()),
            Some(at) => Err(invalid(
                &format!("lines[{at}]"),
                format!("must be a string, got {}", describe(&lines[at])),
            )),
        },
        None => Err(invalid(
            "lines",
            format!("missing; it {LINES} (\"\" or [] deletes)"),
        )),
        Some(other) => Err(invalid(
            "lines",
            format!("{LINES}, got {}", describe(other)),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use coderig::hashline::Lines;
    use serde_json::json;

    #[test]
    fn well_formed_edits_convert() {
        let edits = to_hashline_edits(json!([
            {"op": "replace", "pos": "3#NT", "end": "5#WN", "lines": ["a", "b"]},
            {"op": "replace", "pos": "3#NT", "end": null, "lines": "x\n"},
            {"op": "append", "pos": "7#ST", "lines": "text"},
            {"op": "append", "pos": null, "lines": []},
            {"op": "prepend", "lines": ["p"]},
        ]))
        .unwrap();
        assert_eq!(
            edits,
            vec![
                HashlineEdit::Replace {
                    pos: "3#NT".into(),
                    end: Some("5#WN".into()),
                    lines: Lines::Many(vec!["a".into(), "b".into()]),
                },
                HashlineEdit::Replace {
                    pos: "3#NT".into(),
                    end: None,
                    lines: Lines::One("x\n".into()),
                },
                HashlineEdit::Append {
                    pos: Some("7#ST".into()),
                    lines: Lines::One("text".into()),
                },
                HashlineEdit::Append {
                    pos: None,
                    lines: Lines::Many(vec![]),
                },
                HashlineEdit::Prepend {
                    pos: None,
                    lines: Lines::Many(vec!["p".into()]),
                },
            ]
        );
    }

    #[test]
    fn malformed_edits_name_the_edit_and_field() {
        let cases = [
            (json!({"op": "replace"}), "must be an array"),
            (json!([3]), "edit 1: must be an object"),
            (json!([{"pos": "1#ZZ", "lines": []}]), "edit 1, op: missing"),
            (
                json!([{"op": "insert", "lines": []}]),
                "edit 1, op: must be 'replace', 'append' or 'prepend', got \"insert\"",
            ),
            (
                json!([{"op": 1, "lines": []}]),
                "edit 1, op: must be 'replace', 'append' or 'prepend', got a number",
            ),
            (
                json!([{"op": "append", "lines": "x"}, {"op": "replace", "lines": "x"}]),
                "edit 2, pos: missing",
            ),
            (
                json!([{"op": "replace", "pos": 12, "lines": "x"}]),
                "edit 1, pos: must be a LINE#HH ref string such as \"12#VK\", got a number",
            ),
            (
                json!([{"op": "replace", "pos": null, "lines": "x"}]),
                "edit 1, pos: must be a LINE#HH ref string",
            ),
            (
                json!([{"op": "replace", "pos": "1#ZZ", "end": ["2#ZZ"], "lines": "x"}]),
                "edit 1, end: must be a LINE#HH ref string such as \"12#VK\", got an array",
            ),
            (
                json!([{"op": "append", "pos": "1#ZZ", "end": "2#ZZ", "lines": "x"}]),
                "edit 1, end: unknown field; append takes only op, pos, lines",
            ),
            (
                json!([{"op": "replace", "pos": "1#ZZ", "line": "x"}]),
                "edit 1, line: unknown field; replace takes only op, pos, end, lines",
            ),
            (json!([{"op": "prepend"}]), "edit 1, lines: missing"),
            (
                json!([{"op": "prepend", "lines": null}]),
                "edit 1, lines: must be an array of strings or one string, got null",
            ),
            (
                json!([{"op": "prepend", "lines": ["a", 2]}]),
                "edit 1, lines[1]: must be a string, got a number",
            ),
        ];
        for (edits, expected) in cases {
            let e = to_hashline_edits(edits.clone()).unwrap_err();
            assert_eq!(e.code(), "INVALID_INPUT", "{edits}");
            assert!(e.message().contains(expected), "{edits}: {}", e.message());
        }
    }

    #[test]
    fn line_numbers_are_taken_exactly_or_refused() {
        for (input, expected) in [(1.0, 1), (12.0, 12), (4294967295.0, u32::MAX as usize)] {
            assert_eq!(line_number(input).unwrap(), expected, "{input}");
        }
        for input in [0.0, -1.0, 1.5, 4294967296.0, f64::NAN, f64::INFINITY] {
            assert_eq!(
                line_number(input).unwrap_err().code(),
                "INVALID_INPUT",
                "{input}"
            );
        }
    }
}
