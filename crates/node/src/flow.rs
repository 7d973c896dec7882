//! `flow.*`: the flow scheduling decisions of [`coderig::flow`] for JavaScript.
//!
//! Conventions (every function converts and calls the core, nothing more):
//! - A flow, a step, a case and a state are plain objects (`flow.Flow`,
//!   `flow.Step`, `flow.Case`, `flow.State` in `index.d.ts`); id sets are
//!   arrays or `Set`s. `state.skipped` is an array / `Set` of ids (each
//!   counts as `condition_false`, a deliberate skip like `Scheduler.skip`)
//!   or an object `{id: reason}`. `switchResults` is
//!   `{router: [chosenLabel | null, excludedIds]}`, `resolveSwitch` returns
//!   the same pair.
//! - Conditions (`Case.condition`, `Step.loopCondition`, `Step.when`) are JS
//!   functions `(ctx) => boolean` (any truthy result matches). They become
//!   the core's own [`core::Condition`] closures, so the core decides when
//!   and in which order they run; they are called synchronously, during the
//!   binding call that evaluates them, with a copy of `ctx` converted as
//!   JSON (as every face of the core sees it). A condition that throws makes
//!   that call throw the same exception, and no later condition of the call
//!   runs. Outside such a call (there is none in this addon) a condition is
//!   false.
//! - Errors: a bad name (kind, trigger rule, status, reason, ...) or a number
//!   that is not a non-negative integer throws `code: 'INVALID_INPUT'`.
//!   `Scheduler` refusals throw `code: 'FLOW_ERROR'` with `kind` one of
//!   `invalid_flow` (with `errors`, as `validate` returns them),
//!   `unknown_step`, `invalid_transition`, `already_started`, `not_started`,
//!   `switch_outcome_required`, `not_a_switch`, `unknown_case`,
//!   `not_a_loop`, `loop_body_busy`; a refused event changes nothing.

use crate::arena::{invalid, nullable, whole_number};
use coderig::flow::{self as core, FlowError};
use napi::bindgen_prelude::{Either, Either3, FunctionRef, JsObjectValue, Null, Unknown};
use napi::{Env, JsValue, Status};
use napi_derive::napi;
use serde_json::{json, Value};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::str::FromStr;

// ---------------------------------------------------------------------------
// JS conditions as core conditions
// ---------------------------------------------------------------------------

/// A JS condition, held by reference so it can live inside a core flow. Its
/// result is read as an `Unknown` only to be coerced to a boolean at once
/// (JS truthiness), within the call; the `'static` is never relied on.
type JsFunction = FunctionRef<Value, Unknown<'static>>;

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
fn with_conditions<T>(env: &Env, f: impl FnOnce() -> T) -> napi::Result<T> {
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
        Some(e) => Err(e),
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
        .and_then(|value| {
            // A Promise is truthy: an `async` condition would always match.
            if value.is_promise()? {
                return Err(invalid(
                    &env,
                    "a flow condition returned a Promise; conditions must be synchronous",
                ));
            }
            value.coerce_to_bool()
        });
    match result {
        Ok(b) => b,
        Err(e) => {
            SCOPES.with(|s| {
                if let Some(scope) = s.borrow_mut().last_mut() {
                    scope.error.get_or_insert(e);
                }
            });
            false
        }
    }
}

fn condition(f: Option<Either<JsFunction, Null>>) -> Option<core::Condition> {
    nullable(f).map(|f| core::Condition::new(move |ctx| call_condition(&f, ctx)))
}

// ---------------------------------------------------------------------------
// Conversions
// ---------------------------------------------------------------------------

/// Parses one of the core's names, refusing with `INVALID_INPUT`.
fn parse<T: FromStr>(env: &Env, s: &str) -> napi::Result<T>
where
    T::Err: std::fmt::Display,
{
    s.parse().map_err(|e: T::Err| invalid(env, e.to_string()))
}

fn u32_of(env: &Env, what: &str, value: f64) -> napi::Result<u32> {
    // Bounded by u32::MAX, so the cast is exact.
    whole_number(env, what, value, u64::from(u32::MAX)).map(|n| n as u32)
}

/// An id set: an array or a `Set` of step ids.
type IdSet = Either<Vec<String>, BTreeSet<String>>;

/// `state.skipped`: ids (each a deliberate skip) or `{id: reason}`.
type SkippedInput = Either3<Vec<String>, BTreeSet<String>, HashMap<String, String>>;

/// `state.switchResults[router]`: `[chosenLabel | null, excludedIds]`.
type SwitchResultInput = (Either<String, Null>, IdSet);

fn id_set(ids: Option<IdSet>) -> BTreeSet<String> {
    match ids {
        None => BTreeSet::new(),
        Some(Either::A(list)) => list.into_iter().collect(),
        Some(Either::B(set)) => set,
    }
}

/// One branch of a switch step.
#[napi(object, object_to_js = false, namespace = "flow")]
pub struct Case {
    /// The label reported as the switch's chosen case.
    pub label: String,
    /// Every step of this branch.
    pub steps: Vec<String>,
    /// When the case matches, `(ctx) => boolean` (truthy matches; it gets a
    /// JSON copy of `ctx`, and must be synchronous); absent: never.
    #[napi(ts_type = "((ctx: any) => unknown) | null")]
    pub condition: Option<Either<JsFunction, Null>>,
}

/// One node of a flow. Absent fields take the core's defaults.
#[napi(object, object_to_js = false, namespace = "flow")]
pub struct Step {
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
    pub batch: Option<Either<String, Null>>,
    /// Retries allowed after the first attempt (default 0).
    pub max_retries: Option<f64>,
    /// Time limit per attempt in seconds (`null`: none).
    pub timeout: Option<Either<f64, Null>>,
    /// A switch's cases, tried in order.
    pub cases: Option<Vec<Case>>,
    /// A switch's default branch.
    pub default_branch: Option<Vec<String>>,
    /// A do-while's body.
    pub loop_body: Option<Vec<String>>,
    /// A do-while repeats while this holds, `(ctx) => boolean`.
    #[napi(ts_type = "((ctx: any) => unknown) | null")]
    pub loop_condition: Option<Either<JsFunction, Null>>,
    /// A do-while's iteration cap (default 100).
    pub loop_max_iterations: Option<f64>,
    /// Launch-time guard, `(ctx) => boolean` (see `manifestSteps`).
    #[napi(ts_type = "((ctx: any) => unknown) | null")]
    pub when: Option<Either<JsFunction, Null>>,
}

/// A flow: steps in flow order plus the batch limits.
#[napi(object, object_to_js = false, namespace = "flow")]
pub struct Flow {
    /// The steps, in flow order.
    pub steps: Vec<Step>,
    /// Cap on running steps per batch group (`null`: unbounded).
    pub batch_max_concurrent: Option<Either<f64, Null>>,
    /// Rule by which a batch group as a whole succeeded (default `'all_success'`).
    #[napi(
        ts_type = "'all_success' | 'all_failed' | 'all_done' | 'all_skipped' | 'one_success' | 'one_failed' | 'one_done' | 'none_failed' | 'none_failed_min_one_success' | 'none_skipped' | 'always'"
    )]
    pub batch_join_rule: Option<String>,
}

fn step_of(env: &Env, s: Step) -> napi::Result<core::Step> {
    let mut step = core::Step::new(s.id, parse(env, &s.kind)?);
    step.deps = s.deps.unwrap_or_default();
    if let Some(rule) = s.trigger_rule {
        step.trigger_rule = parse(env, &rule)?;
    }
    step.batch = nullable(s.batch);
    if let Some(n) = s.max_retries {
        step.max_retries = u32_of(env, "maxRetries", n)?;
    }
    step.timeout = nullable(s.timeout)
        .map(|t| whole_number(env, "timeout", t, u64::MAX))
        .transpose()?;
    step.cases = s
        .cases
        .unwrap_or_default()
        .into_iter()
        .map(|c| core::Case {
            label: c.label,
            steps: c.steps,
            condition: condition(c.condition),
        })
        .collect();
    step.default_branch = s.default_branch.unwrap_or_default();
    step.loop_body = s.loop_body.unwrap_or_default();
    step.loop_condition = condition(s.loop_condition);
    if let Some(n) = s.loop_max_iterations {
        step.loop_max_iterations = u32_of(env, "loopMaxIterations", n)?;
    }
    step.when = condition(s.when);
    Ok(step)
}

fn flow_of(env: &Env, f: Flow) -> napi::Result<core::Flow> {
    let steps = f
        .steps
        .into_iter()
        .map(|s| step_of(env, s))
        .collect::<napi::Result<Vec<_>>>()?;
    let config = core::BatchConfig {
        max_concurrent: nullable(f.batch_max_concurrent)
            .map(|n| whole_number(env, "batchMaxConcurrent", n, u64::MAX).map(|n| n as usize))
            .transpose()?,
        join_rule: match f.batch_join_rule {
            Some(rule) => parse(env, &rule)?,
            None => core::TriggerRule::default(),
        },
    };
    Ok(core::Flow::new(steps).with_batch_config(config))
}

/// The state of one run. Every field is optional (empty).
#[napi(object, object_to_js = false, namespace = "flow")]
pub struct State {
    /// Steps that finished successfully.
    #[napi(ts_type = "string[] | Set<string>")]
    pub done: Option<IdSet>,
    /// Steps that did not run: ids (each as `condition_false`) or `{id: reason}`.
    #[napi(
        ts_type = "string[] | Set<string> | Record<string, 'upstream_failed' | 'branch_not_taken' | 'condition_false' | 'excluded'>"
    )]
    pub skipped: Option<SkippedInput>,
    /// Steps that failed.
    #[napi(ts_type = "string[] | Set<string>")]
    pub failed: Option<IdSet>,
    /// Steps dispatched and not finished.
    #[napi(ts_type = "string[] | Set<string>")]
    pub in_flight: Option<IdSet>,
    /// Steps excluded at launch.
    #[napi(ts_type = "string[] | Set<string>")]
    pub excluded: Option<IdSet>,
    /// Steps that timed out (they count as failed).
    #[napi(ts_type = "string[] | Set<string>")]
    pub timed_out: Option<IdSet>,
    /// Decisions of finished switches: `{router: [chosenLabel | null, excludedIds]}`.
    #[napi(ts_type = "Record<string, [string | null, string[] | Set<string>]>")]
    pub switch_results: Option<HashMap<String, SwitchResultInput>>,
    /// Completed body iterations per do-while step.
    pub loop_iterations: Option<HashMap<String, f64>>,
}

fn state_of(env: &Env, s: Option<State>) -> napi::Result<core::SchedulerState> {
    let Some(s) = s else {
        return Ok(core::SchedulerState::new());
    };
    let skipped = match s.skipped {
        None => BTreeMap::new(),
        Some(Either3::A(list)) => skipped_as_deliberate(list),
        Some(Either3::B(set)) => skipped_as_deliberate(set),
        Some(Either3::C(map)) => map
            .into_iter()
            .map(|(id, reason)| Ok((id, parse(env, &reason)?)))
            .collect::<napi::Result<_>>()?,
    };
    let switch_results = s
        .switch_results
        .unwrap_or_default()
        .into_iter()
        .map(|(id, (chosen, excluded))| {
            let chosen = match chosen {
                Either::A(label) => Some(label),
                Either::B(Null) => None,
            };
            let excluded = id_set(Some(excluded));
            (id, core::SwitchResult { chosen, excluded })
        })
        .collect();
    let loop_iterations = s
        .loop_iterations
        .unwrap_or_default()
        .into_iter()
        .map(|(id, n)| Ok((id, u32_of(env, "loopIterations", n)?)))
        .collect::<napi::Result<_>>()?;
    Ok(core::SchedulerState {
        done: id_set(s.done),
        skipped,
        failed: id_set(s.failed),
        in_flight: id_set(s.in_flight),
        excluded: id_set(s.excluded),
        timed_out: id_set(s.timed_out),
        switch_results,
        loop_iterations,
    })
}

fn skipped_as_deliberate(
    ids: impl IntoIterator<Item = String>,
) -> BTreeMap<String, core::SkipReason> {
    ids.into_iter()
        .map(|id| (id, core::SkipReason::ConditionFalse))
        .collect()
}

/// A run's state as the core reports it (what `Scheduler.state()` returns;
/// it is also a valid `flow.State`).
#[napi(object, object_from_js = false, namespace = "flow")]
pub struct StateSnapshot {
    /// Steps that finished successfully, sorted.
    pub done: Vec<String>,
    /// Steps that did not run, with why.
    #[napi(
        ts_type = "Record<string, 'upstream_failed' | 'branch_not_taken' | 'condition_false' | 'excluded'>"
    )]
    pub skipped: BTreeMap<String, String>,
    /// Steps that failed, sorted.
    pub failed: Vec<String>,
    /// Steps in flight, sorted.
    pub in_flight: Vec<String>,
    /// Steps excluded at launch, sorted.
    pub excluded: Vec<String>,
    /// Steps that timed out, sorted.
    pub timed_out: Vec<String>,
    /// `{router: [chosenLabel | null, excludedIds]}`.
    #[napi(ts_type = "Record<string, [string | null, string[]]>")]
    pub switch_results: BTreeMap<String, (Option<String>, Vec<String>)>,
    /// Completed body iterations per do-while step (only those above 0).
    pub loop_iterations: BTreeMap<String, u32>,
}

impl From<core::SchedulerState> for StateSnapshot {
    fn from(s: core::SchedulerState) -> Self {
        StateSnapshot {
            done: s.done.into_iter().collect(),
            skipped: s
                .skipped
                .into_iter()
                .map(|(id, r)| (id, r.as_str().to_owned()))
                .collect(),
            failed: s.failed.into_iter().collect(),
            in_flight: s.in_flight.into_iter().collect(),
            excluded: s.excluded.into_iter().collect(),
            timed_out: s.timed_out.into_iter().collect(),
            switch_results: s
                .switch_results
                .into_iter()
                .map(|(id, r)| (id, (r.chosen, r.excluded.into_iter().collect())))
                .collect(),
            loop_iterations: s.loop_iterations,
        }
    }
}

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

// ---------------------------------------------------------------------------
// Pure decisions
// ---------------------------------------------------------------------------

/// The steps that may start now, in flow order (batch caps not applied; see
/// `readyInBatch`).
#[napi(namespace = "flow")]
pub fn ready_steps(env: Env, flow: Flow, state: Option<State>) -> napi::Result<Vec<String>> {
    Ok(core::ready_steps(
        &flow_of(&env, flow)?,
        &state_of(&env, state)?,
    ))
}

/// The skips a runtime should record now (`{id, reason}` in flow order):
/// every not-started step that can never run, transitively.
#[napi(namespace = "flow")]
pub fn propagate_skips(env: Env, flow: Flow, state: Option<State>) -> napi::Result<Vec<Skip>> {
    Ok(skips(core::propagate_skips(
        &flow_of(&env, flow)?,
        &state_of(&env, state)?,
    )))
}

/// True when `rule` lets a step with these `deps` run now in `state`.
#[napi(namespace = "flow")]
pub fn evaluate_trigger_rule(
    env: Env,
    deps: Vec<String>,
    state: Option<State>,
    #[napi(
        ts_arg_type = "'all_success' | 'all_failed' | 'all_done' | 'all_skipped' | 'one_success' | 'one_failed' | 'one_done' | 'none_failed' | 'none_failed_min_one_success' | 'none_skipped' | 'always'"
    )]
    rule: String,
) -> napi::Result<bool> {
    let rule: core::TriggerRule = parse(&env, &rule)?;
    Ok(core::evaluate_trigger_rule(
        &deps,
        &state_of(&env, state)?,
        rule,
    ))
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
    flow: Flow,
    #[napi(ts_arg_type = "string[] | Set<string>")] in_flight: IdSet,
) -> napi::Result<BTreeMap<String, BatchGroup>> {
    let groups = core::build_batch_state(&flow_of(&env, flow)?, &id_set(Some(in_flight)));
    Ok(groups
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
}

/// The subset of `readyIds` to dispatch now, in their order: a batch group
/// admits at most `maxConcurrent − running` more.
#[napi(namespace = "flow")]
pub fn ready_in_batch(
    env: Env,
    flow: Flow,
    state: Option<State>,
    ready_ids: Vec<String>,
) -> napi::Result<Vec<String>> {
    Ok(core::ready_in_batch(
        &flow_of(&env, flow)?,
        &state_of(&env, state)?,
        &ready_ids,
    ))
}

/// Whether batch group `batch` as a whole satisfies the flow's join rule;
/// `null` when no step names that group.
#[napi(namespace = "flow")]
pub fn is_batch_joined(
    env: Env,
    flow: Flow,
    state: Option<State>,
    batch: String,
) -> napi::Result<Option<bool>> {
    Ok(core::is_batch_joined(
        &flow_of(&env, flow)?,
        &state_of(&env, state)?,
        &batch,
    ))
}

/// Decides a switch on `ctx`: `[chosenLabel | null, excludedIds]`. The
/// first case whose condition holds wins (later conditions are not called).
#[napi(namespace = "flow", ts_return_type = "[string | null, string[]]")]
pub fn resolve_switch(
    env: Env,
    step: Step,
    #[napi(ts_arg_type = "unknown")] ctx: Option<Value>,
) -> napi::Result<(Option<String>, Vec<String>)> {
    let step = step_of(&env, step)?;
    let ctx = ctx.unwrap_or(Value::Null);
    with_conditions(&env, || core::resolve_switch(&step, &ctx))
}

/// Whether a do-while stops after `iterations` completed body runs: at the
/// cap, or when its condition is false on `ctx` (not called at 0 iterations
/// or at the cap).
#[napi(namespace = "flow")]
pub fn is_loop_terminated(
    env: Env,
    step: Step,
    #[napi(ts_arg_type = "unknown")] ctx: Option<Value>,
    iterations: f64,
) -> napi::Result<bool> {
    let step = step_of(&env, step)?;
    let iterations = u32_of(&env, "iterations", iterations)?;
    let ctx = ctx.unwrap_or(Value::Null);
    with_conditions(&env, || core::is_loop_terminated(&step, &ctx, iterations))
}

/// The steps excluded at launch: those whose `when` guard is false on `ctx`.
#[napi(namespace = "flow")]
pub fn manifest_steps(
    env: Env,
    flow: Flow,
    #[napi(ts_arg_type = "unknown")] ctx: Option<Value>,
) -> napi::Result<Vec<String>> {
    let flow = flow_of(&env, flow)?;
    let ctx = ctx.unwrap_or(Value::Null);
    let excluded = with_conditions(&env, || core::manifest_steps(&flow, &ctx))?;
    Ok(excluded.into_iter().collect())
}

/// True when every step is settled and none is in flight.
#[napi(namespace = "flow")]
pub fn is_run_complete(env: Env, flow: Flow, state: Option<State>) -> napi::Result<bool> {
    Ok(core::is_run_complete(
        &flow_of(&env, flow)?,
        &state_of(&env, state)?,
    ))
}

/// True when the run can make no progress: not complete, nothing in flight,
/// nothing ready, nothing left to skip.
#[napi(namespace = "flow")]
pub fn is_stuck(env: Env, flow: Flow, state: Option<State>) -> napi::Result<bool> {
    Ok(core::is_stuck(
        &flow_of(&env, flow)?,
        &state_of(&env, state)?,
    ))
}

/// True while `retryCount < maxRetries`.
#[napi(namespace = "flow")]
pub fn should_retry(env: Env, max_retries: f64, retry_count: f64) -> napi::Result<bool> {
    Ok(core::should_retry(
        u32_of(&env, "maxRetries", max_retries)?,
        u32_of(&env, "retryCount", retry_count)?,
    ))
}

/// Whether a failure of this kind may succeed on a new attempt.
#[napi(namespace = "flow")]
pub fn is_retriable(
    env: Env,
    #[napi(
        ts_arg_type = "'timeout' | 'rate_limited' | 'transient' | 'crashed' | 'validation' | 'cancelled' | 'permanent'"
    )]
    kind: String,
) -> napi::Result<bool> {
    Ok(core::is_retriable(parse(&env, &kind)?))
}

/// What a resuming runtime does with one persisted step row (see the core's
/// table). `taskState` is `null` when the task row is missing; `maxRetries`
/// `null` means no retries.
#[napi(
    namespace = "flow",
    ts_return_type = "'keep' | 're-dispatch' | 'mark-done' | 'mark-failed' | 'mark-cancelled' | 'retry'"
)]
pub fn reconcile_resume_step(
    env: Env,
    #[napi(
        ts_arg_type = "'pending' | 'running' | 'done' | 'failed' | 'skipped' | 'timed_out' | 'cancelled'"
    )]
    status: String,
    task_id: Option<String>,
    #[napi(
        ts_arg_type = "'pending' | 'running' | 'blocked' | 'completed' | 'failed' | 'cancelled' | null"
    )]
    task_state: Option<String>,
    retry_count: Option<f64>,
    max_retries: Option<f64>,
) -> napi::Result<&'static str> {
    let task_state = task_state
        .map(|s| parse::<core::TaskState>(&env, &s))
        .transpose()?;
    let retry_count = retry_count.map_or(Ok(0), |n| u32_of(&env, "retryCount", n))?;
    let max_retries = max_retries
        .map(|n| u32_of(&env, "maxRetries", n))
        .transpose()?;
    Ok(core::reconcile_resume_step(
        parse(&env, &status)?,
        task_id.as_deref(),
        task_state,
        retry_count,
        max_retries,
    )
    .as_str())
}

/// One persisted step row for `reconcileRun`.
#[napi(object, object_to_js = false, namespace = "flow")]
pub struct ResumeRow {
    /// The step's id.
    pub step_id: String,
    /// Its task, if dispatched.
    pub task_id: Option<Either<String, Null>>,
    /// Its persisted status.
    #[napi(
        ts_type = "'pending' | 'running' | 'done' | 'failed' | 'skipped' | 'timed_out' | 'cancelled'"
    )]
    pub status: String,
    /// Retries used so far (default 0).
    pub retry_count: Option<f64>,
    /// Its retry budget (`null`: none).
    pub max_retries: Option<Either<f64, Null>>,
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
    rows: Vec<ResumeRow>,
    #[napi(
        ts_arg_type = "Record<string, 'pending' | 'running' | 'blocked' | 'completed' | 'failed' | 'cancelled'>"
    )]
    task_states: HashMap<String, String>,
) -> napi::Result<Vec<StepAction>> {
    let task_states = task_states
        .into_iter()
        .map(|(k, v)| Ok((k, parse::<core::TaskState>(&env, &v)?)))
        .collect::<napi::Result<HashMap<_, _>>>()?;
    let rows = rows
        .into_iter()
        .map(|r| {
            Ok(core::ResumeRow {
                step_id: r.step_id,
                task_id: nullable(r.task_id),
                status: parse(&env, &r.status)?,
                retry_count: r
                    .retry_count
                    .map_or(Ok(0), |n| u32_of(&env, "retryCount", n))?,
                max_retries: nullable(r.max_retries)
                    .map(|n| u32_of(&env, "maxRetries", n))
                    .transpose()?,
            })
        })
        .collect::<napi::Result<Vec<_>>>()?;
    Ok(core::reconcile_run(&rows, &task_states)
        .into_iter()
        .map(|(step_id, action)| StepAction {
            step_id,
            action: action.as_str().to_owned(),
        })
        .collect())
}

/// One problem of a flow spec: the core's `code` and message, plus the
/// fields of that problem (only those that apply are present).
#[napi(object, object_from_js = false, namespace = "flow")]
pub struct ValidationIssue {
    /// Stable snake_case code, e.g. `'unknown_dependency'`, `'cycle'`.
    #[napi(
        ts_type = "'empty_id' | 'duplicate_id' | 'unknown_dependency' | 'cycle' | 'unknown_case_step' | 'unknown_default_branch_step' | 'duplicate_case_label' | 'unknown_loop_body_step' | 'cases_on_non_switch' | 'loop_on_non_do_while' | 'zero_batch_cap'"
    )]
    pub code: String,
    /// Human-readable description.
    pub message: String,
    /// Position of the step (`empty_id`).
    pub index: Option<u32>,
    /// The repeated id (`duplicate_id`).
    pub id: Option<String>,
    /// The step concerned.
    pub step: Option<String>,
    /// The unknown dependency (`unknown_dependency`).
    pub dep: Option<String>,
    /// The cycle, last element repeating the first (`cycle`).
    pub steps: Option<Vec<String>>,
    /// The case label (`unknown_case_step`).
    pub case: Option<String>,
    /// The unknown id named by a case, default branch or loop body.
    pub target: Option<String>,
    /// The repeated label (`duplicate_case_label`).
    pub label: Option<String>,
}

impl From<&core::ValidationError> for ValidationIssue {
    fn from(e: &core::ValidationError) -> Self {
        // The core's serde form is `{code, ...fields}`; read the fields from it.
        let fields = serde_json::to_value(e).unwrap_or(Value::Null);
        let text = |k: &str| fields.get(k).and_then(Value::as_str).map(str::to_owned);
        ValidationIssue {
            code: e.code().to_owned(),
            message: e.to_string(),
            index: fields
                .get("index")
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n).ok()),
            id: text("id"),
            step: text("step"),
            dep: text("dep"),
            steps: fields.get("steps").and_then(|v| {
                v.as_array().map(|a| {
                    a.iter()
                        .filter_map(|s| s.as_str().map(str::to_owned))
                        .collect()
                })
            }),
            case: text("case"),
            target: text("target"),
            label: text("label"),
        }
    }
}

/// Every problem of `flow` (unknown ids, cycles, switch cases naming unknown
/// steps, ...), in a stable order; empty when valid.
#[napi(namespace = "flow")]
pub fn validate(env: Env, flow: Flow) -> napi::Result<Vec<ValidationIssue>> {
    Ok(core::validate(&flow_of(&env, flow)?)
        .iter()
        .map(ValidationIssue::from)
        .collect())
}

// ---------------------------------------------------------------------------
// Scheduler
// ---------------------------------------------------------------------------

/// A JS `Error` with `code: 'FLOW_ERROR'`, `kind` and the error's details.
fn flow_error(env: &Env, e: FlowError) -> napi::Error {
    let (kind, details): (&str, Vec<(&str, Value)>) = match &e {
        FlowError::Invalid(errors) => (
            "invalid_flow",
            vec![(
                "errors",
                Value::Array(errors.iter().map(validation_json).collect()),
            )],
        ),
        FlowError::UnknownStep(step) => ("unknown_step", vec![("step", json!(step))]),
        FlowError::InvalidTransition { step, event, state } => (
            "invalid_transition",
            vec![
                ("step", json!(step)),
                ("event", json!(event)),
                ("state", json!(state)),
            ],
        ),
        FlowError::AlreadyStarted => ("already_started", vec![]),
        FlowError::NotStarted => ("not_started", vec![]),
        FlowError::SwitchOutcomeRequired(step) => {
            ("switch_outcome_required", vec![("step", json!(step))])
        }
        FlowError::NotASwitch(step) => ("not_a_switch", vec![("step", json!(step))]),
        FlowError::UnknownCase { step, label } => (
            "unknown_case",
            vec![("step", json!(step)), ("label", json!(label))],
        ),
        FlowError::NotALoop(step) => ("not_a_loop", vec![("step", json!(step))]),
        FlowError::LoopBodyBusy { step, body } => (
            "loop_body_busy",
            vec![("step", json!(step)), ("body", json!(body))],
        ),
    };
    let build = || -> napi::Result<napi::Error> {
        let mut error =
            env.create_error(napi::Error::new(Status::GenericFailure, e.to_string()))?;
        error.set_named_property("code", "FLOW_ERROR")?;
        error.set_named_property("kind", kind)?;
        for (name, value) in details {
            error.set_named_property(name, value)?;
        }
        Ok(napi::Error::from(error.to_unknown()))
    };
    build().unwrap_or_else(|failure| failure)
}

/// A validation error as the JSON of `validate`'s items (camelCase keys are
/// the core's single-word keys).
fn validation_json(e: &core::ValidationError) -> Value {
    let mut v = serde_json::to_value(e).unwrap_or_else(|_| json!({"code": e.code()}));
    if let Value::Object(map) = &mut v {
        map.insert("message".to_owned(), json!(e.to_string()));
    }
    v
}

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
        let (status, reason) = match o {
            core::StepOutcome::Pending => ("pending", None),
            core::StepOutcome::InFlight => ("in_flight", None),
            core::StepOutcome::Done => ("done", None),
            core::StepOutcome::Failed => ("failed", None),
            core::StepOutcome::TimedOut => ("timed_out", None),
            core::StepOutcome::Skipped(r) => ("skipped", Some(r.as_str().to_owned())),
        };
        StepOutcome {
            status: status.to_owned(),
            reason,
        }
    }
}

/// The incremental scheduler: the same decisions as `readySteps` & co.,
/// maintained event by event at a cost proportional to the out-degree of
/// the step that changed. Every id it returns is dispatched (in flight)
/// until reported with `complete`, `fail`, `timeout` or `skip`; each event
/// returns the newly ready ids, in flow order. Refusals throw
/// `code: 'FLOW_ERROR'` and change nothing.
#[napi(namespace = "flow")]
pub struct Scheduler {
    inner: core::Scheduler,
}

#[napi(namespace = "flow")]
impl Scheduler {
    /// Validates `flow` and builds the scheduler; `excluded` steps (e.g.
    /// from `manifestSteps`) are skipped as `excluded` by `start()`.
    #[napi(constructor)]
    pub fn new(
        env: Env,
        flow: Flow,
        #[napi(ts_arg_type = "string[] | Set<string>")] excluded: Option<IdSet>,
    ) -> napi::Result<Self> {
        let flow = flow_of(&env, flow)?;
        core::Scheduler::with_excluded(flow, id_set(excluded))
            .map(|inner| Scheduler { inner })
            .map_err(|e| flow_error(&env, e))
    }

    /// Starts the run; returns the steps ready at once.
    #[napi]
    pub fn start(&mut self, env: Env) -> napi::Result<Vec<String>> {
        self.inner.start().map_err(|e| flow_error(&env, e))
    }

    /// An in-flight step finished successfully (a switch needs `completeSwitch`).
    #[napi]
    pub fn complete(&mut self, env: Env, id: String) -> napi::Result<Vec<String>> {
        self.inner.complete(&id).map_err(|e| flow_error(&env, e))
    }

    /// An in-flight switch chose the case labelled `chosen` (`null`: no
    /// case matched); the untaken branches are skipped as `branch_not_taken`.
    #[napi]
    pub fn complete_switch(
        &mut self,
        env: Env,
        id: String,
        chosen: Option<String>,
    ) -> napi::Result<Vec<String>> {
        self.inner
            .complete_switch(&id, chosen.as_deref())
            .map_err(|e| flow_error(&env, e))
    }

    /// `completeSwitch` with the case the step's own conditions choose on
    /// `ctx` (as `resolveSwitch`). A throwing condition throws here and
    /// leaves the switch in flight. Conditions must not call back into this
    /// same scheduler.
    #[napi]
    pub fn complete_switch_with(
        &mut self,
        env: Env,
        id: String,
        #[napi(ts_arg_type = "unknown")] ctx: Option<Value>,
    ) -> napi::Result<Vec<String>> {
        let ctx = ctx.unwrap_or(Value::Null);
        // Resolved first so that a throwing condition changes nothing; an
        // unknown id or a non-switch is refused by `complete_switch`. The
        // step is cloned (its conditions are `Arc`s) so that no borrow of the
        // scheduler is held while JS runs.
        let chosen = match self.inner.flow().step(&id).cloned() {
            Some(step) => with_conditions(&env, || core::resolve_switch(&step, &ctx))?.0,
            None => None,
        };
        self.complete_switch(env, id, chosen)
    }

    /// An in-flight step failed for good.
    #[napi]
    pub fn fail(&mut self, env: Env, id: String) -> napi::Result<Vec<String>> {
        self.inner.fail(&id).map_err(|e| flow_error(&env, e))
    }

    /// An in-flight step timed out for good (counts as failed).
    #[napi]
    pub fn timeout(&mut self, env: Env, id: String) -> napi::Result<Vec<String>> {
        self.inner.timeout(&id).map_err(|e| flow_error(&env, e))
    }

    /// A pending, held or in-flight step is skipped deliberately (`condition_false`).
    #[napi]
    pub fn skip(&mut self, env: Env, id: String) -> napi::Result<Vec<String>> {
        self.inner.skip(&id).map_err(|e| flow_error(&env, e))
    }

    /// Starts another iteration of an in-flight do-while whose body steps
    /// have all finished; returns the body steps ready again. Decide with
    /// `isLoopTerminated`, end the loop with `complete`.
    #[napi]
    pub fn next_iteration(&mut self, env: Env, id: String) -> napi::Result<Vec<String>> {
        self.inner
            .next_iteration(&id)
            .map_err(|e| flow_error(&env, e))
    }

    /// The skips recorded since the last call, `{id, reason}` in the order
    /// they happened.
    #[napi]
    pub fn take_skipped(&mut self) -> Vec<Skip> {
        skips(self.inner.take_skipped())
    }

    /// How `id` stands.
    #[napi]
    pub fn outcome(&self, env: Env, id: String) -> napi::Result<StepOutcome> {
        self.inner
            .outcome(&id)
            .map(StepOutcome::from)
            .map_err(|e| flow_error(&env, e))
    }

    /// Why `id` was skipped, or `null` when it is not skipped (the
    /// `reason` of `outcome(id)`); an unknown id throws as `outcome` does.
    #[napi(
        ts_return_type = "'upstream_failed' | 'branch_not_taken' | 'condition_false' | 'excluded' | null"
    )]
    pub fn skip_reason(&self, env: Env, id: String) -> napi::Result<Option<&'static str>> {
        self.inner
            .outcome(&id)
            .map(|o| o.skip_reason().map(core::SkipReason::as_str))
            .map_err(|e| flow_error(&env, e))
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
    pub fn loop_iterations(&self, env: Env, id: String) -> napi::Result<u32> {
        self.inner
            .loop_iterations(&id)
            .map_err(|e| flow_error(&env, e))
    }

    /// A snapshot of the run's state (usable as a `flow.State`).
    #[napi]
    pub fn state(&self) -> StateSnapshot {
        self.inner.state().into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_issues_carry_the_fields_of_their_variant() {
        let flow = core::Flow::new(vec![
            core::Step::new("a", core::StepKind::Code).deps(["ghost", "a"]),
            core::Step::new("", core::StepKind::Code),
        ]);
        let issues: Vec<ValidationIssue> = core::validate(&flow).iter().map(Into::into).collect();
        let summary: Vec<_> = issues
            .iter()
            .map(|i| {
                (
                    i.code.as_str(),
                    i.index,
                    i.step.as_deref(),
                    i.dep.as_deref(),
                    i.steps.clone(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                ("empty_id", Some(1), None, None, None),
                ("unknown_dependency", None, Some("a"), Some("ghost"), None),
                (
                    "cycle",
                    None,
                    None,
                    None,
                    Some(vec!["a".to_owned(), "a".to_owned()])
                ),
            ]
        );
        assert_eq!(
            issues[1].message,
            r#"step "a" depends on unknown step "ghost""#
        );
    }

    #[test]
    fn snapshots_and_outcomes_use_the_core_names() {
        let mut state = core::SchedulerState::new();
        state.done.insert("b".into());
        state.done.insert("a".into());
        state
            .skipped
            .insert("s".into(), core::SkipReason::BranchNotTaken);
        state.switch_results.insert(
            "r".into(),
            core::SwitchResult {
                chosen: None,
                excluded: ["s".to_owned()].into(),
            },
        );
        let snapshot = StateSnapshot::from(state);
        assert_eq!(snapshot.done, ["a", "b"]);
        assert_eq!(snapshot.skipped["s"], "branch_not_taken");
        assert_eq!(snapshot.switch_results["r"], (None, vec!["s".to_owned()]));
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
    fn absent_and_null_conditions_are_none() {
        assert!(condition(None).is_none());
        assert!(condition(Some(Either::B(Null))).is_none());
        // Nothing leaves a scope behind on this thread.
        assert!(SCOPES.with(|s| s.borrow().is_empty()));
    }
}
