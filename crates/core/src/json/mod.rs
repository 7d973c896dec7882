//! The JSON contract every face uses: strict decoders for every shape a face
//! accepts from dynamic input, and the JSON forms of the answers.
//!
//! The server decodes its request bodies here, the CLI its `--json` input,
//! Python converts its native values to a [`serde_json::Value`] (pythonize)
//! and Node its JS values (napi's serde-json), and all of them call the same
//! decoder. So the same mistake gets the same [`Error`] — kind
//! `invalid_input`, the JSON path of the bad field in `details.path` and at
//! the start of the message — in every face.
//!
//! Guarantees of every decoder here:
//! - unknown fields are refused, naming the field and the allowed ones;
//! - a field of the wrong type is refused with its path (`edits[1].old`,
//!   0-based indexes) and what was expected;
//! - integers may be written as integral floats (`3.0`, as JSON Schema's
//!   `integer` allows); a fraction or an out-of-range number is refused;
//! - nothing is half-decoded: a value is returned only when all of it is sound.

mod edit;
mod flow;
#[cfg(all(feature = "openapi", feature = "runtime", feature = "git", unix))]
pub mod inputs;
pub(crate) mod int;
pub(crate) mod problems;
#[cfg(feature = "openapi")]
pub(crate) mod schema;
#[cfg(all(feature = "openapi", feature = "runtime", feature = "git", unix))]
pub mod views;

pub use edit::{
    edit, edits, hashline_edits, EditInput, EditPlan, EditRequest, EditResponse,
    GuardsCheckRequest, HashlineApplyRequest, HashlineEditInput, HashlineFormatRequest, HashlineOp,
    HashlineValidateRequest, LinesInput, LocateRequest, LocateResponse, XxhashRequest,
};
pub use flow::{flow, state, step, DecodedFlow, StateInput};

/// Decodes a battle spec (`POST /api/battles`): every problem at once, each
/// with its path — see [`crate::arena::spec`].
pub fn battle(value: &Value) -> Result<crate::arena::BattleSpec, Error> {
    crate::arena::BattleSpec::from_json(value)
}

/// Decodes a runtime flow spec (`POST /api/flows/validate`, `POST
/// /api/runs`): every problem at once, each with its path — see
/// [`crate::flow::runspec`].
#[cfg(feature = "flows")]
pub fn flow_spec(value: &Value) -> Result<crate::flow::FlowSpec, Error> {
    crate::flow::FlowSpec::from_json(value)
}

use crate::error::Error;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Decodes `value` as a `T`, strictly (the guarantees of the module docs).
pub fn decode<T: DeserializeOwned>(value: Value) -> Result<T, Error> {
    serde_path_to_error::deserialize(value).map_err(path_error)
}

/// Decodes `value`, which must be a JSON object, as a `T` (a request body).
///
/// serde reads a JSON array as a struct's fields in order; the contract
/// has no such form, so an array (or any non-object) where an object
/// belongs is refused instead of being read positionally.
pub fn decode_object<T: DeserializeOwned>(value: Value) -> Result<T, Error> {
    require_objects(&value, "the request", &[""])?;
    decode(value)
}

/// Checks that every value at one of `patterns` is an object. A pattern is
/// a path of object keys and `[]` (every element of an array):
/// `""` is the root, `"steps[].cases[]"` every case of every step. Values
/// that are absent, or whose parent is not of the expected shape, are left
/// to the decoder. `root` names the whole value (`"a flow spec"`) for the
/// message about the root, which has no path to start with.
pub(crate) fn require_objects(value: &Value, root: &str, patterns: &[&str]) -> Result<(), Error> {
    fn walk(value: &Value, rest: &str, at: String, root: &str) -> Result<(), Error> {
        if rest.is_empty() {
            return match value {
                Value::Object(_) => Ok(()),
                other if at.is_empty() => Err(Error::invalid_at(
                    ".",
                    format!("{root} must be an object, got {}", describe(other)),
                )),
                other => Err(Error::invalid_at(
                    &at,
                    format!("must be an object, got {}", describe(other)),
                )),
            };
        }
        if let Some(rest) = rest.strip_prefix("[]") {
            if let Value::Array(items) = value {
                for (i, item) in items.iter().enumerate() {
                    walk(item, rest, format!("{at}[{i}]"), root)?;
                }
            }
            return Ok(());
        }
        let rest = rest.strip_prefix('.').unwrap_or(rest);
        let end = rest.find(['.', '[']).unwrap_or(rest.len());
        let (key, rest) = rest.split_at(end);
        match value.get(key) {
            Some(child) if value.is_object() => {
                let at = if at.is_empty() {
                    key.to_owned()
                } else {
                    format!("{at}.{key}")
                };
                walk(child, rest, at, root)
            }
            _ => Ok(()),
        }
    }
    for pattern in patterns {
        walk(value, pattern, String::new(), root)?;
    }
    Ok(())
}

/// Parses `text` as JSON (a syntax error is an `invalid_input` naming its
/// line and column), then decodes it as [`decode_object`] does.
pub fn decode_str<T: DeserializeOwned>(text: &str) -> Result<T, Error> {
    decode_object(parse_str(text)?)
}

/// Parses `text` as JSON, any value: what [`decode_str`] does first, for a
/// face that hands the value to a decoder of its own ([`flow`], [`state`]:
/// their refusal of a non-object root names what the value should be).
pub fn parse_str(text: &str) -> Result<Value, Error> {
    serde_json::from_str(text)
        .map_err(|e| Error::invalid_input(format!("the body is not valid JSON: {e}")))
}

/// Decodes `value` as the field `field` of an object, so that paths read
/// `field[0].old` — the same path the field has inside a whole request.
pub(crate) fn decode_field<T: DeserializeOwned>(field: &str, value: Value) -> Result<T, Error> {
    decode::<T>(value).map_err(|e| {
        let path = e
            .details()
            .get("path")
            .and_then(Value::as_str)
            .unwrap_or(".")
            .to_owned();
        let full = if path == "." || path.is_empty() {
            field.to_owned()
        } else if path.starts_with('[') {
            format!("{field}{path}")
        } else {
            format!("{field}.{path}")
        };
        let inner = e
            .message()
            .strip_prefix(&format!("`{path}`: "))
            .unwrap_or(e.message())
            .to_owned();
        Error::invalid_at(&full, inner)
    })
}

fn path_error(e: serde_path_to_error::Error<serde_json::Error>) -> Error {
    let path = e.path().to_string();
    let inner = e.into_inner();
    // serde_json appends " at line L column C" to messages about a Value it
    // did not parse from text; the position means nothing to the caller.
    let text = inner.to_string();
    let text = match text.rfind(" at line ") {
        Some(at) if inner.line() > 0 => text[..at].to_owned(),
        _ => text,
    };
    Error::invalid_at(&path, json_words(text))
}

/// serde names JSON's arrays and objects after its own data model
/// ("sequence", "map"); the contract and the rest of these messages speak
/// JSON (and a path is a string). Only the type names serde itself writes
/// are rewritten: the unexpected type right after `invalid type: ` and the
/// expected type at the very end (a quoted string value in between is left
/// alone).
fn json_words(text: String) -> String {
    let mut text = text;
    for (serde_word, json_word) in [("map", "object"), ("sequence", "array")] {
        let prefix = format!("invalid type: {serde_word}, ");
        if let Some(rest) = text.strip_prefix(&prefix) {
            text = format!("invalid type: {json_word}, {rest}");
        }
    }
    for (serde_word, json_word) in [
        ("a map", "an object"),
        ("a sequence", "an array"),
        // A `PathBuf` field: what JSON holds of a path is a string.
        ("path string", "a string (a path)"),
    ] {
        let suffix = format!(", expected {serde_word}");
        if let Some(head) = text.strip_suffix(&suffix) {
            text = format!("{head}, expected {json_word}");
        }
    }
    text
}

/// A short description of a JSON value's type, for messages: `"a string"`,
/// `"an array"`, `"null"`, ...
pub fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Pair {
        a: String,
        #[serde(default, deserialize_with = "int::opt_u32")]
        n: Option<u32>,
    }

    #[test]
    fn errors_name_the_path_and_what_was_expected() {
        let cases = [
            (
                json!({"a": 1}),
                "a",
                "`a`: invalid type: integer `1`, expected a string",
            ),
            (
                json!({"a": "x", "b": 1}),
                "b",
                "`b`: unknown field `b`, expected `a` or `n`",
            ),
            (json!({}), ".", "missing field `a`"),
            (
                json!({"a": "x", "n": 1.5}),
                "n",
                "`n`: must be an integer from 0 to 4294967295, got 1.5",
            ),
            (
                json!({"a": "x", "n": -1}),
                "n",
                "`n`: must be an integer from 0 to 4294967295, got -1",
            ),
        ];
        for (value, path, message) in cases {
            let e = decode::<Pair>(value.clone()).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::InvalidInput);
            assert_eq!(e.message(), message, "{value}");
            assert_eq!(e.details()["path"], path, "{value}");
        }
        let e = decode_object::<Pair>(json!(["x"])).unwrap_err();
        assert_eq!(e.message(), "the request must be an object, got an array");
        assert_eq!(e.details()["path"], ".");
        let ok: Pair = decode_object(json!({"a": "x", "n": 33054.0})).unwrap();
        assert_eq!(ok.n, Some(33054));
    }

    #[test]
    fn type_errors_name_json_types() {
        let cases = [
            (
                json!({"a": {}}),
                "`a`: invalid type: object, expected a string",
            ),
            (
                json!({"a": ["x"]}),
                "`a`: invalid type: array, expected a string",
            ),
            (
                json!({"a": "x", "n": "7"}),
                "`n`: invalid type: string \"7\", expected an integer from 0 to 4294967295",
            ),
        ];
        for (value, message) in cases {
            let e = decode::<Pair>(value.clone()).unwrap_err();
            assert_eq!(e.message(), message, "{value}");
        }
        let e = decode::<Vec<String>>(json!({"a": 1})).unwrap_err();
        assert_eq!(e.message(), "invalid type: object, expected an array");
        let e = decode::<std::path::PathBuf>(json!(5)).unwrap_err();
        assert_eq!(
            e.message(),
            "invalid type: integer `5`, expected a string (a path)"
        );
        // A string value that happens to end like serde's words is kept.
        let e = decode::<Vec<String>>(json!("x, expected a map")).unwrap_err();
        assert_eq!(
            e.message(),
            "invalid type: string \"x, expected a map\", expected an array"
        );
    }

    #[test]
    fn decode_field_prefixes_the_field() {
        let e = decode_field::<Vec<Pair>>("edits", json!([{"a": 1}])).unwrap_err();
        assert_eq!(e.details()["path"], "edits[0].a");
        assert_eq!(
            e.message(),
            "`edits[0].a`: invalid type: integer `1`, expected a string"
        );
        let e = decode_field::<Vec<Pair>>("edits", json!({"a": 1})).unwrap_err();
        assert_eq!(e.details()["path"], "edits");
    }

    #[test]
    fn integral_floats_in_json_text_stay_integral() {
        // Without serde_json's float_roundtrip, 2^51 - 1 written as a float
        // was read one ulp off (…247.25) and refused as a fraction.
        for (text, n) in [
            (
                "{\"a\": \"x\", \"n\": 2251799813685247.0}",
                2_251_799_813_685_247u64,
            ),
            ("{\"a\": \"x\", \"n\": 4294967295.0}", 4_294_967_295),
        ] {
            let big: BigPair = decode_str(text).unwrap();
            assert_eq!(big.n, Some(n), "{text}");
        }
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct BigPair {
        a: String,
        #[serde(default, deserialize_with = "int::opt_u64")]
        n: Option<u64>,
    }

    #[test]
    fn parse_str_takes_any_value_and_refuses_bad_syntax_as_decode_str_does() {
        assert_eq!(parse_str("[1]").unwrap(), json!([1]));
        let bad = "{\"a\": ";
        assert_eq!(
            parse_str(bad).unwrap_err(),
            decode_str::<Pair>(bad).unwrap_err()
        );
    }

    #[test]
    fn decode_str_reports_syntax_errors_without_a_path() {
        let e = decode_str::<Pair>("{\"a\": ").unwrap_err();
        assert!(
            e.message().starts_with("the body is not valid JSON: "),
            "{}",
            e.message()
        );
        assert!(decode_str::<Pair>("{\"a\": \"x\"} x").is_err());
        let e = decode_str::<Pair>("{\"a\": 2}").unwrap_err();
        assert_eq!(e.details()["path"], "a");
    }
}
