"""The ``parallel`` kind at run time: every branch entered; output keyed by branch name."""

from __future__ import annotations

from tests.nodes.runtime_support import program, ref, task
from weave_core.planning.plan import DecisionKind
from weave_core.planning.program import Program
from weave_core.planning.snapshot import Entered, Phase, Snapshot, StepState
from weave_core.plugins.nodespec import EnterBlocks


def prepare() -> Program:
    return program(
        task("first"),
        {
            "id": "prepare",
            "kind": "parallel",
            "branches": {
                "quote": [task("quote", input={"seen": ref("steps.first.output")})],
                "docs": [task("fetch"), task("sign")],
            },
        },
        task("submit", input={"all": ref("steps.prepare.output"), "q": ref("steps.quote.output")}),
    )


ENTERED = StepState(Phase.ACTIVE, entered=Entered(None, ("docs", "quote")))


def test_activate_enters_every_branch_and_each_sees_data_from_before() -> None:
    plan = prepare().plan(Snapshot({}, {"first": StepState(Phase.SUCCEEDED, "f")}))
    brief = [(d.kind.value, d.step_id) for d in plan.decisions]
    assert brief == [("ACTIVATE", "prepare"), ("ACTIVATE", "fetch"), ("ACTIVATE", "quote")]
    assert plan.decisions[0].command == EnterBlocks(("docs", "quote"))
    assert plan.decisions[2].command.input == {"seen": "f"}  # type: ignore[union-attr]


def test_no_output_until_every_branch_succeeded() -> None:
    steps = {
        "first": StepState(Phase.SUCCEEDED, "f"),
        "prepare": ENTERED,
        "quote": StepState(Phase.SUCCEEDED, 10),
        "fetch": StepState(Phase.SUCCEEDED, "d"),
        "sign": StepState(Phase.ACTIVE),
    }
    assert prepare().plan(Snapshot({}, steps)).decisions == ()
    steps["sign"] = StepState(Phase.FAILED)
    assert prepare().plan(Snapshot({}, steps)).decisions == ()


def test_the_join_is_keyed_by_branch_name_and_read_by_name_later() -> None:
    steps = {
        "first": StepState(Phase.SUCCEEDED, "f"),
        "prepare": ENTERED,
        "quote": StepState(Phase.SUCCEEDED, 10),
        "fetch": StepState(Phase.SUCCEEDED, "d"),
        "sign": StepState(Phase.SUCCEEDED, "s"),
    }
    complete, submit = prepare().plan(Snapshot({}, steps)).decisions
    assert complete.kind is DecisionKind.COMPLETE
    assert complete.output == {"docs": "s", "quote": 10}
    assert submit.command.input == {"all": {"docs": "s", "quote": 10}, "q": 10}  # type: ignore[union-attr]
