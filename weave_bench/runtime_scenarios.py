"""S1 seq10, S2 throughput (one and two engine processes) and S3 fan10, end to end over HTTP.

Every scenario runs real ``weave serve`` subprocesses (with their ticks) on the run's
database and SDK ``Worker`` threads talking HTTP to them, exactly as a deployment does
(``serving.py``). Clients start instances through the SDK. Latencies the user sees (S1, S3)
are measured in the client, from the start call until a read shows ``SUCCEEDED``; figures
that only the database can tell (engine gap, join overhead) come from database times and
rows afterwards (``measuring.py``). Sizes: ``tiny`` proves the scenario runs (seconds),
``small`` for a quick look, ``full`` the sizes of the benchmark plan.
"""

from __future__ import annotations

import itertools
import time
from contextlib import ExitStack
from datetime import datetime

from weave_bench import ZERO, BenchContext, Metric, Target, scenario
from weave_bench.measuring import (
    closed_loop,
    cpu_per_step,
    innodb_deadlocks,
    percentile,
    succeeded_tasks,
    task_rows,
    to_ms,
    wait_observed,
)
from weave_bench.process_cpu import CpuMeter, database_server_pid
from weave_bench.serving import (
    DEADLOCK,
    LOCK_WAIT,
    client_for,
    fan10,
    new_tenant,
    running_servers,
    running_workers,
    seq10,
)
from weave_core.storage.db import Database


@scenario("s1", "S1 seq10: one instance of 10 sequential no-op tasks at a time, one worker")
def s1_seq10(ctx: BenchContext) -> list[Metric]:
    runs = ctx.pick(2, 30, 200)
    db = Database.from_url(ctx.database_url, pool_size=2)
    tenant = new_tenant(db)
    try:
        with (running_servers(ctx.database_url, 1) as (server,),
              client_for(server, tenant) as client):
            client.publish(seq10())
            with running_workers([server], tenant, slots=1) as (worker,):
                if ctx.size != "tiny":
                    client.start("bench-seq10", {}).result(timeout=120)  # warm up
                before = worker.stats
                latencies: list[float] = []
                gaps: list[float] = []
                meter = CpuMeter({"engine": server.process.pid if server.process else None,
                                  "database": database_server_pid(ctx.database_url)})
                instances: list[str] = []
                meter.start()
                for _ in range(runs):
                    began = time.perf_counter()
                    handle = client.start("bench-seq10", {})
                    seen = wait_observed(client, handle.workflow_id)
                    latencies.append((seen - began) * 1000)
                    instances.append(handle.workflow_id)
                meter.stop()  # the rows below are the bench's reads, not the runs' work
                after = worker.stats
                with db.engine.connect() as conn:
                    for instance_id in instances:
                        tasks = task_rows(conn, tenant.namespace, instance_id)
                        gaps += [to_ms(b.created_at - a.updated_at)
                                 for a, b in itertools.pairwise(tasks)]
    finally:
        db.dispose()
    note = f"{runs} runs, start call → SUCCEEDED read by the client"
    worker_cpu = cpu_per_step(before, after)
    return [
        Metric("e2e_p50", percentile(latencies, 0.5), "ms", note=note + "; target ≤ 20"),
        Metric("e2e_p95", percentile(latencies, 0.95), "ms", note=note),
        Metric("e2e_p99", percentile(latencies, 0.99), "ms", note=note + "; target ≤ 40"),
        Metric("engine_gap_p50", percentile(gaps, 0.5), "ms",
               note="result accepted (task updated_at) → next task created, database time "
               "(0 when both happen in one step transaction)"),
        Metric("worker_cpu_per_step", worker_cpu, "ms",
               note="the SDK Worker's own threads' CPU time per task; target ≤ 0.5",
               target=Target("<=", 0.5)),
        *_latency_shares(ctx, percentile(latencies, 0.5), meter, runs=runs,
                         tasks_per_run=10, shape="seq10", target=30),
    ]


def _latency_shares(ctx: BenchContext, e2e_p50: float, meter: CpuMeter, *, runs: int,
                    tasks_per_run: int, shape: str, target: float) -> list[Metric]:
    """S1's or S3's latency in L3_1 periods, and the engine's and the database's CPU per task.

    The targets are e2e p50 ≤ 30 (S1) and ≤ 35 (S3) L3_1 periods. One instance runs at a
    time and each task waits for the one before it (S3's branch reports are settled in turn
    on their instance's chain), so the database server's CPU per instance (its rows, reads and
    commits, the start and the result read included), in the same periods, is the part of
    that budget no engine change gives back. Left out when a figure cannot be read (no
    L3_1, a database on another machine).
    """
    metrics = []
    l3 = ctx.calibration.get("L3_1")
    if l3:
        metrics.append(Metric("e2e_p50_in_l3", e2e_p50 / 1000 * l3, "L3_1 periods",
                              note=f"e2e p50 x L3_1; target ≤ {target:g}, issue gate ≤ "
                              f"{target * 1.25:g}", target=Target("<=", target)))
    metrics += _cpu_per_step(meter, runs * tasks_per_run,
                             "over the measured runs, per task (starts and result reads "
                             "included)")
    database = meter.spent.get("database")
    if l3 and database is not None:
        metrics.append(Metric(f"database_cpu_per_{shape}_in_l3", database / runs * l3,
                              "L3_1 periods", note=f"the database's CPU per {shape} x L3_1: "
                              "of e2e, what the database alone spends"))
    return metrics


def _cpu_per_step(meter: CpuMeter, steps: int, what: str) -> list[Metric]:
    """``<process>_cpu_per_step`` in ms for each process the meter could read."""
    return [Metric(f"{name}_cpu_per_step", seconds / steps * 1000, "ms",
                   note=f"the {name} process's CPU {what}")
            for name, seconds in sorted(meter.spent.items())]


def throughput(ctx: BenchContext, engines: int) -> list[Metric]:
    """S2 against one ``weave serve`` running ``engines`` engine processes."""
    concurrency = ctx.pick(5, 50, 50)
    seconds = float(ctx.pick(3, 15, 60))
    db = Database.from_url(ctx.database_url, pool_size=2)
    tenant = new_tenant(db)
    extra = ("--workers", str(engines)) if engines > 1 else ()
    try:
        with running_servers(ctx.database_url, 1, *extra) as servers, ExitStack() as stack:
            clients = [stack.enter_context(client_for(s, tenant)) for s in servers]
            clients[0].publish(seq10())
            deadlocks_before = innodb_deadlocks(db)
            with running_workers(servers, tenant, slots=4) as workers:
                before = workers[0].stats
                cpu = _CpuWindow(db, tenant.namespace, seconds, CpuMeter(
                    {"engine": servers[0].process.pid if servers[0].process else None,
                     "database": database_server_pid(ctx.database_url)}))
                loop = closed_loop(db, clients, tenant.namespace, "bench-seq10", concurrency,
                                   seconds, during=cpu.during)
                after = workers[0].stats
            deadlocks_after = innodb_deadlocks(db)
            log_deadlocks = sum(s.log_count(DEADLOCK) for s in servers)
            log_lock_waits = sum(s.log_count(LOCK_WAIT) for s in servers)
    finally:
        db.dispose()
    innodb = (deadlocks_after or 0) - (deadlocks_before or 0)
    window = (f"{concurrency} in flight, {seconds:g} s, 4 worker slots, {engines} engine "
              f"process{'es' if engines > 1 else ''}")
    return [
        Metric("steps_per_s", loop.window_steps / loop.window, "steps/s", baseline="L3_1",
               note=window + "; target ≥ 0.5 x L3_1", target=Target(">=", 0.5, of_ratio=True)),
        Metric("workflows_per_s", loop.window_finished / loop.window, "workflows/s",
               note=window),
        Metric("p50", percentile(loop.latencies_ms, 0.5), "ms",
               note=f"created_at → settled_at, {len(loop.latencies_ms)} instances"),
        Metric("p99", percentile(loop.latencies_ms, 0.99), "ms", note="created_at → settled_at"),
        Metric("worker_cpu_per_step", cpu_per_step(before, after), "ms",
               note="the SDK Worker's own threads' CPU time per task; target ≤ 0.5",
               target=Target("<=", 0.5)),
        Metric("deadlocks", float(log_deadlocks), "count",
               note="1213 retries logged by the engine; must be 0", target=ZERO),
        Metric("lock_wait_timeouts", float(log_lock_waits), "count",
               note="1205 retries logged by the engine; must be 0", target=ZERO),
        Metric("innodb_deadlocks_server", float(innodb), "count",
               note="Innodb_deadlocks delta of the whole MariaDB server (other clients too)"),
        *cpu.metrics(),
    ]


class _CpuWindow:
    """The engine's and the database's CPU per step inside S2's window.

    On a machine whose cores are all busy, steps per second cannot pass the cores divided
    by the CPU every party spends on a step (engine, database, the bench's worker): these
    figures show which share an engine change can shrink.
    """

    def __init__(self, db: Database, namespace: str, seconds: float, meter: CpuMeter) -> None:
        self._db, self._namespace, self._seconds, self._meter = db, namespace, seconds, meter
        self._began: int | None = None  # steps succeeded when the meter started
        self._steps: int | None = None  # steps succeeded between start and stop

    def during(self, elapsed: float) -> None:
        """The closed loop's callback: start on its first round, stop on the first past
        the window."""
        if self._began is None:
            self._began = succeeded_tasks(self._db, self._namespace)
            self._meter.start()
        elif self._steps is None and elapsed >= self._seconds:
            self._meter.stop()
            self._steps = succeeded_tasks(self._db, self._namespace) - self._began

    def metrics(self) -> list[Metric]:
        if not self._steps or self._steps <= 0:
            return []
        return _cpu_per_step(self._meter, self._steps,
                             "per step in the window (an engine's worker processes included)")


@scenario("s2", "S2 throughput: closed loop of concurrent seq10 instances, 4 worker slots")
def s2_throughput(ctx: BenchContext) -> list[Metric]:
    return throughput(ctx, engines=1)


@scenario("s2x2", "S2 with weave serve --workers 2: two engine processes on one port")
def s2_two_engines(ctx: BenchContext) -> list[Metric]:
    return throughput(ctx, engines=2)


@scenario("s3", "S3 fan10: parallel of 10 tasks, join, one more task")
def s3_fan10(ctx: BenchContext) -> list[Metric]:
    runs = ctx.pick(2, 30, 200)
    db = Database.from_url(ctx.database_url, pool_size=2)
    tenant = new_tenant(db)
    try:
        with (running_servers(ctx.database_url, 1) as (server,),
              client_for(server, tenant) as client):
            client.publish(fan10())
            with running_workers([server], tenant, slots=10):
                if ctx.size != "tiny":
                    client.start("bench-fan10", {}).result(timeout=120)  # warm up
                latencies: list[float] = []
                joins: list[float] = []
                meter = CpuMeter({"engine": server.process.pid if server.process else None,
                                  "database": database_server_pid(ctx.database_url)})
                instances: list[str] = []
                meter.start()
                for _ in range(runs):
                    began = time.perf_counter()
                    handle = client.start("bench-fan10", {})
                    seen = wait_observed(client, handle.workflow_id)
                    latencies.append((seen - began) * 1000)
                    instances.append(handle.workflow_id)
                meter.stop()  # the rows below are the bench's reads, not the runs' work
                with db.engine.connect() as conn:
                    for instance_id in instances:
                        tasks = {r.step_id: r
                                 for r in task_rows(conn, tenant.namespace, instance_id)}
                        last: datetime = max(tasks[f"f{i}"].updated_at for i in range(10))
                        joins.append(to_ms(tasks["after"].created_at - last))
    finally:
        db.dispose()
    note = f"{runs} runs, 10 worker slots, start call → SUCCEEDED read by the client"
    return [
        Metric("e2e_p50", percentile(latencies, 0.5), "ms", note=note + "; target ≤ 25"),
        Metric("e2e_p95", percentile(latencies, 0.95), "ms", note=note),
        Metric("join_overhead_p50", percentile(joins, 0.5), "ms",
               note="last branch result accepted → post-join task created, database time"),
        *_latency_shares(ctx, percentile(latencies, 0.5), meter, runs=runs,
                         tasks_per_run=11, shape="fan10", target=35),
    ]


__all__ = ["s1_seq10", "s2_throughput", "s2_two_engines", "s3_fan10", "throughput"]
