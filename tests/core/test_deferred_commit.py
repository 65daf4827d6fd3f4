"""The last queued writes of a transaction sent with its ``COMMIT`` (``storage.deferred``
and ``storage.engines._Connection``), on a real MariaDB: one round trip, listeners told as
before, and a write refused there leaves nothing committed and no transaction open."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import pymysql
import pytest
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DataError, IntegrityError

from tests.round_trips import RoundTrips
from weave_core.access.identity import create_namespace
from weave_core.storage.db import Database
from weave_core.storage.deferred import DeferredWriteMismatch, deferring
from weave_core.storage.schema import weave_queues
from weave_core.storage.statements import insert_rows, update_keyed

AT = datetime(2026, 12, 4, 23, 0, 0, 500000)


@pytest.fixture
def one_db(mysql_url: str) -> Iterator[Database]:
    """One pooled connection: what a failed commit leaves is what the next user gets."""
    db = Database.from_url(mysql_url, pool_size=1)
    yield db
    db.dispose()


@contextmanager
def _failing_commit_listener(db: Database) -> Iterator[None]:
    """A ``commit`` listener that raises, for the block: the commit fails before its
    ``COMMIT`` is sent."""
    def refuse(conn: Connection) -> None:
        raise RuntimeError("a listener that fails")

    event.listen(db.engine, "commit", refuse)
    try:
        yield
    finally:
        event.remove(db.engine, "commit", refuse)


def _queue(namespace: str, name: str, capacity: int = 10) -> dict[str, Any]:
    return {"namespace": namespace, "name": name, "capacity": capacity, "outstanding": 0,
            "created_at": AT, "updated_at": AT}


def _names(db: Database, namespace: str) -> list[str]:
    def run(conn: Connection) -> list[str]:
        rows = conn.execute(sa.select(weave_queues.c.name).where(
            weave_queues.c.namespace == namespace).order_by(weave_queues.c.name))
        return [str(name) for (name,) in rows]
    return db.read(run, name="t")


def _open_transactions(db: Database) -> int:
    """Transactions InnoDB holds for the pool's one connection (0: none left open)."""
    def run(conn: Connection) -> int:
        return int(conn.exec_driver_sql(
            "SELECT COUNT(*) FROM information_schema.innodb_trx "
            "WHERE trx_mysql_thread_id = CONNECTION_ID() AND trx_rows_modified > 0"
        ).scalar_one())
    return db.read(run, name="t")


def test_the_last_writes_and_the_commit_are_one_round_trip(
    one_db: Database, ns_name: str, round_trips: RoundTrips
) -> None:
    create_namespace(one_db, ns_name)
    seen: list[str] = []

    def statement(conn: Any, cursor: Any, sql: str, *_: Any) -> None:
        seen.append(sql.split()[0])

    def commit(conn: Any) -> None:
        seen.append("COMMIT")

    def run(conn: Connection) -> None:
        with deferring(conn):
            insert_rows(conn, weave_queues, [_queue(ns_name, "a"), _queue(ns_name, "b")])
            update_keyed(conn, weave_queues, {"namespace": ns_name, "name": "b"},
                         {"capacity": 7})

    event.listen(one_db.engine, "before_cursor_execute", statement)
    event.listen(one_db.engine, "commit", commit)
    try:
        one_db.transaction(run, name="t")  # the shapes are prepared by now
        before = round_trips.count
        seen.clear()
        one_db.transaction(lambda conn: _again(conn, ns_name), name="t")
        trips = round_trips.count - before
    finally:
        event.remove(one_db.engine, "before_cursor_execute", statement)
        event.remove(one_db.engine, "commit", commit)
    assert trips == 1  # the two writes and the COMMIT
    assert seen == ["UPDATE", "UPDATE", "COMMIT"]  # each statement seen, the commit once
    assert _names(one_db, ns_name) == ["a", "b"]


def _again(conn: Connection, namespace: str) -> None:
    with deferring(conn):
        for name, capacity in (("a", 3), ("b", 4)):
            update_keyed(conn, weave_queues, {"namespace": namespace, "name": name},
                         {"capacity": capacity})


def test_a_write_refused_at_the_commit_leaves_nothing_committed_or_open(
    one_db: Database, ns_name: str
) -> None:
    create_namespace(one_db, ns_name)

    def run(conn: Connection) -> None:
        with deferring(conn):
            insert_rows(conn, weave_queues, [_queue(ns_name, "a")])
            update_keyed(conn, weave_queues, {"namespace": ns_name, "name": "gone"},
                         {"capacity": 1})

    for _ in range(2):  # plain, then from the prepared shape
        with pytest.raises(DeferredWriteMismatch, match="0 rows") as refused:
            one_db.transaction(run, name="t")
        assert "weave_queues" in str(refused.value)
        assert _open_transactions(one_db) == 0
        assert _names(one_db, ns_name) == []


def test_a_duplicate_key_at_the_commit_is_the_commits_error_and_rolls_back(
    one_db: Database, ns_name: str
) -> None:
    create_namespace(one_db, ns_name)
    one_db.transaction(lambda conn: insert_rows(conn, weave_queues, [_queue(ns_name, "a")]),
                       name="t")

    def run(conn: Connection) -> None:
        with deferring(conn):
            insert_rows(conn, weave_queues, [_queue(ns_name, "b")])
            insert_rows(conn, weave_queues, [_queue(ns_name, "a", 99)])

    with pytest.raises(IntegrityError):
        one_db.transaction(run, name="t")
    assert _open_transactions(one_db) == 0
    assert _names(one_db, ns_name) == ["a"]


def test_a_connection_killed_at_its_commit_commits_nothing(
    one_db: Database, ns_name: str
) -> None:
    """SQLAlchemy's commit event still comes before the COMMIT leaves: a connection killed
    there loses the round trip that carried the writes, and the re-run records them once."""
    create_namespace(one_db, ns_name)
    armed = {"kill": True}

    def kill(conn: Connection) -> None:
        if armed.pop("kill", False):
            own = conn.exec_driver_sql("SELECT CONNECTION_ID()").scalar_one()
            with one_db.engine.connect() as killer_pool:  # a second, overflow connection
                killer_pool.exec_driver_sql(f"KILL CONNECTION {int(own)}")

    def run(conn: Connection) -> None:
        with deferring(conn):
            insert_rows(conn, weave_queues, [_queue(ns_name, "k")])
            update_keyed(conn, weave_queues, {"namespace": ns_name, "name": "k"},
                         {"capacity": 5})

    event.listen(one_db.engine, "commit", kill)
    try:
        one_db.transaction(run, name="t")
    finally:
        event.remove(one_db.engine, "commit", kill)
    assert "kill" not in armed
    assert _names(one_db, ns_name) == ["k"]


def test_writes_left_for_a_commit_that_never_came_are_not_sent_by_the_next(
    one_db: Database, ns_name: str
) -> None:
    """A commit listener that fails leaves the driver holding writes for a commit that
    never happened; the next transaction on that connection must not send them."""
    create_namespace(one_db, ns_name)

    def run(conn: Connection) -> None:
        with deferring(conn):
            insert_rows(conn, weave_queues, [_queue(ns_name, "stale"), _queue(ns_name, "s2")])

    with _failing_commit_listener(one_db), pytest.raises(RuntimeError):
        one_db.transaction(run, name="t")
    one_db.transaction(lambda conn: None, name="t")
    assert _names(one_db, ns_name) == []


def test_a_commit_that_failed_before_its_commit_leaves_no_transaction_open(
    one_db: Database, ns_name: str
) -> None:
    """Writes already sent, then the commit fails before its ``COMMIT`` (a listener): the
    server's transaction is rolled back, not continued and committed by the next user of
    the pooled connection."""
    create_namespace(one_db, ns_name)

    def run(conn: Connection) -> None:
        conn.execute(sa.insert(weave_queues), _queue(ns_name, "sent"))

    with _failing_commit_listener(one_db), pytest.raises(RuntimeError):
        one_db.transaction(run, name="t")
    one_db.transaction(lambda conn: None, name="t")
    assert _names(one_db, ns_name) == []
    assert _open_transactions(one_db) == 0


def test_a_database_error_before_the_commit_leaves_no_transaction_open(
    one_db: Database, ns_name: str
) -> None:
    """Writes already sent, then a database error while the queued ones are readied for
    the ``COMMIT`` (here a statement listener refuses one, as MariaDB refuses a value):
    the commit fails with it, and the writes already sent are rolled back, not left in an
    open transaction that the next user of the pooled connection would commit."""
    create_namespace(one_db, ns_name)

    def refuse(conn: Any, cursor: Any, sql: str, params: Any, *_: Any) -> None:
        if sql.startswith("UPDATE weave_queues") and params.get("v_capacity") == 99:
            raise DataError(sql, params, pymysql.err.DataError(1406, "Data too long"))

    def run(conn: Connection) -> None:
        conn.execute(sa.insert(weave_queues), _queue(ns_name, "sent"))
        with deferring(conn):
            update_keyed(conn, weave_queues, {"namespace": ns_name, "name": "sent"},
                         {"capacity": 99})

    event.listen(one_db.engine, "before_cursor_execute", refuse)
    try:
        with pytest.raises(DataError):
            one_db.transaction(run, name="t")
    finally:
        event.remove(one_db.engine, "before_cursor_execute", refuse)
    one_db.transaction(lambda conn: None, name="t")
    assert _names(one_db, ns_name) == []
    assert _open_transactions(one_db) == 0
