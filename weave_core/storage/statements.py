"""Keyed statements built once per shape: the hot path's row locks and row UPDATEs.

Why a module of its own: building a Core statement costs Python time on every call (in a
profile of the tick, ``sa.update(t).where(...).values(...)`` cost about as much as executing
it on a loopback MariaDB), and a new statement object has its cache key generated again
each time. A statement whose values are bind parameters, built once per *shape* (the table,
the columns compared, the columns set, the lock mode) and kept here, is paid for once. Only
equality on columns is expressed this way; anything else (ranges, ``IN``, ``version + 1``)
stays an ordinary statement where it is used.

The caches only grow by shape, never by value: a handful of entries per call site.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import sqlalchemy as sa
from sqlalchemy.dialects import mysql as mysql_dialect
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.engine import Connection, Row

from weave_core.observability.observe import task_event_txn
from weave_core.storage.deferred import defer, deferring_now, send_with
from weave_core.storage.query_text import widened
from weave_core.storage.schema import weave_task_events

LockMode = Literal["exclusive", "shared"] | None

_SELECTS: dict[tuple[Any, ...], sa.Select[Any]] = {}
_UPDATES: dict[tuple[Any, ...], sa.Update] = {}


_DRIVER_SQL: dict[tuple[Any, ...], tuple[str, dict[str, Any]]] = {}
_DRIVER_DIALECTS = frozenset({"mysql", "mariadb"})


def _compiled(conn: Connection, key: tuple[Any, ...], build: Any
              ) -> tuple[str, dict[str, Any]] | None:
    """The SQL text of a statement built once, for ``exec_driver_sql`` on MariaDB/MySQL,
    with the values of the literals it binds (``outstanding + 1``); None elsewhere
    (SQLite's date and time binds need the Core path's processors).

    Why: executing a cached Core statement still costs Python time per call for its cache
    key, parameter processing and result set-up — measured on a loopback MariaDB, about
    twice the CPU of the same UPDATE sent as prebuilt text. Only statements whose values
    need no bind processing on MariaDB (strings, numbers, datetimes, booleans, NULL) go
    this way. The engine's events still see every statement (counters, lock observers).
    """
    if conn.dialect.name not in _DRIVER_DIALECTS:
        return None
    full = (conn.dialect.name, *key)
    found = _DRIVER_SQL.get(full)
    if found is None:
        compiled = build().compile(dialect=conn.dialect)
        found = _DRIVER_SQL[full] = (str(compiled), {
            k: v for k, v in compiled.params.items() if v is not None})
    return found


def prebuilt_sql(conn: Connection, name: str, build: Any
                 ) -> tuple[str, dict[str, Any]] | None:
    """The text of a read built once (``build()``, cached per dialect under ``name``) and
    the values of its literal binds, for a caller that sends it with others
    (``deferred.send_with``); None where :func:`_compiled` gives none (SQLite)."""
    return _compiled(conn, ("read", name), build)


def insert_missing(conn: Connection, table: sa.Table, rows: Sequence[dict[str, Any]]) -> None:
    """Insert ``rows`` unless their keys exist (two creators racing both succeed): SQLite's
    ``ON CONFLICT DO NOTHING``, MariaDB's ``ON DUPLICATE KEY UPDATE`` of a key to itself."""
    if conn.dialect.name == "sqlite":
        conn.execute(sqlite_dialect.insert(table).values(list(rows)).on_conflict_do_nothing())
    else:
        key = next(iter(table.primary_key.columns))
        stmt = mysql_dialect.insert(table).values(list(rows))
        conn.execute(stmt.on_duplicate_key_update({key.name: key}))


def _driver_sql(conn: Connection, key: tuple[Any, ...], build: Any) -> str | None:
    """:func:`_compiled`'s text, for statements whose values are all parameters."""
    found = _compiled(conn, key, build)
    return None if found is None else found[0]


def _insert_sql(conn: Connection, table: sa.Table, columns: tuple[str, ...]) -> str | None:
    """``INSERT INTO table (columns) VALUES (…)`` as prebuilt text (see :func:`_compiled`)."""
    return _driver_sql(conn, ("insert", table.name, columns),
                       lambda: sa.insert(table).values(
                           {name: sa.bindparam(name) for name in columns}))


def insert_rows(conn: Connection, table: sa.Table,
                rows: dict[str, Any] | Sequence[dict[str, Any]]) -> None:
    """``INSERT INTO table`` one row or several (one multi-row statement per column set),
    prebuilt text on MariaDB (see :func:`_driver_sql`); no generated key is returned."""
    batch = [rows] if isinstance(rows, dict) else list(rows)
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for row in batch:
        groups.setdefault(tuple(row), []).append(row)
    for columns, group in groups.items():
        sql = _insert_sql(conn, table, columns)
        params: Any = group[0] if len(group) == 1 else group
        if sql is not None and _defer_insert(conn, sql, group):
            continue
        if sql is None:
            conn.execute(sa.insert(table), params)
        else:
            conn.exec_driver_sql(sql, params)


def insert_row_key(conn: Connection, table: sa.Table, row: dict[str, Any]) -> int:
    """``INSERT`` one row and return its generated key. Inside a ``deferred.deferring``
    block on MariaDB the queued writes and this INSERT travel in one round trip."""
    if deferring_now(conn):
        sql = _insert_sql(conn, table, tuple(row))
        if sql is not None:
            (answer,) = send_with(conn, [(sql, row)])
            assert answer.lastrowid is not None
            return int(answer.lastrowid)
    key = conn.execute(sa.insert(table), row).inserted_primary_key
    assert key is not None
    return int(key[0])


def insert_rows_ids(conn: Connection, table: sa.Table, rows: list[dict[str, Any]]) -> list[int]:
    """``INSERT`` rows of ``table`` (one column set) and return their generated ``id`` in
    row order. Inside a ``deferred.deferring`` block on MariaDB: one multi-row ``INSERT …
    RETURNING id`` sent with the queued writes, in one round trip."""
    if deferring_now(conn):
        sql = _insert_sql(conn, table, tuple(rows[0]))
        if sql is not None:
            text, params = widened(sql, rows)
            (answer,) = send_with(conn, [(text + " RETURNING id", params)])
            if len(answer.rows) != len(rows):
                raise RuntimeError(f"{len(answer.rows)} ids for {len(rows)} {table.name} rows")
            return [int(r[0]) for r in answer.rows]
    ids = conn.execute(table.insert().returning(table.c.id, sort_by_parameter_order=True),
                       rows).scalars().all()
    return [int(i) for i in ids]


def read_with_queue(conn: Connection, name: str, build: Any, params: dict[str, Any]
                    ) -> list[dict[str, Any]]:
    """The rows of a read built once (``build()``, cached per dialect under ``name``), as
    dicts of raw column values. Inside a ``deferred.deferring`` block on MariaDB it goes in
    the same round trip as the queued writes before it; otherwise it runs alone."""
    if deferring_now(conn):
        sql = _driver_sql(conn, ("read", name), build)
        if sql is not None:
            (answer,) = send_with(conn, [(sql, params)])
            names = [d[0] for d in answer.description or ()]
            return [dict(zip(names, row, strict=True)) for row in answer.rows]
    return [dict(row) for row in conn.execute(build(), params).mappings()]


def run_prebuilt(conn: Connection, name: str, build: Any, params: dict[str, Any], *,
                 queue: bool = False, rows: int | None = None) -> int | None:
    """Execute a row-changing statement built once (``build()``, cached per dialect under
    ``name``) and return its row count. On MariaDB it goes as prebuilt text; with
    ``queue`` it is queued in an open ``deferred.deferring`` block instead, expected to
    change ``rows`` rows (a mismatch surfaces as ``DeferredWriteMismatch``; None: any
    count, and None is returned)."""
    found = _compiled(conn, ("prebuilt", name), build)
    if found is None:
        return int(conn.execute(build(), params).rowcount)
    sql, literals = found
    values = {**literals, **params} if literals else params
    if queue and defer(conn, sql, values, rows):
        return rows
    return int(conn.exec_driver_sql(sql, values).rowcount)


def queue_insert(conn: Connection, name: str, build: Any,
                 rows: Sequence[dict[str, Any]]) -> bool:
    """Queue in an open ``deferred.deferring`` block on MariaDB/MySQL an INSERT built once
    for one row (``build()``, cached per dialect under ``name``), widened to ``rows``;
    False elsewhere, and nothing is sent."""
    sql = _driver_sql(conn, ("insert", name), build)
    return sql is not None and _defer_insert(conn, sql, list(rows))


def _defer_insert(conn: Connection, sql: str, group: list[dict[str, Any]]) -> bool:
    """Queue a (multi-row) INSERT in an open ``deferred.deferring`` block."""
    if len(group) == 1:
        return defer(conn, sql, group[0], 1)
    text, params = widened(sql, group)
    return defer(conn, text, params, len(group))


def _where(table: sa.Table, columns: Sequence[str]) -> list[sa.ColumnElement[bool]]:
    return [table.c[name] == sa.bindparam(f"w_{name}") for name in columns]


def select_keyed(
    conn: Connection,
    table: sa.Table,
    keys: Mapping[str, Any],
    *,
    lock: LockMode = None,
    order_by: tuple[str, ...] = (),
    columns: tuple[str, ...] | None = None,
) -> Sequence[Row[Any]]:
    """``SELECT * FROM table WHERE <every column of keys = its value>``, optionally locked.

    ``lock``: ``FOR UPDATE`` (exclusive) or ``LOCK IN SHARE MODE`` (shared) on MariaDB; on
    SQLite no clause (its writers already hold the database write lock). ``columns``: only
    these (the driver decodes a description and a value per column: narrow is cheaper).
    """
    dialect = conn.dialect.name
    shape = (dialect, table.name, tuple(keys), lock, order_by, columns)
    params = {f"w_{k}": v for k, v in keys.items()}
    if columns is not None and dialect in _DRIVER_DIALECTS:
        # A narrow read of known columns (the chain's locks): prebuilt text at driver level
        # (see _driver_sql); callers of a narrow read convert booleans with bool().
        sql = _driver_sql(conn, ("select", *shape[1:]),
                          lambda: _keyed_select(table, keys, lock, order_by, columns, dialect))
        assert sql is not None
        return conn.exec_driver_sql(sql, params).all()
    stmt = _SELECTS.get(shape)
    if stmt is None:
        stmt = _SELECTS[shape] = _keyed_select(table, keys, lock, order_by, columns, dialect)
    return conn.execute(stmt, params).all()


def _keyed_select(table: sa.Table, keys: Mapping[str, Any], lock: LockMode,
                  order_by: tuple[str, ...], columns: tuple[str, ...] | None,
                  dialect: str) -> sa.Select[Any]:
    selected = [table] if columns is None else [table.c[name] for name in columns]
    stmt = sa.select(*selected).where(*_where(table, tuple(keys)))
    if order_by:
        stmt = stmt.order_by(*(table.c[name] for name in order_by))
    if lock is not None and dialect != "sqlite":
        stmt = stmt.with_for_update(read=lock == "shared")
    return stmt


def _update_statement(table: sa.Table, where: tuple[str, ...], values: tuple[str, ...]
                      ) -> sa.Update:
    shape = (table.name, where, values)
    stmt = _UPDATES.get(shape)
    if stmt is None:
        stmt = sa.update(table).where(*_where(table, where)).values(
            {name: sa.bindparam(f"v_{name}") for name in values})
        _UPDATES[shape] = stmt
    return stmt


def update_keyed(
    conn: Connection, table: sa.Table, where: Mapping[str, Any], values: Mapping[str, Any]
) -> int:
    """``UPDATE table SET <values> WHERE <every column of where = its value>``; the number
    of rows matched (a version or state in ``where`` makes it a guarded update)."""
    if any(v is None for v in where.values()):
        raise ValueError("a keyed UPDATE compares with '=': NULL never matches")
    shape = (tuple(where), tuple(values))
    params = {f"w_{k}": v for k, v in where.items()}
    params.update({f"v_{k}": v for k, v in values.items()})
    sql = _driver_sql(conn, ("update", table.name, *shape),
                      lambda: _update_statement(table, *shape))
    if sql is not None:
        if defer(conn, sql, params, 1):  # a keyed UPDATE in a deferring block: one row
            return 1
        return int(conn.exec_driver_sql(sql, params).rowcount)
    return int(conn.execute(_update_statement(table, *shape), params).rowcount)


def update_many_keyed(
    conn: Connection, table: sa.Table, rows: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]]
) -> int:
    """Several keyed UPDATEs (``(where, values)`` pairs): one ``executemany`` of the cached
    statement per shape, so the statement's Python cost is paid once, not per row; the
    rows matched in all."""
    shapes: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for where, values in rows:
        params = {f"w_{k}": v for k, v in where.items()}
        params.update({f"v_{k}": v for k, v in values.items()})
        shapes.setdefault((tuple(where), tuple(values)), []).append(params)
    matched = 0
    for (where_columns, value_columns), params_list in shapes.items():
        sql = _driver_sql(conn, ("update", table.name, where_columns, value_columns),
                          lambda w=where_columns, v=value_columns: _update_statement(
                              table, w, v))
        if sql is not None and deferring_now(conn):  # each a keyed UPDATE of one row
            for one in params_list:
                defer(conn, sql, one, 1)
            matched += len(params_list)
        elif sql is not None:
            matched += int(conn.exec_driver_sql(sql, params_list).rowcount)
        else:
            stmt = _update_statement(table, where_columns, value_columns)
            matched += int(conn.execute(stmt, params_list).rowcount)
    return matched


@dataclass
class RowChanges:
    """Inserts and keyed updates collected to be written together (a tick batch writes
    every instance's step and instance rows at its end): one multi-row INSERT per table and
    one ``executemany`` per table and shape of UPDATE, tables in the order first touched."""

    _inserts: dict[str, tuple[sa.Table, list[dict[str, Any]]]] = field(default_factory=dict)
    _updates: dict[str, tuple[sa.Table, list[tuple[dict[str, Any], dict[str, Any]]]]] = field(
        default_factory=dict)

    def insert(self, table: sa.Table, row: dict[str, Any]) -> None:
        self._inserts.setdefault(table.name, (table, []))[1].append(row)

    def update(self, table: sa.Table, key: dict[str, Any], values: dict[str, Any]) -> None:
        self._updates.setdefault(table.name, (table, []))[1].append((key, values))

    def write(self, conn: Connection) -> None:
        """Execute everything collected; every update must match exactly its one row."""
        for table, rows in self._inserts.values():
            insert_rows(conn, table, rows)
        for table, changes in self._updates.values():
            if len(changes) == 1:
                matched = update_keyed(conn, table, *changes[0])
            else:
                matched = update_many_keyed(conn, table, changes)
            if matched != len(changes):
                raise RuntimeError(f"{matched} of {len(changes)} {table.name} rows matched")
        self._inserts, self._updates = {}, {}


_APPEND_KEY = "weave_appended_rows"


def append_row(conn: Connection, table: sa.Table, row: dict[str, Any]) -> None:
    """Insert a row of an append-only table (status events) that nothing reads back in the
    same transaction: at once, or inside an :func:`appending` block at its end, together
    with the block's other rows of that table. Task events are also counted after the
    commit (``weave_core.observability.observe``)."""
    if table is weave_task_events:
        task_event_txn(conn, row)
    pending: dict[str, tuple[sa.Table, list[dict[str, Any]]]] | None = \
        conn.info.get(_APPEND_KEY)
    if pending is None:
        insert_rows(conn, table, row)
    else:
        pending.setdefault(table.name, (table, []))[1].append(row)


def take_appended(conn: Connection, table: sa.Table) -> list[dict[str, Any]]:
    """The rows of ``table`` an :func:`appending` block holds so far, taken out of it: a
    caller that inserts rows of that table anyway writes them with its own statement."""
    pending: dict[str, tuple[sa.Table, list[dict[str, Any]]]] | None = \
        conn.info.get(_APPEND_KEY)
    if not pending or table.name not in pending:
        return []
    return pending.pop(table.name)[1]


@contextmanager
def appending(conn: Connection) -> Iterator[None]:
    """Collect :func:`append_row` rows for the block and insert them when it ends without
    an exception: one multi-row INSERT per table (a step transaction writes three task
    events with one statement). On an exception nothing is written (the transaction is
    rolling back anyway)."""
    pending: dict[str, tuple[sa.Table, list[dict[str, Any]]]] = {}
    conn.info[_APPEND_KEY] = pending
    try:
        yield
    finally:
        conn.info.pop(_APPEND_KEY, None)
    for table, rows in pending.values():
        insert_rows(conn, table, rows)


__all__ = [
    "LockMode",
    "RowChanges",
    "append_row",
    "appending",
    "insert_missing",
    "insert_row_key",
    "insert_rows",
    "insert_rows_ids",
    "prebuilt_sql",
    "queue_insert",
    "read_with_queue",
    "run_prebuilt",
    "select_keyed",
    "take_appended",
    "update_keyed",
    "update_many_keyed",
]
