"""The SDK Worker end to end against a real ``weave serve`` (subprocess), incl. SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import httpx
import pydantic
import pytest

from tests.live_server import LiveServer, weave_command
from weave_sdk import Client
from weave_sdk._json import dumps, loads
from weave_sdk.worker import NonRetryableError, RetryableError, TaskContext, Worker


class Order(pydantic.BaseModel):
    order_id: str
    amount: Decimal


class Priced(pydantic.BaseModel):
    order_id: str
    total: Decimal


def api(server: LiveServer, method: str, path: str, doc: Any = None) -> Any:
    response = httpx.request(
        method, f"{server.base_url}/v1/namespaces/{server.namespace}{path}",
        content=None if doc is None else dumps(doc).encode(),
        headers={"Authorization": f"Bearer {server.token}", "content-type": "application/json"},
        timeout=30,
    )
    assert response.status_code in (200, 201), response.text
    return loads(response.content)


def create(server: LiveServer, queue: str, handler: str, data: Any, **kw: Any) -> str:
    doc = {"queue": queue, "handler": handler, "input": data, **kw}
    return str(api(server, "POST", "/tasks", doc)["task_id"])


def wait_settled(server: LiveServer, task_ids: list[str], timeout: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        tasks = {t: api(server, "GET", f"/tasks/{t}") for t in task_ids}
        if all(t["status"] not in ("PENDING", "RUNNING") for t in tasks.values()):
            return tasks
        assert time.monotonic() < deadline, tasks
        time.sleep(0.1)


@pytest.fixture
def running_worker(weave_server: LiveServer) -> Iterator[Worker]:
    client = Client(weave_server.base_url, weave_server.token, weave_server.namespace)
    worker = Worker(client, queue="shop", concurrency=4, wait_seconds=2)
    calls: list[int] = []

    @worker.handler("price", version="1")
    def price(order: Order) -> Priced:
        return Priced(order_id=order.order_id, total=order.amount * 2)

    @worker.handler("price", version="2")
    async def price_async(order: Order, ctx: TaskContext) -> dict[str, Any]:
        await asyncio.sleep(0.01)
        return {"order_id": order.order_id, "attempt": ctx.attempt_no, "ratio": 0.5}

    @worker.handler("refuse", version="1")
    def refuse(data: Any) -> None:
        raise NonRetryableError("not allowed", type="forbidden", details={"why": "policy"})

    @worker.handler("flaky", version="1")
    def flaky(data: Any) -> str:
        calls.append(1)
        if len(calls) < 2:
            raise RetryableError("later")
        return "ok"

    thread = threading.Thread(target=lambda: asyncio.run(worker.run_async()), daemon=True)
    thread.start()
    yield worker
    worker.stop()
    thread.join(timeout=30)
    assert not thread.is_alive()
    client.close()


def test_worker_runs_handlers(weave_server: LiveServer, running_worker: Worker) -> None:
    ids = {
        "v1": create(weave_server, "shop", "price", {"order_id": "o1", "amount": Decimal("1.10")}),
        "v2": create(weave_server, "shop", "price", {"order_id": "o2", "amount": 3},
                     handler_version="2"),
        "refuse": create(weave_server, "shop", "refuse", {}),
        "flaky": create(weave_server, "shop", "flaky", {}, backoff_seconds=0),
        "bad_input": create(weave_server, "shop", "price", {"order_id": 5}),
    }
    tasks = wait_settled(weave_server, list(ids.values()))
    by = {name: tasks[task_id] for name, task_id in ids.items()}
    assert by["v1"]["status"] == "SUCCEEDED"
    assert by["v1"]["result"] == {"order_id": "o1", "total": Decimal("2.2")}
    assert by["v2"]["result"] == {"order_id": "o2", "attempt": 1, "ratio": Decimal("0.5")}
    assert by["refuse"]["status"] == "FAILED"
    assert by["refuse"]["error"] == {"type": "forbidden", "message": "not allowed",
                                     "retryable": False, "details": {"why": "policy"}}
    assert by["flaky"]["status"] == "SUCCEEDED" and by["flaky"]["attempts_used"] == 2
    assert by["bad_input"]["status"] == "FAILED"
    assert by["bad_input"]["error"]["type"] == "invalid_input"


def test_many_tasks_through_claim_next(weave_server: LiveServer, running_worker: Worker) -> None:
    ids = [create(weave_server, "shop", "price", {"order_id": f"o{i}", "amount": i})
           for i in range(40)]
    tasks = wait_settled(weave_server, ids)
    assert {t["status"] for t in tasks.values()} == {"SUCCEEDED"}


def test_sigterm_mid_task_finishes_and_exits_zero(weave_server: LiveServer) -> None:
    env = {**os.environ, "WEAVE_URL": weave_server.base_url, "WEAVE_TOKEN": weave_server.token,
           "WEAVE_NAMESPACE": weave_server.namespace, "WORKER_QUEUE": "slow"}
    command = weave_command("worker", "tests.dispatch.worker_app:worker")
    from weave_http.cli import COMMAND_MODULES

    if "worker" not in COMMAND_MODULES:  # until the lead registers the command
        command = [sys.executable, "-c",
                   "import argparse, sys; from weave_http.cli import worker; "
                   "p = argparse.ArgumentParser(); worker.register(p.add_subparsers()); "
                   "a = p.parse_args(sys.argv[1:]); sys.exit(a.func(a))",
                   "worker", "tests.dispatch.worker_app:worker"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, cwd=os.getcwd())
    try:
        task_id = create(weave_server, "slow", "slow", {"seconds": 2})
        deadline = time.monotonic() + 20
        while api(weave_server, "GET", f"/tasks/{task_id}")["status"] != "RUNNING":
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, output
    assert "worker stopped" in output and "tasks_completed=1" in output, output
    assert "outcome=succeeded" in output, output  # the busy slot finished its attempt
    task = api(weave_server, "GET", f"/tasks/{task_id}")
    assert task["status"] == "SUCCEEDED" and task["result"] == {"slept": 2}
