"""Control and review operations: one ``weave_operations`` row per accepted operation.

An operation is identified by ``(namespace, operation_id)``. The row holds who did it
(the principal's actor), why (``reason``), the version it expected, what it concerned
(step, activation, conclusion, evidence) and the exact response body of its first
outcome: a repeat of the same operation id with the same request returns that body; with
a different request it is refused (``operation_conflict``). A refused operation (stale
version, wrong state) commits nothing, so retrying its id later is a new attempt.

Rows are written and read only under the instance lock (every operation locks its
instance first), so a plain read there is exact; the primary key settles a race between
two instances using one id.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from weave_core.foundation import exactjson
from weave_core.foundation.errors import Problem, ValidationError
from weave_core.foundation.exactjson import JSON
from weave_core.runtime.controls.errors import OperationConflictError
from weave_core.runtime.instances import iso, load_json
from weave_core.storage.schema import weave_operations

OPERATION_ID_RE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:\-]{0,63}")
MAX_REASON: Final = 1024


class OperationKind(StrEnum):
    PAUSE = "pause"
    RESUME = "resume"
    CANCEL = "cancel"
    CONCLUDE = "review.conclude"
    RESOLVE = "review.resolve"
    RECOVER = "review.recover"
    ACCEPT = "review.accept"


def check_common(operation_id: str, reason: str) -> None:
    """The operation id and reason every operation carries (422 listing both problems)."""
    problems: list[Problem] = []
    if not isinstance(operation_id, str) or not OPERATION_ID_RE.fullmatch(operation_id):
        problems.append(Problem("$.operation_id", "invalid_field",
                                "1-64 of A-Z a-z 0-9 _ . : - starting with a letter or digit"))
    if not isinstance(reason, str) or not reason.strip() or len(reason) > MAX_REASON:
        problems.append(Problem("$.reason", "invalid_field",
                                f"a non-blank reason of at most {MAX_REASON} characters"))
    if problems:
        raise ValidationError("invalid operation", problems)


def request_hash(kind: OperationKind, workflow_id: str, fields: dict[str, JSON]) -> str:
    """What makes two requests "the same operation". Expected versions are left out: a
    client retrying after a lost answer may have re-read a version the first one bumped."""
    return exactjson.content_hash({"kind": kind.value, "workflow_id": workflow_id, **fields})


@dataclass(frozen=True)
class Operation:
    """One recorded operation, as shown in the instance view and history."""

    operation_id: str
    kind: str
    instance_id: str
    actor: str
    reason: str
    expected_version: int | None
    step_id: str | None
    activation_id: str | None
    new_activation_id: str | None
    conclusion: str | None
    evidence: JSON
    revision: int
    created_at: datetime

    def to_json(self) -> dict[str, JSON]:
        return {
            "operation_id": self.operation_id, "kind": self.kind, "actor": self.actor,
            "reason": self.reason, "expected_version": self.expected_version,
            "step_id": self.step_id, "activation_id": self.activation_id,
            "new_activation_id": self.new_activation_id, "conclusion": self.conclusion,
            "evidence": self.evidence, "revision": self.revision,
            "created_at": iso(self.created_at),
        }


def _operation(row: Any) -> Operation:
    return Operation(
        operation_id=row.operation_id, kind=row.kind, instance_id=row.instance_id,
        actor=row.actor, reason=row.reason,
        expected_version=None if row.expected_version is None else int(row.expected_version),
        step_id=row.step_id, activation_id=row.activation_id,
        new_activation_id=row.new_activation_id, conclusion=row.conclusion,
        evidence=load_json(row.evidence), revision=int(row.revision),
        created_at=row.created_at,
    )


def replay_txn(conn: Connection, namespace: str, operation_id: str,
               digest: str) -> dict[str, Any] | None:
    """The first outcome of this operation id, or None if it is new here.

    Raises ``OperationConflictError`` when the id was used for a different request.
    """
    o = weave_operations
    row = conn.execute(
        sa.select(o.c.request_hash, o.c.outcome, o.c.kind, o.c.instance_id)
        .where(o.c.namespace == namespace, o.c.operation_id == operation_id)
    ).one_or_none()
    if row is None:
        return None
    if row.request_hash != digest:
        raise OperationConflictError(
            "this operation_id was used for a different request",
            details={"operation_id": operation_id, "kind": row.kind,
                     "workflow_id": row.instance_id},
        )
    outcome = load_json(row.outcome)
    assert isinstance(outcome, dict)
    return outcome


def record_txn(
    conn: Connection, *, namespace: str, operation_id: str, instance_id: str,
    kind: OperationKind, actor: str, reason: str, digest: str, outcome: JSON, revision: int,
    now: datetime, expected_version: int | None = None, step_id: str | None = None,
    activation_id: str | None = None, new_activation_id: str | None = None,
    conclusion: str | None = None, evidence: JSON = None,
) -> None:
    """Insert the operation row (a duplicate id raises ``IntegrityError``: the caller
    re-runs its transaction, which then finds the row)."""
    conn.execute(sa.insert(weave_operations), dict(
        namespace=namespace, operation_id=operation_id, instance_id=instance_id,
        kind=kind.value, actor=actor, reason=reason, expected_version=expected_version,
        step_id=step_id, activation_id=activation_id, new_activation_id=new_activation_id,
        conclusion=conclusion, evidence=None if evidence is None else exactjson.dumps(evidence),
        request_hash=digest, outcome=exactjson.dumps(outcome), revision=revision,
        created_at=now,
    ))


def operations_of(conn: Connection, namespace: str, instance_id: str,
                  kind: OperationKind | None = None) -> list[Operation]:
    """The operations of one instance, oldest first (optionally one kind)."""
    o = weave_operations
    stmt = sa.select(o).where(o.c.namespace == namespace, o.c.instance_id == instance_id)
    if kind is not None:
        stmt = stmt.where(o.c.kind == kind.value)
    return [_operation(r) for r in conn.execute(stmt.order_by(o.c.created_at, o.c.revision))]


def cancel_requested_txn(conn: Connection, namespace: str, instance_id: str) -> bool:
    """Was a cancel accepted for this instance (the persisted cancel intent)?"""
    o = weave_operations
    return conn.execute(
        sa.select(sa.func.count()).select_from(o).where(
            o.c.namespace == namespace, o.c.instance_id == instance_id,
            o.c.kind == OperationKind.CANCEL.value)
    ).scalar_one() > 0


__all__ = [
    "MAX_REASON",
    "OPERATION_ID_RE",
    "Operation",
    "OperationKind",
    "cancel_requested_txn",
    "check_common",
    "operations_of",
    "record_txn",
    "replay_txn",
    "request_hash",
]
