"""Audit rows, written in the caller's transaction (if the audit fails, the change fails).

Every recorded change writes exactly one audit row in the transaction that makes it
(R-6.8, invariant I4). Actors are ``token:<token_id>`` for API calls,
``system:weave:<node_id>`` for the engine and ``system:cli`` for administrative commands.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from weave_core.foundation import exactjson
from weave_core.foundation.exactjson import JSON
from weave_core.storage.schema import weave_audit

MAX_LIST_LIMIT = 1000


@dataclass(frozen=True)
class AuditEntry:
    """One audit row as read back; ``metadata`` is the parsed JSON (or None)."""

    id: int
    namespace: str
    occurred_at: datetime
    actor: str
    action: str
    object_type: str
    object_id: str
    operation_id: str | None
    metadata: JSON

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "namespace": self.namespace,
            "occurred_at": self.occurred_at.isoformat() + "Z",
            "actor": self.actor,
            "action": self.action,
            "object_type": self.object_type,
            "object_id": self.object_id,
            "operation_id": self.operation_id,
            "metadata": self.metadata,
        }


def audit_row(
    *,
    namespace: str,
    actor: str,
    action: str,
    object_type: str,
    object_id: str,
    operation_id: str | None = None,
    metadata: JSON = None,
    at: datetime,
) -> dict[str, Any]:
    """The ``weave_audit`` row :func:`write_audit` inserts (callers that insert several
    rows at once build them with this)."""
    return {
        "namespace": namespace,
        "occurred_at": at,
        "actor": actor,
        "action": action,
        "object_type": object_type,
        "object_id": object_id,
        "operation_id": operation_id,
        "metadata": None if metadata is None else exactjson.dumps(metadata),
    }


def write_audit(
    conn: Connection,
    *,
    namespace: str,
    actor: str,
    action: str,
    object_type: str,
    object_id: str,
    operation_id: str | None = None,
    metadata: JSON = None,
    at: datetime,
) -> int:
    """Insert one audit row in the caller's transaction and return its id.

    ``at`` is database time (``Database.now``) taken by the caller, so that the audit
    row and the change it records carry the same time.
    """
    result = conn.execute(sa.insert(weave_audit), audit_row(
        namespace=namespace, actor=actor, action=action, object_type=object_type,
        object_id=object_id, operation_id=operation_id, metadata=metadata, at=at))
    key = result.inserted_primary_key
    assert key is not None
    return int(key[0])


def list_audit(
    conn: Connection,
    namespace: str,
    object_type: str,
    object_id: str,
    after_id: int | None = None,
    limit: int = 100,
) -> list[AuditEntry]:
    """The audit rows of one object in id order, after ``after_id`` (a cursor)."""
    if not 1 <= limit <= MAX_LIST_LIMIT:
        raise ValueError(f"limit must be between 1 and {MAX_LIST_LIMIT}")
    t = weave_audit
    stmt = sa.select(t).where(
        t.c.namespace == namespace, t.c.object_type == object_type, t.c.object_id == object_id
    )
    if after_id is not None:
        stmt = stmt.where(t.c.id > after_id)
    rows = conn.execute(stmt.order_by(t.c.id).limit(limit)).mappings().all()
    return [
        AuditEntry(
            id=int(row["id"]),
            namespace=row["namespace"],
            occurred_at=row["occurred_at"],
            actor=row["actor"],
            action=row["action"],
            object_type=row["object_type"],
            object_id=row["object_id"],
            operation_id=row["operation_id"],
            metadata=exactjson.loads_stored(row["metadata"]),
        )
        for row in rows
    ]


__all__ = ["AuditEntry", "audit_row", "list_audit", "write_audit"]
