"""``weave bench dispatch`` and ``dispatch_idle``: the worker protocol's hot path and idle cost.

``dispatch``: claim → complete round trips per second through a real ``weave serve``
subprocess, with 1, 4 and 16 worker slots. Each slot is a thread with its own HTTP
connection that claims once and then completes every task with ``claim_next`` (one request
per task, as the SDK worker does). Tasks are created beforehand, so only dispatch counts.
Ratios: 1 slot over L3_1, 4 and 16 slots over L3_4 (each task is two transactions: the
result and the next claim).

``dispatch_idle`` (S6): 16 workers long-poll an empty queue of an in-process server for a
few seconds; every statement the engine sends is counted with a SQLAlchemy listener
(performance_schema is usually off). Target: ≤ 1 query per second per idle worker.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import uvicorn
from sqlalchemy import event

from weave_bench import BenchContext, Metric, scenario
from weave_core.access.identity import CLI_ACTOR, Permission, create_namespace, create_token
from weave_core.dispatch import TaskSpec, create_task, set_namespace_quota, set_queue_capacity
from weave_core.engine import Engine
from weave_core.foundation import exactjson
from weave_core.foundation.limits import Limits
from weave_core.plugins.host import PluginHost
from weave_core.storage.db import Database
from weave_http.app import create_app

_LISTEN = re.compile(r"listening on (http://\S+)")
HANDLERS = [{"name": "noop", "version": "1"}]


@contextmanager
def _serve(database_url: str) -> Iterator[str]:
    process = subprocess.Popen(
        [sys.executable, "-c", "import sys; from weave_http.cli import main; sys.exit(main())",
         "serve", "--host", "127.0.0.1", "--port", "0", "--database-url", database_url,
         "--log-level", "warning"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    assert process.stdout is not None
    url = None
    deadline = time.monotonic() + 30
    for line in process.stdout:
        match = _LISTEN.search(line)
        if match:
            url = match.group(1)
            break
        if time.monotonic() > deadline:
            break
    if url is None:
        process.kill()
        raise RuntimeError("weave serve did not start")
    drain = threading.Thread(target=lambda: [None for _ in process.stdout or ()], daemon=True)
    drain.start()
    try:
        yield url
    finally:
        process.terminate()
        process.wait(timeout=15)


def _tenant(db: Database) -> tuple[str, str]:
    namespace = f"bench-{secrets.token_hex(4)}"
    create_namespace(db, namespace)
    token = create_token(db, namespace, [Permission.WORK, Permission.ADMIN])
    set_namespace_quota(db, namespace, 1_000_000, actor=CLI_ACTOR)
    set_queue_capacity(db, namespace, "bench", 1_000_000, actor=CLI_ACTOR)
    return namespace, token


def _post(http: httpx.Client, path: str, doc: Any) -> Any:
    response = http.post(path, content=exactjson.dumps(doc).encode())
    if response.status_code != 200:
        raise RuntimeError(f"{path}: {response.status_code} {response.text}")
    return exactjson.loads(response.content)


def _slot(base: str, token: str, ns: str, done: list[int]) -> None:
    headers = {"Authorization": f"Bearer {token}", "content-type": "application/json"}
    with httpx.Client(base_url=f"{base}/v1/namespaces/{ns}", headers=headers,
                      timeout=30) as http:
        count = 0
        while True:
            tasks = _post(http, "/queues/bench/claim",
                          {"worker_id": "bench", "handlers": HANDLERS, "max_tasks": 1})["tasks"]
            if not tasks:
                break
            while tasks:
                task = tasks[0]
                answer = _post(http, f"/tasks/{task['task_id']}/complete", {
                    "attempt_id": task["attempt_id"], "outcome": "succeeded",
                    "output": {"ok": True},
                    "claim_next": {"worker_id": "bench", "handlers": HANDLERS, "max_tasks": 1}})
                count += 1
                tasks = answer["next_tasks"]
        done.append(count)


@scenario("dispatch", "claim → complete round trips/s with 1, 4, 16 worker slots (vs L3)")
def dispatch(ctx: BenchContext) -> list[Metric]:
    db = Database.from_url(ctx.database_url, pool_size=4)
    metrics: list[Metric] = []
    try:
        with _serve(ctx.database_url) as base:
            for slots in (1, 4, 16):
                namespace, token = _tenant(db)
                total = ctx.pick(16, 400, 3000)
                for i in range(total):
                    create_task(db, namespace=namespace, actor=CLI_ACTOR, spec=TaskSpec(
                        queue="bench", handler="noop", handler_version="1", input={"i": i}))
                done: list[int] = []
                threads = [threading.Thread(target=_slot, args=(base, token, namespace, done))
                           for _ in range(slots)]
                start = time.perf_counter()
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                elapsed = time.perf_counter() - start
                if sum(done) != total:
                    raise RuntimeError(f"{sum(done)} of {total} tasks completed")
                metrics.append(Metric(
                    f"round_trips_{slots}", total / elapsed, "tasks/s",
                    baseline="L3_1" if slots == 1 else "L3_4",
                    note=f"{slots} slot(s), complete with claim_next, real weave serve"))
    finally:
        db.dispose()
    return metrics


@scenario("dispatch_idle", "S6: database queries/s of 16 idle long-polling workers")
def dispatch_idle(ctx: BenchContext) -> list[Metric]:
    workers = 16
    seconds = {"tiny": 2.0, "small": 6.0, "full": 20.0}[ctx.size]
    db = Database.from_url(ctx.database_url, pool_size=8)
    engine = Engine(db=db, plugins=PluginHost.from_plugins([]), limits=Limits(),
                    node_id="bench-idle")
    namespace, token = _tenant(db)
    statements = [0]

    def count(*_args: Any) -> None:
        statements[0] += 1

    config = uvicorn.Config(create_app(engine), host="127.0.0.1", port=0, log_level="error")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    base = f"http://127.0.0.1:{port}/v1/namespaces/{namespace}"
    stop = threading.Event()

    async def poller() -> None:
        headers = {"Authorization": f"Bearer {token}", "content-type": "application/json"}
        async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as http:
            while not stop.is_set():
                await http.post("/queues/idle/claim", content=exactjson.dumps(
                    {"worker_id": "idle", "handlers": HANDLERS, "wait_seconds": 30}).encode())

    async def pollers() -> None:
        tasks = [asyncio.ensure_future(poller()) for _ in range(workers)]
        await asyncio.sleep(1.0)  # every worker is inside its long poll
        event.listen(db.engine, "before_cursor_execute", count)
        event.listen(db.engine, "commit", count)
        start = time.perf_counter()
        await asyncio.sleep(seconds)
        elapsed = time.perf_counter() - start
        event.remove(db.engine, "before_cursor_execute", count)
        event.remove(db.engine, "commit", count)
        stop.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        metrics.append(Metric("idle_queries_per_worker", statements[0] / elapsed / workers,
                              "queries/s", note=f"{workers} idle workers, statements + commits "
                              "counted in the engine (target ≤ 1)"))

    metrics: list[Metric] = []
    try:
        asyncio.run(pollers())
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        db.dispose()
    return metrics


__all__ = ["dispatch", "dispatch_idle"]
