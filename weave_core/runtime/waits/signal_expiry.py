"""Signal expiry (R-7.3): accepted signals past retention expire, one transaction each,
unless an open wait they are bound to still needs them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from weave_core.engine import Engine
from weave_core.runtime.frozen import instance_limits
from weave_core.runtime.history import History
from weave_core.runtime.instances import iso, new_operation_id
from weave_core.runtime.wait_records import (
    SignalState,
    WaitState,
)
from weave_core.runtime.waits.locking import (
    lock_signal,
    lock_wait,
)
from weave_core.storage.locks import lock_instance, lock_namespace_shared
from weave_core.storage.schema import weave_instances, weave_signals

MAX_EVIDENCE_ITEMS: Final = 32
MAX_CORRELATION_KEY: Final = 256
_SIGNAL_ID_RE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:\-]{0,127}")


@dataclass
class ExpiryReport:
    expired: int = 0
    kept: int = 0
    """Past retention but bound to an OPEN wait: still valid, never dropped."""


def _expire_one(conn: Connection, engine: Engine, row_id: int, report: ExpiryReport) -> None:
    s = weave_signals
    peek = conn.execute(sa.select(s.c.namespace, s.c.instance_id, s.c.target_activation_id)
                        .where(s.c.id == row_id)).one_or_none()
    if peek is None or lock_namespace_shared(conn, peek.namespace) is None:
        return
    inst = lock_instance(conn, peek.instance_id)
    # records level: the wait record before the signal (the order of this package)
    wait = None if peek.target_activation_id is None else lock_wait(
        conn, peek.target_activation_id)
    sig = lock_signal(conn, row_id)
    now = engine.db.now(conn)
    if sig is None or sig.state != SignalState.ACCEPTED or sig.expires_at > now:
        return
    if sig.target_activation_id is not None:
        if wait is not None and wait.state == WaitState.OPEN.value:
            # Still valid for an open wait: keep it and look again after a retention period.
            conn.execute(sa.update(s).where(s.c.id == row_id).values(
                expires_at=now + timedelta(seconds=instance_limits(
                    conn, engine.limits, None if inst is None else inst.config_hash
                ).signal_retention_seconds),
                version=int(sig.version) + 1))
            report.kept += 1
            return
    conn.execute(sa.update(s).where(s.c.id == row_id, s.c.version == int(sig.version))
                 .values(state=SignalState.EXPIRED, version=int(sig.version) + 1,
                         settled_at=now, reason="retention_expired"))
    report.expired += 1
    if inst is None:
        return
    history = History(peek.namespace, peek.instance_id, int(inst.revision), new_operation_id(),
                      now)
    history.record("signal.expired", from_state=SignalState.ACCEPTED,
                   to_state=SignalState.EXPIRED, reason="retention_expired",
                   details={"signal_id": sig.signal_id, "accepted_at": iso(sig.accepted_at),
                            "expires_at": iso(sig.expires_at)})
    history.write(conn, actor=engine.actor, action="workflow.signal.expired",
                  metadata={"signal_id": sig.signal_id, "node": engine.node_id,
                            "reason": "retention_expired"})
    i = weave_instances
    conn.execute(sa.update(i).where(i.c.instance_id == peek.instance_id)
                 .values(revision=history.revision, updated_at=now))


def due_expiries(conn: Connection, engine: Engine, limit: int) -> list[int]:
    """ACCEPTED signals past retention, oldest first (``ix_weave_signals_expiry``)."""
    s = weave_signals
    now = engine.db.now(conn)
    return [int(x) for x in conn.execute(
        sa.select(s.c.id).where(s.c.state == SignalState.ACCEPTED, s.c.expires_at <= now)
        .order_by(s.c.expires_at, s.c.id).limit(limit)
    ).scalars()]


def expire_signals(engine: Engine, *, limit: int = 100) -> ExpiryReport:
    """Expire up to ``limit`` signals past retention, one transaction each (the tick)."""
    report = ExpiryReport()
    ids = engine.db.read(lambda conn: due_expiries(conn, engine, limit), name="signal_expiry")
    for row_id in ids:

        def _one(conn: Connection, row_id: int = row_id) -> None:
            _expire_one(conn, engine, row_id, report)

        engine.db.transaction(_one, name="expire_signal")
    return report


__all__ = ["ExpiryReport", "due_expiries", "expire_signals"]
