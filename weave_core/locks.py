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

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

from weave_core.schema import weave_namespaces


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
    LockStep(LockLevel.NAMESPACE_QUOTA, False, (), "namespace quota (later issue)"),
    LockStep(LockLevel.QUEUES, False, (), "queues of the pinned version, sorted by name"),
    LockStep(LockLevel.INSTANCE, False, (), "workflow instance"),
    LockStep(LockLevel.GATE, False, (), "execution gate of the instance"),
    LockStep(LockLevel.RECORDS, False, (), "activations/steps, consumption records"),
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


# --- 1. identity ---------------------------------------------------------------------


def lock_namespace_shared(conn: Connection, namespace: str) -> Row[Any] | None:
    """The identity lock: the namespace row, shared; None if the namespace does not exist.

    Shared, so operations in one namespace do not serialise on it; disabling or deleting
    the namespace (exclusive) waits for them.
    """
    return lock_one(
        conn,
        LockLevel.IDENTITY,
        weave_namespaces,
        weave_namespaces.c.name == namespace,
        shared=True,
    )


def lock_namespace_exclusive(conn: Connection, namespace: str) -> Row[Any] | None:
    """The namespace row, exclusive: for changes to the namespace itself (disable)."""
    return lock_one(
        conn, LockLevel.IDENTITY, weave_namespaces, weave_namespaces.c.name == namespace
    )


__all__ = [
    "LOCK_ORDER",
    "LockLevel",
    "LockObserver",
    "LockStep",
    "lock_namespace_exclusive",
    "lock_namespace_shared",
    "lock_one",
    "lock_rows",
    "observing_locks",
]
