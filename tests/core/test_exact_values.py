"""Exact values through the decision core (R-2.4): no number ever passes through float."""

from __future__ import annotations

from decimal import Decimal

import pytest

from tests.core.planning_kinds import choose, fork, job, program, ref, snap
from weave_core.definitions.expressions import compare, json_equal
from weave_core.foundation.exactjson import JSON, dumps, loads
from weave_core.foundation.limits import Limits
from weave_core.planning.plan import DecisionKind, PlanRejectedError, RejectReason
from weave_core.planning.snapshot import Entered, Phase, Snapshot, StepState
from weave_core.plugins.nodespec import TaskCommand


def chosen_case(condition: JSON, input: JSON) -> int:
    prog = program(choose("b", (condition, [job("yes")]), (None, [job("no")])))
    (decision,) = prog.plan(snap(input), limit=1).decisions
    assert decision.command is not None
    return int(decision.command.decision["case"])  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("text", "holds"),
    [
        ('{"eq": [{"$ref": "input.a"}, 1.1]}', True),  # input.a is 1.10
        ('{"ne": [{"$ref": "input.a"}, 1.1]}', False),
        ('{"gt": [{"$ref": "input.big"}, 9007199254740992]}', True),  # 9007199254740993
        ('{"eq": [{"$ref": "input.big"}, 9007199254740992]}', False),
        ('{"gt": [{"$ref": "input.tiny"}, 0]}', True),  # 1e-400
        ('{"eq": [{"$ref": "input.tiny"}, 0]}', False),
        ('{"lt": [{"$ref": "input.long"}, 0.30000000000000000000000000000000000001]}', True),
        ('{"in": [{"$ref": "input.a"}, [1, 1.100, 2]]}', True),
        ('{"eq": [{"$ref": "input.one"}, true]}', False),  # 1 is not true
    ],
)
def test_conditions_compare_exact_rationals(text: str, holds: bool) -> None:
    document_input = loads(
        '{"a": 1.10, "big": 9007199254740993, "tiny": 1e-400, "one": 1,'
        ' "long": 0.3000000000000000000000000000000000000099}'
    )
    assert chosen_case(loads(text), document_input) == (0 if holds else 1)


def test_the_three_named_cases_hold_in_the_expression_layer() -> None:
    assert json_equal(Decimal("1.10"), Decimal("1.1"))
    assert compare(9007199254740993, 9007199254740992) == 1
    assert compare(Decimal("1e-400"), 0) == 1


LONG = Decimal("3.141592653589793238462643383279502884197169399375105820974944592307816")
HUGE = 2**200 + 1


def test_long_decimals_and_huge_integers_reach_the_task_input_unchanged() -> None:
    raw = '{"pi": 3.141592653589793238462643383279502884197169399375105820974944592307816,' \
          ' "huge": 1606938044258990275541962092341162602522202993782792835301377,' \
          ' "tiny": 1e-400, "spelled": 1.10}'
    value = loads(raw)
    prog = program(
        job("a", {"pi": ref("input.pi"), "list": [ref("input.huge"), ref("input.tiny")],
                  "nested": {"s": ref("input.spelled")}}),
        job("b", ref("steps.a.output")),
    )
    (decision,) = prog.plan(snap(value)).decisions
    command = decision.command
    assert isinstance(command, TaskCommand)
    assert command.input["pi"] == LONG and isinstance(command.input["pi"], Decimal)
    assert command.input["list"][0] == HUGE and isinstance(command.input["list"][0], int)
    assert command.input["list"][1] == Decimal("1e-400")
    assert dumps(command.input["nested"]) == '{"s":1.1}'
    # A saved output flows on to the next step exactly, through a JSON round trip too.
    saved = Snapshot.from_json(loads(dumps(
        snap(value, a=StepState(Phase.SUCCEEDED, command.input)).to_json()
    )))
    (next_decision,) = prog.plan(saved).decisions
    assert isinstance(next_decision.command, TaskCommand)
    assert next_decision.command.input["pi"] == LONG
    assert next_decision.command.input["list"][0] == HUGE


def test_a_parallel_output_keeps_exact_numbers() -> None:
    prog = program(fork("f", l=[job("l1")], r=[job("r1")]))
    steps = {
        "f": StepState(Phase.ACTIVE, entered=Entered(None, ("l", "r"))),
        "l1": StepState(Phase.SUCCEEDED, LONG),
        "r1": StepState(Phase.SUCCEEDED, HUGE),
    }
    complete, _root = prog.plan(snap(**steps)).decisions
    assert complete.kind is DecisionKind.COMPLETE
    assert complete.output == {"l": LONG, "r": HUGE}


def test_constructed_values_have_a_size_limit_with_a_clear_error() -> None:
    prog = program(job("a", {"copy": ref("input.blob")}), limits=Limits(max_value_bytes=100))
    with pytest.raises(PlanRejectedError) as caught:
        prog.plan(snap({"blob": "x" * 200}))
    assert caught.value.reason is RejectReason.VALUE_TOO_LARGE
    assert "exceeds the limit of 100 bytes" in caught.value.message
    assert caught.value.details["reason"] == "value_too_large"
