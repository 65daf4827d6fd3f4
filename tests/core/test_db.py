"""The engine factory, the transaction helper, savepoints and database time, on real databases."""

from __future__ import annotations

import logging
import secrets
import sqlite3
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pymysql
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError, ProgrammingError

from tests.round_trips import RoundTrips
from weave_core.access.audit import write_audit
from weave_core.foundation.errors import NotFoundError, TransactionRetriesExhaustedError
from weave_core.storage.db import (
    DEFAULT_SQLITE_URL,
    Database,
    default_database_url,
    savepoint,
    set_clock_offset,
)
from weave_core.storage.locks import lock_namespace_exclusive
from weave_core.storage.retries import mysql_error_code
from weave_core.storage.schema import weave_audit, weave_namespaces

# --- helpers -------------------------------------------------------------------------


def _add_namespaces(db: Database, *names: str) -> None:
    def _add(conn: Connection) -> None:
        for name in names:
            conn.execute(sa.insert(weave_namespaces).values(name=name, created_at=db.now(conn)))

    db.transaction(_add, name="test_add_namespaces")


def _mark(conn: Connection, db: Database, marker: str) -> None:
    """Write a row that only survives if the transaction that wrote it commits."""
    write_audit(
        conn,
        namespace="test-markers",
        actor="test",
        action="mark",
        object_type="marker",
        object_id=marker,
        at=db.now(conn),
    )


def _markers(db: Database, marker: str) -> int:
    stmt = sa.select(sa.func.count()).where(
        weave_audit.c.object_type == "marker", weave_audit.c.object_id == marker
    )
    return int(db.read(lambda conn: conn.execute(stmt).scalar_one()))


# --- URLs and engine settings --------------------------------------------------------


def test_default_database_url_prefers_the_environment() -> None:
    assert default_database_url({}) == DEFAULT_SQLITE_URL == "sqlite:///weave.db"
    assert default_database_url({"WEAVE_DATABASE_URL": ""}) == DEFAULT_SQLITE_URL
    url = "mysql+pymysql://u:p@db:3306/weave"
    assert default_database_url({"WEAVE_DATABASE_URL": url}) == url


@pytest.mark.parametrize(
    ("url", "dialect"),
    [
        ("sqlite:///x.db", "sqlite"),
        ("mysql+pymysql://root@127.0.0.1/x", "mysql"),
        ("mysql://root@127.0.0.1/x", "mysql"),
        ("mariadb+pymysql://root@127.0.0.1/x", "mysql"),
    ],
)
def test_from_url_dialects(url: str, dialect: str) -> None:
    db = Database.from_url(url)
    try:
        assert db.dialect == dialect
        assert db.url == url
    finally:
        db.dispose()


@pytest.mark.parametrize("url", ["postgresql://x/y", "mysql+mysqldb://root@h/x"])
def test_from_url_refuses_other_databases(url: str) -> None:
    with pytest.raises(ValueError, match="unsupported"):
        Database.from_url(url)


def test_mysql_session_settings(mysql_db: Database) -> None:
    def _settings(conn: Connection) -> tuple[str, str, str]:
        row = conn.execute(
            sa.text("SELECT @@session.time_zone, @@session.tx_isolation, @@character_set_client")
        ).one()
        return row[0], row[1], row[2]

    assert mysql_db.read(_settings) == ("+00:00", "READ-COMMITTED", "utf8mb4")


def test_mysql_update_counts_matched_rows(mysql_db: Database, ns_name: str) -> None:
    """CLIENT_FOUND_ROWS: a version-checked UPDATE that changes nothing still matches."""
    _add_namespaces(mysql_db, ns_name)

    def _noop_update(conn: Connection) -> int:
        stmt = (
            sa.update(weave_namespaces)
            .where(weave_namespaces.c.name == ns_name)
            .values(disabled=False)
        )
        return conn.execute(stmt).rowcount

    assert mysql_db.transaction(_noop_update, name="t") == 1


def test_sqlite_uses_wal_and_a_busy_timeout(sqlite_db: Database) -> None:
    def _pragmas(conn: Connection) -> tuple[str, int]:
        mode = conn.exec_driver_sql("PRAGMA journal_mode").scalar_one()
        timeout = conn.exec_driver_sql("PRAGMA busy_timeout").scalar_one()
        return str(mode), int(timeout)

    assert sqlite_db.read(_pragmas) == ("wal", 5000)


def test_sqlite_write_transaction_takes_the_write_lock_at_begin(sqlite_db: Database) -> None:
    """BEGIN IMMEDIATE: another writer is locked out before ``fn`` writes anything."""
    path = sqlite_db.engine.url.database
    assert path is not None

    def _probe(conn: Connection) -> str:
        other = sqlite3.connect(path, timeout=0, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            return str(exc)
        finally:
            other.close()
        return "not locked"

    assert sqlite_db.transaction(_probe, name="t") == "database is locked"
    # a read transaction is deferred: another writer is not locked out
    assert sqlite_db.read(_probe) == "not locked"


def test_sqlite_database_is_locked_is_retried(sqlite_url: str, sqlite_db: Database) -> None:
    db = Database.from_url(sqlite_url, sqlite_busy_timeout_ms=50)
    path = db.engine.url.database
    assert path is not None
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    attempts: list[int] = []

    def _write(conn: Connection) -> None:
        attempts.append(1)
        _mark(conn, db, "sqlite-busy")

    release = threading.Timer(0.3, holder.rollback)
    release.start()
    try:
        db.transaction(_write, name="t", max_attempts=20)
    finally:
        release.join()
        holder.close()
        db.dispose()
    assert len(attempts) == 1  # BEGIN IMMEDIATE failed before fn ran; then it ran once
    assert _markers(sqlite_db, "sqlite-busy") == 1


def test_sqlite_retries_exhausted_while_the_lock_is_held(
    sqlite_url: str, sqlite_db: Database
) -> None:
    db = Database.from_url(sqlite_url, sqlite_busy_timeout_ms=10)
    path = db.engine.url.database
    assert path is not None
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(TransactionRetriesExhaustedError) as info:
            db.transaction(lambda conn: None, name="busy", max_attempts=2)
    finally:
        holder.rollback()
        holder.close()
        db.dispose()
    assert info.value.details == {"transaction": "busy", "attempts": 2, "reason": "sqlite_busy"}


# --- commit, rollback, WeaveError ----------------------------------------------------


def test_transaction_commits_and_returns(any_db: Database) -> None:
    marker = secrets.token_hex(6)

    def _fn(conn: Connection) -> int:
        _mark(conn, any_db, marker)
        return 7

    assert any_db.transaction(_fn, name="t") == 7
    assert _markers(any_db, marker) == 1


def test_weave_error_rolls_back_and_propagates_unchanged(any_db: Database) -> None:
    marker = secrets.token_hex(6)
    error = NotFoundError("nothing here", details={"k": 1})
    calls: list[int] = []

    def _fail(conn: Connection) -> None:
        calls.append(1)
        _mark(conn, any_db, marker)
        raise error

    with pytest.raises(NotFoundError) as info:
        any_db.transaction(_fail, name="t")
    assert info.value is error
    assert calls == [1]  # a decision is not retried
    assert _markers(any_db, marker) == 0


def test_other_database_errors_are_not_retried(any_db: Database) -> None:
    calls: list[int] = []

    def _bad_sql(conn: Connection) -> None:
        calls.append(1)
        conn.execute(sa.text("SELECT * FROM no_such_table_here"))

    with pytest.raises(DBAPIError):
        any_db.transaction(_bad_sql, name="t")
    assert calls == [1]


def test_max_attempts_must_be_positive(any_db: Database) -> None:
    with pytest.raises(ValueError, match="max_attempts"):
        any_db.transaction(lambda conn: None, name="t", max_attempts=0)


# --- savepoints ----------------------------------------------------------------------


def test_savepoint_rollback_keeps_the_outer_work(any_db: Database) -> None:
    outer, inner, kept = (secrets.token_hex(6) for _ in range(3))

    def _work(conn: Connection) -> None:
        _mark(conn, any_db, outer)
        with pytest.raises(NotFoundError), any_db.savepoint(conn):
            _mark(conn, any_db, inner)
            raise NotFoundError("successor refused")
        with savepoint(conn):
            _mark(conn, any_db, kept)

    any_db.transaction(_work, name="t")
    assert _markers(any_db, outer) == 1
    assert _markers(any_db, inner) == 0
    assert _markers(any_db, kept) == 1


# --- MariaDB retries -----------------------------------------------------------------


@pytest.mark.parametrize("in_savepoint", [False, True], ids=["plain", "savepoint"])
def test_real_deadlock_is_rerun_and_both_finish(
    mysql_db: Database,
    in_savepoint: bool,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Two threads lock two rows in opposite orders; InnoDB kills one, which re-runs.

    In the ``savepoint`` variant the second lock is taken inside a SAVEPOINT: the deadlock
    removes the savepoint (1305 on rollback) and the whole transaction still re-runs.
    """
    db = mysql_db
    a, b = f"row-a-{secrets.token_hex(4)}", f"row-b-{secrets.token_hex(4)}"
    _add_namespaces(db, a, b)
    barrier = threading.Barrier(2, timeout=10)
    calls: dict[str, int] = {"ab": 0, "ba": 0}
    errors: list[BaseException] = []

    def _second(conn: Connection, name: str) -> None:
        if in_savepoint:
            with savepoint(conn):
                lock_namespace_exclusive(conn, name)
        else:
            lock_namespace_exclusive(conn, name)

    def _run(label: str, first: str, second: str) -> None:
        def _fn(conn: Connection) -> None:
            calls[label] += 1
            lock_namespace_exclusive(conn, first)
            if calls[label] == 1:
                barrier.wait()  # both hold their first row before asking for the second
            _second(conn, second)

        try:
            db.transaction(_fn, name=f"deadlock-{label}")
        except BaseException as exc:  # reported to the main thread
            errors.append(exc)

    threads = [
        threading.Thread(target=_run, args=("ab", a, b)),
        threading.Thread(target=_run, args=("ba", b, a)),
    ]
    with caplog.at_level(logging.WARNING, logger="weave_core.storage.db"):
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
    assert errors == []
    assert sorted(calls.values()) == [1, 2]  # exactly one victim, run twice
    assert any("deadlock_1213" in r.getMessage() for r in caplog.records)


@pytest.fixture
def short_wait_db(mysql_url: str) -> Iterator[Database]:
    db = Database.from_url(mysql_url, pool_size=1)
    yield db
    db.dispose()


def _hold_lock(db: Database, namespace: str) -> Connection:
    holder = db.engine.connect()
    holder.begin()
    assert lock_namespace_exclusive(holder, namespace) is not None
    return holder


def test_lock_wait_timeout_rolls_back_explicitly_then_retries(
    mysql_db: Database, short_wait_db: Database, ns_name: str
) -> None:
    """1205 undoes only the statement: the helper must ROLLBACK the earlier writes itself."""
    _add_namespaces(mysql_db, ns_name)
    marker = secrets.token_hex(6)
    holder = _hold_lock(mysql_db, ns_name)
    calls: list[int] = []

    def _fn(conn: Connection) -> None:
        calls.append(1)
        conn.execute(sa.text("SET SESSION innodb_lock_wait_timeout = 1"))
        if len(calls) == 2:
            holder.rollback()  # the other transaction ends before the re-run locks
        _mark(conn, short_wait_db, marker)
        lock_namespace_exclusive(conn, ns_name)

    try:
        short_wait_db.transaction(_fn, name="t")
    finally:
        holder.close()
    assert len(calls) == 2
    assert _markers(mysql_db, marker) == 1  # the first attempt's row was rolled back


def test_lock_wait_timeout_past_max_attempts_raises(
    mysql_db: Database, short_wait_db: Database, ns_name: str
) -> None:
    _add_namespaces(mysql_db, ns_name)
    marker = secrets.token_hex(6)
    holder = _hold_lock(mysql_db, ns_name)

    def _fn(conn: Connection) -> None:
        conn.execute(sa.text("SET SESSION innodb_lock_wait_timeout = 1"))
        _mark(conn, short_wait_db, marker)
        lock_namespace_exclusive(conn, ns_name)

    try:
        with pytest.raises(TransactionRetriesExhaustedError) as info:
            short_wait_db.transaction(_fn, name="held", max_attempts=2)
    finally:
        holder.close()
    assert info.value.code == "transaction_retries_exhausted"
    assert info.value.details["reason"] == "lock_wait_timeout_1205"
    assert mysql_error_code(info.value.__cause__ or Exception()) == 1205
    assert _markers(mysql_db, marker) == 0


def test_lost_connection_at_commit_reruns_fn(mysql_db: Database) -> None:
    """The connection dies just before COMMIT: the outcome is unknown, so ``fn`` re-runs and
    finds out for itself whether its work is there (here it is not: the server rolled back).
    """
    marker = secrets.token_hex(6)
    calls: list[int] = []

    def _fn(conn: Connection) -> None:
        calls.append(1)
        if _markers_in(conn, marker):
            return  # already done: nothing to do
        _mark(conn, mysql_db, marker)
        if len(calls) == 1:
            own_id = conn.execute(sa.text("SELECT CONNECTION_ID()")).scalar_one()
            url = mysql_db.engine.url
            killer = pymysql.connect(
                host=url.host, port=url.port or 3306, user=url.username, password=url.password or ""
            )
            try:
                with killer.cursor() as cur:
                    cur.execute(f"KILL CONNECTION {int(own_id)}")
            finally:
                killer.close()

    mysql_db.transaction(_fn, name="t")
    assert len(calls) == 2
    assert _markers(mysql_db, marker) == 1


def _markers_in(conn: Connection, marker: str) -> int:
    stmt = sa.select(sa.func.count()).where(
        weave_audit.c.object_type == "marker", weave_audit.c.object_id == marker
    )
    return int(conn.execute(stmt).scalar_one())


def test_syntax_errors_carry_their_mysql_code(mysql_db: Database) -> None:
    with pytest.raises(ProgrammingError) as info:
        mysql_db.read(lambda conn: conn.execute(sa.text("SELEC 1")))
    assert mysql_error_code(info.value) == 1064


# --- database time -------------------------------------------------------------------


def test_now_is_database_time_in_utc(any_db: Database) -> None:
    before = datetime.now(UTC).replace(tzinfo=None)
    now = any_db.read(any_db.now)
    after = datetime.now(UTC).replace(tzinfo=None)
    assert isinstance(now, datetime)
    assert now.tzinfo is None
    # database and test run on one machine: the clocks agree to well within a second
    assert before - timedelta(seconds=1) <= now <= after + timedelta(seconds=1)


def test_now_has_sub_second_precision_on_mysql(mysql_db: Database) -> None:
    samples = {mysql_db.read(mysql_db.now).microsecond for _ in range(5)}
    assert samples != {0}


def test_clock_offset_moves_database_time_without_sleeping(any_db: Database) -> None:
    start = any_db.read(any_db.now)
    try:
        set_clock_offset(any_db, 3600)
        moved = any_db.read(any_db.now)
        assert timedelta(seconds=3600) <= moved - start < timedelta(seconds=3610)
        set_clock_offset(any_db, -1.5)
        back = any_db.read(any_db.now)
        assert back < start + timedelta(seconds=1)
    finally:
        set_clock_offset(any_db, 0)
    assert any_db.read(any_db.now) - start < timedelta(seconds=10)


def test_now_is_one_query(any_db: Database) -> None:
    statements: list[str] = []

    def _record(conn: Connection, cursor: object, statement: str, *rest: object) -> None:
        if not statement.startswith("BEGIN"):
            statements.append(statement)

    sa.event.listen(any_db.engine, "before_cursor_execute", _record)
    try:
        any_db.read(any_db.now)
    finally:
        sa.event.remove(any_db.engine, "before_cursor_execute", _record)
    assert len(statements) == 1
    assert "weave_clock" in statements[0]


# --- connections coming back to the pool ------------------------------------------------


def test_a_committed_transaction_sends_no_rollback_when_its_connection_returns(
    mysql_url: str, round_trips: RoundTrips
) -> None:
    db = Database.from_url(mysql_url, pool_size=1)
    try:
        db.transaction(lambda conn: db.now(conn), name="warm")  # the connection exists
        sent: list[str] = []
        listen = lambda conn, cursor, statement, *_: sent.append(statement)  # noqa: E731
        sa.event.listen(db.engine, "before_cursor_execute", listen)
        before = round_trips.count
        db.transaction(lambda conn: db.now(conn), name="t")
        sa.event.remove(db.engine, "before_cursor_execute", listen)
        assert len(sent) == 1
        assert round_trips.count - before == 2  # the SELECT and the COMMIT: no ROLLBACK
    finally:
        db.dispose()


def test_a_connection_returned_inside_a_transaction_is_still_rolled_back(
    mysql_url: str, ns_name: str
) -> None:
    db = Database.from_url(mysql_url, pool_size=1)
    try:
        _add_namespaces(db, ns_name)
        raw = db.engine.raw_connection()  # used outside Database: nothing ends its work
        cursor = raw.cursor()
        cursor.execute("UPDATE weave_namespaces SET disabled = 1 WHERE name = %s", (ns_name,))
        cursor.close()
        raw.close()  # back to the pool with the row locked and changed, uncommitted
        other = Database.from_url(mysql_url, pool_size=1)
        try:
            def _lock(conn: Connection) -> bool:
                conn.exec_driver_sql("SET SESSION innodb_lock_wait_timeout = 1")
                row = lock_namespace_exclusive(conn, ns_name)
                return bool(row.disabled) if row is not None else True
            assert other.transaction(_lock, name="t", max_attempts=1) is False
        finally:
            other.dispose()
    finally:
        db.dispose()


def test_time_read_with_a_lock_is_the_time_after_the_wait(mysql_db: Database,
                                                           ns_name: str) -> None:
    """A locking read that waits for a row reads database time after the wait (a step
    reads its time in the statement that takes its locks): the transaction that got the
    row later has the later time, never one from before the holder committed."""
    db = mysql_db
    db.transaction(lambda conn: conn.execute(sa.insert(weave_namespaces).values(
        name=ns_name, created_at=db.now(conn))), name="t")
    locked = sa.select(weave_namespaces.c.name).where(
        weave_namespaces.c.name == ns_name).with_for_update()
    holding, waiting = threading.Event(), {}

    def hold(conn: Connection) -> datetime:
        conn.execute(locked).one()
        holding.set()
        time.sleep(0.3)  # the other transaction waits for the row meanwhile
        return db.now(conn)

    def wait() -> None:
        holding.wait(10)
        waiting["now"] = db.transaction(
            lambda conn: db.now_of(conn.execute(db.with_now(locked)).one()), name="t")

    waiter = threading.Thread(target=wait)
    waiter.start()
    released_after = db.transaction(hold, name="t")
    waiter.join(10)
    assert waiting["now"] >= released_after, (waiting["now"], released_after)
