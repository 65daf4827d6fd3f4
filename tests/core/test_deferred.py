"""Writes held back and sent together (``weave_core.storage.deferred``), on a real MariaDB: one
round trip for a run of writes, the code's order kept before any read, each statement's
row count checked, a queued statement's error raised as SQLAlchemy's, listeners still
seeing every statement; on SQLite nothing is held back."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection

from tests.round_trips import RoundTrips
from weave_core.access.identity import create_namespace
from weave_core.storage.db import Database, mysql_error_code
from weave_core.storage.deferred import DeferredWriteMismatch, deferring
from weave_core.storage.schema import weave_queues
from weave_core.storage.statements import insert_rows, select_keyed, update_keyed

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
