"""Settling a task and delivering its result (R-5.1-R-5.3): one transaction, fixed order.

:func:`settle_txn` is the only way a task reaches a settled status. In the caller's
transaction, in this order (each step is a named fault point ``delivery.after_<step>``):

1. ``task``      the task and its attempt are updated (status, revision, result);
2. ``release``   the queue permit and the namespace quota unit are given back;
3. ``event``     the status event is written;
4. ``owner``     a workflow task's owning activation is verified (same namespace, its
                 ``task_id`` is this task, same gate), read without locking: the caller
                 already holds the task lock, the last in the chain, and never locks back
                 up (the consumer re-verifies under its own locks);
5. ``inbox``     a workflow task gets its inbox row with the frozen snapshot;
6. ``audit``     the audit row.

Any exception rolls back all of it. The unique keys of ``weave_inbox`` make a second
delivery of one (task, revision) impossible.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

from weave_core.access.audit import audit_row
from weave_core.dispatch.errors import TaskOwnerUnverifiedError
from weave_core.dispatch.model import (
    EVENT_BY_STATUS,
    SETTLED,
    SNAPSHOT_SCHEMA_VERSION,
    AttemptEnd,
    InboxState,
    OwnerKind,
    TaskStatus,
)
from weave_core.dispatch.queues import release_txn
from weave_core.foundation import exactjson
from weave_core.foundation.errors import PayloadTooLargeError
from weave_core.foundation.exactjson import JSON
from weave_core.foundation.faults import fault_point
from weave_core.foundation.limits import DEFAULT_LIMITS, Limits
from weave_core.storage.deferred import amend_later, deferring_now
from weave_core.storage.fused import queue_prebuilt
from weave_core.storage.inbox_ids import next_inbox_id
from weave_core.storage.schema import (
    weave_activations,
    weave_audit,
    weave_inbox,
    weave_poll_rounds,
    weave_task_attempts,
    weave_task_events,
    weave_tasks,
)
from weave_core.storage.statements import (
    append_row,
    insert_row_key,
    insert_rows,
    run_prebuilt,
    update_keyed,
)


def record_event_txn(
    conn: Connection,
    task: Row[Any],
    *,
    revision: int,
    event_type: str,
    now: datetime,
    attempt_id: str | None = None,
    payload: JSON = None,
) -> None:
    """One row of the task's status history (also used for refused reports)."""
    append_row(conn, weave_task_events, dict(
        namespace=task.namespace,
        task_id=task.task_id,
        revision=revision,
        event_type=event_type,
        attempt_id=attempt_id,
        occurred_at=now,
        payload=None if payload is None else exactjson.dumps(payload),
    ))


_A = weave_task_attempts
_FINISH_ATTEMPT = (  # built once: every report runs it (see weave_core.storage.statements)
    sa.update(_A)
    .where(_A.c.attempt_id == sa.bindparam("attempt"), _A.c.finished_at.is_(None))
    .values(finished_at=sa.bindparam("now"), outcome=sa.bindparam("outcome"),
            report_hash=sa.bindparam("report_hash"))
)


def _settle_and_finish(settled: dict[str, Any]) -> sa.Update:
    """The task's settling values and its attempt's end in one two-table UPDATE
    (MariaDB/MySQL only, storage/fused.py)."""
    t, a = weave_tasks, _A
    return (
        sa.update(t)
        .where(t.c.task_id == sa.bindparam("w_task_id"),
               a.c.attempt_id == sa.bindparam("attempt"), a.c.finished_at.is_(None))
        .values({**{t.c[name]: sa.bindparam(f"v_{name}") for name in settled},
                 a.c.finished_at: sa.bindparam("now"), a.c.outcome: sa.bindparam("outcome"),
                 a.c.report_hash: sa.bindparam("report_hash")})
    )


def finish_attempt_txn(
    conn: Connection,
    attempt_id: str,
    *,
    now: datetime,
    end: AttemptEnd,
    report_hash: str | None,
) -> None:
    """Close an attempt (only once: a finished attempt keeps its first ending). In a step
    transaction (the attempt checked unfinished under its lock) the UPDATE is queued with
    the other closing writes, and must match its one row."""
    run_prebuilt(conn, "finish_attempt", lambda: _FINISH_ATTEMPT,
                 {"attempt": attempt_id, "now": now, "outcome": end.value,
                  "report_hash": report_hash}, queue=True, rows=1)


def _is_round_of(conn: Connection, task: Row[Any]) -> bool:
    """A poll activation owns the task of every one of its rounds (the activation's
    ``task_id`` names the latest round only; ``uq_weave_poll_rounds_task`` serves this)."""
    r = weave_poll_rounds
    owner = conn.execute(
        sa.select(r.c.activation_id, r.c.namespace).where(r.c.task_id == task.task_id)
    ).one_or_none()
    return owner is not None and owner.activation_id == task.owner_id \
        and owner.namespace == task.namespace


def verify_owner_txn(conn: Connection, task: Row[Any], owner: Any = None) -> str:
    """The id of the activation that owns this workflow task, or refuse the result.

    Checks: the activation exists in the task's namespace, its ``task_id`` is this task (or
    the task is one of its poll rounds), and its gate is the task's gate. A plain read (see
    the module docstring), or ``owner``: the activation row the caller already locked.
    """
    act = weave_activations
    row = owner if owner is not None and owner.activation_id == task.owner_id else None
    if row is None:
        row = conn.execute(
            sa.select(act.c.namespace, act.c.task_id, act.c.gate_id).where(
                act.c.activation_id == task.owner_id
            )
        ).one_or_none()
    problem = None
    if task.owner_id is None:
        problem = "the task names no owning activation"
    elif row is None or row.namespace != task.namespace:
        problem = f"activation {task.owner_id!r} does not exist in namespace {task.namespace!r}"
    elif row.task_id != task.task_id and not _is_round_of(conn, task):
        problem = f"activation {task.owner_id!r} is bound to task {row.task_id!r}, not this one"
    elif row.gate_id != task.gate_id:
        problem = (
            f"activation {task.owner_id!r} has gate {row.gate_id!r}, the task {task.gate_id!r}"
        )
    if problem is not None:
        raise TaskOwnerUnverifiedError(
            f"result of task {task.task_id!r} refused: {problem}",
            details={"task_id": task.task_id, "owner_id": task.owner_id},
        )
    assert task.owner_id is not None
    return str(task.owner_id)


def build_snapshot(
    task: Row[Any],
    *,
    status: TaskStatus,
    revision: int,
    result: JSON,
    error: JSON,
    effect_unknown: bool,
) -> dict[str, JSON]:
    """The frozen snapshot (schema_version 1) the consumer reads instead of the task."""
    return {
        "schema_version": SNAPSHOT_SCHEMA_VERSION,
        "task_id": task.task_id,
        "queue": task.queue,
        "handler": task.handler,
        "handler_version": task.handler_version,
        "status": status.value,
        "revision": revision,
        "result": result,
        "error": error,
        "effect_unknown": effect_unknown,
        "current_attempt_id": task.current_attempt_id,
        "attempts_used": int(task.attempts_used),
    }


def settle_txn(
    conn: Connection,
    task: Row[Any],
    *,
    now: datetime,
    status: TaskStatus,
    actor: str,
    attempt_end: AttemptEnd | None = None,
    report_hash: str | None = None,
    result: JSON = None,
    error: JSON = None,
    effect_unknown: bool = False,
    limits: Limits = DEFAULT_LIMITS,
    operation_id: str | None = None,
    audit_metadata: dict[str, JSON] | None = None,
    owner: Any = None,
    delivered: list[dict[str, Any]] | None = None,
) -> int:
    """Settle ``task`` (locked, unsettled, with quota and queue locked before it, or under
    a capacity ledger) in the order of the module docstring. Returns the new revision.

    A step transaction passes ``owner``, the owning activation it already locked (no read
    again), and ``delivered``, which receives the inbox row as written (with its ``id``) so
    that it consumes the row without reading it back.
    """
    if status not in SETTLED:
        raise ValueError(f"{status} is not a settled status")
    assert TaskStatus(task.status) in (TaskStatus.PENDING, TaskStatus.RUNNING)
    revision = int(task.revision) + 1
    effect_unknown = effect_unknown or bool(task.effect_unknown)
    event_type = EVENT_BY_STATUS[status]

    # 1. task and attempt (in a step transaction: one statement, storage/fused.py)
    settled = {
        "status": status.value,
        "revision": revision,
        "result": None if result is None else exactjson.dumps(result),
        "error": None if error is None else exactjson.dumps(error),
        "effect_unknown": effect_unknown,
        "timeout_at": None,
        "start_by": None,
        "updated_at": now,
    }
    attempt_id = task.current_attempt_id
    if attempt_id is None or attempt_end is None:
        update_keyed(conn, weave_tasks, {"task_id": task.task_id}, settled)
    elif not queue_prebuilt(conn, "settle_and_finish", lambda: _settle_and_finish(settled), {
            "w_task_id": task.task_id, **{f"v_{k}": v for k, v in settled.items()},
            "attempt": attempt_id, "now": now, "outcome": attempt_end.value,
            "report_hash": report_hash}, rows=2):
        update_keyed(conn, weave_tasks, {"task_id": task.task_id}, settled)
        finish_attempt_txn(conn, attempt_id, now=now, end=attempt_end, report_hash=report_hash)
    fault_point("delivery.after_task")

    # 2. permit and usage
    release_txn(conn, task.namespace, task.queue, now)
    fault_point("delivery.after_release")

    # 3. status event
    record_event_txn(
        conn, task, revision=revision, event_type=event_type, now=now,
        attempt_id=task.current_attempt_id,
        payload={"error": error} if error is not None else None,
    )
    fault_point("delivery.after_event")

    inbox_id: int | None = None
    if task.owner_kind == OwnerKind.WORKFLOW_ACTIVATION:
        # 4. owning activation
        activation_id = verify_owner_txn(conn, task, owner)
        fault_point("delivery.after_owner_check")

        # 5. inbox row with the frozen snapshot
        snapshot = build_snapshot(
            task, status=status, revision=revision, result=result, error=error,
            effect_unknown=effect_unknown,
        )
        text = exactjson.dumps(snapshot)
        size = len(text.encode("utf-8"))
        if size > limits.max_snapshot_bytes:
            raise PayloadTooLargeError(
                f"result snapshot of {size} bytes exceeds {limits.max_snapshot_bytes} bytes",
                details={"limit_bytes": limits.max_snapshot_bytes},
            )
        inbox_row: dict[str, Any] = dict(
            namespace=task.namespace,
            event_id=f"{task.task_id}:{revision}",
            event_type=event_type,
            source_task_id=task.task_id,
            source_activation_id=activation_id,
            source_revision=revision,
            snapshot=text,
            state=InboxState.PENDING.value,
            available_at=now,
            row_version=1,
            created_at=now,
        )
        inbox_id = next_inbox_id(conn)  # MariaDB: numbered here (a step queues the INSERT)
        if inbox_id is None:
            inbox_id = insert_row_key(conn, weave_inbox, inbox_row)
        else:
            queued = {"id": inbox_id, **inbox_row}
            insert_rows(conn, weave_inbox, queued)
            if deferring_now(conn):  # consumed in this transaction, it is written once
                amend_later(conn, (weave_inbox.name, inbox_id), queued)
        if delivered is not None:
            delivered.append({**inbox_row, "id": inbox_id})
        fault_point("delivery.after_inbox")

    # 6. audit
    metadata: dict[str, JSON] = {
        "revision": revision,
        "attempt_id": task.current_attempt_id,
        "effect_unknown": effect_unknown,
    }
    if inbox_id is not None:
        metadata["inbox_id"] = inbox_id
    if error is not None:
        metadata["error"] = error
    metadata.update(audit_metadata or {})
    # Appended: inside a step transaction it goes out with the workflow's audit row.
    append_row(conn, weave_audit, audit_row(
        namespace=task.namespace, actor=actor, action=event_type, object_type="task",
        object_id=task.task_id, operation_id=operation_id, metadata=metadata, at=now,
    ))
    fault_point("delivery.after_audit")
    return revision


__all__ = [
    "build_snapshot",
    "finish_attempt_txn",
    "record_event_txn",
    "settle_txn",
    "verify_owner_txn",
]
