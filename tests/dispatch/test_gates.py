"""Execution gates: closed, nothing is claimed or retried; started attempts keep going."""

from __future__ import annotations

from typing import Any

from tests.dispatch.conftest import ACTOR, claim_one
from tests.dispatch.workflow import workflow_task
from weave_core.dispatch import (
    Report,
    ReportOutcome,
    TaskError,
    TaskStatus,
    complete,
    get_task,
    heartbeat,
    set_gate_txn,
)
from weave_core.engine import Engine


def set_gate(engine: Engine, gate_id: str, is_open: bool) -> None:
    db = engine.db
    db.transaction(lambda c: set_gate_txn(c, gate_id, is_open, now=db.now(c)), name="gate")


def test_closed_gate_stops_claims_and_retries(engine: Engine, ns_name: str) -> None:
    wt = workflow_task(engine, ns_name, gate_open=False)
    assert claim_one(engine, ns_name) is None
    set_gate(engine, wt.gate_id, True)
    running = claim_one(engine, ns_name)
    assert running is not None

    # close while running: the attempt keeps renewing and reporting...
    set_gate(engine, wt.gate_id, False)
    heartbeat(engine.db, namespace=ns_name, task_id=wt.task_id, attempt_id=running.attempt_id,
              actor=ACTOR)
    done = complete(engine.db, namespace=ns_name, task_id=wt.task_id,
                    attempt_id=running.attempt_id, actor=ACTOR,
                    report=Report(ReportOutcome.FAILED, error=TaskError("t", "m", True)))
    # ...but its retry waits for the gate
    assert done.task.status == TaskStatus.PENDING
    set_gate(engine, wt.gate_id, False)  # no-op
    assert claim_one(engine, ns_name) is None

    set_gate(engine, wt.gate_id, True)
    import time

    time.sleep(1.1)  # the default backoff of 1 s, on database time
    again = claim_one(engine, ns_name)
    assert again is not None and again.attempt_no == 2


def test_gate_close_pauses_schedule_to_start(engine: Engine, ns_name: str, clock: Any) -> None:
    wt = workflow_task(engine, ns_name, schedule_to_start_s=5)
    set_gate(engine, wt.gate_id, False)
    clock(10)
    from weave_core.dispatch import sweep_expired_leases

    sweep_expired_leases(engine, limit=1000)
    assert get_task(engine.db, ns_name, wt.task_id).status == TaskStatus.PENDING
    set_gate(engine, wt.gate_id, True)  # the clock restarts at the opening
    assert claim_one(engine, ns_name) is not None
