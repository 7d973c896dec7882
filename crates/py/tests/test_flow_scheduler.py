"""coderig.flow.Scheduler: the stateful runner over the pure decisions — events
applied in order, refusals that change nothing, switches, batches, loops, and a
property test that it agrees with the pure decisions on random DAGs."""

import random

import pytest

import coderig
from coderig import flow
from coderig.flow import Case, Flow, Scheduler, Step


def router(cases, default=()):
    return Step("router", kind="switch", cases=cases, default_branch=default)


class Boom(Exception):
    pass


def test_a_chain_runs_to_completion():
    f = Flow([Step("a"), Step("b", deps=["a"]), Step("c", deps=["a"]), Step("d", deps=["b", "c"])])
    s = Scheduler(f)
    assert s.flow is f
    assert s.start() == ["a"]
    assert s.complete("a") == ["b", "c"]
    assert s.complete("c") == []
    assert not s.is_complete()
    assert s.complete("b") == ["d"]
    assert s.in_flight() == ["d"]
    assert s.complete("d") == []
    assert s.is_complete()
    assert flow.is_run_complete(f, s.state())
    assert s.take_skipped() == []
    assert repr(s) == "Scheduler(<4 steps>, in_flight=[], complete=True)"


def test_refused_events_are_conflicts_or_unknown_ids_and_change_nothing():
    f = Flow([Step("a"), Step("b", deps=["a"]),
              Step("sw", kind="switch", cases=[Case("x", ["b"], condition=lambda c: True)])])
    s = Scheduler(f)
    with pytest.raises(coderig.ConflictError, match="not started") as raised:
        s.complete("a")
    assert raised.value.details == {"reason": "not_started"}
    s.start()
    before = s.state()
    conflict, unknown, invalid = coderig.ConflictError, coderig.NotFoundIdError, coderig.InvalidInputError
    for event, error, match in [
        (lambda: s.start(), conflict, "already started"),
        (lambda: s.complete("zz"), unknown, 'unknown step "zz"'),
        (lambda: s.complete("b"), conflict, "it is pending"),
        (lambda: s.complete("sw"), invalid, "complete_switch"),
        (lambda: s.complete_switch("a"), invalid, "not a switch"),
        (lambda: s.complete_switch("sw", "y"), invalid, 'no case "y"'),
        (lambda: s.complete_switch_with("zz", {}), unknown, 'unknown step "zz"'),
        (lambda: s.next_iteration("a"), invalid, "not a do_while"),
        (lambda: s.outcome("zz"), unknown, "unknown step"),
        (lambda: s.skip_reason("zz"), unknown, "unknown step"),
    ]:
        with pytest.raises(error, match=match):
            event()
    assert s.state() == before
    with pytest.raises(coderig.NotFoundIdError) as raised:
        s.complete("zz")
    assert (raised.value.what, raised.value.id, raised.value.reason) == ("step", "zz", "unknown_step")
    s.complete("a")
    with pytest.raises(coderig.ConflictError, match='cannot skip step "a": it is done') as raised:
        s.skip("a")
    assert raised.value.details == {"reason": "invalid_transition", "step": "a", "event": "skip",
                                    "state": "done"}
    with pytest.raises(coderig.InvalidInputError, match='unknown step "nope"') as raised:
        Scheduler(Flow([Step("a", deps=["nope"])]))
    assert raised.value.reason == "invalid"
    assert [e["code"] for e in raised.value.errors] == ["unknown_dependency"]
    with pytest.raises(coderig.NotFoundIdError, match='unknown step "b"'):
        Scheduler(Flow([Step("a")]), excluded=["b"])


def test_a_failure_propagates_upstream_failed_and_releases_cleanup():
    f = Flow([Step("a"), Step("b", deps=["a"]), Step("c", deps=["b"]),
              Step("cleanup", deps=["c"], trigger_rule="all_done"),
              Step("alert", deps=["a"], trigger_rule="one_failed")])
    s = Scheduler(f)
    s.start()
    assert s.fail("a") == ["cleanup", "alert"]
    assert s.take_skipped() == [("b", "upstream_failed"), ("c", "upstream_failed")]
    assert s.outcome("c") == "skipped" and s.skip_reason("c") == "upstream_failed"
    assert [s.skip_reason(i) for i in ("a", "cleanup")] == [None, None]  # failed, in flight
    assert s.state().skipped == {"b": "upstream_failed", "c": "upstream_failed"}
    assert s.take_skipped() == []


def test_a_timeout_counts_as_a_failure():
    s = Scheduler(Flow([Step("a"), Step("b", deps=["a"]), Step("c", deps=["a"], trigger_rule="one_failed")]))
    s.start()
    assert s.timeout("a") == ["c"]
    assert s.outcome("a") == "timed_out" and s.outcome("b") == "skipped"


def switch_flow(conditions_log=None):
    def when(lang):
        def condition(ctx):
            if conditions_log is not None:
                conditions_log.append(lang)
            return ctx["input"] == lang
        return condition

    return Flow([
        Step("router", kind="switch",
             cases=[Case("rust", ["r1"], condition=when("rust")), Case("py", ["p1", "p2"], condition=when("py"))],
             default_branch=["other"]),
        Step("r1", deps=["router"]),
        Step("p1", deps=["router"]),
        Step("p2", deps=["p1"]),
        Step("other", deps=["router"]),
        Step("join", deps=["r1", "p2", "other"]),
    ])


def test_a_switch_excludes_untaken_branches_and_its_join_runs():
    s = Scheduler(switch_flow())
    assert s.start() == ["router"]
    assert s.complete_switch("router", "py") == ["p1"]
    assert sorted(s.take_skipped()) == [("other", "branch_not_taken"), ("r1", "branch_not_taken")]
    assert s.complete("p1") == ["p2"]
    assert s.complete("p2") == ["join"]
    assert s.state().switch_results == {"router": ("py", {"r1", "other"})}
    assert s.complete("join") == [] and s.is_complete()


def test_complete_switch_with_uses_the_callables():
    s = Scheduler(switch_flow())
    s.start()
    assert s.complete_switch_with("router", {"input": "go", "results": {}}) == ["other"]
    assert s.complete("other") == ["join"]
    s = Scheduler(switch_flow())
    s.start()
    assert s.complete_switch_with("router", {"input": "rust"}) == ["r1"]


def test_a_raising_switch_condition_leaves_the_scheduler_unchanged():
    def boom(ctx):
        raise Boom("router broke")

    f = Flow([Step("router", kind="switch", cases=[Case("a", ["x"], condition=boom)]), Step("x", deps=["router"])])
    s = Scheduler(f)
    s.start()
    before = s.state()
    with pytest.raises(Boom):
        s.complete_switch_with("router", {})
    assert s.state() == before and s.in_flight() == ["router"]
    assert s.complete_switch("router", "a") == ["x"]


def test_a_batch_cap_holds_steps_until_a_sibling_finishes():
    f = Flow([Step("a", kind="agent", batch="models"), Step("b", kind="agent", batch="models"),
              Step("c", kind="agent", batch="models"), Step("free"), Step("join", deps=["a", "b", "c"])],
             batch_max_concurrent=2)
    s = Scheduler(f)
    assert s.start() == ["a", "b", "free"]
    assert s.held() == ["c"] and s.outcome("c") == "pending"
    assert s.complete("free") == []
    assert s.fail("b") == ["c"]
    assert s.held() == []
    assert s.take_skipped() == [("join", "upstream_failed")]


def test_a_do_while_runs_its_body_per_iteration_then_what_follows():
    f = Flow([
        Step("loop", kind="do_while", loop_body=["draft", "review"], loop_max_iterations=3,
             loop_condition=lambda ctx: ctx["results"]["review"] != "ok"),
        Step("draft", kind="agent", deps=["loop"]),
        Step("review", kind="agent", deps=["draft"]),
        Step("after", deps=["loop"]),
    ])
    loop = f.step("loop")
    s = Scheduler(f)
    assert s.start() == ["loop", "draft"]
    assert s.complete("draft") == ["review"]
    with pytest.raises(coderig.ConflictError, match='body step "review" has not finished'):
        s.next_iteration("loop")
    assert s.complete("review") == []
    iterations = 1
    assert not flow.is_loop_terminated(loop, {"results": {"review": "redo"}}, iterations)
    assert s.next_iteration("loop") == ["draft"]
    assert s.loop_iterations("loop") == 1 and s.outcome("review") == "pending"
    s.complete("draft")
    s.complete("review")
    assert flow.is_loop_terminated(loop, {"results": {"review": "ok"}}, 2)
    assert s.complete("loop") == ["after"]
    assert s.state().loop_iterations == {"loop": 1}


def test_launch_exclusions_are_deliberate_skips():
    f = Flow([Step("lint", when=lambda ctx: False), Step("test"), Step("report", deps=["lint", "test"])])
    s = Scheduler(f, excluded=flow.manifest_steps(f, {}))
    assert s.start() == ["test"]
    assert s.take_skipped() == [("lint", "excluded")]
    assert s.complete("test") == ["report"]
    assert "lint" in s.state().excluded


def test_always_runs_at_start_and_deliberate_skip_of_a_pending_step():
    s = Scheduler(Flow([Step("a"), Step("watch", deps=["a"], trigger_rule="always"),
                        Step("b", deps=["a"]), Step("c", deps=["b"])]))
    assert s.start() == ["a", "watch"]
    assert s.skip("b") == ["c"]
    assert s.take_skipped() == [("b", "condition_false")]
    assert s.complete("a") == []


RULES = sorted(coderig.names()["trigger_rule"])


def random_flow(rng, n):
    steps = []
    for i in range(n):
        deps = rng.sample([f"s{j}" for j in range(i)], k=min(i, rng.randint(0, 3)))
        steps.append(Step(f"s{i}", deps=deps, trigger_rule=rng.choice(RULES),
                          batch=rng.choice([None, None, "g1", "g2"])))
    return Flow(steps, batch_max_concurrent=rng.choice([None, 1, 2]))


@pytest.mark.parametrize("seed", range(20))
def test_the_scheduler_agrees_with_the_pure_decisions_on_random_dags(seed):
    """The binding's mirror of the core's property test: after every event,
    nothing is left that the pure functions would start or skip."""
    rng = random.Random(seed)
    f = random_flow(rng, rng.randint(1, 12))
    s = Scheduler(f)
    running = list(s.start())
    while running:
        step = running.pop(rng.randrange(len(running)))
        event = rng.choice([s.complete, s.complete, s.fail, s.timeout, s.skip])
        running += event(step)
        st = s.state()
        assert flow.propagate_skips(f, st) == []
        assert flow.ready_in_batch(f, st, flow.ready_steps(f, st)) == []
        assert sorted(running) == sorted(s.in_flight())
    assert s.is_complete() and flow.is_run_complete(f, s.state())
    assert not flow.is_stuck(f, s.state())
