"""Deadlines (R-6.7): database time, judged by the acceptance time of the fact."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.runtime.helpers import (
    definition,
    inbox_of,
    instance,
    new_namespace,
    pending_of,
    publish,
    report,
    start,
    steps,
    task,
    tasks_of,
    work,
)
from weave_core.engine import Engine
from weave_core.runtime import consume, run_pending, run_tick
from weave_core.storage.db import set_clock_offset


@pytest.fixture
def clock(any_engine: Engine) -> Iterator[None]:
    yield
    set_clock_offset(any_engine.db, 0)


def _deadline_row(engine: Engine, wid: str) -> int:
    (row,) = [p for p in pending_of(engine, wid) if p.ref == "deadline"]
    return int(row.id)


def test_the_deadline_sends_an_unfinished_instance_to_review(
    any_engine: Engine, clock: None
) -> None:
    engine = any_engine
    ns = new_namespace(engine)
    publish(engine, ns, definition("dl", [task("a"), task("b")], deadline_seconds=60))
    wid = start(engine, ns, "dl", {}).instance.instance_id
    set_clock_offset(engine.db, 30)
    run_tick(engine)
    assert instance(engine, wid).status == "RUNNING"  # not due yet
    set_clock_offset(engine.db, 61)
    run_tick(engine)
    inst = instance(engine, wid)
    assert inst.status == "NEEDS_REVIEW" and inst.review_reason == "deadline_exceeded"


def test_a_result_accepted_in_time_but_consumed_late_creates_no_successor(
    any_engine: Engine, clock: None
) -> None:
    engine = any_engine
    ns = new_namespace(engine)
    publish(engine, ns, definition("dl2", [task("a"), task("b")], deadline_seconds=60))
    wid = start(engine, ns, "dl2", {}).instance.instance_id
    (a,) = work(engine, ns, handlers=["a"])
    report(engine, ns, a, {}, consume=False)
    set_clock_offset(engine.db, 90)
    (row,) = inbox_of(engine, wid)
    consume(engine, row.id)
    st = steps(engine, wid)
    assert st["a"].phase == "SUCCEEDED" and "b" not in st  # no successor past the deadline
    assert len(tasks_of(engine, wid)) == 1
    assert instance(engine, wid).review_reason == "deadline_exceeded"


def test_a_last_result_accepted_before_the_deadline_still_completes(
    any_engine: Engine, clock: None
) -> None:
    engine = any_engine
    ns = new_namespace(engine)
    publish(engine, ns, definition("dl3", [task("a")], deadline_seconds=60))
    wid = start(engine, ns, "dl3", {}).instance.instance_id
    (a,) = work(engine, ns, handlers=["a"])
    report(engine, ns, a, {"done": True}, consume=False)  # accepted at t < 60 s
    set_clock_offset(engine.db, 120)
    # the deadline is looked at first: review …
    run_pending(engine, _deadline_row(engine, wid))
    assert instance(engine, wid).status == "NEEDS_REVIEW"
    # … then the result accepted in time is consumed and completes the instance
    (row,) = inbox_of(engine, wid)
    consume(engine, row.id)
    inst = instance(engine, wid)
    assert inst.status == "SUCCEEDED" and inst.review_reason is None
