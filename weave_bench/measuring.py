"""Quantiles, database times and counts, and the closed loop the runtime scenarios measure with."""

from __future__ import annotations

import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from weave_core.storage.db import Database
from weave_sdk import Client


def percentile(values: Sequence[float], q: float) -> float:
    """The q-quantile (0..1) by nearest rank; 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def to_ms(delta: Any) -> float:
    return float(delta.total_seconds() * 1000.0)


def wait_observed(client: Client, workflow_id: str, timeout: float = 120.0) -> float:
    """Poll the instance until SUCCEEDED; return perf_counter() when it was seen."""
    handle = client.get_workflow_handle(workflow_id)
    handle.result(timeout=timeout, poll_initial=0.001, poll_max=0.004)
    return time.perf_counter()


def cpu_per_step(before: Any, after: Any) -> float:
    """Milliseconds of worker CPU per task between two ``Worker.stats`` readings."""
    tasks = after.tasks_completed - before.tasks_completed
    return (after.cpu_seconds - before.cpu_seconds) / tasks * 1000 if tasks else -1.0


def task_rows(conn: sa.Connection, namespace: str, instance_id: str) -> list[Any]:
    return list(conn.execute(sa.text(
        "SELECT a.step_id, t.created_at, t.updated_at FROM weave_tasks t "
        "JOIN weave_activations a ON a.task_id = t.task_id "
        "WHERE a.namespace = :ns AND a.instance_id = :wid ORDER BY t.created_at"
    ), {"ns": namespace, "wid": instance_id}))


def innodb_deadlocks(db: Database) -> int | None:
    with db.engine.connect() as conn:
        row = conn.execute(sa.text("SHOW GLOBAL STATUS LIKE 'Innodb_deadlocks'")).first()
    return None if row is None else int(row[1])


def succeeded_tasks(db: Database, namespace: str) -> int:
    with db.engine.connect() as conn:
        return int(conn.execute(sa.text(
            "SELECT COUNT(*) FROM weave_tasks WHERE namespace = :ns AND status = 'SUCCEEDED'"),
            {"ns": namespace}).scalar() or 0)


@dataclass
class LoopResult:
    started: int
    window: float
    """Seconds of the measured window (starts stop at its end)."""
    window_finished: int
    """Instances that settled inside the window."""
    window_steps: int
    """Tasks that succeeded inside the window (database count)."""
    latencies_ms: list[float]
    """created_at → settled_at of every instance, the ones that settled after the window too."""
    start_errors: int
    drained: bool


def closed_loop(db: Database, clients: Sequence[Client], namespace: str, definition_id: str,
                concurrency: int, seconds: float, during: Any = None,
                drain_seconds: float = 120.0) -> LoopResult:
    """Keep ``concurrency`` instances in flight for ``seconds``, then let them finish.

    Starts alternate between ``clients`` (servers). Completion is watched in the database
    (one query every 5 ms for all in-flight instances) so that watching costs the servers
    nothing; latency is the instance's own ``created_at`` → ``settled_at`` (database time).
    ``during(elapsed)`` is called on every round (S9 kills an engine from it). A start that
    fails (an engine was killed mid-call) is retried with the same idempotency key, so a
    start that did commit is never doubled.
    """
    in_flight: set[str] = set()
    latencies: list[float] = []
    started = errors = 0
    window_finished = 0
    window_steps: int | None = None
    turn = 0

    def start_one() -> None:
        nonlocal started, errors, turn
        key = secrets.token_hex(12)
        while True:
            client = clients[turn % len(clients)]
            turn += 1
            try:
                handle = client.start(definition_id, {}, idempotency_key=key)
            except Exception:  # a killed engine: the same key again is safe
                errors += 1
                time.sleep(0.05)
                continue
            in_flight.add(handle.workflow_id)
            if handle.created:
                started += 1
            return

    steps_before = succeeded_tasks(db, namespace)
    began = time.perf_counter()
    for _ in range(concurrency):
        start_one()
    query = sa.text(
        "SELECT instance_id, created_at, settled_at FROM weave_instances "
        "WHERE instance_id IN :ids AND status = 'SUCCEEDED'"
    ).bindparams(sa.bindparam("ids", expanding=True))
    with db.engine.connect() as conn:
        while in_flight:
            elapsed = time.perf_counter() - began
            if during is not None:
                during(elapsed)
            in_window = elapsed < seconds
            if not in_window and window_steps is None:
                window_steps = succeeded_tasks(db, namespace) - steps_before
            if elapsed > seconds + drain_seconds:
                break
            rows = conn.execute(query, {"ids": list(in_flight)}).all()
            conn.rollback()  # a fresh snapshot next round (REPEATABLE READ)
            for row in rows:
                in_flight.discard(row.instance_id)
                latencies.append(to_ms(row.settled_at - row.created_at))
                if in_window:
                    window_finished += 1
                    start_one()
            time.sleep(0.005)
    window = min(seconds, time.perf_counter() - began)
    if window_steps is None:
        window_steps = succeeded_tasks(db, namespace) - steps_before
    return LoopResult(started, window, window_finished, window_steps, latencies, errors,
                      not in_flight)


__all__ = [
    "LoopResult",
    "closed_loop",
    "cpu_per_step",
    "innodb_deadlocks",
    "percentile",
    "succeeded_tasks",
    "task_rows",
    "to_ms",
    "wait_observed",
]
