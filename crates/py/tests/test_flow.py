"""coderig.flow: table-driven tests mirroring crates/core/tests/flow_*.rs,
plus the Python conventions (callables as conditions, State handles and
their JSON forms, errors)."""

import pytest

import coderig
from coderig import flow
from coderig.flow import Case, Flow, State, Step

# --- trigger rules ---------------------------------------------------------


def state_of(pattern):
    """One letter per dependency d0, d1, ...: S done, F failed, T timed out,
    U skipped upstream_failed, B skipped branch_not_taken, C skipped
    condition_false, E excluded at launch, X excluded by a switch result,
    R running, P pending."""
    fields = {"done": [], "failed": [], "timed_out": [], "skipped": {}, "excluded": [],
              "in_flight": [], "switch_results": {"sw": (None, [])}}
    reasons = {"U": "upstream_failed", "B": "branch_not_taken", "C": "condition_false"}
    for i, letter in enumerate(pattern):
        dep = f"d{i}"
        if letter in reasons:
            fields["skipped"][dep] = reasons[letter]
        elif letter == "X":
            fields["switch_results"]["sw"][1].append(dep)
        else:
            assert letter in "SFTERP", letter
            field = {"S": "done", "F": "failed", "T": "timed_out", "E": "excluded",
                     "R": "in_flight", "P": None}[letter]
            if field:
                fields[field].append(dep)
    return State(**fields)


def flow_of(pattern, rule):
    deps = [f"d{i}" for i in range(len(pattern))]
    return Flow([Step(d) for d in deps] + [Step("t", deps=deps, trigger_rule=rule)])


RUN, WAIT, UF, CF = "run", "wait", "upstream_failed", "condition_false"

TRIGGER_TABLE = [
    ("all_success", "", RUN), ("all_success", "SS", RUN), ("all_success", "SB", RUN),
    ("all_success", "SC", RUN), ("all_success", "SE", RUN), ("all_success", "SX", RUN),
    ("all_success", "BBB", RUN), ("all_success", "SP", WAIT), ("all_success", "SR", WAIT),
    ("all_success", "SF", UF), ("all_success", "ST", UF), ("all_success", "SU", UF),
    ("all_success", "FP", UF),
    ("all_failed", "", RUN), ("all_failed", "FF", RUN), ("all_failed", "FT", RUN),
    ("all_failed", "FU", RUN), ("all_failed", "UU", RUN), ("all_failed", "FP", WAIT),
    ("all_failed", "FS", CF), ("all_failed", "FB", CF), ("all_failed", "PS", CF),
    ("all_done", "", RUN), ("all_done", "SFTUBCE", RUN), ("all_done", "UU", RUN),
    ("all_done", "SP", WAIT), ("all_done", "FR", WAIT),
    ("all_skipped", "", RUN), ("all_skipped", "BC", RUN), ("all_skipped", "BEX", RUN),
    ("all_skipped", "BP", WAIT), ("all_skipped", "BS", CF), ("all_skipped", "BF", CF),
    ("all_skipped", "BU", CF), ("all_skipped", "PT", CF),
    ("one_success", "", RUN), ("one_success", "SP", RUN), ("one_success", "PRS", RUN),
    ("one_success", "FS", RUN), ("one_success", "FP", WAIT), ("one_success", "PP", WAIT),
    ("one_success", "FF", UF), ("one_success", "FB", UF), ("one_success", "UB", UF),
    ("one_success", "TC", UF), ("one_success", "BB", CF), ("one_success", "BCE", CF),
    ("one_failed", "", RUN), ("one_failed", "FP", RUN), ("one_failed", "TP", RUN),
    ("one_failed", "UP", RUN), ("one_failed", "SP", WAIT), ("one_failed", "SS", CF),
    ("one_failed", "SB", CF),
    ("one_done", "", RUN), ("one_done", "SP", RUN), ("one_done", "FP", RUN),
    ("one_done", "TP", RUN), ("one_done", "UP", WAIT), ("one_done", "PP", WAIT),
    ("one_done", "BU", CF), ("one_done", "BB", CF),
    ("none_failed", "", RUN), ("none_failed", "SB", RUN), ("none_failed", "BB", RUN),
    ("none_failed", "SP", WAIT), ("none_failed", "SF", UF), ("none_failed", "SU", UF),
    ("none_failed", "TP", UF),
    ("none_failed_min_one_success", "", RUN), ("none_failed_min_one_success", "SB", RUN),
    ("none_failed_min_one_success", "SS", RUN), ("none_failed_min_one_success", "SP", WAIT),
    ("none_failed_min_one_success", "BP", WAIT), ("none_failed_min_one_success", "BB", CF),
    ("none_failed_min_one_success", "BF", UF), ("none_failed_min_one_success", "UB", UF),
    ("none_failed_min_one_success", "SPT", UF),
    ("none_skipped", "", RUN), ("none_skipped", "SF", RUN), ("none_skipped", "SU", RUN),
    ("none_skipped", "SP", WAIT), ("none_skipped", "SB", CF), ("none_skipped", "SE", CF),
    ("none_skipped", "PC", CF),
    ("always", "", RUN), ("always", "PP", RUN), ("always", "RR", RUN), ("always", "FU", RUN),
]

ALL_RULES = {
    "all_success", "all_failed", "all_done", "all_skipped", "one_success", "one_failed",
    "one_done", "none_failed", "none_failed_min_one_success", "none_skipped", "always",
}


def test_the_table_covers_every_rule():
    assert {row[0] for row in TRIGGER_TABLE} == ALL_RULES
    for rule in ALL_RULES:
        assert any(r[2] == RUN and r[1] for r in TRIGGER_TABLE if r[0] == rule), rule


@pytest.mark.parametrize("rule,pattern,expected", TRIGGER_TABLE)
def test_every_rule_against_outcome_combinations(rule, pattern, expected):
    st = state_of(pattern)
    f = flow_of(pattern, rule)
    deps = [f"d{i}" for i in range(len(pattern))]
    assert flow.evaluate_trigger_rule(deps, st, rule) is (expected == RUN)
    assert ("t" in flow.ready_steps(f, st)) is (expected == RUN)
    skips = dict(flow.propagate_skips(f, st))
    assert skips.get("t") == (expected if expected in (UF, CF) else None)


def test_evaluate_trigger_rule_defaults_to_all_success_and_counts_duplicates_once():
    st = State(done={"a"})
    assert flow.evaluate_trigger_rule(["a", "a"], st)
    assert not flow.evaluate_trigger_rule(["a", "b"], st)
    assert flow.evaluate_trigger_rule(("a", "b"), st, rule="one_success")


def test_bad_rule_names_are_invalid_input_listing_the_valid_ones():
    with pytest.raises(coderig.InvalidInputError) as raised:
        flow.evaluate_trigger_rule(["a"], State(), "all_succes")
    assert isinstance(raised.value, ValueError) and raised.value.code == "INVALID_INPUT"
    assert '"all_succes"' in raised.value.message
    for rule in ALL_RULES:
        assert rule in raised.value.message
    with pytest.raises(coderig.InvalidInputError, match="agent, code, approval, switch, do_while"):
        Step("x", kind="loop")
    with pytest.raises(coderig.InvalidInputError, match="none_skipped"):
        Step("x", trigger_rule="sometimes")
    with pytest.raises(coderig.InvalidInputError, match="all_success"):
        Flow([], batch_join_rule="most")


def test_upstream_failed_propagates_through_chains_like_airflow():
    f = Flow([
        Step("a"),
        Step("b", deps=["a"]),
        Step("c", deps=["b"]),
        Step("cleanup", deps=["c"], trigger_rule="all_done"),
        Step("report", deps=["c"], trigger_rule="none_failed"),
        Step("alert", deps=["b"], trigger_rule="one_failed"),
        Step("either", deps=["c", "cleanup"], trigger_rule="none_failed_min_one_success"),
    ])
    st = State(failed={"a"})
    skips = flow.propagate_skips(f, st)
    assert skips == [
        ("b", "upstream_failed"),
        ("c", "upstream_failed"),
        ("report", "upstream_failed"),
        ("either", "upstream_failed"),
    ]
    assert flow.ready_steps(f, st) == []
    st.skipped = {**st.skipped, **dict(skips)}
    assert flow.ready_steps(f, st) == ["cleanup", "alert"]
    assert flow.propagate_skips(f, st) == []


@pytest.mark.parametrize(
    "skipped",
    [{"x"}, ["x"], {"x": "branch_not_taken"}, {"x": "condition_false"}, {"x": "excluded"}],
)
def test_a_deliberate_skip_does_not_cascade_through_all_success(skipped):
    f = Flow([Step("x"), Step("y", deps=["x"]), Step("z", deps=["y"], trigger_rule="none_failed")])
    st = State(skipped=skipped)
    assert flow.propagate_skips(f, st) == []
    assert flow.ready_steps(f, st) == ["y"]


def test_ready_steps_order_and_terminal_steps():
    f = Flow([Step("z"), Step("a", kind="agent"), Step("m", kind="approval", deps=["z"]), Step("b")])
    st = State()
    assert flow.ready_steps(f, st) == ["z", "a", "b"]
    st.in_flight = {"a"}
    st.done = ["z"]
    assert flow.ready_steps(f, st) == ["m", "b"]
    g = Flow([Step("a", trigger_rule="always"), Step("b"), Step("c")])
    assert flow.ready_steps(g, State(failed=["a"], timed_out=["b"])) == ["c"]


# --- switch, do-while ------------------------------------------------------


def lang_is(lang):
    return lambda ctx: ctx["input"]["lang"] == lang


def router(cases, default=()):
    return Step("router", kind="switch", cases=cases, default_branch=default)


def three_cases():
    return [
        Case("rust", ["r1", "r2"], condition=lang_is("rust")),
        Case("py", ["p1"], condition=lang_is("py")),
        Case("also_rust", ["a1"], condition=lang_is("rust")),
    ]


@pytest.mark.parametrize(
    "step,lang,chosen,excluded",
    [
        # first matching case wins; other cases' steps and the default branch are excluded
        (router(three_cases(), ["d1"]), "rust", "rust", ["p1", "a1", "d1"]),
        (router(three_cases(), ["d1"]), "py", "py", ["r1", "r2", "a1", "d1"]),
        # no match: the default runs, every case step excluded
        (router(three_cases(), ["d1"]), "go", None, ["r1", "r2", "p1", "a1"]),
        # no match and no default: every case step excluded
        (router(three_cases()), "go", None, ["r1", "r2", "p1", "a1"]),
        # no cases: nothing excluded
        (router([], ["d1"]), "rust", None, []),
        # a case without a condition never matches
        (router([Case("bare", ["b1"])]), "x", None, ["b1"]),
    ],
)
def test_switch_cases(step, lang, chosen, excluded):
    ctx = {"input": {"lang": lang}, "results": {}}
    assert flow.resolve_switch(step, ctx) == (chosen, excluded)


def test_a_step_shared_by_the_taken_branch_is_not_excluded():
    step = router(
        [Case("a", ["shared", "a1"], condition=lambda ctx: True),
         Case("b", ["shared", "b1"], condition=lambda ctx: True)],
        ["shared"],
    )
    assert flow.resolve_switch(step, {}) == ("a", ["b1"])


def test_conditions_see_a_copy_of_the_context_and_truthiness_counts():
    seen = []

    def record(ctx):
        seen.append(ctx)
        return ctx["results"].get("n", 0)  # an int: judged by truthiness

    step = router([Case("n", ["x"], condition=record)])
    ctx = {"input": [1, 2.5, None, True, "s", (3, 4), {5}], "results": {"n": 2}}
    assert flow.resolve_switch(step, ctx) == ("n", [])
    # JSON-like copy: tuples and sets arrive as lists.
    assert seen[0] == {"input": [1, 2.5, None, True, "s", [3, 4], [5]], "results": {"n": 2}}
    assert seen[0] is not ctx
    assert flow.resolve_switch(step, {"input": None, "results": {}}) == (None, ["x"])


def test_the_join_of_a_switch_runs_after_the_taken_branch():
    f = Flow([
        router([Case("a", ["a1"], condition=lambda c: True), Case("b", ["b1"], condition=lambda c: False)]),
        Step("a1", kind="agent", deps=["router"]),
        Step("b1", kind="agent", deps=["router"]),
        Step("join", deps=["a1", "b1"]),
    ])
    chosen, excluded = flow.resolve_switch(f.step("router"), {})
    st = State(done={"router"}, switch_results={"router": (chosen, excluded)})
    assert st.switch_results == {"router": ("a", {"b1"})}
    assert flow.ready_steps(f, st) == ["a1"]
    assert flow.propagate_skips(f, st) == [("b1", "branch_not_taken")]
    st.done = st.done | {"a1"}
    assert flow.ready_steps(f, st) == ["join"]


def looping(cap=100):
    return Step(
        "loop",
        kind="do_while",
        loop_body=["body"],
        loop_condition=lambda ctx: ctx["results"]["body"]["again"],
        loop_max_iterations=cap,
    )


AGAIN = {"input": None, "results": {"body": {"again": True}}}
STOP = {"input": None, "results": {"body": {"again": False}}}


@pytest.mark.parametrize(
    "step,ctx,iterations,expected",
    [
        (looping(), AGAIN, 0, False),  # the body always runs once
        (looping(), AGAIN, 1, False),
        (looping(), STOP, 1, True),  # condition false
        (looping(), AGAIN, 99, False),
        (looping(), AGAIN, 100, True),  # default cap reached
        (looping(3), AGAIN, 3, True),
        (looping(0), AGAIN, 0, True),
        (Step("loop", kind="do_while", loop_body=["body"]), AGAIN, 1, True),  # no condition: once
    ],
)
def test_do_while_termination(step, ctx, iterations, expected):
    assert flow.is_loop_terminated(step, ctx, iterations) is expected


def test_a_running_do_while_lets_its_body_run_but_not_what_follows_it():
    f = Flow([
        Step("loop", kind="do_while", loop_body=["body"]),
        Step("body", kind="agent", deps=["loop"]),
        Step("after", deps=["loop"]),
    ])
    assert flow.ready_steps(f, State()) == ["loop"]
    assert flow.ready_steps(f, State(in_flight={"loop"})) == ["body"]
    assert flow.ready_steps(f, State(done={"loop", "body"})) == ["after"]
    assert flow.propagate_skips(f, State(failed={"loop"})) == [
        ("body", "upstream_failed"),
        ("after", "upstream_failed"),
    ]


# --- condition errors and contexts ----------------------------------------


class Boom(Exception):
    pass


def test_a_raising_condition_propagates_and_stops_later_conditions():
    calls = []

    def boom(ctx):
        calls.append("boom")
        raise Boom("condition failed")

    def later(ctx):
        calls.append("later")
        return True

    step = router([Case("a", ["x"], condition=boom), Case("b", ["y"], condition=later)])
    with pytest.raises(Boom, match="condition failed"):
        flow.resolve_switch(step, {})
    assert calls == ["boom"]
    # The error does not leak into the next call.
    step_ok = router([Case("b", ["y"], condition=later)])
    assert flow.resolve_switch(step_ok, {}) == ("b", [])


def test_raising_loop_conditions_and_when_guards_propagate():
    step = Step("loop", kind="do_while", loop_condition=lambda ctx: ctx["missing"])
    with pytest.raises(KeyError):
        flow.is_loop_terminated(step, {}, 1)
    f = Flow([Step("a", when=lambda ctx: 1 / 0)])
    with pytest.raises(ZeroDivisionError):
        flow.manifest_steps(f, {})


class Falsy:
    def __bool__(self):
        raise Boom("no truth value")


def test_a_result_without_a_truth_value_propagates():
    step = router([Case("a", ["x"], condition=lambda ctx: Falsy())])
    with pytest.raises(Boom, match="no truth value"):
        flow.resolve_switch(step, {})


@pytest.mark.parametrize("ctx", [{"input": object()}, {1: "int key"}, {"b": b"bytes"}, {"big": 2**70}])
def test_a_context_that_is_not_json_like_is_invalid_input(ctx):
    step = router([Case("a", ["x"], condition=lambda c: True)])
    with pytest.raises(coderig.InvalidInputError, match="JSON-like"):
        flow.resolve_switch(step, ctx)


def test_conditions_must_be_callable():
    with pytest.raises(TypeError, match="condition"):
        Case("a", ["x"], condition="yes")
    with pytest.raises(TypeError, match="loop_condition"):
        Step("l", kind="do_while", loop_condition=True)
    with pytest.raises(TypeError, match="when"):
        Step("s", when=1)


# --- batches ---------------------------------------------------------------


def batched_flow(cap, join_rule="all_success"):
    return Flow(
        [
            Step("a", kind="agent", batch="models"),
            Step("b", kind="agent", batch="models"),
            Step("c", kind="agent", batch="models"),
            Step("d", batch="tools"),
            Step("e"),
        ],
        batch_max_concurrent=cap,
        batch_join_rule=join_rule,
    )


@pytest.mark.parametrize(
    "cap,in_flight,ready,admitted",
    [
        (2, [], ["a", "b", "c"], ["a", "b"]),  # 0 running, cap 2, 3 ready -> 2
        (2, ["a"], ["b", "c"], ["b"]),
        (2, ["a", "b"], ["c"], []),
        (1, ["d"], ["a", "e", "b"], ["a", "e"]),  # groups capped separately; unbatched pass
        (None, ["a"], ["b", "c"], ["b", "c"]),
        (2, [], ["c", "a", "b", "zz"], ["c", "a"]),  # given order kept; unknown ids dropped
    ],
)
def test_batches_admit_at_most_the_free_slots(cap, in_flight, ready, admitted):
    assert flow.ready_in_batch(batched_flow(cap), State(in_flight=in_flight), ready) == admitted


def test_batch_state_lists_every_group_with_its_running_members():
    groups = flow.build_batch_state(batched_flow(2), {"a", "e"})
    assert groups == {
        "models": ({"a"}, 2, "all_success"),
        "tools": (set(), 2, "all_success"),
    }
    assert flow.build_batch_state(Flow([Step("x")]), []) == {}


def test_batch_join_rule_judges_the_group_as_a_whole():
    st = State(done={"a", "b"}, failed={"c"})
    assert flow.is_batch_joined(batched_flow(2), st, "models") is False
    assert flow.is_batch_joined(batched_flow(2, "one_success"), st, "models") is True
    assert flow.is_batch_joined(batched_flow(2), st, "nope") is None


# --- launch guards, completion, retries -----------------------------------


def test_launch_guards_exclude_steps_and_exclusion_satisfies_the_join():
    f = Flow([
        Step("lint", when=lambda ctx: ctx["input"]["lint"]),
        Step("test"),
        Step("report", deps=["lint", "test"]),
    ])
    excluded = flow.manifest_steps(f, {"input": {"lint": False}})
    assert excluded == {"lint"}
    assert flow.manifest_steps(f, {"input": {"lint": True}}) == set()
    st = State(excluded=excluded)
    assert flow.ready_steps(f, st) == ["test"]
    assert flow.propagate_skips(f, st) == [("lint", "excluded")]
    st.done = {"test"}
    assert flow.ready_steps(f, st) == ["report"]


def test_completion_and_stuck_detection():
    f = Flow([Step("a"), Step("b", deps=["a"])])
    st = State()
    assert not flow.is_run_complete(f, st) and not flow.is_stuck(f, st)
    st.in_flight = {"a"}
    assert not flow.is_stuck(f, st)
    st.in_flight = ()
    st.failed = {"a"}
    assert not flow.is_stuck(f, st)  # b can still be skipped
    st.skipped = {"b": "upstream_failed"}
    assert flow.is_run_complete(f, st) and not flow.is_stuck(f, st)
    assert flow.is_stuck(Flow([Step("x", deps=["ghost"])]), State())


@pytest.mark.parametrize("max_retries,count,expected", [
    (0, 0, False), (1, 0, True), (1, 1, False), (3, 2, True), (3, 5, False),
    (None, 0, False), (None, 7, False),  # no retry policy: no retry
])
def test_should_retry(max_retries, count, expected):
    assert flow.should_retry(max_retries, count) is expected


@pytest.mark.parametrize(
    "kind,expected",
    [("timeout", True), ("rate_limited", True), ("transient", True), ("crashed", True),
     ("validation", False), ("cancelled", False), ("permanent", False)],
)
def test_is_retriable(kind, expected):
    assert flow.is_retriable(kind) is expected


def test_is_retriable_unknown_kind():
    with pytest.raises(coderig.InvalidInputError, match="rate_limited"):
        flow.is_retriable("flaky")


# --- resume ----------------------------------------------------------------

RESUME_ROWS = [
    # status, task id, task state, retry count, max retries, action
    ("timed_out", "t1", "running", 0, 2, "retry"),
    ("timed_out", None, None, 1, 2, "retry"),
    ("timed_out", "t1", None, 2, 2, "mark-failed"),
    ("timed_out", "t1", "failed", 0, None, "mark-failed"),
    ("timed_out", None, None, 0, 0, "mark-failed"),
    ("pending", None, None, 0, None, "keep"),
    ("done", "t1", "running", 0, None, "keep"),
    ("completed", "t1", "running", 0, None, "keep"),  # the seed's name of "done"
    ("Completed", None, None, 0, None, "keep"),
    ("failed", "t1", "completed", 0, 3, "keep"),
    ("skipped", None, None, 0, None, "keep"),
    ("cancelled", "t1", "pending", 0, None, "keep"),
    ("running", None, None, 0, None, "re-dispatch"),
    ("running", None, "completed", 0, None, "re-dispatch"),
    ("running", "t1", None, 0, None, "re-dispatch"),
    ("running", "t1", "completed", 0, None, "mark-done"),
    ("running", "t1", "failed", 0, 5, "mark-failed"),
    ("running", "t1", "cancelled", 0, None, "mark-cancelled"),
    ("running", "t1", "pending", 0, None, "keep"),
    ("running", "t1", "running", 0, None, "re-dispatch"),
    ("running", "t1", "blocked", 0, None, "re-dispatch"),
]


@pytest.mark.parametrize("status,task_id,task_state,retry_count,max_retries,action", RESUME_ROWS)
def test_every_resume_row(status, task_id, task_state, retry_count, max_retries, action):
    assert flow.reconcile_resume_step(status, task_id, task_state, retry_count, max_retries) == action


def test_reconcile_resume_step_defaults():
    assert flow.reconcile_resume_step("timed_out", None, None) == "mark-failed"  # no retries by default
    assert flow.reconcile_resume_step("running") == "re-dispatch"
    with pytest.raises(coderig.InvalidInputError, match="timed_out"):
        flow.reconcile_resume_step("zombie", None, None)
    with pytest.raises(coderig.InvalidInputError, match='"done"'):
        flow.reconcile_resume_step("running", "t1", "done")


def test_reconcile_run_reads_task_states_by_id_in_row_order():
    rows = [
        ("fetch", "t1", "running", 0, None),
        ("build", "t2", "running", 0, None),
        ("lint", "gone", "running", 0, None),
        ("test", "t3", "timed_out", 1, 3),
        ("ship", None, "pending", 0, None),
        ("old", "t4", "completed", 0, None),
    ]
    tasks = {"t1": "completed", "t2": "blocked"}
    assert flow.reconcile_run(rows, tasks) == [
        ("fetch", "mark-done"),
        ("build", "re-dispatch"),
        ("lint", "re-dispatch"),
        ("test", "retry"),
        ("ship", "keep"),
        ("old", "keep"),
    ]


# --- the spec objects ------------------------------------------------------


def test_step_defaults_attributes_and_repr():
    s = Step("fold")
    assert (s.id, s.kind, s.deps, s.trigger_rule, s.batch, s.max_retries) == ("fold", "code", [], "all_success", None, 0)
    assert (s.cases, s.default_branch, s.loop_body, s.loop_condition) == ([], [], [], None)
    assert (s.loop_max_iterations, s.timeout, s.when) == (100, None, None)
    assert repr(s) == "Step('fold', kind='code')"
    guard = lambda ctx: True  # noqa: E731
    case = Case("label", ("s1",), condition=guard)
    t = Step("sw", kind="switch", deps=("a", "b"), trigger_rule="one_success", batch="g",
             max_retries=2, cases=[case], default_branch={"d"}, timeout=30, when=guard)
    assert t.deps == ["a", "b"] and t.trigger_rule == "one_success" and t.batch == "g"
    assert t.cases[0] is case and t.when is guard and t.timeout == 30
    assert (case.label, case.steps, case.condition) == ("label", ["s1"], guard)
    assert "trigger_rule='one_success'" in repr(t) and "cases=<label>" in repr(t)
    assert repr(Case("x", [])) == "Case('x', [], condition=None)"
    with pytest.raises(coderig.InvalidInputError,
                       match='`deps`: invalid type: string "a", expected an array'):
        Step("x", deps="a")  # a string is not a list of ids


def test_flow_attributes_and_validate():
    a, b = Step("a"), Step("b", deps=["a", "ghost"])
    f = Flow([a, b], batch_max_concurrent=3)
    assert f.steps[0] is a and len(f) == 2 and f.step("b") is b and f.step("zz") is None
    assert (f.batch_max_concurrent, f.batch_join_rule) == (3, "all_success")
    assert repr(f) == "Flow(<2 steps: a, b>, batch_max_concurrent=3, batch_join_rule='all_success')"
    assert flow.validate(f) == [
        {"code": "unknown_dependency", "step": "b", "dep": "ghost",
         "message": 'step "b" depends on unknown step "ghost"'},
    ]
    (cycle,) = flow.validate(Flow([Step("x", deps=["y"]), Step("y", deps=["x"])]))
    assert cycle["code"] == "cycle" and cycle["steps"][0] == cycle["steps"][-1]
    assert [e["code"] for e in flow.validate(Flow([Step("x"), Step("x")]))] == ["duplicate_id"]
    assert [e["code"] for e in flow.validate(Flow([Step("x", cases=[Case("c", ["x"])])]))] == [
        "cases_on_non_switch"
    ]
    assert flow.validate(Flow([Step("a"), Step("b", deps=["a"])])) == []


def test_state_conventions():
    st = State(done=["a"], skipped=["s"], switch_results={"r": (None, ["x"])}, loop_iterations={"l": 2})
    assert st.done == {"a"} and isinstance(st.done, set)
    assert st.skipped == {"s": "condition_false"}  # a collection of ids: deliberate skips
    assert st.switch_results == {"r": (None, {"x"})}
    assert st.loop_iterations == {"l": 2}
    assert (st.failed, st.in_flight, st.excluded, st.timed_out) == (set(), set(), set(), set())
    st.done.add("b")  # the attributes are copies: this changes nothing
    assert st.done == {"a"} and st.outcome("b") == "pending"
    st.done = st.done | {"b"}  # assigning replaces the field
    assert st.outcome("b") == "done" and st.outcome("s") == "skipped" and st.outcome("x") == "skipped"
    assert st.outcome("zz") == "pending"
    # The reason behind "skipped": deliberate, switch-excluded; None otherwise.
    assert (st.skip_reason("s"), st.skip_reason("x")) == ("condition_false", "branch_not_taken")
    assert (st.skip_reason("a"), st.skip_reason("zz")) == (None, None)
    st.failed = ("f",)  # setters convert
    assert st.failed == {"f"} and st.outcome("f") == "failed"
    st.skipped = {"u": "upstream_failed"}
    assert st.skipped == {"u": "upstream_failed"}
    assert st.skip_reason("u") == "upstream_failed" and st.skip_reason("f") is None
    assert State(excluded={"e"}).skip_reason("e") == "excluded"
    assert repr(State(done={"a"})) == "State(done={'a'})"
    assert State(done={"a"}) == State(done=["a"]) and State() != State(done={"a"})
    assert State() != "State()"
    assert State(done=frozenset({"a"}), failed=iter(["f"])) == State(done=["a"], failed=("f",))
    with pytest.raises(TypeError):
        hash(State())  # mutable


@pytest.mark.parametrize("make,message,path", [
    (lambda: State(skipped={"x": "bored"}),
     '`skipped.x`: unknown skip reason "bored"; expected one of: upstream_failed, '
     "branch_not_taken, condition_false, excluded", "skipped.x"),
    (lambda: State(done="a"), '`done`: invalid type: string "a", expected an array', "done"),
    (lambda: State(loop_iterations={"l": -1}),
     "`loop_iterations.l`: must be an integer from 0 to 4294967295, got -1", "loop_iterations.l"),
    (lambda: State.from_dict({"don": []}), "`don`: unknown field `don`, expected one of `done`, "
     "`skipped`, `failed`, `in_flight`, `excluded`, `timed_out`, `switch_results`, "
     "`loop_iterations`", "don"),
    (lambda: State.from_dict(["a"]), "a scheduler state must be an object, got an array", "."),
])
def test_bad_states_get_the_cores_message(make, message, path):
    with pytest.raises(coderig.InvalidInputError) as raised:
        make()
    assert raised.value.message == message
    assert raised.value.details == {"path": path}


def test_a_bad_assignment_leaves_the_state_unchanged():
    st = State(skipped={"a": "excluded"})
    with pytest.raises(coderig.InvalidInputError, match="`skipped.y`: unknown skip reason"):
        st.skipped = {"y": "bored"}
    assert st.skipped == {"a": "excluded"}


def test_state_json_forms_round_trip():
    d = {"done": ["a"], "skipped": ["s"], "switch_results": {"r": [None, ["x"]], "t": {"chosen": "l"}},
         "loop_iterations": {"l": 2.0}}
    st = State.from_dict(d)
    assert st == State(done={"a"}, skipped={"s": "condition_false"},
                       switch_results={"r": (None, {"x"}), "t": ("l", ())}, loop_iterations={"l": 2})
    assert st.to_dict()["skipped"] == {"s": "condition_false"}
    assert State.from_dict(st.to_dict()) == st
    assert State.from_dict({}) == State()


def test_flow_from_spec_and_validate_of_a_spec():
    spec = {"steps": [{"id": "a", "kind": "agent", "max_retries": 2, "timeout": 30.0},
                      {"id": "s", "kind": "switch", "deps": ["a"],
                       "cases": [{"label": "l", "steps": ["b"]}]},
                      {"id": "b", "kind": "code", "deps": ["s", "ghost"]}],
            "batch_config": {"max_concurrent": 2}}
    f = Flow.from_spec(spec)
    assert [s.id for s in f.steps] == ["a", "s", "b"] and len(f) == 3
    assert (f.step("a").kind, f.step("a").max_retries, f.step("a").timeout) == ("agent", 2, 30)
    assert [(c.label, c.steps, c.condition) for c in f.step("s").cases] == [("l", ["b"], None)]
    assert f.batch_max_concurrent == 2
    problems = [{"code": "unknown_dependency", "step": "b", "dep": "ghost",
                 "message": 'step "b" depends on unknown step "ghost"'}]
    assert flow.validate(f) == flow.validate(spec) == problems
    assert flow.ready_steps(f, State()) == ["a"]
    # A case from a spec has no condition: it never matches.
    assert flow.resolve_switch(f.step("s"), {}) == (None, ["b"])


@pytest.mark.parametrize("spec,message,path", [
    ({"steps": [{"id": "a", "kind": "code", "dependencies": ["b"]}]},
     "`steps[0].dependencies`: unknown field `dependencies`, expected one of `id`, `kind`, `deps`, "
     "`trigger_rule`, `batch`, `max_retries`, `timeout`, `cases`, `default_branch`, `loop_body`, "
     "`loop_max_iterations`", "steps[0].dependencies"),
    ({"steps": [{"id": "a", "kind": "cod"}]}, '`steps[0].kind`: unknown step kind "cod"; expected '
     "one of: agent, code, approval, switch, do_while", "steps[0].kind"),
    ({"steps": [], "extra": 1}, "`extra`: unknown field `extra`, expected `steps` or `batch_config`",
     "extra"),
    ({"steps": [["a", "code"]]}, "`steps[0]`: must be an object, got an array", "steps[0]"),
])
def test_bad_specs_get_the_cores_message(spec, message, path):
    for call in (Flow.from_spec, flow.validate):
        with pytest.raises(coderig.InvalidInputError) as raised:
            call(spec)
        assert raised.value.message == message
        assert raised.value.path == path
