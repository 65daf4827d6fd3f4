"""Queue capacity and namespace quota: refused with typed errors, released on settle."""

from __future__ import annotations

import pytest

from tests.dispatch.conftest import ACTOR, claim_one, new_task
from weave_core.dispatch import (
    QueueFullError,
    QuotaExceededError,
    Report,
    ReportOutcome,
    complete,
    get_queue,
    get_quota,
    set_namespace_quota,
    set_queue_capacity,
)
from weave_core.engine import Engine
from weave_core.foundation.errors import LimitExceededError


def test_queue_capacity(engine: Engine, ns_name: str) -> None:
    set_queue_capacity(engine.db, ns_name, "q", 2, actor=ACTOR)
    new_task(engine, ns_name)
    new_task(engine, ns_name)
    with pytest.raises(QueueFullError) as info:
        new_task(engine, ns_name)
    assert isinstance(info.value, LimitExceededError)
    # the quota unit taken before the full queue was found was rolled back
    assert engine.db.read(lambda c: get_quota(c, ns_name)).outstanding == 2
    new_task(engine, ns_name, queue="other")  # other queues are not affected
    claimed = claim_one(engine, ns_name)
    assert claimed is not None
    complete(engine.db, namespace=ns_name, task_id=claimed.task_id,
             attempt_id=claimed.attempt_id, report=Report(ReportOutcome.SUCCEEDED),
             actor=ACTOR)
    new_task(engine, ns_name)  # the permit came back
    assert engine.db.read(lambda c: get_queue(c, ns_name, "q")).outstanding == 2


def test_namespace_quota(engine: Engine, ns_name: str) -> None:
    set_namespace_quota(engine.db, ns_name, 1, actor=ACTOR)
    new_task(engine, ns_name, queue="a")
    with pytest.raises(QuotaExceededError):
        new_task(engine, ns_name, queue="b")
    assert engine.db.read(lambda c: get_queue(c, ns_name, "b")).outstanding == 0
