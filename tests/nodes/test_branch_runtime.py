"""The ``branch`` kind at run time: one case chosen once, saved, reused; the rest skipped."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from tests.nodes.runtime_support import program, ref, task
from weave_core.foundation.exactjson import JSON
from weave_core.planning.plan import DecisionKind, PlanRejectedError, RejectReason
from weave_core.planning.program import Program
from weave_core.planning.snapshot import Entered, Phase, Snapshot, StepState
from weave_core.plugins.nodespec import EnterBlocks


def route() -> Program:
    return program(
        {
            "id": "route",
            "kind": "branch",
            "cases": [
                {"when": {"gt": [ref("input.amount"), 1000]}, "steps": [task("big")]},
                {"when": {"eq": [ref("input.amount"), Decimal("1.1")]}, "steps": [task("exact")]},
                {"default": True, "steps": [task("small1"), task("small2")]},
            ],
        },
        task("after", input={"r": ref("steps.route.output")}),
    )


@pytest.mark.parametrize(
    ("amount", "case"),
    [
        (1001, 0),
        (Decimal("1000.0000000000000000000001"), 0),
        (1000, 2),
        (Decimal("1.10"), 1),
        (Decimal("1.1000000000000000000000001"), 2),
        (0, 2),
    ],
)
def test_activate_chooses_the_first_case_that_holds(amount: JSON, case: int) -> None:
    plan = route().plan(Snapshot({"amount": amount}), limit=1)
    assert plan.decisions[0].command == EnterBlocks((f"case{case}",), {"case": case})


def test_the_saved_case_is_reused_and_the_others_are_skipped() -> None:
    entered = StepState(Phase.ACTIVE, entered=Entered({"case": 2}, ("case2",)))
    plan = route().plan(Snapshot({"amount": 5000}, {"route": entered}))
    assert [(d.kind.value, d.step_id) for d in plan.decisions] == [
        ("ACTIVATE", "small1"),
        ("SKIP", "big"),
        ("SKIP", "exact"),
    ]


def test_combine_gives_the_chosen_case_output_to_later_steps() -> None:
    steps = {
        "route": StepState(Phase.ACTIVE, entered=Entered({"case": 2}, ("case2",))),
        "big": StepState(Phase.SKIPPED),
        "exact": StepState(Phase.SKIPPED),
        "small1": StepState(Phase.SUCCEEDED, 1),
        "small2": StepState(Phase.SUCCEEDED, {"last": Decimal("2.50")}),
    }
    plan = route().plan(Snapshot({"amount": 5}, steps))
    complete, activate = plan.decisions
    assert complete.kind is DecisionKind.COMPLETE and complete.output == {"last": Decimal("2.50")}
    assert activate.command is not None
    assert activate.command.input == {"r": {"last": Decimal("2.50")}}  # type: ignore[union-attr]


@pytest.mark.parametrize("decision", [{"case": 0}, {"case": "2"}, None, {"case": True}])
def test_a_saved_decision_that_does_not_match_the_entered_case_is_refused(decision: Any) -> None:
    steps = {
        "route": StepState(Phase.ACTIVE, entered=Entered(decision, ("case2",))),
        "big": StepState(Phase.SKIPPED),
        "exact": StepState(Phase.SKIPPED),
        "small1": StepState(Phase.SUCCEEDED, 1),
        "small2": StepState(Phase.SUCCEEDED, 2),
    }
    with pytest.raises(PlanRejectedError) as caught:
        route().plan(Snapshot({"amount": 5}, steps))
    assert caught.value.reason is RejectReason.INPUT_STATE_INVALID


def test_comparing_a_string_with_a_number_rejects_the_plan() -> None:
    with pytest.raises(PlanRejectedError) as caught:
        route().plan(Snapshot({"amount": "lots"}))
    assert caught.value.reason is RejectReason.TYPE_MISMATCH
