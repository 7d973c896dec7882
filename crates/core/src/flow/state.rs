//! The observable state of one run, as the pure decisions read it.

use crate::names::macros::named_enum;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Why a step did not run.
///
/// Only [`SkipReason::UpstreamFailed`] is caused by a failure; the other
/// three are *deliberate* and satisfy `all_success` downstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SkipReason {
    /// A failure upstream means this step's trigger rule can never hold.
    UpstreamFailed,
    /// A switch took another branch.
    BranchNotTaken,
    /// A condition (a runtime guard, or a trigger rule that can no longer
    /// hold although nothing failed) said not to run.
    ConditionFalse,
    /// Excluded from the run at launch (a `when` guard was false).
    Excluded,
}
named_enum!(SkipReason, "skip reason", {
    UpstreamFailed => "upstream_failed",
    BranchNotTaken => "branch_not_taken",
    ConditionFalse => "condition_false",
    Excluded => "excluded",
});

impl SkipReason {
    /// True for the reasons that were chosen on purpose (not caused by a failure).
    pub fn is_deliberate(self) -> bool {
        self != SkipReason::UpstreamFailed
    }
}

/// What a switch decided: the chosen case label (if any) and the steps it excluded.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwitchResult {
    /// The label of the case taken; `None` when no case matched.
    pub chosen: Option<String>,
    /// Steps that will not run because their branch was not taken.
    pub excluded: BTreeSet<String>,
}

/// The state of one run.
///
/// A step should be in at most one of `done`, `skipped`, `failed`,
/// `timed_out`, `in_flight`; if a caller puts it in several, the first of
/// that list wins. `excluded` (launch-time) and the `excluded` sets of
/// `switch_results` make a step count as skipped
/// ([`SkipReason::Excluded`] / [`SkipReason::BranchNotTaken`]) unless it is
/// already in one of the sets above.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchedulerState {
    /// Steps that finished successfully.
    #[serde(default)]
    pub done: BTreeSet<String>,
    /// Steps that did not run, each with why.
    #[serde(default)]
    pub skipped: BTreeMap<String, SkipReason>,
    /// Steps that failed (after their retries).
    #[serde(default)]
    pub failed: BTreeSet<String>,
    /// Steps dispatched and not finished.
    #[serde(default)]
    pub in_flight: BTreeSet<String>,
    /// Steps excluded at launch (see [`crate::flow::manifest_steps`]).
    #[serde(default)]
    pub excluded: BTreeSet<String>,
    /// Steps that hit their timeout (after their retries); they count as failed.
    #[serde(default)]
    pub timed_out: BTreeSet<String>,
    /// Decisions of finished switch steps.
    #[serde(default)]
    pub switch_results: BTreeMap<String, SwitchResult>,
    /// Completed body iterations per do-while step.
    #[serde(default)]
    pub loop_iterations: BTreeMap<String, u32>,
}

/// How one step stands in a [`SchedulerState`], after precedence is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StepOutcome {
    /// Not started.
    Pending,
    /// Dispatched, not finished.
    InFlight,
    /// Finished successfully.
    Done,
    /// Failed.
    Failed,
    /// Timed out (counts as failed).
    TimedOut,
    /// Did not run, for this reason.
    Skipped(SkipReason),
}

impl StepOutcome {
    /// Every name [`StepOutcome::as_str`] gives, in declaration order.
    pub const NAMES: &'static [&'static str] = &[
        "pending",
        "in_flight",
        "done",
        "failed",
        "timed_out",
        "skipped",
    ];

    /// The stable snake_case name: `pending`, `in_flight`, `done`, `failed`,
    /// `timed_out` or `skipped` (the reason is [`StepOutcome::skip_reason`]).
    pub fn as_str(self) -> &'static str {
        match self {
            StepOutcome::Pending => "pending",
            StepOutcome::InFlight => "in_flight",
            StepOutcome::Done => "done",
            StepOutcome::Failed => "failed",
            StepOutcome::TimedOut => "timed_out",
            StepOutcome::Skipped(_) => "skipped",
        }
    }

    /// True once the step will not change any more.
    pub fn is_settled(self) -> bool {
        !matches!(self, StepOutcome::Pending | StepOutcome::InFlight)
    }

    /// Why the step did not run: `Some` exactly when it is skipped.
    pub fn skip_reason(self) -> Option<SkipReason> {
        match self {
            StepOutcome::Skipped(reason) => Some(reason),
            _ => None,
        }
    }
}

impl SchedulerState {
    /// An empty state (nothing started).
    pub fn new() -> Self {
        Self::default()
    }

    /// How `id` stands; precedence `done > failed > timed_out > skipped >
    /// in_flight > excluded (launch) > excluded (switch) > pending`.
    pub fn outcome(&self, id: &str) -> StepOutcome {
        if self.done.contains(id) {
            StepOutcome::Done
        } else if self.failed.contains(id) {
            StepOutcome::Failed
        } else if self.timed_out.contains(id) {
            StepOutcome::TimedOut
        } else if let Some(r) = self.skipped.get(id) {
            StepOutcome::Skipped(*r)
        } else if self.in_flight.contains(id) {
            StepOutcome::InFlight
        } else if self.excluded.contains(id) {
            StepOutcome::Skipped(SkipReason::Excluded)
        } else if self
            .switch_results
            .values()
            .any(|r| r.excluded.contains(id))
        {
            StepOutcome::Skipped(SkipReason::BranchNotTaken)
        } else {
            StepOutcome::Pending
        }
    }
}
