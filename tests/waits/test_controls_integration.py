"""Waits under the operators' controls (issue 7's pause, resume and cancel)."""

from __future__ import annotations

import secrets

import pytest

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
from tests.waits.helpers import poll_step, rounds_of, send, signal_step, wait_of
from weave_core.engine import Engine
from weave_core.runtime import run_tick
from weave_core.runtime.controls import ControlRequest, cancel, pause, resume
from weave_core.runtime.waits.signals import WorkflowSettledError
from weave_core.storage.db import set_clock_offset


def _control(engine: Engine, fn: object, ns: str, wid: str) -> None:
    version = instance(engine, wid).control_version
    fn(engine, ns, wid, ControlRequest(version, f"op-{secrets.token_hex(4)}", "test"),  # type: ignore[operator]
       actor="token:operator")


def test_cancel_ends_a_signal_wait_and_a_later_signal_changes_nothing(engine: Engine) -> None:
    ns = new_namespace(engine)
    publish(engine, ns, definition("c", [signal_step("approval"), task("after")]))
    wid = start(engine, ns, "c", {"job": "job-1"}).instance.instance_id
    _control(engine, cancel, ns, wid)
    assert instance(engine, wid).status == "CANCELLED"
    assert steps(engine, wid)["approval"].phase == "CANCELLED"
    with pytest.raises(WorkflowSettledError):
        send(engine, ns, wid)
    assert work(engine, ns, handlers=["after"]) == []


def test_a_round_result_after_cancel_is_collected_and_never_advances(engine: Engine) -> None:
    ns = new_namespace(engine)
    publish(engine, ns, definition("cp", [poll_step(), task("after")]))
    wid = start(engine, ns, "cp", {"job": "job-1"}).instance.instance_id
    (q,) = work(engine, ns, handlers=["job_status"])
    _control(engine, cancel, ns, wid)
    assert instance(engine, wid).status == "CANCELLING"  # the round is in flight
    report(engine, ns, q, {"status": "RUNNING"})
    assert instance(engine, wid).status == "CANCELLED"
    assert steps(engine, wid)["outcome"].phase == "CANCELLED"
    assert len(rounds_of(engine, wid)) == 1 and work(engine, ns, handlers=["after"]) == []


def test_pause_and_resume_start_one_round_and_keep_the_deadline(engine: Engine) -> None:
    ns = new_namespace(engine)
    publish(engine, ns, definition("pr", [poll_step(rounds=10, interval=10, deadline=600)]))
    wid = start(engine, ns, "pr", {"job": "job-1"}).instance.instance_id
    (q,) = work(engine, ns, handlers=["job_status"])
    report(engine, ns, q, {"status": "QUEUED"})
    deadline = wait_of(engine, wid, "outcome").deadline_at
    _control(engine, pause, ns, wid)
    set_clock_offset(engine.db, 100)  # nine interval times pass while paused
    run_tick(engine)
    assert len(rounds_of(engine, wid)) == 1
    _control(engine, resume, ns, wid)
    set_clock_offset(engine.db, 140)  # past the paused re-check back-off
    run_tick(engine)
    run_tick(engine)
    assert [r.round for r in rounds_of(engine, wid)] == [1, 2]  # one round, no replay
    assert wait_of(engine, wid, "outcome").deadline_at == deadline


def test_fail_after_settled_stops_a_sibling_signal_wait(engine: Engine) -> None:
    ns = new_namespace(engine)
    publish(engine, ns, definition("fas", [
        {"id": "fan", "kind": "parallel", "branches": {
            "work": [task("x")], "wait": [signal_step("approval")]}},
    ], failure_policy="FAIL_AFTER_SETTLED"))
    wid = start(engine, ns, "fas", {"job": "job-1"}).instance.instance_id
    (x,) = work(engine, ns, handlers=["x"])
    report(engine, ns, x, fail=True)
    assert steps(engine, wid)["approval"].phase == "CANCELLED"
    assert instance(engine, wid).status == "FAILED"
    with pytest.raises(WorkflowSettledError):
        send(engine, ns, wid)
