"""Queue capacity and the namespace task quota: reservation on create, release on settle.

An outstanding task (PENDING or RUNNING) holds one unit of its queue's capacity (the
"execution permit") and one of its namespace's quota ("usage"). Both are counters on rows
locked in the order of R-6.2 (quota, then queues sorted by name), changed by conditional
UPDATEs so that a full queue is detected without a read (MariaDB fact 4).

A transaction may keep its changes in a ledger instead and write them once at its end
(``dispatch.ledger``: a step's nets, a start's budget); :func:`reserve_txn` and
:func:`release_txn` route to it when one is open.

A counter's outstanding count is its row's ``outstanding`` minus its shards' ``released``
(``releases.outstanding_of``); a take compares that with the limit, reading the shards
from its snapshot (never above the truth, so never granting a unit that is not free).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from weave_core.access.audit import write_audit
from weave_core.dispatch.errors import QueueFullError, QuotaExceededError
from weave_core.dispatch.ledger import ledger_of
from weave_core.dispatch.model import (
    DEFAULT_NAMESPACE_QUOTA,
    DEFAULT_QUEUE_CAPACITY,
    check_name,
)
from weave_core.dispatch.releases import (
    QUOTA,
    create_shards,
    outstanding_of,
    prefetch,
    released,
)
from weave_core.foundation.errors import Problem, ValidationError
from weave_core.storage.db import Database
from weave_core.storage.locks import lock_namespace_quota, lock_queues
from weave_core.storage.schema import weave_namespace_quotas, weave_queues
from weave_core.storage.statements import insert_missing, run_prebuilt

MAX_CAPACITY = 10_000_000


@dataclass(frozen=True)
class QueueState:
    namespace: str
    name: str
    capacity: int
    outstanding: int


@dataclass(frozen=True)
class QuotaState:
    namespace: str
    task_quota: int
    outstanding: int


def _ensure_quota(conn: Connection, namespace: str, now: datetime) -> None:
    insert_missing(conn, weave_namespace_quotas, [{
        "namespace": namespace, "task_quota": DEFAULT_NAMESPACE_QUOTA, "outstanding": 0,
        "updated_at": now,
    }])
    create_shards(conn, namespace, QUOTA)


def _ensure_queue(conn: Connection, namespace: str, queue: str, now: datetime) -> None:
    insert_missing(conn, weave_queues, [{
        "namespace": namespace, "name": queue, "capacity": DEFAULT_QUEUE_CAPACITY,
        "outstanding": 0, "created_at": now, "updated_at": now,
    }])
    create_shards(conn, namespace, queue)


def lock_capacity_txn(conn: Connection, namespace: str, queues: Sequence[str]) -> None:
    """Take the quota lock, then the queue locks in sorted order (R-6.2 levels 2 and 3).

    The runtime calls this first in a transaction that will create or settle tasks, before
    it locks the instance; :func:`reserve_txn` and :func:`release_txn` then re-use the
    locks already held. Rows missing yet are created by the first reservation.
    """
    lock_namespace_quota(conn, namespace)
    lock_queues(conn, namespace, queues)
    prefetch(conn, namespace, [QUOTA, *queues])


_Q, _U = weave_namespace_quotas, weave_queues
# Built once (the hot path runs them for every task; see weave_core.storage.statements).
# ``released``: what the counter's release shards hold (dispatch.releases); the true count
# is ``outstanding - released``.
_TAKE_QUOTA = (
    sa.update(_Q)
    .where(_Q.c.namespace == sa.bindparam("ns"),
           _Q.c.outstanding - sa.bindparam("released") < _Q.c.task_quota)
    .values(outstanding=_Q.c.outstanding + 1, updated_at=sa.bindparam("now"))
)
_TAKE_PERMIT = (
    sa.update(_U)
    .where(_U.c.namespace == sa.bindparam("ns"), _U.c.name == sa.bindparam("queue"),
           _U.c.outstanding - sa.bindparam("released") < _U.c.capacity)
    .values(outstanding=_U.c.outstanding + 1, updated_at=sa.bindparam("now"))
)
_GIVE_PERMIT = (
    sa.update(_U)
    .where(_U.c.namespace == sa.bindparam("ns"), _U.c.name == sa.bindparam("queue"),
           _U.c.outstanding > sa.bindparam("released"))
    .values(outstanding=_U.c.outstanding - 1, updated_at=sa.bindparam("now"))
)
_GIVE_QUOTA = (
    sa.update(_Q)
    .where(_Q.c.namespace == sa.bindparam("ns"), _Q.c.outstanding > sa.bindparam("released"))
    .values(outstanding=_Q.c.outstanding - 1, updated_at=sa.bindparam("now"))
)


def reserve_txn(conn: Connection, namespace: str, queue: str, now: datetime) -> None:
    """Take one unit of the namespace quota and one of the queue capacity, or raise.

    Raises :class:`QuotaExceededError` or :class:`QueueFullError` with nothing changed by
    the failing step; the caller rolls back its savepoint (or transaction) to undo the
    quota unit taken before a full queue was found.
    """
    ledger = ledger_of(conn, namespace)
    if ledger is not None:
        ledger.reserve(queue)
        return
    params = {"ns": namespace, "queue": queue, "now": now,
              "released": released(conn, namespace, QUOTA)}
    if run_prebuilt(conn, "take_quota", lambda: _TAKE_QUOTA, params) == 0:
        _ensure_quota(conn, namespace, now)
        if run_prebuilt(conn, "take_quota", lambda: _TAKE_QUOTA, params) == 0:
            raise QuotaExceededError(
                f"namespace {namespace!r} has reached its task quota",
                details={"namespace": namespace},
            )
    params["released"] = released(conn, namespace, queue)
    if run_prebuilt(conn, "take_permit", lambda: _TAKE_PERMIT, params) == 0:
        _ensure_queue(conn, namespace, queue, now)
        if run_prebuilt(conn, "take_permit", lambda: _TAKE_PERMIT, params) == 0:
            raise QueueFullError(
                f"queue {queue!r} is at capacity", details={"namespace": namespace, "queue": queue}
            )


def release_txn(conn: Connection, namespace: str, queue: str, now: datetime) -> None:
    """Give back the permit and the quota unit of one task that settled.

    The caller already holds the quota and queue locks (taken in order before the task),
    or runs under a :class:`CapacityLedger`.
    """
    ledger = ledger_of(conn, namespace)
    if ledger is not None:
        ledger.release(queue)
        return
    params = {"ns": namespace, "queue": queue, "now": now}
    run_prebuilt(conn, "give_permit", lambda: _GIVE_PERMIT,
                 {**params, "released": released(conn, namespace, queue)})
    run_prebuilt(conn, "give_quota", lambda: _GIVE_QUOTA,
                 {**params, "released": released(conn, namespace, QUOTA)})


def _check_limit(value: int, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_CAPACITY:
        raise ValidationError(
            f"{what} must be an integer between 0 and {MAX_CAPACITY}",
            [Problem(f"$.{what}", "out_of_range", f"0..{MAX_CAPACITY}")],
        )


def set_queue_capacity(
    db: Database, namespace: str, queue: str, capacity: int, *, actor: str
) -> QueueState:
    """Set a queue's capacity (creating the queue if needed). Lowering it below what the
    queue holds refuses new reservations until enough settle (a step that passes its
    task's unit to the successor is not one: the count does not rise); nothing accepted
    is dropped."""
    check_name(queue, "queue")
    _check_limit(capacity, "capacity")

    def _set(conn: Connection) -> QueueState:
        now = db.now(conn)
        _ensure_queue(conn, namespace, queue, now)
        row = lock_queues(conn, namespace, [queue])[0]
        u = weave_queues
        conn.execute(
            sa.update(u).where(u.c.namespace == namespace, u.c.name == queue)
            .values(capacity=capacity, updated_at=now)
        )
        write_audit(conn, namespace=namespace, actor=actor, action="queue.capacity_set",
                    object_type="queue", object_id=queue,
                    metadata={"capacity": capacity, "previous": int(row.capacity)}, at=now)
        return QueueState(namespace, queue, capacity,
                          int(row.outstanding) - released(conn, namespace, queue))

    return db.transaction(_set, name="set_queue_capacity")


def set_namespace_quota(db: Database, namespace: str, quota: int, *, actor: str) -> QuotaState:
    """Set the namespace's quota of outstanding tasks."""
    _check_limit(quota, "quota")

    def _set(conn: Connection) -> QuotaState:
        now = db.now(conn)
        _ensure_quota(conn, namespace, now)
        row = lock_namespace_quota(conn, namespace)
        assert row is not None
        q = weave_namespace_quotas
        conn.execute(
            sa.update(q).where(q.c.namespace == namespace).values(task_quota=quota, updated_at=now)
        )
        write_audit(conn, namespace=namespace, actor=actor, action="namespace.quota_set",
                    object_type="namespace", object_id=namespace,
                    metadata={"task_quota": quota, "previous": int(row.task_quota)}, at=now)
        return QuotaState(namespace, quota,
                          int(row.outstanding) - released(conn, namespace, QUOTA))

    return db.transaction(_set, name="set_namespace_quota")


def get_queue(conn: Connection, namespace: str, queue: str) -> QueueState:
    """A queue's capacity and usage (defaults if the queue was never used)."""
    u = weave_queues
    row = conn.execute(
        sa.select(u.c.capacity, outstanding_of(u, u.c.name))
        .where(u.c.namespace == namespace, u.c.name == queue)
    ).one_or_none()
    if row is None:
        return QueueState(namespace, queue, DEFAULT_QUEUE_CAPACITY, 0)
    return QueueState(namespace, queue, int(row.capacity), int(row.outstanding))


def list_queues(conn: Connection, namespace: str) -> list[QueueState]:
    """The namespace's queues by name, with their true outstanding counts."""
    u = weave_queues
    rows = conn.execute(sa.select(u.c.name, u.c.capacity, outstanding_of(u, u.c.name))
                        .where(u.c.namespace == namespace).order_by(u.c.name)).all()
    return [QueueState(namespace, r.name, int(r.capacity), int(r.outstanding)) for r in rows]


def get_quota(conn: Connection, namespace: str) -> QuotaState:
    """The namespace's quota and usage (defaults if never used)."""
    q = weave_namespace_quotas
    row = conn.execute(
        sa.select(q.c.task_quota, outstanding_of(q, sa.literal(QUOTA)))
        .where(q.c.namespace == namespace)
    ).one_or_none()
    if row is None:
        return QuotaState(namespace, DEFAULT_NAMESPACE_QUOTA, 0)
    return QuotaState(namespace, int(row.task_quota), int(row.outstanding))


__all__ = [
    "QueueState",
    "QuotaState",
    "get_queue",
    "get_quota",
    "list_queues",
    "lock_capacity_txn",
    "release_txn",
    "reserve_txn",
    "set_namespace_quota",
    "set_queue_capacity",
]
