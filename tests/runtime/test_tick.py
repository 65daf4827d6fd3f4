"""The tick (R-6.1) and the audit rule (R-6.8: if audit fails, everything rolls back)."""

from __future__ import annotations

import time

from tests.runtime.helpers import (
    activations,
    audit_of,
    definition,
    inbox_of,
    instance,
    new_namespace,
    publish,
    report,
    start,
    steps,
    task,
    tasks_of,
    work,
)
from weave_core.engine import Engine
from weave_core.foundation import exactjson
from weave_core.foundation.faults import armed
from weave_core.runtime import TickLoop, run_tick


def _setup(engine: Engine) -> tuple[str, str]:
    ns = new_namespace(engine)
    publish(engine, ns, definition("t", [task("a"), task("b")]))
    return ns, start(engine, ns, "t", {}).instance.instance_id


def test_the_tick_consumes_what_no_fast_path_took(any_engine: Engine) -> None:
    engine = any_engine
    ns, wid = _setup(engine)
    (a,) = work(engine, ns, handlers=["a"])
    report(engine, ns, a, {}, consume=False)
    result = run_tick(engine)
    assert result.outcomes.get("consumed", 0) >= 1
    assert steps(engine, wid)["b"].phase == "ACTIVE"
    consumed = [x for x in audit_of(engine, wid) if x.action == "workflow.result.consumed"]
    meta = exactjson.loads(consumed[0].metadata)
    assert consumed[0].actor == "system:weave:node-a" and meta["node"] == "node-a"
    assert meta["source"]["inbox_id"] == inbox_of(engine, wid)[0].id
    assert meta["revision"] == instance(engine, wid).revision
    assert consumed[0].operation_id


def test_a_tick_stops_at_its_budget(any_engine: Engine) -> None:
    engine = any_engine
    ns, _ = _setup(engine)
    (a,) = work(engine, ns, handlers=["a"])
    report(engine, ns, a, {}, consume=False)
    result = run_tick(engine, budget_s=0.0)
    assert result.out_of_budget and result.candidates == 0


def test_the_tick_loop_runs_in_the_background(any_engine: Engine) -> None:
    engine = any_engine
    ns, wid = _setup(engine)
    loop = TickLoop(engine, interval_s=0.05)
    loop.start()
    try:
        (a,) = work(engine, ns, handlers=["a"])
        report(engine, ns, a, {}, consume=False)
        deadline = time.monotonic() + 20
        while "b" not in steps(engine, wid) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        loop.stop()
    assert not loop.running and loop.ticks > 0
    assert steps(engine, wid)["b"].phase == "ACTIVE"


def test_audit_failure_rolls_back_the_whole_consumption(any_engine: Engine) -> None:
    engine = any_engine
    ns, wid = _setup(engine)
    (a,) = work(engine, ns, handlers=["a"])
    revision = instance(engine, wid).revision
    with armed("runtime.audit"):
        (result,) = report(engine, ns, a, {})
    assert result.outcome.value == "deferred"
    assert inbox_of(engine, wid)[0].state == "PENDING"
    assert steps(engine, wid)["a"].phase == "ACTIVE" and "b" not in steps(engine, wid)
    assert len(tasks_of(engine, wid)) == 1 and len(activations(engine, wid)) == 1
    assert instance(engine, wid).revision == revision


def test_the_tick_expires_the_lease_of_a_dead_worker(any_engine: Engine) -> None:
    """A worker that claims a task and dies holds it only until its lease ends: the tick
    expires the lease and the (idempotent) task becomes claimable again."""
    from weave_core.storage.db import set_clock_offset

    engine = any_engine
    ns, wid = _setup(engine)
    (lost,) = work(engine, ns, handlers=["a"])  # claimed; the worker never reports
    try:
        set_clock_offset(engine.db, 61)  # past the default 60 s lease
        result = run_tick(engine)
        # this task's lease at least (the test database is shared: other tests' abandoned
        # claims are past their leases too); the claim below proves it was this one
        assert result.outcomes.get("leases_expired", 0) >= 1
        set_clock_offset(engine.db, 61 + 10)  # past the retry backoff
        (again,) = work(engine, ns, handlers=["a"])
        assert again.task_id == lost.task_id and again.attempt_id != lost.attempt_id
        report(engine, ns, again, {})
        assert steps(engine, wid)["a"].phase == "SUCCEEDED"
    finally:
        set_clock_offset(engine.db, 0)
