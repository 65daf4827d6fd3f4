"""Locks of level 6: activations, inbox rows, pending advances, wait records, signals,
poll rounds and, last, dispatch tasks (R-6.2)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

from weave_core.storage.locks.order import (
    _OBSERVER_KEY,
    LockLevel,
    _lock_held_or_key,
    _lock_key,
    _lock_many,
    lock_rows,
)
from weave_core.storage.schema import (
    weave_activations,
    weave_inbox,
    weave_pending_advances,
    weave_poll_rounds,
    weave_signals,
    weave_task_attempts,
    weave_tasks,
    weave_waits,
)

# --- runtime records ---------------------------------------------------------------------


def lock_activation(conn: Connection, activation_id: str) -> Row[Any] | None:
    """One activation, exclusive (level 6, after the instance's steps)."""
    return _lock_held_or_key(conn, weave_activations, "activation_id", activation_id)


def lock_activations(conn: Connection, activation_ids: Sequence[str]) -> Sequence[Row[Any]]:
    """Several activations, exclusive, in id order (a tick batch; level 6)."""
    return _lock_many(conn, LockLevel.RECORDS, weave_activations, "activation_id",
                      activation_ids)


def lock_inbox_row(conn: Connection, inbox_id: int) -> Row[Any] | None:
    """One inbox row, exclusive: always the last lock of a consumption (read it unlocked
    first to learn its instance, take the chain, then lock it and re-check)."""
    return _lock_key(conn, LockLevel.RECORDS, weave_inbox, {"id": inbox_id})


def lock_pending_advance(conn: Connection, pending_id: int) -> Row[Any] | None:
    """One pending-advance row, exclusive: the last lock of a deferred advance."""
    return _lock_held_or_key(conn, weave_pending_advances, "id", pending_id)


def lock_pending_advances(conn: Connection, pending_ids: Sequence[int]) -> Sequence[Row[Any]]:
    """Several pending-advance rows, exclusive, in id order (a tick batch; level 6)."""
    return _lock_many(conn, LockLevel.RECORDS, weave_pending_advances, "id", pending_ids)



# --- durable waits (issue 6): wait records, signals, poll rounds ------------------------
# Level 6, after the instance's steps and the activation: wait record -> signals (oldest
# first) -> poll round -> pending or inbox row -> dispatch task.


def lock_wait(conn: Connection, activation_id: str) -> Row[Any] | None:
    """The wait record of one activation (primary key)."""
    return _lock_held_or_key(conn, weave_waits, "activation_id", activation_id)


def lock_waits(conn: Connection, activation_ids: Sequence[str]) -> Sequence[Row[Any]]:
    """The wait records of several activations, in activation-id order (a tick batch)."""
    return _lock_many(conn, LockLevel.RECORDS, weave_waits, "activation_id", activation_ids)


def lock_open_waits(conn: Connection, instance_id: str) -> list[Row[Any]]:
    """The OPEN waits of an instance, in activation-id order (``ix_weave_waits_instance``)."""
    w = weave_waits
    return list(lock_rows(conn, LockLevel.RECORDS, w,
                          (w.c.instance_id == instance_id) & (w.c.state == "OPEN"),
                          order_by=(w.c.activation_id,)))


def lock_matching_signal(
    conn: Connection, *, instance_id: str, name: str, correlation_key: str,
    param_version: str, activation_id: str, accepted_by: datetime | None = None,
) -> Row[Any] | None:
    """The oldest ACCEPTED signal a wait may consume: same name, frozen correlation key and
    parameter version, bound to this activation or to none (an early signal); with
    ``accepted_by``, only one accepted at or before it (the boundary rule, R-7.2).

    Served by ``ix_weave_signals_match`` (equality on instance, state, name, key, version;
    order by ``accepted_at``, ``id``).
    """
    s = weave_signals
    where = ((s.c.instance_id == instance_id) & (s.c.state == "ACCEPTED") & (s.c.name == name)
             & (s.c.correlation_key == correlation_key) & (s.c.param_version == param_version)
             & ((s.c.target_activation_id.is_(None))
                | (s.c.target_activation_id == activation_id)))
    if accepted_by is not None:
        where = where & (s.c.accepted_at <= accepted_by)
    rows = lock_rows(conn, LockLevel.RECORDS, s, where, order_by=(s.c.accepted_at, s.c.id),
                     limit=1)
    return rows[0] if rows else None


def lock_bound_signals(conn: Connection, instance_id: str, activation_id: str
                       ) -> Sequence[Row[Any]]:
    """ACCEPTED signals bound to one activation (``ix_weave_signals_match`` prefix)."""
    s = weave_signals
    return lock_rows(conn, LockLevel.RECORDS, s,
                     (s.c.instance_id == instance_id) & (s.c.state == "ACCEPTED")
                     & (s.c.target_activation_id == activation_id),
                     order_by=(s.c.accepted_at, s.c.id))


def lock_signal(conn: Connection, row_id: int) -> Row[Any] | None:
    """One signal row by its id (primary key)."""
    return _lock_key(conn, LockLevel.RECORDS, weave_signals, {"id": row_id})


def lock_poll_round(conn: Connection, task_id: str) -> Row[Any] | None:
    """The poll round a task serves (``uq_weave_poll_rounds_task``)."""
    return _lock_key(conn, LockLevel.RECORDS, weave_poll_rounds, {"task_id": task_id})


# --- 6. records: dispatch tasks (after activations) ------------------------------------


def lock_task(conn: Connection, task_id: str) -> Row[Any] | None:
    """One dispatch task, exclusive. Taken after quota and queue (and the runtime's
    instance, gate and activation): a task lock is always the last in the chain."""
    return _lock_key(conn, LockLevel.RECORDS, weave_tasks, {"task_id": task_id})


_TASK_FENCED: dict[str, sa.Select[Any]] = {}


def _task_fenced_select(now_columns: Sequence[sa.ColumnElement[Any]]) -> sa.Select[Any]:
    t, a = weave_tasks, weave_task_attempts
    return (
        sa.select(t, a.c.attempt_id.label("attempt_found"),
                  a.c.report_hash.label("attempt_report_hash"),
                  a.c.finished_at.label("attempt_finished_at"),
                  a.c.close_by.label("attempt_close_by"), *now_columns)
        .select_from(t.outerjoin(a, (a.c.attempt_id == sa.bindparam("attempt"))
                                 & (a.c.task_id == t.c.task_id)))
        .where(t.c.task_id == sa.bindparam("task"))
    )


def lock_task_fenced(conn: Connection, task_id: str, attempt_id: str,
                     now_columns: Sequence[sa.ColumnElement[Any]]) -> Row[Any] | None:
    """The task, exclusive, with the fencing columns of one of its attempts
    (``attempt_found``, ``attempt_report_hash``, ``attempt_finished_at``,
    ``attempt_close_by``; NULL when it is not this task's) and ``now_columns`` (database
    time) in one statement: a step transaction's task lock, taken after its chain."""
    observer = conn.info.get(_OBSERVER_KEY)
    if observer is not None:
        observer(LockLevel.RECORDS, weave_tasks.name, False)
    stmt = _TASK_FENCED.get(conn.dialect.name)
    if stmt is None:
        stmt = _task_fenced_select(now_columns)
        if conn.dialect.name != "sqlite":
            stmt = stmt.with_for_update()  # the attempt row too (MariaDB has no OF)
        _TASK_FENCED[conn.dialect.name] = stmt
    return conn.execute(stmt, {"task": task_id, "attempt": attempt_id}).one_or_none()



CLAIM_COLUMNS: Final = (
    "task_id", "namespace", "handler", "handler_version", "input", "attempts_used", "revision",
    "heartbeat_timeout_s", "start_to_close_s", "deadline_at", "start_by", "cancel_requested",
    "available_at",
)
"""The task columns :func:`lock_claimable_tasks` returns (what starting an attempt reads)."""


def lock_claimable_tasks(
    conn: Connection,
    namespace: str,
    queue: str,
    handler_keys: Sequence[str],
    now: datetime,
    limit: int,
) -> list[Row[Any]]:
    """Due PENDING tasks of an open gate for these handlers, oldest first, ``SKIP LOCKED``.

    Served by ``ix_weave_tasks_claim`` (equality on namespace, queue, status, gate_open;
    range and order on available_at): no filesort, so only the rows handed out are locked
    (MariaDB fact 5). Rows of other handlers are read and released (READ COMMITTED).
    Returns only the columns a claim reads (:data:`CLAIM_COLUMNS`): a narrow row costs a
    fraction of the whole task row to transfer and decode.
    """
    observer = conn.info.get(_OBSERVER_KEY)
    if observer is not None:
        observer(LockLevel.RECORDS, weave_tasks.name, False)
    stmt = _CLAIMABLE.get(conn.dialect.name)
    if stmt is None:  # built once per dialect: every claim runs it (weave_core.storage.statements)
        t = weave_tasks
        stmt = (
            sa.select(*(t.c[name] for name in CLAIM_COLUMNS))
            .where(
                t.c.namespace == sa.bindparam("namespace"),
                t.c.queue == sa.bindparam("queue"),
                t.c.status == "PENDING",
                t.c.gate_open == True,  # noqa: E712 - SQL comparison, not Python truthiness
                t.c.available_at <= sa.bindparam("now"),
                t.c.handler_key.in_(sa.bindparam("keys", expanding=True)),
            )
            .order_by(t.c.available_at, t.c.task_id)
            .limit(sa.bindparam("limit", type_=sa.Integer))
        )
        if conn.dialect.name != "sqlite":
            stmt = stmt.with_for_update(skip_locked=True)
        _CLAIMABLE[conn.dialect.name] = stmt
    return list(conn.execute(stmt, {"namespace": namespace, "queue": queue, "now": now,
                                    "keys": sorted(set(handler_keys)), "limit": limit}).all())


_CLAIMABLE: dict[str, sa.Select[Any]] = {}


def lock_gate_tasks(conn: Connection, gate_id: str) -> list[Row[Any]]:
    """The unsettled tasks of a gate, exclusive, in task id order (``ix_weave_tasks_gate``)."""
    t = weave_tasks
    return list(
        lock_rows(
            conn,
            LockLevel.RECORDS,
            t,
            (t.c.gate_id == gate_id) & t.c.status.in_(("PENDING", "RUNNING")),
            order_by=(t.c.task_id,),
        )
    )
