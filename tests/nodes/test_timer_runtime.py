"""The ``timer`` kind at run time: a durable wait command; the output is null."""

from __future__ import annotations

from tests.nodes.runtime_support import first_command, program
from weave_core.plugins.nodespec import Fact, FactKind, StepOutcome, StepResult, TimerCommand

TIMER = {"id": "w", "kind": "timer", "seconds": 90}


def test_activate_returns_a_durable_wait() -> None:
    assert first_command(program(TIMER)) == TimerCommand(seconds=90)


def test_the_timer_fact_succeeds_with_null_and_anything_else_is_review() -> None:
    prog = program(TIMER)
    assert prog.interpret("w", Fact(FactKind.TIMER)) == StepResult(StepOutcome.SUCCEEDED)
    other = prog.interpret("w", Fact(FactKind.SIGNAL, {}))
    assert (other.outcome, other.reason) == (StepOutcome.NEEDS_REVIEW, "unexpected_fact")
