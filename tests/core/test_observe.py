"""Counters of committed work only (issue #13 item 1): a rolled-back transaction, a
re-run after a deadlock and a rolled-back savepoint count nothing; the commit counts once.

Real MariaDB and SQLite: task events really inserted through ``statements.append_row``.
"""

from __future__ import annotations

import secrets

import pytest
import sqlalchemy as sa
from prometheus_client import REGISTRY
from pymysql.err import OperationalError
from sqlalchemy.engine import Connection
from sqlalchemy.exc import OperationalError as SAOperationalError

from weave_core.storage.db import Database, savepoint
from weave_core.storage.schema import weave_task_events
from weave_core.storage.statements import append_row

EVENT = "task.report_refused"


def refused() -> float:
    return REGISTRY.get_sample_value("weave_tasks_total", {"event": "report_refused"}) or 0.0


def retries(name: str) -> float:
    return REGISTRY.get_sample_value(
        "weave_transaction_retries_total",
        {"transaction": name, "reason": "deadlock_1213"}) or 0.0


def _event(db: Database, conn: Connection, task_id: str) -> None:
    append_row(conn, weave_task_events, dict(
        namespace="ns", task_id=task_id, revision=1, event_type=EVENT, attempt_id=None,
        occurred_at=db.now(conn), payload=None))


def _rows(db: Database, task_id: str) -> int:
    t = weave_task_events
    return int(db.read(lambda c: c.execute(
        sa.select(sa.func.count()).select_from(t).where(t.c.task_id == task_id)).scalar_one()))


def test_rolled_back_work_is_never_counted(any_db: Database) -> None:
    task_id = f"tsk-{secrets.token_hex(6)}"
    before = refused()

    def fails(conn: Connection) -> None:
        _event(any_db, conn, task_id)
        raise RuntimeError("rolled back")

    with pytest.raises(RuntimeError):
        any_db.transaction(fails, name="observe_rollback")
    assert refused() == before and _rows(any_db, task_id) == 0

    def inner_fails(conn: Connection) -> None:
        with pytest.raises(RuntimeError), savepoint(conn):
            _event(any_db, conn, task_id)
            raise RuntimeError("savepoint rolled back")

    any_db.transaction(inner_fails, name="observe_savepoint")
    assert refused() == before and _rows(any_db, task_id) == 0

    any_db.transaction(lambda conn: _event(any_db, conn, task_id), name="observe_commit")
    assert refused() == before + 1 and _rows(any_db, task_id) == 1


def test_a_rerun_counts_its_committed_attempt_once(mysql_db: Database) -> None:
    task_id = f"tsk-{secrets.token_hex(6)}"
    before, retried = refused(), retries("observe_rerun")
    calls: list[int] = []

    def deadlocks_once(conn: Connection) -> None:
        _event(mysql_db, conn, task_id)
        calls.append(1)
        if len(calls) == 1:  # what InnoDB answers a deadlock victim (the attempt is gone)
            raise SAOperationalError("INSERT", {}, OperationalError(1213, "Deadlock found"))

    mysql_db.transaction(deadlocks_once, name="observe_rerun")
    assert len(calls) == 2
    assert refused() == before + 1 and _rows(mysql_db, task_id) == 1
    assert retries("observe_rerun") == retried + 1
