"""Which signals an instance can ever consume: its pinned definition's declarations.

A signal is declared by a ``signal`` step (``name``, ``param_version``) or by a poll step's
``receipt`` (same two fields), anywhere in the step tree. A signal no declaration names
could only sit in the instance's backlog until it expires, so it is refused before
anything is stored (422 ``signal_not_declared``): junk cannot fill the backlog.

:func:`start_problems` checks, at start, the waits a program declares against the instance
deadline and the engine's poll limits (R-7.7).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Connection

from weave_core.engine import Engine
from weave_core.foundation.errors import Problem, ValidationError
from weave_core.foundation.limits import Limits
from weave_core.planning.program import Program
from weave_core.runtime.programs import programs


class SignalNotDeclaredError(ValidationError):
    """No ``signal`` step or poll ``receipt`` of the pinned version declares this signal."""

    code = "signal_not_declared"


def declared_signals(program: Program) -> frozenset[tuple[str, str]]:
    """The (name, param_version) pairs the program's signal steps and receipts declare."""
    found: set[tuple[str, str]] = set()
    for step_id in program.step_ids():
        config: Any = program.config_read_only(step_id)
        if program.kind_of(step_id) == "signal":
            found.add((str(config.name), str(config.param_version)))
        receipt = getattr(config, "receipt", None)
        if receipt is not None:
            found.add((str(receipt.name), str(receipt.param_version)))
    return frozenset(found)


def require_declared_txn(conn: Connection, engine: Engine, inst: Any, name: str,
                         param_version: str) -> None:
    """Refuse a signal the instance's pinned version does not declare (a plain read of
    the definition, and of its frozen configuration, on a program-cache miss; no lock)."""
    cache = programs(engine)
    # the instance's own program: its pinned version under the configuration frozen at
    # its start (a limit lowered since never makes its declared signals unreadable)
    program = (cache.for_instance(conn, inst) if getattr(inst, "config_hash", None)
               else cache.get(conn, inst.namespace, inst.definition_id, inst.version))
    declared = declared_signals(program)
    if (name, param_version) in declared:
        return
    names = sorted({f"{n}@{v}" for n, v in declared})
    raise SignalNotDeclaredError(
        f"no signal step or poll receipt of {inst.definition_id!r} version "
        f"{inst.version!r} declares signal {name!r} (param_version {param_version!r})",
        [Problem("$.name", "signal_not_declared",
                 "declared: " + (", ".join(names) if names else "none"))])



def start_problems(program: Program, deadline_seconds: int, limits: Limits) -> list[Problem]:
    """R-7.7 at start: waits that could never end before the instance deadline, and poll
    budgets above the engine's current limits (publish checked the limits of its day)."""
    problems: list[Problem] = []
    for step_id in program.step_ids():
        kind = program.kind_of(step_id)
        config = program.config_read_only(step_id)
        where = f"$.steps.{step_id}"
        spans: list[tuple[str, int | None]] = []
        if kind == "timer":
            spans.append(("seconds", getattr(config, "seconds", None)))
        elif kind == "signal":
            spans.append(("timeout_seconds", getattr(config, "timeout_seconds", None)))
        elif kind == "poll":
            spans.append(("deadline_seconds", getattr(config, "deadline_seconds", None)))
            rounds = int(getattr(config, "max_rounds", 0))
            attempts = int(getattr(config, "attempts_per_round", 1))
            total = rounds * attempts
            if rounds > limits.max_poll_rounds or total > limits.max_poll_attempts_total:
                problems.append(Problem(
                    where, "poll_budget_too_large",
                    f"max_rounds {rounds} x attempts_per_round {attempts} is above the "
                    f"engine's max_poll_rounds ({limits.max_poll_rounds}) or "
                    f"max_poll_attempts_total ({limits.max_poll_attempts_total})"))
            if attempts > limits.max_task_attempts:
                problems.append(Problem(where + ".attempts_per_round", "poll_budget_too_large",
                                        f"above max_task_attempts ({limits.max_task_attempts})"))
        for name, seconds in spans:
            if seconds is not None and int(seconds) > deadline_seconds:
                problems.append(Problem(
                    f"{where}.{name}", "wait_exceeds_deadline",
                    f"{name} is {seconds}; the instance deadline is {deadline_seconds} s"))
    return problems

__all__ = [
    "SignalNotDeclaredError",
    "declared_signals",
    "require_declared_txn",
    "start_problems",
]
