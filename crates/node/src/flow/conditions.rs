//! JS functions `(ctx) => boolean` as the core's own [`core::Condition`]
//! closures: called synchronously, during the binding call that evaluates
//! them (a [`with_conditions`] scope), with a JSON copy of `ctx`; the first
//! exception one throws is that call's exception, and no later condition of
//! the call runs. Outside such a call a condition is false.

use crate::helpers::{throwable, Fail, JsFunction, Res};
use coderig::flow as core;
use coderig::Error;
use napi::{Env, JsValue};
use serde_json::Value;
use std::cell::RefCell;

/// One binding call during which JS conditions may run: its `Env`, and the
/// first exception a condition threw.
pub(super) struct ConditionScope {
    env: Env,
    error: Option<napi::Error>,
}

thread_local! {
    /// The binding calls in progress on this thread, innermost last (a JS
    /// condition may itself call into the addon).
    pub(super) static SCOPES: RefCell<Vec<ConditionScope>> = const { RefCell::new(Vec::new()) };
}

/// Pops the scope pushed by [`with_conditions`] even if the core panicked.
struct ScopeGuard;

impl Drop for ScopeGuard {
    fn drop(&mut self) {
        SCOPES.with(|s| s.borrow_mut().pop());
    }
}

/// Runs `f` (a core call) with JS conditions enabled on this thread; the
/// first exception a condition threw is returned instead of `f`'s result.
pub(super) fn with_conditions<T>(env: &Env, f: impl FnOnce() -> T) -> Res<T> {
    SCOPES.with(|s| {
        s.borrow_mut().push(ConditionScope {
            env: *env,
            error: None,
        })
    });
    let guard = ScopeGuard;
    let out = f();
    let error = SCOPES.with(|s| s.borrow_mut().last_mut().and_then(|c| c.error.take()));
    drop(guard);
    match error {
        Some(e) => Err(Fail::Js(e)),
        None => Ok(out),
    }
}

/// Calls `f` with `ctx` in the innermost scope; false (without calling) when
/// there is no scope or a condition of this scope already threw.
fn call_condition(f: &JsFunction, ctx: &Value) -> bool {
    let env = SCOPES.with(|s| {
        s.borrow()
            .last()
            .and_then(|c| c.error.is_none().then_some(c.env))
    });
    let Some(env) = env else {
        return false;
    };
    // No borrow of SCOPES is held while JS runs, so a condition may re-enter.
    let result = f
        .borrow_back(&env)
        .and_then(|function| function.call(ctx.clone()))
        .map_err(Fail::Js)
        .and_then(|value| {
            // A Promise is truthy: an `async` condition would always match.
            if value.is_promise()? {
                return Err(Error::invalid_input(
                    "a flow condition returned a Promise; conditions must be synchronous",
                )
                .into());
            }
            Ok(value.coerce_to_bool()?)
        });
    match result {
        Ok(b) => b,
        Err(fail) => {
            let e = throwable(&env, fail);
            SCOPES.with(|s| {
                if let Some(scope) = s.borrow_mut().last_mut() {
                    scope.error.get_or_insert(e);
                }
            });
            false
        }
    }
}

pub(super) fn condition(f: JsFunction) -> core::Condition {
    core::Condition::new(move |ctx| call_condition(&f, ctx))
}
