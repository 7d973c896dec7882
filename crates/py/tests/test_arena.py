"""coderig.arena: table-driven tests mirroring crates/core/tests/arena_*.rs,
plus the Python-specific conversions (datetimes, ids of any type, iterables)."""

import math
from datetime import datetime, timedelta, timezone

import pytest

import coderig
from coderig import arena

# --- lanes -----------------------------------------------------------------

LOCAL = {"qwen3-coder", "codex/gpt-oss-20b"}


@pytest.mark.parametrize(
    "battle_type,identity,model,expected",
    [
        ("qa", "ollama", "qwen3-coder", "local"),
        ("qa", "claude", "opus", "local"),  # Q&A: always local
        ("coding", "ollama", "qwen3-coder", "local"),  # model listed
        ("coding", "aider", "qwen3-coder", "local"),  # any identity
        ("coding", "claude", "opus", "cloud"),
        ("coding", "codex", "gpt-oss-20b", "local"),  # pinned identity/model
        ("coding", "aider", "gpt-oss-20b", "cloud"),  # pinned to another identity
        ("coding", "ollama", "Qwen3-Coder", "cloud"),  # exact names
        ("coding", "ollama", "qwen3", "cloud"),  # no prefix match
        ("Q&A", "claude", "opus", "local"),  # the core's alias, any case
        ("CODING", "claude", "opus", "cloud"),
    ],
)
def test_classify_lane_table(battle_type, identity, model, expected):
    assert arena.classify_lane(battle_type, identity, model, LOCAL) == expected


def test_classify_lane_takes_any_iterable_but_not_a_string():
    for models in (["m"], ("m",), {"m"}, frozenset({"m"}), (x for x in ["m"]), {"m": 1}):
        assert arena.classify_lane("coding", "a", "m", models) == "local"
    assert arena.classify_lane("coding", "a", "m", []) == "cloud"
    with pytest.raises(TypeError):
        arena.classify_lane("coding", "a", "m", "m")


def test_unknown_names_are_invalid_input_listing_valid_ones():
    with pytest.raises(coderig.InvalidInputError) as raised:
        arena.classify_lane("chess", "a", "m", [])
    assert "qa, coding" in raised.value.message
    assert raised.value.code == "INVALID_INPUT"
    assert isinstance(raised.value, ValueError)
    with pytest.raises(coderig.InvalidInputError, match="local, cloud"):
        arena.dispatch_now([("a", "gpu", "queued")])
    with pytest.raises(coderig.InvalidInputError, match="queued, running, done, error, cancelled"):
        arena.is_battle_complete(["finished"])
    with pytest.raises(coderig.InvalidInputError, match="local, cloud"):
        arena.compute_benchmark(0, 1, 1, "gpu")
    with pytest.raises(coderig.InvalidInputError, match="completed"):
        arena.reconcile_contestant_resume("running", "t", "exploded")


@pytest.mark.parametrize(
    "rows,expected",
    [
        ([], None),
        ([("a", "cloud", "queued")], None),
        ([("a", "local", "running"), ("b", "local", "queued"), ("c", "local", "queued")], "b"),
        ([("a", "cloud", "queued"), ("b", "local", "done"), ("c", "local", "queued")], "c"),
        ([("a", "local", "done"), ("b", "local", "error"), ("c", "local", "cancelled")], None),
    ],
)
def test_next_local_contestant_table(rows, expected):
    assert arena.next_local_contestant(rows) == expected


@pytest.mark.parametrize(
    "rows,local_capacity,cloud_capacity,expected",
    [
        ([], 1, None, []),
        # Serial local lane, unbounded cloud lane.
        ([(1, "local", "queued"), (2, "cloud", "queued"), (3, "local", "queued"), (4, "cloud", "queued")],
         1, None, [1, 2, 4]),
        # A local contestant already running blocks the local lane.
        ([(1, "local", "running"), (2, "local", "queued"), (3, "cloud", "queued")], 1, None, [3]),
        # Local capacity 2 with one running admits one more.
        ([(1, "local", "running"), (2, "local", "queued"), (3, "local", "queued")], 2, None, [2]),
        # Local capacity 0 never admits a local contestant.
        ([(1, "local", "queued"), (2, "cloud", "queued")], 0, None, [2]),
        # The cloud cap counts running cloud contestants.
        ([(1, "cloud", "running"), (2, "cloud", "queued"), (3, "cloud", "queued"), (4, "cloud", "queued")],
         1, 3, [2, 3]),
        ([(1, "cloud", "running"), (2, "cloud", "running"), (3, "cloud", "queued")], 1, 1, []),
        ([(1, "cloud", "queued")], 1, 0, []),
        # Finished contestants free their slots.
        ([(1, "local", "done"), (2, "local", "error"), (3, "local", "cancelled"), (4, "local", "queued")],
         1, 1, [4]),
        # Lanes do not share capacity; output keeps creation order.
        ([(5, "cloud", "queued"), (1, "local", "queued"), (9, "cloud", "queued"), (2, "local", "queued")],
         1, 1, [5, 1]),
    ],
)
def test_dispatch_now_table(rows, local_capacity, cloud_capacity, expected):
    assert arena.dispatch_now(rows, local_capacity, cloud_capacity) == expected
    assert arena.dispatch_now(rows, local_capacity=local_capacity, cloud_capacity=cloud_capacity) == expected


def test_dispatch_now_defaults_and_ids_are_the_callers_objects():
    key = ("battle", 7)
    rows = [(key, "local", "queued"), ("second", "local", "queued"), (None, "cloud", "queued")]
    started = arena.dispatch_now(rows)  # local_capacity=1, cloud unbounded
    assert started == [key, None]
    assert started[0] is key
    assert arena.next_local_contestant(rows) is key
    with pytest.raises(OverflowError):
        arena.dispatch_now(rows, local_capacity=-1)


@pytest.mark.parametrize(
    "statuses,expected",
    [
        ([], False),
        (["done"], True),
        (["error"], True),
        (["done", "error", "done"], True),
        (["done", "running"], False),
        (["queued", "done"], False),
        (["done", "cancelled"], False),
        (("Done", "ERROR"), True),
    ],
)
def test_is_battle_complete_table(statuses, expected):
    assert arena.is_battle_complete(statuses) is expected


# --- benchmarks ------------------------------------------------------------

I64_MIN, I64_MAX, U64_MAX = -(2**63), 2**63 - 1, 2**64 - 1


@pytest.mark.parametrize(
    "started,ended,tokens,lane,expected",
    [
        (1_000, 3_000, 100, "local", (2_000, 50.0)),
        (1_000, 3_000, 100, "cloud", (2_000, None)),  # cloud: never
        (1_000, 3_000, None, "local", (2_000, None)),  # unknown tokens
        (1_000, 1_000, 100, "local", (0, None)),  # zero duration
        (5_000, 1_000, 100, "local", (0, None)),  # clock went back: clamped
        (0, 250, 0, "local", (250, 0.0)),
        (-500, 500, 10, "local", (1_000, 10.0)),
        (I64_MIN, I64_MAX, 1, "cloud", (U64_MAX, None)),  # no overflow
        (I64_MAX, I64_MIN, 1, "local", (0, None)),
    ],
)
def test_compute_benchmark_table(started, ended, tokens, lane, expected):
    assert arena.compute_benchmark(started, ended, tokens, lane) == expected


def test_benchmark_line_formats():
    local = arena.compute_benchmark(0, 12_345, 4_567, "local")
    assert arena.benchmark_line(local, 4_567, "local") == (
        "lane=local duration=12.35s tokens=4567 tokens_per_sec=369.9"
    )
    cloud = arena.compute_benchmark(0, 500, None, "cloud")
    assert arena.benchmark_line(cloud, None, "cloud") == "lane=cloud duration=0.50s tokens=unknown"


# --- slugs and folders -----------------------------------------------------


@pytest.mark.parametrize(
    "text,expected",
    [
        ("", ""),
        ("---", ""),
        ("!@#$%^&*()", ""),
        ("日本語", ""),
        ("Hello, World!", "hello-world"),
        ("  leading and trailing  ", "leading-and-trailing"),
        ("a--b__c  d", "a-b-c-d"),
        ("Café Crème", "caf-cr-me"),  # non-ASCII letters separate
        ("openai/gpt-4o-mini", "openai-gpt-4o-mini"),
        ("Qwen2.5-Coder:32B", "qwen2-5-coder-32b"),
        ("tab\tnew\nline", "tab-new-line"),
        ("a" * 100, "a" * 64),
        ("a" * 63 + "-b", "a" * 63),  # a dash would land at 64
        ("a" * 62 + " b", "a" * 62 + "-b"),
    ],
)
def test_sanitize_slug_table(text, expected):
    assert arena.sanitize_slug(text) == expected


UUID = "3F2504E0-4F89-11D3-9A0C-0305E82C3301"
LOS_ANGELES = timezone(timedelta(hours=-8))


@pytest.mark.parametrize(
    "created_at,date",
    [
        (datetime(1970, 1, 1), "1970-01-01"),  # naive: taken as UTC
        (datetime(1969, 12, 31, 23, 59, 59, 999_999), "1969-12-31"),
        (datetime(2000, 2, 29, 23, 59, 59, 999_999), "2000-02-29"),
        (datetime(2024, 12, 31, 23, 59, 59, 999_999, tzinfo=timezone.utc), "2024-12-31"),
        (datetime(2025, 1, 1, tzinfo=timezone.utc), "2025-01-01"),
        # A local evening in UTC-8 is already the next day in UTC.
        (datetime(2024, 12, 31, 20, 0, tzinfo=LOS_ANGELES), "2025-01-01"),
        # Early morning at UTC+5 is still the previous day in UTC.
        (datetime(2026, 1, 1, 1, 0, tzinfo=timezone(timedelta(hours=5))), "2025-12-31"),
        (datetime(9999, 12, 31, 23, 59, 59), "9999-12-31"),
        (datetime(1, 1, 1), "0001-01-01"),
    ],
)
def test_battle_slug_dates_are_utc(created_at, date):
    assert arena.battle_slug(UUID, "coding", created_at) == f"{date}-coding-3f2504e0"


def test_battle_slug_naive_equals_utc_and_type_names():
    naive = datetime(2025, 6, 1, 12, 30)
    aware = naive.replace(tzinfo=timezone.utc)
    assert arena.battle_slug(UUID, "qa", naive) == arena.battle_slug(UUID, "qa", aware)
    assert arena.battle_slug(UUID, "Q&A", naive) == "2025-06-01-qa-3f2504e0"


@pytest.mark.parametrize(
    "battle_id,hex_part",
    [
        ("abcdef12-0000", "abcdef12"),
        ("ab-cd-ef-12-34", "abcdef12"),
        ("ABCDEF1234567890", "abcdef12"),
    ],
)
def test_battle_slug_ids(battle_id, hex_part):
    moment = datetime(2025, 1, 1, tzinfo=timezone.utc)
    assert arena.battle_slug(battle_id, "coding", moment) == f"2025-01-01-coding-{hex_part}"


@pytest.mark.parametrize("battle_id", ["", "abc", "abcdefg1", "----", "abcdef1", "ab cdef12", "äbcdef12"])
def test_battle_slug_bad_ids_are_invalid_input(battle_id):
    with pytest.raises(coderig.InvalidInputError, match="8 hex digits"):
        arena.battle_slug(battle_id, "coding", datetime(2025, 1, 1))


@pytest.mark.parametrize("created_at", ["2025-01-01", 1_735_689_600_000, None])
def test_battle_slug_needs_a_datetime(created_at):
    with pytest.raises(TypeError, match="datetime"):
        arena.battle_slug(UUID, "qa", created_at)


@pytest.mark.parametrize(
    "identity,model,expected",
    [
        ("claude", "opus", "claude-opus"),
        ("Claude Code", "openai/gpt-4o", "claude-code-openai-gpt-4o"),
        ("aider", "Qwen2.5-Coder:32B", "aider-qwen2-5-coder-32b"),
        ("日本", "llama3", "llama3"),
        ("codex", "!!!", "codex"),
    ],
)
def test_contestant_dir_table(identity, model, expected):
    assert arena.contestant_dir(identity, model) == expected


def test_contestant_dir_caps_and_refuses_empty_names():
    long = arena.contestant_dir("x" * 40, "y" * 40)
    assert len(long) == 64 and long.startswith("x" * 40) and not long.endswith("-")
    with pytest.raises(coderig.InvalidInputError):
        arena.contestant_dir("???", "")


# --- resume ----------------------------------------------------------------

RESUME_TABLE = [
    # (status, task_id, task_state, action)
    ("queued", None, None, "keep"),
    ("done", "t1", "running", "keep"),
    ("error", "t1", "completed", "keep"),
    ("cancelled", "t1", "pending", "keep"),
    ("running", None, None, "re-dispatch"),
    ("running", "", "completed", "re-dispatch"),  # an empty task id is no task
    ("running", "t1", None, "re-dispatch"),  # task row missing
    ("running", "t1", "completed", "mark-done"),
    ("running", "t1", "failed", "mark-error"),
    ("running", "t1", "cancelled", "mark-cancelled"),
    ("running", "t1", "canceled", "mark-cancelled"),
    ("running", "t1", "pending", "keep"),
    ("running", "t1", "running", "re-dispatch"),
    ("running", "t1", "blocked", "re-dispatch"),
]


@pytest.mark.parametrize("status,task_id,task_state,action", RESUME_TABLE)
def test_every_row_of_the_contestant_resume_table(status, task_id, task_state, action):
    assert arena.reconcile_contestant_resume(status, task_id, task_state) == action


def test_reconcile_contestants_keeps_row_order_and_ids():
    rows = [
        (3, "t3", "running"),
        (1, "t1", "running"),
        (2, None, "running"),
        (4, "gone", "running"),
        (5, "t5", "done"),
    ]
    states = {"t3": "completed", "t1": "failed", "t5": "running"}
    assert arena.reconcile_contestants(rows, states) == [
        (3, "mark-done"),
        (1, "mark-error"),
        (2, "re-dispatch"),
        (4, "re-dispatch"),
        (5, "keep"),
    ]
    assert arena.reconcile_contestants([], {}) == []
    with pytest.raises(coderig.InvalidInputError):
        arena.reconcile_contestants([(1, "t", "running")], {"t": "zombie"})


# --- analysis prompts and decisions ----------------------------------------


@pytest.mark.parametrize("count,expected", [(0, False), (1, False), (2, True), (6, True)])
def test_should_name_winner_needs_two_successes(count, expected):
    assert arena.should_name_winner(count) is expected


def test_digest_prompt_caps_result_and_diff_in_code_points():
    assert (arena.RESULT_CAP_CHARS, arena.DIFF_CAP_CHARS) == (8_000, 5_000)
    result = "é" * (arena.RESULT_CAP_CHARS + 10)
    diff = "+ü\n" * arena.DIFF_CAP_CHARS
    system, user = arena.build_digest_prompt("claude", "opus", result, "lane=cloud", diff)
    assert "do not name a winner" in system
    assert user.startswith("Contestant: claude/opus\nBenchmark: lane=cloud\n")
    assert "é" * arena.RESULT_CAP_CHARS + "\n[truncated 10 chars]" in user
    assert "é" * (arena.RESULT_CAP_CHARS + 1) not in user
    assert f"[truncated {2 * arena.DIFF_CAP_CHARS} chars]" in user


def test_digest_prompt_without_diff_and_with_an_empty_diff():
    _, user = arena.build_digest_prompt("a", "b", "x" * arena.RESULT_CAP_CHARS, "bench")
    assert "truncated" not in user and "## Diff" not in user
    _, user = arena.build_digest_prompt("a", "b", "done", "bench", diff_patch="  \n")
    assert "(empty diff: no files changed)" in user


def test_judge_prompt_caps_the_prompt_and_asks_for_a_winner_line():
    original = "p" * arena.ORIGINAL_PROMPT_CAP_CHARS + "TAIL"
    digests = [
        ("claude", "opus", "Fixed the bug; 12 tests pass.", "lane=cloud duration=30.00s tokens=unknown"),
        ("ollama", "qwen3-coder", "Partial fix; 2 tests fail.", "lane=local duration=90.00s tokens=900"),
    ]
    system, user = arena.build_judge_prompt(original, digests)
    assert "WINNER: <identity>/<model>" in system and "NO_WINNER" in system
    assert "p" * arena.ORIGINAL_PROMPT_CAP_CHARS + "\n[truncated 4 chars]" in user
    assert "TAIL" not in user
    assert "### 1. claude/opus\n\nBenchmark: lane=cloud duration=30.00s tokens=unknown" in user
    assert "### 2. ollama/qwen3-coder" in user
    assert "Fewer than two contestants are listed" not in user
    _, user = arena.build_judge_prompt("Fix the bug", digests[:1])
    assert "Fewer than two contestants are listed, so end with `NO_WINNER`." in user
    _, user = arena.build_judge_prompt("", [])
    assert "## Contestants (0)" in user


def test_cross_exam_prompt_names_examiner_and_proposed_winner():
    digests = [("claude", "opus", "digest A", "bench A"), ("codex", "gpt-5", "digest B", "bench B")]
    analysis = "a" * arena.ANALYSIS_CAP_CHARS + "END"
    system, user = arena.build_cross_exam_prompt(
        "Fix the bug", digests, analysis, ("claude", "opus"), "codex", "gpt-5"
    )
    assert "VERDICT: <identity>/<model>" in system
    assert user.startswith("You are codex/gpt-5.\n")
    assert "## Proposed winner\n\nclaude/opus\n" in user
    assert "digest A" in user and "bench B" in user and "Fix the bug" in user
    assert "[truncated 3 chars]" in user and "END" not in user


def test_cross_exam_prompt_without_a_proposed_winner_asks_for_an_independent_verdict():
    digests = [("claude", "opus", "digest A", "bench A")]
    system, user = arena.build_cross_exam_prompt(
        "Fix the bug", digests, "analysis", None, "codex", "gpt-5"
    )
    assert "VERDICT: <identity>/<model>" in system
    assert "The judge named no winner" in user and "independent verdict" in user
    assert "claude/opus\n" not in user.split("## Proposed winner")[1]


@pytest.mark.parametrize(
    "text,expected",
    [
        ("WINNER: claude/opus", ("claude", "opus")),
        ("winner: claude/opus", ("claude", "opus")),
        ("Analysis...\n\nWinner: claude/opus\n", ("claude", "opus")),
        ("**WINNER:** claude/opus", ("claude", "opus")),
        ("> - WINNER: `claude/opus`", ("claude", "opus")),
        ("WINNER: claude / opus (all tests pass)", ("claude", "opus")),
        ("WINNER: openrouter/openai/gpt-4o", ("openrouter", "openai/gpt-4o")),
        ("WINNER: ollama/llama3.1:8b", ("ollama", "llama3.1:8b")),
        ("WINNER: a/b\nWINNER: c/d", ("c", "d")),  # the last decision line wins
        ("WINNER: a/b\nNO_WINNER", None),  # a later NO_WINNER overrides
        ("NO_WINNER\nWINNER: a/b", ("a", "b")),
        ("NO_WINNER", None),
        ("no winner.", None),
        ("WINNER: none", None),
        ("WINNER:", None),
        ("WINNER: claude", None),
        ("WINNER: /opus", None),
        ("WINNER: <identity>/<model>", None),
        ("", None),
        ("The winner is claude/opus", None),
        ("VERDICT: claude/opus", None),
        ("WINNER: a/b\r\n", ("a", "b")),
    ],
)
def test_extract_winner_table(text, expected):
    assert arena.extract_winner(text) == expected


@pytest.mark.parametrize(
    "text,expected",
    [
        ("VERDICT: codex/gpt-5", ("codex", "gpt-5")),
        ("**Verdict:** codex/openai/gpt-5.", ("codex", "openai/gpt-5")),
        ("VERDICT: a/b\nNO_WINNER", None),
        ("VERDICT: nobody", None),
        ("WINNER: claude/opus", None),
    ],
)
def test_extract_verdict_table(text, expected):
    assert arena.extract_verdict(text) == expected


def test_judge_prompt_round_trips_through_extract_winner():
    system, _ = arena.build_judge_prompt("x", [("a", "b", "d", "l"), ("c", "d", "d", "l")])
    asked = next(line for line in system.splitlines() if line.startswith("WINNER:"))
    filled = asked.replace("<identity>", "claude").replace("<model>", "opus")
    assert arena.extract_winner(filled) == ("claude", "opus")


# --- ratings ---------------------------------------------------------------


def _known_battles():
    battles = []
    for _ in range(6):
        battles += [("a", ["b", "c", "d"]), ("b", ["c", "d"]), ("c", ["d"])]
    return battles + [("b", ["a"]), ("d", ["c"])]


def test_bradley_terry_shape_and_ordering():
    ratings = arena.bradley_terry(_known_battles(), bootstrap=200, seed=7)
    assert [r[0] for r in ratings] == ["a", "b", "c", "d"]
    for name, score, low, high in ratings:
        assert isinstance(name, str)
        assert all(isinstance(x, float) and math.isfinite(x) for x in (score, low, high))
        assert low <= score <= high
    for better, worse in zip(ratings, ratings[1:]):
        assert better[1] > worse[1] + 50.0
    # Elo scale with mean log-strength 0: the scores average 1000.
    assert sum(r[1] for r in ratings) / len(ratings) == pytest.approx(1000.0, abs=1e-6)


def test_bradley_terry_seed_determinism():
    battles = _known_battles()
    first = arena.bradley_terry(battles, 100, 42)
    assert arena.bradley_terry(battles, bootstrap=100, seed=42) == first
    other = arena.bradley_terry(battles, bootstrap=100, seed=43)
    assert [r[:2] for r in other] == [r[:2] for r in first], "the fit does not depend on the seed"
    assert other != first, "the bootstrap intervals do"


def test_bradley_terry_degenerate_and_iterable_inputs():
    assert arena.bradley_terry([]) == []
    ((name, score, low, high),) = arena.bradley_terry([("solo", [])], bootstrap=10)
    assert name == "solo" and score == pytest.approx(1000.0) and low <= score <= high
    no_bootstrap = arena.bradley_terry([("w", ["l"])], bootstrap=0)
    assert all(r[2] == r[1] == r[3] for r in no_bootstrap)
    # Losers may be any iterable of names; the winner listed as a loser is ignored.
    as_sets = arena.bradley_terry([("w", {"l1", "l2", "w"})], bootstrap=20, seed=1)
    as_lists = arena.bradley_terry([("w", ["l1", "l2"])], bootstrap=20, seed=1)
    assert as_sets[0][0] == "w"
    assert [r[1] for r in as_sets] == pytest.approx([r[1] for r in as_lists])
    with pytest.raises(TypeError):
        arena.bradley_terry([("w", "l")])
