//! What every module of the addon shares: the one mapping of a
//! [`coderig::Error`] to a JavaScript `Error`, the conversion of JS values
//! to JSON for the core's decoders, and the checks of JS numbers.
//!
//! A binding takes its arguments as [`Unknown`], converts each one with
//! [`arg`] (or [`to_json`] + a `coderig::json` decoder), calls the core and
//! returns through [`js`]. So a wrong type, a bad name or a bad number is an
//! `INVALID_INPUT` naming the argument, with the core's message, never a
//! napi type error.

use coderig::Error;
use napi::bindgen_prelude::{
    Array, FromNapiValue, Function, FunctionRef, JsObjectValue, Object, Unknown,
};
use napi::{Env, JsValue, Status, ValueType};
use serde::de::{self, DeserializeOwned, Deserializer};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::str::FromStr;

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/// Why a binding call failed: the core refused (thrown as [`to_js_error`]
/// builds it), or JavaScript itself threw (a getter, a condition), which is
/// rethrown unchanged.
#[derive(Debug)]
pub enum Fail {
    /// A refusal of the core, in the one taxonomy.
    Core(Error),
    /// A JavaScript exception (or a napi failure), passed through.
    Js(napi::Error),
}

/// What the helpers return.
pub type Res<T> = Result<T, Fail>;

impl From<Error> for Fail {
    fn from(e: Error) -> Self {
        Fail::Core(e)
    }
}

impl From<napi::Error> for Fail {
    fn from(e: napi::Error) -> Self {
        Fail::Js(e)
    }
}

macro_rules! core_errors {
    ($($ty:ty),+) => {$(
        impl From<$ty> for Fail {
            fn from(e: $ty) -> Self {
                Fail::Core(e.into())
            }
        }
    )+};
}
core_errors!(
    coderig::EditError,
    coderig::flow::FlowError,
    coderig::arena::ArenaError,
    coderig::names::ParseNameError
);

/// Property names of a JS error that a detail must not overwrite.
const RESERVED: &[&str] = &["code", "kind", "message", "details", "name", "stack"];

/// The JS `Error` thrown for `e`: `message`, `code` (`NOT_FOUND`,
/// `INVALID_INPUT`, ...: [`coderig::ErrorKind::code`]), `kind` (the same in
/// snake_case), `details` (exactly [`Error::details`]) and every detail also
/// as an own property (`nearest`, `count`, `lines`, `violations`, `remaps`,
/// `path`, `reason`, `errors`, ...). The flattened `nearest` keeps its
/// camelCase form `{firstLine, lastLine, score}`; `details.nearest` is the
/// core's `{first_line, last_line, score}`.
///
/// Every error the addon throws for a refusal of the core is built here.
pub fn to_js_error(env: &Env, e: &Error) -> napi::Error {
    build_error(env, e, None).unwrap_or_else(|failure| failure)
}

/// [`to_js_error`] with the JS error's `name` set (`'TimeoutError'`, the
/// name JS gives a wait that ran out of time), so callers can tell such a
/// refusal apart without reading its `details`.
pub fn to_named_js_error(env: &Env, e: &Error, name: &str) -> napi::Error {
    build_error(env, e, Some(name)).unwrap_or_else(|failure| failure)
}

fn build_error(env: &Env, e: &Error, name: Option<&str>) -> napi::Result<napi::Error> {
    let mut error = env.create_error(napi::Error::new(Status::GenericFailure, e.message()))?;
    if let Some(name) = name {
        error.set_named_property("name", name)?;
    }
    error.set_named_property("code", e.code())?;
    error.set_named_property("kind", e.kind().as_str())?;
    error.set_named_property("details", Value::Object(e.details().clone()))?;
    for (key, value) in e.details() {
        if !RESERVED.contains(&key.as_str()) {
            error.set_named_property(key, flattened(key, value))?;
        }
    }
    Ok(napi::Error::from(error.to_unknown()))
}

/// A detail as an own property of the error: as in `details`, except
/// `nearest`, which callers read as `{firstLine, lastLine, score}`.
fn flattened(key: &str, value: &Value) -> Value {
    match (key, value) {
        ("nearest", Value::Object(n)) => json!({
            "firstLine": n.get("first_line"),
            "lastLine": n.get("last_line"),
            "score": n.get("score"),
        }),
        _ => value.clone(),
    }
}

/// Runs the body of a binding call and returns its result as napi does: a
/// core refusal becomes [`to_js_error`]'s `Error`, a JS exception is
/// rethrown.
pub fn js<T>(env: &Env, body: impl FnOnce() -> Res<T>) -> napi::Result<T> {
    body().map_err(|fail| throwable(env, fail))
}

/// What JS throws for `fail`: [`to_js_error`]'s `Error` for a core
/// refusal, the exception itself for a JS one.
pub fn throwable(env: &Env, fail: Fail) -> napi::Error {
    match fail {
        Fail::Core(e) => to_js_error(env, &e),
        Fail::Js(e) => e,
    }
}

// ---------------------------------------------------------------------------
// JS values as JSON
// ---------------------------------------------------------------------------

/// A JS function held by reference (flow conditions). Its result is read
/// as an `Unknown` only to be coerced to a boolean at once, within the call
/// that runs it; the `'static` is never relied on.
pub type JsFunction = FunctionRef<Value, Unknown<'static>>;

/// Deeper values are refused: a cyclic object would otherwise recurse
/// forever.
const MAX_DEPTH: usize = 128;

/// `Number.MAX_SAFE_INTEGER`: every integer up to it is exact in an `f64`.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// `value` as JSON, as `JSON.stringify` would see it (an object with a
/// `toJSON` method is what it returns), with three differences that keep
/// data from being lost silently: a `Set` is an array and a `Map` an
/// object, and a function, a symbol, a BigInt, `NaN` or an infinity is
/// refused (`INVALID_INPUT` at its path, `at` being the path of `value`
/// itself). `undefined` is `null` (an absent field, inside an object).
/// Integral numbers are JSON integers.
pub fn to_json<'a>(env: &Env, value: impl Into<Option<Unknown<'a>>>, at: &str) -> Res<Value> {
    match value.into() {
        Some(value) => convert(env, value, at.to_owned(), 0, &mut None),
        None => Ok(Value::Null),
    }
}

/// [`to_json`], except that functions are accepted: each becomes `null`
/// and is listed with its path (flow conditions).
pub fn to_json_with_functions(
    env: &Env,
    value: Unknown,
    at: &str,
    functions: &mut Vec<(String, JsFunction)>,
) -> Res<Value> {
    convert(env, value, at.to_owned(), 0, &mut Some(functions))
}

fn child(at: &str, key: &str) -> String {
    if at.is_empty() {
        key.to_owned()
    } else {
        format!("{at}.{key}")
    }
}

fn path_or_root(at: &str) -> &str {
    if at.is_empty() {
        "."
    } else {
        at
    }
}

fn convert(
    env: &Env,
    value: Unknown,
    at: String,
    depth: usize,
    functions: &mut Option<&mut Vec<(String, JsFunction)>>,
) -> Res<Value> {
    let refuse = |what: &str| -> Res<Value> {
        Err(Error::invalid_at(
            path_or_root(&at),
            format!("invalid type: {what}, expected a JSON value"),
        )
        .into())
    };
    match value.get_type()? {
        ValueType::Undefined | ValueType::Null => Ok(Value::Null),
        ValueType::Boolean => Ok(Value::Bool(bool::from_unknown(value)?)),
        ValueType::String => Ok(Value::String(String::from_unknown(value)?)),
        ValueType::Number => number(f64::from_unknown(value)?, &at),
        ValueType::Function => match functions {
            Some(list) => {
                list.push((at, JsFunction::from_unknown(value)?));
                Ok(Value::Null)
            }
            None => refuse("function"),
        },
        ValueType::Object if depth >= MAX_DEPTH => Err(Error::invalid_at(
            path_or_root(&at),
            format!("nested deeper than {MAX_DEPTH} levels (a cyclic object?)"),
        )
        .into()),
        ValueType::Object => {
            if value.is_array()? {
                let array = Array::from_unknown(value)?;
                let mut items = Vec::with_capacity(array.len() as usize);
                for i in 0..array.len() {
                    let item = match array.get::<Unknown>(i)? {
                        Some(item) => {
                            convert(env, item, format!("{at}[{i}]"), depth + 1, functions)?
                        }
                        None => Value::Null,
                    };
                    items.push(item);
                }
                return Ok(Value::Array(items));
            }
            // A Set or a Map has no enumerable keys: read through its entries.
            for (class, (global, method)) in [
                ("Set", ("Array", "from")),
                ("Map", ("Object", "fromEntries")),
            ] {
                if is_instance(env, &value, class)? {
                    let plain = call_global(env, global, method, value)?;
                    return convert(env, plain, at, depth + 1, functions);
                }
            }
            let object = Object::from_unknown(value)?;
            // As JSON.stringify does: an object with a `toJSON` method is its
            // result (a Date its ISO string, a handle of this addon its core
            // JSON form).
            if let Some(method) = object.get::<Unknown>("toJSON")? {
                if method.get_type()? == ValueType::Function {
                    let method: Function<(), Unknown> = Function::from_unknown(method)?;
                    let plain = method.apply(object, ())?;
                    return convert(env, plain, at, depth + 1, functions);
                }
            }
            let mut map = Map::new();
            for key in Object::keys(&object)? {
                if let Some(item) = object.get::<Unknown>(&key)? {
                    let item = convert(env, item, child(&at, &key), depth + 1, functions)?;
                    map.insert(key, item);
                }
            }
            Ok(Value::Object(map))
        }
        ValueType::Symbol => refuse("symbol"),
        // A BigInt, an External: nothing JSON can hold.
        _ => refuse("BigInt or native value"),
    }
}

fn is_instance(env: &Env, value: &Unknown, class: &str) -> Res<bool> {
    let constructor: Unknown = env.get_global()?.get_named_property(class)?;
    Ok(value.instanceof(constructor)?)
}

/// `globalThis[object][method](value)`.
fn call_global<'a>(env: &'a Env, object: &str, method: &str, value: Unknown) -> Res<Unknown<'a>> {
    // `Array` and `Object` are functions: read as values, then as objects.
    let holder: Unknown = env.get_global()?.get_named_property(object)?;
    let holder = holder.coerce_to_object()?;
    let function: Function<Unknown, Unknown> = holder.get_named_property(method)?;
    Ok(function.apply(holder, value)?)
}

/// A JS number as JSON (`at` is its path, for the refusal of `NaN` and the
/// infinities): integral values are integers (so messages say "integer
/// `1`"; beyond 2^53 they are the integer JS holds), others floats.
pub fn number(n: f64, at: &str) -> Res<Value> {
    if !n.is_finite() {
        let shown = if n.is_nan() {
            "NaN"
        } else if n > 0.0 {
            "Infinity"
        } else {
            "-Infinity"
        };
        return Err(Error::invalid_at(
            path_or_root(at),
            format!("must be a finite number, got {shown}"),
        )
        .into());
    }
    // 2^64 and -2^63 bound the integers JSON numbers hold here; every
    // integral f64 inside them converts exactly.
    Ok(
        if n.fract() == 0.0 && (0.0..18_446_744_073_709_551_616.0).contains(&n) {
            Value::from(n as u64)
        } else if n.fract() == 0.0 && (-9_223_372_036_854_775_808.0..0.0).contains(&n) {
            Value::from(n as i64)
        } else {
            serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number)
        },
    )
}

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

// ---------------------------------------------------------------------------
// Numbers
// ---------------------------------------------------------------------------

/// A JS number that must be an integer in `MIN..=MAX` (capped at
/// [`MAX_SAFE_INTEGER`], beyond which a JS number is not exact). The
/// messages are the core's: "must be an integer from 0 to 4294967295, got
/// -1".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Uint<const MIN: u64, const MAX: u64>(pub u64);

/// A `u32` (counts, retries, seeds, iterations).
pub type U32 = Uint<0, { u32::MAX as u64 }>;
/// A `usize` or `u64` within the safe range (capacities, token counts).
pub type Count = Uint<0, { u64::MAX }>;
/// A 1-based line number.
pub type LineNo = Uint<1, { u32::MAX as u64 }>;

impl<const MIN: u64, const MAX: u64> Uint<MIN, MAX> {
    const TOP: u64 = if MAX < MAX_SAFE_INTEGER {
        MAX
    } else {
        MAX_SAFE_INTEGER
    };

    /// As a `u32` (exact when `MAX` fits; it saturates otherwise).
    pub fn as_u32(self) -> u32 {
        u32::try_from(self.0).unwrap_or(u32::MAX)
    }

    /// As a `usize` (exact: the addon is built for 64-bit targets).
    pub fn as_usize(self) -> usize {
        usize::try_from(self.0).unwrap_or(usize::MAX)
    }
}

impl<'de, const MIN: u64, const MAX: u64> Deserialize<'de> for Uint<MIN, MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Integral values arrive as integers (see [`number`]); a float
        // here is a fraction or beyond 2^64.
        let n = serde_json::Number::deserialize(d)?;
        match n.as_u64() {
            Some(v) if (MIN..=Self::TOP).contains(&v) => Ok(Uint(v)),
            _ => Err(de::Error::custom(format!(
                "must be an integer from {MIN} to {}, got {n}",
                Self::TOP
            ))),
        }
    }
}

/// A JS number that must be an integer within `±(2^53 − 1)` (timestamps).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Int(pub i64);

impl<'de> Deserialize<'de> for Int {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        const TOP: i64 = MAX_SAFE_INTEGER as i64;
        let n = serde_json::Number::deserialize(d)?;
        match n.as_i64() {
            Some(v) if (-TOP..=TOP).contains(&v) => Ok(Int(v)),
            _ => Err(de::Error::custom(format!(
                "must be an integer from {} to {TOP}, got {n}",
                -TOP
            ))),
        }
    }
}

/// A count, offset or line number as a JS number. A V8 string holds fewer
/// than 2^30 UTF-16 units, so every value derived from one fits;
/// saturating keeps the conversion total all the same.
pub fn js_count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use coderig::ErrorKind;

    fn kind_of(f: &Fail) -> Option<ErrorKind> {
        match f {
            Fail::Core(e) => Some(e.kind()),
            Fail::Js(_) => None,
        }
    }

    fn message(f: Fail) -> String {
        match f {
            Fail::Core(e) => e.message().to_owned(),
            Fail::Js(e) => format!("JS: {e}"),
        }
    }

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
    fn numbers_are_taken_exactly_or_refused_with_the_core_message() {
        let u32_cases: Vec<(Value, Result<u64, &str>)> = vec![
            (json!(0), Ok(0)),
            (json!(7), Ok(7)),
            (json!(4294967295u64), Ok(u64::from(u32::MAX))),
            (
                json!(4294967296u64),
                Err("`n`: must be an integer from 0 to 4294967295, got 4294967296"),
            ),
            (
                json!(-1),
                Err("`n`: must be an integer from 0 to 4294967295, got -1"),
            ),
            (
                json!(1.5),
                Err("`n`: must be an integer from 0 to 4294967295, got 1.5"),
            ),
            (
                json!("3"),
                Err("`n`: invalid type: string \"3\", expected a JSON number"),
            ),
            (
                Value::Null,
                Err("`n`: invalid type: null, expected a JSON number"),
            ),
        ];
        for (value, expected) in u32_cases {
            let got = decode_named::<U32>("n", value.clone())
                .map(|n| n.0)
                .map_err(message);
            assert_eq!(got, expected.map_err(str::to_owned), "{value}");
        }
        let safe = MAX_SAFE_INTEGER;
        assert_eq!(
            decode_named::<Count>("n", json!(safe)).map(|n| n.0).ok(),
            Some(safe)
        );
        assert_eq!(
            decode_named::<Count>("n", json!(9007199254740992u64))
                .map_err(message)
                .unwrap_err(),
            "`n`: must be an integer from 0 to 9007199254740991, got 9007199254740992"
        );
        assert_eq!(
            decode_named::<LineNo>("line_no", json!(0))
                .map_err(message)
                .unwrap_err(),
            "`line_no`: must be an integer from 1 to 4294967295, got 0"
        );
        for (value, expected) in [
            (json!(-5), Some(-5)),
            (json!(1_700_000_000_000u64), Some(1_700_000_000_000)),
            (json!(0.5), None),
            (json!(-9007199254740992i64), None),
        ] {
            assert_eq!(
                decode_named::<Int>("t", value.clone()).map(|n| n.0).ok(),
                expected,
                "{value}"
            );
        }
    }

    #[test]
    fn js_numbers_become_integers_when_integral() {
        let cases: Vec<(f64, Option<Value>)> = vec![
            (1.0, Some(json!(1))),
            (-0.0, Some(json!(0))),
            (-3.0, Some(json!(-3))),
            (1.5, Some(json!(1.5))),
            (9007199254740991.0, Some(json!(9007199254740991u64))),
            (9007199254740992.0, Some(json!(9007199254740992u64))),
            (1e300, Some(json!(1e300))),
            (f64::NAN, None),
            (f64::INFINITY, None),
            (f64::NEG_INFINITY, None),
        ];
        for (n, expected) in cases {
            assert_eq!(number(n, "seed").ok(), expected, "{n}");
        }
        assert_eq!(
            message(number(f64::NAN, "seed").unwrap_err()),
            "`seed`: must be a finite number, got NaN"
        );
        assert_eq!(
            message(number(f64::NEG_INFINITY, "").unwrap_err()),
            "must be a finite number, got -Infinity"
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

    #[test]
    fn the_flattened_nearest_keeps_its_camel_case_form() {
        let nearest = json!({"first_line": 2, "last_line": 6, "score": 0.5});
        assert_eq!(
            flattened("nearest", &nearest),
            json!({"firstLine": 2, "lastLine": 6, "score": 0.5})
        );
        assert_eq!(flattened("nearest", &Value::Null), Value::Null);
        assert_eq!(flattened("count", &json!(3)), json!(3));
    }

    #[test]
    fn counts_saturate_instead_of_wrapping() {
        assert_eq!(js_count(7), 7);
        assert_eq!(js_count(usize::MAX), u32::MAX);
    }
}
