"""Several processes on one queue: no task handed out twice; capacity and quota hold."""

from __future__ import annotations

import multiprocessing
from collections import Counter

import pytest

from tests.dispatch.conftest import ACTOR, new_task, rows
from weave_core.dispatch import (
    HandlerRef,
    QueueFullError,
    QuotaExceededError,
    Report,
    ReportOutcome,
    TaskSpec,
    claim,
    complete,
    create_task,
    set_namespace_quota,
    set_queue_capacity,
)
from weave_core.engine import Engine
from weave_core.storage.db import Database

PROCESSES = 4


def _claimer(url: str, ns: str, out: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    db = Database.from_url(url, pool_size=2)
    got: list[tuple[str, str]] = []
    empty = 0
    while empty < 3:
        batch = claim(db, namespace=ns, queue="q",
                      worker_id=f"p{multiprocessing.current_process().pid}",
                      handlers=[HandlerRef("echo", "1")], max_tasks=4)
        if not batch:
            empty += 1
            continue
        empty = 0
        for task in batch:
            got.append((task.task_id, task.attempt_id))
            complete(db, namespace=ns, task_id=task.task_id, attempt_id=task.attempt_id,
                     report=Report(ReportOutcome.SUCCEEDED), actor=ACTOR)
    db.dispose()
    out.put(got)


def _creator(url: str, ns: str, count: int, out: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    db = Database.from_url(url, pool_size=2)
    made = refused = 0
    for i in range(count):
        try:
            create_task(db, namespace=ns, actor=ACTOR, spec=TaskSpec(
                queue=f"q{i % 2}", handler="echo", handler_version="1", input={}))
            made += 1
        except (QueueFullError, QuotaExceededError):
            refused += 1
    db.dispose()
    out.put((made, refused))


def _run(target: object, args_list: list[tuple[object, ...]]) -> list[object]:
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=target, args=(*args, out)) for args in args_list]  # type: ignore[arg-type]
    for p in procs:
        p.start()
    results = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    return results


@pytest.mark.timeout(180)
def test_claimer_processes_never_share_a_task(
    engine: Engine, ns_name: str, mysql_url: str
) -> None:
    total = 120
    for _ in range(total):
        new_task(engine, ns_name)
    results = _run(_claimer, [(mysql_url, ns_name)] * PROCESSES)
    claimed = [pair for result in results for pair in result]  # type: ignore[attr-defined]
    assert len(claimed) == total
    assert len({task for task, _ in claimed}) == total
    assert len({attempt for _, attempt in claimed}) == total
    assert sum(1 for r in results if r) >= 2  # the work really was shared
    per_task = Counter(r["task_id"] for r in rows(
        engine.db, "SELECT task_id FROM weave_task_attempts WHERE namespace=:ns", ns=ns_name))
    assert set(per_task.values()) == {1}


@pytest.mark.timeout(180)
def test_capacity_and_quota_hold_under_concurrency(
    engine: Engine, ns_name: str, mysql_url: str
) -> None:
    set_queue_capacity(engine.db, ns_name, "q0", 15, actor=ACTOR)
    set_queue_capacity(engine.db, ns_name, "q1", 40, actor=ACTOR)
    set_namespace_quota(engine.db, ns_name, 35, actor=ACTOR)
    results = _run(_creator, [(mysql_url, ns_name, 30)] * PROCESSES)
    made = sum(m for m, _ in results)  # type: ignore[misc]
    counts = {r["queue"]: r["n"] for r in rows(
        engine.db, "SELECT queue, COUNT(*) AS n FROM weave_tasks WHERE namespace=:ns "
        "GROUP BY queue", ns=ns_name)}
    assert made == sum(counts.values()) == 35  # the quota is the binding limit
    assert counts["q0"] == 15  # q0 filled up to its capacity, never past it
    [q0, q1] = rows(engine.db, "SELECT name, outstanding FROM weave_queues WHERE namespace=:ns "
                    "ORDER BY name", ns=ns_name)
    assert (q0["outstanding"], q1["outstanding"]) == (counts["q0"], counts["q1"])
    [quota] = rows(engine.db, "SELECT outstanding FROM weave_namespace_quotas "
                   "WHERE namespace=:ns", ns=ns_name)
    assert quota["outstanding"] == 35
