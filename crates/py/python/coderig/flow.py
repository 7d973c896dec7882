"""Flow scheduling decisions: a DAG of agent/code steps with Airflow's
trigger rules, batch caps, switch branches, do-while loops, retries and
crash-resume, plus an incremental ``Scheduler``.

Thin re-exports of the Rust core (``coderig::flow``); see ``flow.pyi`` for
signatures and the conventions:

- ``Flow``, ``Step``, ``Case``, ``State`` and ``Scheduler`` hold the core's
  values; ``Flow.from_spec`` and ``State.from_dict`` build them from their
  JSON forms, decoded by the core as the server decodes them;
- names (kinds, trigger rules, skip reasons, statuses) are the core's
  snake_case strings; an unknown one or an invalid flow given to
  ``Scheduler`` raises ``coderig.InvalidInputError``, an event the step's
  state does not allow ``coderig.ConflictError``, an unknown step id
  ``coderig.NotFoundIdError``;
- conditions are callables ``condition(ctx) -> truthy`` receiving a copy of
  the JSON-like ``ctx``; an exception raised by a condition propagates out
  of the call that evaluated it (no later condition runs in that call);
- ``State``'s attributes are copies (assign to change a field);
  ``skipped`` given as a collection of ids means reason
  ``"condition_false"``.
"""

from ._native import flow as _native_flow

Step = _native_flow.Step
Case = _native_flow.Case
Flow = _native_flow.Flow
State = _native_flow.State
Scheduler = _native_flow.Scheduler
ready_steps = _native_flow.ready_steps
evaluate_trigger_rule = _native_flow.evaluate_trigger_rule
propagate_skips = _native_flow.propagate_skips
build_batch_state = _native_flow.build_batch_state
ready_in_batch = _native_flow.ready_in_batch
is_batch_joined = _native_flow.is_batch_joined
resolve_switch = _native_flow.resolve_switch
is_loop_terminated = _native_flow.is_loop_terminated
is_run_complete = _native_flow.is_run_complete
is_stuck = _native_flow.is_stuck
should_retry = _native_flow.should_retry
is_retriable = _native_flow.is_retriable
manifest_steps = _native_flow.manifest_steps
reconcile_resume_step = _native_flow.reconcile_resume_step
reconcile_run = _native_flow.reconcile_run
validate = _native_flow.validate

__all__ = [
    "Case",
    "Flow",
    "Scheduler",
    "State",
    "Step",
    "build_batch_state",
    "evaluate_trigger_rule",
    "is_batch_joined",
    "is_loop_terminated",
    "is_retriable",
    "is_run_complete",
    "is_stuck",
    "manifest_steps",
    "propagate_skips",
    "ready_in_batch",
    "ready_steps",
    "reconcile_resume_step",
    "reconcile_run",
    "resolve_switch",
    "should_retry",
    "validate",
]

del _native_flow
