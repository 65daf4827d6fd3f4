"""The lock order's machinery: levels, the observer tests record, rows a batch already
holds, and the generic locking reads every named lock is built on."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

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
        LockLevel.NAMESPACE_QUOTA,
        False,
        ("weave_namespace_quotas", "weave_capacity_releases"),
        "namespace task quota; the release shards of the quota and the queues, which are only "
        "ever locked with SKIP LOCKED (never waited for, so they may come after any level)",
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
    (:mod:`weave_core.storage.statements`): the named locks below are the hot path's."""
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
