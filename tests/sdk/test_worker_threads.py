"""The SDK Worker off the main thread, as a context manager, its stats and its logs.

Against the session's real ``weave serve`` on MariaDB (tests/live_server.py).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time

import pytest

from tests.dispatch.test_worker_e2e import create, wait_settled
from tests.live_server import LiveServer
from weave_sdk import Client
from weave_sdk.worker import TaskContext, Worker, WorkerStats


def _worker(server: LiveServer, queue: str, **kw: object) -> Worker:
    client = Client(server.base_url, server.token, server.namespace)
    return Worker(client, queue=queue, wait_seconds=1, **kw)  # type: ignore[arg-type]


def test_run_in_a_plain_thread_installs_no_signal_handler(weave_server: LiveServer) -> None:
    worker = _worker(weave_server, "threaded")

    @worker.handler("double")
    def double(data: dict[str, int]) -> dict[str, int]:
        return {"n": data["n"] * 2}

    errors: list[BaseException] = []

    def target() -> None:
        try:
            worker.run()  # install_signal_handlers=True is ignored off the main thread
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=target)
    thread.start()
    try:
        task_id = create(weave_server, "threaded", "double", {"n": 21})
        task = wait_settled(weave_server, [task_id])[task_id]
    finally:
        worker.stop()
        thread.join(timeout=15)
    assert not thread.is_alive() and errors == []
    assert task["status"] == "SUCCEEDED" and task["result"] == {"n": 42}


def test_running_context_reports_and_logs_a_raising_handler(
    weave_server: LiveServer, caplog: pytest.LogCaptureFixture
) -> None:
    worker = _worker(weave_server, "raising", concurrency=2)

    @worker.handler("boom")
    def boom(data: object) -> None:
        raise KeyError("sku-7")

    @worker.handler("wait_async")
    async def wait_async(data: dict[str, str], ctx: TaskContext) -> dict[str, str]:
        await asyncio.sleep(0.01)
        return {"echo": data["s"], "handler": ctx.handler}

    with caplog.at_level(logging.WARNING, logger="weave_sdk.worker"), worker.running():
        boom_id = create(weave_server, "raising", "boom", {}, max_attempts=1)
        echo_id = create(weave_server, "raising", "wait_async", {"s": "x"})
        tasks = wait_settled(weave_server, [boom_id, echo_id])
    failed = tasks[boom_id]
    assert failed["status"] == "FAILED"
    assert failed["error"]["type"] == "KeyError" and "sku-7" in failed["error"]["message"]
    trace = failed["error"]["details"]["traceback"]  # bounded, the worker's frames left out
    assert trace.startswith("Traceback") and 'raise KeyError("sku-7")' in trace
    assert "_worker_attempts.py" not in trace
    line = next(r for r in caplog.records if getattr(r, "handler", None) == "boom@1")
    assert line.levelno == logging.WARNING and line.getMessage() == "attempt failed"
    assert (line.task, line.attempt, line.outcome, line.error_type) == (  # type: ignore[attr-defined]
        boom_id, 1, "failed", "KeyError")
    assert tasks[echo_id]["result"] == {"echo": "x", "handler": "wait_async"}


def test_stats_count_tasks_and_cpu(weave_server: LiveServer) -> None:
    worker = _worker(weave_server, "counted")

    @worker.handler("noop")
    def noop(data: object) -> dict[str, bool]:
        return {"ok": True}

    before = worker.stats
    assert before == WorkerStats(0, 0.0) and before.cpu_per_task is None
    ids = [create(weave_server, "counted", "noop", {"i": i}) for i in range(20)]
    with worker.running():
        wait_settled(weave_server, ids)
        deadline = time.monotonic() + 10
        while worker.stats.tasks_completed < 20 and time.monotonic() < deadline:
            time.sleep(0.01)
    stats = worker.stats
    assert stats.tasks_completed == 20
    assert stats.cpu_seconds > 0 and stats.cpu_per_task == stats.cpu_seconds / 20
