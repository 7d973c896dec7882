//! Arguments and options decoded by the core: a wrong type, a bad name or
//! a bad number is `INVALID_INPUT` naming the argument, with the core's
//! message, never a napi type error.

use super::error::Res;
use super::json::{path_or_root, to_json};
use coderig::Error;
use napi::bindgen_prelude::Unknown;
use napi::Env;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::str::FromStr;

/// Decodes `value`, the argument or field `name`, as a `T` with the core's
/// decoder: errors read `` `name`: ... `` / `` `name[0].old`: ... ``, as the
/// same field inside a request body.
pub fn decode_named<T: DeserializeOwned>(name: &str, value: Value) -> Res<T> {
    let mut one = Map::new();
    one.insert(name.to_owned(), value);
    let mut decoded: BTreeMap<String, T> = coderig::json::decode(Value::Object(one))?;
    decoded
        .remove(name)
        .ok_or_else(|| Error::internal(format!("decoding `{name}` lost it")).into())
}

/// Refuses a value that is not an object where a record belongs (serde
/// would read an array as the record's fields in order), with the core's
/// message.
pub fn require_object(at: &str, value: &Value) -> Res<()> {
    if value.is_object() {
        return Ok(());
    }
    Err(Error::invalid_at(
        path_or_root(at),
        format!("must be an object, got {}", coderig::json::describe(value)),
    )
    .into())
}

/// A list of records (`contestants`, `rows`, ...) with camelCase or
/// snake_case keys, each an object, decoded strictly as `T`s (paths read
/// `rows[0].task_id`).
pub fn records<'a, T: DeserializeOwned>(
    env: &Env,
    name: &str,
    value: impl Into<Option<Unknown<'a>>>,
) -> Res<Vec<T>> {
    let mut value = to_json(env, value, name)?;
    if let Value::Array(items) = &mut value {
        for (i, item) in items.iter_mut().enumerate() {
            require_object(&format!("{name}[{i}]"), item)?;
            snake_keys(item, false);
        }
    }
    decode_named(name, value)
}

/// The argument `name` as a `T` ([`to_json`], then [`decode_named`]).
pub fn arg<'a, T: DeserializeOwned>(
    env: &Env,
    name: &str,
    value: impl Into<Option<Unknown<'a>>>,
) -> Res<T> {
    decode_named(name, to_json(env, value, name)?)
}

/// One of the core's names given as the argument `name`: a string (else
/// `INVALID_INPUT` naming the argument), parsed by the core (a bad name is
/// the core's `INVALID_INPUT` listing the valid ones).
pub fn name_arg<'a, T: FromStr<Err = coderig::names::ParseNameError>>(
    env: &Env,
    name: &str,
    value: impl Into<Option<Unknown<'a>>>,
) -> Res<T> {
    parse_name(&arg::<String>(env, name, value)?)
}

/// [`name_arg`] for an optional name (`undefined` / `null`: none).
pub fn opt_name_arg<'a, T: FromStr<Err = coderig::names::ParseNameError>>(
    env: &Env,
    name: &str,
    value: impl Into<Option<Unknown<'a>>>,
) -> Res<Option<T>> {
    arg::<Option<String>>(env, name, value)?
        .as_deref()
        .map(parse_name)
        .transpose()
}

/// Parses one of the core's names.
pub fn parse_name<T: FromStr<Err = coderig::names::ParseNameError>>(text: &str) -> Res<T> {
    Ok(text.parse::<T>()?)
}

/// An options object: `undefined` / `null` is empty; keys are taken in the
/// core's snake_case (`replaceAll` is `replace_all`, see [`snake_case`]);
/// fields that are `null` are left out, as JS callers mean "not set" by it.
pub fn options<'a>(
    env: &Env,
    value: impl Into<Option<Unknown<'a>>>,
    at: &str,
) -> Res<Map<String, Value>> {
    match to_json(env, value, at)? {
        Value::Null => Ok(Map::new()),
        Value::Object(fields) => Ok(fields
            .into_iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| (snake_case(&k), v))
            .collect()),
        other => Err(Error::invalid_at(
            path_or_root(at),
            format!(
                "must be an object of options, got {}",
                coderig::json::describe(&other)
            ),
        )
        .into()),
    }
}

/// `replaceAll` → `replace_all`: the JS spelling of a field as the core
/// names it (keys without capitals are unchanged).
pub fn snake_case(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 4);
    for c in key.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// Renames the keys of `value`'s top-level object with [`snake_case`]
/// (and, with `deep`, of every object inside it). Only for shapes whose
/// objects are all records of known fields (flow specs), or for the top
/// level alone (states, whose maps are keyed by step ids).
pub fn snake_keys(value: &mut Value, deep: bool) {
    match value {
        Value::Object(map) => {
            let fields = std::mem::take(map);
            for (key, mut item) in fields {
                if deep {
                    snake_keys(&mut item, true);
                }
                map.insert(snake_case(&key), item);
            }
        }
        Value::Array(items) if deep => items.iter_mut().for_each(|i| snake_keys(i, true)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::super::error::{kind_of, message};
    use super::*;
    use coderig::ErrorKind;
    use serde_json::json;

    #[test]
    fn named_values_decode_with_their_path() {
        let refused = |r: Res<()>| {
            let e = r.unwrap_err();
            assert_eq!(kind_of(&e), Some(ErrorKind::InvalidInput));
            message(e)
        };
        let cases: Vec<(Res<()>, &str)> = vec![
            (
                decode_named::<String>("old", json!(1)).map(drop),
                "`old`: invalid type: integer `1`, expected a string",
            ),
            (
                decode_named::<Vec<String>>("refs", json!(["a", 2])).map(drop),
                "`refs[1]`: invalid type: integer `2`, expected a string",
            ),
            (
                decode_named::<String>("content", Value::Null).map(drop),
                "`content`: invalid type: null, expected a string",
            ),
            (
                require_object("rows[3]", &json!(["a"])),
                "`rows[3]`: must be an object, got an array",
            ),
        ];
        for (result, expected) in cases {
            assert_eq!(refused(result), expected);
        }
        assert_eq!(
            decode_named::<String>("x", json!("y")).ok(),
            Some("y".to_owned())
        );
        assert_eq!(
            decode_named::<Option<String>>("x", Value::Null).ok(),
            Some(None)
        );
    }

    #[test]
    fn keys_become_snake_case() {
        for (key, snake) in [
            ("replaceAll", "replace_all"),
            ("loopMaxIterations", "loop_max_iterations"),
            ("id", "id"),
            ("max_retries", "max_retries"),
        ] {
            assert_eq!(snake_case(key), snake);
        }
        let mut shallow = json!({"inFlight": ["a"], "loopIterations": {"myLoop": 1}});
        snake_keys(&mut shallow, false);
        assert_eq!(
            shallow,
            json!({"in_flight": ["a"], "loop_iterations": {"myLoop": 1}})
        );
        let mut deep = json!({"steps": [{"triggerRule": "always", "cases": [{"label": "x"}]}]});
        snake_keys(&mut deep, true);
        assert_eq!(
            deep,
            json!({"steps": [{"trigger_rule": "always", "cases": [{"label": "x"}]}]})
        );
    }
}
