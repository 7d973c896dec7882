//! The handles `flow.Flow` and `flow.State`: a flow or a state decoded
//! once, passed to every `flow.*` function without converting it again.

use super::decode::{decode_flow, decode_state, to_value};
use crate::helpers::{js, to_json, Res};
use coderig::flow as core;
use coderig::json;
use coderig::Error;
use napi::bindgen_prelude::{ClassInstance, FromNapiValue, JavaScriptClassExt, Unknown};
use napi::{Env, ValueType};
use napi_derive::napi;
use serde_json::Value;
use std::collections::BTreeMap;
use std::ops::Deref;

/// A flow, decoded once: steps in flow order, batch limits, and the JS
/// conditions attached. Pass it to every `flow.*` function and to
/// `new flow.Scheduler(flow)`.
#[napi(namespace = "flow")]
pub struct Flow {
    pub(super) inner: core::Flow,
}

#[napi(namespace = "flow")]
impl Flow {
    /// Decodes `spec` (see the module conventions); conditions are JS
    /// functions. The flow is not validated (`flow.validate` lists its
    /// problems; `new flow.Scheduler` refuses an invalid one).
    #[napi(constructor)]
    pub fn new(
        env: Env,
        #[napi(ts_arg_type = "flow.FlowSpec")] spec: Unknown,
    ) -> napi::Result<Self> {
        js(&env, || {
            Ok(Flow {
                inner: decode_flow(&env, spec)?,
            })
        })
    }

    /// Decodes the core's JSON form exactly as the server does (a JSON
    /// string or a plain object, snake_case fields only). Conditions have
    /// no JSON form: a spec that has one is `INVALID_INPUT` (give it to the
    /// constructor as a function instead).
    #[napi(factory)]
    pub fn from_spec(
        env: Env,
        #[napi(ts_arg_type = "string | object")] spec: Unknown,
    ) -> napi::Result<Self> {
        js(&env, || {
            let value = match spec.get_type()? {
                ValueType::String => {
                    let text = String::from_unknown(spec)?;
                    serde_json::from_str(&text).map_err(|e| {
                        Error::invalid_input(format!("the spec is not valid JSON: {e}"))
                    })?
                }
                _ => to_json(&env, spec, "")?,
            };
            let decoded = json::flow(value)?;
            if let Some(path) = decoded.conditions.first() {
                return Err(Error::invalid_at(
                    path,
                    "a condition has no JSON form; give it as a function to `new flow.Flow(spec)`",
                )
                .into());
            }
            Ok(Flow {
                inner: decoded.flow,
            })
        })
    }

    /// The ids of the steps, in flow order.
    #[napi(getter)]
    pub fn step_ids(&self) -> Vec<String> {
        self.inner.steps.iter().map(|s| s.id.clone()).collect()
    }

    /// The core's JSON form of the flow (conditions are not part of it).
    #[napi(js_name = "toJSON")]
    pub fn to_json(&self) -> Value {
        to_value(&self.inner)
    }
}

/// The state of one run, decoded once. Getters return fresh copies.
#[napi(namespace = "flow")]
pub struct State {
    pub(super) inner: core::SchedulerState,
}

#[napi(namespace = "flow")]
impl State {
    /// Decodes `state` (a `flow.StateInput`; absent: the empty state).
    #[napi(constructor)]
    pub fn new(
        env: Env,
        #[napi(ts_arg_type = "flow.StateInput | null")] state: Option<Unknown>,
    ) -> napi::Result<Self> {
        js(&env, || {
            Ok(State {
                inner: decode_state(&env, state)?,
            })
        })
    }

    /// Decodes the core's JSON form exactly as the server does (what
    /// `toJSON` gives; snake_case fields only, `skipped` as a list means
    /// `condition_false`).
    #[napi(factory, js_name = "fromJSON")]
    pub fn from_json(
        env: Env,
        #[napi(ts_arg_type = "object")] state: Unknown,
    ) -> napi::Result<Self> {
        js(&env, || {
            Ok(State {
                inner: json::state(to_json(&env, state, "")?)?,
            })
        })
    }

    /// Steps that finished successfully, sorted.
    #[napi(getter)]
    pub fn done(&self) -> Vec<String> {
        self.inner.done.iter().cloned().collect()
    }

    /// Steps that did not run, with why.
    #[napi(getter, ts_return_type = "Record<string, SkipReason>")]
    pub fn skipped(&self) -> BTreeMap<String, &'static str> {
        self.inner
            .skipped
            .iter()
            .map(|(id, r)| (id.clone(), r.as_str()))
            .collect()
    }

    /// Steps that failed, sorted.
    #[napi(getter)]
    pub fn failed(&self) -> Vec<String> {
        self.inner.failed.iter().cloned().collect()
    }

    /// Steps in flight, sorted.
    #[napi(getter)]
    pub fn in_flight(&self) -> Vec<String> {
        self.inner.in_flight.iter().cloned().collect()
    }

    /// Steps excluded at launch, sorted.
    #[napi(getter)]
    pub fn excluded(&self) -> Vec<String> {
        self.inner.excluded.iter().cloned().collect()
    }

    /// Steps that timed out, sorted.
    #[napi(getter)]
    pub fn timed_out(&self) -> Vec<String> {
        self.inner.timed_out.iter().cloned().collect()
    }

    /// Decisions of finished switches: `{router: {chosen, excluded}}`.
    #[napi(
        getter,
        ts_return_type = "Record<string, { chosen: string | null, excluded: string[] }>"
    )]
    pub fn switch_results(&self) -> Value {
        to_value(&self.inner.switch_results)
    }

    /// Completed body iterations per do-while step.
    #[napi(getter)]
    pub fn loop_iterations(&self) -> BTreeMap<String, u32> {
        self.inner.loop_iterations.clone()
    }

    /// The core's JSON form of the state (what `fromJSON` reads back).
    #[napi(js_name = "toJSON")]
    pub fn to_json(&self) -> Value {
        to_value(&self.inner)
    }
}

/// A flow argument: a `Flow` handle, borrowed, or a plain spec decoded for
/// this call.
pub(super) enum FlowArg<'a> {
    Handle(ClassInstance<'a, Flow>),
    Plain(core::Flow),
}

impl Deref for FlowArg<'_> {
    type Target = core::Flow;
    fn deref(&self) -> &core::Flow {
        match self {
            FlowArg::Handle(h) => &h.inner,
            FlowArg::Plain(f) => f,
        }
    }
}

pub(super) fn flow_arg<'a>(env: &Env, value: Unknown<'a>) -> Res<FlowArg<'a>> {
    if value.get_type()? == ValueType::Object && Flow::instance_of(env, &value)? {
        return Ok(FlowArg::Handle(ClassInstance::from_unknown(value)?));
    }
    Ok(FlowArg::Plain(decode_flow(env, value)?))
}

/// A state argument: a `State` handle, borrowed, or a plain object decoded
/// for this call (`undefined` / `null`: the empty state).
pub(super) enum StateArg<'a> {
    Handle(ClassInstance<'a, State>),
    Plain(core::SchedulerState),
}

impl Deref for StateArg<'_> {
    type Target = core::SchedulerState;
    fn deref(&self) -> &core::SchedulerState {
        match self {
            StateArg::Handle(h) => &h.inner,
            StateArg::Plain(s) => s,
        }
    }
}

pub(super) fn state_arg<'a>(env: &Env, value: Option<Unknown<'a>>) -> Res<StateArg<'a>> {
    match value {
        Some(v) if v.get_type()? == ValueType::Object && State::instance_of(env, &v)? => {
            Ok(StateArg::Handle(ClassInstance::from_unknown(v)?))
        }
        v => Ok(StateArg::Plain(decode_state(env, v)?)),
    }
}
