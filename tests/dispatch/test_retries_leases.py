"""Retries after backoff and lease expiry on database time (T8: the slow worker)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

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
    AttemptSupersededError,
    LeaseExpiredError,
    Report,
    ReportOutcome,
    TaskError,
    TaskStatus,
    complete,
    get_task,
    heartbeat,
    sweep_expired_leases,
)
from weave_core.engine import Engine

RETRYABLE = Report(ReportOutcome.FAILED, error=TaskError("flaky", "try again", retryable=True))


def test_retryable_failure_backs_off_then_exhausts_budget(
    engine: Engine, ns_name: str, clock: Any
) -> None:
    task = new_task(engine, ns_name, max_attempts=3, backoff_ms=1000)
    offset = 0.0
    for attempt_no in (1, 2, 3):
        claimed = claim_one(engine, ns_name)
        assert claimed is not None and claimed.attempt_no == attempt_no
        done = complete(engine.db, namespace=ns_name, task_id=task.task_id,
                        attempt_id=claimed.attempt_id, report=RETRYABLE, actor=ACTOR)
        if attempt_no < 3:
            assert done.task.status == TaskStatus.PENDING
            assert claim_one(engine, ns_name) is None  # backing off
            offset += 2**attempt_no  # 1 s then 2 s of backoff, plus a margin
            clock(offset)
    assert done.task.status == TaskStatus.FAILED and done.task.attempts_used == 3
    assert event_types(engine.db, task.task_id).count("task.retry_scheduled") == 2
    assert event_types(engine.db, task.task_id)[-1] == "task.failed"


def test_retry_never_passes_the_deadline(engine: Engine, ns_name: str) -> None:
    now = engine.db.read(engine.db.now)
    task = new_task(engine, ns_name, backoff_ms=60_000, deadline_at=now + timedelta(seconds=30))
    claimed = claim_one(engine, ns_name)
    assert claimed is not None
    done = complete(engine.db, namespace=ns_name, task_id=task.task_id,
                    attempt_id=claimed.attempt_id, report=RETRYABLE, actor=ACTOR)
    assert done.task.status == TaskStatus.FAILED


def test_slow_worker_lease_expiry(engine: Engine, ns_name: str, clock: Any) -> None:
    """T8: late report refused and audited; new holder's duplicate is a replay."""
    task = new_task(engine, ns_name, heartbeat_timeout_s=10, backoff_ms=0)
    slow = claim_one(engine, ns_name, worker="slow")
    assert slow is not None
    clock(11)
    report = sweep_expired_leases(engine, limit=1000)
    assert report.handled[task.task_id] == "retry_scheduled"
    with pytest.raises(AttemptSupersededError):
        heartbeat(engine.db, namespace=ns_name, task_id=task.task_id,
                  attempt_id=slow.attempt_id, actor=ACTOR)

    fresh = claim_one(engine, ns_name, worker="fresh")
    assert fresh is not None and fresh.attempt_no == 2
    before = get_task(engine.db, ns_name, task.task_id)
    late = Report(ReportOutcome.SUCCEEDED, output={"from": "slow"})
    with pytest.raises(AttemptSupersededError):
        complete(engine.db, namespace=ns_name, task_id=task.task_id,
                 attempt_id=slow.attempt_id, report=late, actor=ACTOR)
    after = get_task(engine.db, ns_name, task.task_id)
    assert after == before  # the late report changed nothing
    assert "task.report_refused" in audit_actions(engine.db, ns_name, task.task_id)
    refused = rows(engine.db, "SELECT attempt_id FROM weave_task_events WHERE task_id=:t "
                   "AND event_type='task.report_refused'", t=task.task_id)
    assert [r["attempt_id"] for r in refused] == [slow.attempt_id]

    good = Report(ReportOutcome.SUCCEEDED, output={"from": "fresh"})
    first = complete(engine.db, namespace=ns_name, task_id=task.task_id,
                     attempt_id=fresh.attempt_id, report=good, actor=ACTOR)
    second = complete(engine.db, namespace=ns_name, task_id=task.task_id,
                      attempt_id=fresh.attempt_id, report=good, actor=ACTOR)
    assert first.task.status == TaskStatus.SUCCEEDED and second.replay
    assert second.task == first.task


def test_heartbeat_and_report_after_expiry_are_refused(
    engine: Engine, ns_name: str, clock: Any
) -> None:
    t1 = new_task(engine, ns_name, heartbeat_timeout_s=5, backoff_ms=0)
    c1 = claim_one(engine, ns_name)
    assert c1 is not None
    clock(6)
    with pytest.raises(LeaseExpiredError):
        heartbeat(engine.db, namespace=ns_name, task_id=t1.task_id, attempt_id=c1.attempt_id,
                  actor=ACTOR)
    assert get_task(engine.db, ns_name, t1.task_id).status == TaskStatus.PENDING  # retried

    clock(0)
    t2 = new_task(engine, ns_name, queue="q2", heartbeat_timeout_s=5, backoff_ms=0)
    c2 = claim_one(engine, ns_name, queue="q2")
    assert c2 is not None
    clock(6)
    with pytest.raises(LeaseExpiredError):
        complete(engine.db, namespace=ns_name, task_id=t2.task_id, attempt_id=c2.attempt_id,
                 report=Report(ReportOutcome.SUCCEEDED, output=1), actor=ACTOR)
    after = get_task(engine.db, ns_name, t2.task_id)
    assert after.status == TaskStatus.PENDING and after.result is None
    assert "task.report_refused" in audit_actions(engine.db, ns_name, t2.task_id)


def test_heartbeat_extends_the_lease(engine: Engine, ns_name: str, clock: Any) -> None:
    task = new_task(engine, ns_name, heartbeat_timeout_s=10)
    claimed = claim_one(engine, ns_name)
    assert claimed is not None
    for step in (8, 16, 24):
        clock(step)
        heartbeat(engine.db, namespace=ns_name, task_id=task.task_id,
                  attempt_id=claimed.attempt_id, actor=ACTOR)
        assert task.task_id not in sweep_expired_leases(engine, limit=1000).handled
    done = complete(engine.db, namespace=ns_name, task_id=task.task_id,
                    attempt_id=claimed.attempt_id, report=Report(ReportOutcome.SUCCEEDED),
                    actor=ACTOR)
    assert done.task.status == TaskStatus.SUCCEEDED


def test_start_to_close_caps_renewals(engine: Engine, ns_name: str, clock: Any) -> None:
    task = new_task(engine, ns_name, heartbeat_timeout_s=10, start_to_close_s=15,
                    max_attempts=1)
    claimed = claim_one(engine, ns_name)
    assert claimed is not None
    clock(8)
    beat = heartbeat(engine.db, namespace=ns_name, task_id=task.task_id,
                     attempt_id=claimed.attempt_id, actor=ACTOR)
    assert beat.lease_expires_at <= claimed.lease_expires_at + timedelta(seconds=5, microseconds=1)
    clock(16)
    assert sweep_expired_leases(engine, limit=1000).handled[task.task_id] == "failed"
    assert get_task(engine.db, ns_name, task.task_id).error["type"] == "lease_expired"


def test_deadline_and_schedule_to_start(engine: Engine, ns_name: str, clock: Any) -> None:
    now = engine.db.read(engine.db.now)
    late = new_task(engine, ns_name, deadline_at=now + timedelta(seconds=5))
    unstarted = new_task(engine, ns_name, queue="q2", schedule_to_start_s=5)
    clock(6)
    assert claim_one(engine, ns_name) is None  # past its deadline: never handed out
    failed = get_task(engine.db, ns_name, late.task_id)
    assert failed.status == TaskStatus.FAILED and failed.error["type"] == "deadline_exceeded"
    sweep_expired_leases(engine, limit=1000)
    timed_out = get_task(engine.db, ns_name, unstarted.task_id)
    assert timed_out.status == TaskStatus.FAILED
    assert timed_out.error["type"] == "schedule_to_start_timeout"
