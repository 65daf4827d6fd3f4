"""The ``signal`` kind at run time: a frozen, non-empty correlation key; payload as output."""

from __future__ import annotations

from typing import Any

import pytest

from tests.nodes.runtime_support import first_command, program, ref
from weave_core.planning.plan import PlanRejectedError, RejectReason
from weave_core.plugins.nodespec import Fact, FactKind, StepOutcome, WaitSignalCommand


def signal(key: Any, **fields: Any) -> dict[str, Any]:
    return {"id": "s", "kind": "signal", "name": "approval", "correlation_key": key, **fields}


def test_activate_freezes_the_resolved_key_name_and_parameter_version() -> None:
    prog = program(signal(ref("input.job"), param_version="2", timeout_seconds=3600))
    assert first_command(prog, {"job": "job-7"}) == WaitSignalCommand(
        name="approval", correlation_key="job-7", param_version="2", timeout_seconds=3600
    )


def test_a_literal_key_and_the_default_parameter_version() -> None:
    command = first_command(program(signal("fixed")))
    assert command == WaitSignalCommand("approval", "fixed", "1", None)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("", RejectReason.EMPTY_CORRELATION_KEY),
        (7, RejectReason.TYPE_MISMATCH),
        (None, RejectReason.TYPE_MISMATCH),
        ("k" * 257, RejectReason.TYPE_MISMATCH),
    ],
)
def test_a_key_that_is_empty_or_not_a_string_rejects_the_plan(
    value: Any, reason: RejectReason
) -> None:
    with pytest.raises(PlanRejectedError) as caught:
        first_command(program(signal(ref("input.job"))), {"job": value})
    assert caught.value.reason is reason
    assert caught.value.step_id == "s"


@pytest.mark.parametrize(
    ("fact", "outcome", "reason"),
    [
        (Fact(FactKind.SIGNAL, {"approved": True}), StepOutcome.SUCCEEDED, None),
        (Fact(FactKind.TIMEOUT), StepOutcome.FAILED, "signal_timed_out"),
        (Fact(FactKind.TASK_SUCCEEDED, {}), StepOutcome.NEEDS_REVIEW, "unexpected_fact"),
    ],
)
def test_interpret(fact: Fact, outcome: StepOutcome, reason: str | None) -> None:
    result = program(signal("k")).interpret("s", fact)
    assert (result.outcome, result.reason) == (outcome, reason)
    if outcome is StepOutcome.SUCCEEDED:
        assert result.output == {"approved": True}
