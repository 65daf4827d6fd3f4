"""A signal wait's end: the signal that wins it consumed, those bound to a wait that ended
otherwise recorded as lost (R-7.1, R-7.3; inside the pending-advance transaction)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

from weave_core.engine import Engine
from weave_core.planning.program import Program
from weave_core.plugins.nodespec import Fact, FactKind
from weave_core.runtime.history import History
from weave_core.runtime.instances import iso, load_json
from weave_core.runtime.snapshot import LockedInstance
from weave_core.runtime.wait_cancel import lose_bound_txn
from weave_core.runtime.wait_records import (
    LoserClass,
    SignalState,
    WaitKind,
    WaitState,
    Winner,
    finish_wait_rows_txn,
    settle_wait_txn,
)
from weave_core.runtime.waits.settling import settle_step_txn
from weave_core.storage.schema import weave_signals


def consume_signal_txn(conn: Connection, engine: Engine, li: LockedInstance, history: History,
                       program: Program, act: Row[Any], wait: Row[Any], sig: Row[Any],
                       now: datetime) -> bool:
    """The signal wins the wait (version-checked); the step settles with its payload."""
    winner = Winner.RECEIPT if wait.kind == WaitKind.POLL.value else Winner.SIGNAL
    if not settle_wait_txn(conn, wait, WaitState.SATISFIED, winner, now=now,
                           winner_ref=sig.signal_id):
        return False
    s = weave_signals
    conn.execute(sa.update(s).where(s.c.id == sig.id, s.c.version == int(sig.version))
                 .values(state=SignalState.CONSUMED, version=int(sig.version) + 1,
                         consumed_by_activation_id=wait.activation_id, settled_at=now))
    finish_wait_rows_txn(conn, wait.instance_id, wait.activation_id, now)
    payload = load_json(sig.payload)
    source = "receipt" if winner is Winner.RECEIPT else "task"
    result = program.interpret(wait.step_id, Fact(FactKind.SIGNAL, payload=payload,
                                                   source=source))
    history.record("signal.consumed", step_id=wait.step_id, activation_id=wait.activation_id,
                   from_state=SignalState.ACCEPTED, to_state=SignalState.CONSUMED,
                   details={"signal_id": sig.signal_id, "accepted_at": iso(sig.accepted_at),
                            "deadline_at": iso(wait.deadline_at), "winner": winner.value})
    settle_step_txn(conn, engine, li, history, program, act, result, now=now,
                    fact_at=sig.accepted_at,
                    details={"fact": winner.value, "signal_id": sig.signal_id})
    lose_bound_txn(conn, history, wait, LoserClass.WAIT_ALREADY_SETTLED, now)
    return True


__all__ = ["consume_signal_txn"]
