"""S8 contention and S9 recovery: no duplicated, no lost work with two engines and after kill -9.

Both run on the scaffolding of ``serving.py`` and the closed loop of ``measuring.py``;
``integrity`` counts lost and duplicated work in the database once the load has drained.
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from dataclasses import dataclass, field

import sqlalchemy as sa

from weave_bench import ZERO, BenchContext, Metric, scenario
from weave_bench.measuring import closed_loop, innodb_deadlocks, succeeded_tasks
from weave_bench.serving import (
    DEADLOCK,
    client_for,
    new_tenant,
    running_servers,
    running_workers,
    seq10,
)
from weave_core.storage.db import Database


@dataclass
class Integrity:
    """What the database says after a load: lost and duplicated work (must all be 0)."""

    instances: int = 0
    unfinished: int = 0
    duplicate_activations: int = 0
    duplicate_tasks: int = 0
    duplicate_successes: int = 0
    advances: int = 0
    unfinished_by_status: dict[str, int] = field(default_factory=dict)


def integrity(db: Database, namespace: str) -> Integrity:
    q = {"ns": namespace}
    with db.engine.connect() as conn:
        def one(sql: str) -> int:
            return int(conn.execute(sa.text(sql), q).scalar() or 0)

        return Integrity(
            instances=one("SELECT COUNT(*) FROM weave_instances WHERE namespace = :ns"),
            unfinished=one("SELECT COUNT(*) FROM weave_instances WHERE namespace = :ns "
                           "AND status <> 'SUCCEEDED'"),
            # one activation per (instance, step): no recovery runs here
            duplicate_activations=one(
                "SELECT COUNT(*) FROM (SELECT instance_id, step_id FROM weave_activations "
                "WHERE namespace = :ns GROUP BY instance_id, step_id "
                "HAVING COUNT(*) > 1) d"),
            # at most one task per (activation, poll round) (I2)
            duplicate_tasks=one(
                "SELECT COUNT(*) FROM (SELECT owner_id FROM weave_tasks WHERE namespace = :ns "
                "AND owner_id IS NOT NULL GROUP BY owner_id HAVING COUNT(*) > 1) d"),
            # a step recorded SUCCEEDED twice would be a duplicated advance (I3, I4)
            duplicate_successes=one(
                "SELECT COUNT(*) FROM (SELECT instance_id, step_id FROM weave_transitions "
                "WHERE namespace = :ns AND kind = 'step.succeeded' "
                "GROUP BY instance_id, step_id HAVING COUNT(*) > 1) d"),
            advances=one("SELECT COUNT(*) FROM weave_audit WHERE namespace = :ns AND action IN "
                          "('workflow.result.consumed', 'workflow.advanced', "
                          "'workflow.started')"),
            unfinished_by_status={
                str(status): int(count) for status, count in conn.execute(sa.text(
                    "SELECT status, COUNT(*) FROM weave_instances WHERE namespace = :ns "
                    "AND status <> 'SUCCEEDED' GROUP BY status"), q)
            },
        )


def _drain(db: Database, namespace: str, timeout: float) -> bool:
    """Wait until every instance of the namespace is terminal (or review)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with db.engine.connect() as conn:
            open_ = int(conn.execute(sa.text(
                "SELECT COUNT(*) FROM weave_instances WHERE namespace = :ns AND status IN "
                "('RUNNING', 'WAITING', 'CANCELLING')"), {"ns": namespace}).scalar() or 0)
        if open_ == 0:
            return True
        time.sleep(0.2)
    return False


@scenario("s8", "S8 contention: two engines and their ticks on one database, workers on both")
def s8_contention(ctx: BenchContext) -> list[Metric]:
    concurrency = ctx.pick(6, 50, 50)
    seconds = float(ctx.pick(3, 15, 60))
    db = Database.from_url(ctx.database_url, pool_size=2)
    tenant = new_tenant(db)
    try:
        with running_servers(ctx.database_url, 2) as servers, ExitStack() as stack:
            clients = [stack.enter_context(client_for(s, tenant)) for s in servers]
            clients[0].publish(seq10())
            deadlocks_before = innodb_deadlocks(db)
            with running_workers(servers, tenant, slots=2):
                loop = closed_loop(db, clients, tenant.namespace, "bench-seq10", concurrency,
                                   seconds)
                drained = _drain(db, tenant.namespace, 60)
            innodb = (innodb_deadlocks(db) or 0) - (deadlocks_before or 0)
            deadlocks = sum(s.log_count(DEADLOCK) for s in servers)
        check = integrity(db, tenant.namespace)
    finally:
        db.dispose()
    duplicates = check.duplicate_tasks + check.duplicate_activations + check.duplicate_successes
    per_10k = deadlocks / max(check.advances, 1) * 10_000
    return [
        Metric("duplicate_tasks", float(duplicates), "count",
               note=f"tasks per activation, activations per step, successes per step over "
               f"{check.instances} instances; must be 0", target=ZERO),
        Metric("unfinished", float(check.unfinished), "count",
               note=f"instances not SUCCEEDED after the drain (drained={drained}); must be 0",
               target=ZERO),
        Metric("deadlocks_per_10k_advances", per_10k, "count",
               note=f"{deadlocks} 1213 retries logged by the engines over {check.advances} "
               f"advances (Innodb_deadlocks of the whole server: {innodb})"),
        Metric("steps_per_s", loop.window_steps / loop.window, "steps/s", baseline="L3_1",
               note=f"{concurrency} in flight over 2 engines, 2 slots per engine"),
    ]


@scenario("s9", "S9 recovery: kill -9 the engine during an S2-like load, restart it")
def s9_recovery(ctx: BenchContext) -> list[Metric]:
    concurrency = ctx.pick(5, 30, 50)
    seconds = float(ctx.pick(4, 15, 60))
    db = Database.from_url(ctx.database_url, pool_size=2)
    tenant = new_tenant(db)
    killed_at: list[float] = []
    restarted_in: list[float] = []
    resumed_at: list[float] = []
    try:
        with (running_servers(ctx.database_url, 1) as (server,),
              client_for(server, tenant) as client):
            client.publish(seq10())
            with running_workers([server], tenant, slots=4):
                succeeded_at_kill = [0]

                def during(elapsed: float) -> None:
                    if not killed_at and elapsed >= seconds / 3:
                        succeeded_at_kill[0] = succeeded_tasks(db, tenant.namespace)
                        server.kill()
                        killed_at.append(time.perf_counter())
                        restarted_in.append(server.start())  # same port: workers reconnect
                    elif killed_at and not resumed_at:
                        if succeeded_tasks(db, tenant.namespace) > succeeded_at_kill[0]:
                            resumed_at.append(time.perf_counter())

                loop = closed_loop(db, [client], tenant.namespace, "bench-seq10",
                                   concurrency, seconds, during)
                drained = loop.drained and _drain(db, tenant.namespace, 30)
        check = integrity(db, tenant.namespace)
    finally:
        db.dispose()
    duplicates = check.duplicate_tasks + check.duplicate_activations + check.duplicate_successes
    resume_ms = (resumed_at[0] - killed_at[0]) * 1000 if resumed_at and killed_at else -1.0
    return [
        Metric("time_to_resume", resume_ms, "ms",
               note="kill -9 → first task settled after the restart (includes the restart)"),
        Metric("restart", (restarted_in[0] * 1000) if restarted_in else -1.0, "ms",
               note="new weave serve process until /v1/health is 200"),
        Metric("lost", float(check.unfinished), "count",
               note=f"instances not SUCCEEDED after the drain, of {check.instances} "
               f"(by status: {check.unfinished_by_status or 'none'}; drained={drained}, "
               f"{loop.start_errors} start calls retried); must be 0", target=ZERO),
        Metric("duplicated", float(duplicates), "count",
               note="tasks per activation, activations per step, successes per step; "
               "must be 0", target=ZERO),
    ]


__all__ = ["Integrity", "integrity", "s8_contention", "s9_recovery"]
