"""The handlers the end-to-end workers run (one SDK Worker serves them all)."""

from __future__ import annotations

from typing import Any

from weave_sdk import Client
from weave_sdk.worker import NonRetryableError, TaskContext, Worker

QUEUE = "e2e"


def build_worker(client: Client, *, queue: str = QUEUE, concurrency: int = 4) -> Worker:
    """A Worker with ``echo``, ``inc``, ``tag``, ``refuse`` and ``noop`` (all version 1)."""
    worker = Worker(client, queue=queue, concurrency=concurrency, wait_seconds=2,
                    shutdown_grace=10)

    @worker.handler("echo")
    def echo(data: Any) -> Any:
        return data

    @worker.handler("inc")
    def inc(data: dict[str, Any]) -> dict[str, Any]:
        return {"n": data["n"] + 1}

    @worker.handler("tag")
    def tag(data: Any, ctx: TaskContext) -> dict[str, Any]:
        return {"handler": ctx.handler, "task_id": ctx.task_id, "input": data}

    @worker.handler("refuse")
    def refuse(data: Any) -> None:
        raise NonRetryableError("the business refused", type="business_refusal",
                                details={"input": data})

    @worker.handler("noop")
    def noop(data: Any) -> dict[str, bool]:
        return {"ok": True}

    return worker
