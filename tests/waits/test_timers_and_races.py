"""Timers (R-4.6), pause (R-6.6), and the races of R-7.2 on separate connections."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from functools import partial

import pytest
import sqlalchemy as sa

from tests.runtime.helpers import (
    definition,
    instance,
    new_namespace,
    publish,
    start,
    steps,
    task,
    tasks_of,
    transitions_of,
    work,
)
from tests.waits.helpers import (
    due_rows,
    send,
    set_wait,
    signal_step,
    signals_of,
    timer_step,
    wait_of,
)
from weave_core.dispatch.gates import set_gate_txn
from weave_core.engine import Engine
from weave_core.runtime import run_pending, run_tick
from weave_core.runtime.history import History
from weave_core.runtime.instances import InstanceStatus, new_operation_id
from weave_core.runtime.programs import programs
from weave_core.runtime.snapshot import lock_chain
from weave_core.runtime.status import set_status, settle_cancelling
from weave_core.runtime.waits import cancel_waits_txn
from weave_core.storage.db import set_clock_offset
from weave_core.storage.schema import weave_instances


def test_a_timer_holds_no_worker_and_wakes_from_the_due_index(engine: Engine) -> None:
    ns = new_namespace(engine)
    publish(engine, ns, definition("t", [timer_step("nap", 3600), task("after")]))
    wid = start(engine, ns, "t", {}).instance.instance_id
    assert tasks_of(engine, wid) == [] and instance(engine, wid).status == "WAITING"
    wait = wait_of(engine, wid, "nap")
    (row,) = due_rows(engine, wid, "TIMER")
    assert row.due_at == wait.due_at and wait.due_at - wait.opened_at == timedelta(seconds=3600)
    set_clock_offset(engine.db, 3599)
    run_tick(engine)
    assert steps(engine, wid)["nap"].phase == "ACTIVE"
    set_clock_offset(engine.db, 3601)
    run_tick(engine)
    assert wait_of(engine, wid, "nap").winner == "timer"
    assert steps(engine, wid)["nap"].phase == "SUCCEEDED"
    assert len(work(engine, ns, handlers=["after"])) == 1


def _pause(engine: Engine, wid: str, paused: bool) -> None:
    row = instance(engine, wid)

    def _txn(conn: sa.Connection) -> None:
        li = lock_chain(conn, row.namespace, wid)
        assert li is not None
        conn.execute(sa.update(weave_instances).where(weave_instances.c.instance_id == wid)
                     .values(paused=paused))
        set_gate_txn(conn, li.gate_id, not paused, now=engine.db.now(conn))

    engine.db.transaction(_txn, name="test_pause")


def test_while_paused_due_facts_and_signals_are_saved_but_nothing_starts(engine: Engine) -> None:
    ns = new_namespace(engine)
    publish(engine, ns, definition("pz", [timer_step("nap", 60), signal_step("approval"),
                                          task("after")]))
    wid = start(engine, ns, "pz", {"job": "job-1"}).instance.instance_id
    _pause(engine, wid, True)
    set_clock_offset(engine.db, 61)
    run_tick(engine)
    assert steps(engine, wid)["nap"].phase == "SUCCEEDED"  # the due fact is saved
    assert "approval" not in steps(engine, wid)  # no new step while paused
    acc = send(engine, ns, wid)  # a signal is saved (early: its wait is not open)
    assert acc.signal.state == "ACCEPTED"
    _pause(engine, wid, False)
    set_clock_offset(engine.db, 200)  # the paused ROOT row re-checks with back-off
    run_tick(engine)
    run_tick(engine)
    assert steps(engine, wid)["approval"].phase == "SUCCEEDED"
    assert signals_of(engine, wid)[0].state == "CONSUMED"
    assert len(work(engine, ns, handlers=["after"])) == 1


def _cancel(engine: Engine, ns: str, wid: str) -> None:
    """What an instance cancel does to its waits (issue 7 calls ``cancel_waits_txn``)."""

    def _txn(conn: sa.Connection) -> None:
        now = engine.db.now(conn)
        li = lock_chain(conn, ns, wid)
        assert li is not None
        if li.terminal or li.status == InstanceStatus.CANCELLING:
            return
        history = History(ns, wid, li.revision, new_operation_id(), now)
        program = programs(engine).get(conn, ns, li.definition_id, li.version)
        set_status(li, history, InstanceStatus.CANCELLING, now=now, reason="cancelled")
        cancel_waits_txn(conn, engine, li, history, program, now=now)
        settle_cancelling(conn, li, history, program, now)
        history.write(conn, actor="token:operator", action="workflow.cancelled", metadata={})
        li.flush(conn, revision=history.revision, now=now)

    engine.db.transaction(_txn, name="test_cancel")


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


@pytest.mark.parametrize("on_time", [True, False])
def test_signal_timeout_and_cancel_race_and_exactly_one_wins(engine: Engine, on_time: bool
                                                             ) -> None:
    winners: dict[str, int] = {}
    for round_no in range(8):
        ns = new_namespace(engine)
        publish(engine, ns, definition("r", [signal_step("approval", timeout=60), task("after")]))
        wid = start(engine, ns, "r", {"job": "job-1"}).instance.instance_id
        acc = send(engine, ns, wid, deliver=False)
        set_clock_offset(engine.db, 0)
        wait = wait_of(engine, wid, "approval")
        # the deadline at (or 1 µs before) the acceptance, due now: the timer races for real
        late = timedelta(0) if on_time else timedelta(microseconds=1)
        set_wait(engine, wait.activation_id, deadline_at=acc.signal.accepted_at - late)
        (timer,) = due_rows(engine, wid, "TIMER")
        (sig_row,) = due_rows(engine, wid, "SIGNAL")
        set_clock_offset(engine.db, 61)
        calls: list[Callable[[], object]] = [
            partial(run_pending, engine, int(sig_row.id)),
            partial(run_pending, engine, int(timer.id)),
            partial(_cancel, engine, ns, wid),
        ]
        if round_no % 2:
            calls.reverse()
        assert _race(*calls) == []
        wait = wait_of(engine, wid, "approval")
        allowed = {"SATISFIED", "CANCELLED"} if on_time else {"TIMED_OUT", "CANCELLED"}
        assert wait.state in allowed  # an on-time signal or the timeout, or the cancel
        winners[wait.winner] = winners.get(wait.winner, 0) + 1
        settled = [t for t in transitions_of(engine, wid)
                   if t.step_id == "approval" and t.kind.startswith("step.")
                   and t.kind != "step.activated"]
        assert len(settled) == 1  # the step settled exactly once
        (sig,) = signals_of(engine, wid)
        if wait.winner == "signal":
            assert sig.state == "CONSUMED"
            assert instance(engine, wid).status in {"CANCELLED", "RUNNING", "CANCELLING"}
        else:
            assert sig.state == "LOST"
            assert sig.reason in {"wait_already_settled", "signal_after_deadline"}
            assert work(engine, ns, handlers=["after"]) == []
        set_clock_offset(engine.db, 0)
    assert sum(winners.values()) == 8
