//! The pure flow decisions as `flow.*` functions: each converts its
//! arguments (a handle as it is, a plain object for this call alone), calls
//! the core and returns its answer.

use super::conditions::with_conditions;
use super::decode::decode_step;
use super::handles::{flow_arg, state_arg};
use crate::helpers::{arg, js, name_arg, opt_name_arg, parse_name, records, to_json, Res, U32};
use coderig::flow as core;
use napi::bindgen_prelude::Unknown;
use napi::Env;
use napi_derive::napi;
use serde::Deserialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// A step skipped with its reason.
#[napi(object, object_from_js = false, namespace = "flow")]
pub struct Skip {
    /// The step.
    pub id: String,
    /// Why it did not run.
    #[napi(ts_type = "SkipReason")]
    pub reason: String,
}

pub(super) fn skips(list: Vec<(String, core::SkipReason)>) -> Vec<Skip> {
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
    #[napi(ts_arg_type = "TriggerRule")] rule: Unknown,
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
    #[napi(ts_type = "TriggerRule")]
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
    #[napi(ts_arg_type = "FailureKind")] kind: Unknown,
) -> napi::Result<bool> {
    js(&env, || {
        Ok(core::is_retriable(name_arg(&env, "kind", kind)?))
    })
}

/// What a resuming runtime does with one persisted step row (see the core's
/// table). `status` `'completed'` is `'done'`. `taskState` is `null` when
/// the task row is missing; `maxRetries` `null` means no retries.
#[napi(namespace = "flow", ts_return_type = "ResumeAction")]
pub fn reconcile_resume_step(
    env: Env,
    #[napi(ts_arg_type = "StepStatus")] status: Unknown,
    #[napi(ts_arg_type = "string | null")] task_id: Option<Unknown>,
    #[napi(ts_arg_type = "TaskState | null")] task_state: Option<Unknown>,
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
    #[napi(ts_type = "StepStatus")]
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
    #[napi(ts_type = "ResumeAction")]
    pub action: String,
}

/// `reconcileResumeStep` for every row, in row order; `taskStates` maps task
/// ids to their state (an absent id is a missing task row).
#[napi(namespace = "flow")]
pub fn reconcile_run(
    env: Env,
    #[napi(ts_arg_type = "Array<flow.ResumeRow>")] rows: Unknown,
    #[napi(ts_arg_type = "Record<string, TaskState>")] task_states: Unknown,
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
        Ok(coderig::flow::validation_errors_json(&core::validate(
            &*flow_arg(&env, flow)?,
        )))
    })
}
