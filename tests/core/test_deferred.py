"""Writes held back and sent together (``weave_core.storage.deferred``), on a real MariaDB: one
round trip for a run of writes, the code's order kept before any read, each statement's
row count checked, a queued statement's error raised as SQLAlchemy's, listeners still
seeing every statement; on SQLite nothing is held back."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import event
from sqlalchemy.engine import Connection

from tests.round_trips import RoundTrips
from weave_core.access.identity import create_namespace
from weave_core.storage.db import Database
from weave_core.storage.deferred import (
    Answer,
    DeferredWriteMismatch,
    deferring,
    send_with,
)
from weave_core.storage.query_text import mogrify
from weave_core.storage.retries import mysql_error_code
from weave_core.storage.schema import weave_audit, weave_queues, weave_task_events
from weave_core.storage.statements import (
    insert_row_key,
    insert_rows,
    insert_rows_ids,
    select_keyed,
    update_keyed,
)

AT = datetime(2026, 12, 2, 1, 0, 0, 250000)


def _rows(namespace: str, names: list[str]) -> list[dict[str, Any]]:
    return [{"namespace": namespace, "name": name, "capacity": 10, "outstanding": 0,
             "created_at": AT, "updated_at": AT} for name in names]


def _capacities(db: Database, namespace: str) -> dict[str, int]:
    rows = db.read(lambda conn: select_keyed(conn, weave_queues, {"namespace": namespace}),
                   name="t")
    return {row.name: row.capacity for row in rows}


def test_a_run_of_writes_is_one_round_trip_in_the_code_order(
    mysql_db: Database, ns_name: str, round_trips: RoundTrips
) -> None:
    create_namespace(mysql_db, ns_name)
    seen: list[str] = []

    def _listen(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        seen.append(statement.split()[0])

    def _run(conn: Connection) -> tuple[int, int, dict[str, int]]:
        with deferring(conn):
            insert_rows(conn, weave_queues, _rows(ns_name, ["a", "b", "c"]))
            matched = update_keyed(conn, weave_queues, {"namespace": ns_name, "name": "b"},
                                   {"capacity": 7})
            before = round_trips.count
            # a read sends the queue first: it sees both writes
            inside = {r.name: r.capacity for r in select_keyed(
                conn, weave_queues, {"namespace": ns_name})}
            sent = round_trips.count - before
            update_keyed(conn, weave_queues, {"namespace": ns_name, "name": "c"},
                         {"capacity": 3})
        return matched, sent, inside

    event.listen(mysql_db.engine, "before_cursor_execute", _listen)
    try:
        matched, sent, inside = mysql_db.transaction(_run, name="t")
    finally:
        event.remove(mysql_db.engine, "before_cursor_execute", _listen)
    assert matched == 1
    assert sent == 2  # the queued INSERT and UPDATE together, then the SELECT
    assert inside == {"a": 10, "b": 7, "c": 10}
    assert _capacities(mysql_db, ns_name) == {"a": 10, "b": 7, "c": 3}
    # every statement is still announced to the engine's listeners, in order
    assert seen == ["INSERT", "UPDATE", "SELECT", "UPDATE"], seen


def test_one_row_inserts_of_new_rows_of_a_table_travel_as_one_multi_row_insert(
    mysql_db: Database, ns_name: str
) -> None:
    """A fan-out queues an activation, a task and an event per branch; the INSERTs of one
    table join the first of them (``deferred._coalesced``), the writes between them keep
    their order, and every row is written once."""
    create_namespace(mysql_db, ns_name)
    mysql_db.transaction(lambda conn: insert_rows(conn, weave_queues, _rows(ns_name, ["q"])),
                         name="t")
    seen: list[str] = []

    def _listen(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        seen.append(" ".join(statement.split()[:3]))

    def _run(conn: Connection) -> None:
        with deferring(conn):
            for i in range(3):
                insert_rows(conn, weave_task_events, {
                    "namespace": ns_name, "task_id": f"tsk_{ns_name}_{i}", "revision": 1,
                    "event_type": "task.created", "attempt_id": None, "occurred_at": AT,
                    "payload": None})
                update_keyed(conn, weave_queues, {"namespace": ns_name, "name": "q"},
                             {"capacity": 20 + i})

    event.listen(mysql_db.engine, "before_cursor_execute", _listen)
    try:
        mysql_db.transaction(_run, name="t")
    finally:
        event.remove(mysql_db.engine, "before_cursor_execute", _listen)
    assert seen == ["INSERT INTO weave_task_events", "UPDATE weave_queues SET",
                    "UPDATE weave_queues SET", "UPDATE weave_queues SET"], seen
    events = mysql_db.read(lambda conn: conn.execute(
        sa.select(weave_task_events.c.task_id).where(
            weave_task_events.c.namespace == ns_name)
        .order_by(weave_task_events.c.id)).scalars().all(), name="t")
    assert events == [f"tsk_{ns_name}_{i}" for i in range(3)]
    assert _capacities(mysql_db, ns_name) == {"q": 22}


def test_a_write_that_matches_no_row_is_refused_and_nothing_commits(
    mysql_db: Database, ns_name: str
) -> None:
    create_namespace(mysql_db, ns_name)

    def _run(conn: Connection) -> None:
        with deferring(conn):
            insert_rows(conn, weave_queues, _rows(ns_name, ["a"]))
            update_keyed(conn, weave_queues, {"namespace": ns_name, "name": "missing"},
                         {"capacity": 1})

    with pytest.raises(DeferredWriteMismatch, match="0 rows"):
        mysql_db.transaction(_run, name="t")
    assert _capacities(mysql_db, ns_name) == {}


def test_a_queued_statement_error_is_sqlalchemys_with_its_code(
    mysql_db: Database, ns_name: str
) -> None:
    create_namespace(mysql_db, ns_name)
    mysql_db.transaction(lambda conn: insert_rows(conn, weave_queues, _rows(ns_name, ["a"])),
                         name="t")

    def _run(conn: Connection) -> None:
        with deferring(conn):
            update_keyed(conn, weave_queues, {"namespace": ns_name, "name": "a"},
                         {"capacity": 5})
            insert_rows(conn, weave_queues, _rows(ns_name, ["a"]))  # duplicate key

    with pytest.raises(sa.exc.IntegrityError) as caught:
        mysql_db.transaction(_run, name="t")
    assert mysql_error_code(caught.value) == 1062
    assert _capacities(mysql_db, ns_name) == {"a": 10}  # the UPDATE before it rolled back


def test_an_exception_drops_the_queue_unsent(mysql_db: Database, ns_name: str) -> None:
    create_namespace(mysql_db, ns_name)

    def _run(conn: Connection) -> None:
        with deferring(conn):
            insert_rows(conn, weave_queues, _rows(ns_name, ["a"]))
            raise LookupError("changed my mind")

    with pytest.raises(LookupError):
        mysql_db.transaction(_run, name="t")
    assert _capacities(mysql_db, ns_name) == {}


def test_sqlite_writes_at_once(sqlite_db: Database, ns_name: str) -> None:
    create_namespace(sqlite_db, ns_name)

    def _run(conn: Connection) -> int:
        with deferring(conn):
            insert_rows(conn, weave_queues, _rows(ns_name, ["a"]))
            return update_keyed(conn, weave_queues, {"namespace": ns_name, "name": "zz"},
                                {"capacity": 1})  # the real count: nothing is queued

    assert sqlite_db.transaction(_run, name="t") == 0
    assert _capacities(sqlite_db, ns_name) == {"a": 10}


def test_a_read_travels_with_the_queued_writes_in_one_round_trip(
    mysql_db: Database, ns_name: str, round_trips: RoundTrips
) -> None:
    create_namespace(mysql_db, ns_name)
    select = ("SELECT name, capacity FROM weave_queues WHERE namespace = %(ns)s "
              "ORDER BY name FOR UPDATE")

    def _run(conn: Connection) -> tuple[int, list[Answer]]:
        with deferring(conn):
            insert_rows(conn, weave_queues, _rows(ns_name, ["a", "b"]))
            update_keyed(conn, weave_queues, {"namespace": ns_name, "name": "b"},
                         {"capacity": 4})
            before = round_trips.count
            answers = send_with(conn, [(select, {"ns": ns_name}), ("SELECT 1", {})])
            return round_trips.count - before, answers

    sent, answers = mysql_db.transaction(_run, name="t")
    assert sent == 1  # INSERT, UPDATE and both reads: one round trip
    assert [list(a.rows) for a in answers] == [[("a", 10), ("b", 4)], [(1,)]]
    assert answers[0].description is not None and answers[0].description[0][0] == "name"


def test_an_insert_sent_with_the_queue_gives_back_its_generated_keys(
    mysql_db: Database, ns_name: str, round_trips: RoundTrips
) -> None:
    create_namespace(mysql_db, ns_name)

    def _audit(n: int) -> dict[str, Any]:
        return {"namespace": ns_name, "occurred_at": AT, "actor": "t", "action": f"a{n}",
                "object_type": "test", "object_id": ns_name, "operation_id": None,
                "metadata": "{}"}

    def _run(conn: Connection) -> tuple[int, int, list[int]]:
        with deferring(conn):
            insert_rows(conn, weave_queues, _rows(ns_name, ["a"]))
            before = round_trips.count
            one = insert_row_key(conn, weave_audit, _audit(1))
            several = insert_rows_ids(conn, weave_audit, [_audit(2), _audit(3)])
            return round_trips.count - before, one, several

    sent, one, several = mysql_db.transaction(_run, name="t")
    assert sent == 2  # the queued INSERT with the first, then the multi-row INSERT
    assert several[0] > one and several[1] > several[0]
    stored = mysql_db.read(lambda conn: {r.id: r.action for r in conn.execute(
        sa.select(weave_audit.c.id, weave_audit.c.action).where(
            weave_audit.c.object_id == ns_name, weave_audit.c.object_type == "test"))},
        name="t")
    assert stored == {one: "a1", several[0]: "a2", several[1]: "a3"}


def test_a_failing_statement_sent_with_the_queue_raises_with_its_code(
    mysql_db: Database, ns_name: str
) -> None:
    create_namespace(mysql_db, ns_name)

    def _run(conn: Connection) -> None:
        with deferring(conn):
            insert_rows(conn, weave_queues, _rows(ns_name, ["a"]))
            send_with(conn, [("SELECT no_such_column FROM weave_queues", {})])

    with pytest.raises(sa.exc.DBAPIError) as caught:
        mysql_db.transaction(_run, name="t")
    assert mysql_error_code(caught.value) == 1054
    assert _capacities(mysql_db, ns_name) == {}  # the queued INSERT rolled back with it


def test_a_queued_write_that_misses_its_row_is_refused_before_the_read_is_answered(
    mysql_db: Database, ns_name: str
) -> None:
    create_namespace(mysql_db, ns_name)

    def _run(conn: Connection) -> None:
        with deferring(conn):
            update_keyed(conn, weave_queues, {"namespace": ns_name, "name": "nope"},
                         {"capacity": 1})
            send_with(conn, [("SELECT 1", {})])

    with pytest.raises(DeferredWriteMismatch):
        mysql_db.transaction(_run, name="t")


_bound = (st.text() | st.integers(-2**63, 2**63 - 1) | st.booleans() | st.none()
          | st.datetimes(timezones=st.none() | st.just(UTC))
          | st.decimals(allow_nan=False, allow_infinity=False) | st.binary(max_size=16))


@pytest.mark.parametrize("mode", ["", "NO_BACKSLASH_ESCAPES"])
def test_queued_statements_are_escaped_exactly_as_pymysql_escapes_them(
    mysql_db: Database, mode: str
) -> None:
    """The batch's own escaping of the common types writes the very text PyMySQL's
    ``mogrify`` writes, for any value (quotes, backslashes, NULs, non-ASCII, zones,
    microseconds), in both escaping modes of the server."""
    raw = mysql_db.engine.raw_connection()
    try:
        dbapi = raw.dbapi_connection
        assert dbapi is not None
        cursor = dbapi.cursor()
        cursor.execute(f"SET SESSION sql_mode = '{mode}'")

        @settings(max_examples=300, deadline=None)
        @given(st.dictionaries(st.from_regex(r"[a-z]{1,6}", fullmatch=True), _bound,
                               max_size=6))
        def same_text(params: dict[str, Any]) -> None:
            sql = "SELECT " + ", ".join(f"%({k})s" for k in params) if params else "SELECT 1"
            assert mogrify(dbapi, cursor, sql, params) == cursor.mogrify(sql, params or None)

        same_text()
        cursor.execute("SET SESSION sql_mode = DEFAULT")
    finally:
        raw.close()
