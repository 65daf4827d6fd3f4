"""``weave bench waits`` (S4) and ``signals`` (S5): waiting costs rows, not scans.

In-process engine on the bench database (kernel calls, no HTTP), so the figures isolate the
waits layer:

``waits`` (S4):
- ``seq10_p50_*`` — S1-like: one instance of 10 sequential no-op tasks, start → SUCCEEDED
  (claim, complete, consume on the fast path), before and after ``N`` instances wait on far
  timers and signals (N = 100 tiny, 1,000 small, 100,000 full); the ratio is the S1
  change (target ≤ 1.10).
- ``tick_scan_ms_*`` — the tick's two due scans (``due_candidates``), median of 50, with no
  waiters and with N: flat (both served by their due indexes; ``tests/waits`` EXPLAINs them).
- ``burst_lateness_p50/p99`` and ``burst_drain_s`` — 1,000 timers (100 tiny) made due in the
  same instant, drained by one engine process per core (at least 2), each running the real
  tick (``run_tick``) back to back: pending rows in batches of 32 instances, instances
  another engine's batch holds skipped. Lateness = the wait's settle time - its due time,
  database time. The timers' version uses no queue, so their advances skip the namespace
  quota row. ``burst_then_task_*``: the same with a task after each timer, lateness to the
  successor's activation (every advance then reserves quota: the namespace quota row
  serialises them).

``signals`` (S5): instances waiting on ``signal``; each signal is accepted and delivered on
the fast path, then the next task is claimed: accepted → next task claimable, p50/p99.
"""

from __future__ import annotations

import multiprocessing
import os
import secrets
import statistics
import threading
import time
from datetime import timedelta
from typing import Any

import sqlalchemy as sa

from weave_bench import BenchContext, Metric, scenario
from weave_core.access.identity import CLI_ACTOR, create_namespace
from weave_core.definitions.format import validate_definition
from weave_core.definitions.store import store_definition
from weave_core.dispatch import (
    HandlerRef,
    Report,
    ReportOutcome,
    claim,
    complete,
    set_namespace_quota,
    set_queue_capacity,
)
from weave_core.engine import Engine
from weave_core.foundation.limits import Limits
from weave_core.plugins.host import PluginHost
from weave_core.runtime import StartRequest, start_workflow
from weave_core.runtime.checkpoints import run_pending
from weave_core.runtime.consumer import consume_task_results
from weave_core.runtime.tick import due_candidates, run_tick
from weave_core.runtime.waits import SignalRequest, accept_signal
from weave_core.storage.db import Database
from weave_core.storage.schema import weave_pending_advances, weave_steps, weave_waits

QUEUE = "bench-w"
DRAIN_ENGINES = max(2, os.cpu_count() or 2)
"""Engine processes whose ticks drain the burst: one per core (a second tick process on
a core only competes with the first)."""


def _engine(ctx: BenchContext) -> Engine:
    db = Database.from_url(ctx.database_url, pool_size=8)
    return Engine(db=db, plugins=PluginHost.from_entry_points(), limits=Limits(),
                  node_id=f"bench-{secrets.token_hex(3)}")


def _namespace(engine: Engine) -> str:
    ns = f"bw-{secrets.token_hex(4)}"
    create_namespace(engine.db, ns)
    set_namespace_quota(engine.db, ns, 10_000_000, actor=CLI_ACTOR)
    set_queue_capacity(engine.db, ns, QUEUE, 10_000_000, actor=CLI_ACTOR)
    return ns


def _task(step_id: str) -> dict[str, Any]:
    return {"id": step_id, "kind": "task", "queue": QUEUE,
            "handler": {"name": "noop", "version": "1"}, "input": {}}


def _publish(engine: Engine, ns: str, definition_id: str, steps: list[Any]) -> None:
    doc = {"schema_version": 1, "definition_id": definition_id, "version": "1",
           "input_schema": {"type": "object"}, "failure_policy": "REVIEW", "steps": steps}
    store_definition(engine.db, CLI_ACTOR, ns,
                     validate_definition(doc, engine.plugins, engine.limits))


def _start(engine: Engine, ns: str, definition_id: str, inp: Any) -> str:
    result = start_workflow(engine, ns, StartRequest(definition_id, "1", inp,
                                                     secrets.token_hex(8)), actor=CLI_ACTOR)
    return result.instance.instance_id


def _drive(engine: Engine, ns: str) -> int:
    """Claim and complete no-op tasks of ``ns`` until none is claimable; return how many."""
    done = 0
    while True:
        got = claim(engine.db, namespace=ns, queue=QUEUE, worker_id="bench",
                    handlers=[HandlerRef("noop", "1")], max_tasks=1)
        if not got:
            return done
        for c in got:
            complete(engine.db, namespace=ns, task_id=c.task_id, attempt_id=c.attempt_id,
                     report=Report(ReportOutcome.SUCCEEDED, output={}), actor="worker:bench")
            consume_task_results(engine, ns, c.task_id)
            done += 1


def _seq10(engine: Engine, runs: int) -> tuple[float, float]:
    """seq10 start → SUCCEEDED, p50 and p99 in ms."""
    ns = _namespace(engine)
    _publish(engine, ns, "seq10", [_task(f"s{i}") for i in range(10)])
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        _start(engine, ns, "seq10", {})
        if _drive(engine, ns) != 10:
            raise RuntimeError("seq10 did not run 10 steps")
        times.append(time.perf_counter() - began)
    return statistics.median(times) * 1000, _percentile(times, 0.99) * 1000


def _scan_ms(engine: Engine, samples: int = 50) -> float:
    times = []
    for _ in range(samples):
        began = time.perf_counter()
        engine.db.read(lambda conn: due_candidates(conn, engine, 100), name="bench_scan")
        times.append(time.perf_counter() - began)
    return statistics.median(times) * 1000


def _waiters(engine: Engine, count: int) -> None:
    """``count`` instances waiting: half on a timer a day away, half on a signal."""
    ns = _namespace(engine)
    _publish(engine, ns, "far", [{"id": "nap", "kind": "timer", "seconds": 86400}])
    _publish(engine, ns, "sig", [{"id": "s", "kind": "signal", "name": "go",
                                  "correlation_key": {"$ref": "input.k"}}])
    lock = threading.Lock()
    left = [count]

    def worker() -> None:
        while True:
            with lock:
                if left[0] <= 0:
                    return
                left[0] -= 1
                n = left[0]
            _start(engine, ns, "far" if n % 2 else "sig", {"k": f"k{n}"})

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _tick_until_idle(url: str, go: Any) -> None:
    """One engine process's tick, back to back (the real ``run_tick``: batches of one
    namespace, ``SKIP LOCKED`` on instances another engine holds) until nothing is due."""
    db = Database.from_url(url, pool_size=2)
    engine = Engine(db=db, plugins=PluginHost.from_entry_points(), limits=Limits(),
                    node_id=f"bench-tick-{secrets.token_hex(3)}")
    try:
        go.wait()
        while run_tick(engine).candidates:
            pass
    finally:
        db.dispose()


def _burst(engine: Engine, count: int, *, then_task: bool = False) -> tuple[float, float, float]:
    """Lateness p50/p99 (s) and drain time (s) of ``count`` timers due in one second,
    drained by one engine process per core, each running its tick back to back.

    ``then_task``: each timer is followed by a task step, so lateness is measured to the
    successor's activation (its step row's creation) instead of the wait's settle time.
    """
    ns = _namespace(engine)
    steps: list[Any] = [{"id": "nap", "kind": "timer", "seconds": 3600}]
    _publish(engine, ns, "burst", [*steps, _task("after")] if then_task else steps)
    ids = [_start(engine, ns, "burst", {}) for _ in range(count)]
    w, p = weave_waits, weave_pending_advances
    spawn = multiprocessing.get_context("spawn")
    go = spawn.Event()
    engines = [spawn.Process(target=_tick_until_idle,
                             args=(engine.db.engine.url.render_as_string(hide_password=False),
                                   go))
               for _ in range(DRAIN_ENGINES)]
    for process in engines:
        process.start()  # importing takes a while: started before the clock runs

    def _due_soon(conn: sa.Connection) -> Any:
        due = engine.db.now(conn) + timedelta(seconds=2)
        for chunk in range(0, len(ids), 500):
            part = ids[chunk:chunk + 500]
            conn.execute(sa.update(w).where(w.c.instance_id.in_(part)).values(due_at=due))
            conn.execute(sa.update(p).where(p.c.instance_id.in_(part), p.c.kind == "TIMER")
                         .values(due_at=due))
        return due

    due = engine.db.transaction(_due_soon, name="bench_burst")
    while engine.db.read(lambda conn: engine.db.now(conn)) < due:
        time.sleep(0.005)
    began = time.perf_counter()
    go.set()
    for process in engines:
        process.join()
        if process.exitcode != 0:
            raise RuntimeError(f"a tick process exited with {process.exitcode}")
    drained = time.perf_counter() - began
    s = weave_steps
    query = (sa.select(s.c.created_at.label("settled_at"), w.c.due_at)
             .select_from(w.join(s, (s.c.instance_id == w.c.instance_id)
                                 & (s.c.step_id == "after")))
             if then_task else sa.select(w.c.settled_at, w.c.due_at))
    rows = engine.db.read(lambda conn: conn.execute(query.where(w.c.namespace == ns)).all(),
                          name="bench_burst_read")
    late = [(r.settled_at - r.due_at).total_seconds() for r in rows if r.settled_at is not None]
    if len(late) != count:
        raise RuntimeError(f"{len(late)} of {count} timers fired")
    return _percentile(late, 0.5), _percentile(late, 0.99), drained


@scenario("waits", "S4: seq10 and tick scan with N waiting instances; 1,000-timer burst")
def waits(ctx: BenchContext) -> list[Metric]:
    engine = _engine(ctx)
    waiting = ctx.pick(100, 1000, 100_000)
    runs = ctx.pick(5, 40, 200)
    try:
        base_p50, base_p99 = _seq10(engine, runs)
        base_scan = _scan_ms(engine)
        _waiters(engine, waiting)
        with_p50, with_p99 = _seq10(engine, runs)
        with_scan = _scan_ms(engine)
        burst = ctx.pick(100, 1000, 1000)
        p50, p99, drained = _burst(engine, burst)
        t50, t99, t_drained = _burst(engine, burst, then_task=True)
    finally:
        engine.db.dispose()
    return [
        Metric("seq10_p50_no_waiters", base_p50, "ms", note="in-process kernel, 1 worker"),
        Metric(f"seq10_p50_{waiting}_waiting", with_p50, "ms",
               note=f"ratio to no waiters {with_p50 / base_p50:.2f} (target ≤ 1.10)"),
        Metric("seq10_p99_no_waiters", base_p99, "ms"),
        Metric(f"seq10_p99_{waiting}_waiting", with_p99, "ms",
               note=f"ratio to no waiters {with_p99 / base_p99:.2f} (target ≤ 1.25)"),
        Metric("tick_scan_ms_no_waiters", base_scan, "ms"),
        Metric(f"tick_scan_ms_{waiting}_waiting", with_scan, "ms",
               note=f"ratio {with_scan / base_scan:.2f}: flat (due indexes)"),
        Metric("burst_lateness_p50", p50, "s", note="settled_at - due_at, database time"),
        Metric("burst_lateness_p99", p99, "s", note="target ≤ 1 s"),
        Metric("burst_drain_s", drained, "s",
               note=f"{DRAIN_ENGINES} engine processes' ticks, back to back"),
        Metric("burst_then_task_lateness_p50", t50, "s",
               note="timer → task: the successor step's activation - due_at"),
        Metric("burst_then_task_lateness_p99", t99, "s",
               note="no target of its own: the S4 target is for the timers"),
        Metric("burst_then_task_drain_s", t_drained, "s",
               note="creates 1 task per timer: the namespace quota row serialises"),
    ]


@scenario("signals", "S5: signal accepted → next task claimable, p50/p99")
def signals(ctx: BenchContext) -> list[Metric]:
    engine = _engine(ctx)
    count = ctx.pick(20, 300, 1000)
    try:
        ns = _namespace(engine)
        _publish(engine, ns, "s5", [{"id": "s", "kind": "signal", "name": "go",
                                     "correlation_key": {"$ref": "input.k"}}, _task("next")])
        ids = [_start(engine, ns, "s5", {"k": f"k{i}"}) for i in range(count)]
        lat = []
        for i, wid in enumerate(ids):
            began = time.perf_counter()
            acc = accept_signal(engine, ns, wid, SignalRequest(f"s5-{i}", "go", f"k{i}", {}),
                                actor=CLI_ACTOR)
            if acc.pending_id is not None:
                run_pending(engine, acc.pending_id)  # the route's fast path
            got = claim(engine.db, namespace=ns, queue=QUEUE, worker_id="bench",
                        handlers=[HandlerRef("noop", "1")], max_tasks=1)
            lat.append(time.perf_counter() - began)
            if len(got) != 1:
                raise RuntimeError("the next task was not claimable after the signal")
            complete(engine.db, namespace=ns, task_id=got[0].task_id,
                     attempt_id=got[0].attempt_id,
                     report=Report(ReportOutcome.SUCCEEDED, output={}), actor="worker:bench")
    finally:
        engine.db.dispose()
    ms = [x * 1000 for x in lat]
    return [Metric("signal_to_claimable_p50", _percentile(ms, 0.5), "ms",
                   note="accept + fast-path delivery + claim, in-process"),
            Metric("signal_to_claimable_p99", _percentile(ms, 0.99), "ms")]


__all__ = ["signals", "waits"]
