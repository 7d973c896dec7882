import os
from typing import (
    Any,
    Awaitable,
    Callable,
    ClassVar,
    Dict,
    Iterable,
    List,
    Literal,
    Mapping,
    NamedTuple,
    Optional,
    Sequence,
    Tuple,
    Union,
    final,
)

import pathlib
import sys

from . import arena as arena, flow as flow, hashline as hashline, model as model
from .arena import (
    _BattleStatus,
    _BattleType,
    _ContestantStatus,
    _CrossExamStatus,
    _EvidenceTier,
    _Lane,
    _WinnerSource,
)
from .flow import _AttemptOutcome, _RunStatus, _RunStepKind, _SkipReason, _StepStatus
from .hashline import _HashlineEdit
from .model import _ErrorClass

if sys.version_info >= (3, 11):
    from typing import NotRequired, TypedDict
else:  # pragma: no cover
    from typing_extensions import NotRequired, TypedDict

__all__ = [
    "AgentError",
    "AmbiguousError",
    "Applied",
    "Battle",
    "BattleEvents",
    "ConflictError",
    "EditError",
    "EditIOError",
    "Error",
    "GuardError",
    "HashlineMismatchError",
    "InternalError",
    "InvalidInputError",
    "IoError",
    "Match",
    "NoOpError",
    "NotFoundError",
    "NotFoundIdError",
    "Rig",
    "Run",
    "RunEvents",
    "Turn",
    "TurnEvents",
    "UnavailableError",
    "Violation",
    "__version__",
    "apply_edit",
    "apply_edits",
    "arena",
    "check_guards",
    "edit_file",
    "edits_file",
    "flow",
    "hashline",
    "hashline_edit_file",
    "locate",
    "model",
    "names",
    "xxhash32",
]

_StrPath = Union[str, "os.PathLike[str]"]

__version__: str

def xxhash32(data: Union[str, bytes], seed: Optional[int] = 0) -> int:
    """xxHash32 of data (str hashed as UTF-8); seed in 0..=4294967295,
    otherwise InvalidInputError (decoded as POST /api/xxhash32's body)."""

_Tier = Literal["exact", "whitespace", "unicode", "fuzzy"]
_MatchKind = Literal["exact", "whitespace", "unicode", "fuzzy", "ambiguous", "not_found"]
_ViolationKind = Literal["truncation", "dropped_imports", "marker_leak", "conflict_marker"]
# The stdout formats of agent CLIs (coderig.agent.parse.StreamFormat).
_StreamFormat = Literal["claude-stream-json", "codex-json", "opencode-json", "text"]
_CliPreset = Literal["claude", "qwen", "codex", "opencode", "custom"]
_Access = Literal["read_only", "edit", "full"]
_SandboxMode = Literal["enforce", "auto", "off"]
_SandboxEnforcer = Literal["landlock", "namespace", "none"]
_AgentKind = Literal["cli", "openai", "scripted", "native"]
_AgentErrorKind = Literal["spawn", "timeout", "idle", "cancelled", "protocol", "provider", "exit", "unavailable"]
_AgentEventType = Literal["session_started", "text_delta", "reasoning_delta", "tool_call", "tool_result", "usage", "finished", "error"]
# The native agent's table: its wire API (`api`), its tools (`tools`), and why its turn
# stopped (the outcome's and the finished event's stop_reason).
_NativeApi = Literal["chat", "anthropic", "responses"]
_NativeTools = Literal["coderig", "bash"]
_NativeStopReason = Literal[
    "finished", "no_tool_call", "max_steps", "max_tokens", "max_wall", "max_cost",
    "doom_loop", "format_errors", "cancelled",
]
# The runtime's events (a battle's and a run's): their `type`, and what an agent_output
# event's text is.
_EventType = Literal["battle_started", "contestant_updated", "battle_updated", "run_updated", "step_updated", "agent_output", "task_rescued"]
_OutputKind = Literal["text", "reasoning", "tool_call", "tool_result"]
_ErrorKind = Literal[
    "not_found", "ambiguous", "guard", "no_op", "hashline_mismatch", "invalid_input",
    "conflict", "not_found_id", "unavailable", "agent", "io", "internal",
]
_ErrorCode = Literal[
    "NOT_FOUND", "AMBIGUOUS", "GUARD", "NO_OP", "HASHLINE_MISMATCH", "INVALID_INPUT",
    "CONFLICT", "NOT_FOUND_ID", "UNAVAILABLE", "AGENT", "IO", "INTERNAL",
]

def names() -> Dict[str, List[str]]:
    """Every list of names crossing the Python face, as the core defines them:
    {"tier": [...], "match_kind": [...], ..., "error_kind": [...], "error_code": [...]}."""

class Violation(NamedTuple):
    kind: _ViolationKind
    message: str

class Error(Exception):
    """Base of every coderig error. .details is the core's details object (as HTTP
    sends it); each detail present is also an attribute (.path, .reason, .what, .id, ...),
    the edit errors' typed below."""
    kind: ClassVar[Optional[_ErrorKind]]
    code: ClassVar[Optional[_ErrorCode]]
    message: str
    details: Dict[str, Any]
    def __init__(self, message: str = "", details: Optional[Mapping[str, Any]] = None, **attributes: Any) -> None: ...

class EditError(Error):
    """An edit request was refused (not found, ambiguous, guard, no-op, stale refs, malformed)."""

class NotFoundError(EditError):
    nearest: Optional[Tuple[int, int, float]]
    def __init__(self, message: str = "", details: Optional[Mapping[str, Any]] = None, *,
                 nearest: Optional[Tuple[int, int, float]] = None, **attributes: Any) -> None: ...

class AmbiguousError(EditError):
    count: int
    lines: List[Tuple[int, int]]
    def __init__(self, message: str = "", details: Optional[Mapping[str, Any]] = None, *,
                 count: int = 0, lines: Iterable[Tuple[int, int]] = (), **attributes: Any) -> None: ...

class GuardError(EditError):
    violations: List[Violation]
    def __init__(self, message: str = "", details: Optional[Mapping[str, Any]] = None, *,
                 violations: Iterable[Violation] = (), **attributes: Any) -> None: ...

class NoOpError(EditError): ...

class HashlineMismatchError(EditError):
    remaps: Dict[str, str]
    def __init__(self, message: str = "", details: Optional[Mapping[str, Any]] = None, *,
                 remaps: Optional[Dict[str, str]] = None, **attributes: Any) -> None: ...

class InvalidInputError(EditError, ValueError):
    """details["path"] (also .path) names the bad field when known."""

class ConflictError(Error):
    """The state does not allow the operation (e.g. a scheduler event on a step not in flight)."""

class NotFoundIdError(Error):
    """No step, run, battle, ... has this id."""

class UnavailableError(Error): ...
class AgentError(Error): ...

# The details of the AgentError (or UnavailableError) a failed turn raises ("class" is
# a keyword, hence the functional form).
_AgentErrorDetails = TypedDict("_AgentErrorDetails", {
    "agent_error": _AgentErrorKind,
    "class": _ErrorClass,
    "http_status": NotRequired[int],
    "retry_after_ms": NotRequired[int],
    "exit_code": NotRequired[int],
    "stderr_tail": NotRequired[str],
})

class IoError(Error, OSError):
    """Reading or writing a file failed."""

EditIOError = IoError

class InternalError(Error): ...

@final
class Match:
    """Where a needle is. start/end are code-point offsets (content[m.start:m.end]
    is the matched text); start, end and score are None unless a tier found it."""
    @property
    def kind(self) -> _MatchKind: ...
    @property
    def start(self) -> Optional[int]: ...
    @property
    def end(self) -> Optional[int]: ...
    @property
    def score(self) -> Optional[float]: ...
    @property
    def count(self) -> int:
        """1 when found, >= 2 when ambiguous, 0 when not found."""
    @property
    def candidates(self) -> List[Tuple[int, int]]:
        """1-based inclusive (first_line, last_line) per candidate, when ambiguous."""
    @property
    def nearest(self) -> Optional[Tuple[int, int, float]]:
        """(first_line, last_line, score) of the closest window, when not found."""

@final
class Applied:
    """A successful application."""
    @property
    def content(self) -> str: ...
    @property
    def tier(self) -> _Tier:
        """The weakest tier used."""
    @property
    def replacements(self) -> int: ...

_SearchReplace = Union[Tuple[str, str], Tuple[str, str, bool], Mapping[str, object]]
"""(old, new), (old, new, replace_all) or {"old": ..., "new": ..., "replace_all": ...}."""

def locate(content: str, needle: str) -> Match:
    """Tiers exact -> whitespace -> unicode -> fuzzy; two qualifying locations are "ambiguous";
    an empty needle raises InvalidInputError. Arguments are decoded as POST /api/locate's body."""

def apply_edit(
    content: str,
    old: str,
    new: str,
    replace_all: bool = False,
    path: Optional[_StrPath] = None,
    guards: bool = True,
) -> Applied:
    """Raises NotFoundError | AmbiguousError | GuardError | NoOpError | InvalidInputError.
    The arguments are decoded as the body of POST /api/edit (same messages)."""

def apply_edits(
    content: str,
    edits: Iterable[_SearchReplace],
    path: Optional[_StrPath] = None,
    guards: bool = True,
) -> Applied:
    """All edits located in the one original content; overlaps refused; all or nothing.
    A bad edit is InvalidInputError at its path, numbered from 0 (`edits[0].old`: ...)."""

def check_guards(original: str, updated: str, path: Optional[_StrPath] = None) -> List[Violation]: ...

def edit_file(
    path: _StrPath, old: str, new: str, replace_all: bool = False, guards: bool = True
) -> Applied:
    """apply_edit on the file, written back atomically; untouched on any error (IoError for IO)."""

def edits_file(path: _StrPath, edits: Iterable[_SearchReplace], guards: bool = True) -> Applied:
    """apply_edits on the file, written back atomically; untouched on any error."""

def hashline_edit_file(path: _StrPath, edits: Sequence[_HashlineEdit]) -> str:
    """hashline.apply on the file, written back atomically; returns the new content."""
from . import arena as arena
from . import flow as flow

# --- agents ----------------------------------------------------------------------

_Duration = Union[int, float, str]
"""Seconds (int or float) or a duration string ("500ms", "90s", "20m", "2h"); a bad
one is InvalidInputError with the core's message, another type a TypeError."""

class _SessionStarted(TypedDict):
    type: Literal["session_started"]
    session_id: str
    model: NotRequired[str]

class _TextDelta(TypedDict):
    type: Literal["text_delta"]
    text: str

class _ReasoningDelta(TypedDict):
    type: Literal["reasoning_delta"]
    text: str

class _ToolCall(TypedDict):
    type: Literal["tool_call"]
    id: str
    name: str
    input: Any

class _ToolResult(TypedDict):
    type: Literal["tool_result"]
    id: str
    ok: bool
    output: str

class _UsageEvent(TypedDict):
    """Tokens spent since the previous usage event (they add up to the outcome's)."""
    type: Literal["usage"]
    input: int
    output: int
    cache_read: int
    cache_write: int
    reasoning: int
    cost_usd: NotRequired[float]

class _Finished(TypedDict):
    type: Literal["finished"]
    stop_reason: NotRequired[str]
    final_text: NotRequired[str]
    num_turns: NotRequired[int]

_ErrorEvent = TypedDict("_ErrorEvent", {
    "type": Literal["error"],
    "message": str,
    "class": _ErrorClass,
    "http_status": NotRequired[int],
})

_AgentEvent = Union[
    _SessionStarted, _TextDelta, _ReasoningDelta, _ToolCall, _ToolResult, _UsageEvent, _Finished,
    _ErrorEvent,
]
"""One normalized event, exactly as the core serializes it (the core's AgentEvent)."""

class _AgentSpec(TypedDict, total=False):
    """One entry of coderig.toml's [agents] table (agents= of Rig): which keys a kind
    takes is checked by the core (a key of another kind is InvalidInputError)."""
    kind: _AgentKind
    lane: _Lane
    timeout: _Duration
    idle_timeout: _Duration
    env: Mapping[str, str]
    models: Sequence[str]
    preset: _CliPreset
    command: str
    args: Sequence[str]
    extra_args: Sequence[str]
    format: _StreamFormat
    enforces_read_only: bool
    state_dirs: Sequence[str]
    network: str
    base_url: str
    api_key: str
    api_key_env: str
    model: str
    headers: Mapping[str, str]
    script: Sequence[Mapping[str, Any]]
    scripts: Mapping[str, Sequence[Mapping[str, Any]]]
    api: _NativeApi
    tools: _NativeTools
    hashline: bool
    max_steps: int
    max_wall: _Duration
    max_tokens: int
    max_cost_usd: float
    max_output_tokens: int
    context_window: int
    sampling: Mapping[str, Any]
    prices: Mapping[str, float]
    system_prompt: str
    model_overrides: Mapping[str, Mapping[str, Any]]
    run_timeout: _Duration

class _Usage(TypedDict):
    input: int
    output: int
    cache_read: int
    cache_write: int
    reasoning: int
    cost_usd: NotRequired[float]

class _TurnOutcome(TypedDict):
    """The core's TurnOutcome; absent optional fields are left out."""
    final_text: str
    usage: _Usage
    session_id: NotRequired[str]
    model: NotRequired[str]
    num_turns: NotRequired[int]
    ttft_ms: NotRequired[int]
    duration_ms: int
    generation_ms: NotRequired[int]
    stop_reason: NotRequired[str]
    exit_code: NotRequired[int]
    sandbox: NotRequired[_SandboxReport]
    requests: NotRequired[int]
    tool_calls: NotRequired[int]
    calls_read: NotRequired[_CallsRead]
    context_window: NotRequired[int]

class _CallsRead(TypedDict):
    """How a native turn's tool calls were read (the core's CallsRead)."""
    structured: int
    repaired: int
    from_text: int
    malformed: int
    cut: int

class _AgentInfo(TypedDict):
    """The core's AgentInfo."""
    identity: str
    kind: _AgentKind
    preset: NotRequired[str]
    lane: _Lane
    command: NotRequired[str]
    installed: bool
    reachable: Optional[bool]
    models: List[str]
    error: NotRequired[str]
    sandbox: str

@final
class TurnEvents:
    """The events of a turn as dicts: an iterator (blocking, GIL released, Ctrl-C
    cancels the turn and raises KeyboardInterrupt) and an async iterator. Every
    events() of a turn reads the one stream; each event is delivered once."""
    def __iter__(self) -> "TurnEvents": ...
    def __next__(self) -> _AgentEvent: ...
    def __aiter__(self) -> "TurnEvents": ...
    def __anext__(self) -> Awaitable[_AgentEvent]: ...

@final
class Turn:
    """A running agent turn. Dropping it does not stop the turn; cancel() does."""
    @property
    def identity(self) -> str: ...
    @property
    def model(self) -> Optional[str]: ...
    @property
    def outcome(self) -> Optional[_TurnOutcome]:
        """The outcome once a wait returned it, else None."""
    def events(self) -> TurnEvents:
        """The event stream (ends with the turn, or when a wait starts)."""
    def wait(self, timeout: Optional[_Duration] = None) -> _TurnOutcome:
        """Blocks (GIL released) until the turn ends; a failed turn raises its error
        (AgentError with details agent_error, class, ...; UnavailableError). When
        timeout passes first, TimeoutError is raised and the turn goes on. Ctrl-C
        cancels the turn and raises KeyboardInterrupt."""
    def wait_async(self, timeout: Optional[_Duration] = None) -> Awaitable[_TurnOutcome]: ...
    def cancel(self) -> None:
        """Ends the turn with AgentError (details["agent_error"] == "cancelled"); any thread."""

# --- battles ---------------------------------------------------------------------

class _AgentRef(TypedDict):
    identity: str
    model: str

class _ContestantSpec(TypedDict):
    """A contestant of start_battle: an agent, its model and optionally its own
    instruction (a non-blank str of at most 16384 characters). Its agent receives
    prompt + "\\n\\n" + instruction; the other contestants do not see it."""
    identity: str
    model: str
    instruction: NotRequired[Optional[str]]

class _Oracle(TypedDict, total=False):
    repro: str
    suite: str
    timeout: _Duration
    network: str  # "deny" (default: no network), "allow", or "loopback:PORT[,PORT...]"

class _BattleSpec(TypedDict, total=False):
    """DESIGN's BattleSpec JSON (start_battle's keyword arguments, or its one dict):
    decoded strictly by the core (an unknown key or a bad value is InvalidInputError
    with .path). battle_type, prompt, contestants and judge are required; project too
    for coding."""
    battle_type: _BattleType
    prompt: str
    project: _StrPath
    base: str
    contestants: Sequence[_ContestantSpec]
    judge: _AgentRef
    oracle: _Oracle
    contestant_timeout: _Duration
    keep_worktrees: bool

class _SandboxLimits(TypedDict, total=False):
    open_files: int
    processes: int
    file_size: int
    address_space: int
    tmp_size: int

class _SandboxReport(TypedDict):
    """What the kernel enforced on a process tree (the core's SandboxReport)."""
    mode: _SandboxMode
    confined: bool
    landlock_abi: Optional[int]
    filesystem: _SandboxEnforcer
    writable: list[str]
    hidden: list[str]
    network: str
    network_enforced_by: _SandboxEnforcer
    processes: _SandboxEnforcer
    limits: _SandboxLimits
    unenforced: list[str]

class _CommandEvidence(TypedDict):
    exit_code: Optional[int]
    duration_ms: int
    timed_out: bool
    output_tail: str
    sandbox: NotRequired[_SandboxReport]

class _Evidence(TypedDict):
    repro: Optional[_CommandEvidence]
    suite: Optional[_CommandEvidence]
    patch_applied: bool
    error: NotRequired[str]

class _BaseRun(TypedDict):
    repro: Optional[_CommandEvidence]
    suite: Optional[_CommandEvidence]
    error: NotRequired[str]

class _ContestantView(TypedDict):
    """One contestant of a BattleView (the core's ContestantView)."""
    id: str
    identity: str
    model: str
    instruction: Optional[str]  # its own, appended to the prompt for it alone
    lane: _Lane
    status: _ContestantStatus
    dir: str
    started_at_ms: Optional[int]
    ended_at_ms: Optional[int]
    duration_ms: Optional[int]
    ttft_ms: Optional[int]
    usage: Optional[_Usage]
    tokens_per_sec: Optional[float]
    patch_bytes: Optional[int]
    evidence: Optional[_Evidence]
    tier: _EvidenceTier
    error: Optional[str]

class _CrossExamView(TypedDict):
    id: str
    identity: str
    model: str
    status: _CrossExamStatus
    text: Optional[str]
    verdict: Optional[str]
    error: Optional[str]

class _BattleView(TypedDict):
    """A battle as every face shows it (the core's BattleView; GET /api/battles/:id)."""
    id: str
    status: _BattleStatus
    battle_type: _BattleType
    prompt: str
    project: Optional[str]
    base: str
    base_commit: Optional[str]
    judge: _AgentRef
    spec: Dict[str, Any]
    results_dir: str
    created_at_ms: int
    ended_at_ms: Optional[int]
    winner_contestant_id: Optional[str]
    winner_source: Optional[_WinnerSource]
    analysis_ready: bool
    reason: Optional[str]
    base_run: Optional[_BaseRun]
    error: Optional[str]
    contestants: List[_ContestantView]
    cross_exams: List[_CrossExamView]

class _BattlePage(TypedDict):
    battles: List[_BattleView]
    next_cursor: Optional[str]

class _LeaderboardEntry(TypedDict):
    name: str
    """identity/model"""
    score: float
    ci_low: float
    ci_high: float
    n_battles: int

class _Leaderboard(TypedDict):
    battle_type: _BattleType
    n_battles: int
    entries: List[_LeaderboardEntry]

class _BattleApplied(TypedDict):
    battle_id: str
    contestant_id: str
    project: str
    patch_bytes: int

class _ContestantInfo(TypedDict):
    id: str
    identity: str
    model: str
    lane: _Lane

class _BattleStartedEvent(TypedDict):
    type: Literal["battle_started"]
    seq: int
    """The event's place in the store's log (stored events only)."""
    epoch: NotRequired[str]
    """The store's instance id, when known."""
    battle_id: str
    battle_type: _BattleType
    prompt: str
    contestants: List[_ContestantInfo]

class _ContestantUpdatedEvent(TypedDict):
    type: Literal["contestant_updated"]
    seq: int
    epoch: NotRequired[str]
    battle_id: str
    contestant_id: str
    status: _ContestantStatus
    duration_ms: NotRequired[int]
    ttft_ms: NotRequired[int]
    usage: NotRequired[Dict[str, Any]]
    """The usage split of the turn (a _Usage)."""
    tokens_per_sec: NotRequired[float]
    evidence: NotRequired[Dict[str, Any]]
    """The oracle's evidence (an _Evidence)."""
    error: NotRequired[Dict[str, Any]]

class _BattleUpdatedEvent(TypedDict):
    type: Literal["battle_updated"]
    seq: int
    epoch: NotRequired[str]
    battle_id: str
    status: _BattleStatus
    winner_contestant_id: NotRequired[str]
    winner_source: NotRequired[_WinnerSource]
    analysis_ready: NotRequired[bool]
    cross_exam_id: NotRequired[str]
    error: NotRequired[Dict[str, Any]]

class _ContestantOutputEvent(TypedDict):
    """A contestant's agent at work (live only: no seq)."""
    type: Literal["agent_output"]
    battle_id: str
    contestant_id: str
    kind: _OutputKind
    text: str

class _TaskRescuedEvent(TypedDict):
    """A worker's lease on a task expired and the store took the task back: queued
    again (requeued) or failed, its rescues spent. The owner keeps its status until
    a worker or a reconcile moves it."""
    type: Literal["task_rescued"]
    seq: int
    epoch: NotRequired[str]
    battle_id: NotRequired[str]
    run_id: NotRequired[str]
    owner_kind: str
    owner_id: str
    task_id: str
    worker: NotRequired[str]
    rescues: int
    requeued: bool

_BattleEvent = Union[_BattleStartedEvent, _ContestantUpdatedEvent, _BattleUpdatedEvent, _ContestantOutputEvent, _TaskRescuedEvent]
"""One event of a battle, as the core serializes it (the core's BattleEvent schema,
DESIGN "events"): stored ones with their seq, live agent_output without."""

@final
class BattleEvents:
    """The events of a battle: an iterator (blocking, GIL released; Ctrl-C raises
    KeyboardInterrupt and the battle goes on) and an async iterator. The stored
    events of the battle from its start, then live ones; ends right after the
    battle_updated that finishes it (completed, failed, cancelled), every contestant's
    final update before it (the core's one end rule). A rig shut down before the battle
    ended raises UnavailableError."""
    def __iter__(self) -> "BattleEvents": ...
    def __next__(self) -> _BattleEvent: ...
    def __aiter__(self) -> "BattleEvents": ...
    def __anext__(self) -> Awaitable[_BattleEvent]: ...

@final
class Battle:
    """A battle of a Rig's arena. Dropping it changes nothing; stop() stops it."""
    @property
    def id(self) -> str: ...
    def info(self) -> _BattleView:
        """The battle as it is now."""
    def wait(self, timeout: Optional[_Duration] = None) -> _BattleView:
        """Blocks (GIL released) until the battle is completed, failed or cancelled.
        When timeout passes first, TimeoutError is raised and the battle goes on.
        Ctrl-C raises KeyboardInterrupt and does NOT stop the battle (stop() does)."""
    def wait_async(self, timeout: Optional[_Duration] = None) -> Awaitable[_BattleView]: ...
    def events(self) -> BattleEvents:
        """A new stream of the battle's events from its start (see BattleEvents)."""
    def stop(self) -> _BattleView:
        """Stops a running or judging battle; a finished one raises ConflictError."""
    def analyze(self, force: bool = False) -> _BattleView:
        """Re-runs the analysis of a completed battle (ConflictError otherwise); a
        human's winner is kept unless force."""
    def analysis(self) -> str:
        """The text of analysis.md; NotFoundIdError until it is written."""
    def set_winner(self, contestant_id: Optional[str]) -> _BattleView:
        """A human names (or, with None, clears) the winner of a completed battle."""
    def cross_examine(self, identity: str, model: str) -> str:
        """Queues a cross-examination of the analysis; returns its id."""
    def diff(self, contestant_id: str) -> str:
        """The contestant's archived diff.patch ("" when it changed nothing)."""
    def result(self, contestant_id: str) -> str:
        """The contestant's archived result.md: outcome, benchmark, usage, evidence
        and its answer (NotFoundIdError until its turn ended)."""
    def apply(self, contestant_id: Optional[str] = None) -> _BattleApplied:
        """Applies the winner's (or contestant_id's) patch to the project's working
        tree; a patch that does not apply is ConflictError and changes nothing."""

# --- flow runs -------------------------------------------------------------------

_FlowSpec = Dict[str, Any]
"""The runtime flow spec's JSON shape (DESIGN "flow runtime"): {"name"?, "description"?,
"steps": [{"id", "kind": "agent" | "command" | "code" | "approval" | "switch" | "do_while",
"deps"?, "trigger_rule"?, "batch"?, "timeout"?, "retry"?, "when"?, ...fields of its kind}],
"report"?, "batch_config"?}."""

class _StepState(TypedDict):
    """One step's entry under a code step's context's steps."""
    status: _StepStatus
    attempt: int
    exit_code: NotRequired[int]
    error: NotRequired[Any]

class _CodeContext(TypedDict):
    """What a code step's callable is called with: the run's input, the results and
    states of its dependencies, and the loop iteration (0 outside loops)."""
    input: Any
    results: Dict[str, Any]
    steps: Dict[str, _StepState]
    iteration: int

_CodeStep = Callable[[_CodeContext], Any]
"""A code step's callable: called with its _CodeContext; sync, or async (returning an
awaitable); returns a JSON-like value, the step's result. An exception fails the attempt
with its message."""

class _RunSummary(TypedDict):
    """A run as Rig.runs lists it (the core's RunSummary)."""
    id: str
    name: Optional[str]
    status: _RunStatus
    error: Optional[Dict[str, Any]]
    created_at: int
    updated_at: int

class _RunPage(TypedDict):
    runs: List[_RunSummary]
    next_cursor: Optional[str]

class _AttemptRecord(TypedDict):
    attempt: int
    iteration: int
    outcome: _AttemptOutcome
    error: NotRequired[Dict[str, Any]]
    sandbox: NotRequired[_SandboxReport]
    """What a command attempt's sandbox enforced (absent when no process started)."""
    started_at: int
    finished_at: int

class _ApprovalRecord(TypedDict):
    approved: bool
    by: Optional[str]
    comment: Optional[str]
    at: int

class _SwitchRecord(TypedDict):
    chosen: Optional[str]
    excluded: List[str]

class _StepView(TypedDict):
    """One step of a run (the core's StepView; times in ms since the epoch)."""
    id: str
    kind: _RunStepKind
    status: _StepStatus
    attempt: int
    iteration: int
    skip_reason: Optional[_SkipReason]
    output: Any
    """Text for agent and command steps, the returned JSON for code steps, the decision
    for approvals, the chosen label for a switch."""
    error: Optional[Dict[str, Any]]
    """{"kind", "code", "message", ...details}: a code step's exception is kind "agent"
    with its message, "exception" (its class) and "traceback"; a coderig.Error keeps its
    kind and details."""
    exit_code: Optional[int]
    started_at: Optional[int]
    finished_at: Optional[int]
    deadline_at: Optional[int]
    available_at: Optional[int]
    switch: Optional[_SwitchRecord]
    message: Optional[str]
    approval: Optional[_ApprovalRecord]
    attempts: List[_AttemptRecord]

class _RunView(TypedDict):
    """A run as every face shows it (the core's RunView; GET /api/runs/:id)."""
    id: str
    name: Optional[str]
    status: _RunStatus
    input: Dict[str, Any]
    error: Optional[Dict[str, Any]]
    report: Optional[str]
    spec: _FlowSpec
    created_at: int
    updated_at: int
    finished_at: Optional[int]
    steps: List[_StepView]

class _RunUpdatedEvent(TypedDict):
    type: Literal["run_updated"]
    seq: int
    epoch: NotRequired[str]
    run_id: str
    status: _RunStatus
    error: NotRequired[Dict[str, Any]]

class _StepUpdatedEvent(TypedDict):
    type: Literal["step_updated"]
    seq: int
    epoch: NotRequired[str]
    run_id: str
    step_id: str
    status: _StepStatus
    attempt: int
    skip_reason: NotRequired[_SkipReason]
    error: NotRequired[Dict[str, Any]]
    sandbox: NotRequired[str]
    """The summary of the attempt's sandbox when part of it was not enforced."""

class _StepOutputEvent(TypedDict):
    """A step's agent at work (live only: no seq)."""
    type: Literal["agent_output"]
    run_id: str
    step_id: str
    kind: _OutputKind
    text: str

_RunEvent = Union[_RunUpdatedEvent, _StepUpdatedEvent, _StepOutputEvent, _TaskRescuedEvent]
"""One event of a run, as the core serializes it (the core's RunEvent schema): stored
ones with their seq, live agent_output without."""

@final
class RunEvents:
    """The events of a run: an iterator (blocking, GIL released; Ctrl-C raises
    KeyboardInterrupt and the run goes on) and an async iterator. The stored events of the
    run from its start, then live ones; ends right after the run_updated that ends it
    (completed, failed, cancelled), every step's final update before it (a cancelled
    run: its steps' cancelled updates, then the run's; the core's one end rule). A rig
    shut down before the run ended raises UnavailableError."""
    def __iter__(self) -> "RunEvents": ...
    def __next__(self) -> _RunEvent: ...
    def __aiter__(self) -> "RunEvents": ...
    def __anext__(self) -> Awaitable[_RunEvent]: ...

@final
class Run:
    """A run of a Rig's flow engine. Dropping it changes nothing; cancel() ends it."""
    @property
    def id(self) -> str: ...
    @property
    def status(self) -> _RunStatus:
        """The status now."""
    @property
    def report(self) -> Optional[str]:
        """The rendered report once the run ended (None before, or without a report)."""
    def info(self) -> _RunView:
        """The run as it is now."""
    def steps(self) -> List[_StepView]:
        """The steps now, in flow order."""
    def wait(self, timeout: Optional[_Duration] = None) -> _RunView:
        """Blocks (GIL released; code steps run meanwhile) until the run is completed,
        failed or cancelled, every step final with it. When timeout passes first, TimeoutError
        is raised and the run goes on. Ctrl-C raises KeyboardInterrupt and does NOT cancel
        the run (cancel() does)."""
    def wait_async(self, timeout: Optional[_Duration] = None) -> Awaitable[_RunView]: ...
    def events(self) -> RunEvents:
        """A new stream of the run's events from its start (see RunEvents)."""
    def cancel(self) -> _RunView:
        """Cancels a live run: its running steps are stopped (processes killed, async code
        steps cancelled), the rest marked cancelled; returned cancelled with every step
        final. An ended run raises ConflictError."""
    def approve(self, step: str, by: Optional[str] = None, comment: Optional[str] = None) -> _StepView:
        """Approves a waiting approval step (done, the decision its output). ConflictError
        when it is not waiting, NotFoundIdError for an unknown step."""
    def reject(self, step: str, by: Optional[str] = None, comment: Optional[str] = None) -> _StepView:
        """Rejects a waiting approval step (failed; the trigger rules decide what runs)."""

@final
class Rig:
    """The agents of a rig (config= a coderig.toml path, or agents= its agents table as
    a dict; not both; neither: ./coderig.toml when it exists), their turns, and its
    battles. The store of the battles (db= a postgres:// URL or an SQLite file, default
    <data_dir>/coderig.db, data_dir default ./.coderig) is opened by the first battle
    or run call. project_roots: coding projects, command steps' cwd and agent steps'
    workdir must lie under one of them (each a directory, else InvalidInputError at
    project_roots[i]); none given: the current directory, never any path.
    A bad config is InvalidInputError naming the key (agents.x.kind)."""
    def __init__(
        self,
        data_dir: Optional[_StrPath] = None,
        db: Optional[_StrPath] = None,
        config: Optional[_StrPath] = None,
        agents: Optional[Mapping[str, _AgentSpec]] = None,
        project_roots: Optional[Iterable[_StrPath]] = None,
        sandbox: Union[_SandboxMode, Mapping[str, _SandboxMode], None] = None,
    ) -> None: ...
    @property
    def project_roots(self) -> List[pathlib.Path]:
        """Canonical: the roots given, or [the current directory] when none were."""
    def close(self, grace: Union[float, str, None] = None) -> None:
        """Stops what the rig runs (runs' drivers and battle tasks, left in the store
        for the next rig; agent turns; the bus last), waiting at most grace (seconds
        or "10s", default 10 s). Later battle and run calls raise UnavailableError;
        closing twice does nothing."""
    def __enter__(self) -> "Rig": ...
    def __exit__(self, *exc: Any) -> bool: ...
    def start_battle(self, spec: Optional[_BattleSpec] = None, **kwargs: Any) -> Battle:
        """Starts a battle (the spec as keyword arguments, one dict, or both without a
        key twice) and returns at once. Contestants are dicts {identity, model,
        instruction?}: a contestant's instruction is appended to the prompt for it
        alone (prompt + "\\n\\n" + instruction). A bad spec is InvalidInputError with
        .path (contestants[1].model, contestants[0].instruction) and creates nothing;
        an unknown identity too."""
    def battle(self, id: str) -> Battle:
        """An existing battle; NotFoundIdError when there is none."""
    def battles(
        self,
        project: Optional[_StrPath] = None,
        status: Optional[_BattleStatus] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
    ) -> _BattlePage:
        """One page of battles, newest first (limit 1-500, default 50)."""
    def leaderboard(
        self, battle_type: Optional[_BattleType] = None, project: Optional[_StrPath] = None
    ) -> List[_Leaderboard]:
        """Bradley-Terry ratings over completed battles with a winner, per battle type."""
    def run_flow(
        self,
        spec: Union[_FlowSpec, str, "os.PathLike[str]"],
        input: Optional[Mapping[str, Any]] = None,
        code: Optional[Mapping[str, _CodeStep]] = None,
    ) -> Run:
        """Starts a run and returns at once. spec: a dict, YAML or JSON text, or a path (an
        os.PathLike, or a str naming a .yaml/.yml/.json file). code: {step_id: callable} for
        every code step (they run only in this process). A bad spec, input or code mapping
        is InvalidInputError with details["problems"] ([{path, message}]) and creates
        nothing; an unreadable spec file IoError; a non-callable in code TypeError."""
    def run(self, run_id: str) -> Run:
        """An existing run (of any process on the store); NotFoundIdError when there is none."""
    def runs(
        self,
        status: Optional[_RunStatus] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
    ) -> _RunPage:
        """One page of runs, newest first (limit 1-500, default 50)."""
    @property
    def data_dir(self) -> Optional[pathlib.Path]: ...
    @property
    def db(self) -> Optional[str]: ...
    @property
    def config(self) -> Optional[pathlib.Path]:
        """The coderig.toml the agents came from."""
    def agents(self, probe_timeout: Optional[_Duration] = None) -> List[_AgentInfo]:
        """Every agent, sorted by identity (blocking, GIL released); HTTP agents are
        asked for their models for at most probe_timeout (default 2 s)."""
    def agents_async(self, probe_timeout: Optional[_Duration] = None) -> Awaitable[List[_AgentInfo]]: ...
    def run_turn(
        self,
        identity: str,
        model: Optional[str],
        prompt: str,
        workdir: Optional[_StrPath] = None,
        access: Optional[_Access] = None,
        timeout: Optional[_Duration] = None,
        idle_timeout: Optional[_Duration] = None,
        system: Optional[str] = None,
        env: Optional[Mapping[str, str]] = None,
        artifacts: Optional[_StrPath] = None,
    ) -> Turn:
        """Starts a turn. access: "read_only" (default) | "edit" | "full"; artifacts: a
        directory for the turn's records (the native agent's transcript.jsonl and cut tool
        outputs). NotFoundIdError
        for an unknown identity (details["known"]), InvalidInputError naming the option for
        a bad one (`idle_timeout`: bad duration ...). Turns still running at interpreter
        exit are cancelled and waited for (at most 6 s), their processes stopped; so are
        the agents of battles (their battles resume when a Rig opens the store again)."""
