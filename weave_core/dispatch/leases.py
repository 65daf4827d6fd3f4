"""Expiry on database time: leases that ran out, tasks past their deadline or start-by.

:func:`sweep_expired_leases` is what the tick calls (issue 5); the claim, heartbeat and
complete paths apply the same rules to the task they hold. Rules:

=====================================  =============================================================
situation                              outcome
=====================================  =============================================================
PENDING past its deadline              FAILED ``deadline_exceeded`` (delivered ``task.failed``)
PENDING past schedule-to-start         FAILED ``schedule_to_start_timeout``
RUNNING, lease expired, idempotent     retried after backoff within budget and deadline, else FAILED
RUNNING, lease expired, not idempotent ``effect_unknown`` and NEEDS_REVIEW (``task.needs_review``)
RUNNING, cancel requested, expired     CANCELLED if idempotent; NEEDS_REVIEW if not
=====================================  =============================================================
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

from weave_core.access.audit import write_audit
from weave_core.dispatch.delivery import finish_attempt_txn, record_event_txn, settle_txn
from weave_core.dispatch.model import AttemptEnd, TaskError, TaskStatus
from weave_core.dispatch.queues import lock_capacity_txn
from weave_core.dispatch.timing import backoff_delay, earliest, pending_start_by
from weave_core.dispatch.wakeup import note_available_txn
from weave_core.engine import Engine
from weave_core.foundation.errors import WeaveError
from weave_core.foundation.exactjson import JSON
from weave_core.foundation.limits import DEFAULT_LIMITS, Limits
from weave_core.observability.metrics import LEASE_EXPIRIES
from weave_core.observability.observe import ids
from weave_core.storage.db import Database
from weave_core.storage.locks import lock_task
from weave_core.storage.schema import weave_tasks

logger = logging.getLogger(__name__)

DEFER_ON_ERROR: Final = timedelta(seconds=30)
"""A task whose expiry cannot be applied (owner unverifiable) is looked at again later."""


def reschedule_txn(
    conn: Connection,
    task: Row[Any],
    *,
    now: datetime,
    actor: str,
    attempt_end: AttemptEnd,
    error: JSON,
    report_hash: str | None = None,
) -> bool:
    """Retry ``task`` (locked, RUNNING) after backoff if budget, deadline and intent allow.

    Returns False (and changes nothing) when it may not retry: the caller settles it.
    No event is delivered for a failure that will be retried (R-5.2).
    """
    if task.cancel_requested or int(task.attempts_used) >= int(task.max_attempts):
        return False
    available_at = now + backoff_delay(task, int(task.attempts_used))
    if task.deadline_at is not None and available_at >= task.deadline_at:
        return False
    revision = int(task.revision) + 1
    start_by = pending_start_by(task, available_at) if task.gate_open else None
    t = weave_tasks
    conn.execute(
        sa.update(t).where(t.c.task_id == task.task_id).values(
            status=TaskStatus.PENDING.value,
            revision=revision,
            available_at=available_at,
            start_by=start_by,
            timeout_at=earliest(start_by, task.deadline_at),
            updated_at=now,
        )
    )
    if task.current_attempt_id is not None:
        finish_attempt_txn(conn, task.current_attempt_id, now=now, end=attempt_end,
                           report_hash=report_hash)
    payload: dict[str, JSON] = {"error": error, "available_at": available_at.isoformat() + "Z"}
    record_event_txn(conn, task, revision=revision, event_type="task.retry_scheduled", now=now,
                     attempt_id=task.current_attempt_id, payload=payload)
    write_audit(conn, namespace=task.namespace, actor=actor, action="task.retry_scheduled",
                object_type="task", object_id=task.task_id,
                metadata={"revision": revision, "attempt_id": task.current_attempt_id,
                          "attempt_no": int(task.attempts_used), **payload}, at=now)
    if available_at <= now and task.gate_open:
        note_available_txn(conn, task.namespace, task.queue)
    return True


def expire_task_txn(
    conn: Connection, task: Row[Any], *, now: datetime, actor: str, limits: Limits
) -> str | None:
    """Apply the expiry rules (module docstring) to a locked task whose ``timeout_at`` has
    passed; the quota and queue locks are held. Returns what happened, None if nothing."""
    if task.timeout_at is None or task.timeout_at > now:
        return None
    status = TaskStatus(task.status)
    past_deadline = task.deadline_at is not None and task.deadline_at <= now
    if status == TaskStatus.PENDING:
        if past_deadline:
            err = TaskError("deadline_exceeded", "the task's deadline passed before it started",
                            retryable=False)
        elif task.start_by is not None and task.start_by <= now:
            err = TaskError("schedule_to_start_timeout",
                            "no worker started the task within its schedule-to-start timeout",
                            retryable=False)
        else:
            return None
        settle_txn(conn, task, now=now, status=TaskStatus.FAILED, actor=actor,
                   error=err.to_json(), limits=limits)
        return err.type
    if status != TaskStatus.RUNNING:
        return None
    end = AttemptEnd.DEADLINE_EXCEEDED if past_deadline else AttemptEnd.LEASE_EXPIRED
    err = TaskError(
        end.value,
        "the task's deadline passed while an attempt ran" if past_deadline
        else "the attempt's lease expired (no heartbeat or report in time)",
        retryable=not past_deadline and bool(task.idempotent),
        details={"attempt_id": task.current_attempt_id},
    )
    if not task.idempotent:
        settle_txn(conn, task, now=now, status=TaskStatus.NEEDS_REVIEW, actor=actor,
                   attempt_end=end, error=err.to_json(), effect_unknown=True, limits=limits)
        return "needs_review"
    if task.cancel_requested:
        settle_txn(conn, task, now=now, status=TaskStatus.CANCELLED, actor=actor,
                   attempt_end=end, error=err.to_json(), limits=limits)
        return "cancelled"
    if not past_deadline and reschedule_txn(
        conn, task, now=now, actor=actor, attempt_end=end, error=err.to_json()
    ):
        return "retry_scheduled"
    settle_txn(conn, task, now=now, status=TaskStatus.FAILED, actor=actor, attempt_end=end,
               error=err.to_json(), limits=limits)
    return "failed"


def expire_one(
    db: Database, namespace: str, task_id: str, queue: str, *, actor: str,
    limits: Limits = DEFAULT_LIMITS,
) -> str | None:
    """One transaction: lock quota, queue, task (in order) and apply the expiry rules."""

    def _expire(conn: Connection) -> str | None:
        now = db.now(conn)
        lock_capacity_txn(conn, namespace, [queue])
        task = lock_task(conn, task_id)
        if task is None:
            return None
        return expire_task_txn(conn, task, now=now, actor=actor, limits=limits)

    return db.transaction(_expire, name="dispatch_expire")


def _defer(db: Database, task_id: str) -> None:
    def _push(conn: Connection) -> None:
        now = db.now(conn)
        t = weave_tasks
        conn.execute(
            sa.update(t).where(t.c.task_id == task_id, t.c.timeout_at <= now)
            .values(timeout_at=now + DEFER_ON_ERROR)
        )

    db.transaction(_push, name="dispatch_expire_defer")


@dataclass
class SweepReport:
    """What one sweep did: outcome per task id, and the ids it had to defer."""

    handled: dict[str, str] = field(default_factory=dict)
    deferred: dict[str, str] = field(default_factory=dict)


def sweep_expired_leases(engine: Engine, limit: int = 100) -> SweepReport:
    """Apply the expiry rules to at most ``limit`` due tasks, one transaction each.

    Candidates come from ``ix_weave_tasks_timeout`` with a plain read (being selected
    grants nothing: each transaction re-reads under its locks). A task whose expiry raises
    a ``WeaveError`` (an unverifiable owner) is logged and looked at again 30 s later.
    """
    db = engine.db
    t = weave_tasks

    def _candidates(conn: Connection) -> list[Any]:
        now = db.now(conn)
        stmt = (
            sa.select(t.c.task_id, t.c.namespace, t.c.queue)
            .where(t.c.timeout_at <= now)
            .order_by(t.c.timeout_at, t.c.task_id)
            .limit(limit)
        )
        return list(conn.execute(stmt).all())

    report = SweepReport()
    for row in db.read(_candidates, name="dispatch_sweep_candidates"):
        try:
            outcome = expire_one(db, row.namespace, row.task_id, row.queue,
                                 actor=engine.actor, limits=engine.limits)
        except WeaveError as exc:
            logger.error("lease sweep: task %s: %s", row.task_id, exc)
            report.deferred[row.task_id] = exc.code
            _defer(db, row.task_id)
            continue
        if outcome is not None:
            report.handled[row.task_id] = outcome
            LEASE_EXPIRIES.labels(outcome).inc()  # committed: expire_one's own transaction
            logger.warning("task timed out: %s", outcome,
                           extra=ids(row.namespace, task=row.task_id))
    return report


__all__ = [
    "SweepReport",
    "expire_one",
    "expire_task_txn",
    "reschedule_txn",
    "sweep_expired_leases",
]
