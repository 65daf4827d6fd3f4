"""Table tests of the decision core: every decision rule and every whole-plan rejection."""

from __future__ import annotations

import sys
from dataclasses import dataclass

import pytest
from pydantic import BaseModel

import tests.core.planning_kinds as kinds_module
from tests.core.planning_kinds import (
    JobConfig,
    active,
    brief,
    choose,
    definition,
    done,
    drive,
    fork,
    job,
    ok,
    program,
    ref,
    snap,
    state,
)
from weave_core.foundation.exactjson import JSON
from weave_core.foundation.limits import Limits
from weave_core.planning.plan import DecisionKind, PlanRejectedError, RejectReason
from weave_core.planning.program import Program, compile
from weave_core.planning.snapshot import ROOT, Phase, Snapshot, StepState
from weave_core.plugins.host import PluginHost
from weave_core.plugins.nodespec import Command, EnterBlocks, NodeKind, Scope, TaskCommand, hookimpl

# One program with every shape: a sequence, a branch (case0 when input.n > 1, else the
# default case1 holding a nested parallel), a parallel, and a step reading the parallel.
FULL = program(
    job("a", {"n": ref("input.n")}),
    choose(
        "b",
        ({"gt": [ref("input.n"), 1]}, [job("big1"), job("big2")]),
        (None, [job("small"), fork("inner", x=[job("x1")], y=[job("y1")])]),
    ),
    fork("p", one=[job("p1")], two=[job("p2", ref("steps.a.output"))]),
    job("z", {"joined": ref("steps.p.output"), "two": ref("steps.p2.output.by")}),
)


def without(steps: dict[str, StepState], *step_ids: str) -> dict[str, StepState]:
    """``steps`` with ``step_ids`` unrecorded."""
    return {k: v for k, v in steps.items() if k not in step_ids}


def out(step_id: str, got: JSON = None) -> dict[str, JSON]:
    return {"by": step_id, "got": {} if got is None else got}


A_DONE = ok(out("a", {"n": 0}))
P_OUT = {"one": out("p1"), "two": out("p2", out("a", {"n": 0}))}
INNER_OUT = {"x": out("x1"), "y": out("y1")}
B_DONE = done(INNER_OUT, {"case": 1}, "case1")
B_STEPS = {
    "b": B_DONE,
    "big1": state(Phase.SKIPPED),
    "big2": state(Phase.SKIPPED),
    "small": ok(out("small")),
    "inner": done(INNER_OUT, None, "x", "y"),
    "x1": ok(out("x1")),
    "y1": ok(out("y1")),
}


@dataclass(frozen=True)
class Rule:
    name: str
    snapshot: Snapshot
    expected: list[tuple[str, str]]
    limit: int = 32
    allow_new: bool = True
    more: bool = False


RULES = [
    Rule("start activates the first step, then waits for it", snap({"n": 0}), [("ACTIVATE", "a")]),
    Rule("an active predecessor blocks the sequence", snap({"n": 0}, a=active()), []),
    Rule(
        "a SUCCEEDED predecessor lets the branch choose and enter its case in one plan",
        snap({"n": 0}, a=A_DONE),
        [("ACTIVATE", "b"), ("ACTIVATE", "small")],
        limit=2,
        more=True,
    ),
    Rule(
        "the saved case is reused even where the condition would now choose another",
        snap({"n": 5}, a=A_DONE, b=active({"case": 1}, "case1")),
        [("ACTIVATE", "small"), ("SKIP", "big1"), ("SKIP", "big2")],
    ),
    Rule(
        "a nested parallel enters every block and activates each branch's first step",
        snap({"n": 0}, a=A_DONE, b=active({"case": 1}, "case1"), small=ok(out("small"))),
        [
            ("ACTIVATE", "inner"),
            ("ACTIVATE", "x1"),
            ("ACTIVATE", "y1"),
            ("SKIP", "big1"),
            ("SKIP", "big2"),
        ],
    ),
    Rule(
        "composites complete bottom-up and the successor activates in the same plan",
        snap(
            {"n": 0},
            a=A_DONE,
            **{**B_STEPS, "b": active({"case": 1}, "case1"), "inner": active(None, "x", "y")},
        ),
        [
            ("COMPLETE", "inner"),
            ("COMPLETE", "b"),
            ("ACTIVATE", "p"),
            ("ACTIVATE", "p1"),
            ("ACTIVATE", "p2"),
        ],
    ),
    Rule(
        "one unfinished branch blocks the parallel's output; the others go on",
        snap({"n": 0}, a=A_DONE, **B_STEPS, p=active(None, "one", "two"), p1=ok(out("p1"))),
        [("ACTIVATE", "p2")],
    ),
    Rule(
        "a FAILED branch blocks the join",
        snap(
            {"n": 0},
            a=A_DONE,
            **B_STEPS,
            p=active(None, "one", "two"),
            p1=ok(out("p1")),
            p2=state(Phase.FAILED),
        ),
        [],
    ),
    Rule(
        "the last step's success completes the root with its output",
        snap(
            {"n": 0},
            a=A_DONE,
            **B_STEPS,
            p=done(P_OUT, None, "one", "two"),
            p1=ok(out("p1")),
            p2=ok(out("p2", out("a", {"n": 0}))),
            z=ok("the end"),
        ),
        [("COMPLETE", ROOT)],
    ),
    Rule("a FAILED step stops its sequence", snap({"n": 0}, a=state(Phase.FAILED)), []),
    Rule("a NEEDS_REVIEW step stops its sequence", snap({"n": 0}, a=state(Phase.NEEDS_REVIEW)), []),
    Rule("a CANCELLED step stops its sequence", snap({"n": 0}, a=state(Phase.CANCELLED)), []),
    Rule(
        "allow_new=False plans no ACTIVATE",
        snap({"n": 0}, a=A_DONE),
        [],
        allow_new=False,
    ),
    Rule(
        "allow_new=False still skips unselected paths and completes composites",
        snap(
            {"n": 0},
            a=A_DONE,
            **without(
                {**B_STEPS, "b": active({"case": 1}, "case1"), "inner": active(None, "x", "y")},
                "big1",
            ),
        ),
        [("COMPLETE", "inner"), ("SKIP", "big1"), ("COMPLETE", "b")],
        allow_new=False,
    ),
]


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.name)
def test_decision_rule(rule: Rule) -> None:
    plan = FULL.plan(rule.snapshot, rule.limit, rule.allow_new)
    assert brief(plan)[: len(rule.expected)] == rule.expected
    assert len(plan.decisions) == len(rule.expected)
    assert plan.more is rule.more


def test_task_input_reads_saved_outputs_and_sibling_results_by_name() -> None:
    steps = {**B_STEPS, "a": A_DONE, "p": done(P_OUT, None, "one", "two")}
    steps |= {"p1": ok(out("p1")), "p2": ok(out("p2", out("a", {"n": 0})))}
    (decision,) = FULL.plan(snap({"n": 0}, **steps)).decisions
    assert decision.kind is DecisionKind.ACTIVATE and decision.step_id == "z"
    assert isinstance(decision.command, TaskCommand)
    assert decision.command.input == {"joined": P_OUT, "two": "p2"}


def test_branch_decision_is_saved_in_the_enter_blocks_command() -> None:
    plan = FULL.plan(snap({"n": 7}, a=A_DONE), limit=1)
    (decision,) = plan.decisions
    assert decision.command == EnterBlocks(("case0",), {"case": 0})


def test_parallel_output_is_keyed_by_branch_name() -> None:
    steps = {**B_STEPS, "a": A_DONE, "p": active(None, "one", "two")}
    steps |= {"p1": ok(out("p1")), "p2": ok(out("p2", out("a", {"n": 0})))}
    plan = FULL.plan(snap({"n": 0}, **steps))
    assert plan.decisions[0].kind is DecisionKind.COMPLETE
    assert plan.decisions[0].output == P_OUT


def test_unselected_paths_are_skipped_in_batches() -> None:
    many = [job(f"s{i}") for i in range(40)]
    prog = program(choose("b", ({"eq": [ref("input.go"), True]}, many), (None, [])))
    first = prog.plan(snap({"go": False}, b=active({"case": 1}, "case1")))
    assert [d.kind for d in first.decisions] == [DecisionKind.SKIP] * 32
    assert first.more
    final, decisions = drive(prog, snap({"go": False}), limit=32)
    assert sum(d.kind is DecisionKind.SKIP for d in decisions) == 40
    assert final.steps["b"].phase is Phase.SUCCEEDED and final.steps["b"].output is None


def test_nested_steps_of_an_unselected_path_are_skipped_too() -> None:
    prog = program(
        choose(
            "b",
            ({"eq": [ref("input.go"), True]}, [fork("f", l=[job("l1")], r=[job("r1")])]),
            (None, [job("n")]),
        )
    )
    final, decisions = drive(prog, snap({"go": False}), limit=1)
    assert {d.step_id for d in decisions if d.kind is DecisionKind.SKIP} == {"f", "l1", "r1"}
    assert all(final.steps[s].phase is Phase.SKIPPED for s in ("f", "l1", "r1"))


def test_skipped_predecessor_lets_the_successor_activate() -> None:
    prog = program(job("a"), job("b"))
    assert brief(prog.plan(snap(a=state(Phase.SKIPPED)))) == [("ACTIVATE", "b")]


def test_exists_is_false_for_a_skipped_step() -> None:
    prog = program(
        choose("b", ({"eq": [ref("input.go"), True]}, [job("inside")]), (None, [])),
        choose("c", ({"exists": ref("steps.inside.output")}, [job("yes")]), (None, [job("no")])),
    )
    steps = {"b": done(None, {"case": 1}, "case1"), "inside": state(Phase.SKIPPED)}
    assert brief(prog.plan(snap({"go": False}, **steps), limit=2)) == [
        ("ACTIVATE", "c"),
        ("ACTIVATE", "no"),
    ]


def test_budget_spent_sets_more_and_never_exceeds_the_limit() -> None:
    prog = program(fork("f", **{f"b{i}": [job(f"j{i}")] for i in range(10)}))
    for limit in (1, 3, 11):
        plan = prog.plan(snap(), limit)
        assert len(plan.decisions) == min(limit, 11)
        assert plan.more is (limit < 11)


@pytest.mark.parametrize("limit", [0, 33, -1, True])
def test_limit_out_of_range_is_a_value_error(limit: int) -> None:
    with pytest.raises(ValueError, match="from 1 to 32"):
        FULL.plan(snap(), limit)


def test_root_already_succeeded_plans_nothing() -> None:
    prog = program(job("a"))
    assert prog.plan(snap(a=ok(1), **{ROOT: ok(1)})).decisions == ()


# --- rejections ------------------------------------------------------------------------


@dataclass(frozen=True)
class Rejection:
    name: str
    program: Program
    snapshot: Snapshot
    reason: RejectReason
    step_id: str | None


SMALL = Limits(max_value_bytes=64)
REJECTIONS = [
    Rejection(
        "type mismatch: ordering a string against a number",
        FULL,
        snap({"n": "seven"}, a=A_DONE),
        RejectReason.TYPE_MISMATCH,
        "b",
    ),
    Rejection(
        "type mismatch: a path the saved output does not have",
        program(job("a"), job("b", ref("steps.a.output.missing"))),
        snap(a=ok({"present": 1})),
        RejectReason.TYPE_MISMATCH,
        "b",
    ),
    Rejection(
        "input state invalid: the input step was skipped",
        program(job("a"), job("b", ref("steps.a.output"))),
        snap(a=state(Phase.SKIPPED)),
        RejectReason.INPUT_STATE_INVALID,
        "b",
    ),
    Rejection(
        "input state invalid: an active composite without its saved decision",
        FULL,
        snap({"n": 0}, a=A_DONE, b=active()),
        RejectReason.INPUT_STATE_INVALID,
        "b",
    ),
    Rejection(
        "input state invalid: a saved decision naming a block the step does not have",
        FULL,
        snap({"n": 0}, a=A_DONE, b=active({"case": 9}, "case9")),
        RejectReason.INPUT_STATE_INVALID,
        "b",
    ),
    Rejection(
        "input state invalid: a branch decision entering two cases",
        FULL,
        snap({"n": 0}, a=A_DONE, b=active({"case": 0}, "case0", "case1")),
        RejectReason.INPUT_STATE_INVALID,
        "b",
    ),
    Rejection(
        "input state invalid: the root recorded as anything but SUCCEEDED",
        FULL,
        snap({"n": 0}, **{ROOT: state(Phase.FAILED)}),
        RejectReason.INPUT_STATE_INVALID,
        ROOT,
    ),
    Rejection(
        "unreachable: a step id the definition does not have",
        FULL,
        snap({"n": 0}, ghost=active()),
        RejectReason.UNREACHABLE_EXECUTION,
        "ghost",
    ),
    Rejection(
        "unreachable: recorded after an unfinished predecessor",
        FULL,
        snap({"n": 0}, a=active(), b=active({"case": 1}, "case1")),
        RejectReason.UNREACHABLE_EXECUTION,
        "b",
    ),
    Rejection(
        "unreachable: running in an unselected case",
        FULL,
        snap({"n": 0}, a=A_DONE, b=active({"case": 1}, "case1"), big1=active()),
        RejectReason.UNREACHABLE_EXECUTION,
        "big1",
    ),
    Rejection(
        "unreachable: a child of a never-activated composite",
        FULL,
        snap({"n": 0}, a=A_DONE, p1=active()),
        RejectReason.UNREACHABLE_EXECUTION,
        "p1",
    ),
    Rejection(
        "unsettled child: a SUCCEEDED parallel with a branch still active",
        FULL,
        snap({"n": 0}, a=A_DONE, **B_STEPS, p=done(P_OUT, None, "one", "two"), p1=active()),
        RejectReason.UNSETTLED_CHILD,
        "p1",
    ),
    Rejection(
        "unsettled child: a SUCCEEDED branch whose unselected case is not skipped",
        FULL,
        snap({"n": 0}, a=A_DONE, **without(B_STEPS, "big2")),
        RejectReason.UNSETTLED_CHILD,
        "big2",
    ),
    Rejection(
        "forged output: a parallel's saved output differs from its branches'",
        FULL,
        snap(
            {"n": 0},
            a=A_DONE,
            **B_STEPS,
            p=done({"one": "forged", "two": None}, None, "one", "two"),
            p1=ok(out("p1")),
            p2=ok(out("p2", out("a", {"n": 0}))),
        ),
        RejectReason.FORGED_OUTPUT,
        "p",
    ),
    Rejection(
        "forged output: the root's saved output differs from the last step's",
        program(job("a")),
        snap(a=ok(1), **{ROOT: ok(2)}),
        RejectReason.FORGED_OUTPUT,
        ROOT,
    ),
    Rejection(
        "value too large: a resolved task input",
        program(job("a"), job("b", ref("steps.a.output")), limits=SMALL),
        snap(a=ok("x" * 100)),
        RejectReason.VALUE_TOO_LARGE,
        "b",
    ),
    Rejection(
        "value too large: a combined output",
        program(fork("f", l=[job("l1")], r=[job("r1")]), limits=SMALL),
        snap(f=active(None, "l", "r"), l1=ok("x" * 40), r1=ok("y" * 40)),
        RejectReason.VALUE_TOO_LARGE,
        "f",
    ),
]

@pytest.mark.parametrize("case", REJECTIONS, ids=lambda r: r.name)
@pytest.mark.parametrize("limit", [1, 32])
def test_rejection(case: Rejection, limit: int) -> None:
    with pytest.raises(PlanRejectedError) as caught:
        case.program.plan(case.snapshot, limit)
    assert caught.value.reason is case.reason
    assert caught.value.step_id == case.step_id
    assert caught.value.code == "plan_rejected"
    assert caught.value.details["reason"] == case.reason.value


def test_rejection_is_found_even_after_the_budget_is_spent() -> None:
    # The first decision spends the budget; the forged output sits later in the tree.
    prog = program(fork("f", l=[job("l1")], r=[job("r1")]), fork("g", m=[job("m1")]))
    forged = snap(l1=ok(1), r1=ok(2), f=done({"l": 1, "r": 3}, None, "l", "r"))
    with pytest.raises(PlanRejectedError) as caught:
        prog.plan(forged, limit=1)
    assert caught.value.reason is RejectReason.FORGED_OUTPUT


# --- a kind that breaks its block policy -------------------------------------------------


class _Broken(BaseModel):
    pass


class LeafEntersBlocks(NodeKind):
    kind = "leafy"
    config_model = _Broken

    def activate(self, config: BaseModel, scope: Scope) -> Command:
        return EnterBlocks(("nothing",))


class ForkReturnsTask(NodeKind):
    kind = "forky"
    config_model = _Broken
    block_policy = "all"

    def activate(self, config: BaseModel, scope: Scope) -> Command:
        return TaskCommand("q", "h", "1", True, {})


@hookimpl
def weave_register_node_kinds() -> list[type[NodeKind]]:
    return [LeafEntersBlocks, ForkReturnsTask]


@pytest.mark.parametrize("kind", ["leafy", "forky"])
def test_a_command_against_the_block_policy_is_rejected(kind: str) -> None:
    plugins = [("test-kinds", kinds_module), ("broken", sys.modules[__name__])]
    host = PluginHost.from_plugins(plugins)
    prog = compile(definition({"id": "s", "kind": kind}), host)
    with pytest.raises(PlanRejectedError) as caught:
        prog.plan(snap())
    assert caught.value.reason is RejectReason.INVALID_COMMAND


def test_interpret_delegates_to_the_kind_and_refuses_composites() -> None:
    from weave_core.plugins.nodespec import Fact, FactKind, StepOutcome

    result = FULL.interpret("a", Fact(FactKind.TASK_SUCCEEDED, {"v": 1}))
    assert result.outcome is StepOutcome.SUCCEEDED and result.output == {"v": 1}
    for step_id in ("b", "ghost", ROOT):
        with pytest.raises(PlanRejectedError) as caught:
            FULL.interpret(step_id, Fact(FactKind.TASK_SUCCEEDED))
        assert caught.value.reason is RejectReason.UNREACHABLE_EXECUTION


def test_kinds_receive_their_validated_config() -> None:
    assert isinstance(FULL.config("a"), JobConfig)


def test_a_kind_that_cannot_interpret_sends_its_step_to_review() -> None:
    # The one guard for every part of the runtime that delivers facts (consumer, timers,
    # signals, polls): a plugin defect is never a silent success.
    from weave_core.plugins.nodespec import Fact, FactKind, StepOutcome

    plugins = [("test-kinds", kinds_module), ("broken", sys.modules[__name__])]
    prog = compile(definition({"id": "s", "kind": "leafy"}), PluginHost.from_plugins(plugins))
    result = prog.interpret("s", Fact(FactKind.TIMER))
    assert (result.outcome, result.reason) == (StepOutcome.NEEDS_REVIEW, "kind_cannot_interpret")
