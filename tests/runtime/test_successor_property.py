"""T3, as a property: whatever the number of successors, the headroom of the namespace's
quota and of each queue, and which of those rows is the full one, a result's consumption
and its checkpoint commit, the successors are created all together or not at all (the
SAVEPOINT), and no unit of usage is counted twice.

Each example: task ``a`` on its own queue, then a parallel of ``n1`` branches on queue
``q1`` and ``n2`` on ``q2``; quota and capacities are set so that the successors fit or one
row (or several) is full. ``a`` is reported through the step transaction or the classic
result + advance path; then the limits are lifted and the deferred successors must follow.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.invariants import assert_invariants
from tests.runtime.helpers import (
    definition,
    inbox_of,
    instance,
    new_namespace,
    publish,
    report,
    run_worker,
    start,
    task,
    tasks_of,
    work,
)
from weave_core.dispatch import set_namespace_quota, set_queue_capacity
from weave_core.dispatch.queues import get_queue, get_quota
from weave_core.engine import Engine
from weave_core.runtime import run_tick
from weave_core.storage.db import set_clock_offset
from weave_core.storage.schema import weave_activations, weave_pending_advances, weave_steps


def _counts(engine: Engine, ns: str) -> tuple[int, int, int, int]:
    """quota, q1, q2 outstanding, and the unsettled tasks, in one snapshot each."""
    quota = engine.db.read(lambda c: get_quota(c, ns)).outstanding
    q1 = engine.db.read(lambda c: get_queue(c, ns, "q1")).outstanding
    q2 = engine.db.read(lambda c: get_queue(c, ns, "q2")).outstanding
    unsettled = engine.db.read(lambda c: c.execute(sa.text(
        "SELECT COUNT(*) FROM weave_tasks WHERE namespace = :ns "
        "AND status IN ('PENDING', 'RUNNING')"), {"ns": ns}).scalar_one())
    return quota, q1, q2, int(unsettled)


def _branch_rows(engine: Engine, wid: str) -> tuple[int, int]:
    a, s = weave_activations, weave_steps

    def _read(conn: Any) -> tuple[int, int]:
        acts = conn.execute(sa.select(sa.func.count()).select_from(a).where(
            a.c.instance_id == wid, a.c.step_id.like("x%"))).scalar_one()
        steps = conn.execute(sa.select(sa.func.count()).select_from(s).where(
            s.c.instance_id == wid, s.c.step_id.like("x%"))).scalar_one()
        return int(acts), int(steps)

    return engine.db.read(_read)


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n1=st.integers(0, 4), n2=st.integers(0, 3),
       quota_room=st.integers(0, 8), cap1=st.integers(0, 5), cap2=st.integers(0, 4),
       classic=st.booleans())
def test_successors_are_created_all_or_none_and_usage_counts_once(
    engine: Engine, n1: int, n2: int, quota_room: int, cap1: int, cap2: int,
    classic: bool,
) -> None:
    ns = new_namespace(engine)
    branches = {f"x1_{n}": [task(f"x1_{n}", "b", queue="q1")] for n in range(n1)}
    branches |= {f"x2_{n}": [task(f"x2_{n}", "b", queue="q2")] for n in range(n2)}
    steps: list[Any] = [task("a", queue="qa")]
    if branches:
        steps.append({"id": "fan", "kind": "parallel", "branches": branches})
    publish(engine, ns, definition("fan", steps))
    wid = start(engine, ns, "fan", {}).instance.instance_id
    # a holds one unit of the quota: the successors see quota_room once it is given back
    set_namespace_quota(engine.db, ns, quota_room, actor="test")
    set_queue_capacity(engine.db, ns, "q1", cap1, actor="test")
    set_queue_capacity(engine.db, ns, "q2", cap2, actor="test")
    (a,) = work(engine, ns, queue="qa", handlers=["a"])

    report(engine, ns, a, {"a": 1}, consume=not classic)
    if classic:
        from weave_core.runtime.consumer import consume_task_results
        consume_task_results(engine, ns, a.task_id)

    fits = n1 + n2 <= quota_room and n1 <= cap1 and n2 <= cap2
    created = n1 + n2 if fits else 0
    # the consumption and its checkpoint committed, whatever the successors did
    assert [r.state for r in inbox_of(engine, wid)] == ["PROCESSED"]
    assert [t.status for t in tasks_of(engine, wid)][:1] == ["SUCCEEDED"]
    assert len(tasks_of(engine, wid)) == 1 + created
    # all the successors or none: tasks, activations and step rows alike
    acts, step_rows = _branch_rows(engine, wid)
    assert acts == created and step_rows in (0, created, 2 * created)
    assert _counts(engine, ns) == (created, min(n1, created), min(n2, created), created)
    if n1 + n2 == 0:
        assert instance(engine, wid).status == "SUCCEEDED"
    elif not fits:
        assert instance(engine, wid).status == "WAITING"
        p = weave_pending_advances
        reasons = engine.db.read(lambda c: list(c.execute(sa.select(p.c.reason).where(
            p.c.instance_id == wid, p.c.state == "PENDING", p.c.kind == "ROOT",
            p.c.ref != "deadline")).scalars()))
        assert reasons and set(reasons) <= {"queue_full", "quota_exceeded"}, reasons
    assert_invariants(engine.db, [ns])

    # lift the limits: the deferred successors follow, once each
    set_namespace_quota(engine.db, ns, 100, actor="test")
    set_queue_capacity(engine.db, ns, "q1", 100, actor="test")
    set_queue_capacity(engine.db, ns, "q2", 100, actor="test")
    # the deferred advance is due within its backoff; the tasks it creates are available
    # from the moved database time, so the worker runs in it too
    set_clock_offset(engine.db, 0 if fits else 60)
    try:
        run_tick(engine)
        for queue in ("q1", "q2"):
            run_worker(engine, ns, {"b": {}}, queue=queue)
    finally:
        set_clock_offset(engine.db, 0)
    assert instance(engine, wid).status == "SUCCEEDED"
    assert len(tasks_of(engine, wid)) == 1 + n1 + n2
    assert _counts(engine, ns) == (0, 0, 0, 0)
    assert_invariants(engine.db, [ns])
