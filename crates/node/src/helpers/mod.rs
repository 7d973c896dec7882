//! What every module of the addon shares: the one mapping of a
//! [`coderig::Error`] to a JavaScript `Error`, the conversion of JS values
//! to JSON for the core's decoders, and the checks of JS numbers.
//!
//! A binding takes its arguments as
//! [`Unknown`](napi::bindgen_prelude::Unknown), converts each one with
//! [`arg`] (or [`to_json`] + a `coderig::json` decoder), calls the core and
//! returns through [`js`]. So a wrong type, a bad name or a bad number is an
//! `INVALID_INPUT` naming the argument, with the core's message, never a
//! napi type error.
//!
//! Rooms: `error` (the one JS form of a core error, [`Fail`], [`js`]),
//! `json` (JS values as JSON), `args` (arguments and options decoded by the
//! core), `numbers` (JS numbers as exact integers) and `promise` (Promises
//! settled by the core's work on napi's tokio runtime).

mod args;
mod error;
mod json;
mod numbers;
mod promise;

pub use args::{
    arg, decode_named, name_arg, opt_name_arg, options, parse_name, records, require_object,
    snake_case, snake_keys,
};
pub use error::{js, throwable, to_js_error, Fail, Res};
pub use json::{number, to_json, to_json_with_functions, JsFunction};
pub use numbers::{js_count, Count, Int, LineNo, Uint, MAX_SAFE_INTEGER, U32};
pub(crate) use promise::{promise, with_args};
