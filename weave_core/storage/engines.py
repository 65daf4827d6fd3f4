"""The SQLAlchemy engines Weave runs on: MariaDB/MySQL through PyMySQL (session settings,
multi-statements, the pool's reset) and SQLite (WAL, BEGIN IMMEDIATE, a busy timeout)."""

from __future__ import annotations

from typing import Any, Final

import pymysql
import sqlalchemy as sa
from pymysql.constants import CLIENT
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.pool import ConnectionPoolEntry, PoolResetState

from weave_core.storage import deferred

# Execution option read by the SQLite "begin" listener: reads use a deferred BEGIN so
# they do not take the write lock (WAL lets them run beside the one writer).
SQLITE_READ_OPTION: Final = "weave_sqlite_read"


def mysql_engine(url: sa.URL, pool_size: int) -> Engine:
    engine = sa.create_engine(
        url,
        pool_size=pool_size,
        max_overflow=pool_size,
        # No pre-ping: it costs a round trip on every checkout (several per step). A pooled
        # connection the server dropped fails its first statement with 2006/2013;
        # SQLAlchemy then invalidates the pool and ``transaction`` re-runs ``fn`` on a fresh
        # connection (the lost-connection row of the table above).
        pool_pre_ping=False,
        pool_recycle=3600,
        # The pool's own rollback-on-return is replaced by _reset_on_return (below): it
        # would send a ROLLBACK after every COMMIT, one round trip per transaction.
        # (COM_RESET_CONNECTION would also drop the session time zone.)
        pool_reset_on_return=None,
        # READ COMMITTED: every decision is taken on a locking read or a version-checked
        # UPDATE (MariaDB fact 4), so REPEATABLE READ's snapshot buys nothing, while its
        # gap and next-key locks widen every lock and multiply deadlocks.
        isolation_level="READ COMMITTED",
        connect_args={
            "charset": "utf8mb4",
            # Version-checked UPDATEs must count matched rows, not changed rows (fact 8).
            # MULTI_STATEMENTS: the step transaction sends its closing writes as one
            # round trip (weave_core.storage.deferred); values are still escaped by PyMySQL.
            "client_flag": CLIENT.FOUND_ROWS | CLIENT.MULTI_STATEMENTS,
            # Database time is UTC; DATETIME columns hold naive UTC values (fact 7).
            "init_command": "SET time_zone = '+00:00'",
        },
    )
    deferred.install(engine)  # first listener: queued writes are sent, and seen, first
    event.listen(engine, "do_connect", _connect)
    event.listen(engine, "reset", _reset_on_return)
    return engine


class _Connection(pymysql.connections.Connection):
    """PyMySQL's connection, whose ``commit()`` sends the transaction's last queued writes
    and the ``COMMIT`` as one query (``weave_before_commit``, set by ``deferred`` as the
    commit begins): one round trip less per transaction. A failing statement stops the
    query before the ``COMMIT``; its error is the commit's, and the transaction is rolled
    back before it is raised, as a failed commit must leave none open."""

    weave_before_commit: str | None = None

    def commit(self) -> None:
        before, self.weave_before_commit = self.weave_before_commit, None
        if before is None:
            super().commit()
            return
        try:
            self.query(before + ";\nCOMMIT")
            while getattr(getattr(self, "_result", None), "has_next", False):
                self.next_result()
        except pymysql.err.MySQLError:
            # A write refused (a row count, a duplicate key) leaves the transaction open:
            # a failed commit must not, or the pool would hand out its locks and writes.
            try:
                super().rollback()
            except pymysql.err.MySQLError:
                self._force_close()  # type: ignore[attr-defined]  # never reused open
            raise

    def rollback(self) -> None:
        self.weave_before_commit = None
        super().rollback()


def _connect(dialect: Any, record: ConnectionPoolEntry, cargs: Any, cparams: Any
             ) -> _Connection:
    return _Connection(*cargs, **cparams)


TRANSACTION_ENDED: Final = "weave_transaction_ended"
"""Set on a pooled connection's record when ``Database`` ended its transaction (COMMIT or
ROLLBACK succeeded) and nothing has run on it since."""


def _reset_on_return(dbapi_connection: DBAPIConnection, record: ConnectionPoolEntry,
                     state: PoolResetState) -> None:
    """Roll back a connection coming back to the pool unless its transaction is known to
    be over: Core already rolled it back, or ``Database`` committed or rolled it back as
    its last act. Anything else (a connection used outside ``Database``, an exception
    between statements) still gets its ROLLBACK, so no lock outlives its user."""
    ended = record.info.pop(TRANSACTION_ENDED, False)
    if state.terminate_only or state.transaction_was_reset or ended:
        return
    dbapi_connection.rollback()


def sqlite_engine(url: sa.URL, pool_size: int, busy_timeout_ms: int) -> Engine:
    memory = url.database in (None, "", ":memory:")
    options: dict[str, Any] = {} if memory else {"pool_size": pool_size, "max_overflow": 0}
    engine = sa.create_engine(url, **options)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: DBAPIConnection, _record: ConnectionPoolEntry) -> None:
        # pysqlite would otherwise issue its own deferred BEGIN; we emit ours (below).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            if not memory:
                cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute("PRAGMA synchronous = NORMAL")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        # SQLite has no row locks: a write transaction takes the database write lock at
        # BEGIN, so two writers serialise instead of deadlocking on lock upgrade.
        if conn.get_execution_options().get(SQLITE_READ_OPTION):
            conn.exec_driver_sql("BEGIN")
        else:
            conn.exec_driver_sql("BEGIN IMMEDIATE")

    return engine
