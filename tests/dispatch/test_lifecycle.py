"""Create → claim → heartbeat → complete, replays and conflicts (standalone tasks)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from tests.dispatch.conftest import (
    ACTOR,
    audit_actions,
    claim_one,
    event_types,
    new_task,
    rows,
)
from weave_core.dispatch import (
    AttemptNotFoundError,
    HandlerRef,
    Report,
    ReportConflictError,
    ReportOutcome,
    TaskError,
    TaskStatus,
    complete,
    get_queue,
    get_quota,
    get_task,
    heartbeat,
)
from weave_core.engine import Engine


def test_claim_heartbeat_complete(engine: Engine, ns_name: str) -> None:
    task = new_task(engine, ns_name, input={"amount": Decimal("1.10"), "big": 2**64})
    assert task.status == TaskStatus.PENDING and task.revision == 1
    claimed = claim_one(engine, ns_name)
    assert claimed is not None and claimed.task_id == task.task_id
    assert claimed.input == {"amount": Decimal("1.1"), "big": 2**64}
    assert claimed.attempt_no == 1 and claimed.heartbeat_timeout == 60
    assert claim_one(engine, ns_name) is None  # RUNNING is not claimable

    beat = heartbeat(engine.db, namespace=ns_name, task_id=task.task_id,
                     attempt_id=claimed.attempt_id, actor=ACTOR)
    assert beat.lease_expires_at >= claimed.lease_expires_at and not beat.cancel_requested

    report = Report(ReportOutcome.SUCCEEDED, output={"ok": True, "x": Decimal("1e-400")})
    done = complete(engine.db, namespace=ns_name, task_id=task.task_id,
                    attempt_id=claimed.attempt_id, report=report, actor=ACTOR)
    assert done.task.status == TaskStatus.SUCCEEDED and not done.replay
    assert done.task.revision == 3 and done.task.result == {"ok": True, "x": Decimal("1e-400")}
    assert event_types(engine.db, task.task_id) == ["task.created", "task.started",
                                                    "task.succeeded"]
    assert audit_actions(engine.db, ns_name, task.task_id) == ["task.created", "task.succeeded"]
    # permits released; a standalone task delivers nothing to the inbox
    db = engine.db
    assert db.read(lambda c: get_queue(c, ns_name, "q")).outstanding == 0
    assert db.read(lambda c: get_quota(c, ns_name)).outstanding == 0
    assert rows(db, "SELECT id FROM weave_inbox WHERE namespace=:ns", ns=ns_name) == []

    # the same report again: a replay, nothing changes
    again = complete(engine.db, namespace=ns_name, task_id=task.task_id,
                     attempt_id=claimed.attempt_id, report=report, actor=ACTOR)
    assert again.replay and again.task.revision == 3
    assert audit_actions(engine.db, ns_name, task.task_id) == ["task.created", "task.succeeded"]
    # a different report from the same attempt: conflict, the first stands
    with pytest.raises(ReportConflictError):
        complete(engine.db, namespace=ns_name, task_id=task.task_id,
                 attempt_id=claimed.attempt_id,
                 report=Report(ReportOutcome.SUCCEEDED, output={"ok": False}), actor=ACTOR)
    assert get_task(engine.db, ns_name, task.task_id).result == report.output


def test_unknown_attempt_and_other_namespace(engine: Engine, ns_name: str) -> None:
    task = new_task(engine, ns_name)
    claimed = claim_one(engine, ns_name)
    assert claimed is not None
    with pytest.raises(AttemptNotFoundError):
        heartbeat(engine.db, namespace=ns_name, task_id=task.task_id, attempt_id="att_nope",
                  actor=ACTOR)
    with pytest.raises(AttemptNotFoundError):
        complete(engine.db, namespace=ns_name, task_id=task.task_id, attempt_id="att_nope",
                 report=Report(ReportOutcome.SUCCEEDED), actor=ACTOR)
    from weave_core.dispatch import TaskNotFoundError

    with pytest.raises(TaskNotFoundError):
        complete(engine.db, namespace="other-ns", task_id=task.task_id,
                 attempt_id=claimed.attempt_id, report=Report(ReportOutcome.SUCCEEDED),
                 actor=ACTOR)


def test_handlers_filter_claims(engine: Engine, ns_name: str) -> None:
    new_task(engine, ns_name, handler="other", handler_version="2")
    assert claim_one(engine, ns_name) is None
    assert claim_one(engine, ns_name, handlers=[HandlerRef("other", "1")]) is None
    got = claim_one(engine, ns_name, handlers=[HandlerRef("other", "2")])
    assert got is not None and got.handler == "other"


def test_non_retryable_failure_and_cancelled(engine: Engine, ns_name: str) -> None:
    t1 = new_task(engine, ns_name)
    c1 = claim_one(engine, ns_name)
    assert c1 is not None
    err = TaskError("bad_input", "no", retryable=False, details={"field": "n"})
    done = complete(engine.db, namespace=ns_name, task_id=t1.task_id, attempt_id=c1.attempt_id,
                    report=Report(ReportOutcome.FAILED, error=err), actor=ACTOR)
    assert done.task.status == TaskStatus.FAILED and done.task.error == err.to_json()
    t2 = new_task(engine, ns_name)
    c2 = claim_one(engine, ns_name)
    assert c2 is not None and c2.task_id == t2.task_id
    done = complete(engine.db, namespace=ns_name, task_id=t2.task_id, attempt_id=c2.attempt_id,
                    report=Report(ReportOutcome.CANCELLED), actor=ACTOR)
    assert done.task.status == TaskStatus.CANCELLED
    assert event_types(engine.db, t2.task_id)[-1] == "task.cancelled"
