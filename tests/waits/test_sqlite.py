"""The embedded default (SQLite, one engine process) keeps the same wait semantics: a
signal, a timer and a polled result end to end, on MariaDB and SQLite alike."""

from __future__ import annotations

from tests.runtime.helpers import (
    definition,
    instance,
    new_namespace,
    publish,
    report,
    start,
    steps,
    task,
    work,
)
from tests.waits.helpers import poll_step, send, signal_step, timer_step, wait_of
from weave_core.engine import Engine
from weave_core.runtime import run_tick
from weave_core.storage.db import set_clock_offset


def test_signal_timer_and_poll_on_either_database(any_engine: Engine) -> None:
    engine = any_engine
    ns = new_namespace(engine)
    publish(engine, ns, definition("all", [
        signal_step("approval"), timer_step("nap", 10), poll_step(interval=5, deadline=60),
        task("after")]))
    wid = start(engine, ns, "all", {"job": "job-1"}).instance.instance_id
    send(engine, ns, wid, payload={"ok": True})
    assert steps(engine, wid)["approval"].phase == "SUCCEEDED"
    set_clock_offset(engine.db, 11)
    run_tick(engine)
    assert wait_of(engine, wid, "nap").winner == "timer"
    (q,) = work(engine, ns, handlers=["job_status"])
    report(engine, ns, q, {"status": "RUNNING"})
    set_clock_offset(engine.db, 30)
    run_tick(engine)
    (q,) = work(engine, ns, handlers=["job_status"])
    report(engine, ns, q, {"status": "DONE"})
    (after,) = work(engine, ns, handlers=["after"])
    report(engine, ns, after, {})
    assert instance(engine, wid).status == "SUCCEEDED"
