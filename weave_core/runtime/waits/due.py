"""The due rows of waits: a ``TIMER``, ``POLL`` or ``SIGNAL`` pending row sent to its wait."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.engine import Connection

from weave_core.engine import Engine
from weave_core.planning.program import Program
from weave_core.runtime.history import History
from weave_core.runtime.pending import PendingKind
from weave_core.runtime.snapshot import LockedInstance
from weave_core.runtime.waits.polls import poll_due_txn
from weave_core.runtime.waits.signals import signal_due_txn
from weave_core.runtime.waits.timers import timer_due_txn


def wait_pending_txn(conn: Connection, engine: Engine, li: LockedInstance, history: History,
                     program: Program, kind: PendingKind, ref: str, now: datetime) -> bool:
    """Run a due ``TIMER`` / ``POLL`` / ``SIGNAL`` pending row (ref: the activation);
    False for a TIMER row of an activation without a wait record."""
    if kind is PendingKind.TIMER:
        return timer_due_txn(conn, engine, li, history, program, ref, now)
    if kind is PendingKind.POLL:
        poll_due_txn(conn, engine, li, history, program, ref, now)
    elif kind is PendingKind.SIGNAL:
        signal_due_txn(conn, engine, li, history, program, ref, now)
    return True


__all__ = ["wait_pending_txn"]
