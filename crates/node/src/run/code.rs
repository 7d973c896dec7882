//! `code` steps: JS functions `{stepId: (ctx) => value}` as the core's
//! [`CodeStep`]s.
//!
//! Each is called on the JS thread (through a threadsafe function) with a
//! JSON copy of the step's context `{input, results, steps, iteration}`.
//! Its value is the step's result; a returned Promise (an `async` function)
//! is awaited. A throw or a rejection fails the attempt with the thrown
//! error's message (retried by the step's `retry`): kind `agent`, with
//! `exception` (the error's name) and `traceback` (its stack) as in Python;
//! a thrown coderig error keeps its kind and details. The functions are
//! held weakly, so a pending code step does not keep Node alive by itself
//! (a pending `run.wait()` or `events()` does).

use crate::helpers::{to_json, Fail, Res};
use coderig::flow::engine::{CodeStep, CodeSteps};
use coderig::{Error, ErrorKind};
use napi::bindgen_prelude::{FnArgs, FromNapiValue, Function, JsObjectValue, Object, Unknown};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, JsError, JsValue, Status, ValueType};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex as StdMutex};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// A JS function `(ctx) => value | Promise<value>` callable from any
/// thread. Weak: it does not keep the event loop alive; exceptions are
/// handed to the callback (`CalleeHandled` false: no error-first argument).
type CodeFunction = ThreadsafeFunction<Value, Unknown<'static>, Value, Status, false, true>;

/// How one call of a code step ends, sent once from the JS thread.
type Outcome = Result<Value, Error>;

/// The sending half of one call's outcome, shared by the callbacks that
/// may settle it (a Promise's fulfilment and rejection): the first wins.
#[derive(Clone)]
struct Settle(Arc<StdMutex<Option<oneshot::Sender<Outcome>>>>);

impl Settle {
    fn send(&self, outcome: Outcome) {
        let sender = self.0.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(sender) = sender {
            // The step may have been cancelled meanwhile: nobody listens.
            let _ = sender.send(outcome);
        }
    }
}

/// A `code` step whose callable is a JS function.
struct JsCode {
    step: String,
    function: CodeFunction,
}

#[async_trait::async_trait]
impl CodeStep for JsCode {
    /// Calls the function on the JS thread and waits for its outcome. A
    /// cancelled step (timeout, run cancelled) drops this future: the JS
    /// function cannot be interrupted, its late outcome is ignored.
    async fn call(&self, ctx: Value, _cancel: CancellationToken) -> Result<Value, Error> {
        let (sender, receiver) = oneshot::channel();
        let settle = Settle(Arc::new(StdMutex::new(Some(sender))));
        let status = self.function.call_with_return_value(
            ctx,
            ThreadsafeFunctionCallMode::NonBlocking,
            move |returned, env| {
                match returned {
                    Ok(value) => settle_returned(&env, value, settle),
                    // A synchronous throw: napi hands back the thrown value.
                    Err(e) => settle.send(Err(thrown(&env, JsError::from(e).into_unknown(env)))),
                }
                // Never an Err here: napi would make it a fatal exception.
                Ok(())
            },
        );
        if status != Status::Ok {
            return Err(Error::unavailable(format!(
                "code step {:?}: its JavaScript function cannot be called ({status}: Node is exiting?)",
                self.step
            )));
        }
        receiver.await.unwrap_or_else(|_| {
            Err(Error::unavailable(format!(
                "code step {:?}: its JavaScript function never settled (Node is exiting?)",
                self.step
            )))
        })
    }
}

/// What a call returned: a Promise is followed to its end, any other value
/// is the result.
fn settle_returned(env: &Env, value: Unknown, settle: Settle) {
    match value.is_promise() {
        Ok(true) => {
            if let Err(e) = follow(env, value, settle.clone()) {
                settle.send(Err(Error::internal(format!(
                    "cannot await the code step's Promise: {e}"
                ))));
            }
        }
        _ => settle.send(result_json(env, value)),
    }
}

/// `promise.then(resolved, rejected)`, each settling the call.
fn follow(env: &Env, promise: Unknown, settle: Settle) -> napi::Result<()> {
    type Callback<'env> = Function<'env, (), ()>;
    type Then<'env> = Function<'env, FnArgs<(Callback<'env>, Callback<'env>)>, Unknown<'env>>;
    let object = Object::from_unknown(promise)?;
    let then: Then = object.get_named_property("then")?;
    let done = settle.clone();
    let resolved =
        env.create_function_from_closure::<(), (), _>("coderigResolved", move |ctx| {
            let value: Unknown = ctx.first_arg()?;
            done.send(result_json(ctx.env, value));
            Ok(())
        })?;
    let rejected =
        env.create_function_from_closure::<(), (), _>("coderigRejected", move |ctx| {
            let reason: Unknown = ctx.first_arg()?;
            settle.send(Err(thrown(ctx.env, reason)));
            Ok(())
        })?;
    then.apply(object, (resolved, rejected).into())?;
    Ok(())
}

/// A code step's value as JSON (`result` is its path in a refusal: a
/// function, a symbol, `NaN` inside it fail the attempt).
fn result_json(env: &Env, value: Unknown) -> Outcome {
    to_json(env, value, "result").map_err(|fail| match fail {
        Fail::Core(e) => e,
        Fail::Js(e) => Error::new(ErrorKind::Agent, e.reason.clone()),
    })
}

/// The core error for what a code step threw (or rejected with), as the
/// Python face reports an exception: a thrown coderig error (one with a
/// taxonomy `kind`, as this addon's rejections have) keeps its kind,
/// message and details; anything else is kind `agent` (the step's work
/// failed, as a failing command's does) with the thrown error's message
/// (its name when the message is empty, a thrown string itself) and
/// details `exception` (the error's name: `TypeError`, ...) and
/// `traceback` (its `stack`).
fn thrown(env: &Env, value: Unknown) -> Error {
    read_thrown(env, value).unwrap_or_else(|e| {
        Error::new(
            ErrorKind::Agent,
            format!("the code step threw a value that cannot be read: {e}"),
        )
    })
}

fn read_thrown(env: &Env, value: Unknown) -> napi::Result<Error> {
    match value.get_type()? {
        ValueType::String => Ok(Error::new(ErrorKind::Agent, String::from_unknown(value)?)),
        ValueType::Object | ValueType::Function => {
            let object = Object::from_unknown(value)?;
            let text = |key: &str| -> napi::Result<Option<String>> {
                let v: Option<Unknown> = object.get(key)?;
                match v {
                    Some(v) if v.get_type()? == ValueType::String => {
                        Ok(Some(String::from_unknown(v)?))
                    }
                    _ => Ok(None),
                }
            };
            let name = text("name")?;
            let message = text("message")?
                .filter(|m| !m.is_empty())
                .or_else(|| name.clone())
                .unwrap_or_else(|| "the code step threw an object without a message".into());
            if let Some(kind) = text("kind")?.and_then(|k| k.parse::<ErrorKind>().ok()) {
                let details: Option<Unknown> = object.get("details")?;
                let mut error = Error::new(kind, message);
                if let Some(Value::Object(details)) =
                    details.and_then(|d| to_json(env, d, "details").ok())
                {
                    for (key, item) in details {
                        error = error.with_detail(&key, item);
                    }
                }
                return Ok(error);
            }
            let mut error = Error::new(ErrorKind::Agent, message);
            if let Some(name) = name {
                error = error.with_detail("exception", name);
            }
            if let Some(stack) = text("stack")? {
                error = error.with_detail("traceback", stack);
            }
            Ok(error)
        }
        _ => {
            let shown = to_json(env, value, "")
                .map(|v| v.to_string())
                .unwrap_or_else(|_| "a value that is not JSON".into());
            Ok(Error::new(
                ErrorKind::Agent,
                format!("the code step threw {shown}"),
            ))
        }
    }
}

/// What a JS value is, for a refusal's message.
fn kind_of(value: &Unknown) -> Res<&'static str> {
    Ok(match value.get_type()? {
        ValueType::Undefined => "undefined",
        ValueType::Null => "null",
        ValueType::Boolean => "a boolean",
        ValueType::Number => "a number",
        ValueType::String => "a string",
        ValueType::Symbol => "a symbol",
        ValueType::Function => "a function",
        ValueType::Object if value.is_array()? => "an array",
        ValueType::Object => "an object",
        _ => "a native value",
    })
}

/// `runFlow`'s options (`{code}`) as the core's callables, each JS
/// function wrapped on this (the JS) thread.
pub(crate) fn decode_code(options: Option<Unknown>) -> Res<CodeSteps> {
    let mut code: CodeSteps = HashMap::new();
    let Some(options) = options else {
        return Ok(code);
    };
    match options.get_type()? {
        ValueType::Undefined | ValueType::Null => return Ok(code),
        ValueType::Object if !options.is_array()? => {}
        _ => {
            return Err(Error::invalid_at(
                "options",
                format!(
                    "must be an object of options ({{code}}), got {}",
                    kind_of(&options)?
                ),
            )
            .into())
        }
    }
    let options = Object::from_unknown(options)?;
    for key in Object::keys(&options)? {
        if key != "code" {
            return Err(
                Error::invalid_at(&key, format!("unknown field `{key}`, expected `code`")).into(),
            );
        }
    }
    let steps: Option<Unknown> = options.get("code")?;
    let Some(steps) = steps else {
        return Ok(code);
    };
    match steps.get_type()? {
        ValueType::Undefined | ValueType::Null => return Ok(code),
        ValueType::Object if !steps.is_array()? => {}
        _ => {
            return Err(Error::invalid_at(
                "code",
                format!(
                    "must be an object of functions by step id, got {}",
                    kind_of(&steps)?
                ),
            )
            .into())
        }
    }
    let steps = Object::from_unknown(steps)?;
    for step in Object::keys(&steps)? {
        let Some(value) = steps.get::<Unknown>(&step)? else {
            continue;
        };
        if value.get_type()? != ValueType::Function {
            return Err(Error::invalid_at(
                &format!("code.{step}"),
                format!(
                    "must be a function (ctx) => value, got {}",
                    kind_of(&value)?
                ),
            )
            .into());
        }
        let function: Function<Value, Unknown<'static>> = Function::from_unknown(value)?;
        let function: CodeFunction = function
            .build_threadsafe_function::<Value>()
            .weak::<true>()
            .callee_handled::<false>()
            .build()?;
        code.insert(step.clone(), Arc::new(JsCode { step, function }));
    }
    Ok(code)
}
