"""The one lock order (R-6.2), and the only module that issues locking reads.

Every transaction that takes row locks takes them in this order, and only downwards:

1. ``identity``         the namespace row, **shared** (every operation in the namespace);
2. ``namespace_quota``  the namespace's quota/usage row, exclusive;
3. ``queues``           the queues the pinned definition version uses, exclusive, in
                        sorted queue-name order;
4. ``instance``         the workflow instance row, exclusive;
5. ``gate``             the instance's execution gate, exclusive;
6. ``records``          activations/steps and consumption records, exclusive, in id order.

A transaction may skip levels, but never locks a level above one it already holds (and
never holds an inbox row lock and then locks back up this chain). Two transactions that
follow one order cannot deadlock on these rows; any deadlock left (gap locks, secondary
indexes) is retried whole by ``Database.transaction``.

A tick batch (several instances of one namespace in one transaction) takes the order
across the batch: levels 1 to 3 once, then every instance row in id order, every gate in id
order, every instance's steps; only then each instance's own level-6 records, instance by
instance in id order. Every other transaction holds at most one instance, so it waits for
the batch at the first instance row they share and never holds a row the batch still needs.

Why a module of its own: a locking read anywhere else is a review finding. Everything that
locks goes through :func:`lock_rows` / :func:`lock_one` (or a named function below built on
them), each tagged with its :class:`LockLevel`, so a test can record the levels a
transaction visits and assert they never go back up (RELIABILITY.md, family T1).

Adding a lock (later issues): write ``lock_<thing>(conn, ...)`` here on top of
:func:`lock_rows` with the right :class:`LockLevel`; give the query an index that serves
it (a locking read locks every row it scans); add the table to the level's ``tables`` in
:data:`LOCK_ORDER`; take several rows of one level in a sorted order.

Dialects: MariaDB/MySQL use ``FOR UPDATE`` and ``LOCK IN SHARE MODE`` (MariaDB has no
``FOR SHARE``; SQLAlchemy picks the right spelling). SQLite has no row locks: the same
functions issue plain SELECTs, which is safe because every write transaction there starts
with ``BEGIN IMMEDIATE`` and so holds the database write lock already.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from enum import IntEnum
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

from weave_core.storage.deferred import send_with
from weave_core.storage.schema import (
    weave_activations,
    weave_execution_gates,
    weave_inbox,
    weave_instances,
    weave_namespace_quotas,
    weave_namespaces,
    weave_pending_advances,
    weave_poll_rounds,
    weave_queues,
    weave_signals,
    weave_steps,
    weave_task_attempts,
    weave_tasks,
    weave_waits,
)
from weave_core.storage.statements import select_keyed


class LockLevel(IntEnum):
    """The rank of a lock in R-6.2: a transaction only ever moves to a higher rank."""

    IDENTITY = 1
    NAMESPACE_QUOTA = 2
    QUEUES = 3
    INSTANCE = 4
    GATE = 5
    RECORDS = 6


@dataclass(frozen=True)
class LockStep:
    """One level of the lock order: its rank, mode, and the tables locked at that level."""

    level: LockLevel
    shared: bool
    tables: tuple[str, ...]
    note: str


LOCK_ORDER: Final[tuple[LockStep, ...]] = (
    LockStep(
        LockLevel.IDENTITY,
        True,
        ("weave_namespaces", "weave_api_tokens"),
        "namespace row, shared (exclusive only to change the namespace or a token)",
    ),
    LockStep(
        LockLevel.NAMESPACE_QUOTA, False, ("weave_namespace_quotas",), "namespace task quota"
    ),
    LockStep(
        LockLevel.QUEUES, False, ("weave_queues",), "queues of the pinned version, sorted by name"
    ),
    LockStep(LockLevel.INSTANCE, False, ("weave_instances",), "workflow instance"),
    LockStep(LockLevel.GATE, False, ("weave_execution_gates",), "execution gate of the instance"),
    LockStep(
        LockLevel.RECORDS,
        False,
        (
            "weave_steps",
            "weave_activations",
            "weave_inbox",
            "weave_pending_advances",
            "weave_waits",
            "weave_signals",
            "weave_poll_rounds",
            "weave_tasks",
        ),
        "steps, activations, consumption records (inbox rows, pending advances); "
        "dispatch tasks last",
    ),
)
"""R-6.2 as data, in order. ``tables`` grows as later issues add their tables."""

LockObserver = Callable[[LockLevel, str, bool], None]
"""Called as (level, table name, shared) before every locking read (tests, T1)."""

_OBSERVER_KEY: Final = "weave_lock_observer"


@contextmanager
def observing_locks(conn: Connection, observer: LockObserver) -> Iterator[None]:
    """Report every lock taken on ``conn`` inside the block to ``observer``.

    Tests use it to assert that a transaction walks :data:`LOCK_ORDER` downwards only.
    (``conn.info`` lives with the pooled DBAPI connection, hence the context manager.)
    """
    conn.info[_OBSERVER_KEY] = observer
    try:
        yield
    finally:
        conn.info.pop(_OBSERVER_KEY, None)


_HELD_KEY: Final = "weave_held_rows"


@contextmanager
def holding(conn: Connection, table: sa.Table, rows: dict[Any, Row[Any]]) -> Iterator[None]:
    """Rows of ``table`` this transaction has just locked in one read (a batch), by key.

    Inside the block, the next named lock of one of these keys (:func:`lock_activation`,
    :func:`lock_wait`, :func:`lock_pending_advance`) returns the row without a query —
    once: the row is handed out as it was locked, and a second lock of the same key
    queries again and sees what this transaction wrote since.
    """
    held: dict[tuple[str, Any], Row[Any]] = conn.info.setdefault(_HELD_KEY, {})
    held.update({(table.name, key): row for key, row in rows.items()})
    try:
        yield
    finally:
        for key in rows:
            held.pop((table.name, key), None)


def _take_held(conn: Connection, table: sa.Table, key: Any) -> Row[Any] | None:
    held: dict[tuple[str, Any], Row[Any]] | None = conn.info.get(_HELD_KEY)
    return None if not held else held.pop((table.name, key), None)


def lock_rows(
    conn: Connection,
    level: LockLevel,
    table: sa.Table,
    where: sa.ColumnElement[bool],
    *,
    columns: Sequence[sa.ColumnElement[Any]] | None = None,
    order_by: Sequence[sa.ColumnElement[Any]] = (),
    shared: bool = False,
    skip_locked: bool = False,
    limit: int | None = None,
) -> Sequence[Row[Any]]:
    """Lock the rows of ``table`` matching ``where`` and return them.

    ``order_by`` fixes the order rows are locked in when several match; ``skip_locked``
    (exclusive locks only) is for claim/scan queries, which must be served by an index.
    """
    if skip_locked and shared:
        raise ValueError("SKIP LOCKED is only used with exclusive locks")
    observer = conn.info.get(_OBSERVER_KEY)
    if observer is not None:
        observer(level, table.name, shared)
    stmt = sa.select(*(columns or (table,))).select_from(table).where(where)
    if order_by:
        stmt = stmt.order_by(*order_by)
    if limit is not None:
        stmt = stmt.limit(limit)
    if conn.dialect.name != "sqlite":  # SQLite: BEGIN IMMEDIATE already serialises writers
        stmt = stmt.with_for_update(read=shared, skip_locked=skip_locked)
    return conn.execute(stmt).all()


def lock_one(
    conn: Connection,
    level: LockLevel,
    table: sa.Table,
    where: sa.ColumnElement[bool],
    *,
    shared: bool = False,
) -> Row[Any] | None:
    """Lock the one row matching ``where`` (a key lookup), or return None if there is none."""
    rows = lock_rows(conn, level, table, where, shared=shared)
    if len(rows) > 1:
        raise ValueError(f"lock_one matched {len(rows)} rows of {table.name}")
    return rows[0] if rows else None


def _lock_keyed(
    conn: Connection, level: LockLevel, table: sa.Table, keys: dict[str, Any], *,
    shared: bool = False, order_by: tuple[str, ...] = (),
    columns: tuple[str, ...] | None = None,
) -> Sequence[Row[Any]]:
    """:func:`lock_rows` by equality on columns, with a statement built once per shape
    (:mod:`weave_core.statements`): the named locks below are the hot path's."""
    observer = conn.info.get(_OBSERVER_KEY)
    if observer is not None:
        observer(level, table.name, shared)
    return select_keyed(conn, table, keys, lock="shared" if shared else "exclusive",
                        order_by=order_by, columns=columns)


def _lock_key(
    conn: Connection, level: LockLevel, table: sa.Table, keys: dict[str, Any], *,
    shared: bool = False, columns: tuple[str, ...] | None = None,
) -> Row[Any] | None:
    """:func:`lock_one` by equality on columns (see :func:`_lock_keyed`)."""
    rows = _lock_keyed(conn, level, table, keys, shared=shared, columns=columns)
    if len(rows) > 1:
        raise ValueError(f"lock_one matched {len(rows)} rows of {table.name}")
    return rows[0] if rows else None


def _lock_held_or_key(conn: Connection, table: sa.Table, column: str, key: Any
                      ) -> Row[Any] | None:
    """A level-6 row by its key: the one a batch already locked (:func:`holding`), else
    a keyed lock."""
    held = _take_held(conn, table, key)
    if held is not None:
        return held
    return _lock_key(conn, LockLevel.RECORDS, table, {column: key})


def _lock_many(conn: Connection, level: LockLevel, table: sa.Table, column: str,
               keys: Sequence[Any], *, skip_locked: bool = False) -> Sequence[Row[Any]]:
    """The rows of several keys of one level, in key order (a tick batch)."""
    col = table.c[column]
    return lock_rows(conn, level, table, col.in_(sorted(set(keys))), order_by=(col,),
                     skip_locked=skip_locked)


# --- 1. identity ---------------------------------------------------------------------


def lock_namespace_shared(conn: Connection, namespace: str, *,
                          columns: tuple[str, ...] | None = None) -> Row[Any] | None:
    """The identity lock: the namespace row, shared; None if the namespace does not exist.

    Shared, so operations in one namespace do not serialise on it; disabling or deleting
    the namespace (exclusive) waits for them. ``columns``: only these (the hot path's).
    """
    return _lock_key(conn, LockLevel.IDENTITY, weave_namespaces, {"name": namespace},
                     shared=True, columns=columns)


def lock_namespace_exclusive(conn: Connection, namespace: str) -> Row[Any] | None:
    """The namespace row, exclusive: for changes to the namespace itself (disable)."""
    return _lock_key(conn, LockLevel.IDENTITY, weave_namespaces, {"name": namespace})


# --- 2. namespace quota ----------------------------------------------------------------


def lock_namespace_quota(conn: Connection, namespace: str) -> Row[Any] | None:
    """The namespace's task quota row, exclusive (None until the first task creates it)."""
    return _lock_key(conn, LockLevel.NAMESPACE_QUOTA, weave_namespace_quotas,
                     {"namespace": namespace})


def try_lock_namespace_quota(conn: Connection, namespace: str) -> Row[Any] | None:
    """The quota row, exclusive, only if no other transaction holds it (``SKIP LOCKED``).

    The one lock allowed out of order: a step transaction that settled a task without the
    capacity locks gives its unit back at its end (``dispatch.queues.CapacityLedger``).
    A lock that never waits cannot close a deadlock cycle, so it is not reported to a lock
    observer; None (held elsewhere) makes the caller re-run in order.
    """
    q = weave_namespace_quotas
    rows = _skip_locked(conn, q, q.c.namespace == namespace, (q.c.namespace,))
    return rows[0] if rows else None


def try_lock_queues(conn: Connection, namespace: str, names: Sequence[str]) -> list[Row[Any]]:
    """The queue rows named that no other transaction holds (see
    :func:`try_lock_namespace_quota`); the caller compares the count."""
    q = weave_queues
    return list(_skip_locked(conn, q, (q.c.namespace == namespace)
                             & q.c.name.in_(sorted(set(names))), (q.c.name,)))


def _skip_locked(conn: Connection, table: sa.Table, where: sa.ColumnElement[bool],
                 order_by: tuple[sa.ColumnElement[Any], ...]) -> Sequence[Row[Any]]:
    stmt = sa.select(*order_by).where(where).order_by(*order_by)
    if conn.dialect.name != "sqlite":  # SQLite: BEGIN IMMEDIATE holds the write lock
        stmt = stmt.with_for_update(skip_locked=True)
    return conn.execute(stmt).all()


# --- 3. queues -------------------------------------------------------------------------


def lock_queues(conn: Connection, namespace: str, names: Sequence[str]) -> list[Row[Any]]:
    """The queue rows named, exclusive, locked in sorted name order (missing ones skipped)."""
    q = weave_queues
    wanted = sorted(set(names))
    if not wanted:
        return []
    return list(
        lock_rows(
            conn,
            LockLevel.QUEUES,
            q,
            (q.c.namespace == namespace) & q.c.name.in_(wanted),
            order_by=(q.c.name,),
        )
    )


# --- 5. gate ---------------------------------------------------------------------------


def lock_gate(conn: Connection, gate_id: str, *,
              columns: tuple[str, ...] | None = None) -> Row[Any] | None:
    """One execution gate, exclusive (``columns``: only these)."""
    return _lock_key(conn, LockLevel.GATE, weave_execution_gates, {"gate_id": gate_id},
                     columns=columns)


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


# --- a step's whole chain in one round trip (MariaDB/MySQL) -----------------------------


@dataclass(frozen=True)
class _Prebuilt:
    """A locking read compiled once for a dialect: its SQL text, its level and table (for
    the lock-order observer) and how a row of it is built (named fields, booleans)."""

    level: LockLevel
    table: str
    shared: bool
    sql: str
    row: Callable[[tuple[Any, ...]], Any]
    defaults: dict[str, Any]


_PREBUILT: dict[tuple[str, str], _Prebuilt] = {}


def _prebuilt(conn: Connection, name: str, level: LockLevel, table: sa.Table, shared: bool,
              build: Callable[[], sa.Select[Any]]) -> _Prebuilt:
    key = (conn.dialect.name, name)
    found = _PREBUILT.get(key)
    if found is None:
        stmt = build().with_for_update(read=shared)
        names = [str(c.key) for c in stmt.selected_columns]
        flags = [i for i, c in enumerate(stmt.selected_columns)
                 if isinstance(c.type, sa.Boolean)]
        record = namedtuple(f"{table.name}_row", names)  # type: ignore[misc]  # built once per shape

        def row(values: tuple[Any, ...], record: Any = record, flags: list[int] = flags
                ) -> Any:
            if flags:
                items = list(values)
                for i in flags:
                    if items[i] is not None:
                        items[i] = bool(items[i])
                values = tuple(items)
            return record._make(values)

        compiled = stmt.compile(dialect=conn.dialect)
        defaults = {k: v for k, v in compiled.params.items() if v is not None}
        found = _PREBUILT[key] = _Prebuilt(level, table.name, shared, str(compiled), row,
                                           defaults)
    return found


def lock_chain_at_once(
    conn: Connection, *, namespace: str, instance_id: str, activation_id: str,
    task_id: str, attempt_id: str, now_columns: Sequence[sa.ColumnElement[Any]],
    columns: Mapping[str, tuple[str, ...]],
) -> tuple[Any, Any, Any, list[Any], Any, Any]:
    """A step transaction's locks — namespace (shared), instance, its gate, its steps, the
    owning activation, the task with its attempt's fencing columns and database time — as
    six locking reads sent in **one** round trip (``deferred.send_with``), in exactly the
    order :func:`lock_namespace_shared`, :func:`lock_instance`, :func:`lock_gate`,
    :func:`lock_steps`, :func:`lock_activation` and :func:`lock_task_fenced` take them one
    by one (levels 1, 4, 5, 6, 6, 6: the lock order holds, and the observer sees each).

    The gate is found through the instance row the previous statement locked (a
    subquery), so no answer is needed before the next read goes out. ``columns``: the
    narrow column lists of ``namespace``, ``instance``, ``gate`` and ``steps``. Returns
    the rows (None where missing; the steps as a list); MariaDB/MySQL only.
    """
    ns_t, in_t, g_t, st_t = weave_namespaces, weave_instances, weave_execution_gates, weave_steps
    reads = (
        (_prebuilt(conn, "chain.namespace", LockLevel.IDENTITY, ns_t, True, lambda: sa.select(
            *(ns_t.c[n] for n in columns["namespace"])).where(
            ns_t.c.name == sa.bindparam("w_name"))), {"w_name": namespace}),
        (_prebuilt(conn, "chain.instance", LockLevel.INSTANCE, in_t, False, lambda: sa.select(
            *(in_t.c[n] for n in columns["instance"])).where(
            in_t.c.instance_id == sa.bindparam("w_instance_id"))),
         {"w_instance_id": instance_id}),
        (_prebuilt(conn, "chain.gate", LockLevel.GATE, g_t, False, lambda: sa.select(
            *(g_t.c[n] for n in columns["gate"])).where(
            g_t.c.gate_id == sa.select(in_t.c.gate_id).where(
                in_t.c.instance_id == sa.bindparam("w_instance_id")).scalar_subquery())),
         {"w_instance_id": instance_id}),
        (_prebuilt(conn, "chain.steps", LockLevel.RECORDS, st_t, False, lambda: sa.select(
            *(st_t.c[n] for n in columns["steps"])).where(
            st_t.c.instance_id == sa.bindparam("w_instance_id")).order_by(st_t.c.step_id)),
         {"w_instance_id": instance_id}),
        (_prebuilt(conn, "chain.activation", LockLevel.RECORDS, weave_activations, False,
                   lambda: sa.select(weave_activations).where(
                       weave_activations.c.activation_id == sa.bindparam("w_id"))),
         {"w_id": activation_id}),
        (_prebuilt(conn, "chain.task", LockLevel.RECORDS, weave_tasks, False,
                   lambda: _task_fenced_select(now_columns)),
         {"task": task_id, "attempt": attempt_id}),
    )
    observer = conn.info.get(_OBSERVER_KEY)
    if observer is not None:
        for read, _ in reads:
            observer(read.level, read.table, read.shared)
    answers = send_with(conn, [(read.sql, {**read.defaults, **params} if read.defaults
                                else params) for read, params in reads])
    rows = [[read.row(values) for values in answer.rows]
            for (read, _), answer in zip(reads, answers, strict=True)]
    ns, instance, gate, steps, activation, task = rows
    for one in (ns, instance, gate, activation, task):
        if len(one) > 1:
            raise ValueError("a keyed lock of the step chain matched several rows")
    first = [one[0] if one else None for one in (ns, instance, gate)]
    return (first[0], first[1], first[2], steps, activation[0] if activation else None,
            task[0] if task else None)


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
    if stmt is None:  # built once per dialect: every claim runs it (weave_core.statements)
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


# --- runtime (issue 5): instance, steps, activations, inbox rows, pending advances ------


def lock_instance(conn: Connection, instance_id: str, *,
                  columns: tuple[str, ...] | None = None) -> Row[Any] | None:
    """The workflow instance row, exclusive (level 4; ``columns``: only these)."""
    return _lock_key(conn, LockLevel.INSTANCE, weave_instances, {"instance_id": instance_id},
                     columns=columns)


def lock_instances(conn: Connection, instance_ids: Sequence[str], *,
                   skip_locked: bool = False) -> Sequence[Row[Any]]:
    """Several instance rows, exclusive, in instance-id order (a tick batch; level 4).

    ``skip_locked``: leave out rows another transaction holds instead of waiting for them
    (another engine's batch is working on them; primary-key lookups, so only the rows
    returned are locked).
    """
    return _lock_many(conn, LockLevel.INSTANCE, weave_instances, "instance_id", instance_ids,
                      skip_locked=skip_locked)


def lock_gates(conn: Connection, gate_ids: Sequence[str]) -> Sequence[Row[Any]]:
    """Several execution gates, exclusive, in gate-id order (a tick batch; level 5)."""
    return _lock_many(conn, LockLevel.GATE, weave_execution_gates, "gate_id", gate_ids)


def lock_steps_of(conn: Connection, instance_ids: Sequence[str]) -> Sequence[Row[Any]]:
    """The steps of several instances, exclusive, in (instance, step) order (level 6;
    primary-key ranges)."""
    t = weave_steps
    return lock_rows(conn, LockLevel.RECORDS, t, t.c.instance_id.in_(sorted(set(instance_ids))),
                     order_by=(t.c.instance_id, t.c.step_id))


def lock_steps(conn: Connection, instance_id: str, *,
               columns: tuple[str, ...] | None = None) -> Sequence[Row[Any]]:
    """Every saved step of the instance, exclusive, in step-id order (level 6; served by
    the primary key ``(instance_id, step_id)``; ``columns``: only these)."""
    return _lock_keyed(conn, LockLevel.RECORDS, weave_steps, {"instance_id": instance_id},
                       order_by=("step_id",), columns=columns)


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


__all__ = [
    "LOCK_ORDER",
    "LockLevel",
    "LockObserver",
    "LockStep",
    "holding",
    "lock_activation",
    "lock_activations",
    "lock_chain_at_once",
    "lock_claimable_tasks",
    "lock_gate",
    "lock_gate_tasks",
    "lock_gates",
    "lock_inbox_row",
    "lock_instance",
    "lock_instances",
    "lock_namespace_exclusive",
    "lock_namespace_quota",
    "lock_namespace_shared",
    "lock_one",
    "lock_pending_advance",
    "lock_pending_advances",
    "lock_queues",
    "lock_rows",
    "lock_steps",
    "lock_steps_of",
    "lock_task",
    "lock_task_fenced",
    "observing_locks",
    "try_lock_namespace_quota",
    "try_lock_queues",
]

__all__ += [
    "lock_bound_signals",
    "lock_matching_signal",
    "lock_open_waits",
    "lock_poll_round",
    "lock_signal",
    "lock_wait",
    "lock_waits",
]
