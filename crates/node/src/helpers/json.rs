//! JS values as JSON, as `JSON.stringify` sees them, for the core's
//! decoders — with nothing lost silently (a function, a symbol, `NaN` is
//! refused at its path).

use super::error::Res;
use coderig::Error;
use napi::bindgen_prelude::{
    Array, FromNapiValue, Function, FunctionRef, JsObjectValue, Object, Unknown,
};
use napi::{Env, JsValue, ValueType};
use serde_json::{Map, Value};

/// A JS function held by reference (flow conditions). Its result is read
/// as an `Unknown` only to be coerced to a boolean at once, within the call
/// that runs it; the `'static` is never relied on.
pub type JsFunction = FunctionRef<Value, Unknown<'static>>;

/// Deeper values are refused: a cyclic object would otherwise recurse
/// forever.
const MAX_DEPTH: usize = 128;

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

pub(super) fn path_or_root(at: &str) -> &str {
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

#[cfg(test)]
mod tests {
    use super::super::error::message;
    use super::*;
    use serde_json::json;

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
}
