"""Arena decisions: lanes and dispatch, benchmarks, result-folder names,
crash-resume, analysis prompts, winner parsing and Bradley-Terry ratings.

Thin re-exports of the Rust core (``coderig::arena``); see ``arena.pyi`` for
signatures. Enum arguments are strings (ASCII case-insensitive); an unknown
name raises ``coderig.InvalidInputError`` listing the valid ones.
Collections of names may be any iterable (list, tuple, set...).
"""

from ._native import arena as _native_arena

classify_lane = _native_arena.classify_lane
next_local_contestant = _native_arena.next_local_contestant
dispatch_now = _native_arena.dispatch_now
is_battle_complete = _native_arena.is_battle_complete
compute_benchmark = _native_arena.compute_benchmark
benchmark_line = _native_arena.benchmark_line
sanitize_slug = _native_arena.sanitize_slug
battle_slug = _native_arena.battle_slug
contestant_dir = _native_arena.contestant_dir
reconcile_contestant_resume = _native_arena.reconcile_contestant_resume
reconcile_contestants = _native_arena.reconcile_contestants
build_digest_prompt = _native_arena.build_digest_prompt
build_judge_prompt = _native_arena.build_judge_prompt
should_name_winner = _native_arena.should_name_winner
extract_winner = _native_arena.extract_winner
build_cross_exam_prompt = _native_arena.build_cross_exam_prompt
extract_verdict = _native_arena.extract_verdict
bradley_terry = _native_arena.bradley_terry
RESULT_CAP_CHARS = _native_arena.RESULT_CAP_CHARS
DIFF_CAP_CHARS = _native_arena.DIFF_CAP_CHARS
ORIGINAL_PROMPT_CAP_CHARS = _native_arena.ORIGINAL_PROMPT_CAP_CHARS
ANALYSIS_CAP_CHARS = _native_arena.ANALYSIS_CAP_CHARS

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

del _native_arena
