"""T2, the classification gaps: each MariaDB error the code classifies, forced against the
real server, and what the code does with it.

========  ==================================================  =================================
code      forced by                                           test
========  ==================================================  =================================
1213      two transactions lock two rows in opposite orders   test_db.test_real_deadlock_…
1205      a held row lock, ``innodb_lock_wait_timeout = 1``   test_db.test_lock_wait_timeout_…
1020      REPEATABLE READ with ``innodb_snapshot_isolation``  here: re-run like a deadlock
1305      a deadlock inside a SAVEPOINT removes the savepoint here: the whole transaction re-runs
2006/2013 the connection lost at COMMIT (KILL CONNECTION from  here: the step re-runs and finds
          another session; or the COMMIT done, its reply    its own work, outcomes once
          lost)
4025      a CHECK constraint the step's output fails          here: the result is quarantined
1406      a column too short for the step's output            here: the result is quarantined
========  ==================================================  =================================

Every error is observed through SQLAlchemy's ``handle_error`` event: the server really
raised it. Tests that change the schema (4025, 1406) do it on a database of their own.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterator
from typing import Any

import pymysql
import pytest
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection

from tests.conftest import _server_params, migrated_database
from tests.core.test_db import _add_namespaces, _mark, _markers
from tests.invariants import assert_invariants
from tests.runtime.helpers import (
    definition,
    inbox_of,
    instance,
    new_namespace,
    publish,
    report,
    start,
    task,
    tasks_of,
    work,
)
from weave_core.dispatch import HandlerRef, Report, ReportOutcome
from weave_core.engine import Engine
from weave_core.plugins.host import PluginHost
from weave_core.runtime import run_tick
from weave_core.runtime.step import ClaimNext, complete_step
from weave_core.storage.db import Database, savepoint, set_clock_offset
from weave_core.storage.locks import lock_namespace_exclusive
from weave_core.storage.retries import mysql_error_code


class Raised:
    """The MySQL error codes the server raised on an engine while recording."""

    def __init__(self, db: Database) -> None:
        self.codes: list[int] = []
        self._engine = db.engine
        event.listen(self._engine, "handle_error", self._seen)

    def _seen(self, context: Any) -> None:
        code = mysql_error_code(context.original_exception)
        if code is not None:
            self.codes.append(code)

    def close(self) -> None:
        event.remove(self._engine, "handle_error", self._seen)


@pytest.fixture
def own_db(mysql_url: str) -> Iterator[Database]:
    """A pool of its own: these tests change session variables of its connections."""
    db = Database.from_url(mysql_url, pool_size=1)
    yield db
    db.dispose()


def _session(database: str) -> pymysql.connections.Connection[Any]:
    return pymysql.connect(**_server_params(), database=database,  # type: ignore[call-overload]
                           autocommit=True)


def test_record_changed_1020_is_rerun_from_the_start(own_db: Database) -> None:
    """REPEATABLE READ with snapshot isolation: a locking read of a row another session
    changed after this transaction's snapshot is 1020; the helper re-runs ``fn`` whole."""
    name, marker = f"ns-{secrets.token_hex(5)}", secrets.token_hex(6)
    _add_namespaces(own_db, name)
    other = _session(own_db.engine.url.database or "")
    raised = Raised(own_db)
    calls: list[int] = []

    def _fn(conn: Connection) -> None:
        calls.append(1)
        if len(calls) == 1:
            conn.exec_driver_sql("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            conn.exec_driver_sql("SET SESSION innodb_snapshot_isolation = ON")
            _mark(conn, own_db, marker)  # work the re-run must not find twice
            conn.execute(sa.text("SELECT disabled FROM weave_namespaces WHERE name = :n"),
                         {"n": name}).one()  # the snapshot
            with other.cursor() as cur:
                cur.execute("UPDATE weave_namespaces SET disabled = 1 WHERE name = %s", (name,))
        else:
            conn.exec_driver_sql("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
            conn.exec_driver_sql("SET SESSION innodb_snapshot_isolation = OFF")
            _mark(conn, own_db, marker)
        lock_namespace_exclusive(conn, name)

    try:
        own_db.transaction(_fn, name="snapshot")
    finally:
        raised.close()
        other.close()
    assert 1020 in raised.codes and len(calls) == 2
    assert _markers(own_db, marker) == 1  # the first attempt was rolled back whole


def test_a_deadlock_inside_a_savepoint_is_1305_and_the_whole_transaction_reruns(
    mysql_db: Database,
) -> None:
    a, b = f"row-a-{secrets.token_hex(4)}", f"row-b-{secrets.token_hex(4)}"
    _add_namespaces(mysql_db, a, b)
    marker = secrets.token_hex(6)
    raised = Raised(mysql_db)
    barrier = threading.Barrier(2, timeout=10)
    calls = {"ab": 0, "ba": 0}
    errors: list[BaseException] = []

    def _run(label: str, first: str, second: str) -> None:
        def _fn(conn: Connection) -> None:
            calls[label] += 1
            lock_namespace_exclusive(conn, first)
            _mark(conn, mysql_db, f"{marker}-{label}")
            if calls[label] == 1:
                barrier.wait()
            with savepoint(conn):
                lock_namespace_exclusive(conn, second)

        try:
            mysql_db.transaction(_fn, name=f"savepoint-{label}")
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=_run, args=("ab", a, b)),
               threading.Thread(target=_run, args=("ba", b, a))]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    finally:
        raised.close()
    assert errors == []
    assert 1213 in raised.codes and 1305 in raised.codes, raised.codes
    assert sorted(calls.values()) == [1, 2]
    # the victim's work before the savepoint was rolled back with it: each mark once
    assert _markers(mysql_db, f"{marker}-ab") == _markers(mysql_db, f"{marker}-ba") == 1


# --- lost connection at COMMIT: the step transaction re-runs and finds its own work ------


def _kill_at_commit(db: Database) -> Any:
    """Before the COMMIT goes out, another session kills this connection (real 2013)."""
    state = {"armed": True}

    def _commit(conn: Connection) -> None:
        if state["armed"]:
            state["armed"] = False
            own = conn.exec_driver_sql("SELECT CONNECTION_ID()").scalar_one()
            killer = _session(db.engine.url.database or "")
            try:
                with killer.cursor() as cur:
                    cur.execute(f"KILL CONNECTION {int(own)}")
            finally:
                killer.close()

    return _commit


def _reply_lost_at_commit(code: int) -> Any:
    """The COMMIT is done on the server, then the client sees ``code`` instead of its
    reply (what a connection lost while the OK packet travels does)."""
    state = {"armed": True}

    def _commit(conn: Connection) -> None:
        if state["armed"]:
            state["armed"] = False
            raw = conn.connection.dbapi_connection
            assert raw is not None
            real_commit = raw.commit

            def _lost() -> None:
                real_commit()
                raw.commit = real_commit  # type: ignore[method-assign]
                raise pymysql.err.OperationalError(code, "Lost connection during COMMIT")

            raw.commit = _lost  # type: ignore[method-assign]

    return _commit


@pytest.fixture
def step_engine(own_db: Database, plugin_host: PluginHost) -> Engine:
    return Engine(db=own_db, plugins=plugin_host, node_id="node-commit")


@pytest.mark.parametrize("failure", ["kill_2013", "reply_lost_2013", "reply_lost_2006"])
def test_a_connection_lost_at_commit_is_reconciled_by_the_rerun(
    step_engine: Engine, failure: str
) -> None:
    engine = step_engine
    ns = new_namespace(engine)
    publish(engine, ns, definition("seq", [task("a"), task("b")]))
    wid = start(engine, ns, "seq", {}).instance.instance_id
    (a,) = work(engine, ns, handlers=["a"])
    listener = (_kill_at_commit(engine.db) if failure == "kill_2013"
                else _reply_lost_at_commit(int(failure[-4:])))
    raised = Raised(engine.db)
    event.listen(engine.db.engine, "commit", listener)
    try:
        done = complete_step(engine, namespace=ns, task_id=a.task_id, attempt_id=a.attempt_id,
                             report=Report(ReportOutcome.SUCCEEDED, output={"v": 1}),
                             actor="worker:test",
                             claim_next=ClaimNext("w1", [HandlerRef("b", "1")], 1))
    finally:
        event.remove(engine.db.engine, "commit", listener)
        raised.close()
    assert {2006, 2013} & set(raised.codes), raised.codes
    assert done.completion.task.status.value == "SUCCEEDED"
    # the result recorded and consumed once, whichever attempt's COMMIT counted
    assert [r.state for r in inbox_of(engine, wid)] == ["PROCESSED"]
    statuses = [t.status for t in tasks_of(engine, wid)]
    assert statuses == ["SUCCEEDED", "PENDING"] or statuses == ["SUCCEEDED", "RUNNING"]
    assert_invariants(engine.db, [ns])
    following = done.next_tasks or work(engine, ns, handlers=["b"])
    if following:
        report(engine, ns, following[0], {})
    else:  # the committed attempt handed b to w1, whose reply was lost: its lease expires
        assert failure.startswith("reply_lost") and statuses[1] == "RUNNING"
        set_clock_offset(engine.db, 600)
        try:
            assert run_tick(engine).outcomes.get("leases_expired") == 1
            set_clock_offset(engine.db, 610)  # past the retry's backoff
            (b,) = work(engine, ns, handlers=["b"])
            assert b.attempt_no == 2
            report(engine, ns, b, {})
        finally:
            set_clock_offset(engine.db, 0)
    assert instance(engine, wid).status == "SUCCEEDED"
    assert_invariants(engine.db, [ns])


# --- values the database refuses: quarantined, never retried forever ------------------


@pytest.fixture
def schema_db() -> Iterator[str]:
    """A migrated database of this test alone: it alters a table."""
    yield from migrated_database("weave_e")


@pytest.mark.parametrize(("code", "alter"), [
    (4025, "ALTER TABLE weave_steps ADD CONSTRAINT ck_refused "
           "CHECK (output IS NULL OR LOCATE('refuse-me', output) = 0)"),
    (1406, "ALTER TABLE weave_steps MODIFY output VARCHAR(40) NULL"),
])
def test_a_value_the_server_refuses_is_quarantined(
    schema_db: str, plugin_host: PluginHost, code: int, alter: str
) -> None:
    engine = Engine(db=Database.from_url(schema_db), plugins=plugin_host, node_id="node-v")
    try:
        with engine.db.engine.begin() as conn:
            conn.exec_driver_sql(alter)
        ns = new_namespace(engine)
        publish(engine, ns, definition("seq", [task("a"), task("b")]))
        wid = start(engine, ns, "seq", {}).instance.instance_id
        (a,) = work(engine, ns, handlers=["a"])
        raised = Raised(engine.db)
        try:
            (result,) = report(engine, ns, a, {"v": "refuse-me " + "x" * 60})
        finally:
            raised.close()
        assert code in raised.codes, raised.codes
        assert (result.outcome.value, result.code) == ("quarantined", "value_refused")
        (row,) = inbox_of(engine, wid)
        assert (row.state, row.error_code) == ("QUARANTINED", "value_refused")
        assert instance(engine, wid).status == "NEEDS_REVIEW"
        assert [t.status for t in tasks_of(engine, wid)] == ["SUCCEEDED"]
        assert_invariants(engine.db, [ns])
    finally:
        engine.close()
