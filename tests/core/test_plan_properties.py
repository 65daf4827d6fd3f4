"""Property tests of the decision core over generated definitions and snapshots.

Definitions are small random trees of sequences, branches (``choose``) and parallels
(``fork``) of leaf tasks (``job``); every leaf reads its previous sibling or the input, so
data really flows. Properties: a plan is deterministic, survives a JSON round trip of its
snapshot, never exceeds its limit, and driving an instance to its end gives the same final
state and the same multiset of decisions whatever the budget.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.core.planning_kinds import (
    HOST,
    apply,
    definition,
    drive,
    leaf_output,
    ref,
    snap,
)
from weave_core.foundation.exactjson import dumps, loads
from weave_core.planning.plan import DecisionKind, PlanRejectedError
from weave_core.planning.program import ROOT, Program, compile
from weave_core.planning.snapshot import Entered, Phase, Snapshot, StepState

Shape = Any  # "job" | ("choose", [[shape]]) | ("fork", [[shape]])


def shapes(depth: int) -> st.SearchStrategy[Shape]:
    leaf = st.just("job")
    if depth == 0:
        return leaf
    blocks = st.lists(st.lists(shapes(depth - 1), min_size=0, max_size=3), min_size=1, max_size=3)
    return st.one_of(
        leaf,
        leaf,
        st.tuples(st.just("choose"), blocks),
        st.tuples(st.just("fork"), blocks),
    )


def build(top: list[Shape]) -> dict[str, Any]:
    counter = iter(range(10_000))

    def block(items: list[Shape]) -> list[dict[str, Any]]:
        steps: list[dict[str, Any]] = []
        for item in items:
            step_id = f"s{next(counter)}"
            if item == "job":
                source = ref(f"steps.{steps[-1]['id']}.output") if steps else ref("input.n")
                steps.append({"id": step_id, "kind": "job", "input": {"from": source}})
            elif item[0] == "choose":
                cases: list[dict[str, Any]] = [
                    {"when": {"eq": [ref("input.n"), i]}, "steps": block(b)}
                    for i, b in enumerate(item[1][:-1])
                ]
                cases.append({"default": True, "steps": block(item[1][-1])})
                steps.append({"id": step_id, "kind": "choose", "cases": cases})
            else:
                branches = {f"b{i}": block(b) for i, b in enumerate(item[1])}
                steps.append({"id": step_id, "kind": "fork", "branches": branches})
        return steps

    return definition(*block(top))


definitions = st.lists(shapes(3), min_size=1, max_size=4).map(build)
inputs = st.integers(min_value=0, max_value=3).map(lambda n: {"n": n})
limits = st.integers(min_value=1, max_value=32)
SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def outcome(prog: Program, snapshot: Snapshot, limit: int, allow_new: bool = True) -> str:
    """The plan's canonical JSON, or the rejection's reason and step."""
    try:
        plan = prog.plan(snapshot, limit, allow_new)
    except PlanRejectedError as exc:
        return f"rejected:{exc.reason.value}:{exc.step_id}"
    assert len(plan.decisions) <= limit
    return dumps(plan.to_json())


def round_trip(snapshot: Snapshot) -> Snapshot:
    return Snapshot.from_json(loads(dumps(snapshot.to_json())))


def multiset(decisions: list[Any]) -> Counter[str]:
    return Counter(dumps(d.to_json()) for d in decisions)


@SETTINGS
@given(doc=definitions, value=inputs)
def test_budget_invariance(doc: dict[str, Any], value: dict[str, int]) -> None:
    prog = compile(doc, HOST)
    final_1, decisions_1 = drive(prog, snap(value), limit=1)
    final_32, decisions_32 = drive(prog, snap(value), limit=32)
    assert final_1 == final_32
    assert dumps(final_1.to_json()) == dumps(final_32.to_json())
    assert multiset(decisions_1) == multiset(decisions_32)
    # The end: the root completed, and every step of the definition is settled.
    assert final_1.steps[ROOT].phase is Phase.SUCCEEDED
    assert set(final_1.steps) == {*prog.step_ids(), ROOT}
    assert all(s.phase in (Phase.SUCCEEDED, Phase.SKIPPED) for s in final_1.steps.values())
    # Each step is activated or skipped exactly once; only activated composites complete.
    entering = Counter(d.step_id for d in decisions_1 if d.kind is not DecisionKind.COMPLETE)
    assert entering == Counter(prog.step_ids())
    completed = {d.step_id for d in decisions_1 if d.kind is DecisionKind.COMPLETE}
    assert completed == {
        s for s in prog.step_ids() if prog.is_composite(s) and final_1.steps[s].entered
    } | {ROOT}


@SETTINGS
@given(doc=definitions, value=inputs, limit=limits, data=st.data())
def test_plans_along_a_random_run(
    doc: dict[str, Any], value: dict[str, int], limit: int, data: st.DataObject
) -> None:
    """Leaves settle in a random order; every snapshot on the way plans the same each time."""
    prog = compile(doc, HOST)
    snapshot = snap(value)
    pending: dict[str, Any] = {}  # activated leaves not settled yet, with their commands
    for _ in range(500):
        if snapshot.steps.get(ROOT) is not None:
            break
        first = outcome(prog, snapshot, limit)
        assert outcome(prog, snapshot, limit) == first
        assert outcome(prog, round_trip(snapshot), limit) == first
        assert not first.startswith("rejected"), first
        plan = prog.plan(snapshot, limit)
        steps = dict(snapshot.steps)
        for d in plan.decisions:
            if d.kind is DecisionKind.ACTIVATE and not prog.is_composite(d.step_id):
                pending[d.step_id] = d.command
                steps[d.step_id] = StepState(Phase.ACTIVE)
            else:
                steps = dict(apply(prog, Snapshot(snapshot.input, steps), [d]).steps)
        if pending:
            chosen = data.draw(st.sets(st.sampled_from(sorted(pending)), min_size=1))
            for step_id in sorted(chosen):
                output = leaf_output(step_id, pending.pop(step_id))
                steps[step_id] = StepState(Phase.SUCCEEDED, output)
        snapshot = Snapshot(snapshot.input, steps)
    assert snapshot.steps[ROOT].phase is Phase.SUCCEEDED


@st.composite
def arbitrary_snapshots(draw: st.DrawFn, prog: Program) -> Snapshot:
    """Any recorded subset of steps in any phase: most of these must be refused whole."""
    steps: dict[str, StepState] = {}
    for step_id in prog.step_ids():
        if not draw(st.booleans()):
            continue
        phase = draw(st.sampled_from(list(Phase)))
        entered = None
        blocks = sorted(prog.blocks_of(step_id))
        if blocks and draw(st.booleans()):
            chosen = tuple(draw(st.sets(st.sampled_from(blocks), min_size=1)))
            entered = Entered(draw(st.sampled_from([None, {"case": 0}])), tuple(sorted(chosen)))
        output = draw(st.sampled_from([None, 1, {"by": step_id, "got": {}}]))
        steps[step_id] = StepState(phase, output if phase is Phase.SUCCEEDED else None, entered)
    return Snapshot({"n": draw(st.integers(0, 3))}, steps)


@SETTINGS
@given(doc=definitions, limit=limits, allow_new=st.booleans(), data=st.data())
def test_arbitrary_snapshots_give_a_whole_plan_or_a_rejection(
    doc: dict[str, Any], limit: int, allow_new: bool, data: st.DataObject
) -> None:
    prog = compile(doc, HOST)
    snapshot = data.draw(arbitrary_snapshots(prog))
    first = outcome(prog, snapshot, limit, allow_new)
    assert outcome(prog, snapshot, limit, allow_new) == first
    assert outcome(prog, round_trip(snapshot), limit, allow_new) == first
    if not first.startswith("rejected"):
        decoded = loads(first)
        assert len(decoded["decisions"]) <= limit
        if not allow_new:  # paused, gated, cancelled or late: nothing new starts
            assert all(d["kind"] != "ACTIVATE" for d in decoded["decisions"])


# --- the planner's fast helpers agree with the general rules ------------------------------

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.decimals(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(a=json_values, b=json_values)
def test_fast_equality_agrees_with_json_equal(a: Any, b: Any) -> None:
    from weave_core.definitions.expressions import json_equal
    from weave_core.planning.values import same as _same

    assert _same(a, b) == json_equal(a, b)
    assert _same(a, a) and json_equal(a, a)


@settings(max_examples=300, deadline=None)
@given(value=json_values)
def test_the_size_bound_is_never_below_the_size(value: Any) -> None:
    from weave_core.foundation.exactjson import size_of
    from weave_core.planning.values import size_bound as _size_bound

    assert _size_bound(value) >= size_of(value)
