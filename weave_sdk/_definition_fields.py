"""The definition builder's configuration objects and the field checks every builder uses.

Why apart: the step classes and ``Workflow`` share these; ``weave_sdk.definition`` exports them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from enum import StrEnum
from typing import Any

from weave_sdk.exactjson import JSON
from weave_sdk.expressions import value_json

Duration = timedelta | int
"""A duration: a ``timedelta`` or a whole number of seconds."""

Number = int | Decimal


class FailurePolicy(StrEnum):
    """What a final step failure does to the instance (DESIGN.md R-8.4)."""

    REVIEW = "REVIEW"
    """The instance goes to ``NEEDS_REVIEW`` for a person to decide."""
    FAIL_AFTER_SETTLED = "FAIL_AFTER_SETTLED"
    """Cancel the rest, collect what started, then ``FAILED`` once everything settled."""


def _seconds(value: Duration | Decimal | None, where: str) -> int | None:
    """Whole seconds from a timedelta or an int; ``None`` stays unset."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise TypeError(f"{where}: expected a timedelta or int seconds, not bool")
    if isinstance(value, timedelta):
        if value.microseconds:
            raise ValueError(f"{where}: {value} is not a whole number of seconds")
        return value.days * 86400 + value.seconds
    if isinstance(value, int):
        return value
    if isinstance(value, Decimal) and value.is_finite() and value == value.to_integral_value():
        return int(value)
    if isinstance(value, float):
        raise TypeError(f"{where}: float {value!r} is not exact; pass an int or a timedelta")
    raise TypeError(f"{where}: expected a timedelta or int seconds, not {type(value).__name__}")


def _exact_seconds(value: Duration | Decimal | None, where: str) -> Number | None:
    """Seconds that may be fractional (backoff): timedelta, int or Decimal, kept exact."""
    if isinstance(value, timedelta):
        exact = Decimal(value.days * 86400 + value.seconds) + Decimal(value.microseconds).scaleb(-6)
        return int(exact) if exact == exact.to_integral_value() else exact.normalize()
    if isinstance(value, Decimal) and not isinstance(value, bool):
        if not value.is_finite():
            raise ValueError(f"{where}: {value} is not a number")
        return value
    return _seconds(value, where)


def _number(value: Number | None, where: str) -> Number | None:
    if value is None or (isinstance(value, int | Decimal) and not isinstance(value, bool)):
        return value
    if isinstance(value, float):
        raise TypeError(f"{where}: float {value!r} is not exact; use int or Decimal")
    raise TypeError(f"{where}: expected an int or a Decimal, not {type(value).__name__}")


def _int(value: int | None, where: str) -> int | None:
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise TypeError(f"{where}: expected an int, not {type(value).__name__}")


def _str(value: str | None, where: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"{where}: expected a str, not {type(value).__name__}")


def _schema(value: Mapping[str, Any] | None, where: str) -> dict[str, JSON] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise TypeError(f"{where}: expected a JSON Schema object (a dict)")
    result = value_json(value, where)
    assert isinstance(result, dict)
    return result


def _put(out: dict[str, JSON], key: str, value: JSON) -> None:
    if value is not None:
        out[key] = value


# --- configuration objects -----------------------------------------------------------


@dataclass(frozen=True)
class Handler:
    """The worker handler a ``task`` or ``poll`` runs.

    :param name: handler name, as registered by the workers.
    :param version: handler version; an unknown version waits visibly, never switches.
    :param idempotent: whether re-running after an unknown outcome is safe. ``None`` (the
        default) leaves the field out and the engine assumes ``true``.
    """

    name: str
    version: str
    idempotent: bool | None = None

    def __post_init__(self) -> None:
        _str(self.name, "handler.name")
        _str(self.version, "handler.version")
        if self.idempotent is not None and not isinstance(self.idempotent, bool):
            raise TypeError("handler.idempotent: expected a bool")

    def to_json(self) -> dict[str, JSON]:
        out: dict[str, JSON] = {"name": self.name, "version": self.version}
        _put(out, "idempotent", self.idempotent)
        return out


@dataclass(frozen=True)
class RetryPolicy:
    """The dispatch layer's retry budget of a task. Every field left ``None`` is not sent
    and the engine's default applies (3 attempts, 1 s backoff, multiplier 2, 300 s cap).

    :param max_attempts: attempts in total, the first one included (``max_attempts``).
    :param backoff: delay before the first retry (``backoff_seconds``; may be fractional).
    :param backoff_multiplier: factor applied to the delay after each retry.
    :param max_backoff: the largest delay between two attempts (``max_backoff_seconds``).
    """

    max_attempts: int | None = None
    backoff: Duration | Decimal | None = None
    backoff_multiplier: Number | None = None
    max_backoff: Duration | Decimal | None = None

    def __post_init__(self) -> None:
        _int(self.max_attempts, "retry.max_attempts")
        object.__setattr__(self, "backoff", _exact_seconds(self.backoff, "retry.backoff"))
        _number(self.backoff_multiplier, "retry.backoff_multiplier")
        object.__setattr__(
            self, "max_backoff", _exact_seconds(self.max_backoff, "retry.max_backoff")
        )

    def to_json(self) -> dict[str, JSON]:
        out: dict[str, JSON] = {}
        _put(out, "max_attempts", self.max_attempts)
        _put(out, "backoff_seconds", self.backoff)
        _put(out, "backoff_multiplier", self.backoff_multiplier)
        _put(out, "max_backoff_seconds", self.max_backoff)
        return out


@dataclass(frozen=True)
class Timeouts:
    """Dispatch timeouts of a task, in whole seconds; ``None`` leaves the engine default.

    :param schedule_to_start: longest wait in the queue before a worker claims the task.
    :param start_to_close: longest run of one attempt.
    :param heartbeat: longest silence between heartbeats of a running attempt.
    """

    schedule_to_start: Duration | None = None
    start_to_close: Duration | None = None
    heartbeat: Duration | None = None

    def __post_init__(self) -> None:
        for name in ("schedule_to_start", "start_to_close", "heartbeat"):
            object.__setattr__(self, name, _seconds(getattr(self, name), f"timeouts.{name}"))

    def to_json(self) -> dict[str, JSON]:
        out: dict[str, JSON] = {}
        _put(out, "schedule_to_start", self.schedule_to_start)
        _put(out, "start_to_close", self.start_to_close)
        _put(out, "heartbeat", self.heartbeat)
        return out


@dataclass(frozen=True)
class Classify:
    """How a ``poll`` reads a round's result: the value at ``field`` decides.

    :param field: the result field holding the external status (e.g. ``"status"``).
    :param pending: values meaning "still running": wait ``interval`` and poll again.
    :param succeeded: values meaning done: the step succeeds with the result.
    :param failed: values meaning the operation failed: the failure policy applies.
    :param needs_review: values that send the step to review (optional). Any value in no
        list is never success and never another round: it goes to review too.
    """

    field: str
    pending: Sequence[JSON]
    succeeded: Sequence[JSON]
    failed: Sequence[JSON]
    needs_review: Sequence[JSON] | None = None

    def __post_init__(self) -> None:
        _str(self.field, "classify.field")
        for name in ("pending", "succeeded", "failed", "needs_review"):
            values = getattr(self, name)
            if values is None and name == "needs_review":
                continue
            if isinstance(values, str) or not isinstance(values, Sequence):
                raise TypeError(f"classify.{name}: expected a list of values")
            object.__setattr__(self, name, tuple(value_json(v, f"classify.{name}") for v in values))

    def to_json(self) -> dict[str, JSON]:
        out: dict[str, JSON] = {
            "field": self.field,
            "pending": list(self.pending),
            "succeeded": list(self.succeeded),
            "failed": list(self.failed),
        }
        if self.needs_review is not None:
            out["needs_review"] = list(self.needs_review)
        return out


@dataclass(frozen=True)
class Receipt:
    """A final receipt signal a ``poll`` also accepts; whichever arrives first completes it.

    :param name: signal name.
    :param correlation_key: business key (usually a ``Ref``), frozen at activation.
    :param param_version: parameter version of the signal; ``None`` leaves the default.
    """

    name: str
    correlation_key: Any
    param_version: str | None = None

    def __post_init__(self) -> None:
        _str(self.name, "receipt.name")
        _str(self.param_version, "receipt.param_version")
        object.__setattr__(
            self, "correlation_key", value_json(self.correlation_key, "receipt.correlation_key")
        )

    def to_json(self) -> dict[str, JSON]:
        out: dict[str, JSON] = {"name": self.name, "correlation_key": self.correlation_key}
        _put(out, "param_version", self.param_version)
        return out
