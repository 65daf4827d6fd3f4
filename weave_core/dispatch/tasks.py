"""Creating, cancelling and reading tasks.

The runtime creates workflow tasks inside its own transaction with :func:`create_task_txn`
(after taking the quota and queue locks with ``lock_capacity_txn``, before the instance);
the standalone API uses :func:`create_task`, which opens its own transaction and audits.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

from weave_core.access.audit import write_audit
from weave_core.dispatch.delivery import record_event_txn, settle_txn
from weave_core.dispatch.errors import GateNotFoundError, TaskNotFoundError
from weave_core.dispatch.handoff import start_if_handed_off
from weave_core.dispatch.model import (
    OwnerKind,
    TaskSpec,
    TaskStatus,
    TaskView,
    check_name,
    handler_key,
    new_id,
)
from weave_core.dispatch.queues import lock_capacity_txn, reserve_txn
from weave_core.dispatch.timing import earliest
from weave_core.dispatch.wakeup import note_available_txn
from weave_core.foundation import exactjson
from weave_core.foundation.errors import PayloadTooLargeError, Problem, ValidationError
from weave_core.foundation.limits import DEFAULT_LIMITS, Limits
from weave_core.storage.db import Database
from weave_core.storage.locks import lock_task
from weave_core.storage.schema import weave_execution_gates, weave_task_events, weave_tasks
from weave_core.storage.statements import append_row, insert_rows


def _validate(spec: TaskSpec, now: datetime, limits: Limits) -> list[Problem]:
    problems: list[Problem] = []
    for value, what in (
        (spec.queue, "queue"), (spec.handler, "handler"), (spec.handler_version, "handler_version")
    ):
        try:
            check_name(value, what)
        except ValidationError as exc:
            problems.extend(exc.problems)
    if not 1 <= spec.max_attempts <= limits.max_task_attempts:
        problems.append(Problem("$.max_attempts", "out_of_range",
                                f"max_attempts must be 1..{limits.max_task_attempts}"))
    for name in ("schedule_to_start_s", "start_to_close_s", "heartbeat_timeout_s"):
        value = getattr(spec, name)
        if value is not None and not 1 <= value <= limits.max_deadline_seconds:
            problems.append(Problem(f"$.{name}", "out_of_range",
                                    f"{name} must be 1..{limits.max_deadline_seconds} seconds"))
    if spec.backoff_ms < 0 or spec.max_backoff_ms < 0 or spec.backoff_multiplier_milli < 1000:
        problems.append(Problem("$.retry", "out_of_range",
                                "backoff must be >= 0 and its multiplier >= 1"))
    if spec.deadline_at is not None and spec.deadline_at <= now:
        problems.append(Problem("$.deadline_at", "deadline_passed", "the deadline has passed"))
    if spec.owner_kind == OwnerKind.WORKFLOW_ACTIVATION and not spec.owner_id:
        problems.append(Problem("$.owner_id", "required", "a workflow task names its activation"))
    return problems


def create_task_txn(
    conn: Connection,
    *,
    namespace: str,
    spec: TaskSpec,
    now: datetime,
    limits: Limits = DEFAULT_LIMITS,
    gate_open: bool | None = None,
) -> str:
    """Create one PENDING task in the caller's transaction and return its id.

    Takes a unit of the namespace quota and of the queue capacity first; raises
    ``QuotaExceededError`` / ``QueueFullError`` (``LimitExceededError``) so the caller can
    roll back its savepoint (successors, R-6.5). Writes the ``task.created`` event; the
    caller writes the audit of the operation that asked for the task. The gate's current
    state is copied onto the task: ``gate_open`` when the caller holds the gate lock and
    knows it (the runtime's locked instance), else read here.
    """
    problems = _validate(spec, now, limits)
    if problems:
        raise ValidationError("invalid task", problems)
    input_text = exactjson.dumps(spec.input)
    size = len(input_text.encode("utf-8"))
    if size > limits.max_value_bytes:
        raise PayloadTooLargeError(
            f"task input of {size} bytes exceeds {limits.max_value_bytes} bytes",
            details={"limit_bytes": limits.max_value_bytes},
        )
    if spec.gate_id is None:
        gate_open = True
    elif gate_open is None:
        g = weave_execution_gates
        gate = conn.execute(
            sa.select(g.c.namespace, g.c.is_open).where(g.c.gate_id == spec.gate_id)
        ).one_or_none()
        if gate is None or gate.namespace != namespace:
            raise GateNotFoundError(f"gate {spec.gate_id!r} not found",
                                    details={"gate_id": spec.gate_id})
        gate_open = bool(gate.is_open)

    reserve_txn(conn, namespace, spec.queue, now)

    task_id = spec.task_id or new_id("tsk")
    start_by = None
    if gate_open and spec.schedule_to_start_s is not None:
        start_by = now + timedelta(seconds=spec.schedule_to_start_s)
    values: dict[str, Any] = {
        "task_id": task_id,
        "namespace": namespace,
        "queue": spec.queue,
        "owner_kind": spec.owner_kind.value,
        "owner_id": spec.owner_id,
        "handler": spec.handler,
        "handler_version": spec.handler_version,
        "handler_key": handler_key(spec.handler, spec.handler_version),
        "idempotent": spec.idempotent,
        "input": input_text,
        "max_attempts": spec.max_attempts,
        "attempts_used": 0,
        "backoff_ms": spec.backoff_ms,
        "backoff_multiplier_milli": spec.backoff_multiplier_milli,
        "max_backoff_ms": spec.max_backoff_ms,
        "schedule_to_start_s": spec.schedule_to_start_s,
        "start_to_close_s": spec.start_to_close_s,
        "heartbeat_timeout_s": spec.heartbeat_timeout_s,
        "deadline_at": spec.deadline_at,
        "status": TaskStatus.PENDING.value,
        "revision": 1,
        "available_at": now,
        "start_by": start_by,
        "timeout_at": earliest(start_by, spec.deadline_at),
        "gate_id": spec.gate_id,
        "gate_open": gate_open,
        "effect_unknown": False,
        "result": None,
        "error": None,
        "current_attempt_id": None,
        "cancel_requested": False,
        "created_at": now,
        "updated_at": now,
    }
    append_row(conn, weave_task_events, dict(
        namespace=namespace, task_id=task_id, revision=1, event_type="task.created",
        attempt_id=None, occurred_at=now, payload=None,
    ))
    started = start_if_handed_off(conn, values, now)  # the reporting worker's next task
    insert_rows(conn, weave_tasks, values)
    if gate_open and not started:
        note_available_txn(conn, namespace, spec.queue)
    return task_id


def create_task(
    db: Database,
    *,
    namespace: str,
    spec: TaskSpec,
    actor: str,
    limits: Limits = DEFAULT_LIMITS,
) -> TaskView:
    """Create one standalone task in its own transaction (audited)."""
    if spec.owner_kind != OwnerKind.STANDALONE:
        raise ValidationError("only standalone tasks are created directly",
                              [Problem("$.owner_kind", "not_allowed", "use the runtime")])

    def _create(conn: Connection) -> TaskView:
        now = db.now(conn)
        task_id = create_task_txn(conn, namespace=namespace, spec=spec, now=now, limits=limits)
        write_audit(conn, namespace=namespace, actor=actor, action="task.created",
                    object_type="task", object_id=task_id,
                    metadata={"queue": spec.queue, "handler": spec.handler,
                              "handler_version": spec.handler_version}, at=now)
        return _view(conn, namespace, task_id)

    return db.transaction(_create, name="create_task")


def _view(conn: Connection, namespace: str, task_id: str) -> TaskView:
    t = weave_tasks
    row = conn.execute(
        sa.select(t).where(t.c.task_id == task_id, t.c.namespace == namespace)
    ).one_or_none()
    if row is None:
        raise TaskNotFoundError(f"task {task_id!r} not found", details={"task_id": task_id})
    return TaskView.from_row(row)


def get_task_txn(conn: Connection, namespace: str, task_id: str) -> TaskView:
    """One task of the namespace (another namespace's task is not found)."""
    return _view(conn, namespace, task_id)


def get_task(db: Database, namespace: str, task_id: str) -> TaskView:
    return db.read(lambda conn: _view(conn, namespace, task_id), name="get_task")


def read_task_row(conn: Connection, namespace: str, task_id: str) -> Row[Any]:
    """The task row without locking (to learn its queue before locking in order)."""
    t = weave_tasks
    row = conn.execute(
        sa.select(t).where(t.c.task_id == task_id, t.c.namespace == namespace)
    ).one_or_none()
    if row is None:
        raise TaskNotFoundError(f"task {task_id!r} not found", details={"task_id": task_id})
    return row


def cancel_task_txn(
    conn: Connection,
    *,
    namespace: str,
    task_id: str,
    now: datetime,
    actor: str,
    reason: str | None = None,
    lock_capacity: bool = True,
    limits: Limits = DEFAULT_LIMITS,
    operation_id: str | None = None,
) -> TaskStatus:
    """Cancel a task in the caller's transaction; returns the task's status afterwards.

    PENDING: settles CANCELLED at once (permit released, ``task.cancelled`` delivered for a
    workflow task). RUNNING: ``cancel_requested`` is set; the worker sees it on its next
    heartbeat and reports ``cancelled`` (or its real outcome). Settled: nothing changes.
    Pass ``lock_capacity=False`` when the caller already holds the quota and queue locks.
    """
    peek = read_task_row(conn, namespace, task_id)
    if lock_capacity:
        lock_capacity_txn(conn, namespace, [peek.queue])
    task = lock_task(conn, task_id)
    assert task is not None
    status = TaskStatus(task.status)
    if status == TaskStatus.PENDING:
        settle_txn(conn, task, now=now, status=TaskStatus.CANCELLED, actor=actor, limits=limits,
                   error={"type": "cancelled", "message": reason or "cancelled before start",
                          "retryable": False},
                   operation_id=operation_id, audit_metadata={"reason": reason})
        return TaskStatus.CANCELLED
    if status == TaskStatus.RUNNING and not task.cancel_requested:
        t = weave_tasks
        conn.execute(sa.update(t).where(t.c.task_id == task_id)
                     .values(cancel_requested=True, updated_at=now))
        record_event_txn(conn, task, revision=int(task.revision),
                         event_type="task.cancel_requested", now=now,
                         attempt_id=task.current_attempt_id, payload={"reason": reason})
        write_audit(conn, namespace=namespace, actor=actor, action="task.cancel_requested",
                    object_type="task", object_id=task_id, operation_id=operation_id,
                    metadata={"reason": reason, "attempt_id": task.current_attempt_id}, at=now)
    return status


def cancel_task(
    db: Database, *, namespace: str, task_id: str, actor: str, reason: str | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> TaskView:
    """Cancel a standalone task (workflow tasks are cancelled through their workflow)."""

    def _cancel(conn: Connection) -> TaskView:
        now = db.now(conn)
        peek = read_task_row(conn, namespace, task_id)
        if peek.owner_kind != OwnerKind.STANDALONE:
            raise ValidationError("workflow tasks are cancelled through their workflow",
                                  [Problem("$", "workflow_task", "cancel the workflow")])
        cancel_task_txn(conn, namespace=namespace, task_id=task_id, now=now, actor=actor,
                        reason=reason, limits=limits)
        return _view(conn, namespace, task_id)

    return db.transaction(_cancel, name="cancel_task")


__all__ = [
    "cancel_task",
    "cancel_task_txn",
    "create_task",
    "create_task_txn",
    "get_task",
    "get_task_txn",
    "read_task_row",
]
