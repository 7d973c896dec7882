//! The error type of the incremental scheduler.

use super::validate::{validation_errors_json, ValidationError};
use crate::error::{Error, ErrorKind};
use serde_json::Value;

/// Why a [`crate::flow::Scheduler`] refused a flow or an event. The
/// scheduler's state is unchanged when an event is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FlowError {
    /// The flow failed validation; every problem is listed.
    #[error("invalid flow: {}", .0.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("; "))]
    Invalid(Vec<ValidationError>),
    /// No step has this id.
    #[error("unknown step {0:?}")]
    UnknownStep(String),
    /// The event does not apply to the step in its current state
    /// (e.g. completing a step that was never dispatched).
    #[error("cannot {event} step {step:?}: it is {state}")]
    InvalidTransition {
        /// The step.
        step: String,
        /// The refused event (`complete`, `fail`, `skip`, ...).
        event: &'static str,
        /// The step's state (`pending`, `held`, `in_flight`, `done`, ...).
        state: &'static str,
    },
    /// `start` was called twice.
    #[error("the scheduler was already started")]
    AlreadyStarted,
    /// An event arrived before `start`.
    #[error("the scheduler was not started")]
    NotStarted,
    /// A switch step must be completed with its decision.
    #[error("switch step {0:?} must be completed with complete_switch")]
    SwitchOutcomeRequired(String),
    /// The step is not a switch.
    #[error("step {0:?} is not a switch")]
    NotASwitch(String),
    /// The switch has no case with this label.
    #[error("switch {step:?} has no case {label:?}")]
    UnknownCase {
        /// The switch step.
        step: String,
        /// The unknown label.
        label: String,
    },
    /// The step is not a do-while.
    #[error("step {0:?} is not a do_while")]
    NotALoop(String),
    /// A new iteration was requested while a body step has not finished.
    #[error("do_while {step:?} cannot iterate: body step {body:?} has not finished")]
    LoopBodyBusy {
        /// The do-while step.
        step: String,
        /// A body step that is still pending, held or running.
        body: String,
    },
    /// [`crate::flow::Scheduler::restore`]: a persisted state puts a step in
    /// two places (two of `done`, `failed`, `timed_out`, `skipped`,
    /// `in_flight`, or a launch-excluded step recorded as anything but
    /// skipped as `excluded`).
    #[error("step {step:?} is recorded both as {first} and as {second}")]
    StepInTwoBuckets {
        /// The step.
        step: String,
        /// The first place it was found in.
        first: &'static str,
        /// The place that contradicts it.
        second: &'static str,
    },
    /// [`crate::flow::Scheduler::restore`]: a switch result is recorded for a
    /// switch that is not done.
    #[error("switch {step:?} has a recorded result but is {state}")]
    SwitchResultNotDone {
        /// The switch step.
        step: String,
        /// Its recorded state (`pending`, `in_flight`, `failed`, ...).
        state: &'static str,
    },
    /// [`crate::flow::Scheduler::restore`]: a switch result's `excluded` set
    /// is not the one its chosen case implies.
    #[error("switch {step:?}: the recorded exclusions do not match the recorded choice")]
    SwitchExclusionsMismatch {
        /// The switch step.
        step: String,
    },
    /// [`crate::flow::Scheduler::restore`]: a body step that depends on its
    /// do-while is in flight while the do-while has not started.
    #[error(
        "body step {body:?} of do_while {step:?} is in flight but the do_while has not started"
    )]
    LoopBodyOutsideLoop {
        /// The do-while step.
        step: String,
        /// The in-flight body step.
        body: String,
    },
}

impl FlowError {
    /// Every name [`FlowError::name`] gives, in declaration order.
    pub const NAMES: &'static [&'static str] = &[
        "invalid",
        "unknown_step",
        "invalid_transition",
        "already_started",
        "not_started",
        "switch_outcome_required",
        "not_a_switch",
        "unknown_case",
        "not_a_loop",
        "loop_body_busy",
        "step_in_two_buckets",
        "switch_result_not_done",
        "switch_exclusions_mismatch",
        "loop_body_outside_loop",
    ];

    /// The stable snake_case name of the variant (the `reason` detail of
    /// the error every face raises for it).
    pub fn name(&self) -> &'static str {
        let index = match self {
            FlowError::Invalid(_) => 0,
            FlowError::UnknownStep(_) => 1,
            FlowError::InvalidTransition { .. } => 2,
            FlowError::AlreadyStarted => 3,
            FlowError::NotStarted => 4,
            FlowError::SwitchOutcomeRequired(_) => 5,
            FlowError::NotASwitch(_) => 6,
            FlowError::UnknownCase { .. } => 7,
            FlowError::NotALoop(_) => 8,
            FlowError::LoopBodyBusy { .. } => 9,
            FlowError::StepInTwoBuckets { .. } => 10,
            FlowError::SwitchResultNotDone { .. } => 11,
            FlowError::SwitchExclusionsMismatch { .. } => 12,
            FlowError::LoopBodyOutsideLoop { .. } => 13,
        };
        Self::NAMES[index]
    }
}

impl From<FlowError> for Error {
    fn from(e: FlowError) -> Self {
        let message = e.to_string();
        let error = match &e {
            FlowError::Invalid(errors) => Error::invalid_input(message)
                .with_detail("errors", Value::Array(validation_errors_json(errors))),
            FlowError::UnknownStep(id) => Error::new(ErrorKind::NotFoundId, message)
                .with_detail("what", "step")
                .with_detail("id", id.as_str()),
            FlowError::InvalidTransition { step, event, state } => Error::conflict(message)
                .with_detail("step", step.as_str())
                .with_detail("event", *event)
                .with_detail("state", *state),
            FlowError::AlreadyStarted | FlowError::NotStarted => Error::conflict(message),
            FlowError::LoopBodyBusy { step, body } => Error::conflict(message)
                .with_detail("step", step.as_str())
                .with_detail("body", body.as_str()),
            FlowError::SwitchOutcomeRequired(step)
            | FlowError::NotASwitch(step)
            | FlowError::NotALoop(step) => {
                Error::invalid_input(message).with_detail("step", step.as_str())
            }
            FlowError::UnknownCase { step, label } => Error::invalid_input(message)
                .with_detail("step", step.as_str())
                .with_detail("label", label.as_str()),
            // A persisted state that contradicts itself or the flow is bad
            // input to `restore`, not a race.
            FlowError::StepInTwoBuckets {
                step,
                first,
                second,
            } => Error::invalid_input(message)
                .with_detail("step", step.as_str())
                .with_detail("first", *first)
                .with_detail("second", *second),
            FlowError::SwitchResultNotDone { step, state } => Error::invalid_input(message)
                .with_detail("step", step.as_str())
                .with_detail("state", *state),
            FlowError::SwitchExclusionsMismatch { step } => {
                Error::invalid_input(message).with_detail("step", step.as_str())
            }
            FlowError::LoopBodyOutsideLoop { step, body } => Error::invalid_input(message)
                .with_detail("step", step.as_str())
                .with_detail("body", body.as_str()),
        };
        error.with_detail("reason", e.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flow_errors_map_to_kinds_with_their_reason() {
        let cases: Vec<(FlowError, ErrorKind, &str)> = vec![
            (
                FlowError::Invalid(vec![]),
                ErrorKind::InvalidInput,
                "invalid",
            ),
            (
                FlowError::UnknownStep("x".into()),
                ErrorKind::NotFoundId,
                "unknown_step",
            ),
            (
                FlowError::InvalidTransition {
                    step: "a".into(),
                    event: "complete",
                    state: "pending",
                },
                ErrorKind::Conflict,
                "invalid_transition",
            ),
            (
                FlowError::AlreadyStarted,
                ErrorKind::Conflict,
                "already_started",
            ),
            (FlowError::NotStarted, ErrorKind::Conflict, "not_started"),
            (
                FlowError::SwitchOutcomeRequired("s".into()),
                ErrorKind::InvalidInput,
                "switch_outcome_required",
            ),
            (
                FlowError::NotASwitch("s".into()),
                ErrorKind::InvalidInput,
                "not_a_switch",
            ),
            (
                FlowError::UnknownCase {
                    step: "s".into(),
                    label: "l".into(),
                },
                ErrorKind::InvalidInput,
                "unknown_case",
            ),
            (
                FlowError::NotALoop("s".into()),
                ErrorKind::InvalidInput,
                "not_a_loop",
            ),
            (
                FlowError::LoopBodyBusy {
                    step: "l".into(),
                    body: "b".into(),
                },
                ErrorKind::Conflict,
                "loop_body_busy",
            ),
            (
                FlowError::StepInTwoBuckets {
                    step: "a".into(),
                    first: "done",
                    second: "in_flight",
                },
                ErrorKind::InvalidInput,
                "step_in_two_buckets",
            ),
            (
                FlowError::SwitchResultNotDone {
                    step: "s".into(),
                    state: "pending",
                },
                ErrorKind::InvalidInput,
                "switch_result_not_done",
            ),
            (
                FlowError::SwitchExclusionsMismatch { step: "s".into() },
                ErrorKind::InvalidInput,
                "switch_exclusions_mismatch",
            ),
            (
                FlowError::LoopBodyOutsideLoop {
                    step: "l".into(),
                    body: "b".into(),
                },
                ErrorKind::InvalidInput,
                "loop_body_outside_loop",
            ),
        ];
        for (flow_error, kind, reason) in cases {
            let message = flow_error.to_string();
            let e = Error::from(flow_error);
            assert_eq!(e.kind(), kind, "{reason}");
            assert_eq!(e.message(), message);
            assert_eq!(e.details()["reason"], reason);
        }
    }
}
