"""Stopping an instance (R-8.3, R-8.4): no new steps, active work asked to stop, results
collected; CANCELLING ends only when everything started has settled.

:func:`stop_txn` runs in the caller's transaction under the instance's lock chain:

1. the execution gate closes (no claims, start authorisations or retries; started
   attempts keep renewing and reporting);
2. every active leaf step is stopped: a task still PENDING is cancelled at once (its
   ``task.cancelled`` result is delivered to the inbox and consumed like any result); a
   RUNNING task gets ``cancel_requested`` (its worker sees it on the next heartbeat and
   reports); a result already delivered but not yet consumed is left to the consumer;
   a step holding no worker settles ``CANCELLED`` here. Durable waits (timers, signal
   waits, polls) are ended first by :func:`~weave_core.runtime.wait_cancel.cancel_waits_txn`,
   on each wait record's version: the cancel wins an OPEN wait (a signal, timer or round
   result that comes later is recorded as the loser), or loses to the fact that ended it
   first; a poll with a round in flight stays ACTIVE until that round is collected;
3. the instance's pending rows close (a stopping instance needs no wake-ups);
4. :func:`~weave_core.runtime.consumer.settle_cancelling` ends CANCELLING if nothing is
   left (``CANCELLED``, ``FAILED`` for the failure policy, or ``NEEDS_REVIEW`` when an
   effect is unknown); otherwise the consumer does when the last result arrives.
"""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from weave_core.dispatch.model import UNSETTLED, InboxState, TaskStatus
from weave_core.dispatch.tasks import cancel_task_txn
from weave_core.engine import Engine
from weave_core.planning.program import Program
from weave_core.planning.snapshot import Phase
from weave_core.runtime.frozen import instance_limits
from weave_core.runtime.history import History
from weave_core.runtime.instances import ActivationState, InstanceStatus, ReviewReason
from weave_core.runtime.pending import close_all_txn
from weave_core.runtime.snapshot import LockedInstance
from weave_core.runtime.status import close_gate_txn, set_status, settle_cancelling
from weave_core.runtime.wait_cancel import cancel_waits_txn
from weave_core.storage.locks import lock_activation
from weave_core.storage.schema import weave_activations, weave_inbox, weave_tasks, weave_waits


def _result_waiting(conn: Connection, namespace: str, task_id: str) -> bool:
    i = weave_inbox
    return conn.execute(
        sa.select(sa.func.count()).select_from(i).where(
            i.c.namespace == namespace, i.c.source_task_id == task_id,
            i.c.state == InboxState.PENDING.value)
    ).scalar_one() > 0


def _has_wait(conn: Connection, activation_id: str) -> bool:
    w = weave_waits
    return conn.execute(sa.select(w.c.activation_id).where(
        w.c.activation_id == activation_id)).first() is not None


def settle_step_cancelled_txn(conn: Connection, li: LockedInstance, history: History,
                              step_id: str, reason: str, now: datetime) -> None:
    """Settle an active leaf that holds no worker as CANCELLED (activation and step)."""
    rec = li.step(step_id)
    assert rec is not None and rec.activation_id is not None
    act = lock_activation(conn, rec.activation_id)
    if act is not None and act.state == ActivationState.ACTIVE.value:
        a = weave_activations
        conn.execute(sa.update(a).where(a.c.activation_id == act.activation_id).values(
            state=ActivationState.CANCELLED.value, state_version=int(act.state_version) + 1,
            reason=reason, updated_at=now, settled_at=now))
    rec.phase, rec.version, rec.output, rec.reason = Phase.CANCELLED, rec.version + 1, None, reason
    li.put_step(rec)
    history.record("step.cancelled", step_id=step_id, activation_id=rec.activation_id,
                   from_state=Phase.ACTIVE.value, to_state=Phase.CANCELLED.value, reason=reason)


def stop_txn(conn: Connection, engine: Engine, li: LockedInstance, history: History,
             program: Program, *, reason: str, actor: str, operation_id: str | None,
             now: datetime) -> list[str]:
    """Stop the instance (module docstring). Returns the ids of tasks cancelled at once,
    whose ``task.cancelled`` results the caller may consume right after its commit."""
    close_gate_txn(conn, li, history, reason, now)
    cancel_waits_txn(conn, engine, li, history, program, now=now, reason=reason)
    settled_now: list[str] = []
    t = weave_tasks
    for step_id, rec in sorted(li.steps.items()):
        if rec.phase is not Phase.ACTIVE or program.is_composite(step_id):
            continue
        if rec.activation_id is None:
            continue
        act = lock_activation(conn, rec.activation_id)
        task_id = None if act is None else act.task_id
        status = None
        if task_id is not None:
            status = conn.execute(
                sa.select(t.c.status).where(t.c.task_id == task_id)
            ).scalar_one_or_none()
        if _has_wait(conn, rec.activation_id):
            # The waits' side ended it (above); a poll's round in flight is collected.
            if task_id is not None and _result_waiting(conn, li.namespace, task_id):
                settled_now.append(task_id)
            continue
        if task_id is not None and status is not None and TaskStatus(status) in UNSETTLED:
            after = cancel_task_txn(conn, namespace=li.namespace, task_id=task_id, now=now,
                                    actor=actor, reason=reason, lock_capacity=False,
                                    limits=instance_limits(conn, engine.limits,
                                                           li.config_hash),
                                    operation_id=operation_id)
            history.record("task.cancel_requested", step_id=step_id,
                           activation_id=rec.activation_id,
                           details={"task_id": task_id, "task_status": after.value})
            if after == TaskStatus.CANCELLED:
                settled_now.append(task_id)
        elif task_id is not None and _result_waiting(conn, li.namespace, task_id):
            continue  # the result is delivered: the consumer settles the step
        else:
            settle_step_cancelled_txn(conn, li, history, step_id, reason, now)
    close_all_txn(conn, li.instance_id, now)
    settle_cancelling(conn, li, history, program, now)
    return settled_now


def fail_after_settled_txn(conn: Connection, engine: Engine, li: LockedInstance,
                        history: History, program: Program, now: datetime) -> None:
    """R-8.4 FAIL_AFTER_SETTLED: go CANCELLING and stop the instance like a cancel does
    (:func:`stop_txn`): the gate closes, sibling tasks
    are asked to cancel, timers, signal waits and polls are cancelled on their wait
    record's version, and FAILED comes only once everything started has settled."""
    set_status(li, history, InstanceStatus.CANCELLING, now=now,
               reason=ReviewReason.TASK_FAILED.value)
    stop_txn(conn, engine, li, history, program, reason=ReviewReason.TASK_FAILED.value,
             actor=engine.actor, operation_id=None, now=now)


__all__ = ["fail_after_settled_txn", "settle_step_cancelled_txn", "stop_txn"]
