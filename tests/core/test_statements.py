"""Keyed statements built once per shape (``weave_core.storage.statements``), on MariaDB and SQLite:
the same rows and row counts as ordinary statements, guards honoured, and collected row
changes written together or refused when a row is missing."""

from __future__ import annotations

from datetime import datetime

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from weave_core.access.identity import create_namespace
from weave_core.storage import statements
from weave_core.storage.db import Database
from weave_core.storage.schema import weave_queues
from weave_core.storage.statements import RowChanges, select_keyed, update_keyed, update_many_keyed

AT = datetime(2026, 11, 30, 12, 0, 0, 123456)


def _queues(db: Database, namespace: str, names: list[str]) -> None:
    create_namespace(db, namespace)

    def _insert(conn: Connection) -> None:
        conn.execute(sa.insert(weave_queues), [
            {"namespace": namespace, "name": name, "capacity": 10, "outstanding": 0,
             "created_at": AT, "updated_at": AT} for name in names])

    db.transaction(_insert, name="test_queues")


def test_keyed_updates_guard_and_count(any_db: Database, ns_name: str) -> None:
    _queues(any_db, ns_name, ["a", "b"])

    def _run(conn: Connection) -> tuple[int, int, int]:
        hit = update_keyed(conn, weave_queues, {"namespace": ns_name, "name": "a"},
                           {"capacity": 7, "updated_at": AT})
        guarded = update_keyed(conn, weave_queues,
                               {"namespace": ns_name, "name": "a", "capacity": 10},
                               {"capacity": 1})  # the guard no longer holds: nothing
        missing = update_keyed(conn, weave_queues, {"namespace": ns_name, "name": "zz"},
                               {"capacity": 1})
        return hit, guarded, missing

    assert any_db.transaction(_run, name="t") == (1, 0, 0)
    rows = any_db.read(lambda conn: select_keyed(conn, weave_queues, {"namespace": ns_name},
                                                 order_by=("name",)), name="t")
    assert [(r.name, r.capacity, r.updated_at) for r in rows] == [("a", 7, AT), ("b", 10, AT)]


def test_a_shape_is_built_once(any_db: Database, ns_name: str) -> None:
    _queues(any_db, ns_name, ["a"])

    def _twice(conn: Connection) -> None:
        for capacity in (3, 4):
            update_keyed(conn, weave_queues, {"namespace": ns_name, "name": "a"},
                         {"capacity": capacity})
            select_keyed(conn, weave_queues, {"namespace": ns_name, "name": "a"},
                         lock="exclusive")

    any_db.transaction(_twice, name="t")
    updates, selects = len(statements._UPDATES), len(statements._SELECTS)
    any_db.transaction(_twice, name="t")
    assert (len(statements._UPDATES), len(statements._SELECTS)) == (updates, selects)


def test_many_keyed_updates_of_several_shapes(any_db: Database, ns_name: str) -> None:
    _queues(any_db, ns_name, ["a", "b", "c"])
    changes = [({"namespace": ns_name, "name": "a"}, {"capacity": 1}),
               ({"namespace": ns_name, "name": "b"}, {"capacity": 2, "outstanding": 5}),
               ({"namespace": ns_name, "name": "c"}, {"capacity": 3}),
               ({"namespace": ns_name, "name": "missing"}, {"capacity": 4})]
    matched = any_db.transaction(lambda conn: update_many_keyed(conn, weave_queues, changes),
                                 name="t")
    assert matched == 3
    rows = any_db.read(lambda conn: select_keyed(conn, weave_queues, {"namespace": ns_name},
                                                 order_by=("name",)), name="t")
    assert [(r.name, r.capacity, r.outstanding) for r in rows] == [
        ("a", 1, 0), ("b", 2, 5), ("c", 3, 0)]


def test_row_changes_are_written_together_or_refused(any_db: Database, ns_name: str) -> None:
    _queues(any_db, ns_name, ["a"])
    changes = RowChanges()
    changes.insert(weave_queues, {"namespace": ns_name, "name": "new", "capacity": 9,
                                  "outstanding": 0, "created_at": AT, "updated_at": AT})
    changes.update(weave_queues, {"namespace": ns_name, "name": "a"}, {"capacity": 8})
    any_db.transaction(changes.write, name="t")
    rows = any_db.read(lambda conn: select_keyed(conn, weave_queues, {"namespace": ns_name},
                                                 order_by=("name",)), name="t")
    assert [(r.name, r.capacity) for r in rows] == [("a", 8), ("new", 9)]

    broken = RowChanges()
    broken.update(weave_queues, {"namespace": ns_name, "name": "a"}, {"capacity": 1})
    broken.update(weave_queues, {"namespace": ns_name, "name": "gone"}, {"capacity": 1})
    with pytest.raises(RuntimeError, match="1 of 2 weave_queues rows matched"):
        any_db.transaction(broken.write, name="t")
    rows = any_db.read(lambda conn: select_keyed(conn, weave_queues, {"namespace": ns_name,
                                                                      "name": "a"}), name="t")
    assert rows[0].capacity == 8  # the whole transaction rolled back


def test_driver_level_inserts_and_updates_keep_every_value(any_db: Database,
                                                           ns_name: str) -> None:
    """Rows written by ``insert_rows``/``update_keyed`` (prebuilt text at driver level on
    MariaDB, Core on SQLite) read back exactly: times with microseconds, booleans, NULL,
    text; several rows go in one multi-row statement."""
    from weave_core.storage.schema import weave_tasks
    from weave_core.storage.statements import insert_rows

    create_namespace(any_db, ns_name)
    base = {"namespace": ns_name, "queue": "q", "owner_kind": "standalone",
            "owner_id": None, "handler": "h", "handler_version": "1",
            "handler_key": "h@1", "idempotent": True, "input": '{"n":1.50}',
            "max_attempts": 3, "attempts_used": 0, "backoff_ms": 1000,
            "backoff_multiplier_milli": 2000, "max_backoff_ms": 60000,
            "schedule_to_start_s": None, "start_to_close_s": None, "heartbeat_timeout_s": 30,
            "deadline_at": None, "status": "PENDING", "revision": 1, "available_at": AT,
            "start_by": None, "timeout_at": None, "gate_id": None, "gate_open": True,
            "effect_unknown": False, "result": None, "error": None,
            "current_attempt_id": None, "cancel_requested": False, "created_at": AT,
            "updated_at": AT}
    seen: list[str] = []

    def _count(conn: object, cursor: object, statement: str, *args: object) -> None:
        seen.append(statement)

    def _write(conn: Connection) -> None:
        insert_rows(conn, weave_tasks, [{**base, "task_id": f"{ns_name}-{i}"}
                                        for i in range(3)])
        update_keyed(conn, weave_tasks, {"task_id": f"{ns_name}-1"},
                     {"gate_open": False, "effect_unknown": True, "deadline_at": AT,
                      "result": '"ok"'})

    sa.event.listen(any_db.engine, "before_cursor_execute", _count)
    try:
        any_db.transaction(_write, name="test_driver_level")
    finally:
        sa.event.remove(any_db.engine, "before_cursor_execute", _count)
    assert len([s for s in seen if s.startswith("INSERT")]) == 1  # one multi-row statement
    t = weave_tasks
    rows = any_db.read(lambda c: c.execute(
        sa.select(t).where(t.c.namespace == ns_name).order_by(t.c.task_id)).all())
    assert [r.task_id for r in rows] == [f"{ns_name}-{i}" for i in range(3)]
    assert rows[0].available_at == AT and rows[0].input == '{"n":1.50}'
    assert rows[0].gate_open is True and rows[0].owner_id is None
    assert (rows[1].gate_open, rows[1].effect_unknown) == (False, True)
    assert rows[1].deadline_at == AT and rows[1].result == '"ok"'
