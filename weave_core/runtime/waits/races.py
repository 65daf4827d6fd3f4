"""Cancel and resume of waits: the controls' side of the races (R-7.2, R-8.2, R-8.3).

:func:`cancel_waits_txn` ends every OPEN wait of an instance with the ``cancel`` winner on the
wait's version, in the caller's transaction (it holds the instance's chain). A signal,
timer or poll result that comes later finds the wait settled and is recorded as the loser
(``wait_already_settled``); it never advances. A poll with a round in flight keeps its step
ACTIVE until that round's result (or its cancellation) is collected, so CANCELLING ends
only when everything started has settled; the round's task is asked to cancel.

:func:`resume_waits_txn` re-arms due polls after a pause: one round at once when its time
passed during the pause (missed times are never replayed), deadlines unchanged.
"""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from weave_core.dispatch.tasks import cancel_task_txn
from weave_core.engine import Engine
from weave_core.planning.program import Program
from weave_core.planning.snapshot import Phase
from weave_core.plugins.nodespec import StepOutcome, StepResult
from weave_core.runtime.frozen import instance_limits
from weave_core.runtime.history import History
from weave_core.runtime.pending import PendingKind, schedule_txn
from weave_core.runtime.snapshot import LockedInstance
from weave_core.runtime.wait_records import (
    ROUND_RUNNING,
    LoserClass,
    WaitKind,
    WaitState,
    Winner,
    finish_wait_rows_txn,
    settle_wait_txn,
)
from weave_core.runtime.waits.locking import lock_open_waits
from weave_core.runtime.waits.polls import POLL_REASON
from weave_core.runtime.waits.signal_waits import lose_bound_txn
from weave_core.storage.locks import lock_activation
from weave_core.storage.schema import weave_activations, weave_poll_rounds

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


CANCELLED_RESULT = StepResult(StepOutcome.CANCELLED, reason=CANCELLED_REASON)


def resume_waits_txn(conn: Connection, li: LockedInstance, *, now: datetime) -> int:
    """After a resume: re-arm each OPEN poll whose next round is due (once, not per missed
    interval) or later; return how many POLL rows were armed."""
    armed = 0
    for wait in lock_open_waits(conn, li.instance_id):
        if wait.kind != WaitKind.POLL.value or wait.next_round_at is None:
            continue
        if wait.deadline_at is not None and now >= wait.deadline_at:
            continue
        schedule_txn(conn, namespace=li.namespace, instance_id=li.instance_id,
                     kind=PendingKind.POLL, ref=wait.activation_id,
                     due_at=max(now, wait.next_round_at), reason=POLL_REASON,
                     root_version=li.root_version, root_identity=li.root_identity, now=now)
        armed += 1
    return armed


__all__ = ["CANCELLED_RESULT", "cancel_step_txn", "cancel_waits_txn", "resume_waits_txn"]
