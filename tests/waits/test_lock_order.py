"""T1 for the waits: acceptance, delivery, timers, timeouts, rounds, receipts and expiry
lock in the one order of R-6.2 (the recorder of tests/runtime/test_lock_order.py)."""

from __future__ import annotations

from tests.runtime.helpers import definition, new_namespace, publish, report, start, task, work
from tests.runtime.test_lock_order import LockRecorder, recorder  # noqa: F401  the fixture
from tests.waits.helpers import poll_step, send, signal_step, timer_step
from weave_core.engine import Engine
from weave_core.runtime import run_tick
from weave_core.runtime.waits import expire_signals
from weave_core.storage.db import set_clock_offset
from weave_core.storage.locks import LockLevel


def test_waits_lock_in_the_one_order(engine: Engine, recorder: LockRecorder) -> None:  # noqa: F811
    ns = new_namespace(engine)
    publish(engine, ns, definition("lo", [
        task("a"), signal_step("approval", timeout=60), timer_step("nap", 5),
        poll_step(interval=5, deadline=120), task("after")]))
    wid = start(engine, ns, "lo", {"job": "job-1"}).instance.instance_id
    send(engine, ns, wid, key="other")  # early, never matched
    (a,) = work(engine, ns, handlers=["a"])
    report(engine, ns, a, {})
    send(engine, ns, wid)  # delivered on the fast path
    set_clock_offset(engine.db, 6)
    run_tick(engine)  # the timer
    (q,) = work(engine, ns, handlers=["job_status"])
    report(engine, ns, q, {"status": "QUEUED"})
    set_clock_offset(engine.db, 12)
    run_tick(engine)  # round 2
    (q,) = work(engine, ns, handlers=["job_status"])
    send(engine, ns, wid, "receipt")  # wins while round 2 is in flight
    report(engine, ns, q, {"status": "DONE"})
    set_clock_offset(engine.db, 40 * 24 * 3600)
    expire_signals(engine)
    levels = {level for locks in recorder.transactions for level, _ in locks}
    assert {LockLevel.IDENTITY, LockLevel.INSTANCE, LockLevel.RECORDS} <= levels
    tables = {t for locks in recorder.transactions for _, t in locks}
    assert {"weave_waits", "weave_signals", "weave_poll_rounds"} <= tables
    assert recorder.violations() == []
