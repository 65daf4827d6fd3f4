"""`Database`: the transaction helper (re-runs, savepoints) and database time; the engines
are built in :mod:`weave_core.storage.engines`, the errors classified in
:mod:`weave_core.storage.retries`.

Every write in Weave goes through :meth:`Database.transaction`, which re-runs the whole
function on the failures MariaDB documents as "try again" (RELIABILITY.md, MariaDB facts):

===========================  ==================================================================
failure                      what the helper does
===========================  ==================================================================
1213 deadlock, 1020          InnoDB already rolled the transaction back: re-run ``fn``.
1205 lock wait timeout       only the *statement* was rolled back: ROLLBACK, then re-run.
2006/2013 lost connection    before COMMIT the server rolls back; during COMMIT the outcome is
                             unknown. Re-run ``fn``: it must find work already done (R-9).
SQLite "database is locked"  the busy timeout expired: ROLLBACK, then re-run.
``WeaveError`` from ``fn``   ROLLBACK and propagate unchanged (a decision, not a failure).
===========================  ==================================================================

Transaction convention: public functions take a :class:`Database` and open their own
transaction; helpers that run inside the caller's transaction take a ``Connection``.
Never call ``transaction`` from inside ``fn``: that opens a second connection, which can
wait on the first one's locks forever.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime, timedelta
from typing import Any, Final, Literal, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError

from weave_core.foundation.aftercommit import later_mark, later_rollback, run_later
from weave_core.foundation.errors import (
    DatabaseURLError,
    TransactionRetriesExhaustedError,
    UnsupportedDatabaseError,
)
from weave_core.observability import tracing
from weave_core.observability.metrics import TRANSACTION_RETRIES, TRANSACTION_SECONDS, child
from weave_core.storage import deferred
from weave_core.storage.engines import (
    SQLITE_READ_OPTION,
    TRANSACTION_ENDED,
    mysql_engine,
    sqlite_engine,
)
from weave_core.storage.retries import (
    backoff,
    retry_reason,
)
from weave_core.storage.schema import weave_clock as _clock

T = TypeVar("T")

Dialect = Literal["mysql", "sqlite"]

DEFAULT_SQLITE_URL: Final = "sqlite:///weave.db"
"""The embedded default: a SQLite file in the working directory (one engine process)."""

SQLITE_BUSY_TIMEOUT_MS: Final = 5000


TXN_STARTED: Final = "weave_txn_started"
"""``conn.info`` key: ``perf_counter()`` when the running transaction began (engine gap)."""



logger = logging.getLogger(__name__)


def default_database_url(environ: dict[str, str] | None = None) -> str:
    """``WEAVE_DATABASE_URL`` if set and not empty, else ``sqlite:///weave.db`` (cwd)."""
    env = os.environ if environ is None else environ
    return env.get("WEAVE_DATABASE_URL") or DEFAULT_SQLITE_URL


def _now_columns(dialect: Dialect) -> tuple[sa.ColumnElement[Any], sa.ColumnElement[Any]]:
    """Database time and the test clock offset, as two columns of one SELECT.

    On MariaDB/MySQL the time is ``SYSDATE(6)``, the time at which the column is computed
    (the session time zone is UTC), not ``UTC_TIMESTAMP(6)``, fixed when the statement
    starts: a locking read that waits for a row (a step's chain in one ``UNION ALL``, its
    time in the last part) must read the time *after* the wait, so that a transaction that
    got the instance lock later never records an earlier time than the one before it.
    """
    offset = sa.func.coalesce(
        sa.select(_clock.c.offset_us).where(_clock.c.id == 1).scalar_subquery(), 0
    )
    if dialect == "mysql":
        return (sa.literal_column("sysdate(6)", sa.DateTime()).label("weave_db_now"),
                offset.label("weave_db_offset"))
    return (sa.func.strftime("%Y-%m-%d %H:%M:%f", "now").label("weave_db_now"),
            offset.label("weave_db_offset"))


def _now_query(dialect: Dialect) -> sa.Select[Any]:
    """Database time and the test clock offset, in one SELECT."""
    return sa.select(*_now_columns(dialect))


def _time_of(raw: Any, offset: Any) -> datetime:
    offset_us = int(offset)
    base = raw if isinstance(raw, datetime) else datetime.fromisoformat(str(raw))
    return base + timedelta(microseconds=offset_us) if offset_us else base


# --- the database --------------------------------------------------------------------


class Database:
    """One database: its engine, its dialect, and the only way to run transactions on it."""

    def __init__(self, url: str, engine: Engine, dialect: Dialect) -> None:
        self.url = url
        self.engine = engine
        self.dialect: Dialect = dialect
        self._now_query = _now_query(dialect)
        self._now_columns = _now_columns(dialect)

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        pool_size: int = 10,
        sqlite_busy_timeout_ms: int = SQLITE_BUSY_TIMEOUT_MS,
    ) -> Database:
        """Build the engine for ``mysql+pymysql://``, ``mariadb+pymysql://`` or ``sqlite:///``.

        ``sqlite_busy_timeout_ms``: how long a SQLite writer waits for the write lock
        before "database is locked" (which ``transaction`` then retries).
        """
        try:
            parsed = make_url(url)
        except ArgumentError:
            raise DatabaseURLError(  # not echoed: a malformed URL may still hold a password
                "the database URL cannot be read: use "
                "mysql+pymysql://USER:PASSWORD@HOST:PORT/DB or sqlite:///PATH") from None
        backend = parsed.get_backend_name()
        if backend in ("mysql", "mariadb"):
            if parsed.drivername.partition("+")[2] not in ("pymysql", ""):
                raise UnsupportedDatabaseError(
                    f"unsupported MySQL driver in "
                    f"{parsed.render_as_string(hide_password=True)!r}: use mysql+pymysql://")
            parsed = parsed.set(drivername=f"{backend}+pymysql")
            return cls(url, mysql_engine(parsed, pool_size), "mysql")
        if backend == "sqlite":
            return cls(url, sqlite_engine(parsed, pool_size, sqlite_busy_timeout_ms), "sqlite")
        raise UnsupportedDatabaseError(
            f"unsupported database URL {parsed.render_as_string(hide_password=True)!r}: "
            "use mysql+pymysql://USER:PASSWORD@HOST:PORT/DB or sqlite:///PATH"
        )

    def dispose(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()

    def __repr__(self) -> str:
        return f"Database({self.engine.url.render_as_string(hide_password=True)!r})"

    # --- transactions ---------------------------------------------------------------

    def transaction(self, fn: Callable[[Connection], T], *, name: str, max_attempts: int = 8) -> T:
        """Run ``fn`` in one write transaction and commit; re-run it whole when told to.

        ``fn`` may run several times: it must derive everything from what it reads in
        the transaction (never from state kept by a previous attempt), and after a lost
        connection at COMMIT it must find its own committed work and do nothing.
        ``name`` labels the transaction in logs and errors.
        """
        return self._run(fn, name=name, max_attempts=max_attempts, read_only=False)

    def read(
        self, fn: Callable[[Connection], T], *, name: str = "read", max_attempts: int = 3
    ) -> T:
        """Run ``fn`` in a read-only transaction (``fn`` must not write).

        On SQLite this is a deferred transaction that never blocks the writer.
        """
        return self._run(fn, name=name, max_attempts=max_attempts, read_only=True)

    def _run(
        self, fn: Callable[[Connection], T], *, name: str, max_attempts: int, read_only: bool
    ) -> T:
        started = time.perf_counter()
        try:
            if not tracing.enabled():  # the usual case: not even the span's name is built
                return self._retrying(fn, name=name, max_attempts=max_attempts,
                                      read_only=read_only)
            with tracing.span(f"transaction {name}", {"weave.transaction": name}):
                return self._retrying(fn, name=name, max_attempts=max_attempts,
                                      read_only=read_only)
        finally:
            child(TRANSACTION_SECONDS, name).observe(time.perf_counter() - started)

    def _retrying(
        self, fn: Callable[[Connection], T], *, name: str, max_attempts: int, read_only: bool
    ) -> T:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        last: DBAPIError | None = None
        reason = ""
        for attempt in range(1, max_attempts + 1):
            try:
                return self._attempt(fn, read_only)
            except DBAPIError as exc:
                found = retry_reason(exc)
                if found is None:
                    raise
                last, reason = exc, found
                child(TRANSACTION_RETRIES, name, reason).inc()
                if attempt < max_attempts:
                    logger.warning(
                        "transaction %s: %s on attempt %d/%d, re-running",
                        name,
                        reason,
                        attempt,
                        max_attempts,
                    )
                    time.sleep(backoff(attempt))
        raise TransactionRetriesExhaustedError(
            f"transaction {name!r} failed {max_attempts} times; last failure: {reason}",
            details={"transaction": name, "attempts": max_attempts, "reason": reason},
        ) from last

    def _attempt(self, fn: Callable[[Connection], T], read_only: bool) -> T:
        with self.engine.connect() as conn:
            if read_only and self.dialect == "sqlite":
                conn = conn.execution_options(**{SQLITE_READ_OPTION: True})
            trans = conn.begin()
            info = conn.info  # the connection's own dict: still there if it is invalidated
            deferred.forget(info, conn.connection.dbapi_connection)
            info[TXN_STARTED] = time.perf_counter()
            try:
                result = fn(conn)
                try:
                    trans.commit()  # with the last queued writes, on MariaDB (deferred)
                except BaseException as exc:
                    # The commit may have failed before its COMMIT went out (a write queued
                    # for it, a listener of the commit): the server's transaction must not
                    # stay open on the pooled connection.
                    refused = (deferred.mismatch_at_commit(conn, exc)
                               if isinstance(exc, DBAPIError) else None)
                    _abandon(conn)
                    if refused is not None:
                        raise refused from exc
                    raise
                # the pool sends no ROLLBACK after it (engines.reset_on_return)
                conn.connection.info[TRANSACTION_ENDED] = True
            except BaseException:
                run_later(info, committed=False)
                # Explicit ROLLBACK: after 1205 only the statement was rolled back and the
                # transaction still holds its locks and earlier changes (MariaDB fact 2).
                if trans.is_active:
                    try:
                        trans.rollback()
                    except DBAPIError:
                        conn.invalidate()  # the connection is unusable; never reuse it
                raise
            run_later(info, committed=True)
            if conn.in_transaction():  # an after-commit callable began another
                conn.connection.info.pop(TRANSACTION_ENDED, None)
            return result

    def savepoint(self, conn: Connection) -> AbstractContextManager[None]:
        """Same as the module-level :func:`savepoint` (kept here for discoverability)."""
        return savepoint(conn)

    # --- database time --------------------------------------------------------------

    def now(self, conn: Connection) -> datetime:
        """Database time: naive UTC with microseconds, plus the test clock offset.

        One query: the offset row of ``weave_clock`` is read in the same SELECT. On
        SQLite the resolution is a millisecond.
        """
        row = conn.execute(self._now_query).one()
        return _time_of(row[0], row[1])

    def with_now(self, stmt: sa.Select[Any]) -> sa.Select[Any]:
        """``stmt`` with database time added as its last two columns: a transaction whose
        first statement is a read folds :meth:`now` into it (one round trip less).
        Read the time back from a row with :meth:`now_of`."""
        return stmt.add_columns(*self._now_columns)

    @property
    def now_columns(self) -> tuple[sa.ColumnElement[Any], ...]:
        """The two columns :meth:`with_now` adds, for a statement built elsewhere (read the
        time back with :meth:`now_of`; they must be the statement's last two)."""
        return tuple(self._now_columns)

    @staticmethod
    def now_of(row: Any) -> datetime:
        """Database time (as :meth:`now`) from a row of a :meth:`with_now` statement."""
        return _time_of(row[-2], row[-1])


def _abandon(conn: Connection) -> None:
    """A commit that failed before its ``COMMIT`` was sent leaves the server's transaction
    open, and SQLAlchemy no longer rolls it back: roll it back on the driver connection
    (or drop the connection), so that the next user of the pooled connection never
    continues it and commits its writes."""
    if conn.invalidated:
        return
    dbapi = conn.connection.dbapi_connection
    try:
        if dbapi is not None:
            dbapi.rollback()
    except Exception:  # unusable either way: never hand it out again
        conn.invalidate()


@contextmanager
def savepoint(conn: Connection) -> Iterator[None]:
    """A SAVEPOINT inside the caller's transaction: an exception rolls back to it.

    ``ROLLBACK TO SAVEPOINT`` keeps the row locks taken after the savepoint (MariaDB
    fact 3). After a deadlock the whole transaction is gone and so is the savepoint
    (1305): the deadlock propagates so that :meth:`Database.transaction` re-runs the
    whole transaction. Never catch a database error inside a savepoint and carry on.
    """
    nested = conn.begin_nested()
    mark = later_mark(conn)
    try:
        yield
    except BaseException as exc:
        later_rollback(conn, mark)
        if nested.is_active:
            try:
                nested.rollback()
            except DBAPIError:
                if retry_reason(exc) is not None:
                    raise exc from None  # the real cause: the transaction must re-run
                raise
        raise
    else:
        nested.commit()


def set_clock_offset(db: Database, seconds: float) -> None:
    """Move database time by ``seconds`` from now on, for every connection (tests only).

    :meth:`Database.now` adds the offset; set it back to 0 when done.
    """
    offset_us = round(seconds * 1_000_000)

    def _set(conn: Connection) -> None:
        updated = conn.execute(
            sa.update(_clock).where(_clock.c.id == 1).values(offset_us=offset_us)
        ).rowcount
        if updated == 0:
            conn.execute(sa.insert(_clock), dict(id=1, offset_us=offset_us))

    db.transaction(_set, name="set_clock_offset")


__all__ = [
    "DEFAULT_SQLITE_URL",
    "Database",
    "Dialect",
    "default_database_url",
    "savepoint",
    "set_clock_offset",
]
