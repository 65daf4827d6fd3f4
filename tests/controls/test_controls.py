"""Pause, resume and cancel on the kernel (R-8.1 to R-8.3), on MariaDB."""

from __future__ import annotations

import pytest

from tests.controls.helpers import OPERATOR, control, op_id, version
from tests.runtime.helpers import (
    audit_of,
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
from weave_core.dispatch import heartbeat
from weave_core.engine import Engine
from weave_core.runtime import run_tick
from weave_core.runtime.controls import ControlRequest, pause
from weave_core.runtime.controls.errors import (
    AlreadyCancellingError,
    AlreadyPausedError,
    ControlVersionConflictError,
    NotPausedError,
    OperationConflictError,
    WorkflowSettledError,
)
from weave_core.storage.schema import weave_execution_gates


def _seq(engine: Engine) -> tuple[str, str]:
    ns = new_namespace(engine)
    publish(engine, ns, definition("seq", [task("a"), task("b")]))
    return ns, start(engine, ns, "seq").instance.instance_id


def _gate_open(engine: Engine, wid: str) -> bool:
    g = weave_execution_gates
    gid = instance(engine, wid).gate_id
    return bool(engine.db.read(lambda c: c.execute(
        g.select().where(g.c.gate_id == gid)).one().is_open))


def test_pause_closes_the_gate_and_resume_reopens_it(engine: Engine) -> None:
    ns, wid = _seq(engine)
    body = control(engine, ns, wid, "pause", expected=0).body
    assert body["paused"] is True and body["control_version"] == 1
    assert not _gate_open(engine, wid)
    assert work(engine, ns, handlers=["a"]) == []  # no claim while paused
    body = control(engine, ns, wid, "resume", expected=1).body
    assert body["paused"] is False and body["control_version"] == 2
    assert _gate_open(engine, wid)
    assert [c.handler for c in work(engine, ns, handlers=["a"])] == ["a"]
    kinds = [t.kind for t in transitions_of(engine, wid)]
    assert "control.paused" in kinds and "control.resumed" in kinds
    actions = [(a.action, a.actor) for a in audit_of(engine, wid)]
    assert ("workflow.pause", OPERATOR) in actions and ("workflow.resume", OPERATOR) in actions


def test_paused_instance_keeps_results_and_saves_successors(engine: Engine) -> None:
    ns, wid = _seq(engine)
    (claimed,) = work(engine, ns, handlers=["a"])
    control(engine, ns, wid, "pause")
    # the started attempt keeps renewing and reporting
    beat = heartbeat(engine.db, namespace=ns, task_id=claimed.task_id,
                     attempt_id=claimed.attempt_id, actor="worker:test")
    assert beat.cancel_requested is False
    report(engine, ns, claimed, {"x": 1})
    assert steps(engine, wid)["a"].phase == "SUCCEEDED"
    assert "b" not in steps(engine, wid)  # no new activation while paused
    root = [p for p in pending_of(engine, wid) if p.kind == "ROOT" and p.ref == ""]
    assert root and root[0].reason == "paused" and root[0].state == "PENDING"
    assert instance(engine, wid).status == "WAITING"
    control(engine, ns, wid, "resume")
    run_tick(engine)
    assert steps(engine, wid)["b"].phase == "ACTIVE"
    (b,) = work(engine, ns, handlers=["b"])
    report(engine, ns, b, {})
    assert instance(engine, wid).status == "SUCCEEDED"


def test_stale_version_and_operation_replay(engine: Engine) -> None:
    ns, wid = _seq(engine)
    with pytest.raises(ControlVersionConflictError) as info:
        control(engine, ns, wid, "pause", expected=7)
    assert info.value.details["control_version"] == 0
    oid = op_id()
    first = control(engine, ns, wid, "pause", expected=0, operation_id=oid)
    audits = len(audit_of(engine, wid))
    again = control(engine, ns, wid, "pause", expected=0, operation_id=oid)
    assert again.replayed and again.body == first.body
    assert len(audit_of(engine, wid)) == audits  # a replay writes nothing
    with pytest.raises(OperationConflictError):
        control(engine, ns, wid, "pause", expected=1, operation_id=oid, reason="other")
    with pytest.raises(AlreadyPausedError):
        control(engine, ns, wid, "pause")
    control(engine, ns, wid, "resume")
    with pytest.raises(NotPausedError):
        control(engine, ns, wid, "resume")


def test_resume_keeps_attempts_and_does_not_reset_budgets(engine: Engine) -> None:
    ns, wid = _seq(engine)
    (claimed,) = work(engine, ns, handlers=["a"])
    report(engine, ns, claimed, fail=True, retryable=True)  # retried by dispatch
    control(engine, ns, wid, "pause")
    control(engine, ns, wid, "resume")
    (t,) = tasks_of(engine, wid)
    assert int(t.attempts_used) == 1 and t.status == "PENDING"
    deadline = instance(engine, wid).deadline_at
    assert instance(engine, wid).deadline_at == deadline


def test_cancel_pending_task_settles_at_once(engine: Engine) -> None:
    ns, wid = _seq(engine)
    body = control(engine, ns, wid, "cancel").body
    assert body["status"] in ("CANCELLING", "CANCELLED")
    assert instance(engine, wid).status == "CANCELLED"
    assert steps(engine, wid)["a"].phase == "CANCELLED"
    assert work(engine, ns, handlers=["a", "b"]) == []  # no dispatch after the cancel
    with pytest.raises(WorkflowSettledError):
        control(engine, ns, wid, "cancel")
    with pytest.raises(WorkflowSettledError):
        control(engine, ns, wid, "pause")


def test_cancel_running_task_waits_for_its_result(engine: Engine) -> None:
    ns, wid = _seq(engine)
    (claimed,) = work(engine, ns, handlers=["a"])
    body = control(engine, ns, wid, "cancel").body
    assert body["status"] == "CANCELLING"
    with pytest.raises(AlreadyCancellingError):
        control(engine, ns, wid, "cancel")
    beat = heartbeat(engine.db, namespace=ns, task_id=claimed.task_id,
                     attempt_id=claimed.attempt_id, actor="worker:test")
    assert beat.cancel_requested is True
    # the worker finished anyway: the result is kept, nothing new starts
    report(engine, ns, claimed, {"done": True})
    row = instance(engine, wid)
    assert row.status == "CANCELLED" and row.review_reason == "cancel_requested"
    assert steps(engine, wid)["a"].phase == "SUCCEEDED" and "b" not in steps(engine, wid)


def test_resume_does_not_lift_a_cancel(engine: Engine) -> None:
    ns, wid = _seq(engine)
    (claimed,) = work(engine, ns, handlers=["a"])
    control(engine, ns, wid, "pause")
    control(engine, ns, wid, "cancel")
    body = control(engine, ns, wid, "resume").body
    assert body["status"] == "CANCELLING" and body["paused"] is False
    assert not _gate_open(engine, wid)
    report(engine, ns, claimed, cancel=True)
    assert instance(engine, wid).status == "CANCELLED"


def test_cancel_settles_a_timer_wait(engine: Engine) -> None:
    ns = new_namespace(engine)
    publish(engine, ns, definition("tm", [{"id": "t", "kind": "timer", "seconds": 3600},
                                          task("after")]))
    wid = start(engine, ns, "tm").instance.instance_id
    control(engine, ns, wid, "cancel")
    assert instance(engine, wid).status == "CANCELLED"
    assert steps(engine, wid)["t"].phase == "CANCELLED"
    assert all(p.state != "PENDING" for p in pending_of(engine, wid))


def test_unknown_workflow_is_not_found(engine: Engine) -> None:
    from weave_core.foundation.errors import NotFoundError

    ns = new_namespace(engine)
    with pytest.raises(NotFoundError):
        pause(engine, ns, "wf_nope", ControlRequest(0, op_id(), "x"), actor=OPERATOR)
    _, wid = _seq(engine)
    with pytest.raises(NotFoundError):  # another namespace's instance is invisible
        pause(engine, ns, wid, ControlRequest(0, op_id(), "x"), actor=OPERATOR)
    assert version(engine, wid) == 0
