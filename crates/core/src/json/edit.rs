//! The edit, locate, hashline and xxhash shapes of the contract.

use super::{decode_field, int};
use crate::edit::apply::{Applied, ApplyOptions, Edit};
use crate::edit::hashline::{HashlineEdit, Lines};
use crate::edit::locate::{Match, MatchKind, Nearest, Tier};
use crate::error::Error;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

fn yes() -> bool {
    true
}

/// The object form of one edit: `{"old", "new", "replace_all"?}`
/// (`replaceAll` is accepted as the JS spelling of `replace_all`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EditObject {
    old: String,
    new: String,
    #[serde(default, alias = "replaceAll")]
    replace_all: Option<bool>,
}

/// One search/replace edit as JSON: `{"old", "new", "replace_all"?}` or a
/// pair `[old, new]` / triple `[old, new, replace_all]` (what Python's
/// tuples and JS arrays become). `replace_all` defaults to `false`; `null`
/// counts as not given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditInput(
    /// The decoded edit.
    pub Edit,
);

impl<'de> Deserialize<'de> for EditInput {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct EditVisitor;
        impl<'de> Visitor<'de> for EditVisitor {
            type Value = EditInput;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an edit: {\"old\", \"new\", \"replace_all\"?} or [old, new] or [old, new, replace_all]")
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<EditInput, A::Error> {
                let o = EditObject::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(EditInput(Edit {
                    old: o.old,
                    new: o.new,
                    replace_all: o.replace_all.unwrap_or(false),
                }))
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<EditInput, A::Error> {
                let wrong_length = |n: usize| {
                    de::Error::custom(format!(
                        "an edit given as a list is [old, new] or [old, new, replace_all], got {n} element{}",
                        if n == 1 { "" } else { "s" }
                    ))
                };
                let old: String = seq.next_element()?.ok_or_else(|| wrong_length(0))?;
                let new: String = seq.next_element()?.ok_or_else(|| wrong_length(1))?;
                let replace_all: Option<bool> = seq.next_element::<Option<bool>>()?.flatten();
                let mut extra = 0;
                while seq.next_element::<de::IgnoredAny>()?.is_some() {
                    extra += 1;
                }
                if extra > 0 {
                    return Err(wrong_length(3 + extra));
                }
                Ok(EditInput(Edit {
                    old,
                    new,
                    replace_all: replace_all.unwrap_or(false),
                }))
            }
        }
        d.deserialize_any(EditVisitor)
    }
}

/// Decodes one edit (the forms of [`EditInput`]); paths start at the edit.
pub fn edit(value: Value) -> Result<Edit, Error> {
    super::decode::<EditInput>(value).map(|e| e.0)
}

/// Decodes a list of edits (each of the forms of [`EditInput`]); paths read
/// `edits[1].old`, as inside an [`EditRequest`].
pub fn edits(value: Value) -> Result<Vec<Edit>, Error> {
    decode_field::<Vec<EditInput>>("edits", value).map(|v| v.into_iter().map(|e| e.0).collect())
}

/// Body of `POST /api/edit`, stdin of `coderig edit --json`.
///
/// Either one edit (`old` + `new`, optional `replace_all`) or an atomic
/// batch (`edits`); both or neither is `invalid_input`. `path` only picks
/// the language of the import guard; `guards` defaults to `true`.
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
    pub replace_all: Option<bool>,
    /// Several edits, all located against `content`, all or nothing.
    #[serde(default)]
    pub edits: Option<Vec<EditInput>>,
    /// File path, only used by the guards to pick a language.
    #[serde(default)]
    pub path: Option<String>,
    /// Run the guards (default `true`; `null` counts as not given).
    #[serde(default = "yes", deserialize_with = "null_is_yes")]
    pub guards: bool,
}

/// `guards: null` is "not given", like every other optional field.
fn null_is_yes<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Option::<bool>::deserialize(d).map(|b| b.unwrap_or(true))
}

/// What an [`EditRequest`] asks for, once its form is checked: one edit or
/// an atomic batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditPlan {
    /// The single-edit form (`old` + `new`, optional `replace_all`).
    One(Edit),
    /// The batch form (`edits`).
    Batch(Vec<Edit>),
}

impl EditRequest {
    /// The edit (or edits) and the options the request asks for, without
    /// applying them: for faces that apply a request to something other
    /// than `content` (a file). `content` is not read.
    ///
    /// Guarantees: the same form checks, in the same order and with the same
    /// errors, as [`EditRequest::apply`] — a request that mixes or lacks both
    /// forms, or puts `replace_all` next to `edits`, is `invalid_input`.
    pub fn plan(&self) -> Result<(EditPlan, ApplyOptions), Error> {
        let opts = ApplyOptions {
            path: self.path.clone(),
            guards: self.guards,
        };
        let plan = match (&self.old, &self.new, &self.edits) {
            (Some(old), Some(new), None) => EditPlan::One(Edit {
                old: old.clone(),
                new: new.clone(),
                replace_all: self.replace_all.unwrap_or(false),
            }),
            (None, None, Some(edits)) if self.replace_all.is_none() => {
                EditPlan::Batch(edits.iter().map(|e| e.0.clone()).collect())
            }
            (None, None, Some(_)) => {
                return Err(Error::invalid_at(
                    "replace_all",
                    "`replace_all` belongs inside each entry of `edits`, not next to it",
                ))
            }
            (_, _, Some(_)) => {
                return Err(Error::invalid_input(
                    "send either `old` + `new` or `edits`, not both",
                ))
            }
            (Some(_), None, None) | (None, Some(_), None) => {
                return Err(Error::invalid_input(
                    "`old` and `new` go together: send both (an empty `new` deletes)",
                ))
            }
            (None, None, None) => {
                return Err(Error::invalid_input(
                    "nothing to apply: send `old` + `new`, or `edits: [{old, new}]`",
                ))
            }
        };
        Ok((plan, opts))
    }

    /// Applies the request with the core.
    ///
    /// Guarantees: exactly the core's answer ([`crate::apply_edit_with`]
    /// for the single form, [`crate::apply_edits`] for `edits`); a request
    /// that mixes or lacks both forms is `invalid_input` (as
    /// [`EditRequest::plan`] says).
    pub fn apply(&self) -> Result<EditResponse, Error> {
        let applied = match self.plan()? {
            (EditPlan::One(edit), opts) => crate::apply_edit_with(&self.content, &edit, &opts)?,
            (EditPlan::Batch(edits), opts) => crate::apply_edits(&self.content, &edits, &opts)?,
        };
        Ok(EditResponse::from(applied))
    }
}

/// A successful edit: `{"ok": true, "content", "tier", "replacements"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EditResponse {
    /// Always `true`.
    pub ok: bool,
    /// The edited content.
    pub content: String,
    /// The weakest tier used: `exact`, `whitespace`, `unicode` or `fuzzy`.
    pub tier: Tier,
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
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct LocateRequest {
    /// Text searched.
    pub content: String,
    /// Text looked for (must not be empty).
    #[cfg_attr(feature = "openapi", schema(min_length = 1))]
    pub needle: String,
}

/// A [`Match`] as JSON. Offsets are **UTF-8 byte offsets** into `content`;
/// `start_line` and `end_line` are the 1-based inclusive lines the match
/// covers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LocateResponse {
    /// Always `true` (a `not_found` or `ambiguous` kind is an answer, not an error).
    pub ok: bool,
    /// `exact`, `whitespace`, `unicode`, `fuzzy`, `ambiguous` or `not_found`.
    pub kind: MatchKind,
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
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<LineRange>))]
    pub candidates: Vec<(usize, usize)>,
    /// The closest window, when not found and one scored at all.
    pub nearest: Option<Nearest>,
}

/// 1-based number of the line holding byte `offset` of `content`.
fn line_of(content: &str, offset: usize) -> usize {
    1 + memchr::memchr_iter(b'\n', &content.as_bytes()[..offset]).count()
}

impl LocateResponse {
    /// The JSON form of `m`, a [`crate::locate`] result over `content`.
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
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct HashlineFormatRequest {
    /// Content to show with `LINE#HH|` prefixes.
    pub content: String,
}

/// The lines of a hashline edit: a list of strings, or one string (split on
/// `\n` as [`Lines`] says).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinesInput(
    /// The decoded lines.
    pub Lines,
);

impl<'de> Deserialize<'de> for LinesInput {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct LinesVisitor;
        impl<'de> Visitor<'de> for LinesVisitor {
            type Value = LinesInput;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or a list of strings")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<LinesInput, E> {
                Ok(LinesInput(Lines::One(s.to_owned())))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<LinesInput, A::Error> {
                let mut lines = Vec::new();
                while let Some(line) = seq.next_element::<String>()? {
                    lines.push(line);
                }
                Ok(LinesInput(Lines::Many(lines)))
            }
        }
        d.deserialize_any(LinesVisitor)
    }
}

/// What a hashline edit does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HashlineOp {
    /// Replace lines `pos..=end`.
    Replace,
    /// Insert after `pos` (or after the last line).
    Append,
    /// Insert before `pos` (or before the first line).
    Prepend,
}
crate::names::macros::named_enum!(HashlineOp, "hashline op", {
    Replace => "replace",
    Append => "append",
    Prepend => "prepend",
});

/// One hashline edit as JSON: `{"op": "replace", "pos", "end"?, "lines"}`,
/// `{"op": "append", "pos"?, "lines"}` or `{"op": "prepend", "pos"?,
/// "lines"}`; refs are `LINE#HH` (the lenient forms of
/// [`crate::hashline::parse_ref`] work). Decoded as one flat object so that
/// every bad field is named by its own path; [`HashlineEditInput::to_core`]
/// then checks the fields the op needs. Only the object form is accepted: a
/// list is refused, never read as the fields in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HashlineEditInput {
    /// `replace`, `append` or `prepend`.
    pub op: HashlineOp,
    /// The anchor line (required by `replace`).
    pub pos: Option<String>,
    /// The last line replaced, inclusive (`replace` only; defaults to `pos`).
    pub end: Option<String>,
    /// The new lines: a list of strings or one string.
    pub lines: LinesInput,
}

/// The fields of a [`HashlineEditInput`], decoded from a map only.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HashlineEditObject {
    op: HashlineOp,
    #[serde(default)]
    pos: Option<String>,
    #[serde(default)]
    end: Option<String>,
    lines: LinesInput,
}

impl<'de> Deserialize<'de> for HashlineEditInput {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // A derived struct would also read `[op, pos, end, lines]` by
        // position, and name the Rust type when given anything else.
        struct HashlineEditVisitor;
        impl<'de> Visitor<'de> for HashlineEditVisitor {
            type Value = HashlineEditInput;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a hashline edit: {\"op\", \"pos\"?, \"end\"?, \"lines\"}")
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<HashlineEditInput, A::Error> {
                let o =
                    HashlineEditObject::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(HashlineEditInput {
                    op: o.op,
                    pos: o.pos,
                    end: o.end,
                    lines: o.lines,
                })
            }
        }
        d.deserialize_any(HashlineEditVisitor)
    }
}

impl HashlineEditInput {
    /// The core's edit; `at` is the edit's JSON path for messages
    /// (`edits[2]`). A `replace` without `pos`, or an `end` on `append` /
    /// `prepend`, is `invalid_input`.
    pub fn to_core(&self, at: &str) -> Result<HashlineEdit, Error> {
        let lines = self.lines.0.clone();
        match self.op {
            HashlineOp::Replace => match &self.pos {
                Some(pos) => Ok(HashlineEdit::Replace {
                    pos: pos.clone(),
                    end: self.end.clone(),
                    lines,
                }),
                None => Err(Error::invalid_at(
                    &format!("{at}.pos"),
                    "a replace edit needs `pos`, the first line it replaces",
                )),
            },
            HashlineOp::Append | HashlineOp::Prepend if self.end.is_some() => {
                Err(Error::invalid_at(
                    &format!("{at}.end"),
                    format!(
                        "`end` belongs to replace edits only; an {} edit inserts at `pos`",
                        self.op
                    ),
                ))
            }
            HashlineOp::Append => Ok(HashlineEdit::Append {
                pos: self.pos.clone(),
                lines,
            }),
            HashlineOp::Prepend => Ok(HashlineEdit::Prepend {
                pos: self.pos.clone(),
                lines,
            }),
        }
    }
}

fn core_hashline_edits(edits: &[HashlineEditInput]) -> Result<Vec<HashlineEdit>, Error> {
    edits
        .iter()
        .enumerate()
        .map(|(i, e)| e.to_core(&format!("edits[{i}]")))
        .collect()
}

/// Decodes a list of hashline edits; paths read `edits[0].pos`, as inside a
/// [`HashlineApplyRequest`].
pub fn hashline_edits(value: Value) -> Result<Vec<HashlineEdit>, Error> {
    core_hashline_edits(&decode_field::<Vec<HashlineEditInput>>("edits", value)?)
}

/// Body of `POST /api/hashline/apply`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct HashlineApplyRequest {
    /// Content the refs were read from.
    pub content: String,
    /// The edits, applied together against `content`.
    pub edits: Vec<HashlineEditInput>,
}

impl HashlineApplyRequest {
    /// The core's edits (each checked as [`HashlineEditInput::to_core`] says).
    pub fn core_edits(&self) -> Result<Vec<HashlineEdit>, Error> {
        core_hashline_edits(&self.edits)
    }
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

/// Body of `POST /api/xxhash32`: `data` is hashed as UTF-8.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct XxhashRequest {
    /// Text hashed (as its UTF-8 bytes).
    pub data: String,
    /// Seed (default 0).
    #[serde(default, deserialize_with = "int::opt_u32")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<u64>, minimum = 0, maximum = 4294967295u32))]
    pub seed: Option<u32>,
}

/// Body of `POST /api/guards/check`: the guards of an edit of `original`
/// into `updated`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct GuardsCheckRequest {
    /// The text before the edit.
    pub original: String,
    /// The text after the edit.
    pub updated: String,
    /// File path; only picks the language of the import guard.
    #[serde(default)]
    pub path: Option<String>,
}

impl GuardsCheckRequest {
    /// Exactly [`crate::check_guards`] on the request's fields.
    pub fn check(&self) -> Vec<crate::GuardViolation> {
        crate::check_guards(&self.original, &self.updated, self.path.as_deref())
    }
}

/// `[first_line, last_line]`, 1-based and inclusive: the schema of one of
/// [`LocateResponse::candidates`]. (Two integers with `minItems`/`maxItems`,
/// not `prefixItems`: schemathesis 4 mis-converts a `prefixItems` tuple in a
/// response schema.) Declared here, with the answer that holds it, so this
/// room does not reach into `json::schema`, which reaches into it.
#[cfg(feature = "openapi")]
pub(crate) struct LineRange;

#[cfg(feature = "openapi")]
pub(crate) fn line_range_schema() -> Value {
    serde_json::json!({
        "type": "array",
        "description": "[first_line, last_line], 1-based, inclusive.",
        "items": {"type": "integer", "minimum": 1},
        "minItems": 2,
        "maxItems": 2,
    })
}

#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for LineRange {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        // A constant the schema test holds to the JSON above.
        serde_json::from_value(line_range_schema()).unwrap_or_default()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for LineRange {
    fn name() -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Borrowed("LineRange")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn edits_accept_objects_pairs_and_triples() {
        let got = edits(json!([
            {"old": "a", "new": "b"},
            {"old": "a", "new": "b", "replace_all": true},
            {"old": "a", "new": "b", "replaceAll": null},
            ["a", "b"],
            ["a", "b", true],
            ["a", "b", null],
        ]))
        .unwrap();
        let flags: Vec<bool> = got.iter().map(|e| e.replace_all).collect();
        assert_eq!(flags, [false, true, false, false, true, false]);
        assert!(got.iter().all(|e| e.old == "a" && e.new == "b"));
    }

    #[test]
    fn bad_edits_name_the_edit_and_the_field() {
        let cases = [
            (json!({"old": "a"}), "edits", "invalid type: object, expected an array"),
            (json!([{"old": 1, "new": "b"}]), "edits[0].old", "invalid type: integer `1`, expected a string"),
            (json!([{"old": "a"}]), "edits[0]", "missing field `new`"),
            (json!([{"old": "a", "new": "b", "x": 1}]), "edits[0].x", "unknown field `x`, expected one of `old`, `new`, `replaceAll`, `replace_all`"),
            (json!([["a"]]), "edits[0]", "an edit given as a list is [old, new] or [old, new, replace_all], got 1 element"),
            (json!([["a", "b", true, 1]]), "edits[0]", "an edit given as a list is [old, new] or [old, new, replace_all], got 4 elements"),
            (json!([["a", 2]]), "edits[0][1]", "invalid type: integer `2`, expected a string"),
            (json!(["ab"]), "edits[0]", "invalid type: string \"ab\", expected an edit: {\"old\", \"new\", \"replace_all\"?} or [old, new] or [old, new, replace_all]"),
            (json!([{"old": "a", "new": "b", "replace_all": "yes"}]), "edits[0].replace_all", "invalid type: string \"yes\", expected a boolean"),
        ];
        for (value, path, message) in cases {
            let e = edits(value.clone()).unwrap_err();
            assert_eq!(e.details()["path"], path, "{value}");
            assert_eq!(e.message(), format!("`{path}`: {message}"), "{value}");
        }
    }

    #[test]
    fn edit_requests_apply_or_refuse_their_form() {
        let req = |v: Value| super::super::decode::<EditRequest>(v).unwrap();
        let single = req(json!({"content": "a b", "old": "b", "new": "c"}))
            .apply()
            .unwrap();
        assert_eq!((single.content.as_str(), single.replacements), ("a c", 1));
        let batch = req(json!({"content": "a b", "edits": [{"old": "a", "new": "x"}, ["b", "y"]]}))
            .apply()
            .unwrap();
        assert_eq!(batch.content, "x y");
        for (body, kind) in [
            (json!({"content": "a"}), "invalid_input"),
            (json!({"content": "a", "old": "a"}), "invalid_input"),
            (
                json!({"content": "a", "old": "a", "new": "b", "edits": []}),
                "invalid_input",
            ),
            (
                json!({"content": "a", "replace_all": false, "edits": [["a", "b"]]}),
                "invalid_input",
            ),
            (json!({"content": "a", "old": "z", "new": "b"}), "not_found"),
            (
                json!({"content": "a a", "old": "a", "new": "b"}),
                "ambiguous",
            ),
            (json!({"content": "a", "old": "a", "new": "a"}), "no_op"),
        ] {
            assert_eq!(
                req(body.clone()).apply().unwrap_err().kind().as_str(),
                kind,
                "{body}"
            );
        }
    }

    #[test]
    fn plans_are_the_forms_apply_checks() {
        let req = |v: Value| super::super::decode::<EditRequest>(v).unwrap();
        let edit = |old: &str, new: &str, replace_all| Edit {
            old: old.into(),
            new: new.into(),
            replace_all,
        };
        let (one, opts) = req(json!({"content": "", "old": "a", "new": "b", "replace_all": true, "path": "x.py", "guards": false}))
            .plan()
            .unwrap();
        assert_eq!(one, EditPlan::One(edit("a", "b", true)));
        assert_eq!((opts.path.as_deref(), opts.guards), (Some("x.py"), false));
        let (batch, opts) = req(json!({"content": "", "edits": [["a", "b"]]}))
            .plan()
            .unwrap();
        assert_eq!(batch, EditPlan::Batch(vec![edit("a", "b", false)]));
        assert_eq!((opts.path, opts.guards), (None, true));
        let (_, opts) = req(json!({"content": "", "old": "a", "new": "b", "guards": null}))
            .plan()
            .unwrap();
        assert!(opts.guards, "null guards means the default");
        for body in [
            json!({"content": "a"}),
            json!({"content": "a", "new": "b"}),
            json!({"content": "a", "old": "a", "new": "b", "edits": []}),
            json!({"content": "a", "replace_all": true, "edits": []}),
        ] {
            let r = req(body.clone());
            assert_eq!(r.plan().unwrap_err(), r.apply().unwrap_err(), "{body}");
        }
    }

    #[test]
    fn hashline_edits_are_strict() {
        let ok = hashline_edits(json!([
            {"op": "replace", "pos": "1#ZZ", "lines": ["x"]},
            {"op": "append", "lines": "y\n"},
            {"op": "prepend", "pos": "2#ZZ", "lines": []},
        ]))
        .unwrap();
        assert_eq!(ok.len(), 3);
        for (value, path) in [
            (
                json!([{"op": "replace", "pos": "1#ZZ", "lines": [], "extra": 1}]),
                "edits[0].extra",
            ),
            (json!([{"op": "delete", "pos": "1#ZZ"}]), "edits[0].op"),
            (json!([{"op": "append", "lines": 3}]), "edits[0].lines"),
            (json!([{"op": "append", "lines": [3]}]), "edits[0].lines[0]"),
            (json!([{"lines": []}]), "edits[0]"),
            (json!(["1#ZZ"]), "edits[0]"),
            (json!([["append", "1#ZZ", null, ["x"]]]), "edits[0]"),
            (json!([{"op": "replace", "lines": []}]), "edits[0].pos"),
            (
                json!([{"op": "append", "end": "1#ZZ", "lines": []}]),
                "edits[0].end",
            ),
        ] {
            let e = hashline_edits(value.clone()).unwrap_err();
            assert_eq!(e.details()["path"], path, "{value}: {}", e.message());
        }
    }

    #[test]
    fn guards_check_requests_decode_strictly_and_run_the_guards() {
        let decode = |v: Value| super::super::decode_object::<GuardsCheckRequest>(v);
        let python = "import os\nprint(os.name)\n";
        let req =
            decode(json!({"original": python, "updated": "print(os.name)\n", "path": "a.py"}))
                .unwrap();
        assert_eq!(
            req.check(),
            crate::check_guards(python, "print(os.name)\n", Some("a.py"))
        );
        assert_eq!(req.check().len(), 1);
        for (value, path) in [
            (json!({"original": "a"}), "."),
            (
                json!({"original": "a", "updated": "b", "extra": 1}),
                "extra",
            ),
            (json!({"original": "a", "updated": 2}), "updated"),
        ] {
            let e = decode(value.clone()).unwrap_err();
            assert_eq!(e.details()["path"], path, "{value}: {}", e.message());
        }
    }

    #[test]
    fn hashline_edits_are_objects_only() {
        let expected = r#"expected a hashline edit: {"op", "pos"?, "end"?, "lines"}"#;
        for (value, got) in [
            (json!(["1#ZZ"]), "string \"1#ZZ\""),
            (json!([["append", "1#ZZ", null, ["x"]]]), "array"),
            (json!([3]), "integer `3`"),
        ] {
            let e = hashline_edits(value.clone()).unwrap_err();
            assert_eq!(
                e.message(),
                format!("`edits[0]`: invalid type: {got}, {expected}"),
                "{value}"
            );
        }
        // The request body goes through the same impl.
        let body = json!({"content": "a\n", "edits": [["append", null, null, ["x"]]]});
        let e = super::super::decode_object::<HashlineApplyRequest>(body).unwrap_err();
        assert_eq!(e.details()["path"], "edits[0]");
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
            let r = LocateResponse::new(content, crate::locate(content, needle));
            assert_eq!(r.start.zip(r.end), span, "{needle:?}");
            assert_eq!(r.start_line.zip(r.end_line), lines, "{needle:?}");
        }
    }
}
