"""The ordered history of an instance: transitions numbered by instance revision (R-10.2).

Every recorded change of an instance takes the next instance revision (R-6.8) and is
written as one ``weave_transitions`` row together with the one audit row of its
transaction. :class:`History` collects the transitions of one transaction and writes
them, the audit row and nothing else; the caller stores the final revision on the
instance row in its own UPDATE.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from weave_core.access.audit import audit_row
from weave_core.foundation import exactjson
from weave_core.foundation.exactjson import JSON
from weave_core.foundation.faults import fault_point
from weave_core.observability.observe import transitions_txn
from weave_core.runtime.instances import iso, load_json
from weave_core.storage.fused import fusing, queue_linked
from weave_core.storage.schema import weave_audit, weave_transitions
from weave_core.storage.statements import (
    insert_row_key,
    insert_rows,
    insert_rows_ids,
    take_appended,
)

MAX_HISTORY_PAGE = 500


class Unread:
    """The previous transition's time has not been read yet."""


UNREAD: Final = Unread()


@dataclass
class History:
    """The transitions one transaction records for one instance, and its audit row."""

    namespace: str
    instance_id: str
    revision: int
    """The instance revision before this transaction; rises by one per transition."""
    operation_id: str
    now: datetime
    previous_at: datetime | Unread | None = UNREAD
    """The time of the transition at ``revision`` when the caller already read it (a tick
    batch reads them all at once, :func:`previous_times`); read at :meth:`write` otherwise."""
    _rows: list[dict[str, Any]] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self._rows)

    def mark(self) -> tuple[int, int]:
        """A point to :meth:`rollback` to (a savepoint of the collected transitions)."""
        return self.revision, len(self._rows)

    def rollback(self, mark: tuple[int, int]) -> None:
        """Forget the transitions recorded after ``mark``."""
        self.revision, count = mark
        del self._rows[count:]

    def record(
        self,
        kind: str,
        *,
        step_id: str | None = None,
        activation_id: str | None = None,
        from_state: str | None = None,
        to_state: str | None = None,
        reason: str | None = None,
        details: JSON = None,
    ) -> int:
        """Record one transition; return the revision it took."""
        self.revision += 1
        self._rows.append(
            {
                "instance_id": self.instance_id,
                "revision": self.revision,
                "namespace": self.namespace,
                "occurred_at": self.now,
                "kind": kind,
                "step_id": step_id,
                "activation_id": activation_id,
                "from_state": from_state,
                "to_state": to_state,
                "reason": reason,
                "details": None if details is None else exactjson.dumps(details),
                "operation_id": self.operation_id,
            }
        )
        return self.revision

    def _not_before_previous(self, conn: Connection) -> None:
        """Keep history times in revision order.

        ``now`` is read when the transaction starts, before it may wait for the instance
        lock while another transaction commits the previous revision; this transition
        happens after that one, so its time is raised to the previous one's when earlier.
        """
        first = int(self._rows[0]["revision"])
        if first <= 1:
            return
        previous = self.previous_at
        if isinstance(previous, Unread):
            previous = _previous_time(conn, self.instance_id, first - 1)
        if previous is not None and previous > self.now:
            self.now = previous
            for row in self._rows:
                row["occurred_at"] = previous

    def write(
        self, conn: Connection, *, actor: str, action: str, metadata: dict[str, JSON],
        batch: HistoryBatch | None = None,
    ) -> int | None:
        """Write the audit row and the transitions (nothing when nothing was recorded).

        ``metadata`` gains ``revision`` (the instance revision after this transaction)
        and ``transitions`` (how many). Returns the audit id; with ``batch``, the rows join
        the batch instead (written by :meth:`HistoryBatch.write` before the transaction
        commits) and None is returned. In a step transaction on MariaDB/MySQL the rows are
        queued (``storage/fused.py``: the transitions name the audit row through
        ``LAST_INSERT_ID()``) and None is returned: the id exists at the commit. Any
        failure propagates: the caller's transaction rolls back with it (R-6.8).
        """
        if not self._rows:
            return None
        self._not_before_previous(conn)
        transitions_txn(conn, self._rows)  # counted and logged after the commit
        fault_point("runtime.audit")
        audit = audit_row(
            namespace=self.namespace,
            actor=actor,
            action=action,
            object_type="workflow",
            object_id=self.instance_id,
            operation_id=self.operation_id,
            metadata={**metadata, "revision": self.revision, "transitions": len(self._rows)},
            at=self.now,
        )
        rows, self._rows = self._rows, []
        if batch is not None:
            batch.add(audit, rows)
            return None
        earlier = take_appended(conn, weave_audit)  # a step's task audit
        if fusing(conn):  # queued: the transitions take the audit id on the server
            if earlier:
                insert_rows(conn, weave_audit, earlier)
            insert_rows(conn, weave_audit, audit)
            queue_linked(conn, weave_transitions, rows, "audit_id")
            return None
        if earlier:
            audit_id = insert_rows_ids(conn, weave_audit, [*earlier, audit])[-1]
        else:
            audit_id = insert_row_key(conn, weave_audit, audit)
        for row in rows:
            row["audit_id"] = audit_id
        insert_rows(conn, weave_transitions, rows)
        return audit_id


@dataclass
class HistoryBatch:
    """The audit rows and transitions of several instances' changes in one transaction (a
    tick batch), inserted together by :meth:`write`: two multi-row INSERTs for the batch
    instead of two INSERTs per instance. Each audit row keeps its own transitions."""

    _audits: list[dict[str, Any]] = field(default_factory=list)
    _transitions: list[list[dict[str, Any]]] = field(default_factory=list)

    def add(self, audit: dict[str, Any], transitions: list[dict[str, Any]]) -> None:
        self._audits.append(audit)
        self._transitions.append(transitions)

    def write(self, conn: Connection) -> None:
        """Insert the audit rows (their ids come back in order) and then the transitions."""
        if not self._audits:
            return
        a = weave_audit
        ids = conn.execute(a.insert().returning(a.c.id, sort_by_parameter_order=True),
                           self._audits).scalars().all()
        for audit_id, rows in zip(ids, self._transitions, strict=True):
            for row in rows:
                row["audit_id"] = int(audit_id)
        conn.execute(sa.insert(weave_transitions),
                     [row for rows in self._transitions for row in rows])
        self._audits, self._transitions = [], []


def previous_times(conn: Connection, revisions: dict[str, int]) -> dict[str, datetime | None]:
    """The time of each instance's transition at the given revision (one query for a
    batch; instances at revision 0 have none), for :attr:`History.previous_at`."""
    t = weave_transitions
    wanted = {iid: rev for iid, rev in revisions.items() if rev > 0}
    found: dict[str, datetime | None] = dict.fromkeys(revisions)
    if wanted:
        for row in conn.execute(
            sa.select(t.c.instance_id, t.c.occurred_at).where(sa.or_(*(
                (t.c.instance_id == iid) & (t.c.revision == rev) for iid, rev in wanted.items()
            )))
        ):
            found[row.instance_id] = row.occurred_at
    return found


def _previous_time(conn: Connection, instance_id: str, revision: int) -> datetime | None:
    t = weave_transitions
    value = conn.execute(
        sa.select(t.c.occurred_at).where(t.c.instance_id == instance_id, t.c.revision == revision)
    ).scalar_one_or_none()
    return value if isinstance(value, datetime) else None


def read_transitions(
    conn: Connection, instance_id: str, *, after_revision: int = 0, limit: int = 100
) -> list[dict[str, Any]]:
    """Transitions of one instance in revision order, after ``after_revision`` (a cursor)."""
    if not 1 <= limit <= MAX_HISTORY_PAGE:
        raise ValueError(f"limit must be between 1 and {MAX_HISTORY_PAGE}")
    t = weave_transitions
    rows = conn.execute(
        sa.select(t)
        .where(t.c.instance_id == instance_id, t.c.revision > after_revision)
        .order_by(t.c.revision)
        .limit(limit)
    ).mappings()
    return [
        {
            "revision": int(r["revision"]),
            "occurred_at": iso(r["occurred_at"]),
            "kind": r["kind"],
            "step_id": r["step_id"],
            "activation_id": r["activation_id"],
            "from_state": r["from_state"],
            "to_state": r["to_state"],
            "reason": r["reason"],
            "details": load_json(r["details"]),
            "operation_id": r["operation_id"],
            "audit_id": None if r["audit_id"] is None else int(r["audit_id"]),
        }
        for r in rows
    ]


__all__ = [
    "MAX_HISTORY_PAGE", "UNREAD", "History", "HistoryBatch", "Unread", "previous_times",
    "read_transitions",
]
