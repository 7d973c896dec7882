//! The one conversion from the core's error to a JavaScript `Error`.

use coderig::EditError;
use napi::bindgen_prelude::JsObjectValue;
use napi::{Env, JsValue, Status};
use serde_json::{json, Value};

/// The extra properties of the JS error for `e` (camelCase names):
/// `nearest: {firstLine, lastLine, score} | null`, `count` + `lines`,
/// `violations: [{kind, message}]`, `remaps: {oldRef: freshRef}`.
pub fn details(e: &EditError) -> Vec<(&'static str, Value)> {
    match e {
        EditError::NotFound { nearest, .. } => vec![(
            "nearest",
            nearest.map_or(
                Value::Null,
                |n| json!({"firstLine": n.first_line, "lastLine": n.last_line, "score": n.score}),
            ),
        )],
        EditError::Ambiguous { count, lines, .. } => {
            vec![("count", json!(count)), ("lines", json!(lines))]
        }
        EditError::Guard { violations, .. } => vec![(
            "violations",
            Value::Array(
                violations
                    .iter()
                    .map(|v| json!({"kind": v.kind.as_str(), "message": v.message}))
                    .collect(),
            ),
        )],
        EditError::HashlineMismatch { remaps, .. } => vec![("remaps", json!(remaps))],
        EditError::NoOp { .. } | EditError::InvalidInput { .. } | EditError::Io { .. } => vec![],
    }
}

/// A JS `Error` for `e`: `message`, `code` (`NOT_FOUND`, `AMBIGUOUS`, `GUARD`,
/// `NO_OP`, `HASHLINE_MISMATCH`, `INVALID_INPUT`, `IO`), `kind` (the same in
/// snake_case) and the [`details`] as own properties. Returned as a
/// `napi::Error` that throws exactly that object.
pub fn to_js_error(env: &Env, e: EditError) -> napi::Error {
    build(env, &e).unwrap_or_else(|failure| failure)
}

fn build(env: &Env, e: &EditError) -> napi::Result<napi::Error> {
    let mut error = env.create_error(napi::Error::new(Status::GenericFailure, e.message()))?;
    error.set_named_property("code", e.code())?;
    error.set_named_property("kind", e.kind())?;
    for (name, value) in details(e) {
        error.set_named_property(name, value)?;
    }
    Ok(napi::Error::from(error.to_unknown()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use coderig::{GuardViolation, Nearest, ViolationKind};
    use std::collections::BTreeMap;

    #[test]
    fn details_per_variant_use_camel_case() {
        let cases = vec![
            (
                EditError::NotFound {
                    message: "m".into(),
                    nearest: Some(Nearest {
                        first_line: 2,
                        last_line: 6,
                        score: 0.5,
                    }),
                },
                json!({"nearest": {"firstLine": 2, "lastLine": 6, "score": 0.5}}),
            ),
            (
                EditError::NotFound {
                    message: "m".into(),
                    nearest: None,
                },
                json!({"nearest": null}),
            ),
            (
                EditError::Ambiguous {
                    message: "m".into(),
                    count: 3,
                    lines: vec![(1, 2), (5, 6), (9, 9)],
                },
                json!({"count": 3, "lines": [[1, 2], [5, 6], [9, 9]]}),
            ),
            (
                EditError::Guard {
                    message: "m".into(),
                    violations: vec![GuardViolation {
                        kind: ViolationKind::ConflictMarker,
                        message: "<<<<<<<".into(),
                    }],
                },
                json!({"violations": [{"kind": "conflict_marker", "message": "<<<<<<<"}]}),
            ),
            (
                EditError::HashlineMismatch {
                    message: "m".into(),
                    remaps: BTreeMap::from([("4#ZZ".to_owned(), "4#VK".to_owned())]),
                },
                json!({"remaps": {"4#ZZ": "4#VK"}}),
            ),
            (
                EditError::NoOp {
                    message: "m".into(),
                },
                json!({}),
            ),
            (EditError::invalid("m"), json!({})),
            (
                EditError::Io {
                    message: "m".into(),
                },
                json!({}),
            ),
        ];
        for (error, expected) in cases {
            let got: serde_json::Map<String, Value> = details(&error)
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect();
            assert_eq!(Value::Object(got), expected, "{}", error.code());
        }
    }
}
