"""Worker reports: heartbeat (lease renewal) and complete (the result), fenced by attempt.

A report names its ``attempt_id``. Only the task's current attempt, RUNNING and within its
lease, changes the task. Everything else gets a documented answer:

=========================================  ===========================================
report                                     answer
=========================================  ===========================================
same attempt, same content, already taken  200 replay: nothing changes
same attempt, different content            409 ``report_conflict``: the first stands
superseded attempt (task moved on)         409 ``attempt_superseded``: recorded (with its
                                           content, as evidence) + audited
current attempt, lease expired             409 ``lease_expired``: expiry applied, recorded
                                           (with its content)
unknown attempt for this task              404 ``attempt_not_found``
=========================================  ===========================================
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

from weave_core.access.audit import write_audit
from weave_core.dispatch.delivery import record_event_txn, settle_txn
from weave_core.dispatch.errors import (
    AttemptNotFoundError,
    AttemptSupersededError,
    LeaseExpiredError,
    ReportConflictError,
    TaskNotFoundError,
)
from weave_core.dispatch.leases import expire_one, expire_task_txn, reschedule_txn
from weave_core.dispatch.model import (
    AttemptEnd,
    ReportOutcome,
    TaskError,
    TaskStatus,
    TaskView,
)
from weave_core.dispatch.queues import lock_capacity_txn
from weave_core.dispatch.tasks import get_task_txn
from weave_core.dispatch.timing import lease_seconds, lease_until
from weave_core.foundation import exactjson
from weave_core.foundation.errors import (
    ConflictError,
    PayloadTooLargeError,
    Problem,
    ValidationError,
)
from weave_core.foundation.exactjson import JSON
from weave_core.foundation.faults import fault_point
from weave_core.foundation.limits import DEFAULT_LIMITS, Limits
from weave_core.storage.db import Database
from weave_core.storage.locks import lock_task
from weave_core.storage.schema import weave_task_attempts, weave_tasks
from weave_core.storage.statements import update_keyed

_REPORTED = frozenset({AttemptEnd.SUCCEEDED, AttemptEnd.FAILED, AttemptEnd.CANCELLED})


@dataclass(frozen=True)
class Heartbeat:
    lease_expires_at: datetime
    cancel_requested: bool


@dataclass(frozen=True)
class Report:
    """A worker's result for one attempt (validated)."""

    outcome: ReportOutcome
    output: JSON = None
    error: TaskError | None = None

    def to_json(self) -> dict[str, JSON]:
        return {
            "outcome": self.outcome.value,
            "output": self.output,
            "error": None if self.error is None else self.error.to_json(),
        }

    @cached_property
    def canonical(self) -> str:
        """The report's canonical JSON, written once: its size is checked and its hash taken
        from the same text (a step did both, two writes of the same document)."""
        return exactjson.dumps(self.to_json())

    def content_hash(self) -> str:
        return exactjson.text_hash(self.canonical)

    def check(self, limits: Limits) -> None:
        problems: list[Problem] = []
        if self.outcome == ReportOutcome.FAILED and self.error is None:
            problems.append(Problem("$.error", "required", "a failed report carries an error"))
        if self.outcome != ReportOutcome.SUCCEEDED and self.output is not None:
            problems.append(Problem("$.output", "not_allowed", "only a success has output"))
        if problems:
            raise ValidationError("invalid report", problems)
        size = exactjson.text_size(self.canonical)
        if size > limits.max_value_bytes:
            raise PayloadTooLargeError(
                f"report of {size} bytes exceeds {limits.max_value_bytes} bytes",
                details={"limit_bytes": limits.max_value_bytes},
            )


@dataclass(frozen=True)
class Completion:
    """What a complete call did: the task afterwards, and whether it was a replay."""

    task: TaskView
    replay: bool = False


def fence_attempt_txn(conn: Connection, task_id: str, attempt_id: str) -> Row[Any]:
    """The fencing columns of ``attempt_id`` of ``task_id`` (``AttemptNotFoundError``)."""
    a = weave_task_attempts
    row: Any = conn.execute(  # only the columns the fencing reads (narrow is cheaper)
        sa.select(a.c.report_hash, a.c.finished_at, a.c.close_by)
        .where(a.c.attempt_id == attempt_id, a.c.task_id == task_id)
    ).one_or_none()
    if row is None:
        raise AttemptNotFoundError(
            f"attempt {attempt_id!r} does not belong to task {task_id!r}",
            details={"task_id": task_id, "attempt_id": attempt_id},
        )
    return cast("Row[Any]", row)


def heartbeat(
    db: Database,
    *,
    namespace: str,
    task_id: str,
    attempt_id: str,
    actor: str,
    limits: Limits = DEFAULT_LIMITS,
) -> Heartbeat:
    """Renew the attempt's lease; tells the worker whether cancellation was requested.

    Works under a closed gate (started attempts keep renewing). After the lease expired:
    the expiry is applied and ``LeaseExpiredError`` raised; from a superseded attempt:
    ``AttemptSupersededError`` (nothing is recorded for a refused heartbeat).
    """

    def _beat(conn: Connection) -> Heartbeat | str:
        now = db.now(conn)
        task = lock_task(conn, task_id)
        if task is None or task.namespace != namespace:
            raise TaskNotFoundError(f"task {task_id!r} not found", details={"task_id": task_id})
        attempt = fence_attempt_txn(conn, task_id, attempt_id)
        if (
            task.status != TaskStatus.RUNNING
            or task.current_attempt_id != attempt_id
            or attempt.finished_at is not None
        ):
            raise AttemptSupersededError(
                f"attempt {attempt_id!r} no longer holds task {task_id!r}",
                details={"task_id": task_id, "attempt_id": attempt_id,
                         "task_status": task.status},
            )
        if task.timeout_at is not None and task.timeout_at <= now:
            return str(task.queue)  # expired: applied below, in lock order
        lease = lease_until(now, lease_seconds(task), attempt.close_by, task.deadline_at)
        update_keyed(conn, weave_task_attempts, {"attempt_id": attempt_id},
                     {"lease_expires_at": lease, "heartbeat_at": now})
        update_keyed(conn, weave_tasks, {"task_id": task_id}, {"timeout_at": lease})
        return Heartbeat(lease, bool(task.cancel_requested))

    outcome = db.transaction(_beat, name="dispatch_heartbeat")
    if isinstance(outcome, Heartbeat):
        return outcome
    expire_one(db, namespace, task_id, outcome, actor=actor, limits=limits)
    raise LeaseExpiredError(
        f"the lease of attempt {attempt_id!r} expired",
        details={"task_id": task_id, "attempt_id": attempt_id},
    )


def _refuse_txn(
    conn: Connection, task: Row[Any], *, attempt_id: str, now: datetime, actor: str,
    reason: str, report: Report,
) -> None:
    payload: dict[str, JSON] = {
        "attempt_id": attempt_id, "reason": reason, "outcome": report.outcome.value,
        "report_hash": report.content_hash(),
    }
    # The event keeps the report's content as evidence (a late poll answer, a superseded
    # attempt's result); the audit row keeps its hash.
    record_event_txn(conn, task, revision=int(task.revision), event_type="task.report_refused",
                     now=now, attempt_id=attempt_id,
                     payload={**payload, "report": report.to_json()})
    write_audit(conn, namespace=task.namespace, actor=actor, action="task.report_refused",
                object_type="task", object_id=task.task_id, metadata=payload, at=now)


def settled_view(task: Row[Any], status: TaskStatus, revision: int, result: JSON,
                  error: JSON, now: datetime) -> TaskView:
    """The task as ``settle_txn`` just wrote it, from the locked row and what changed (no
    re-read: the reply costs no statement). Documents go through the same text form the
    row stores, so the view equals what a read returns."""
    return dataclasses.replace(
        TaskView.from_row(task), status=status, revision=revision,
        result=None if result is None else exactjson.loads_stored(exactjson.dumps(result)),
        error=None if error is None else exactjson.loads_stored(exactjson.dumps(error)),
        effect_unknown=bool(task.effect_unknown), updated_at=now,
    )


def complete(
    db: Database,
    *,
    namespace: str,
    task_id: str,
    attempt_id: str,
    report: Report,
    actor: str,
    limits: Limits = DEFAULT_LIMITS,
) -> Completion:
    """Take a worker's result for its attempt (see the module docstring for every case).

    One transaction, locks in the R-6.2 order: namespace quota → queue → task; then the
    result is settled through ``delivery.settle_txn`` (or a retry is scheduled). Refusals
    that must be recorded commit first and raise afterwards. Hot path: database time comes
    with the first (unlocked) read of the task's queue, and a settled task's answer is
    built from the locked row and what was written, not re-read.
    """
    report.check(limits)
    report_hash = report.content_hash()

    def _complete(conn: Connection) -> Completion | ConflictError:
        # Database time rides on the unlocked read that learns the queue (one round trip).
        peek = conn.execute(db.with_now(
            sa.select(weave_tasks.c.queue)
            .where(weave_tasks.c.task_id == task_id, weave_tasks.c.namespace == namespace)
        )).one_or_none()
        if peek is None:
            raise TaskNotFoundError(f"task {task_id!r} not found", details={"task_id": task_id})
        now = db.now_of(peek)
        lock_capacity_txn(conn, namespace, [peek.queue])
        task = lock_task(conn, task_id)
        assert task is not None
        attempt = fence_attempt_txn(conn, task_id, attempt_id)
        if attempt.report_hash is not None:
            if attempt.report_hash == report_hash:
                return Completion(get_task_txn(conn, namespace, task_id), replay=True)
            raise ReportConflictError(
                f"attempt {attempt_id!r} already reported a different result",
                details={"task_id": task_id, "attempt_id": attempt_id},
            )
        details = {"task_id": task_id, "attempt_id": attempt_id}
        if (
            task.status != TaskStatus.RUNNING
            or task.current_attempt_id != attempt_id
            or attempt.finished_at is not None
        ):
            _refuse_txn(conn, task, attempt_id=attempt_id, now=now, actor=actor,
                        reason="attempt_superseded", report=report)
            return AttemptSupersededError(
                f"attempt {attempt_id!r} no longer holds task {task_id!r}; report recorded, "
                "task unchanged", details=details)
        if task.timeout_at is not None and task.timeout_at <= now:
            _refuse_txn(conn, task, attempt_id=attempt_id, now=now, actor=actor,
                        reason="lease_expired", report=report)
            expire_task_txn(conn, task, now=now, actor=actor, limits=limits)
            return LeaseExpiredError(
                f"the lease of attempt {attempt_id!r} expired before the report; report "
                "recorded, expiry applied", details=details)
        fault_point("report.before_settle")
        result: JSON = None
        error: JSON = None
        if report.outcome == ReportOutcome.SUCCEEDED:
            status, result = TaskStatus.SUCCEEDED, report.output
            revision = settle_txn(conn, task, now=now, status=status, actor=actor,
                                  attempt_end=AttemptEnd.SUCCEEDED, report_hash=report_hash,
                                  result=result, limits=limits)
        elif report.outcome == ReportOutcome.CANCELLED:
            status = TaskStatus.CANCELLED
            error = None if report.error is None else report.error.to_json()
            revision = settle_txn(conn, task, now=now, status=status, actor=actor,
                                  attempt_end=AttemptEnd.CANCELLED, report_hash=report_hash,
                                  error=error, limits=limits)
        else:
            assert report.error is not None
            status, error = TaskStatus.FAILED, report.error.to_json()
            if report.error.retryable and reschedule_txn(
                conn, task, now=now, actor=actor, attempt_end=AttemptEnd.FAILED, error=error,
                report_hash=report_hash,
            ):
                return Completion(get_task_txn(conn, namespace, task_id))
            revision = settle_txn(conn, task, now=now, status=status, actor=actor,
                                  attempt_end=AttemptEnd.FAILED, report_hash=report_hash,
                                  error=error, limits=limits)
        return Completion(settled_view(task, status, revision, result, error, now))

    outcome = db.transaction(_complete, name="dispatch_complete")
    if isinstance(outcome, ConflictError):
        raise outcome
    return outcome


__all__ = [
    "Completion", "Heartbeat", "Report", "complete", "fence_attempt_txn", "heartbeat",
    "settled_view",
]
