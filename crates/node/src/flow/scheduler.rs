//! `flow.Scheduler`: the core's incremental scheduler behind a handle, and
//! `flow.StepOutcome`, how one step stands in it.

use super::conditions::with_conditions;
use super::decisions::{skips, Skip};
use super::handles::flow_arg;
use super::handles::State;
use crate::helpers::{arg, js, to_json};
use coderig::flow as core;
use napi::bindgen_prelude::Unknown;
use napi::Env;
use napi_derive::napi;
use std::collections::BTreeSet;
use std::ops::Deref;

/// How one step stands in a `Scheduler`.
#[napi(
    object,
    object_from_js = false,
    namespace = "flow",
    use_nullable = true
)]
pub struct StepOutcome {
    /// Where the step stands (a step waiting for a batch slot is `'pending'`).
    // Spelled out: inside `flow`, `StepOutcome` is this interface, not the
    // top-level type of the core's list (which names.test.mjs holds it to).
    #[napi(ts_type = "'pending' | 'in_flight' | 'done' | 'failed' | 'timed_out' | 'skipped'")]
    pub status: String,
    /// Why it was skipped; `null` unless `status` is `'skipped'`.
    #[napi(ts_type = "SkipReason")]
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
    #[napi(ts_return_type = "SkipReason | null")]
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
}
