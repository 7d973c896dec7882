from datetime import datetime
from typing import Iterable, List, Literal, Mapping, Optional, Tuple, TypeVar

__all__ = [
    "ANALYSIS_CAP_CHARS",
    "DIFF_CAP_CHARS",
    "ORIGINAL_PROMPT_CAP_CHARS",
    "RESULT_CAP_CHARS",
    "battle_slug",
    "benchmark_line",
    "bradley_terry",
    "build_cross_exam_prompt",
    "build_digest_prompt",
    "build_judge_prompt",
    "classify_lane",
    "compute_benchmark",
    "contestant_dir",
    "dispatch_now",
    "extract_verdict",
    "extract_winner",
    "is_battle_complete",
    "next_local_contestant",
    "reconcile_contestant_resume",
    "reconcile_contestants",
    "sanitize_slug",
    "should_name_winner",
]

_Id = TypeVar("_Id")
_BattleType = Literal["qa", "coding"]
_BattleStatus = Literal["running", "judging", "completed", "failed", "cancelled"]
_Lane = Literal["local", "cloud", "driver"]
_ContestantStatus = Literal["queued", "running", "done", "error", "cancelled"]
_TaskState = Literal["pending", "running", "blocked", "completed", "failed", "cancelled"]
_ContestantAction = Literal["keep", "re-dispatch", "mark-done", "mark-error", "mark-cancelled"]
_CrossExamStatus = Literal["pending", "running", "done", "error"]
_EvidenceTier = Literal["full", "partial", "none"]
_WinnerSource = Literal["oracle", "judge", "human"]
_Verdict = Literal["first", "second", "tie", "invalid"]
_Digest = Tuple[str, str, str, str]

RESULT_CAP_CHARS: int
DIFF_CAP_CHARS: int
ORIGINAL_PROMPT_CAP_CHARS: int
ANALYSIS_CAP_CHARS: int

def classify_lane(battle_type: str, identity: str, model: str, local_models: Iterable[str]) -> _Lane:
    """"local" or "cloud": Q&A contestants are always local; a coding contestant is
    local when local_models holds its model or "<identity>/<model>"."""

def next_local_contestant(rows: Iterable[Tuple[_Id, str, str]]) -> Optional[_Id]:
    """The first queued local contestant of (id, lane, status) rows, in order."""

def dispatch_now(
    rows: Iterable[Tuple[_Id, str, str]],
    local_capacity: int = 1,
    cloud_capacity: Optional[int] = None,
) -> List[_Id]:
    """Ids to start now, in row order; capacities cap RUNNING contestants per lane
    (None = unbounded)."""

def is_battle_complete(statuses: Iterable[str]) -> bool:
    """Non-empty and every status "done" or "error"."""

def compute_benchmark(
    started_ms: int, ended_ms: int, cost_tokens: Optional[int], lane: str
) -> Tuple[int, Optional[float]]:
    """(duration_ms clamped at 0, tokens_per_sec only for the local lane with known
    tokens and duration > 0)."""

def benchmark_line(benchmark: Tuple[int, Optional[float]], cost_tokens: Optional[int], lane: str) -> str:
    """One-line summary, e.g. "lane=local duration=12.35s tokens=4567 tokens_per_sec=369.8"."""

def sanitize_slug(s: str) -> str:
    """Lowercase ASCII slug, runs of other characters -> one "-", trimmed, <= 64 chars."""

def battle_slug(battle_id: str, battle_type: str, created_at: datetime) -> str:
    """"YYYY-MM-DD-<type>-<8 hex>", UTC date: aware datetimes are converted to UTC,
    naive ones are taken as UTC. InvalidInputError for an id without 8 leading hex digits."""

def contestant_dir(identity: str, model: str) -> str:
    """sanitize_slug("<identity>-<model>"); InvalidInputError when empty."""

def reconcile_contestant_resume(
    status: str, task_id: Optional[str] = None, task_state: Optional[str] = None
) -> _ContestantAction:
    """Resume action of one contestant; task_state None = task row missing."""

def reconcile_contestants(
    rows: Iterable[Tuple[_Id, Optional[str], str]], task_states: Mapping[str, str]
) -> List[Tuple[_Id, _ContestantAction]]:
    """Resume action per (contestant_id, task_id, status) row, in row order."""

def build_digest_prompt(
    identity: str, model: str, result_md: str, benchmark_line: str, diff_patch: Optional[str] = None
) -> Tuple[str, str]:
    """(system, user); result capped at 8,000 chars, diff at 5,000."""

def build_judge_prompt(original_prompt: str, digests: Iterable[_Digest]) -> Tuple[str, str]:
    """(system, user) of the judge; digests are (identity, model, digest, benchmark_line)."""

def should_name_winner(succeeded_count: int) -> bool:
    """True from two successes on."""

def extract_winner(judge_output: str) -> Optional[Tuple[str, str]]:
    """(identity, model) of the last WINNER: line; None for NO_WINNER or an invalid line."""

def build_cross_exam_prompt(
    original_prompt: str,
    digests: Iterable[_Digest],
    analysis: str,
    proposed_winner: Optional[Tuple[str, str]],
    examiner_identity: str,
    examiner_model: str,
) -> Tuple[str, str]:
    """(system, user) asking the examiner to check the judge's verdict; with
    proposed_winner None (the judge named none) the examiner gives an independent verdict."""

def extract_verdict(text: str) -> Optional[Tuple[str, str]]:
    """(identity, model) of the last VERDICT: line; same rules as extract_winner."""

def bradley_terry(
    battles: Iterable[Tuple[str, Iterable[str]]], bootstrap: int = 1000, seed: int = 0
) -> List[Tuple[str, float, float, float]]:
    """[(name, score, ci_low, ci_high)] best first; Elo scale (1000 + 400*log10(strength),
    mean log-strength 0); 95 % bootstrap percentile interval, deterministic for a seed."""
