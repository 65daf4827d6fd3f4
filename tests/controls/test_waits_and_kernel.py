"""Controls against durable waits (issue 6) and the kernel fixes of issue 7, on MariaDB.

- FAIL_AFTER_SETTLED with a timer or signal sibling ends FAILED (the siblings' waits are
  cancelled on their version), never stuck in CANCELLING;
- cancel races a signal on the wait record's version: exactly one wins;
- a cancelled poll with a round in flight settles when that round is collected;
- a recovered poll keeps its round number and deducts the attempts already spent; a
  recovered signal wait reopens for the new activation only;
- resume re-arms a due poll once; ``read_history`` at its page cap.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import pytest

from tests.controls.helpers import control, do_recover
from tests.runtime.helpers import (
    activations,
    definition,
    instance,
    new_namespace,
    pending_of,
    publish,
    report,
    start,
    steps,
    task,
    tasks_of,
    transitions_of,
    work,
)
from tests.waits.helpers import (
    due_rows,
    poll_step,
    send,
    signal_step,
    signals_of,
    timer_step,
    waits_of,
)
from weave_core.engine import Engine
from weave_core.runtime import run_tick
from weave_core.runtime.checkpoints import run_pending
from weave_core.runtime.history import MAX_HISTORY_PAGE
from weave_core.runtime.reads import read_history
from weave_core.storage.db import set_clock_offset
from weave_core.storage.schema import weave_poll_rounds


@pytest.fixture
def clock(engine: Engine) -> Iterator[Callable[[float], None]]:
    """Move the database clock; back to real time after the test."""
    yield partial(set_clock_offset, engine.db)
    set_clock_offset(engine.db, 0)


def _ns(engine: Engine, doc: dict[str, Any], inp: Any = None) -> tuple[str, str]:
    ns = new_namespace(engine)
    publish(engine, ns, doc)
    return ns, start(engine, ns, doc["definition_id"], inp).instance.instance_id


def _waits(engine: Engine, wid: str, step_id: str) -> list[Any]:
    return [w for w in waits_of(engine, wid) if w.step_id == step_id]


def _rounds(engine: Engine, activation_id: str) -> list[Any]:
    r = weave_poll_rounds
    return engine.db.read(lambda c: list(c.execute(
        r.select().where(r.c.activation_id == activation_id).order_by(r.c.round))))


def _task(engine: Engine, wid: str, task_id: str) -> Any:
    (found,) = [t for t in tasks_of(engine, wid) if t.task_id == task_id]
    return found


# --- FAIL_AFTER_SETTLED with waiting siblings (the kernel bug) --------------------------


def test_fail_after_settled_with_a_timer_sibling_fails(engine: Engine) -> None:
    doc = definition("fat", [{"id": "p", "kind": "parallel", "branches": {
        "x": [task("x")], "y": [timer_step("nap", 3600)]}}], failure_policy="FAIL_AFTER_SETTLED")
    ns, wid = _ns(engine, doc)
    (x,) = work(engine, ns, handlers=["x"])
    report(engine, ns, x, fail=True)
    row = instance(engine, wid)
    assert row.status == "FAILED" and row.review_reason == "task_failed"
    assert steps(engine, wid)["nap"].phase == "CANCELLED"
    (wait,) = _waits(engine, wid, "nap")
    assert wait.state == "CANCELLED" and wait.winner == "cancel"
    assert all(p.state != "PENDING" for p in pending_of(engine, wid))


def test_fail_after_settled_with_a_signal_sibling_fails_and_a_late_signal_loses(
        engine: Engine) -> None:
    doc = definition("fas2", [{"id": "p", "kind": "parallel", "branches": {
        "x": [task("x")], "y": [signal_step("approval")]}}],
        failure_policy="FAIL_AFTER_SETTLED")
    ns, wid = _ns(engine, doc, {"job": "job-1"})
    (x,) = work(engine, ns, handlers=["x"])
    report(engine, ns, x, fail=True)
    assert instance(engine, wid).status == "FAILED"
    (wait,) = _waits(engine, wid, "approval")
    assert wait.state == "CANCELLED" and wait.winner == "cancel"
    assert steps(engine, wid)["approval"].phase == "CANCELLED"


def test_fail_after_settled_with_a_running_sibling_still_collects(engine: Engine) -> None:
    doc = definition("fas3", [{"id": "p", "kind": "parallel", "branches": {
        "x": [task("x")], "y": [task("y")], "z": [timer_step("nap", 3600)]}}],
        failure_policy="FAIL_AFTER_SETTLED")
    ns, wid = _ns(engine, doc)
    x, y = sorted(work(engine, ns, handlers=["x", "y"]), key=lambda c: c.handler)
    report(engine, ns, x, fail=True)
    assert instance(engine, wid).status == "CANCELLING"
    assert steps(engine, wid)["nap"].phase == "CANCELLED"
    report(engine, ns, y, cancel=True)
    assert instance(engine, wid).status == "FAILED"


# --- cancel and waits: the race on the wait record's version ----------------------------


def _race(*calls: Callable[[], object]) -> list[BaseException]:
    barrier = threading.Barrier(len(calls))
    errors: list[BaseException] = []

    def run(call: Callable[[], object]) -> None:
        barrier.wait()
        try:
            call()
        except BaseException as exc:  # collected and asserted by the test
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(c,)) for c in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


@pytest.mark.parametrize("order", range(6))
def test_cancel_vs_signal_exactly_one_wins(engine: Engine, order: int) -> None:
    doc = definition("cs", [signal_step("approval"), task("after")])
    ns, wid = _ns(engine, doc, {"job": "job-1"})
    send(engine, ns, wid, deliver=False)  # bound to the open wait, due now
    (sig_row,) = due_rows(engine, wid, "SIGNAL")
    calls: list[Callable[[], object]] = [partial(run_pending, engine, int(sig_row.id)),
                                         partial(control, engine, ns, wid, "cancel")]
    if order % 2:
        calls.reverse()
    assert _race(*calls) == []
    (wait,) = _waits(engine, wid, "approval")
    (sig,) = signals_of(engine, wid)
    settled = [t for t in transitions_of(engine, wid)
               if t.step_id == "approval" and t.kind in ("step.succeeded", "step.cancelled")]
    assert len(settled) == 1  # the step settled exactly once
    if wait.winner == "cancel":
        assert sig.state == "LOST" and steps(engine, wid)["approval"].phase == "CANCELLED"
    else:
        assert wait.winner == "signal" and sig.state == "CONSUMED"
    assert instance(engine, wid).status == "CANCELLED"  # cancel was accepted either way
    assert work(engine, ns, handlers=["after"]) == []  # no dispatch after a cancel


def test_cancel_with_a_poll_round_in_flight_collects_the_round(engine: Engine) -> None:
    ns, wid = _ns(engine, definition("cp", [poll_step(receipt=False), task("after")]),
                  {"job": "job-1"})
    (q,) = work(engine, ns, handlers=["job_status"])
    body = control(engine, ns, wid, "cancel").body
    assert body["status"] == "CANCELLING"
    (wait,) = _waits(engine, wid, "outcome")
    assert wait.state == "CANCELLED" and wait.winner == "cancel"
    assert steps(engine, wid)["outcome"].phase == "ACTIVE"  # the round is still running
    assert _task(engine, wid, q.task_id).cancel_requested
    report(engine, ns, q, {"status": "RUNNING"})
    assert instance(engine, wid).status == "CANCELLED"
    assert steps(engine, wid)["outcome"].phase == "CANCELLED"
    assert work(engine, ns, handlers=["job_status", "after"]) == []


def test_resume_rearms_a_due_poll_once(engine: Engine, clock: Callable[[float], None]) -> None:
    ns, wid = _ns(engine, definition("rp", [poll_step(rounds=5, interval=30, deadline=3000,
                                                      receipt=False)]), {"job": "job-1"})
    (q,) = work(engine, ns, handlers=["job_status"])
    report(engine, ns, q, {"status": "RUNNING"})
    control(engine, ns, wid, "pause")
    clock(200)  # several interval times pass while paused
    run_tick(engine)
    assert work(engine, ns, handlers=["job_status"]) == []  # no round while paused
    control(engine, ns, wid, "resume")
    run_tick(engine)
    (q2,) = work(engine, ns, handlers=["job_status"])  # one round, not the missed ones
    (act,) = [a for a in activations(engine, wid) if a.step_id == "outcome"]
    assert [int(r.round) for r in _rounds(engine, act.activation_id)] == [1, 2]
    report(engine, ns, q2, {"status": "DONE"})
    assert instance(engine, wid).status == "SUCCEEDED"


# --- recovery of waits -----------------------------------------------------------------


def test_recovered_poll_keeps_its_round_and_deducts_spent_attempts(
        engine: Engine, clock: Callable[[float], None]) -> None:
    ns, wid = _ns(engine, definition("rcp", [
        poll_step(rounds=4, interval=10, deadline=3000, attempts=3, receipt=False),
        task("after")]), {"job": "job-1"})
    (q,) = work(engine, ns, handlers=["job_status"])
    report(engine, ns, q, {"status": "RUNNING"})
    clock(11)
    run_tick(engine)
    # round 2: two retryable failures, then a final one (3 attempts spent) → review
    for n in range(3):
        (q,) = work(engine, ns, handlers=["job_status"])
        report(engine, ns, q, fail=True, retryable=n < 2)
        clock(11 + 400 * (n + 1))
        run_tick(engine)
    assert instance(engine, wid).status == "NEEDS_REVIEW"
    old = steps(engine, wid)["outcome"]
    assert _task(engine, wid, q.task_id).attempts_used == 3
    body = do_recover(engine, ns, wid, "outcome", int(old.version),
                      conclusion="retry_safe", evidence={"reason": "read-only status query"}).body
    new_id = body["operation"]["new_activation_id"]
    assert body["workflow"]["status"] in ("RUNNING", "WAITING")
    (new_wait,) = [w for w in _waits(engine, wid, "outcome") if w.activation_id == new_id]
    assert int(new_wait.current_round) == 2  # the round number is kept
    (rnd,) = _rounds(engine, new_id)
    assert int(rnd.round) == 2
    assert _task(engine, wid, rnd.task_id).max_attempts == 1  # 3 - 3 spent, at least one
    (q,) = work(engine, ns, handlers=["job_status"])
    report(engine, ns, q, {"status": "RUNNING"})
    clock(11 + 1200 + 11)
    run_tick(engine)
    (q,) = work(engine, ns, handlers=["job_status"])
    assert [int(r.round) for r in _rounds(engine, new_id)] == [2, 3]  # no double count
    assert _task(engine, wid, q.task_id).max_attempts == 3  # later rounds: the full budget
    report(engine, ns, q, {"status": "DONE"})
    (after,) = work(engine, ns, handlers=["after"])
    report(engine, ns, after, {})
    assert instance(engine, wid).status == "SUCCEEDED"
    acts = [a for a in activations(engine, wid) if a.step_id == "outcome"]
    assert len(acts) == 2  # history keeps both activations


def test_recovered_signal_wait_reopens_for_the_new_activation(
        engine: Engine, clock: Callable[[float], None]) -> None:
    ns, wid = _ns(engine, definition("rcs", [signal_step("approval", timeout=60),
                                              task("after")]), {"job": "job-1"})
    clock(61)
    late = send(engine, ns, wid, deliver=False)  # after the deadline: bound, then lost
    run_tick(engine)
    (old_wait,) = _waits(engine, wid, "approval")
    assert old_wait.state == "TIMED_OUT"
    assert instance(engine, wid).status == "NEEDS_REVIEW"
    rec = steps(engine, wid)["approval"]
    body = do_recover(engine, ns, wid, "approval", int(rec.version)).body
    new_id = body["operation"]["new_activation_id"]
    (new_wait,) = [w for w in _waits(engine, wid, "approval") if w.activation_id == new_id]
    assert new_wait.state == "OPEN"
    assert new_wait.deadline_at == old_wait.deadline_at  # absolute deadlines carry over
    (lost,) = [s for s in signals_of(engine, wid) if s.signal_id == late.signal.signal_id]
    assert lost.state == "LOST" and lost.consumed_by_activation_id is None
    assert lost.target_activation_id == old_wait.activation_id  # never the new activation's
    run_tick(engine)  # the kept deadline has passed: back to review, nothing consumed
    assert instance(engine, wid).status == "NEEDS_REVIEW"
    assert work(engine, ns, handlers=["after"]) == []


# --- history at its page cap -----------------------------------------------------------


def test_read_history_accepts_the_page_cap(engine: Engine) -> None:
    ns, wid = _ns(engine, definition("hc", [task("a")]))
    items, cursor = read_history(engine.db, ns, wid, limit=MAX_HISTORY_PAGE)
    assert items and cursor is None
    count = len(items)
    first, cursor = read_history(engine.db, ns, wid, limit=count - 1)
    assert len(first) == count - 1 and cursor == first[-1]["revision"]
    assert cursor is not None
    rest, end = read_history(engine.db, ns, wid, after_revision=cursor, limit=MAX_HISTORY_PAGE)
    assert len(rest) == 1 and end is None
    exact, none = read_history(engine.db, ns, wid, limit=count)
    assert len(exact) == count and none is None
