"""Timers and wait deadlines: the ``TIMER`` pending row of an activation (R-4.6, R-7.2).

One ``TIMER`` row per waiting activation (ref: the activation id), in the due index
``ix_weave_pending_advances_due``; no worker is held. When it is due, the tick (any node)
runs :func:`timer_due_txn` under the instance's lock chain:

- a ``timer`` wait: the step succeeds (``null``); "on time" for the instance deadline is the
  timer's due time;
- a ``signal`` wait with ``timeout_seconds``: the timeout races the signal on the wait's
  version. A signal accepted at or before ``deadline_at`` wins even if it is consumed now
  (the timeout is recorded as the loser, ``timeout_after_signal``); otherwise the timeout
  wins (``signal_timed_out``, the failure policy follows) and signals bound to the wait
  become ``LOST`` (``signal_after_deadline``);
- a ``poll`` wait: its deadline (see :mod:`weave_core.runtime.waits.polls`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.engine import Connection, Row

from weave_core.engine import Engine
from weave_core.planning.program import Program
from weave_core.plugins.nodespec import Fact, FactKind
from weave_core.runtime.history import History
from weave_core.runtime.instances import iso
from weave_core.runtime.snapshot import LockedInstance
from weave_core.runtime.wait_cancel import lose_bound_txn
from weave_core.runtime.wait_records import (
    LoserClass,
    WaitKind,
    WaitState,
    Winner,
    finish_wait_rows_txn,
    is_current,
    record_loser,
    settle_wait_txn,
)
from weave_core.runtime.waits.locking import lock_matching_signal, lock_wait
from weave_core.runtime.waits.polls import poll_deadline_txn
from weave_core.runtime.waits.settling import settle_step_txn
from weave_core.runtime.waits.signal_waits import consume_signal_txn
from weave_core.storage.locks import lock_activation


def timeout_txn(conn: Connection, engine: Engine, li: LockedInstance, history: History,
                program: Program, act: Row[Any], wait: Row[Any], now: datetime) -> bool:
    """The signal wait's timeout wins (no on-time signal): TIMED_OUT, step by ``interpret``."""
    if not settle_wait_txn(conn, wait, WaitState.TIMED_OUT, Winner.TIMEOUT, now=now,
                           reason="signal_timed_out"):
        return False
    finish_wait_rows_txn(conn, wait.instance_id, wait.activation_id, now)
    history.record("wait.timed_out", step_id=wait.step_id, activation_id=wait.activation_id,
                   from_state=WaitState.OPEN.value, to_state=WaitState.TIMED_OUT.value,
                   details={"deadline_at": iso(wait.deadline_at)})
    result = program.interpret(wait.step_id, Fact(FactKind.TIMEOUT))
    settle_step_txn(conn, engine, li, history, program, act, result, now=now,
                    fact_at=wait.deadline_at or now, details={"fact": "timeout"})
    lose_bound_txn(conn, history, wait, LoserClass.SIGNAL_AFTER_DEADLINE, now)
    return True


def timer_due_txn(conn: Connection, engine: Engine, li: LockedInstance, history: History,
                  program: Program, activation_id: str, now: datetime) -> bool:
    """A ``TIMER`` pending row is due (see the module docstring); False when the
    activation has no wait record (the kernel's own timer handling applies)."""
    act = lock_activation(conn, activation_id)
    wait = lock_wait(conn, activation_id)
    if wait is None:
        return False
    if wait.state != WaitState.OPEN.value:
        record_loser(history, wait, "timer", LoserClass.WAIT_ALREADY_SETTLED)
        return True
    if not is_current(li, act, wait):
        record_loser(history, wait, "timer", LoserClass.STALE_ACTIVATION)
        return True
    assert act is not None
    if wait.kind == WaitKind.TIMER.value:
        if settle_wait_txn(conn, wait, WaitState.SATISFIED, Winner.TIMER, now=now):
            # its only due row is this TIMER row, already marked done by the runner
            result = program.interpret(wait.step_id, Fact(FactKind.TIMER))
            settle_step_txn(conn, engine, li, history, program, act, result, now=now,
                            fact_at=wait.due_at or now,
                            details={"fact": "timer", "due_at": iso(wait.due_at)})
        return True
    if wait.kind == WaitKind.POLL.value:
        poll_deadline_txn(conn, engine, li, history, program, act, wait, now)
        return True
    # a signal wait's timeout: an on-time signal (accepted_at <= deadline_at) still wins
    on_time = lock_matching_signal(
        conn, instance_id=wait.instance_id, name=wait.signal_name,
        correlation_key=wait.correlation_key, param_version=wait.param_version,
        activation_id=activation_id, accepted_by=wait.deadline_at)
    if on_time is not None:
        record_loser(history, wait, "timeout", LoserClass.TIMEOUT_AFTER_SIGNAL,
                     details={"signal_id": on_time.signal_id,
                              "accepted_at": iso(on_time.accepted_at)})
        consume_signal_txn(conn, engine, li, history, program, act, wait, on_time, now)
        return True
    timeout_txn(conn, engine, li, history, program, act, wait, now)
    return True


__all__ = ["timeout_txn", "timer_due_txn"]
