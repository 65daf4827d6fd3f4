"""Writes held back and sent together: a transaction's keyed UPDATEs and plain INSERTs in
one round trip instead of one each.

Why: on this kind of machine a statement's round trip costs MariaDB and the engine more
CPU than the statement itself (measured on loopback: twelve keyed UPDATEs sent one by one
cost 1.2-1.5 ms of client CPU and 1.0-1.3 ms of server CPU; sent as one multi-statement
query, 0.5 and 0.5). The step transaction ends with a dozen writes that return nothing
the transaction reads, so inside :func:`deferring` they are queued and sent as one
``COM_QUERY`` of several statements (PyMySQL's ``CLIENT.MULTI_STATEMENTS``):

- order is kept: before any other statement runs on the connection (a read, an INSERT
  whose generated key is needed, a SAVEPOINT, the block's end), the queue is sent first,
  so every statement still sees the writes before it and locks are taken in the order
  the code wrote them (the R-6.2 lock order is unchanged);
- a queued statement's row count is checked: a keyed UPDATE must match exactly one row
  and an INSERT its rows, else :class:`DeferredWriteMismatch` (the caller rolls back and
  takes its non-deferred path, which sees the real count). On MariaDB two or more queued
  writes go as one compound statement that checks each count itself (``query_text.as_block``:
  one answer packet instead of one per statement); on MySQL each answer is checked as it
  arrives;
- a database error of a queued statement surfaces as SQLAlchemy's ``DBAPIError`` from the
  statement that sent the queue (or the block's end), so deadlocks still re-run the
  transaction; a lost connection invalidates it;
- the engine's statement listeners still see each statement, with its own text and
  parameters (counters, the lock-order recorder);
- values are interpolated by PyMySQL's own escaping, exactly as for a single statement
  (PyMySQL always interpolates client-side), so batching adds no injection surface.

Only on MariaDB/MySQL; on SQLite (and outside a block) every write runs at once.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final

import pymysql
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError

from weave_core.storage import query_text
from weave_core.storage.retries import LOST_CONNECTION_CODES, mysql_error_code

_KEY = "weave_deferred_writes"
_AT_COMMIT = "weave_deferred_at_commit"
_LEFT = "weave_deferred_writes_left"
"""Writes a closed :func:`deferring` block left queued: sent before the next statement,
or with the ``COMMIT``."""
_AMEND = "weave_deferred_amendable"
"""Queued parameters their writer may still change, by the writer's key."""
_listening: weakref.WeakSet[Engine] = weakref.WeakSet()


class DeferredWriteMismatch(RuntimeError):
    """A queued write matched another number of rows than the caller was told."""


def defer(conn: Connection, sql: str, params: dict[str, Any], expected: int | None) -> bool:
    """Queue ``sql`` with ``params`` when a :func:`deferring` block is open on ``conn``
    (the caller then takes ``expected`` as the statement's row count; None: any count,
    e.g. an ``INSERT IGNORE``); False otherwise."""
    pending: list[tuple[str, dict[str, Any], int | None]] | None = conn.info.get(_KEY)
    if pending is None:
        return False
    pending.append((sql, params, expected))
    return True


def amend_later(conn: Connection, key: Any, params: dict[str, Any]) -> None:
    """Let ``params`` (the very dict just given to :func:`defer`) be found by ``key`` while
    it waits in the queue (:func:`amendable`)."""
    conn.info.setdefault(_AMEND, {})[key] = params


def amendable(conn: Connection, key: Any) -> dict[str, Any] | None:
    """The parameters registered under ``key`` if their write is still queued, unsent: a
    change made to them now goes out with it (a row written once, in its final state,
    instead of an INSERT and an UPDATE). None once sent, or never registered."""
    params: dict[str, Any] | None = (conn.info.get(_AMEND) or {}).get(key)
    if params is None:
        return None
    for name in (_KEY, _LEFT):
        if any(queued is params for _, queued, _ in conn.info.get(name) or ()):
            return params
    return None


def deferring_now(conn: Connection) -> bool:
    """Is a :func:`deferring` block open on ``conn``?"""
    return _KEY in conn.info


@contextmanager
def deferring(conn: Connection) -> Iterator[None]:
    """Queue the block's keyed writes and send them together (module docstring). On an
    exception the queue is dropped unsent: the transaction is rolling back.

    What is still queued when the block ends stays queued: the next statement sends it
    first, and if that is the transaction's commit, it goes with the ``COMMIT`` in one
    round trip (:func:`_commit_first`)."""
    if conn.dialect.name not in ("mysql", "mariadb") or _KEY in conn.info:
        yield
        return
    install(conn.engine)
    conn.info[_KEY] = []
    try:
        yield
    except BaseException:
        _discard(conn)
        raise
    left = conn.info.pop(_KEY, None)
    if left:
        conn.info.setdefault(_LEFT, []).extend(left)


def _commit_first(conn: Connection) -> None:
    """The transaction commits (SQLAlchemy's ``commit`` event, before the ``COMMIT`` goes
    out): what is still queued goes first. On MariaDB it goes **with** the ``COMMIT``, one
    round trip: the queue's text is handed to the driver connection, whose ``commit()``
    sends it and ``COMMIT`` as one query (``engines._Connection``). Its compound block
    checks every row count before the ``COMMIT`` runs, and a failing statement stops the
    query there: the error is the commit's, the transaction still open (``Database`` turns
    a row count refused into :class:`DeferredWriteMismatch`, :func:`mismatch_at_commit`).
    On MySQL, whose counts are checked only once the answers are read, too late for a
    commit, the queue is sent first, alone."""
    if not (conn.info.get(_KEY) or conn.info.get(_LEFT)):
        return
    if not getattr(conn.dialect, "is_mariadb", False):
        flush(conn)
        return
    items = _take(conn)
    dbapi = conn.connection.dbapi_connection
    assert dbapi is not None
    cursor = dbapi.cursor()
    try:
        texts = _texts(conn, dbapi, cursor, [(sql, params) for sql, params, _ in items],
                       [(range(len(items)), _block(items))], True)
    finally:
        cursor.close()
    dbapi.weave_before_commit = texts[0]
    conn.info[_AT_COMMIT] = items


def mismatch_at_commit(conn: Connection, exc: DBAPIError) -> DeferredWriteMismatch | None:
    """The row count a write sent with the ``COMMIT`` was refused for, if that is what
    ``exc`` (the commit's error) is."""
    broken = query_text.mismatched(exc)
    if broken is None or conn.invalidated:
        return None
    items: list[tuple[str, dict[str, Any], int | None]] | None = conn.info.pop(_AT_COMMIT,
                                                                                None)
    if not items:
        return None
    dbapi = conn.connection.dbapi_connection
    assert dbapi is not None
    cursor = dbapi.cursor()
    try:
        return _refused(cursor, items[broken])
    finally:
        cursor.close()


def _refused(cursor: Any, item: tuple[str, dict[str, Any], int | None]
             ) -> DeferredWriteMismatch:
    """The error for a queued write whose row count the block refused, with the count the
    block saw (it left it in ``@weave_deferred_rows``)."""
    cursor.execute("SELECT @weave_deferred_rows")
    got = (cursor.fetchone() or ("?",))[0]
    return DeferredWriteMismatch(f"{got} rows (expected {item[2]}) for: {item[0][:120]}")


def _discard(conn: Connection, *_: Any) -> None:
    """The transaction is rolling back: what is queued goes nowhere."""
    if not conn.invalidated:  # else its info is out of reach; ``forget`` at the next begin
        forget(conn.info)


def forget(info: dict[Any, Any], dbapi: Any = None) -> None:
    """Drop anything queued on the connection whose ``info`` this is, and what its driver
    connection ``dbapi`` holds for its next commit (``Database`` calls it as a transaction
    begins: nothing of an earlier one may be sent in it)."""
    info.pop(_KEY, None)
    info.pop(_LEFT, None)
    info.pop(_AT_COMMIT, None)
    info.pop(_AMEND, None)
    if getattr(dbapi, "weave_before_commit", None) is not None:
        dbapi.weave_before_commit = None


def install(engine: Engine) -> None:
    """Listen on ``engine`` for statements that must send the queue first. ``Database``
    installs it when it creates a MariaDB engine, before any other listener, so that the
    others see the queued statements before the one that sent them."""
    if engine not in _listening:
        event.listen(engine, "before_cursor_execute", _send_first)
        event.listen(engine, "commit", _commit_first)  # any commit: the queue goes first
        event.listen(engine, "rollback", _discard)
        _listening.add(engine)


def _send_first(conn: Connection, *_: Any) -> None:
    """Any other statement waits for the queued ones (their order is the code's order)."""
    if conn.info.get(_KEY) or conn.info.get(_LEFT):
        flush(conn)


@dataclass(frozen=True)
class Answer:
    """What one statement sent by :func:`send_with` answered: its rows (plain tuples, in
    ``description`` order), the rows it changed and the key it generated."""

    rows: list[tuple[Any, ...]]
    description: tuple[tuple[Any, ...], ...] | None
    rowcount: int
    lastrowid: int | None


def flush(conn: Connection) -> None:
    """Send the queued writes now, as one multi-statement round trip, and check each
    statement's row count."""
    if conn.info.get(_KEY) or conn.info.get(_LEFT):
        send_with(conn, ())


def send_with(conn: Connection, statements: Sequence[tuple[str, dict[str, Any]]], *,
              union: bool = False) -> list[Answer]:
    """Send the queued writes and then ``statements`` (prebuilt SQL and parameters) in
    **one** round trip, check the queued writes' row counts, and return the answer of
    each of ``statements`` in order: a read, a locking read or an ``INSERT`` whose key is
    needed travels with the writes before it instead of after them (MariaDB/MySQL only).

    The statements run one after the other on the server, exactly as if sent one by one:
    order, visibility and the lock order are the caller's. MariaDB stops at the first
    statement that fails; its error surfaces as SQLAlchemy's ``DBAPIError`` here.

    ``union``: the statements are reads of one column each (``SELECT x FROM …``, locking
    or not); on MariaDB they go as **one** ``(SELECT i, x …) UNION ALL (…)`` query, whose
    parts MariaDB runs one after the other, in order, each taking its own locks, and whose
    rows are handed back per statement. Why: PyMySQL spends about 25-40 µs of Python on
    each result set it reads (its description, its end packet), six reads of a step's
    chain cost that six times, one union once.
    """
    items = _take(conn)
    if not items and not statements:
        return []
    dbapi = conn.connection.dbapi_connection
    assert dbapi is not None
    cursor = dbapi.cursor()
    mariadb = bool(getattr(conn.dialect, "is_mariadb", False))
    block = mariadb and len(items) >= 2
    union = union and mariadb and len(statements) >= 2
    try:
        everything = [(sql, params) for sql, params, _ in items] + list(statements)
        groups: list[tuple[range, query_text.Join]] = []
        if block:
            groups.append((range(len(items)), _block(items)))
        else:
            groups += [(range(i, i + 1), query_text.ONE) for i in range(len(items))]
        if union:
            groups.append((range(len(items), len(everything)), query_text.UNION))
        else:
            groups += [(range(i, i + 1), query_text.ONE)
                       for i in range(len(items), len(everything))]
        texts = _texts(conn, dbapi, cursor, everything, groups, mariadb)
        try:
            answers = _send(conn, cursor, ";\n".join(texts))
        except DBAPIError as exc:
            broken = query_text.mismatched(exc) if block else None
            if broken is None:
                raise
            raise _refused(cursor, items[broken]) from exc
    finally:
        cursor.close()
    if block:
        answers = answers[1:]
        items = []
    for (sql, _, expected), got in zip(items, answers, strict=False):
        if expected is not None and got.rowcount != expected:
            raise DeferredWriteMismatch(
                f"{got.rowcount} rows (expected {expected}) for: {sql[:120]}")
    answers = answers[len(items):]
    return _split(answers[0], len(statements)) if union else answers


def _block(items: Sequence[tuple[str, dict[str, Any], int | None]]) -> query_text.Join:
    """The queued writes as one compound block, each row count checked."""
    return query_text.Join("block", tuple(expected for _, _, expected in items))


def _texts(conn: Connection, dbapi: Any, cursor: Any,
           statements: Sequence[tuple[str, dict[str, Any]]],
           groups: Sequence[tuple[range, query_text.Join]], mariadb: bool) -> list[str]:
    """The batch's query texts (``query_text.texts``, which prepares a shape the
    connection has not met in a round trip of its own), listeners told of every statement
    first, as if each were sent alone. When :func:`_send_first` is the only listener (no
    statement counter, no recorder) nobody is told: it would only find the queue it is
    part of already taken (about 20 calls a step)."""
    listeners = conn.dispatch.before_cursor_execute
    if len(listeners) > (1 if conn.engine in _listening else 0):
        for sql, params in statements:
            listeners(conn, cursor, sql, params, None, False)
    return query_text.texts(dbapi, cursor, lambda text: _send(conn, cursor, text),
                            statements, groups, mariadb)


def _take(conn: Connection) -> list[tuple[str, dict[str, Any], int | None]]:
    """The queued writes, oldest first, taken off the queue (:func:`_coalesced`)."""
    left: list[tuple[str, dict[str, Any], int | None]] | None = conn.info.pop(_LEFT, None)
    pending: list[tuple[str, dict[str, Any], int | None]] | None = conn.info.get(_KEY)
    items = [*(left or ()), *(pending or ())]
    if pending:
        pending.clear()
    return _coalesced(items) if len(items) > 2 else items


_NEW_ROWS: Final = tuple(f"INSERT INTO {name} (" for name in (
    "weave_activations", "weave_tasks", "weave_task_attempts", "weave_task_events"))
"""Tables whose queued one-row INSERTs may join an earlier one of the same text."""


def _coalesced(items: list[tuple[str, dict[str, Any], int | None]]
               ) -> list[tuple[str, dict[str, Any], int | None]]:
    """Queued one-row INSERTs of the same text into the tables of :data:`_NEW_ROWS` as
    **one** multi-row INSERT where the first of them stood: a fan-out of ten writes ten
    activations, ten tasks and ten events as three statements instead of thirty, and a
    statement costs the server about as much as a row. Moving such an INSERT earlier in
    the queue changes nothing another queued statement sees: each inserts a new row under
    a key made by the engine, and what else is queued is a keyed UPDATE of other rows or an
    INSERT into another table (none of these tables has its ``LAST_INSERT_ID()`` read)."""
    merged: list[tuple[str, Any, int | None]] = []
    first: dict[str, int] = {}
    for sql, params, expected in items:
        if expected != 1 or not sql.startswith(_NEW_ROWS):
            merged.append((sql, params, expected))
            continue
        at = first.get(sql)
        if at is None:
            first[sql] = len(merged)
            merged.append((sql, [params], None))
        else:
            merged[at][1].append(params)
    if len(merged) == len(items):
        return items
    out: list[tuple[str, dict[str, Any], int | None]] = []
    for sql, params, expected in merged:
        if sql in first and isinstance(params, list):
            if len(params) == 1:
                out.append((sql, params[0], 1))
            else:
                text, values = query_text.widened(sql, params)
                out.append((text, values, len(params)))
        else:
            out.append((sql, params, expected))
    return out


def _split(answer: Answer, count: int) -> list[Answer]:
    """The union's rows back per read, in their order, without the tag."""
    rows: list[list[tuple[Any, ...]]] = [[] for _ in range(count)]
    for row in answer.rows:
        rows[int(row[0])].append(tuple(row[1:]))
    return [Answer(part, answer.description, len(part), None) for part in rows]


def _answer(cursor: Any) -> Answer:
    description = cursor.description
    rows = list(cursor.fetchall()) if description is not None else []
    return Answer(rows, description, int(cursor.rowcount), cursor.lastrowid)


def _send(conn: Connection, cursor: Any, text: str) -> list[Answer]:
    try:
        cursor.execute(text)
        answers = [_answer(cursor)]
        while cursor.nextset():
            answers.append(_answer(cursor))
    except pymysql.Error as exc:
        lost = mysql_error_code(exc) in LOST_CONNECTION_CODES or isinstance(
            exc, pymysql.err.InterfaceError)
        if lost:
            conn.invalidate(exc)
        raise DBAPIError.instance(text[:2000], None, exc, pymysql.Error,
                                  connection_invalidated=lost,
                                  dialect=conn.dialect) from exc
    return answers


__all__ = [
    "Answer", "DeferredWriteMismatch", "defer", "deferring", "deferring_now", "flush", "forget",
    "install", "mismatch_at_commit", "send_with",
]
