"""Instances, steps and activations: their vocabularies, ids and row views (R-3.4, R-3.5)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, Final

from weave_core.dispatch.model import new_id
from weave_core.foundation import exactjson
from weave_core.foundation.exactjson import JSON
from weave_core.planning.snapshot import Phase
from weave_core.plugins.nodespec import StepOutcome


class InstanceStatus(StrEnum):
    """Where an instance is (R-3.4). ``paused`` is a separate flag."""

    RUNNING = "RUNNING"
    """At least one task (or composite) is in flight."""
    WAITING = "WAITING"
    """Only durable waits (signal, timer, poll interval) or a deferred advance are open."""
    CANCELLING = "CANCELLING"
    NEEDS_REVIEW = "NEEDS_REVIEW"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


TERMINAL: Final = frozenset(
    {InstanceStatus.SUCCEEDED, InstanceStatus.FAILED, InstanceStatus.CANCELLED}
)
"""Statuses that never move again."""
MOVING: Final = frozenset({InstanceStatus.RUNNING, InstanceStatus.WAITING})
"""Statuses in which new activations may start (when not paused, gated or late)."""


class FailurePolicy(StrEnum):
    REVIEW = "REVIEW"
    FAIL_AFTER_SETTLED = "FAIL_AFTER_SETTLED"


class ActivationState(StrEnum):
    """The state of one activation of a step (its own id; recovery makes new ones)."""

    ACTIVE = "ACTIVE"
    """Waiting for its task, signal or time."""
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    NEEDS_REVIEW = "NEEDS_REVIEW"


class ReviewReason(StrEnum):
    """Stable reasons an instance or step is in review (stored, shown, audited)."""

    TASK_FAILED = "task_failed"
    TASK_CANCELLED = "task_cancelled"
    EFFECT_UNKNOWN = "effect_unknown"
    OUTPUT_CONTRACT_VIOLATED = "output_contract_violated"
    DEADLINE_EXCEEDED = "deadline_exceeded"
    QUARANTINED_RESULT = "quarantined_result"
    PLAN_REJECTED = "plan_rejected"
    CHECKPOINT_REFUSED = "checkpoint_refused"
    STALLED = "stalled"


def new_instance_id() -> str:
    return new_id("wf")


def new_activation_id() -> str:
    return new_id("act")


def new_operation_id() -> str:
    return new_id("op")


def load_json(text: str | None) -> JSON:
    """Parse a stored canonical JSON column exactly (None stays None)."""
    return exactjson.loads_stored(text)


@dataclass(frozen=True)
class InstanceView:
    """One instance as read (not the locked working copy the advance uses)."""

    instance_id: str
    namespace: str
    definition_id: str
    version: str
    status: InstanceStatus
    paused: bool
    control_version: int
    revision: int
    root_version: int
    gate_id: str
    input: JSON
    output: JSON
    review_reason: str | None
    failure_policy: str
    deadline_at: datetime
    operation_type: str
    idempotency_key: str
    created_by: str
    created_at: datetime
    updated_at: datetime
    settled_at: datetime | None
    config_hash: str | None = None
    """The effective configuration frozen at start (``runtime.frozen``; not in ``to_json``)."""

    @classmethod
    def from_row(cls, row: Mapping[Any, Any]) -> InstanceView:
        return cls(
            instance_id=row["instance_id"],
            namespace=row["namespace"],
            definition_id=row["definition_id"],
            version=row["version"],
            status=InstanceStatus(row["status"]),
            paused=bool(row["paused"]),
            control_version=int(row["control_version"]),
            revision=int(row["revision"]),
            root_version=int(row["root_version"]),
            gate_id=row["gate_id"],
            input=load_json(row["input"]),
            output=load_json(row["output"]),
            review_reason=row["review_reason"],
            failure_policy=row["failure_policy"],
            deadline_at=row["deadline_at"],
            operation_type=row["operation_type"],
            idempotency_key=row["idempotency_key"],
            created_by=row["created_by"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            settled_at=row["settled_at"],
            config_hash=row.get("config_hash"),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "workflow_id": self.instance_id,
            "namespace": self.namespace,
            "definition_id": self.definition_id,
            "version": self.version,
            "status": self.status.value,
            "paused": self.paused,
            "control_version": self.control_version,
            "revision": self.revision,
            "input": self.input,
            "output": self.output,
            "review_reason": self.review_reason,
            "failure_policy": self.failure_policy,
            "deadline_at": _iso(self.deadline_at),
            "operation_type": self.operation_type,
            "idempotency_key": self.idempotency_key,
            "created_by": self.created_by,
            "created_at": _iso(self.created_at),
            "updated_at": _iso(self.updated_at),
            "settled_at": None if self.settled_at is None else _iso(self.settled_at),
        }


def _iso(value: datetime) -> str:
    return value.isoformat() + "Z"


def iso(value: datetime | None) -> str | None:
    """Database time (naive UTC) as an ISO 8601 string with ``Z``."""
    return None if value is None else _iso(value)


PHASE_OF_OUTCOME: Final = {
    StepOutcome.SUCCEEDED: Phase.SUCCEEDED,
    StepOutcome.FAILED: Phase.FAILED,
    StepOutcome.CANCELLED: Phase.CANCELLED,
    StepOutcome.NEEDS_REVIEW: Phase.NEEDS_REVIEW,
}
"""The phase a step settles in for each outcome a kind may give (CONTINUE settles none)."""


__all__ = [
    "MOVING",
    "PHASE_OF_OUTCOME",
    "TERMINAL",
    "ActivationState",
    "FailurePolicy",
    "InstanceStatus",
    "InstanceView",
    "ReviewReason",
    "iso",
    "load_json",
    "new_activation_id",
    "new_instance_id",
    "new_operation_id",
]
