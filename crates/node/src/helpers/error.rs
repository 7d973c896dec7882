//! The one mapping of a [`coderig::Error`] to a JavaScript `Error`, and
//! [`Fail`]: a core refusal or a JS exception, as a binding call ends.

use coderig::Error;
use napi::bindgen_prelude::JsObjectValue;
use napi::{Env, JsValue, Status};
use serde_json::{json, Value};

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
    build_error(env, e).unwrap_or_else(|failure| failure)
}

fn build_error(env: &Env, e: &Error) -> napi::Result<napi::Error> {
    let mut error = env.create_error(napi::Error::new(Status::GenericFailure, e.message()))?;
    // A wait that ran out of time (the core's `wait_timed_out`) is named
    // as JS names one, so callers tell it apart without reading `details`.
    if e.details().get("reason").and_then(Value::as_str) == Some("timeout") {
        error.set_named_property("name", "TimeoutError")?;
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

/// The kind of a refusal (`None`: a JS exception), for tests.
#[cfg(test)]
pub(super) fn kind_of(f: &Fail) -> Option<coderig::ErrorKind> {
    match f {
        Fail::Core(e) => Some(e.kind()),
        Fail::Js(_) => None,
    }
}

/// The message of a refusal, for tests.
#[cfg(test)]
pub(super) fn message(f: Fail) -> String {
    match f {
        Fail::Core(e) => e.message().to_owned(),
        Fail::Js(e) => format!("JS: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
