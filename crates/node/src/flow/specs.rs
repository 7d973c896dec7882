//! The TypeScript shapes of plain specs and states (`flow.FlowSpec`,
//! `flow.StepSpec`, `flow.CaseSpec`, `flow.StateInput`): types only, the
//! values are decoded by the core ([`super::decode`]).

use napi_derive::napi;
use serde_json::Value;

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
    #[napi(ts_type = "StepKind")]
    pub kind: String,
    /// Ids of the steps this one waits for.
    pub deps: Option<Vec<String>>,
    /// How the dependencies' outcomes decide whether it runs (default `'all_success'`).
    #[napi(ts_type = "TriggerRule")]
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
    #[napi(ts_type = "TriggerRule")]
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
    #[napi(ts_type = "string[] | Set<string> | Record<string, SkipReason>")]
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
