"""Disabling and enabling a namespace (R-6.6): its tokens stop working, its instances stop
starting new work, and everything already in flight is still saved.

While a namespace is disabled every token of it gets 401 ``unauthenticated`` (within the
one-second token cache of each engine process), so nothing new is started, claimed,
signalled or controlled through the API. The tick keeps collecting what is already
recorded: task results already saved, accepted signals, due timers and poll wake-ups are
consumed, but no new activation starts (the advance sees ``namespace_disabled`` on the
identity row it reads anyway and saves the successors as a pending row with reason
``namespace_disabled``). Enabling makes those rows due at once, so the instances continue
from the records on the next tick.

The flag is the namespace row, the identity lock every transaction of the namespace takes
shared first: the UPDATE waits for those in flight, and nothing of the namespace runs
between it and the pending rows it re-arms (no other lock is taken before it).
"""

from __future__ import annotations

from datetime import datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from weave_core.access.audit import write_audit
from weave_core.access.identity import CLI_ACTOR
from weave_core.foundation.errors import NotFoundError
from weave_core.runtime.pending import FULL_BACKOFF_CAP_S, PendingReason, PendingState
from weave_core.storage.db import Database
from weave_core.storage.schema import weave_namespaces, weave_pending_advances


def set_namespace_enabled(db: Database, name: str, enabled: bool, *,
                          actor: str = CLI_ACTOR) -> int:
    """Disable (``enabled=False``) or enable a namespace; ``NotFoundError`` for an unknown
    one. Returns how many blocked pending rows enabling made due (0 when disabling or
    when it already was in that state)."""

    def _set(conn: Connection) -> int:
        n = weave_namespaces
        row = conn.execute(sa.select(n.c.disabled).where(n.c.name == name)).one_or_none()
        if row is None:
            raise NotFoundError(f"namespace {name!r} not found", details={"namespace": name})
        if bool(row.disabled) == (not enabled):
            return 0
        now = db.now(conn)
        conn.execute(sa.update(n).where(n.c.name == name).values(disabled=not enabled))
        released = _release_blocked(conn, name, now) if enabled else 0
        write_audit(conn, namespace=name, actor=actor,
                    action="namespace.enable" if enabled else "namespace.disable",
                    object_type="namespace", object_id=name,
                    metadata={"released_pending": released} if enabled else None, at=now)
        return released

    return db.transaction(_set, name="set_namespace_enabled")


def _release_blocked(conn: Connection, name: str, now: datetime) -> int:
    """Make the namespace's ``namespace_disabled`` pending rows due now. They re-arm with a
    back-off of at most ``FULL_BACKOFF_CAP_S``, so the due-index range below finds them all
    without a scan of the namespace."""
    p = weave_pending_advances
    horizon = now + timedelta(seconds=FULL_BACKOFF_CAP_S + 1)
    result = conn.execute(
        sa.update(p).where(
            p.c.state == PendingState.PENDING.value, p.c.due_at <= horizon,
            p.c.namespace == name, p.c.reason == PendingReason.NAMESPACE_DISABLED.value,
        ).values(due_at=now, version=p.c.version + 1, updated_at=now))
    return int(result.rowcount or 0)


def namespace_disabled(db: Database, name: str) -> bool:
    """Whether ``name`` is disabled (``NotFoundError`` for an unknown namespace)."""
    n = weave_namespaces
    value = db.read(lambda conn: conn.execute(
        sa.select(n.c.disabled).where(n.c.name == name)).scalar_one_or_none())
    if value is None:
        raise NotFoundError(f"namespace {name!r} not found", details={"namespace": name})
    return bool(value)


__all__ = ["namespace_disabled", "set_namespace_enabled"]
