"""The ``poll`` kind at run time: the fixed query, the receipt, and result classification."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from tests.nodes.runtime_support import HANDLER, first_command, program, ref
from weave_core.foundation.exactjson import JSON
from weave_core.planning.plan import PlanRejectedError, RejectReason
from weave_core.plugins.nodespec import (
    Fact,
    FactKind,
    PollCommand,
    RetryPolicy,
    StepOutcome,
    TaskCommand,
    WaitSignalCommand,
)
from weave_nodes.poll import PollClassificationError, PollConfig, PollStatus, classify_poll

CLASSIFY = {
    "field": "status",
    "pending": ["QUEUED", "RUNNING", 102],
    "succeeded": ["DONE", 200],
    "failed": ["REJECTED"],
    "needs_review": ["DISPUTED"],
}


def poll(**fields: Any) -> dict[str, Any]:
    return {
        "id": "p",
        "kind": "poll",
        "queue": "jobs",
        "handler": HANDLER,
        "input": {"job_id": ref("input.job")},
        "max_rounds": 20,
        "interval_seconds": 30,
        "deadline_seconds": 3600,
        "attempts_per_round": 3,
        "classify": CLASSIFY,
        **fields,
    }


def test_activate_resolves_the_fixed_query_and_freezes_the_receipt_key() -> None:
    prog = program(poll(receipt={"name": "receipt", "correlation_key": ref("input.job")}))
    assert first_command(prog, {"job": "j-1"}) == PollCommand(
        task=TaskCommand(
            "jobs", "h", "1", True, {"job_id": "j-1"}, retry=RetryPolicy(max_attempts=3)
        ),
        max_rounds=20,
        interval_seconds=30,
        deadline_seconds=3600,
        receipt=WaitSignalCommand("receipt", "j-1", "1", None),
    )


def test_an_empty_receipt_key_rejects_the_plan() -> None:
    prog = program(poll(receipt={"name": "receipt", "correlation_key": ref("input.job")}))
    with pytest.raises(PlanRejectedError) as caught:
        first_command(prog, {"job": ""})
    assert caught.value.reason is RejectReason.EMPTY_CORRELATION_KEY


CONFIG = PollConfig.model_validate({k: v for k, v in poll().items() if k not in ("id", "kind")})


@pytest.mark.parametrize(
    ("result", "status"),
    [
        ({"status": "RUNNING"}, PollStatus.PENDING),
        ({"status": 102}, PollStatus.PENDING),
        ({"status": "DONE", "extra": [1]}, PollStatus.SUCCEEDED),
        ({"status": 200}, PollStatus.SUCCEEDED),
        ({"status": "REJECTED"}, PollStatus.FAILED),
        ({"status": "DISPUTED"}, PollStatus.NEEDS_REVIEW),
    ],
)
def test_classify_poll(result: JSON, status: PollStatus) -> None:
    assert classify_poll(CONFIG, result) is status


@pytest.mark.parametrize(
    "result",
    [
        {"status": "UNKNOWN"},  # unknown value
        {"status": "done"},  # case matters
        {"status": "200"},  # a string is not the integer 200
        {"status": Decimal("200")},  # a decimal is not an integer status
        {"status": True},  # a boolean is not a status
        {"status": None},
        {"status": ["DONE"]},
        {"state": "DONE"},  # no such field
        ["DONE"],  # not an object
        "DONE",
        None,
    ],
)
def test_classify_poll_refuses_unknown_values_and_wrong_types(result: JSON) -> None:
    with pytest.raises(PollClassificationError) as caught:
        classify_poll(CONFIG, result)
    assert caught.value.code == "poll_result_unclassified"


@pytest.mark.parametrize(
    ("fact", "outcome", "reason"),
    [
        (Fact(FactKind.TASK_SUCCEEDED, {"status": "DONE"}), StepOutcome.SUCCEEDED, None),
        (Fact(FactKind.TASK_SUCCEEDED, {"status": "REJECTED"}),
         StepOutcome.FAILED, "poll_result_failed"),
        (Fact(FactKind.TASK_SUCCEEDED, {"status": "DISPUTED"}),
         StepOutcome.NEEDS_REVIEW, "poll_result_needs_review"),
        (Fact(FactKind.TASK_SUCCEEDED, {"status": "???"}),
         StepOutcome.NEEDS_REVIEW, "poll_result_unclassified"),
        (Fact(FactKind.TASK_SUCCEEDED, {"status": True}),
         StepOutcome.NEEDS_REVIEW, "poll_result_unclassified"),
        (Fact(FactKind.TASK_FAILED), StepOutcome.NEEDS_REVIEW, "poll_round_failed"),
        (Fact(FactKind.TASK_FAILED, effect_unknown=True), StepOutcome.NEEDS_REVIEW,
         "effect_unknown"),
        (Fact(FactKind.TASK_CANCELLED), StepOutcome.CANCELLED, "task_cancelled"),
        (Fact(FactKind.TIMEOUT), StepOutcome.NEEDS_REVIEW, "poll_exhausted"),
        (Fact(FactKind.SIGNAL, {"status": "DONE"}, source="receipt"), StepOutcome.SUCCEEDED, None),
        (Fact(FactKind.SIGNAL, {"status": "DONE"}), StepOutcome.NEEDS_REVIEW, "unexpected_fact"),
    ],
)
def test_interpret(fact: Fact, outcome: StepOutcome, reason: str | None) -> None:
    result = program(poll()).interpret("p", fact)
    assert (result.outcome, result.reason) == (outcome, reason)
    if outcome is StepOutcome.SUCCEEDED:
        assert result.output == fact.payload


def test_pending_continues_after_the_interval_and_is_never_success() -> None:
    result = program(poll()).interpret("p", Fact(FactKind.TASK_SUCCEEDED, {"status": "QUEUED"}))
    assert result.outcome is StepOutcome.CONTINUE
    assert result.wake_after_seconds == 30
    assert result.output is None
