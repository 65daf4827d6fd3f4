"""What the decision core returns: decisions, the plan, and the whole-plan rejection.

A plan is at most ``limit`` decisions (1 to 32, R-6.3/R-6.4) and a ``more`` flag saying the
budget ran out before everything that could be decided was. It is either whole or refused
with ``PlanRejectedError``; the kernel never applies part of a plan.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from typing import Any, ClassVar

from weave_core.foundation.errors import WeaveError
from weave_core.foundation.exactjson import JSON
from weave_core.plugins.nodespec import Command

MAX_PLAN_LIMIT = 32
"""The largest budget one plan may be given (R-6.4: structural changes per advance)."""


class RejectReason(StrEnum):
    """Why a whole plan was refused; the values are stable codes (stored in audit)."""

    TYPE_MISMATCH = "type_mismatch"
    """A referenced value lacks the shape or type the definition promised."""
    INPUT_STATE_INVALID = "input_state_invalid"
    """A step read as input is not SUCCEEDED (unknown, failed, still active, not visible),
    or a recorded state is malformed (a composite without its saved decision)."""
    UNREACHABLE_EXECUTION = "unreachable_execution"
    """A step is recorded where it cannot be: after an unfinished predecessor, inside an
    unselected or unentered block, under a never-activated composite, or unknown."""
    UNSETTLED_CHILD = "unsettled_child"
    """A SUCCEEDED composite has a child that is not SUCCEEDED or SKIPPED."""
    FORGED_OUTPUT = "forged_output"
    """A SUCCEEDED composite's saved output differs from combining its children's."""
    VALUE_TOO_LARGE = "value_too_large"
    """A resolved input or combined output exceeds ``max_value_bytes``."""
    EMPTY_CORRELATION_KEY = "empty_correlation_key"
    """A signal or receipt correlation key resolved to an empty string."""
    NO_CASE_MATCHED = "no_case_matched"
    """No branch case holds and there is no default (publish checks make this rare)."""
    INVALID_COMMAND = "invalid_command"
    """A kind returned a command its block policy does not allow (a plugin bug)."""


class PlanRejectedError(WeaveError):
    """The snapshot cannot be planned from; nothing of it may be applied.

    ``reason`` is a :class:`RejectReason` value; ``step_id`` names the step where the
    problem was found (``None`` when not tied to one).
    """

    code: ClassVar[str] = "plan_rejected"

    def __init__(
        self,
        reason: RejectReason,
        message: str,
        *,
        step_id: str | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        merged = {"reason": reason.value, "step_id": step_id, **(details or {})}
        super().__init__(message, details=merged)
        self.reason = reason
        self.step_id = step_id


class DecisionKind(StrEnum):
    ACTIVATE = "ACTIVATE"
    """Activate the step with ``command`` (task/wait parameters or blocks to enter)."""
    COMPLETE = "COMPLETE"
    """The composite (or ``$root``) succeeded with ``output``."""
    SKIP = "SKIP"
    """The step lies in a path that will never run: mark it SKIPPED."""


@dataclass(frozen=True)
class Decision:
    """One structural change for the kernel to apply."""

    kind: DecisionKind
    step_id: str
    command: Command | None = None
    output: JSON = None

    def to_json(self) -> dict[str, JSON]:
        out: dict[str, JSON] = {"kind": self.kind.value, "step_id": self.step_id}
        if self.kind is DecisionKind.ACTIVATE:
            assert self.command is not None
            out["command"] = command_to_json(self.command)
        if self.kind is DecisionKind.COMPLETE:
            out["output"] = self.output
        return out


@dataclass(frozen=True)
class Plan:
    """At most ``limit`` decisions, in the order to apply them, and whether more remain."""

    decisions: tuple[Decision, ...]
    more: bool = False

    def to_json(self) -> dict[str, JSON]:
        return {"decisions": [d.to_json() for d in self.decisions], "more": self.more}


def _plain(value: Any) -> JSON:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, float):  # pragma: no cover - commands never carry floats
        raise TypeError("floats are not exact values")
    assert value is None or isinstance(value, str | int | Decimal | list | dict)
    return value


def command_to_json(command: Command) -> dict[str, JSON]:
    """The JSON form of a command: ``{"type": <class name>, <fields>...}`` (exact numbers)."""
    body = _plain(command)
    assert isinstance(body, dict)
    return {"type": type(command).__name__, **body}


__all__ = [
    "MAX_PLAN_LIMIT",
    "Decision",
    "DecisionKind",
    "Plan",
    "PlanRejectedError",
    "RejectReason",
    "command_to_json",
]
