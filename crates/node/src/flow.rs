//! `flow.*`: the flow scheduling decisions of [`coderig::flow`] for JavaScript.
//!
//! Conventions (every function converts and calls the core, nothing more):
//! - Handles hold core values: `new flow.Flow(spec)` decodes a spec once
//!   (with its JS conditions attached), `flow.State.fromJSON(obj)` a state,
//!   `new flow.Scheduler(flow)` holds the incremental scheduler. Every
//!   function takes the handles (the documented way: a call then converts
//!   only its own other arguments) or, for convenience, plain objects,
//!   decoded for that call alone.
//! - A spec is the core's JSON form (`{steps: [...], batch_config?}`, as
//!   `POST /api/flows/validate` takes it), decoded by the core: unknown
//!   fields, bad names and bad numbers are `INVALID_INPUT` with the path of
//!   the field (`steps[0].trigger_rule`). camelCase field names are accepted
//!   (`triggerRule` is `trigger_rule`), and so are `batchMaxConcurrent` /
//!   `batchJoinRule` for `batch_config`'s fields; messages use the core's
//!   names. A state is decoded by the core too (`skipped` as a list of ids
//!   means `condition_false`); id sets may be arrays or `Set`s.
//! - Conditions (`Case.condition`, `Step.loopCondition`, `Step.when`) are JS
//!   functions `(ctx) => boolean` (any truthy result matches). They become
//!   the core's own [`core::Condition`] closures, so the core decides when
//!   and in which order they run; they are called synchronously, during the
//!   binding call that evaluates them, with a copy of `ctx` converted as
//!   JSON (as every face of the core sees it). A condition that throws makes
//!   that call throw the same exception, and no later condition of the call
//!   runs. Outside such a call a condition is false.
//! - Errors are the core's: `INVALID_INPUT` for bad input, and for a
//!   refused `Scheduler` event `CONFLICT` (`invalid_transition`,
//!   `already_started`, `not_started`, `loop_body_busy`), `NOT_FOUND_ID`
//!   (`unknown_step`) or `INVALID_INPUT` (`invalid` flow with `errors`,
//!   `switch_outcome_required`, `not_a_switch`, `unknown_case`,
//!   `not_a_loop`), the `FlowError` name in `details.reason`; a refused
//!   event changes nothing.

use crate::helpers::{
    arg, js, name_arg, opt_name_arg, parse_name, records, snake_case, snake_keys, throwable,
    to_json, to_json_with_functions, Fail, JsFunction, Res, U32,
};
use coderig::flow as core;
use coderig::json;
use coderig::Error;
use napi::bindgen_prelude::{ClassInstance, FromNapiValue, JavaScriptClassExt, Unknown};
use napi::{Env, JsValue, ValueType};
use napi_derive::napi;
use serde::Deserialize;
use serde_json::Value;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Deref;

// ---------------------------------------------------------------------------
// JS conditions as core conditions
// ---------------------------------------------------------------------------

/// One binding call during which JS conditions may run: its `Env`, and the
/// first exception a condition threw.
struct ConditionScope {
    env: Env,
    error: Option<napi::Error>,
}

thread_local! {
    /// The binding calls in progress on this thread, innermost last (a JS
    /// condition may itself call into the addon).
    static SCOPES: RefCell<Vec<ConditionScope>> = const { RefCell::new(Vec::new()) };
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
fn with_conditions<T>(env: &Env, f: impl FnOnce() -> T) -> Res<T> {
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

fn condition(f: JsFunction) -> core::Condition {
    core::Condition::new(move |ctx| call_condition(&f, ctx))
}

// ---------------------------------------------------------------------------
// Specs: JS objects to core flows and steps
// ---------------------------------------------------------------------------

/// The conditions taken out of one step object before the core decodes it.
#[derive(Default)]
struct StepConditions {
    when: Option<core::Condition>,
    loop_condition: Option<core::Condition>,
    cases: Vec<(usize, core::Condition)>,
}

impl StepConditions {
    fn attach(self, step: &mut core::Step) {
        step.when = self.when;
        step.loop_condition = self.loop_condition;
        for (k, c) in self.cases {
            if let Some(case) = step.cases.get_mut(k) {
                case.condition = Some(c);
            }
        }
    }
}

/// The functions of a converted spec, by the (snake_case) path they were at.
type Functions = HashMap<String, JsFunction>;

/// The condition at `path`: the function found there, none for `null`,
/// else `INVALID_INPUT`.
fn condition_at(
    path: String,
    value: Value,
    functions: &mut Functions,
) -> Res<Option<core::Condition>> {
    if let Some(f) = functions.remove(&path) {
        return Ok(Some(condition(f)));
    }
    match value {
        Value::Null => Ok(None),
        other => Err(Error::invalid_at(
            &path,
            format!(
                "a condition must be a function (ctx) => boolean, got {}",
                json::describe(&other)
            ),
        )
        .into()),
    }
}

/// Takes `when`, `loop_condition` and each case's `condition` out of the
/// step object `step` (at path `at`), which the core then decodes without
/// them.
fn take_conditions(step: &mut Value, at: &str, functions: &mut Functions) -> Res<StepConditions> {
    let mut out = StepConditions::default();
    let Some(fields) = step.as_object_mut() else {
        return Ok(out);
    };
    let prefix = if at.is_empty() {
        String::new()
    } else {
        format!("{at}.")
    };
    if let Some(v) = fields.remove("when") {
        out.when = condition_at(format!("{prefix}when"), v, functions)?;
    }
    if let Some(v) = fields.remove("loop_condition") {
        out.loop_condition = condition_at(format!("{prefix}loop_condition"), v, functions)?;
    }
    if let Some(Value::Array(cases)) = fields.get_mut("cases") {
        for (k, case) in cases.iter_mut().enumerate() {
            if let Some(v) = case.as_object_mut().and_then(|c| c.remove("condition")) {
                let path = format!("{prefix}cases[{k}].condition");
                if let Some(c) = condition_at(path, v, functions)? {
                    out.cases.push((k, c));
                }
            }
        }
    }
    Ok(out)
}

/// `value` as JSON with snake_case keys throughout, and its functions by
/// path.
fn spec_json(env: &Env, value: Unknown) -> Res<(Value, Functions)> {
    let mut found = Vec::new();
    let mut spec = to_json_with_functions(env, value, "", &mut found)?;
    snake_keys(&mut spec, true);
    // Every key of a spec is a field name, so its paths convert the same way.
    let functions = found
        .into_iter()
        .map(|(path, f)| (snake_case(&path), f))
        .collect();
    Ok((spec, functions))
}

/// A function left over is one outside a condition field.
fn refuse_stray_functions(functions: Functions) -> Res<()> {
    match functions.keys().min() {
        None => Ok(()),
        Some(path) => Err(Error::invalid_at(
            path,
            "invalid type: function; only `when`, `loop_condition` and a case's `condition` take functions",
        )
        .into()),
    }
}

/// A flow spec (JS object, conditions as functions) as a core flow.
fn decode_flow(env: &Env, value: Unknown) -> Res<core::Flow> {
    let (mut spec, mut functions) = spec_json(env, value)?;
    let mut conditions = Vec::new();
    if let Some(fields) = spec.as_object_mut() {
        // The flat spelling of `batch_config`'s fields, as Python's
        // `Flow(steps, batch_max_concurrent=..., batch_join_rule=...)`.
        for (flat, field) in [
            ("batch_max_concurrent", "max_concurrent"),
            ("batch_join_rule", "join_rule"),
        ] {
            if let Some(v) = fields.remove(flat) {
                let config = fields
                    .entry("batch_config")
                    .or_insert_with(|| Value::Object(Default::default()));
                match config.as_object_mut() {
                    Some(c) if !c.contains_key(field) => {
                        c.insert(field.to_owned(), v);
                    }
                    _ => {
                        return Err(Error::invalid_at(
                            flat,
                            format!("give `batch_config.{field}` or `{flat}`, not both"),
                        )
                        .into())
                    }
                }
            }
        }
        if let Some(Value::Array(steps)) = fields.get_mut("steps") {
            for (i, step) in steps.iter_mut().enumerate() {
                conditions.push(take_conditions(
                    step,
                    &format!("steps[{i}]"),
                    &mut functions,
                )?);
            }
        }
    }
    refuse_stray_functions(functions)?;
    let mut flow = json::flow(spec)?.flow;
    for (step, c) in flow.steps.iter_mut().zip(conditions) {
        c.attach(step);
    }
    Ok(flow)
}

/// A step spec (JS object) as a core step; paths are relative to the step.
fn decode_step(env: &Env, value: Unknown) -> Res<core::Step> {
    let (mut spec, mut functions) = spec_json(env, value)?;
    let conditions = take_conditions(&mut spec, "", &mut functions)?;
    refuse_stray_functions(functions)?;
    let mut step = json::step(spec)?;
    conditions.attach(&mut step);
    Ok(step)
}

/// A flow argument: a `Flow` handle, borrowed, or a plain spec decoded for
/// this call.
enum FlowArg<'a> {
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

fn flow_arg<'a>(env: &Env, value: Unknown<'a>) -> Res<FlowArg<'a>> {
    if value.get_type()? == ValueType::Object && Flow::instance_of(env, &value)? {
        return Ok(FlowArg::Handle(ClassInstance::from_unknown(value)?));
    }
    Ok(FlowArg::Plain(decode_flow(env, value)?))
}

/// A state argument: a `State` handle, borrowed, or a plain object decoded
/// for this call (`undefined` / `null`: the empty state).
enum StateArg<'a> {
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

fn state_arg<'a>(env: &Env, value: Option<Unknown<'a>>) -> Res<StateArg<'a>> {
    match value {
        Some(v) if v.get_type()? == ValueType::Object && State::instance_of(env, &v)? => {
            Ok(StateArg::Handle(ClassInstance::from_unknown(v)?))
        }
        v => Ok(StateArg::Plain(decode_state(env, v)?)),
    }
}

fn decode_state(env: &Env, value: Option<Unknown>) -> Res<core::SchedulerState> {
    let mut state = to_json(env, value, "")?;
    if state.is_null() {
        return Ok(core::SchedulerState::new());
    }
    // Only the field names: the maps inside are keyed by step ids.
    snake_keys(&mut state, false);
    Ok(json::state(state)?)
}

/// JSON of a core value (the core's own serde form).
fn to_value<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

// ---------------------------------------------------------------------------
// Handles
// ---------------------------------------------------------------------------

/// A flow, decoded once: steps in flow order, batch limits, and the JS
/// conditions attached. Pass it to every `flow.*` function and to
/// `new flow.Scheduler(flow)`.
#[napi(namespace = "flow")]
pub struct Flow {
    inner: core::Flow,
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
    inner: core::SchedulerState,
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
    #[napi(
        getter,
        ts_return_type = "Record<string, 'upstream_failed' | 'branch_not_taken' | 'condition_false' | 'excluded'>"
    )]
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

// ---------------------------------------------------------------------------
// The TypeScript shapes of plain specs and states (decoded by the core)
// ---------------------------------------------------------------------------

/// One branch of a switch step.
#[napi(
    object,
    object_to_js = false,
    object_from_js = false,
    namespace = "flow"
)]
pub struct CaseSpec {
    /// The label reported as the switch's chosen case.
    pub label: String,
    /// Every step of this branch.
    pub steps: Vec<String>,
    /// When the case matches, `(ctx) => boolean` (truthy matches; it gets a
    /// JSON copy of `ctx`, and must be synchronous); absent: never.
    #[napi(ts_type = "((ctx: any) => unknown) | null")]
    pub condition: Option<Value>,
}

/// One node of a flow. Absent fields take the core's defaults.
#[napi(
    object,
    object_to_js = false,
    object_from_js = false,
    namespace = "flow"
)]
pub struct StepSpec {
    /// Unique id within the flow.
    pub id: String,
    /// What the step does.
    #[napi(ts_type = "'agent' | 'code' | 'approval' | 'switch' | 'do_while'")]
    pub kind: String,
    /// Ids of the steps this one waits for.
    pub deps: Option<Vec<String>>,
    /// How the dependencies' outcomes decide whether it runs (default `'all_success'`).
    #[napi(
        ts_type = "'all_success' | 'all_failed' | 'all_done' | 'all_skipped' | 'one_success' | 'one_failed' | 'one_done' | 'none_failed' | 'none_failed_min_one_success' | 'none_skipped' | 'always'"
    )]
    pub trigger_rule: Option<String>,
    /// The batch group it belongs to.
    #[napi(ts_type = "string | null")]
    pub batch: Option<String>,
    /// Retries allowed after the first attempt (default 0).
    pub max_retries: Option<u32>,
    /// Time limit per attempt in seconds (`null`: none).
    #[napi(ts_type = "number | null")]
    pub timeout: Option<u32>,
    /// A switch's cases, tried in order.
    #[napi(ts_type = "Array<flow.CaseSpec>")]
    pub cases: Option<Value>,
    /// A switch's default branch.
    pub default_branch: Option<Vec<String>>,
    /// A do-while's body.
    pub loop_body: Option<Vec<String>>,
    /// A do-while repeats while this holds, `(ctx) => boolean`.
    #[napi(ts_type = "((ctx: any) => unknown) | null")]
    pub loop_condition: Option<Value>,
    /// A do-while's iteration cap (default 100).
    pub loop_max_iterations: Option<u32>,
    /// Launch-time guard, `(ctx) => boolean` (see `manifestSteps`).
    #[napi(ts_type = "((ctx: any) => unknown) | null")]
    pub when: Option<Value>,
}

/// A flow spec: steps in flow order plus the batch limits.
#[napi(
    object,
    object_to_js = false,
    object_from_js = false,
    namespace = "flow"
)]
pub struct FlowSpec {
    /// The steps, in flow order.
    #[napi(ts_type = "Array<flow.StepSpec>")]
    pub steps: Value,
    /// Cap on running steps per batch group (`null`: unbounded); the same
    /// as `batch_config.max_concurrent`.
    #[napi(ts_type = "number | null")]
    pub batch_max_concurrent: Option<u32>,
    /// Rule by which a batch group as a whole succeeded (default
    /// `'all_success'`); the same as `batch_config.join_rule`.
    #[napi(
        ts_type = "'all_success' | 'all_failed' | 'all_done' | 'all_skipped' | 'one_success' | 'one_failed' | 'one_done' | 'none_failed' | 'none_failed_min_one_success' | 'none_skipped' | 'always'"
    )]
    pub batch_join_rule: Option<String>,
}

/// The state of one run as a plain object. Every field is optional (empty).
#[napi(
    object,
    object_to_js = false,
    object_from_js = false,
    namespace = "flow"
)]
pub struct StateInput {
    /// Steps that finished successfully.
    #[napi(ts_type = "string[] | Set<string>")]
    pub done: Option<Value>,
    /// Steps that did not run: ids (each as `condition_false`) or `{id: reason}`.
    #[napi(
        ts_type = "string[] | Set<string> | Record<string, 'upstream_failed' | 'branch_not_taken' | 'condition_false' | 'excluded'>"
    )]
    pub skipped: Option<Value>,
    /// Steps that failed.
    #[napi(ts_type = "string[] | Set<string>")]
    pub failed: Option<Value>,
    /// Steps dispatched and not finished.
    #[napi(ts_type = "string[] | Set<string>")]
    pub in_flight: Option<Value>,
    /// Steps excluded at launch.
    #[napi(ts_type = "string[] | Set<string>")]
    pub excluded: Option<Value>,
    /// Steps that timed out (they count as failed).
    #[napi(ts_type = "string[] | Set<string>")]
    pub timed_out: Option<Value>,
    /// Decisions of finished switches: `{router: [chosenLabel | null,
    /// excludedIds]}` or `{router: {chosen, excluded}}`.
    #[napi(
        ts_type = "Record<string, [string | null, string[] | Set<string>] | { chosen: string | null, excluded: string[] }>"
    )]
    pub switch_results: Option<Value>,
    /// Completed body iterations per do-while step.
    #[napi(ts_type = "Record<string, number>")]
    pub loop_iterations: Option<Value>,
}

// ---------------------------------------------------------------------------
// Pure decisions
// ---------------------------------------------------------------------------

/// A step skipped with its reason.
#[napi(object, object_from_js = false, namespace = "flow")]
pub struct Skip {
    /// The step.
    pub id: String,
    /// Why it did not run.
    #[napi(ts_type = "'upstream_failed' | 'branch_not_taken' | 'condition_false' | 'excluded'")]
    pub reason: String,
}

fn skips(list: Vec<(String, core::SkipReason)>) -> Vec<Skip> {
    list.into_iter()
        .map(|(id, r)| Skip {
            id,
            reason: r.as_str().to_owned(),
        })
        .collect()
}

/// The steps that may start now, in flow order (batch caps not applied; see
/// `readyInBatch`).
#[napi(namespace = "flow")]
pub fn ready_steps(
    env: Env,
    #[napi(ts_arg_type = "flow.Flow | flow.FlowSpec")] flow: Unknown,
    #[napi(ts_arg_type = "flow.State | flow.StateInput | null")] state: Option<Unknown>,
) -> napi::Result<Vec<String>> {
    js(&env, || {
        Ok(core::ready_steps(
            &*flow_arg(&env, flow)?,
            &*state_arg(&env, state)?,
        ))
    })
}

/// The skips a runtime should record now (`{id, reason}` in flow order):
/// every not-started step that can never run, transitively.
#[napi(namespace = "flow")]
pub fn propagate_skips(
    env: Env,
    #[napi(ts_arg_type = "flow.Flow | flow.FlowSpec")] flow: Unknown,
    #[napi(ts_arg_type = "flow.State | flow.StateInput | null")] state: Option<Unknown>,
) -> napi::Result<Vec<Skip>> {
    js(&env, || {
        Ok(skips(core::propagate_skips(
            &*flow_arg(&env, flow)?,
            &*state_arg(&env, state)?,
        )))
    })
}

/// True when `rule` lets a step with these `deps` run now in `state`.
#[napi(namespace = "flow")]
pub fn evaluate_trigger_rule(
    env: Env,
    #[napi(ts_arg_type = "string[]")] deps: Unknown,
    #[napi(ts_arg_type = "flow.State | flow.StateInput | undefined | null")] state: Unknown,
    #[napi(
        ts_arg_type = "'all_success' | 'all_failed' | 'all_done' | 'all_skipped' | 'one_success' | 'one_failed' | 'one_done' | 'none_failed' | 'none_failed_min_one_success' | 'none_skipped' | 'always'"
    )]
    rule: Unknown,
) -> napi::Result<bool> {
    js(&env, || {
        let deps: Vec<String> = arg(&env, "deps", deps)?;
        let state = state_arg(&env, Some(state))?;
        let rule = name_arg(&env, "rule", rule)?;
        Ok(core::evaluate_trigger_rule(&deps, &state, rule))
    })
}

/// One batch group as `buildBatchState` reports it.
#[napi(
    object,
    object_from_js = false,
    namespace = "flow",
    use_nullable = true
)]
pub struct BatchGroup {
    /// Members of the group in flight, sorted.
    pub running: Vec<String>,
    /// The group's cap (`null`: unbounded).
    pub max_concurrent: Option<f64>,
    /// The group's join rule.
    #[napi(
        ts_type = "'all_success' | 'all_failed' | 'all_done' | 'all_skipped' | 'one_success' | 'one_failed' | 'one_done' | 'none_failed' | 'none_failed_min_one_success' | 'none_skipped' | 'always'"
    )]
    pub join_rule: String,
}

/// Every batch group named by a step, with its running members:
/// `{batch: {running, maxConcurrent, joinRule}}`.
#[napi(namespace = "flow")]
pub fn build_batch_state(
    env: Env,
    #[napi(ts_arg_type = "flow.Flow | flow.FlowSpec")] flow: Unknown,
    #[napi(ts_arg_type = "string[] | Set<string>")] in_flight: Unknown,
) -> napi::Result<BTreeMap<String, BatchGroup>> {
    js(&env, || {
        let flow = flow_arg(&env, flow)?;
        let in_flight: BTreeSet<String> = arg(&env, "in_flight", in_flight)?;
        Ok(core::build_batch_state(&flow, &in_flight)
            .into_iter()
            .map(|(name, g)| {
                let group = BatchGroup {
                    running: g.running.into_iter().collect(),
                    max_concurrent: g.max_concurrent.map(|n| n as f64),
                    join_rule: g.join_rule.as_str().to_owned(),
                };
                (name, group)
            })
            .collect())
    })
}

/// The subset of `readyIds` to dispatch now, in their order: a batch group
/// admits at most `maxConcurrent − running` more.
#[napi(namespace = "flow")]
pub fn ready_in_batch(
    env: Env,
    #[napi(ts_arg_type = "flow.Flow | flow.FlowSpec")] flow: Unknown,
    #[napi(ts_arg_type = "flow.State | flow.StateInput | undefined | null")] state: Unknown,
    #[napi(ts_arg_type = "string[]")] ready_ids: Unknown,
) -> napi::Result<Vec<String>> {
    js(&env, || {
        let flow = flow_arg(&env, flow)?;
        let state = state_arg(&env, Some(state))?;
        let ready: Vec<String> = arg(&env, "ready_ids", ready_ids)?;
        Ok(core::ready_in_batch(&flow, &state, &ready))
    })
}

/// Whether batch group `batch` as a whole satisfies the flow's join rule;
/// `null` when no step names that group.
#[napi(namespace = "flow")]
pub fn is_batch_joined(
    env: Env,
    #[napi(ts_arg_type = "flow.Flow | flow.FlowSpec")] flow: Unknown,
    #[napi(ts_arg_type = "flow.State | flow.StateInput | undefined | null")] state: Unknown,
    #[napi(ts_arg_type = "string")] batch: Unknown,
) -> napi::Result<Option<bool>> {
    js(&env, || {
        let flow = flow_arg(&env, flow)?;
        let state = state_arg(&env, Some(state))?;
        let batch: String = arg(&env, "batch", batch)?;
        Ok(core::is_batch_joined(&flow, &state, &batch))
    })
}

/// Decides a switch on `ctx`: `[chosenLabel | null, excludedIds]`. The
/// first case whose condition holds wins (later conditions are not called).
#[napi(namespace = "flow", ts_return_type = "[string | null, string[]]")]
pub fn resolve_switch(
    env: Env,
    #[napi(ts_arg_type = "flow.StepSpec")] step: Unknown,
    #[napi(ts_arg_type = "unknown")] ctx: Option<Unknown>,
) -> napi::Result<(Option<String>, Vec<String>)> {
    js(&env, || {
        let step = decode_step(&env, step)?;
        let ctx = to_json(&env, ctx, "ctx")?;
        with_conditions(&env, || core::resolve_switch(&step, &ctx))
    })
}

/// Whether a do-while stops after `iterations` completed body runs: at the
/// cap, or when its condition is false on `ctx` (not called at 0 iterations
/// or at the cap).
#[napi(namespace = "flow")]
pub fn is_loop_terminated(
    env: Env,
    #[napi(ts_arg_type = "flow.StepSpec")] step: Unknown,
    #[napi(ts_arg_type = "unknown")] ctx: Unknown,
    #[napi(ts_arg_type = "number")] iterations: Unknown,
) -> napi::Result<bool> {
    js(&env, || {
        let step = decode_step(&env, step)?;
        let ctx = to_json(&env, ctx, "ctx")?;
        let iterations: U32 = arg(&env, "iterations", iterations)?;
        with_conditions(&env, || {
            core::is_loop_terminated(&step, &ctx, iterations.as_u32())
        })
    })
}

/// The steps excluded at launch: those whose `when` guard is false on `ctx`.
#[napi(namespace = "flow")]
pub fn manifest_steps(
    env: Env,
    #[napi(ts_arg_type = "flow.Flow | flow.FlowSpec")] flow: Unknown,
    #[napi(ts_arg_type = "unknown")] ctx: Option<Unknown>,
) -> napi::Result<Vec<String>> {
    js(&env, || {
        let flow = flow_arg(&env, flow)?;
        let ctx = to_json(&env, ctx, "ctx")?;
        let excluded = with_conditions(&env, || core::manifest_steps(&flow, &ctx))?;
        Ok(excluded.into_iter().collect())
    })
}

/// True when every step is settled and none is in flight.
#[napi(namespace = "flow")]
pub fn is_run_complete(
    env: Env,
    #[napi(ts_arg_type = "flow.Flow | flow.FlowSpec")] flow: Unknown,
    #[napi(ts_arg_type = "flow.State | flow.StateInput | null")] state: Option<Unknown>,
) -> napi::Result<bool> {
    js(&env, || {
        Ok(core::is_run_complete(
            &*flow_arg(&env, flow)?,
            &*state_arg(&env, state)?,
        ))
    })
}

/// True when the run can make no progress: not complete, nothing in flight,
/// nothing ready, nothing left to skip.
#[napi(namespace = "flow")]
pub fn is_stuck(
    env: Env,
    #[napi(ts_arg_type = "flow.Flow | flow.FlowSpec")] flow: Unknown,
    #[napi(ts_arg_type = "flow.State | flow.StateInput | null")] state: Option<Unknown>,
) -> napi::Result<bool> {
    js(&env, || {
        Ok(core::is_stuck(
            &*flow_arg(&env, flow)?,
            &*state_arg(&env, state)?,
        ))
    })
}

/// True while `retryCount < maxRetries`; no retry policy (`null`) never
/// retries.
#[napi(namespace = "flow")]
pub fn should_retry(
    env: Env,
    #[napi(ts_arg_type = "number | null")] max_retries: Unknown,
    #[napi(ts_arg_type = "number")] retry_count: Unknown,
) -> napi::Result<bool> {
    js(&env, || {
        let max: Option<U32> = arg(&env, "max_retries", max_retries)?;
        let count: U32 = arg(&env, "retry_count", retry_count)?;
        Ok(core::should_retry(max.map(U32::as_u32), count.as_u32()))
    })
}

/// Whether a failure of this kind may succeed on a new attempt.
#[napi(namespace = "flow")]
pub fn is_retriable(
    env: Env,
    #[napi(
        ts_arg_type = "'timeout' | 'rate_limited' | 'transient' | 'crashed' | 'validation' | 'cancelled' | 'permanent'"
    )]
    kind: Unknown,
) -> napi::Result<bool> {
    js(&env, || {
        Ok(core::is_retriable(name_arg(&env, "kind", kind)?))
    })
}

/// What a resuming runtime does with one persisted step row (see the core's
/// table). `status` `'completed'` is `'done'`. `taskState` is `null` when
/// the task row is missing; `maxRetries` `null` means no retries.
#[napi(
    namespace = "flow",
    ts_return_type = "'keep' | 're-dispatch' | 'mark-done' | 'mark-failed' | 'mark-cancelled' | 'retry'"
)]
pub fn reconcile_resume_step(
    env: Env,
    #[napi(
        ts_arg_type = "'pending' | 'running' | 'waiting' | 'done' | 'failed' | 'skipped' | 'timed_out' | 'cancelled'"
    )]
    status: Unknown,
    #[napi(ts_arg_type = "string | null")] task_id: Option<Unknown>,
    #[napi(
        ts_arg_type = "'pending' | 'running' | 'blocked' | 'completed' | 'failed' | 'cancelled' | null"
    )]
    task_state: Option<Unknown>,
    #[napi(ts_arg_type = "number | null")] retry_count: Option<Unknown>,
    #[napi(ts_arg_type = "number | null")] max_retries: Option<Unknown>,
) -> napi::Result<&'static str> {
    js(&env, || {
        let status = name_arg(&env, "status", status)?;
        let task_id: Option<String> = arg(&env, "task_id", task_id)?;
        let task_state = opt_name_arg(&env, "task_state", task_state)?;
        let retry_count: Option<U32> = arg(&env, "retry_count", retry_count)?;
        let max_retries: Option<U32> = arg(&env, "max_retries", max_retries)?;
        Ok(core::reconcile_resume_step(
            status,
            task_id.as_deref(),
            task_state,
            retry_count.map_or(0, U32::as_u32),
            max_retries.map(U32::as_u32),
        )
        .as_str())
    })
}

/// One persisted step row for `reconcileRun`.
#[napi(
    object,
    object_to_js = false,
    object_from_js = false,
    namespace = "flow"
)]
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResumeRow {
    /// The step's id.
    pub step_id: String,
    /// Its task, if dispatched.
    #[napi(ts_type = "string | null")]
    pub task_id: Option<String>,
    /// Its persisted status.
    #[napi(
        ts_type = "'pending' | 'running' | 'waiting' | 'done' | 'failed' | 'skipped' | 'timed_out' | 'cancelled'"
    )]
    pub status: String,
    /// Retries used so far (default 0).
    #[napi(ts_type = "number | null")]
    pub retry_count: Option<U32>,
    /// Its retry budget (`null`: none).
    #[napi(ts_type = "number | null")]
    pub max_retries: Option<U32>,
}

/// The resume decision for one step row.
#[napi(object, object_from_js = false, namespace = "flow")]
pub struct StepAction {
    /// The step's id.
    pub step_id: String,
    /// What to do with it.
    #[napi(
        ts_type = "'keep' | 're-dispatch' | 'mark-done' | 'mark-failed' | 'mark-cancelled' | 'retry'"
    )]
    pub action: String,
}

/// `reconcileResumeStep` for every row, in row order; `taskStates` maps task
/// ids to their state (an absent id is a missing task row).
#[napi(namespace = "flow")]
pub fn reconcile_run(
    env: Env,
    #[napi(ts_arg_type = "Array<flow.ResumeRow>")] rows: Unknown,
    #[napi(
        ts_arg_type = "Record<string, 'pending' | 'running' | 'blocked' | 'completed' | 'failed' | 'cancelled'>"
    )]
    task_states: Unknown,
) -> napi::Result<Vec<StepAction>> {
    js(&env, || {
        let rows = records::<ResumeRow>(&env, "rows", rows)?
            .into_iter()
            .map(|r| {
                Ok(core::ResumeRow {
                    step_id: r.step_id,
                    task_id: r.task_id,
                    status: parse_name(&r.status)?,
                    retry_count: r.retry_count.map_or(0, U32::as_u32),
                    max_retries: r.max_retries.map(U32::as_u32),
                })
            })
            .collect::<Res<Vec<_>>>()?;
        let states = crate::arena::task_states(&env, task_states)?;
        Ok(core::reconcile_run(&rows, &states)
            .into_iter()
            .map(|(step_id, action)| StepAction {
                step_id,
                action: action.as_str().to_owned(),
            })
            .collect())
    })
}

/// Every problem of `flow` (unknown ids, cycles, switch cases naming unknown
/// steps, ...), in a stable order, each as the core reports it:
/// `{code, message, ...fields}` (`step`, `dep`, `steps`, `case`, `target`,
/// `label`, `index`, `id`, as the problem has them). Empty when valid.
#[napi(
    namespace = "flow",
    ts_return_type = "Array<{ code: string, message: string, [field: string]: unknown }>"
)]
pub fn validate(
    env: Env,
    #[napi(ts_arg_type = "flow.Flow | flow.FlowSpec")] flow: Unknown,
) -> napi::Result<Vec<Value>> {
    js(&env, || {
        Ok(coderig::error::validation_errors_json(&core::validate(
            &*flow_arg(&env, flow)?,
        )))
    })
}

// ---------------------------------------------------------------------------
// Scheduler
// ---------------------------------------------------------------------------

/// How one step stands in a `Scheduler`.
#[napi(
    object,
    object_from_js = false,
    namespace = "flow",
    use_nullable = true
)]
pub struct StepOutcome {
    /// Where the step stands (a step waiting for a batch slot is `'pending'`).
    #[napi(ts_type = "'pending' | 'in_flight' | 'done' | 'failed' | 'timed_out' | 'skipped'")]
    pub status: String,
    /// Why it was skipped; `null` unless `status` is `'skipped'`.
    #[napi(ts_type = "'upstream_failed' | 'branch_not_taken' | 'condition_false' | 'excluded'")]
    pub reason: Option<String>,
}

impl From<core::StepOutcome> for StepOutcome {
    fn from(o: core::StepOutcome) -> Self {
        StepOutcome {
            status: o.as_str().to_owned(),
            reason: o.skip_reason().map(|r| r.as_str().to_owned()),
        }
    }
}

/// The incremental scheduler: the same decisions as `readySteps` & co.,
/// maintained event by event at a cost proportional to the out-degree of
/// the step that changed. Every id it returns is dispatched (in flight)
/// until reported with `complete`, `fail`, `timeout` or `skip`; each event
/// returns the newly ready ids, in flow order. Refusals throw the core's
/// errors (see the module docs) and change nothing.
#[napi(namespace = "flow")]
pub struct Scheduler {
    inner: core::Scheduler,
}

#[napi(namespace = "flow")]
impl Scheduler {
    /// Validates `flow` and builds the scheduler (an invalid flow is
    /// `INVALID_INPUT` with the problems in `errors`); `excluded` steps
    /// (e.g. from `manifestSteps`) are skipped as `excluded` by `start()`.
    #[napi(constructor)]
    pub fn new(
        env: Env,
        #[napi(ts_arg_type = "flow.Flow | flow.FlowSpec")] flow: Unknown,
        #[napi(ts_arg_type = "string[] | Set<string> | null")] excluded: Option<Unknown>,
    ) -> napi::Result<Self> {
        js(&env, || {
            let flow = flow_arg(&env, flow)?.deref().clone();
            let excluded: Option<BTreeSet<String>> = arg(&env, "excluded", excluded)?;
            let inner = core::Scheduler::with_excluded(flow, excluded.unwrap_or_default())?;
            Ok(Scheduler { inner })
        })
    }

    /// Starts the run; returns the steps ready at once.
    #[napi]
    pub fn start(&mut self, env: Env) -> napi::Result<Vec<String>> {
        js(&env, || Ok(self.inner.start()?))
    }

    /// An in-flight step finished successfully (a switch needs `completeSwitch`).
    #[napi]
    pub fn complete(
        &mut self,
        env: Env,
        #[napi(ts_arg_type = "string")] id: Unknown,
    ) -> napi::Result<Vec<String>> {
        js(&env, || {
            Ok(self.inner.complete(&arg::<String>(&env, "id", id)?)?)
        })
    }

    /// An in-flight switch chose the case labelled `chosen` (`null`: no
    /// case matched); the untaken branches are skipped as `branch_not_taken`.
    #[napi]
    pub fn complete_switch(
        &mut self,
        env: Env,
        #[napi(ts_arg_type = "string")] id: Unknown,
        #[napi(ts_arg_type = "string | null")] chosen: Option<Unknown>,
    ) -> napi::Result<Vec<String>> {
        js(&env, || {
            let id: String = arg(&env, "id", id)?;
            let chosen: Option<String> = arg(&env, "chosen", chosen)?;
            Ok(self.inner.complete_switch(&id, chosen.as_deref())?)
        })
    }

    /// `completeSwitch` with the case the step's own conditions choose on
    /// `ctx` (as `resolveSwitch`). A throwing condition throws here and
    /// leaves the switch in flight. Conditions must not call back into this
    /// same scheduler.
    #[napi]
    pub fn complete_switch_with(
        &mut self,
        env: Env,
        #[napi(ts_arg_type = "string")] id: Unknown,
        #[napi(ts_arg_type = "unknown")] ctx: Option<Unknown>,
    ) -> napi::Result<Vec<String>> {
        js(&env, || {
            let id: String = arg(&env, "id", id)?;
            let ctx = to_json(&env, ctx, "ctx")?;
            // Resolved first so that a throwing condition changes nothing; an
            // unknown id or a non-switch is refused by `complete_switch`. The
            // step is cloned (its conditions are `Arc`s) so that no borrow of
            // the scheduler is held while JS runs.
            let chosen = match self.inner.flow().step(&id).cloned() {
                Some(step) => with_conditions(&env, || core::resolve_switch(&step, &ctx))?.0,
                None => None,
            };
            Ok(self.inner.complete_switch(&id, chosen.as_deref())?)
        })
    }

    /// An in-flight step failed for good.
    #[napi]
    pub fn fail(
        &mut self,
        env: Env,
        #[napi(ts_arg_type = "string")] id: Unknown,
    ) -> napi::Result<Vec<String>> {
        js(&env, || {
            Ok(self.inner.fail(&arg::<String>(&env, "id", id)?)?)
        })
    }

    /// An in-flight step timed out for good (counts as failed).
    #[napi]
    pub fn timeout(
        &mut self,
        env: Env,
        #[napi(ts_arg_type = "string")] id: Unknown,
    ) -> napi::Result<Vec<String>> {
        js(&env, || {
            Ok(self.inner.timeout(&arg::<String>(&env, "id", id)?)?)
        })
    }

    /// A pending, held or in-flight step is skipped deliberately (`condition_false`).
    #[napi]
    pub fn skip(
        &mut self,
        env: Env,
        #[napi(ts_arg_type = "string")] id: Unknown,
    ) -> napi::Result<Vec<String>> {
        js(&env, || {
            Ok(self.inner.skip(&arg::<String>(&env, "id", id)?)?)
        })
    }

    /// Starts another iteration of an in-flight do-while whose body steps
    /// have all finished; returns the body steps ready again. Decide with
    /// `isLoopTerminated`, end the loop with `complete`.
    #[napi]
    pub fn next_iteration(
        &mut self,
        env: Env,
        #[napi(ts_arg_type = "string")] id: Unknown,
    ) -> napi::Result<Vec<String>> {
        js(&env, || {
            Ok(self.inner.next_iteration(&arg::<String>(&env, "id", id)?)?)
        })
    }

    /// The skips recorded since the last call, `{id, reason}` in the order
    /// they happened.
    #[napi]
    pub fn take_skipped(&mut self) -> Vec<Skip> {
        skips(self.inner.take_skipped())
    }

    /// How `id` stands.
    #[napi]
    pub fn outcome(
        &self,
        env: Env,
        #[napi(ts_arg_type = "string")] id: Unknown,
    ) -> napi::Result<StepOutcome> {
        js(&env, || {
            Ok(self.inner.outcome(&arg::<String>(&env, "id", id)?)?.into())
        })
    }

    /// Why `id` was skipped, or `null` when it is not skipped (the
    /// `reason` of `outcome(id)`); an unknown id throws as `outcome` does.
    #[napi(
        ts_return_type = "'upstream_failed' | 'branch_not_taken' | 'condition_false' | 'excluded' | null"
    )]
    pub fn skip_reason(
        &self,
        env: Env,
        #[napi(ts_arg_type = "string")] id: Unknown,
    ) -> napi::Result<Option<&'static str>> {
        js(&env, || {
            let outcome = self.inner.outcome(&arg::<String>(&env, "id", id)?)?;
            Ok(outcome.skip_reason().map(core::SkipReason::as_str))
        })
    }

    /// Steps ready but waiting for a batch slot, in flow order.
    #[napi]
    pub fn held(&self) -> Vec<String> {
        self.inner.held()
    }

    /// Steps in flight, in flow order.
    #[napi]
    pub fn in_flight(&self) -> Vec<String> {
        self.inner.in_flight()
    }

    /// True when every step is done, failed, timed out or skipped.
    #[napi]
    pub fn is_complete(&self) -> bool {
        self.inner.is_complete()
    }

    /// Completed iterations of a do-while (0 for other steps).
    #[napi]
    pub fn loop_iterations(
        &self,
        env: Env,
        #[napi(ts_arg_type = "string")] id: Unknown,
    ) -> napi::Result<u32> {
        js(&env, || {
            Ok(self
                .inner
                .loop_iterations(&arg::<String>(&env, "id", id)?)?)
        })
    }

    /// A copy of the run's state, as a `flow.State` handle.
    #[napi]
    pub fn state(&self) -> State {
        State {
            inner: self.inner.state(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_use_the_core_names() {
        let outcomes = [
            (core::StepOutcome::Pending, "pending", None),
            (core::StepOutcome::InFlight, "in_flight", None),
            (core::StepOutcome::Done, "done", None),
            (core::StepOutcome::Failed, "failed", None),
            (core::StepOutcome::TimedOut, "timed_out", None),
            (
                core::StepOutcome::Skipped(core::SkipReason::UpstreamFailed),
                "skipped",
                Some("upstream_failed"),
            ),
        ];
        for (outcome, status, reason) in outcomes {
            let js = StepOutcome::from(outcome);
            assert_eq!((js.status.as_str(), js.reason.as_deref()), (status, reason));
        }
    }

    #[test]
    fn condition_fields_are_taken_out_of_a_step_and_null_is_none() {
        let mut functions = Functions::new();
        let mut step = serde_json::json!({
            "id": "s", "kind": "switch", "when": null,
            "cases": [{"label": "a", "steps": [], "condition": null}, {"label": "b", "steps": []}],
        });
        let taken = take_conditions(&mut step, "steps[2]", &mut functions).unwrap();
        assert!(taken.when.is_none() && taken.loop_condition.is_none() && taken.cases.is_empty());
        assert_eq!(
            step,
            serde_json::json!({"id": "s", "kind": "switch", "cases": [{"label": "a", "steps": []}, {"label": "b", "steps": []}]})
        );
        let mut bad = serde_json::json!({"id": "s", "kind": "code", "loop_condition": "x > 1"});
        match take_conditions(&mut bad, "steps[0]", &mut functions) {
            Err(Fail::Core(e)) => assert_eq!(
                e.message(),
                "`steps[0].loop_condition`: a condition must be a function (ctx) => boolean, got a string"
            ),
            _ => panic!("a string condition must be refused"),
        }
        // Nothing leaves a scope behind on this thread.
        assert!(SCOPES.with(|s| s.borrow().is_empty()));
    }
}
