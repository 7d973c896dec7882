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
//!   the core's own [`coderig::flow::Condition`] closures, so the core decides when
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
//!
//! Rooms: `conditions` (JS functions as the core's conditions),
//! `decode` (JS specs and states to core values, handles or plain),
//! `handles` (`Flow`, `State`), `specs` (the TypeScript shapes of plain
//! specs and states), `decisions` (the pure `flow.*` functions) and
//! `scheduler` (`Scheduler`).

mod conditions;
mod decisions;
mod decode;
mod handles;
mod scheduler;
mod specs;

pub use decisions::{
    build_batch_state, evaluate_trigger_rule, is_batch_joined, is_loop_terminated, is_retriable,
    is_run_complete, is_stuck, manifest_steps, propagate_skips, ready_in_batch, ready_steps,
    reconcile_resume_step, reconcile_run, resolve_switch, should_retry, validate, BatchGroup,
    ResumeRow, Skip, StepAction,
};
pub use handles::{Flow, State};
pub use scheduler::{Scheduler, StepOutcome};
pub use specs::{CaseSpec, FlowSpec, StateInput, StepSpec};
