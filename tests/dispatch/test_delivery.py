"""Result delivery to the inbox (R-5.1-R-5.3): order, snapshot, owner check, all or nothing."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
import sqlalchemy as sa

from tests.dispatch.conftest import ACTOR, audit_actions, claim_one, event_types, rows
from tests.dispatch.workflow import workflow_task
from weave_core.dispatch import (
    Report,
    ReportOutcome,
    TaskError,
    TaskOwnerUnverifiedError,
    TaskStatus,
    complete,
    get_queue,
    get_quota,
    get_task,
    sweep_expired_leases,
)
from weave_core.engine import Engine
from weave_core.foundation import exactjson
from weave_core.foundation.errors import PayloadTooLargeError
from weave_core.foundation.faults import InjectedFaultError, armed
from weave_core.foundation.limits import Limits

STEPS = ["task", "release", "event", "owner_check", "inbox", "audit"]


def inbox(engine: Engine, ns: str) -> list[Any]:
    return rows(engine.db, "SELECT * FROM weave_inbox WHERE namespace=:ns ORDER BY id", ns=ns)


def state(engine: Engine, ns: str, task_id: str) -> tuple[Any, ...]:
    """Everything the result transaction may touch."""
    db = engine.db
    task = get_task(db, ns, task_id)
    attempts = rows(db, "SELECT finished_at, outcome, report_hash FROM weave_task_attempts "
                    "WHERE task_id=:t ORDER BY attempt_no", t=task_id)
    return (task, attempts, event_types(db, task_id), audit_actions(db, ns, task_id),
            inbox(engine, ns), db.read(lambda c: get_queue(c, ns, "q")),
            db.read(lambda c: get_quota(c, ns)))


def test_success_lands_in_the_inbox_with_a_frozen_snapshot(engine: Engine, ns_name: str) -> None:
    wt = workflow_task(engine, ns_name)
    claimed = claim_one(engine, ns_name)
    assert claimed is not None
    output = {"price": Decimal("1.10"), "huge": 2**70, "tiny": Decimal("1e-400")}
    complete(engine.db, namespace=ns_name, task_id=wt.task_id, attempt_id=claimed.attempt_id,
             report=Report(ReportOutcome.SUCCEEDED, output=output), actor=ACTOR)
    [row] = inbox(engine, ns_name)
    assert row["event_type"] == "task.succeeded" and row["state"] == "PENDING"
    assert row["source_task_id"] == wt.task_id and row["source_activation_id"] == wt.activation_id
    assert row["source_revision"] == 3 and row["event_id"] == f"{wt.task_id}:3"
    snapshot = exactjson.loads(row["snapshot"])
    assert snapshot == {
        "schema_version": 1, "task_id": wt.task_id, "queue": "q", "handler": "echo",
        "handler_version": "1", "status": "SUCCEEDED", "revision": 3,
        "result": {"price": Decimal("1.1"), "huge": 2**70, "tiny": Decimal("1e-400")},
        "error": None, "effect_unknown": False, "current_attempt_id": claimed.attempt_id,
        "attempts_used": 1,
    }
    # a re-reported completion makes no second event
    complete(engine.db, namespace=ns_name, task_id=wt.task_id, attempt_id=claimed.attempt_id,
             report=Report(ReportOutcome.SUCCEEDED, output=output), actor=ACTOR)
    assert len(inbox(engine, ns_name)) == 1


def test_retried_failure_delivers_nothing_final_failure_delivers(
    engine: Engine, ns_name: str
) -> None:
    wt = workflow_task(engine, ns_name, max_attempts=2, backoff_ms=0)
    for _ in range(2):
        claimed = claim_one(engine, ns_name)
        assert claimed is not None
        complete(engine.db, namespace=ns_name, task_id=wt.task_id,
                 attempt_id=claimed.attempt_id, actor=ACTOR,
                 report=Report(ReportOutcome.FAILED, error=TaskError("x", "y", retryable=True)))
        if claimed.attempt_no == 1:
            assert inbox(engine, ns_name) == []
    [row] = inbox(engine, ns_name)
    assert row["event_type"] == "task.failed"
    assert exactjson.loads(row["snapshot"])["error"]["type"] == "x"


def test_non_idempotent_lease_expiry_needs_review(
    engine: Engine, ns_name: str, clock: Any
) -> None:
    wt = workflow_task(engine, ns_name, idempotent=False, heartbeat_timeout_s=5)
    claimed = claim_one(engine, ns_name)
    assert claimed is not None
    clock(6)
    assert sweep_expired_leases(engine, limit=1000).handled[wt.task_id] == "needs_review"
    task = get_task(engine.db, ns_name, wt.task_id)
    assert task.status == TaskStatus.NEEDS_REVIEW and task.effect_unknown
    [row] = inbox(engine, ns_name)
    assert row["event_type"] == "task.needs_review"
    snap = exactjson.loads(row["snapshot"])
    assert snap["effect_unknown"] is True and snap["current_attempt_id"] == claimed.attempt_id
    assert audit_actions(engine.db, ns_name, wt.task_id) == ["task.needs_review"]


@pytest.mark.parametrize("problem", ["missing", "other_task", "other_gate", "other_namespace"])
def test_unverifiable_owner_refuses_the_result(
    engine: Engine, ns_name: str, problem: str
) -> None:
    wt = workflow_task(engine, ns_name)
    claimed = claim_one(engine, ns_name)
    assert claimed is not None
    changes = {
        "missing": "DELETE FROM weave_activations WHERE activation_id=:a",
        "other_task": "UPDATE weave_activations SET task_id='tsk_other' WHERE activation_id=:a",
        "other_gate": "UPDATE weave_activations SET gate_id='gate_other' WHERE activation_id=:a",
        "other_namespace": "UPDATE weave_activations SET namespace='elsewhere' "
                           "WHERE activation_id=:a",
    }
    engine.db.transaction(lambda c: c.execute(sa.text(changes[problem]), {"a": wt.activation_id}),
                          name="break_owner")
    before = state(engine, ns_name, wt.task_id)
    with pytest.raises(TaskOwnerUnverifiedError):
        complete(engine.db, namespace=ns_name, task_id=wt.task_id,
                 attempt_id=claimed.attempt_id, actor=ACTOR,
                 report=Report(ReportOutcome.SUCCEEDED, output=1))
    assert state(engine, ns_name, wt.task_id) == before  # nothing written


@pytest.mark.parametrize("step", STEPS)
def test_fault_after_each_step_leaves_no_partial_state(
    engine: Engine, ns_name: str, step: str
) -> None:
    wt = workflow_task(engine, ns_name)
    claimed = claim_one(engine, ns_name)
    assert claimed is not None
    before = state(engine, ns_name, wt.task_id)
    report = Report(ReportOutcome.SUCCEEDED, output={"v": 1})
    with armed(f"delivery.after_{step}"), pytest.raises(InjectedFaultError):
        complete(engine.db, namespace=ns_name, task_id=wt.task_id,
                 attempt_id=claimed.attempt_id, report=report, actor=ACTOR)
    assert state(engine, ns_name, wt.task_id) == before
    # and the same report succeeds once the fault is gone
    done = complete(engine.db, namespace=ns_name, task_id=wt.task_id,
                    attempt_id=claimed.attempt_id, report=report, actor=ACTOR)
    assert done.task.status == TaskStatus.SUCCEEDED and len(inbox(engine, ns_name)) == 1
    assert engine.db.read(lambda c: get_queue(c, ns_name, "q")).outstanding == 0


@pytest.mark.parametrize("report", [
    Report(ReportOutcome.SUCCEEDED, output={"b": Decimal("1.10"), "a": ["é", None, True]}),
    Report(ReportOutcome.FAILED, error=TaskError("Boom", "it broke", False, {"n": 1})),
    Report(ReportOutcome.SUCCEEDED),
])
def test_a_reports_size_and_hash_come_from_its_one_canonical_text(report: Report) -> None:
    """Written once (``Report.canonical``), the same text as the exact JSON of the report:
    the size checked against the limit is its UTF-8 length, the hash its SHA-256."""
    document = report.to_json()
    assert report.canonical == exactjson.dumps(document)
    assert report.content_hash() == exactjson.content_hash(document)
    assert len(report.canonical.encode("utf-8")) == exactjson.size_of(document)
    report.check(Limits(max_value_bytes=exactjson.size_of(document)))  # at the limit: fine
    with pytest.raises(PayloadTooLargeError):
        report.check(Limits(max_value_bytes=exactjson.size_of(document) - 1))
