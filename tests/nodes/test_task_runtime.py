"""The ``task`` kind at run time: the task to persist, and what its results mean."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from tests.nodes.runtime_support import first_command, program, ref, task
from weave_core.foundation.limits import Limits
from weave_core.planning.plan import PlanRejectedError, RejectReason
from weave_core.plugins.nodespec import (
    Fact,
    FactKind,
    RetryPolicy,
    StepOutcome,
    TaskCommand,
    Timeouts,
)

INPUT = {"order": "o-1", "amount": Decimal("12.50"), "big": 2**80, "tiny": Decimal("1E-400")}


def test_activate_returns_the_task_parameters_with_exact_input() -> None:
    prog = program(
        task(
            "t",
            handler={"name": "charge", "version": "3", "idempotent": False},
            input={"amount": ref("input.amount"), "all": [ref("input.big"), ref("input.tiny")]},
            retry={"max_attempts": 5, "backoff_seconds": Decimal("0.5")},
            timeouts={"start_to_close": 30, "heartbeat": 5},
            trace_key=ref("input.order"),
            resource_key="ledger",
        )
    )
    command = first_command(prog, INPUT)
    assert command == TaskCommand(
        queue="jobs",
        handler="charge",
        handler_version="3",
        idempotent=False,
        input={"amount": Decimal("12.50"), "all": [2**80, Decimal("1E-400")]},
        retry=RetryPolicy(5, Decimal("0.5"), Decimal(2), Decimal(300)),
        timeouts=Timeouts(start_to_close=30, heartbeat=5),
        trace_key="o-1",
        resource_key="ledger",
    )
    assert isinstance(command.input["all"][0], int)  # never through float


def test_an_input_over_max_value_bytes_rejects_the_plan() -> None:
    prog = program(task("t", input=ref("input.blob")), limits=Limits(max_value_bytes=50))
    with pytest.raises(PlanRejectedError) as caught:
        first_command(prog, {"blob": "x" * 100})
    assert caught.value.reason is RejectReason.VALUE_TOO_LARGE


@pytest.mark.parametrize("key", [ref("input.n"), ref("input.empty")])
def test_a_trace_key_must_resolve_to_a_non_empty_string(key: Any) -> None:
    prog = program(task("t", trace_key=key))
    with pytest.raises(PlanRejectedError) as caught:
        first_command(prog, {"n": 5, "empty": ""})
    assert caught.value.reason is RejectReason.TYPE_MISMATCH


SCHEMA = {
    "type": "object",
    "required": ["ok", "count", "price"],
    "properties": {
        "ok": {"type": "boolean"},
        "count": {"type": "integer"},
        "price": {"type": "number", "exclusiveMinimum": 0},
    },
}


@pytest.mark.parametrize(
    ("fact", "outcome", "reason"),
    [
        (Fact(FactKind.TASK_SUCCEEDED, {"ok": True, "count": 2, "price": Decimal("0.1")}),
         StepOutcome.SUCCEEDED, None),
        (Fact(FactKind.TASK_SUCCEEDED, {"ok": True, "count": Decimal("2.0"),
                                        "price": Decimal("1E-400")}),
         StepOutcome.SUCCEEDED, None),
        (Fact(FactKind.TASK_SUCCEEDED, {"ok": True, "count": Decimal("2.5"), "price": 1}),
         StepOutcome.NEEDS_REVIEW, "output_contract_violated"),
        (Fact(FactKind.TASK_SUCCEEDED, {"ok": 1, "count": 2, "price": 1}),
         StepOutcome.NEEDS_REVIEW, "output_contract_violated"),
        (Fact(FactKind.TASK_SUCCEEDED, {"ok": True, "count": True, "price": 1}),
         StepOutcome.NEEDS_REVIEW, "output_contract_violated"),
        (Fact(FactKind.TASK_SUCCEEDED, "not an object"),
         StepOutcome.NEEDS_REVIEW, "output_contract_violated"),
        (Fact(FactKind.TASK_FAILED, {"error": "declined"}), StepOutcome.FAILED, "task_failed"),
        (Fact(FactKind.TASK_FAILED, None, effect_unknown=True),
         StepOutcome.NEEDS_REVIEW, "effect_unknown"),
        (Fact(FactKind.TASK_NEEDS_REVIEW), StepOutcome.NEEDS_REVIEW, "task_needs_review"),
        (Fact(FactKind.TASK_CANCELLED), StepOutcome.CANCELLED, "task_cancelled"),
        (Fact(FactKind.SIGNAL, {}), StepOutcome.NEEDS_REVIEW, "unexpected_fact"),
    ],
)
def test_interpret(fact: Fact, outcome: StepOutcome, reason: str | None) -> None:
    prog = program(task("t", output_schema=SCHEMA))
    result = prog.interpret("t", fact)
    assert (result.outcome, result.reason) == (outcome, reason)
    if outcome is StepOutcome.SUCCEEDED:
        assert result.output == fact.payload


def test_without_an_output_schema_any_result_succeeds() -> None:
    result = program(task("t")).interpret("t", Fact(FactKind.TASK_SUCCEEDED, [1, "two", None]))
    assert result.outcome is StepOutcome.SUCCEEDED and result.output == [1, "two", None]
