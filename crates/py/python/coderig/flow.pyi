from typing import Any, Callable, Dict, Iterable, List, Literal, Mapping, Optional, Set, Tuple, Union, final

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

_Condition = Callable[[Any], Any]
"""Called with a fresh JSON-like copy of ctx ({"input": ..., "results": {...}}; tuples and
sets become lists, NaN/inf become None; other types raise InvalidInputError at `ctx...`);
its result is judged by truthiness. An exception propagates out of the call that
evaluated it. The compiled step holds the callable out of the cycle collector's
sight: a condition referring to its own Flow forms a cycle that is not collected."""

_StepKind = Literal["agent", "code", "approval", "switch", "do_while"]
_TriggerRule = Literal[
    "all_success", "all_failed", "all_done", "all_skipped", "one_success", "one_failed",
    "one_done", "none_failed", "none_failed_min_one_success", "none_skipped", "always",
]
_SkipReason = Literal["upstream_failed", "branch_not_taken", "condition_false", "excluded"]
_StepOutcome = Literal["pending", "in_flight", "done", "failed", "timed_out", "skipped"]
_StepStatus = Literal["pending", "running", "waiting", "done", "failed", "skipped", "timed_out", "cancelled"]
"""Persisted step statuses ("completed" is read as "done")."""
_TaskState = Literal["pending", "running", "blocked", "completed", "failed", "cancelled"]
_FailureKind = Literal[
    "timeout", "rate_limited", "transient", "crashed", "validation", "cancelled", "permanent",
]
_ResumeAction = Literal["keep", "re-dispatch", "mark-done", "mark-failed", "mark-cancelled", "retry"]
_RunStatus = Literal["running", "waiting", "completed", "failed", "cancelled"]
_RunStepKind = Literal["agent", "command", "code", "approval", "switch", "do_while"]
"""The kind of a runtime flow spec's step (the scheduler's kinds and "command")."""
_AttemptOutcome = Literal["done", "failed", "timed_out", "cancelled", "interrupted"]
"""How a step's attempt ended ("interrupted": its process died; it uses no retry)."""
_RetryOn = Literal["failure", "timeout"]
"""The endings of an attempt a step's retry policy retries (its `on`)."""
_FlowError = Literal[
    "invalid", "unknown_step", "invalid_transition", "already_started", "not_started",
    "switch_outcome_required", "not_a_switch", "unknown_case", "not_a_loop", "loop_body_busy",
    "step_in_two_buckets", "switch_result_not_done", "switch_exclusions_mismatch",
    "loop_body_outside_loop",
]
"""The `reason` detail of a scheduler's refusal (ConflictError, NotFoundIdError, InvalidInputError)."""

@final
class Case:
    """One branch of a switch; a case without a condition never matches."""
    label: str
    steps: List[str]
    condition: Optional[_Condition]
    def __new__(cls, label: str, steps: Iterable[str], condition: Optional[_Condition] = None) -> Case: ...

@final
class Step:
    id: str
    kind: _StepKind
    deps: List[str]
    trigger_rule: _TriggerRule
    batch: Optional[str]
    max_retries: int
    timeout: Optional[int]
    cases: List[Case]
    default_branch: List[str]
    loop_body: List[str]
    loop_condition: Optional[_Condition]
    loop_max_iterations: int
    when: Optional[_Condition]
    def __new__(
        cls,
        id: str,
        kind: str = "code",
        deps: Optional[Iterable[str]] = None,
        trigger_rule: str = "all_success",
        batch: Optional[str] = None,
        max_retries: int = 0,
        cases: Optional[Iterable[Case]] = None,
        default_branch: Optional[Iterable[str]] = None,
        loop_body: Optional[Iterable[str]] = None,
        loop_condition: Optional[_Condition] = None,
        loop_max_iterations: int = 100,
        *,
        timeout: Optional[int] = None,
        when: Optional[_Condition] = None,
    ) -> Step:
        """The fields are decoded by the core as a step of a flow spec (unknown kind or
        trigger rule, a str for deps, ... -> InvalidInputError naming the field); None means
        the default; timeout in seconds; when: launch guard (see manifest_steps)."""

@final
class Flow:
    """Holds the core's flow. Not validated on construction (see validate); Scheduler validates."""
    steps: List[Step]
    batch_max_concurrent: Optional[int]
    batch_join_rule: _TriggerRule
    def __new__(
        cls,
        steps: Iterable[Step],
        batch_max_concurrent: Optional[int] = None,
        batch_join_rule: str = "all_success",
    ) -> Flow: ...
    @staticmethod
    def from_spec(spec: Mapping[str, Any]) -> Flow:
        """The JSON form {"steps": [...], "batch_config"?}, decoded strictly by the core
        (InvalidInputError at the bad field's path, e.g. `steps[0].kind`). Conditions have
        no JSON form: such fields are set aside (the case never matches, the loop runs once)."""
    def step(self, id: str) -> Optional[Step]: ...
    def __len__(self) -> int: ...

@final
class State:
    """Holds the core's state. The attributes return fresh copies (st.done.add("a")
    changes nothing); assigning one replaces that field (st.done = st.done | {"a"}).
    skipped given as a collection of ids means reason "condition_false" (a deliberate
    skip, what Scheduler.skip records); as a dict, each reason is checked."""
    done: Set[str]
    skipped: Dict[str, _SkipReason]
    failed: Set[str]
    in_flight: Set[str]
    excluded: Set[str]
    timed_out: Set[str]
    switch_results: Dict[str, Tuple[Optional[str], Set[str]]]
    loop_iterations: Dict[str, int]
    def __new__(
        cls,
        done: Optional[Iterable[str]] = None,
        skipped: Union[None, Mapping[str, str], Iterable[str]] = None,
        failed: Optional[Iterable[str]] = None,
        in_flight: Optional[Iterable[str]] = None,
        excluded: Optional[Iterable[str]] = None,
        timed_out: Optional[Iterable[str]] = None,
        switch_results: Optional[Mapping[str, Tuple[Optional[str], Iterable[str]]]] = None,
        loop_iterations: Optional[Mapping[str, int]] = None,
    ) -> State: ...
    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> State:
        """The JSON form (every field optional; sets as lists; switch_results as
        {id: [chosen, [excluded]]} or {id: {"chosen", "excluded"}}), decoded by the core."""
    def to_dict(self) -> Dict[str, Any]:
        """The JSON form: State.from_dict(st.to_dict()) == st."""
    def outcome(self, id: str) -> _StepOutcome:
        """Precedence done > failed > timed_out > skipped > in_flight > excluded > switch-excluded > pending."""
    def skip_reason(self, id: str) -> Optional[_SkipReason]:
        """Why id was skipped; None unless outcome(id) is "skipped"."""

def ready_steps(f: Flow, st: State) -> List[str]:
    """Steps that may start now, in flow order (batch caps not applied)."""

def evaluate_trigger_rule(deps: Iterable[str], st: State, rule: str = "all_success") -> bool: ...

def propagate_skips(f: Flow, st: State) -> List[Tuple[str, _SkipReason]]:
    """Every not-started step that can never run, with its reason, in flow order."""

def build_batch_state(f: Flow, in_flight: Iterable[str]) -> Dict[str, Tuple[Set[str], Optional[int], _TriggerRule]]:
    """{batch: (running, max_concurrent, join_rule)}."""

def ready_in_batch(f: Flow, st: State, ready_ids: Iterable[str]) -> List[str]:
    """At most max_concurrent - running per batch group, in the given order."""

def is_batch_joined(f: Flow, st: State, batch: str) -> Optional[bool]: ...

def resolve_switch(step: Step, ctx: Any) -> Tuple[Optional[str], List[str]]:
    """(chosen case label or None, excluded step ids); first matching case wins."""

def is_loop_terminated(step: Step, ctx: Any, iterations: int) -> bool:
    """True at the iteration cap or when loop_condition(ctx) is false (after >= 1 iteration)."""

def is_run_complete(f: Flow, st: State) -> bool: ...
def is_stuck(f: Flow, st: State) -> bool: ...
def should_retry(max_retries: Optional[int], retry_count: int) -> bool:
    """retry_count < max_retries; None (no retry policy) never retries."""

def is_retriable(kind: str) -> bool:
    """kind: timeout | rate_limited | transient | crashed (True) | validation | cancelled | permanent (False)."""

def manifest_steps(f: Flow, ctx: Any) -> Set[str]:
    """Steps whose `when` guard is false on the launch ctx (to exclude)."""

def reconcile_resume_step(
    status: str,
    task_id: Optional[str] = None,
    task_state: Optional[str] = None,
    retry_count: int = 0,
    max_retries: Optional[int] = None,
) -> _ResumeAction:
    """task_state None = task row missing; status "completed" is read as "done"."""

def reconcile_run(
    rows: Iterable[Tuple[str, Optional[str], str, int, Optional[int]]],
    task_states: Mapping[str, str],
) -> List[Tuple[str, _ResumeAction]]: ...

def validate(f: Union[Flow, Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """Every problem of a Flow or a spec (decoded as Flow.from_spec) as
    {"code": ..., "message": ..., <fields>}, as /api/flows/validate lists them; empty when valid."""

@final
class Scheduler:
    """Incremental scheduler (cost per event ~ out-degree). Every id returned counts
    as dispatched (in flight) until complete/fail/timeout/skip is reported. A refused
    event raises ConflictError (the step's state does not allow it), NotFoundIdError
    (unknown step id) or InvalidInputError (e.g. complete on a switch); .reason is a
    _FlowError name. The scheduler is unchanged by a refused event."""
    flow: Flow
    def __new__(cls, f: Flow, excluded: Optional[Iterable[str]] = None) -> Scheduler:
        """InvalidInputError when f is invalid (message lists every problem, .errors
        holds them as validate does); NotFoundIdError for an unknown excluded id."""
    def start(self) -> List[str]: ...
    def complete(self, id: str) -> List[str]:
        """Not for switches: use complete_switch / complete_switch_with."""
    def complete_switch(self, id: str, chosen: Optional[str] = None) -> List[str]: ...
    def complete_switch_with(self, id: str, ctx: Any) -> List[str]:
        """Chooses with resolve_switch; a raising condition leaves the scheduler unchanged."""
    def fail(self, id: str) -> List[str]: ...
    def timeout(self, id: str) -> List[str]: ...
    def skip(self, id: str) -> List[str]:
        """Deliberate skip (reason condition_false) of a pending, held or in-flight step."""
    def next_iteration(self, id: str) -> List[str]:
        """Another iteration of an in-flight do_while whose body has finished."""
    def take_skipped(self) -> List[Tuple[str, _SkipReason]]:
        """Skips recorded since the last call (propagated ones included), in order."""
    def outcome(self, id: str) -> _StepOutcome: ...
    def skip_reason(self, id: str) -> Optional[_SkipReason]:
        """Why id was skipped; None unless outcome(id) is "skipped"; an unknown id raises NotFoundIdError."""
    def held(self) -> List[str]: ...
    def in_flight(self) -> List[str]: ...
    def is_complete(self) -> bool: ...
    def loop_iterations(self, id: str) -> int: ...
    def state(self) -> State: ...
