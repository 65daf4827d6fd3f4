"""Cancelling an instance's waits (R-7.2, R-8.2, R-8.3): every OPEN wait ended with the
``cancel`` winner on its version, its step cancelled, the signals bound to it recorded as
lost. Below ``stopping`` and the waits' own endings, which both call it.

A signal, timer or poll result that comes later finds the wait settled and is recorded as
the loser (``wait_already_settled``); it never advances. A poll with a round in flight keeps
its step ACTIVE until that round's result (or its cancellation) is collected, so CANCELLING
ends only when everything started has settled; the round's task is asked to cancel.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

from weave_core.dispatch.tasks import cancel_task_txn
from weave_core.engine import Engine
from weave_core.planning.program import Program
from weave_core.planning.snapshot import Phase
from weave_core.runtime.frozen import instance_limits
from weave_core.runtime.history import History
from weave_core.runtime.instances import iso
from weave_core.runtime.snapshot import LockedInstance
from weave_core.runtime.wait_records import (
    ROUND_RUNNING,
    LoserClass,
    SignalState,
    WaitKind,
    WaitState,
    Winner,
    finish_wait_rows_txn,
    record_loser,
    settle_wait_txn,
)
from weave_core.storage.locks import lock_activation, lock_bound_signals, lock_open_waits, lock_wait
from weave_core.storage.schema import weave_activations, weave_poll_rounds, weave_signals


def lose_bound_txn(conn: Connection, history: History, wait: Row[Any],
                   classification: LoserClass, now: datetime) -> int:
    """Signals bound to a wait that ended otherwise: LOST, each recorded; none advances."""
    lost = 0
    bound = lock_bound_signals(conn, wait.instance_id, wait.activation_id)
    if bound:
        wait = lock_wait(conn, wait.activation_id) or wait  # its winner, for the record
    for sig in bound:
        s = weave_signals
        conn.execute(sa.update(s).where(s.c.id == sig.id, s.c.version == int(sig.version))
                     .values(state=SignalState.LOST, version=int(sig.version) + 1,
                             settled_at=now, reason=classification.value))
        record_loser(history, wait, "signal", classification,
                     details={"signal_id": sig.signal_id, "accepted_at": iso(sig.accepted_at)})
        lost += 1
    return lost


CANCELLED_REASON = "cancelled"


def _round_running(conn: Connection, activation_id: str, round_no: int) -> bool:
    r = weave_poll_rounds
    return conn.execute(sa.select(r.c.state).where(
        r.c.activation_id == activation_id, r.c.round == round_no)
    ).scalar_one_or_none() == ROUND_RUNNING


def cancel_waits_txn(conn: Connection, engine: Engine, li: LockedInstance, history: History,
                     program: Program, *, now: datetime, reason: str = CANCELLED_REASON
                     ) -> int:
    """Cancel every OPEN wait of the instance (the caller holds the chain and decides the
    instance status, e.g. CANCELLING); return how many waits this call ended."""
    ended = 0
    for wait in lock_open_waits(conn, li.instance_id):
        act = lock_activation(conn, wait.activation_id)
        if not settle_wait_txn(conn, wait, WaitState.CANCELLED, Winner.CANCEL, now=now,
                               reason=reason):
            continue
        ended += 1
        finish_wait_rows_txn(conn, li.instance_id, wait.activation_id, now)
        history.record("wait.cancelled", step_id=wait.step_id,
                       activation_id=wait.activation_id, from_state=WaitState.OPEN.value,
                       to_state=WaitState.CANCELLED.value, reason=reason)
        lose_bound_txn(conn, history, wait, LoserClass.WAIT_ALREADY_SETTLED, now)
        if act is None or act.state != "ACTIVE":
            continue
        if (wait.kind == WaitKind.POLL.value and act.task_id is not None
                and _round_running(conn, wait.activation_id, int(wait.current_round))):
            cancel_task_txn(conn, namespace=li.namespace, task_id=act.task_id, now=now,
                            actor=engine.actor, reason=reason, lock_capacity=False,
                            limits=instance_limits(conn, engine.limits, li.config_hash))
            history.record("task.cancel_requested", step_id=wait.step_id,
                           activation_id=wait.activation_id, details={"task_id": act.task_id})
            continue  # the step settles when the round's result is collected
        cancel_step_txn(conn, li, history, act, now=now, reason=reason)
    return ended


def cancel_step_txn(conn: Connection, li: LockedInstance, history: History, act: object, *,
                    now: datetime, reason: str) -> None:
    """Mark a waiting step and its activation CANCELLED (no successor)."""
    step_id: str = act.step_id  # type: ignore[attr-defined]  # a Row of weave_activations
    activation_id: str = act.activation_id  # type: ignore[attr-defined]
    state_version = int(act.state_version)  # type: ignore[attr-defined]
    step = li.step(step_id)
    if step is None or step.phase is not Phase.ACTIVE or step.activation_id != activation_id:
        return
    step.phase, step.version, step.output, step.reason = (Phase.CANCELLED, step.version + 1,
                                                          None, reason)
    li.put_step(step)
    a = weave_activations
    conn.execute(sa.update(a).where(a.c.activation_id == activation_id).values(
        state=Phase.CANCELLED.value, state_version=state_version + 1, reason=reason,
        updated_at=now, settled_at=now))
    history.record("step.cancelled", step_id=step_id, activation_id=activation_id,
                   from_state=Phase.ACTIVE.value, to_state=Phase.CANCELLED.value,
                   reason=reason, details={"fact": "cancel"})


__all__ = ["CANCELLED_REASON", "cancel_step_txn", "cancel_waits_txn", "lose_bound_txn"]
