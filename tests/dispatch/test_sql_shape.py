"""T1: the claim and sweep queries are served by their indexes (no filesort, MariaDB)."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa

from tests.dispatch.conftest import new_task
from weave_core.engine import Engine
from weave_core.storage.db import Database
from weave_core.storage.locks import LockLevel, observing_locks
from weave_core.storage.schema import weave_tasks


def explain(db: Database, stmt: sa.Select[tuple[object, ...]]) -> list[dict[str, object]]:
    with db.engine.connect() as conn:
        compiled = stmt.compile(dialect=conn.dialect, compile_kwargs={"literal_binds": True})
        return [dict(r) for r in conn.execute(sa.text(f"EXPLAIN {compiled}")).mappings()]


def test_claim_query_uses_its_index(engine: Engine, ns_name: str) -> None:
    for i in range(30):
        new_task(engine, ns_name, queue=f"q{i % 3}")
    t = weave_tasks
    stmt = (
        sa.select(t)
        .where(
            t.c.namespace == ns_name, t.c.queue == "q1", t.c.status == "PENDING",
            t.c.gate_open == True,  # noqa: E712 - SQL comparison
            t.c.available_at <= datetime(2999, 1, 1), t.c.handler_key.in_(["echo@1"]),
        )
        .order_by(t.c.available_at, t.c.task_id)
        .limit(4)
        .with_for_update(skip_locked=True)
    )
    [plan] = explain(engine.db, stmt)
    assert plan["key"] == "ix_weave_tasks_claim", plan
    assert "filesort" not in str(plan["Extra"]).lower(), plan


def test_sweep_query_uses_its_index(engine: Engine) -> None:
    t = weave_tasks
    stmt = (
        sa.select(t.c.task_id, t.c.namespace, t.c.queue)
        .where(t.c.timeout_at <= datetime(2000, 1, 1))
        .order_by(t.c.timeout_at, t.c.task_id)
        .limit(100)
    )
    [plan] = explain(engine.db, stmt)
    assert plan["key"] == "ix_weave_tasks_timeout", plan
    assert "filesort" not in str(plan["Extra"]).lower(), plan


def test_complete_locks_in_order(engine: Engine, ns_name: str) -> None:
    """quota → queue → task, never back up (R-6.2)."""
    from tests.dispatch.conftest import ACTOR, claim_one
    from weave_core.dispatch import Report, ReportOutcome, complete

    task = new_task(engine, ns_name)
    claimed = claim_one(engine, ns_name)
    assert claimed is not None
    seen: list[tuple[LockLevel, str]] = []
    original = engine.db._attempt

    def observed(fn, read_only):  # type: ignore[no-untyped-def]
        def wrapped(conn):  # type: ignore[no-untyped-def]
            with observing_locks(conn, lambda lvl, table, _s: seen.append((lvl, table))):
                return fn(conn)
        return original(wrapped, read_only)

    engine.db._attempt = observed  # type: ignore[method-assign]
    try:
        complete(engine.db, namespace=ns_name, task_id=task.task_id,
                 attempt_id=claimed.attempt_id, report=Report(ReportOutcome.SUCCEEDED),
                 actor=ACTOR)
    finally:
        del engine.db._attempt
    levels = [lvl for lvl, _ in seen]
    assert levels == sorted(levels), seen
    assert [table for _, table in seen] == ["weave_namespace_quotas", "weave_queues",
                                           "weave_tasks"]
