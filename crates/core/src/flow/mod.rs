//! Flow scheduling decisions: a DAG of agent/code steps with Airflow's
//! trigger rules, batch concurrency caps, switch branches, do-while loops,
//! retries and crash-resume — as pure functions plus an incremental
//! [`Scheduler`] that agrees with them.
//!
//! - [`spec`]: the declarative [`Flow`] ([`Step`], [`Case`], [`TriggerRule`],
//!   [`BatchConfig`]); serde-serializable, conditions are closures.
//! - [`state`]: [`SchedulerState`] with skip reasons.
//! - [`decide`]: the pure decisions ([`ready_steps`], [`propagate_skips`],
//!   [`evaluate_trigger_rule`], batches, switch, loop, retry, launch guards).
//! - [`scheduler`]: [`Scheduler`], the same decisions at O(out-degree) per event;
//!   [`Scheduler::restore`] rebuilds one from a persisted [`SchedulerState`].
//! - [`resume`]: crash-resume ([`reconcile_resume_step`], [`reconcile_run`]).
//! - [`validate()`]: spec validation as a list of typed [`ValidationError`]s.
//! - `command` (feature `runtime`, Unix): command steps as processes
//!   (`run_command`, `confine_dir`).
//!
//! # Dependency outcomes
//!
//! A step's dependencies are counted in five buckets (see [`DepCounts`]):
//!
//! - **success** — done. A running `do_while` also counts as success for
//!   the steps of its own `loop_body`, so the body can run inside the loop.
//! - **failed** — failed or timed out.
//! - **upstream_failed** — skipped with [`SkipReason::UpstreamFailed`].
//! - **skipped** — skipped deliberately: [`SkipReason::BranchNotTaken`],
//!   [`SkipReason::ConditionFalse`] or [`SkipReason::Excluded`].
//! - **pending** — not started or running.
//!
//! # Trigger rules
//!
//! A step with no dependencies runs at once under every rule. Otherwise a
//! rule decides *run*, *wait*, or *skip with a reason*; a skip is final and
//! propagates to the step's own dependents through their rules. "Settled"
//! means no dependency is pending.
//!
//! | rule | runs when | skipped as `upstream_failed` when | skipped as `condition_false` when | a deliberate skip upstream | an `upstream_failed` upstream |
//! |---|---|---|---|---|---|
//! | `all_success` (default) | settled, no failed, no upstream_failed | any failed or upstream_failed (at once) | never | counts as success (a switch's join runs) | blocks: propagates `upstream_failed` |
//! | `all_failed` | settled and every dep failed or upstream_failed | never | any success or deliberate skip (at once) | makes it skip | counts as a failure |
//! | `all_done` | settled, whatever the outcomes | never | never | counts as settled | counts as settled |
//! | `all_skipped` | settled and every dep deliberately skipped | never | any success, failed or upstream_failed (at once) | required | makes it skip (it is not a deliberate skip) |
//! | `one_success` | at least one success (at once) | settled, no success, some failed/upstream_failed | settled, no success, no failure (all skipped deliberately) | does not count | does not count; decides the reason |
//! | `one_failed` | at least one failed or upstream_failed (at once) | never | settled with no failure | does not count | counts as a failure |
//! | `one_done` | at least one success or failed (at once) | never | settled with none done or failed | does not count | does not count |
//! | `none_failed` | settled, no failed, no upstream_failed | any failed or upstream_failed (at once) | never | allowed | blocks: propagates `upstream_failed` |
//! | `none_failed_min_one_success` | settled, no failure, at least one success | any failed or upstream_failed (at once) | settled, no failure, no success | allowed, but one success is needed | blocks: propagates `upstream_failed` |
//! | `none_skipped` | settled, no deliberate skip | never | any deliberate skip (at once) | makes it skip | counts as settled (Airflow: not a skip) |
//! | `always` | at once, even before its dependencies finish | never | never | irrelevant | irrelevant |
//!
//! These are Airflow's meanings, Airflow's `upstream_failed` propagation
//! included, with one deliberate difference: Airflow cascades a skip through
//! `all_success`, here a *deliberate* skip satisfies it (a switch's untaken
//! branch must not block the join). Where Airflow marks a step `skipped`
//! (rather than `upstream_failed`) because its rule can no longer hold, the
//! reason here is `condition_false`, which is deliberate and so does not
//! block `all_success` downstream.
//!
//! # Switch, do-while, batches
//!
//! - Switch: the first matching case wins; the other cases' steps and the
//!   default branch are skipped as `branch_not_taken`. No match: the default
//!   branch runs, every case's steps are skipped; no match and no default:
//!   every case's steps are skipped; no cases: nothing is skipped. A case's
//!   `steps` must list its whole branch (a step downstream of an untaken
//!   step, under `all_success`, still runs — that is what lets the join run).
//! - Do-while: the body runs while the loop step is in flight; the caller
//!   asks [`is_loop_terminated`] after each iteration (condition false or
//!   cap, default 100, reached) and either starts the next iteration or
//!   completes the loop step. Steps after the loop should depend on the loop
//!   step, not on its body.
//! - Batches: steps naming the same [`Step::batch`] group run at most
//!   `batch_config.max_concurrent` at a time; held-back steps start, in flow
//!   order, as their siblings finish.

#[cfg(all(feature = "runtime", unix))]
pub mod command;
pub mod decide;
#[cfg(all(feature = "runtime", unix))]
pub mod engine;
pub mod error;
pub mod resume;
#[cfg(feature = "flows")]
pub mod runspec;
pub mod scheduler;
pub mod spec;
pub mod state;
pub mod validate;

pub use decide::{
    build_batch_state, decide_trigger, dep_counts, evaluate_trigger_rule, is_batch_joined,
    is_loop_terminated, is_retriable, is_run_complete, is_stuck, manifest_steps, propagate_skips,
    ready_in_batch, ready_steps, resolve_switch, should_retry, switch_exclusions, BatchState,
    DepCounts, FailureKind, TriggerDecision,
};
pub use error::FlowError;
pub use resume::{
    reconcile_resume_step, reconcile_run, AttemptOutcome, ResumeAction, ResumeRow, StepStatus,
    TaskState,
};
#[cfg(feature = "flows")]
pub use runspec::{
    AgentAction, ApprovalAction, CaseSpec, CommandAction, CommandProgram, CompiledFlow,
    DoWhileAction, FlowSpec, RenderedAction, RetryOn, RetrySpec, RunStepKind, StepAction, StepSpec,
    SwitchAction, MAX_FLOW_STEPS,
};
pub use scheduler::Scheduler;
pub use spec::{
    BatchConfig, Case, Condition, Flow, ParseNameError, Step, StepKind, TriggerRule,
    DEFAULT_LOOP_MAX_ITERATIONS,
};
pub use state::{SchedulerState, SkipReason, StepOutcome, SwitchResult};
pub use validate::{validate, validation_errors_json, ValidationError};
