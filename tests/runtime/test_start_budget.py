"""A start's capacity on MariaDB: it locks the quota and its queues, reads how many units
are free, takes its tasks' units in memory and writes one UPDATE per counter
(``dispatch.ledger.Budget``); past the free units it starts the classic way, whose
reservations meet the full queue as before."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import REGISTRY
from sqlalchemy import event

from tests.runtime.helpers import (
    definition,
    instance,
    new_namespace,
    publish,
    start,
    task,
    tasks_of,
)
from weave_core.dispatch import set_namespace_quota, set_queue_capacity
from weave_core.dispatch.queues import get_queue, get_quota
from weave_core.engine import Engine


def _fan(branches: int) -> dict[str, Any]:
    return definition("fan", [{"id": "fan", "kind": "parallel", "branches": {
        f"x{i}": [task(f"x{i}", "b")] for i in range(branches)}}])


def _capacity_statements(engine: Engine, run: Any) -> list[str]:
    seen: list[str] = []

    def _listen(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        text = " ".join(statement.split())
        if text.startswith("UPDATE weave_queues") or text.startswith(
                "UPDATE weave_namespace_quotas") or text.startswith("SAVEPOINT"):
            seen.append(text.split(" SET ")[0])

    event.listen(engine.db.engine, "before_cursor_execute", _listen)
    try:
        run()
    finally:
        event.remove(engine.db.engine, "before_cursor_execute", _listen)
    return seen


def test_a_fan_out_start_takes_its_units_with_one_update_per_counter(engine: Engine) -> None:
    ns = new_namespace(engine)
    publish(engine, ns, _fan(10))
    set_queue_capacity(engine.db, ns, "q", 50, actor="test")
    set_namespace_quota(engine.db, ns, 50, actor="test")
    result: list[Any] = []
    seen = _capacity_statements(engine, lambda: result.append(start(engine, ns, "fan", {})))
    assert seen == ["UPDATE weave_namespace_quotas", "UPDATE weave_queues"]  # no savepoint
    wid = result[0].instance.instance_id
    assert len(tasks_of(engine, wid)) == 10
    assert engine.db.read(lambda c: get_queue(c, ns, "q")).outstanding == 10
    assert engine.db.read(lambda c: get_quota(c, ns)).outstanding == 10


@pytest.mark.parametrize("limit", ["queue", "quota"])
def test_a_start_past_the_free_units_meets_the_full_queue_the_classic_way(
    engine: Engine, limit: str
) -> None:
    """Three branches, two units free: the start is taken again the classic way, whose
    reservation of the third meets the limit: the instance waits with nothing created."""
    ns = new_namespace(engine)
    publish(engine, ns, _fan(3))
    if limit == "queue":
        set_queue_capacity(engine.db, ns, "q", 2, actor="test")
    else:
        set_namespace_quota(engine.db, ns, 2, actor="test")
    seen: list[Any] = []
    reruns = REGISTRY.get_sample_value("weave_capacity_reruns_total",
                                       {"transaction": "start_workflow"}) or 0.0
    statements = _capacity_statements(engine, lambda: seen.append(start(engine, ns, "fan", {})))
    assert REGISTRY.get_sample_value("weave_capacity_reruns_total",
                                     {"transaction": "start_workflow"}) == reruns + 1
    wid = seen[0].instance.instance_id
    assert any(s.startswith("SAVEPOINT") for s in statements)  # the classic advance
    assert instance(engine, wid).status == "WAITING"
    assert tasks_of(engine, wid) == []
    assert engine.db.read(lambda c: get_queue(c, ns, "q")).outstanding == 0
    assert engine.db.read(lambda c: get_quota(c, ns)).outstanding == 0
