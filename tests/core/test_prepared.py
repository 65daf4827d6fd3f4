"""Statement shapes prepared once per connection (``weave_core.storage.prepared``), on a
real MariaDB: the same answers and the same stored values as plain SQL, one ``PREPARE`` per
shape and connection, a bounded set, a fresh set after a reconnect, and plain SQL when the
server cannot or will not prepare."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pymysql
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy.engine import Connection

from tests.round_trips import RoundTrips
from weave_core.access.identity import create_namespace
from weave_core.storage import prepared, query_text
from weave_core.storage.db import Database
from weave_core.storage.deferred import DeferredWriteMismatch, deferring, send_with
from weave_core.storage.schema import weave_audit, weave_queues
from weave_core.storage.statements import insert_rows, insert_rows_ids, update_keyed

AT = datetime(2026, 12, 4, 22, 0, 0, 125000)


def _queues(namespace: str, names: list[str]) -> list[dict[str, Any]]:
    return [{"namespace": namespace, "name": name, "capacity": 10, "outstanding": 0,
             "created_at": AT, "updated_at": AT} for name in names]


def _batch(db: Database, namespace: str) -> tuple[Any, ...]:
    """Queued writes, a union read, an INSERT … RETURNING: what a step sends."""
    def run(conn: Connection) -> tuple[Any, ...]:
        with deferring(conn):
            insert_rows(conn, weave_queues, _queues(namespace, ["a", "b", "c"]))
            update_keyed(conn, weave_queues, {"namespace": namespace, "name": "b"},
                         {"capacity": 7})
            reads = send_with(conn, [
                ("SELECT capacity FROM weave_queues WHERE namespace = %(ns)s AND name = %(n)s",
                 {"ns": namespace, "n": name}) for name in ("a", "b")], union=True)
            ids = insert_rows_ids(conn, weave_audit, [
                {"namespace": namespace, "occurred_at": AT, "actor": "t", "action": "x",
                 "object_type": "queue", "object_id": name, "operation_id": None,
                 "metadata": None} for name in ("a", "b")])
        return [a.rows for a in reads], len(ids), ids[1] - ids[0]
    return db.transaction(run, name="t")


def test_a_batch_answers_as_plain_sql_does(
    mysql_url: str, round_trips: RoundTrips, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = Database.from_url(mysql_url, pool_size=1)
    try:
        for name in ("prep-a", "prep-b", "prep-c"):
            create_namespace(db, f"{name}-{id(db)}")
        monkeypatch.setattr(query_text, "PREPARED", False)
        before, sent = round_trips.prepares, round_trips.count
        as_plain = _batch(db, f"prep-a-{id(db)}")
        assert round_trips.prepares == before
        plain_trips = round_trips.count - sent
        monkeypatch.setattr(query_text, "PREPARED", True)
        assert _batch(db, f"prep-b-{id(db)}") == as_plain == ([[(10,)], [(7,)]], 2, 1)
        assert round_trips.prepares - before == 3  # the block, the union, the INSERT
        sent = round_trips.count
        assert _batch(db, f"prep-c-{id(db)}") == as_plain
        assert round_trips.prepares - before == 3  # met before on this connection
        assert round_trips.count - sent == plain_trips == 3  # block + union, INSERT, COMMIT
    finally:
        db.dispose()


def test_a_connection_prepares_a_shape_once(mysql_db: Database, ns_name: str,
                                            round_trips: RoundTrips) -> None:
    create_namespace(mysql_db, ns_name)
    sql = "SELECT capacity FROM weave_queues WHERE namespace = %(ns)s AND name = %(n)s"

    def read(conn: Connection) -> list[Any]:
        return [send_with(conn, [(sql, {"ns": ns_name, "n": name})])[0].rows
                for name in ("x", "y", "z")]

    with mysql_db.engine.connect() as conn:
        first = round_trips.prepares
        assert read(conn) == [[], [], []]
        assert round_trips.prepares - first <= 1  # once, unless met before on this connection
        again = round_trips.prepares
        assert read(conn) == [[], [], []]
        assert round_trips.prepares == again
        conn.rollback()


def test_a_write_missing_its_row_is_refused_with_its_count(
    mysql_db: Database, ns_name: str
) -> None:
    create_namespace(mysql_db, ns_name)

    def run(conn: Connection) -> None:
        with deferring(conn):
            insert_rows(conn, weave_queues, _queues(ns_name, ["a"]))
            update_keyed(conn, weave_queues, {"namespace": ns_name, "name": "nope"},
                         {"capacity": 1})

    for _ in range(2):  # the second time from the prepared shape
        with pytest.raises(DeferredWriteMismatch, match="0 rows"):
            mysql_db.transaction(run, name="t")


_value = st.one_of(
    st.text(max_size=40), st.integers(-(2 ** 62), 2 ** 62), st.none(), st.booleans(),
    st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(2200, 1, 1)),
    st.decimals(allow_nan=False, allow_infinity=False, places=3,
                min_value=Decimal("-1e9"), max_value=Decimal("1e9")),
    st.binary(max_size=20),
)


def test_values_reach_the_server_as_plain_sql_writes_them(mysql_db: Database) -> None:
    """Any value (quotes, backslashes, NULs, non-ASCII, bytes, times) an ``EXECUTE … USING``
    carries is the value the plain text carries: the server answers both the same."""
    sql = "SELECT %(v)s, %(v)s IS NULL, HEX(%(v)s)"  # HEX: the very bytes the server got

    with mysql_db.engine.connect() as conn:
        @settings(max_examples=300, deadline=None)
        @given(_value)
        def same(value: Any) -> None:
            query_text.PREPARED = False
            try:
                (plain,) = send_with(conn, [(sql, {"v": value})])
            finally:
                query_text.PREPARED = True
            (shaped,) = send_with(conn, [(sql, {"v": value})])
            assert shaped.rows == plain.rows

        try:
            same()
        finally:
            query_text.PREPARED = True
        conn.rollback()


def test_the_set_is_bounded_least_recently_used_first(
    mysql_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(prepared, "PER_CONNECTION", 3)
    with mysql_db.engine.connect() as conn:
        dbapi = conn.connection.dbapi_connection
        for i in range(6):
            (answer,) = send_with(conn, [(f"SELECT {i} + %(x)s", {"x": 1})])
            assert answer.rows == [(i + 1,)]
        session = dbapi._weave_prepared  # type: ignore[union-attr]
        assert len(session.names) == 3
        assert sorted(session.names) == [f"SELECT {i} + ?" for i in (3, 4, 5)]
        cursor = dbapi.cursor()  # type: ignore[union-attr]
        with pytest.raises(pymysql.err.MySQLError) as gone:
            cursor.execute("EXECUTE weave_ps_1 USING 1")  # the oldest was deallocated
        assert gone.value.args[0] == 1243
        conn.rollback()


def test_a_reconnected_driver_prepares_again(mysql_db: Database) -> None:
    sql = "SELECT %(x)s * 2"
    with mysql_db.engine.connect() as conn:
        dbapi: Any = conn.connection.dbapi_connection
        assert send_with(conn, [(sql, {"x": 2})])[0].rows == [(4,)]
        old = dbapi.server_thread_id
        dbapi.ping(reconnect=False)
        dbapi.close()
        dbapi.connect()  # the same driver object, a new server session
        assert dbapi.server_thread_id != old
        assert send_with(conn, [(sql, {"x": 3})])[0].rows == [(6,)]
        assert dbapi._weave_prepared.thread_id == dbapi.server_thread_id
        conn.invalidate()  # reconnected behind the pool's back: never hand it out again


def test_a_shape_the_server_cannot_prepare_goes_as_plain_sql(mysql_db: Database) -> None:
    sql = "SELECT CAST(%(v)s AS CHAR(%(n)s))"  # a length must be a literal
    with mysql_db.engine.connect() as conn:
        for _ in range(2):
            (answer,) = send_with(conn, [(sql, {"v": "abcdef", "n": 3})])
            assert answer.rows == [("abc",)]
        assert "SELECT CAST(? AS CHAR(?))" in prepared._UNPREPARABLE
        conn.rollback()


def test_a_server_out_of_prepared_statements_gets_plain_sql(
    mysql_db: Database, ns_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    create_namespace(mysql_db, ns_name)
    with mysql_db.engine.connect() as admin:
        limit = admin.exec_driver_sql("SELECT @@GLOBAL.max_prepared_stmt_count").scalar()
        admin.exec_driver_sql("SET GLOBAL max_prepared_stmt_count = 0")
        try:
            with mysql_db.engine.connect() as conn:
                dbapi: Any = conn.connection.dbapi_connection
                dbapi._weave_prepared = None  # as a connection that never prepared
                (answer,) = send_with(conn, [("SELECT %(x)s + 40", {"x": 2})])
                assert answer.rows == [(42,)]
                assert dbapi._weave_prepared.full
                assert "max_prepared_stmt_count" in caplog.text
                conn.rollback()
            assert _batch(mysql_db, ns_name)[0] == [[(10,)], [(7,)]]
        finally:
            admin.exec_driver_sql(f"SET GLOBAL max_prepared_stmt_count = {int(str(limit))}")


def test_no_backslash_escapes_mode_sends_plain_sql(
    mysql_db: Database, round_trips: RoundTrips
) -> None:
    with mysql_db.engine.connect() as conn:
        conn.exec_driver_sql("SET SESSION sql_mode = 'NO_BACKSLASH_ESCAPES'")
        try:
            before = round_trips.prepares
            (answer,) = send_with(conn, [("SELECT %(v)s", {"v": "a\\'b"})])
            assert answer.rows == [("a\\'b",)]
            assert round_trips.prepares == before
        finally:
            conn.exec_driver_sql("SET SESSION sql_mode = DEFAULT")
            conn.rollback()


def test_times_with_a_zone_and_sequences_keep_their_plain_path(mysql_db: Database) -> None:
    at = datetime(2026, 12, 4, 22, 0, tzinfo=UTC)
    with mysql_db.engine.connect() as conn:
        (answer,) = send_with(conn, [("SELECT %(t)s, 1 IN %(s)s", {"t": at, "s": (1, 2)})])
        assert answer.rows == [("2026-12-04 22:00:00", 1)]
        conn.rollback()


def test_short_literals_are_escaped_once_and_long_ones_each_time(mysql_db: Database) -> None:
    short, long = "it's \\ short", "x" * 400
    at = datetime(2026, 12, 4, 23, 30, 0, 1)
    sql = "SELECT %(a)s, %(b)s, %(t)s"
    with mysql_db.engine.connect() as conn:
        for _ in range(2):
            (answer,) = send_with(conn, [(sql, {"a": short, "b": long, "t": at})])
            assert answer.rows == [(short, long, "2026-12-04 23:30:00.000001")]
        conn.rollback()
    assert query_text._SEEN[short] == "'it\\'s \\\\ short'"
    assert query_text._SEEN[at] == "'2026-12-04 23:30:00.000001'"
    assert long not in query_text._SEEN
