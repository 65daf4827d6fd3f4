"""Several engine processes: duplicate consumers race on the same due rows (T6), and the
seeds' process regression (kill -9 the only engine, report while none runs, start two)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from tests.runtime.conftest import make_engine
from tests.runtime.helpers import (
    definition,
    instance,
    new_namespace,
    publish,
    report,
    start,
    task,
    work,
)
from weave_core.engine import Engine
from weave_core.foundation import exactjson
from weave_core.plugins.host import PluginHost
from weave_core.runtime import consume_task_results
from weave_core.storage.db import Database
from weave_core.storage.migrate import upgrade
from weave_core.storage.schema import weave_activations, weave_audit, weave_inbox, weave_tasks

ROOT = Path(__file__).resolve().parents[2]


class Engines:
    def __init__(self, url: str) -> None:
        self.url = url
        self.procs: list[subprocess.Popen[str]] = []

    def spawn(self, node_id: str, interval: float = 0.05) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.runtime.engine_process", self.url, node_id,
             str(interval)],
            cwd=ROOT, stdout=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        self.procs.append(proc)
        return proc

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
            if proc.stdout is not None:
                proc.stdout.close()


@pytest.fixture
def own_url(empty_mysql_url: str) -> str:
    """A database of this test alone: no other engine (e.g. a session's live server with
    its tick) may touch these rows, or "no engine runs" would not hold."""
    upgrade(empty_mysql_url)
    return empty_mysql_url


@pytest.fixture
def engine(own_url: str, plugin_host: PluginHost) -> Iterator[Engine]:
    db = Database.from_url(own_url)
    yield make_engine(db, plugin_host, node_id="test-process")
    db.dispose()


@pytest.fixture
def engines(own_url: str) -> Iterator[Engines]:
    procs = Engines(own_url)
    yield procs
    procs.stop_all()


def _wait(predicate: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not reached in time")


def _statuses(engine: Engine, ids: list[str]) -> Counter[str]:
    return Counter(instance(engine, wid).status for wid in ids)


def _check_no_duplicates(engine: Engine, ns: str) -> None:
    a, t, i, au = weave_activations, weave_tasks, weave_inbox, weave_audit

    def _read(conn: sa.Connection) -> tuple[list[int], list[int], list[str], list[str]]:
        tasks_per_activation = [int(n) for n in conn.execute(
            sa.select(sa.func.count()).select_from(t).where(t.c.namespace == ns)
            .group_by(t.c.owner_id)).scalars()]
        activations_per_step = [int(n) for n in conn.execute(
            sa.select(sa.func.count()).select_from(a).where(a.c.namespace == ns)
            .group_by(a.c.instance_id, a.c.step_id)).scalars()]
        states = list(conn.execute(sa.select(i.c.state).where(i.c.namespace == ns)).scalars())
        consumed = list(conn.execute(
            sa.select(au.c.metadata).where(au.c.namespace == ns,
                                           au.c.action == "workflow.result.consumed")
        ).scalars())
        return tasks_per_activation, activations_per_step, states, consumed

    per_activation, per_step, states, consumed = engine.db.read(_read)
    assert set(per_activation) == {1}, "an activation has more than one task"
    assert set(per_step) == {1}, "a step was activated twice"
    assert set(states) == {"PROCESSED"}
    sources = Counter(exactjson.loads(m)["source"]["inbox_id"] for m in consumed)
    assert sources and set(sources.values()) == {1}, "an inbox row was consumed twice"
    assert len(sources) == len(states)


@pytest.mark.timeout(180)
def test_three_engine_processes_and_the_fast_path_consume_each_row_once(
    engine: Engine, engines: Engines
) -> None:
    ns = new_namespace(engine)
    publish(engine, ns, definition("dup", [
        task("a"),
        {"id": "fan", "kind": "parallel", "branches": {"x": [task("x")], "y": [task("y")]}},
        task("b"),
    ]))
    ids = [start(engine, ns, "dup", {}).instance.instance_id for _ in range(12)]
    for n in range(3):
        engines.spawn(f"dup-node-{n}", interval=0.02)
    handlers = ["a", "x", "y", "b"]
    stop = threading.Event()

    def worker() -> None:
        # completes tasks; the fast path in this process races the three engines
        while not stop.is_set():
            for claimed in work(engine, ns, handlers=handlers, max_tasks=8):
                report(engine, ns, claimed, {"h": claimed.handler}, consume=False)
                consume_task_results(engine, ns, claimed.task_id)

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for th in threads:
        th.start()
    try:
        _wait(lambda: _statuses(engine, ids)["SUCCEEDED"] == len(ids), timeout=120)
    finally:
        stop.set()
        for th in threads:
            th.join()
    _check_no_duplicates(engine, ns)


@pytest.mark.timeout(180)
def test_kill_the_only_engine_report_while_none_runs_then_two_engines_finish(
    engine: Engine, engines: Engines
) -> None:
    ns = new_namespace(engine)
    publish(engine, ns, definition("reg", [task("a"), task("b"), task("c")]))
    only = engines.spawn("reg-only", interval=0.05)
    wid = start(engine, ns, "reg", {}).instance.instance_id
    (a,) = work(engine, ns, handlers=["a"])
    report(engine, ns, a, {}, consume=False)
    _wait(lambda: instance(engine, wid).revision > 2)  # the only engine consumed it
    os.kill(only.pid, signal.SIGKILL)
    only.wait(10)
    (b,) = work(engine, ns, handlers=["b"])
    report(engine, ns, b, {}, consume=False)  # accepted while no engine runs a tick
    time.sleep(0.5)
    assert [s for s in engine.db.read(lambda c: list(c.execute(
        sa.select(weave_inbox.c.state).where(weave_inbox.c.namespace == ns)
        .order_by(weave_inbox.c.id)).scalars()))] == ["PROCESSED", "PENDING"]
    engines.spawn("reg-two-1")
    engines.spawn("reg-two-2")
    _wait(lambda: bool(work_pending(engine, ns)))
    (c,) = work(engine, ns, handlers=["c"])
    report(engine, ns, c, {}, consume=False)
    _wait(lambda: instance(engine, wid).status == "SUCCEEDED")
    _check_no_duplicates(engine, ns)


def work_pending(engine: Engine, ns: str) -> list[str]:
    t = weave_tasks
    return list(engine.db.read(lambda c: list(c.execute(
        sa.select(t.c.task_id).where(t.c.namespace == ns, t.c.status == "PENDING")).scalars())))
