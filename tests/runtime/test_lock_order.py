"""T1: a statement listener records the tables each transaction locks, in order, and the
runtime's transactions never lock back up the chain of R-6.2."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from sqlalchemy import event

from tests.runtime.helpers import (
    definition,
    new_namespace,
    pending_of,
    publish,
    report,
    run_worker,
    start,
    task,
    work,
)
from weave_core.dispatch import set_namespace_quota
from weave_core.engine import Engine
from weave_core.runtime import run_pending, run_tick
from weave_core.storage.db import set_clock_offset
from weave_core.storage.locks import LOCK_ORDER, LockLevel

LEVEL_OF = {table: step.level for step in LOCK_ORDER for table in step.tables}
_FROM = re.compile(r"\bFROM\s+`?(\w+)`?", re.IGNORECASE)


@dataclass
class LockRecorder:
    current: dict[int, list[tuple[LockLevel, str]]] = field(default_factory=dict)
    transactions: list[list[tuple[LockLevel, str]]] = field(default_factory=list)
    never_waiting: list[tuple[LockLevel, str]] = field(default_factory=list)
    """``SKIP LOCKED`` reads back up the chain (allowed: they never wait)."""

    def statement(self, conn: Any, statement: str) -> None:
        upper = statement.upper()
        if "FOR UPDATE" not in upper and "LOCK IN SHARE MODE" not in upper:
            return
        # the first table a FROM names, past database time's clock subquery (a plain read
        # inside the statement: MariaDB locks no row of a subquery in the select list)
        tables = [m.group(1) for m in _FROM.finditer(statement) if m.group(1) != "weave_clock"]
        assert tables, statement
        table = tables[0]
        assert table in LEVEL_OF, f"{table} is locked but not in LOCK_ORDER"
        locks = self.current.setdefault(id(conn), [])
        level = LEVEL_OF[table]
        if "SKIP LOCKED" in upper and locks and level < max(lvl for lvl, _ in locks):
            # never waits, so it cannot close a deadlock cycle (a step's net release)
            self.never_waiting.append((level, table))
            return
        locks.append((level, table))

    def end(self, conn: Any) -> None:
        locks = self.current.pop(id(conn), None)
        if locks:
            self.transactions.append(locks)

    def violations(self) -> list[list[tuple[LockLevel, str]]]:
        bad = []
        for locks in self.transactions:
            highest = 0
            seen: set[str] = set()
            for level, table in locks:
                # re-locking a row already held cannot wait on anyone: allowed
                if level < highest and table not in seen:
                    bad.append(locks)
                    break
                highest = max(highest, level)
                seen.add(table)
        return bad


@pytest.fixture
def recorder(engine: Engine) -> Iterator[LockRecorder]:
    rec = LockRecorder()
    sa_engine = engine.db.engine

    def _before(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        rec.statement(conn.connection.dbapi_connection, statement)

    def _end(conn: Any) -> None:
        rec.end(conn.connection.dbapi_connection)

    event.listen(sa_engine, "before_cursor_execute", _before)
    event.listen(sa_engine, "commit", _end)
    event.listen(sa_engine, "rollback", _end)
    yield rec
    event.remove(sa_engine, "before_cursor_execute", _before)
    event.remove(sa_engine, "commit", _end)
    event.remove(sa_engine, "rollback", _end)
    set_clock_offset(engine.db, 0)


def test_runtime_transactions_lock_in_the_one_order(engine: Engine, recorder: LockRecorder) -> None:
    ns = new_namespace(engine)
    publish(engine, ns, definition("order", [
        task("a"),
        {"id": "fan", "kind": "parallel", "branches": {"x": [task("x")], "y": [task("y")]}},
        task("b"),
    ]))
    publish(engine, ns, definition("fas", [
        {"id": "fan", "kind": "parallel", "branches": {"x": [task("x")], "y": [task("y")]}},
    ], failure_policy="FAIL_AFTER_SETTLED"))
    # start, consume, successors, join, completion
    start(engine, ns, "order", {})
    run_worker(engine, ns, {h: {} for h in ("a", "x", "y", "b")})
    # a full quota: savepoint rollback, ROOT retry, then continuation
    wid = start(engine, ns, "order", {}).instance.instance_id
    set_namespace_quota(engine.db, ns, 1, actor="test")
    (a,) = work(engine, ns, handlers=["a"])
    report(engine, ns, a, {})
    set_namespace_quota(engine.db, ns, 100, actor="test")
    (root,) = [p for p in pending_of(engine, wid) if p.ref == ""]
    set_clock_offset(engine.db, 60)
    run_pending(engine, root.id)
    run_worker(engine, ns, {h: {} for h in ("x", "y", "b")})
    # failure policy: cancelling siblings from inside the consumption
    start(engine, ns, "fas", {})
    (x,) = work(engine, ns, handlers=["x"])
    report(engine, ns, x, fail=True)
    run_tick(engine)
    assert len(recorder.transactions) > 10
    levels = {level for locks in recorder.transactions for level, _ in locks}
    assert {LockLevel.IDENTITY, LockLevel.NAMESPACE_QUOTA, LockLevel.INSTANCE,
            LockLevel.GATE, LockLevel.RECORDS} <= levels
    assert recorder.violations() == []


def test_the_recorder_catches_a_lock_taken_back_up_the_chain(
    engine: Engine, recorder: LockRecorder
) -> None:
    from weave_core.storage.locks import lock_instance, lock_namespace_shared

    ns = new_namespace(engine)

    def _wrong(conn: Any) -> None:
        lock_instance(conn, "wf_none")
        lock_namespace_shared(conn, ns)

    engine.db.transaction(_wrong, name="wrong_order")
    assert recorder.violations() == [[(LockLevel.INSTANCE, "weave_instances"),
                                      (LockLevel.IDENTITY, "weave_namespaces")]]
