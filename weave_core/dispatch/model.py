"""Dispatch row types and vocabulary: statuses, owner kinds, outcomes, ids, defaults."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal
from enum import StrEnum
from typing import Any, Final

from sqlalchemy.engine import Row

from weave_core.foundation import exactjson
from weave_core.foundation.errors import Problem, ValidationError
from weave_core.foundation.exactjson import JSON
from weave_core.foundation.randomness import random_hex
from weave_core.plugins.nodespec import RetryPolicy, TaskCommand, Timeouts


class TaskStatus(StrEnum):
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    NEEDS_REVIEW = "NEEDS_REVIEW"


UNSETTLED: Final = frozenset({TaskStatus.PENDING, TaskStatus.RUNNING})
SETTLED: Final = frozenset(set(TaskStatus) - UNSETTLED)


class OwnerKind(StrEnum):
    WORKFLOW_ACTIVATION = "workflow_activation"
    STANDALONE = "standalone"


class ReportOutcome(StrEnum):
    """What a worker reports for its attempt."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


class AttemptEnd(StrEnum):
    """How an attempt ended (``weave_task_attempts.outcome``)."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    LEASE_EXPIRED = "lease_expired"
    DEADLINE_EXCEEDED = "deadline_exceeded"


class InboxState(StrEnum):
    PENDING = "PENDING"
    PROCESSED = "PROCESSED"
    QUARANTINED = "QUARANTINED"


# Delivered events, by the status the task settled in.
EVENT_BY_STATUS: Final[dict[TaskStatus, str]] = {
    TaskStatus.SUCCEEDED: "task.succeeded",
    TaskStatus.FAILED: "task.failed",
    TaskStatus.CANCELLED: "task.cancelled",
    TaskStatus.NEEDS_REVIEW: "task.needs_review",
}

DEFAULT_QUEUE_CAPACITY: Final = 10_000
"""Capacity of a queue created on first use (``weave queue set-capacity`` changes it)."""
DEFAULT_NAMESPACE_QUOTA: Final = 100_000
"""Outstanding-task quota of a namespace on first use (``weave quota set`` changes it)."""
DEFAULT_LEASE_SECONDS: Final = 60
"""Lease of an attempt whose task sets neither a heartbeat nor a start-to-close timeout."""
MAX_CLAIM_BATCH: Final = 32
MAX_WAIT_SECONDS: Final = 30
SNAPSHOT_SCHEMA_VERSION: Final = 1

_NAME_RE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:\-]{0,127}")


def new_id(prefix: str) -> str:
    """A fresh id: prefix, 12 hex digits of milliseconds (index locality), 16 random hex.

    The application clock only orders ids; no decision reads it.
    """
    return f"{prefix}_{int(time.time() * 1000):012x}{random_hex(8)}"


def check_name(value: str, what: str) -> str:
    """A queue, handler or version name: 1-128 of ``A-Z a-z 0-9 _ . : -``."""
    if not isinstance(value, str) or not _NAME_RE.fullmatch(value):
        raise ValidationError(
            f"invalid {what} {value!r}",
            [Problem(f"$.{what}", "invalid_name",
                     f"{what} must be 1-128 characters of A-Z a-z 0-9 _ . : - "
                     "starting with a letter or digit")],
        )
    return value


def handler_key(name: str, version: str) -> str:
    """What the claim query matches: ``name@version`` (``@`` is never part of a name)."""
    return f"{name}@{version}"


def _ms(seconds: Decimal | int) -> int:
    return int((Decimal(seconds) * 1000).quantize(Decimal(1), rounding=ROUND_HALF_UP))


@dataclass(frozen=True)
class TaskSpec:
    """Everything needed to create one task. Timeouts in whole seconds, None = none."""

    queue: str
    handler: str
    handler_version: str
    input: JSON
    idempotent: bool = True
    max_attempts: int = 3
    backoff_ms: int = 1000
    backoff_multiplier_milli: int = 2000
    max_backoff_ms: int = 300_000
    schedule_to_start_s: int | None = None
    start_to_close_s: int | None = None
    heartbeat_timeout_s: int | None = None
    deadline_at: datetime | None = None
    owner_kind: OwnerKind = OwnerKind.STANDALONE
    owner_id: str | None = None
    gate_id: str | None = None
    task_id: str | None = None

    @classmethod
    def from_command(
        cls,
        command: TaskCommand,
        *,
        owner_id: str,
        gate_id: str | None,
        deadline_at: datetime | None,
        task_id: str | None = None,
    ) -> TaskSpec:
        """The task a workflow activation asks for (``owner_kind`` workflow_activation)."""
        retry: RetryPolicy = command.retry
        timeouts: Timeouts = command.timeouts
        return cls(
            queue=command.queue,
            handler=command.handler,
            handler_version=command.handler_version,
            input=command.input,
            idempotent=command.idempotent,
            max_attempts=retry.max_attempts,
            backoff_ms=_ms(retry.backoff_seconds),
            backoff_multiplier_milli=_ms(retry.backoff_multiplier),
            max_backoff_ms=_ms(retry.max_backoff_seconds),
            schedule_to_start_s=timeouts.schedule_to_start,
            start_to_close_s=timeouts.start_to_close,
            heartbeat_timeout_s=timeouts.heartbeat,
            deadline_at=deadline_at,
            owner_kind=OwnerKind.WORKFLOW_ACTIVATION,
            owner_id=owner_id,
            gate_id=gate_id,
            task_id=task_id,
        )


@dataclass(frozen=True)
class TaskError:
    """A typed failure a worker reports (or the engine records: lease expiry, deadline)."""

    type: str
    message: str
    retryable: bool
    details: JSON = None

    def to_json(self) -> dict[str, JSON]:
        out: dict[str, JSON] = {
            "type": self.type, "message": self.message, "retryable": self.retryable
        }
        if self.details is not None:
            out["details"] = self.details
        return out


@dataclass(frozen=True)
class TaskView:
    """A task as the API and the runtime read it."""

    task_id: str
    namespace: str
    queue: str
    owner_kind: str
    owner_id: str | None
    handler: str
    handler_version: str
    idempotent: bool
    status: TaskStatus
    revision: int
    attempts_used: int
    max_attempts: int
    available_at: datetime
    deadline_at: datetime | None
    gate_id: str | None
    effect_unknown: bool
    cancel_requested: bool
    current_attempt_id: str | None
    result: JSON
    error: JSON
    created_at: datetime
    updated_at: datetime
    input: JSON = field(default=None, repr=False)

    @classmethod
    def from_row(cls, row: Row[Any]) -> TaskView:
        return cls(
            task_id=row.task_id,
            namespace=row.namespace,
            queue=row.queue,
            owner_kind=row.owner_kind,
            owner_id=row.owner_id,
            handler=row.handler,
            handler_version=row.handler_version,
            idempotent=bool(row.idempotent),
            status=TaskStatus(row.status),
            revision=int(row.revision),
            attempts_used=int(row.attempts_used),
            max_attempts=int(row.max_attempts),
            available_at=row.available_at,
            deadline_at=row.deadline_at,
            gate_id=row.gate_id,
            effect_unknown=bool(row.effect_unknown),
            cancel_requested=bool(row.cancel_requested),
            current_attempt_id=row.current_attempt_id,
            result=exactjson.loads_stored(row.result),
            error=exactjson.loads_stored(row.error),
            created_at=row.created_at,
            updated_at=row.updated_at,
            input=exactjson.loads_stored(row.input),
        )


@dataclass(frozen=True)
class ClaimedTask:
    """One task handed to a worker: the attempt it runs under and its lease."""

    task_id: str
    attempt_id: str
    attempt_no: int
    handler: str
    handler_version: str
    input: JSON
    lease_expires_at: datetime
    heartbeat_timeout: int
    deadline_at: datetime | None
    cancel_requested: bool = False


def parse_document(text: str | None) -> JSON:
    """Read back a JSON column we wrote (canonical, any depth we accepted)."""
    return exactjson.loads_stored(text)


__all__ = [
    "DEFAULT_LEASE_SECONDS",
    "DEFAULT_NAMESPACE_QUOTA",
    "DEFAULT_QUEUE_CAPACITY",
    "EVENT_BY_STATUS",
    "MAX_CLAIM_BATCH",
    "MAX_WAIT_SECONDS",
    "SETTLED",
    "SNAPSHOT_SCHEMA_VERSION",
    "UNSETTLED",
    "AttemptEnd",
    "ClaimedTask",
    "InboxState",
    "OwnerKind",
    "ReportOutcome",
    "TaskError",
    "TaskSpec",
    "TaskStatus",
    "TaskView",
    "check_name",
    "handler_key",
    "new_id",
    "parse_document",
]
