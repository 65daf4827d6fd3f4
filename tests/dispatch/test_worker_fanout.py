"""The SDK Worker claims for every slot its reports free before it parks, so the tasks of
a fan-out started later reach it in one claim answer (against a real ``weave serve``).

Before, the claim parked as soon as the first slot of the previous instance freed, with
room for one task: the next fan-out's first task went to it and the others waited for the
claim after. The claims are watched by wrapping the worker's own request function, which
still sends every request to the server.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from tests.live_server import LiveServer
from weave_sdk import Client
from weave_sdk._json import loads
from weave_sdk.worker import Worker

BRANCHES = 4


def _fan() -> dict[str, Any]:
    def noop(step_id: str) -> dict[str, Any]:
        return {"id": step_id, "kind": "task", "queue": "fan",
                "handler": {"name": "noop", "version": "1"}, "input": {}}

    return {"schema_version": 1, "definition_id": "fan-out", "version": "1",
            "input_schema": {"type": "object"}, "failure_policy": "REVIEW",
            "steps": [{"id": "fan", "kind": "parallel",
                       "branches": {f"b{i}": [noop(f"f{i}")] for i in range(BRANCHES)}}]}


def test_a_fan_out_reaches_the_worker_in_one_claim(weave_server: LiveServer) -> None:
    client = Client(weave_server.base_url, weave_server.token, weave_server.namespace)
    client.publish(_fan())
    worker = Worker(client, queue="fan", concurrency=BRANCHES, wait_seconds=20)

    @worker.handler("noop", version="1")
    def noop(data: Any) -> dict[str, bool]:
        return {"ok": True}

    claims: list[tuple[dict[str, Any], int]] = []  # (request, tasks answered)
    in_flight: list[dict[str, Any]] = []
    post = worker._post

    def watched(conn: Any, path: str, body: bytes, timeout: float) -> Any:
        if not path.endswith("/claim"):
            return post(conn, path, body, timeout)
        request = loads(body)
        in_flight.append(request)
        data = post(conn, path, body, timeout)
        claims.append((request, len(data["tasks"])))
        return data

    worker._post = watched  # type: ignore[method-assign]  # observes, sends everything
    thread = threading.Thread(target=lambda: asyncio.run(worker.run_async()), daemon=True)
    thread.start()
    try:
        for run in range(3):
            # The first run creates the queue's counters. Once the instance before is done
            # the worker's claim for all its slots is on its way within moments (before, a
            # claim for one slot stayed parked until its 20 s wait ran out).
            if run:
                deadline = time.monotonic() + 3
                while not (in_flight and in_flight[-1]["max_tasks"] == BRANCHES
                           and in_flight[-1]["wait_seconds"] > 0):
                    assert time.monotonic() < deadline, in_flight[-3:]
                    time.sleep(0.01)
            answered = len(claims)
            handle = client.start("fan-out", {})
            handle.result(timeout=30)
            assert handle.describe().status == "SUCCEEDED"
        # The last instance's branches came in one answer, to a claim with room for all.
        delivering = [(request, n) for request, n in claims[answered:] if n]
        assert [(request["max_tasks"], n) for request, n in delivering] == [(BRANCHES,
                                                                              BRANCHES)]
    finally:
        worker.stop()
        thread.join(timeout=30)
        client.close()
    assert not thread.is_alive()
    # Nothing is left counted busy or reporting once the worker stopped.
    assert worker._busy == 0
    assert not worker._reporting
