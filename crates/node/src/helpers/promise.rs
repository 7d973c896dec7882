//! Promises settled by the core's work: the work runs on napi's tokio
//! runtime, and a refusal — of an argument before the work starts, or of
//! the work — rejects the Promise with the one JS form of the core's error
//! (the methods that return Promises reject, never throw, on a bad
//! argument).

use super::error::{to_js_error, Fail, Res};
use coderig::Error;
use napi::bindgen_prelude::{PromiseRaw, ToNapiValue};
use napi::Env;
use std::future::Future;

/// A Promise settled by `work`: resolved with `done`'s value, or rejected
/// with the JS form of the core's error.
pub(crate) fn promise<'env, T, V, F, D>(
    env: &'env Env,
    work: F,
    done: D,
) -> napi::Result<PromiseRaw<'env, V>>
where
    T: Send + 'static,
    V: ToNapiValue,
    F: Future<Output = Result<T, Error>> + Send + 'static,
    D: FnOnce(T) -> V + 'static,
{
    env.spawn_future_with_callback(async move { Ok(work.await) }, move |env, result| {
        result.map(done).map_err(|e| to_js_error(env, &e))
    })
}

/// A Promise rejected with `fail` (an argument the core refused before any
/// work started): the methods that return Promises reject, never throw, on
/// a bad argument.
fn rejected<'env, V>(env: &'env Env, fail: Fail) -> napi::Result<PromiseRaw<'env, V>>
where
    V: ToNapiValue + Send + 'static,
{
    match fail {
        Fail::Core(e) => promise(env, async move { Err::<V, _>(e) }, |v| v),
        Fail::Js(e) => Err(e),
    }
}

/// Runs `decode` (the synchronous reading of the arguments), then the
/// Promise `work` builds from them; a refused argument rejects it.
pub(crate) fn with_args<'env, A, V>(
    env: &'env Env,
    decode: impl FnOnce() -> Res<A>,
    work: impl FnOnce(A) -> napi::Result<PromiseRaw<'env, V>>,
) -> napi::Result<PromiseRaw<'env, V>>
where
    V: ToNapiValue + Send + 'static,
{
    match decode() {
        Ok(args) => work(args),
        Err(fail) => rejected(env, fail),
    }
}
