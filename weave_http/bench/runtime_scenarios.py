"""Runtime scenarios of BENCHMARKS.md: S1 seq10, S2 throughput, S3 fan10, S8 contention,
S9 recovery.

Every scenario runs real ``weave serve`` subprocesses (with their ticks) on the run's
database and SDK ``Worker`` threads talking HTTP to them, exactly as a deployment does.
Clients start instances through the SDK. Latencies the user sees (S1, S3) are measured in
the client, from the start call until a read shows ``SUCCEEDED``; figures that only the
database can tell (engine gap, join overhead, duplicates) come from database times and rows
afterwards. Sizes: ``tiny`` proves the scenario runs (seconds), ``small`` for a quick look,
``full`` the sizes of BENCHMARKS.md.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import httpx
import sqlalchemy as sa

from weave_core.access.identity import CLI_ACTOR, Permission, create_namespace, create_token
from weave_core.dispatch import set_namespace_quota, set_queue_capacity
from weave_core.storage.db import Database
from weave_http.bench import BenchContext, Metric, scenario
from weave_sdk import Client
from weave_sdk.worker import Worker

QUEUE = "bench-rt"
_LISTEN = re.compile(r"listening on (http://\S+)")
_DEADLOCK = re.compile(r"\b1213\b|deadlock", re.IGNORECASE)
_LOCK_WAIT = re.compile(r"\b1205\b|lock wait timeout", re.IGNORECASE)


# --- processes ---------------------------------------------------------------------------


@dataclass
class Server:
    """One ``weave serve`` subprocess; its output is kept to count deadlocks in the log."""

    database_url: str
    port: int
    extra: tuple[str, ...] = ()
    """More ``weave serve`` arguments (``--workers 2``)."""
    process: subprocess.Popen[str] | None = None
    reader: threading.Thread | None = None
    output: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> float:
        """Start and wait until /v1/health answers 200; return the seconds it took."""
        began = time.perf_counter()
        self.process = subprocess.Popen(
            [sys.executable, "-c", "import sys; from weave_http.cli import main; "
             "sys.exit(main())", "serve", "--host", "127.0.0.1", "--port", str(self.port),
             "--database-url", self.database_url, "--log-level", "warning", *self.extra],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        process = self.process

        def pump() -> None:
            assert process.stdout is not None
            for line in process.stdout:
                self.output.append(line)

        self.reader = threading.Thread(target=pump, daemon=True)
        self.reader.start()
        while time.perf_counter() - began < timeout:
            if process.poll() is not None:
                raise RuntimeError("weave serve exited:\n" + "".join(self.output))
            try:
                if httpx.get(f"{self.url}/v1/health", timeout=1).status_code == 200:
                    return time.perf_counter() - began
            except httpx.TransportError:
                pass
            time.sleep(0.02)
        self.stop()
        raise RuntimeError("weave serve did not become healthy:\n" + "".join(self.output))

    def kill(self) -> None:
        """kill -9: no drain, no lifespan shutdown."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)
        self._close()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()
        self._close()

    def _close(self) -> None:
        if self.process is not None and self.process.stdout is not None:
            if self.reader is not None:
                self.reader.join(timeout=10)  # the pipe ends with the process
            self.process.stdout.close()

    def log_count(self, pattern: re.Pattern[str]) -> int:
        return sum(1 for line in self.output if pattern.search(line))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def _servers(database_url: str, count: int, *extra: str) -> Iterator[list[Server]]:
    servers = [Server(database_url, _free_port(), extra) for _ in range(count)]
    try:
        for server in servers:
            server.start()
        yield servers
    finally:
        for server in servers:
            server.stop()


@dataclass(frozen=True)
class Tenant:
    namespace: str
    token: str


def _tenant(db: Database) -> Tenant:
    namespace = f"bench-rt-{secrets.token_hex(4)}"
    create_namespace(db, namespace)
    token = create_token(db, namespace, [Permission.ADMIN])
    set_namespace_quota(db, namespace, 1_000_000, actor=CLI_ACTOR)
    set_queue_capacity(db, namespace, QUEUE, 1_000_000, actor=CLI_ACTOR)
    return Tenant(namespace, token)


def _client(server: Server, tenant: Tenant) -> Client:
    return Client(server.url, tenant.token, tenant.namespace, timeout=60)


@contextmanager
def _workers(servers: Sequence[Server], tenant: Tenant, slots: int) -> Iterator[list[Worker]]:
    """One SDK Worker per server, ``slots`` concurrent tasks each, in threads."""
    workers: list[Worker] = []
    threads: list[threading.Thread] = []
    for server in servers:
        worker = Worker(_client(server, tenant), queue=QUEUE, concurrency=slots,
                        wait_seconds=5, shutdown_grace=10)

        @worker.handler("noop")
        def noop(data: Any) -> dict[str, bool]:
            return {"ok": True}

        thread = threading.Thread(target=lambda w=worker: asyncio.run(w.run_async()),
                                  daemon=True)
        thread.start()
        workers.append(worker)
        threads.append(thread)
    try:
        yield workers
    finally:
        for worker in workers:
            worker.stop()
        for thread in threads:
            thread.join(timeout=30)


def _noop(step_id: str) -> dict[str, Any]:
    # A 5 s heartbeat timeout is the lease: a task claimed in a reply that a killed engine
    # never sent (S9) is retried after 5 s instead of the 60 s default.
    return {"id": step_id, "kind": "task", "queue": QUEUE,
            "handler": {"name": "noop", "version": "1"}, "input": {},
            "timeouts": {"heartbeat": 5}}


def seq10() -> dict[str, Any]:
    return {"schema_version": 1, "definition_id": "bench-seq10", "version": "1",
            "input_schema": {"type": "object"}, "failure_policy": "REVIEW",
            "steps": [_noop(f"s{i}") for i in range(10)]}


def fan10() -> dict[str, Any]:
    return {"schema_version": 1, "definition_id": "bench-fan10", "version": "1",
            "input_schema": {"type": "object"}, "failure_policy": "REVIEW",
            "steps": [{"id": "fan", "kind": "parallel",
                       "branches": {f"b{i}": [_noop(f"f{i}")] for i in range(10)}},
                      _noop("after")]}


# --- measuring ---------------------------------------------------------------------------


def _pct(values: Sequence[float], q: float) -> float:
    """The q-quantile (0..1) by nearest rank; 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def _ms(delta: Any) -> float:
    return float(delta.total_seconds() * 1000.0)


def _wait_observed(client: Client, workflow_id: str, timeout: float = 120.0) -> float:
    """Poll the instance until SUCCEEDED; return perf_counter() when it was seen."""
    handle = client.get_workflow_handle(workflow_id)
    handle.result(timeout=timeout, poll_initial=0.001, poll_max=0.004)
    return time.perf_counter()


def _cpu_per_step(before: Any, after: Any) -> float:
    """Milliseconds of worker CPU per task between two ``Worker.stats`` readings."""
    tasks = after.tasks_completed - before.tasks_completed
    return (after.cpu_seconds - before.cpu_seconds) / tasks * 1000 if tasks else -1.0


def _task_rows(conn: sa.Connection, namespace: str, instance_id: str) -> list[Any]:
    return list(conn.execute(sa.text(
        "SELECT a.step_id, t.created_at, t.updated_at FROM weave_tasks t "
        "JOIN weave_activations a ON a.task_id = t.task_id "
        "WHERE a.namespace = :ns AND a.instance_id = :wid ORDER BY t.created_at"
    ), {"ns": namespace, "wid": instance_id}))


def _innodb_deadlocks(db: Database) -> int | None:
    with db.engine.connect() as conn:
        row = conn.execute(sa.text("SHOW GLOBAL STATUS LIKE 'Innodb_deadlocks'")).first()
    return None if row is None else int(row[1])


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


def _succeeded_tasks(db: Database, namespace: str) -> int:
    with db.engine.connect() as conn:
        return int(conn.execute(sa.text(
            "SELECT COUNT(*) FROM weave_tasks WHERE namespace = :ns AND status = 'SUCCEEDED'"),
            {"ns": namespace}).scalar() or 0)


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


# --- closed loop ---------------------------------------------------------------------------


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

    steps_before = _succeeded_tasks(db, namespace)
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
                window_steps = _succeeded_tasks(db, namespace) - steps_before
            if elapsed > seconds + drain_seconds:
                break
            rows = conn.execute(query, {"ids": list(in_flight)}).all()
            conn.rollback()  # a fresh snapshot next round (REPEATABLE READ)
            for row in rows:
                in_flight.discard(row.instance_id)
                latencies.append(_ms(row.settled_at - row.created_at))
                if in_window:
                    window_finished += 1
                    start_one()
            time.sleep(0.005)
    window = min(seconds, time.perf_counter() - began)
    if window_steps is None:
        window_steps = _succeeded_tasks(db, namespace) - steps_before
    return LoopResult(started, window, window_finished, window_steps, latencies, errors,
                      not in_flight)


# --- the scenarios -------------------------------------------------------------------------


@scenario("s1", "S1 seq10: one instance of 10 sequential no-op tasks at a time, one worker")
def s1_seq10(ctx: BenchContext) -> list[Metric]:
    runs = ctx.pick(2, 30, 200)
    db = Database.from_url(ctx.database_url, pool_size=2)
    tenant = _tenant(db)
    try:
        with _servers(ctx.database_url, 1) as (server,), _client(server, tenant) as client:
            client.publish(seq10())
            with _workers([server], tenant, slots=1) as (worker,):
                if ctx.size != "tiny":
                    client.start("bench-seq10", {}).result(timeout=120)  # warm up
                before = worker.stats
                latencies: list[float] = []
                gaps: list[float] = []
                for _ in range(runs):
                    began = time.perf_counter()
                    handle = client.start("bench-seq10", {})
                    seen = _wait_observed(client, handle.workflow_id)
                    latencies.append((seen - began) * 1000)
                    with db.engine.connect() as conn:
                        tasks = _task_rows(conn, tenant.namespace, handle.workflow_id)
                    gaps += [_ms(b.created_at - a.updated_at)
                             for a, b in itertools.pairwise(tasks)]
                after = worker.stats
    finally:
        db.dispose()
    note = f"{runs} runs, start call → SUCCEEDED read by the client"
    worker_cpu = _cpu_per_step(before, after)
    return [
        Metric("e2e_p50", _pct(latencies, 0.5), "ms", note=note + "; target ≤ 20"),
        Metric("e2e_p95", _pct(latencies, 0.95), "ms", note=note),
        Metric("e2e_p99", _pct(latencies, 0.99), "ms", note=note + "; target ≤ 40"),
        Metric("engine_gap_p50", _pct(gaps, 0.5), "ms",
               note="result accepted (task updated_at) → next task created, database time "
               "(0 when both happen in one step transaction)"),
        Metric("worker_cpu_per_step", worker_cpu, "ms",
               note="the SDK Worker's own threads' CPU time per task; target ≤ 0.5"),
    ]


def throughput(ctx: BenchContext, engines: int) -> list[Metric]:
    """S2 against one ``weave serve`` running ``engines`` engine processes."""
    concurrency = ctx.pick(5, 50, 50)
    seconds = float(ctx.pick(3, 15, 60))
    db = Database.from_url(ctx.database_url, pool_size=2)
    tenant = _tenant(db)
    extra = ("--workers", str(engines)) if engines > 1 else ()
    try:
        with _servers(ctx.database_url, 1, *extra) as servers, ExitStack() as stack:
            clients = [stack.enter_context(_client(s, tenant)) for s in servers]
            clients[0].publish(seq10())
            deadlocks_before = _innodb_deadlocks(db)
            with _workers(servers, tenant, slots=4) as workers:
                before = workers[0].stats
                loop = closed_loop(db, clients, tenant.namespace, "bench-seq10", concurrency,
                                   seconds)
                after = workers[0].stats
            deadlocks_after = _innodb_deadlocks(db)
            log_deadlocks = sum(s.log_count(_DEADLOCK) for s in servers)
            log_lock_waits = sum(s.log_count(_LOCK_WAIT) for s in servers)
    finally:
        db.dispose()
    innodb = (deadlocks_after or 0) - (deadlocks_before or 0)
    window = (f"{concurrency} in flight, {seconds:g} s, 4 worker slots, {engines} engine "
              f"process{'es' if engines > 1 else ''}")
    return [
        Metric("steps_per_s", loop.window_steps / loop.window, "steps/s", baseline="L3_1",
               note=window + "; target ≥ 0.5 x L3_1"),
        Metric("workflows_per_s", loop.window_finished / loop.window, "workflows/s",
               note=window),
        Metric("p50", _pct(loop.latencies_ms, 0.5), "ms",
               note=f"created_at → settled_at, {len(loop.latencies_ms)} instances"),
        Metric("p99", _pct(loop.latencies_ms, 0.99), "ms", note="created_at → settled_at"),
        Metric("worker_cpu_per_step", _cpu_per_step(before, after), "ms",
               note="the SDK Worker's own threads' CPU time per task; target ≤ 0.5"),
        Metric("deadlocks", float(log_deadlocks), "count",
               note="1213 retries logged by the engine; must be 0"),
        Metric("lock_wait_timeouts", float(log_lock_waits), "count",
               note="1205 retries logged by the engine; must be 0"),
        Metric("innodb_deadlocks_server", float(innodb), "count",
               note="Innodb_deadlocks delta of the whole MariaDB server (other clients too)"),
    ]


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
    tenant = _tenant(db)
    try:
        with _servers(ctx.database_url, 1) as (server,), _client(server, tenant) as client:
            client.publish(fan10())
            with _workers([server], tenant, slots=10):
                if ctx.size != "tiny":
                    client.start("bench-fan10", {}).result(timeout=120)  # warm up
                latencies: list[float] = []
                joins: list[float] = []
                for _ in range(runs):
                    began = time.perf_counter()
                    handle = client.start("bench-fan10", {})
                    seen = _wait_observed(client, handle.workflow_id)
                    latencies.append((seen - began) * 1000)
                    with db.engine.connect() as conn:
                        tasks = {r.step_id: r for r in _task_rows(conn, tenant.namespace,
                                                                  handle.workflow_id)}
                    last_branch: datetime = max(tasks[f"f{i}"].updated_at for i in range(10))
                    joins.append(_ms(tasks["after"].created_at - last_branch))
    finally:
        db.dispose()
    note = f"{runs} runs, 10 worker slots, start call → SUCCEEDED read by the client"
    return [
        Metric("e2e_p50", _pct(latencies, 0.5), "ms", note=note + "; target ≤ 25"),
        Metric("e2e_p95", _pct(latencies, 0.95), "ms", note=note),
        Metric("join_overhead_p50", _pct(joins, 0.5), "ms",
               note="last branch result accepted → post-join task created, database time"),
    ]


@scenario("s8", "S8 contention: two engines and their ticks on one database, workers on both")
def s8_contention(ctx: BenchContext) -> list[Metric]:
    concurrency = ctx.pick(6, 50, 50)
    seconds = float(ctx.pick(3, 15, 60))
    db = Database.from_url(ctx.database_url, pool_size=2)
    tenant = _tenant(db)
    try:
        with _servers(ctx.database_url, 2) as servers, ExitStack() as stack:
            clients = [stack.enter_context(_client(s, tenant)) for s in servers]
            clients[0].publish(seq10())
            deadlocks_before = _innodb_deadlocks(db)
            with _workers(servers, tenant, slots=2):
                loop = closed_loop(db, clients, tenant.namespace, "bench-seq10", concurrency,
                                   seconds)
                drained = _drain(db, tenant.namespace, 60)
            innodb = (_innodb_deadlocks(db) or 0) - (deadlocks_before or 0)
            deadlocks = sum(s.log_count(_DEADLOCK) for s in servers)
        check = integrity(db, tenant.namespace)
    finally:
        db.dispose()
    duplicates = check.duplicate_tasks + check.duplicate_activations + check.duplicate_successes
    per_10k = deadlocks / max(check.advances, 1) * 10_000
    return [
        Metric("duplicate_tasks", float(duplicates), "count",
               note=f"tasks per activation, activations per step, successes per step over "
               f"{check.instances} instances; must be 0"),
        Metric("unfinished", float(check.unfinished), "count",
               note=f"instances not SUCCEEDED after the drain (drained={drained}); must be 0"),
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
    tenant = _tenant(db)
    killed_at: list[float] = []
    restarted_in: list[float] = []
    resumed_at: list[float] = []
    try:
        with _servers(ctx.database_url, 1) as (server,), _client(server, tenant) as client:
            client.publish(seq10())
            with _workers([server], tenant, slots=4):
                succeeded_at_kill = [0]

                def during(elapsed: float) -> None:
                    if not killed_at and elapsed >= seconds / 3:
                        succeeded_at_kill[0] = _succeeded_tasks(db, tenant.namespace)
                        server.kill()
                        killed_at.append(time.perf_counter())
                        restarted_in.append(server.start())  # same port: workers reconnect
                    elif killed_at and not resumed_at:
                        if _succeeded_tasks(db, tenant.namespace) > succeeded_at_kill[0]:
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
               f"{loop.start_errors} start calls retried); must be 0"),
        Metric("duplicated", float(duplicates), "count",
               note="tasks per activation, activations per step, successes per step; "
               "must be 0"),
    ]


__all__ = [
    "Integrity",
    "LoopResult",
    "Server",
    "closed_loop",
    "fan10",
    "integrity",
    "s1_seq10",
    "s2_throughput",
    "s3_fan10",
    "s8_contention",
    "s9_recovery",
    "seq10",
]

