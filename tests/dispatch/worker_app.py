"""A worker module for ``weave worker tests.dispatch.worker_app:worker`` (end-to-end tests)."""

from __future__ import annotations

import os
import time

from weave_sdk import Client
from weave_sdk.worker import Worker

worker = Worker(Client(), queue=os.environ.get("WORKER_QUEUE", "slow"), concurrency=2,
                wait_seconds=2, shutdown_grace=20)


@worker.handler("slow", version="1")
def slow(data: dict[str, int]) -> dict[str, int]:
    time.sleep(data["seconds"])
    return {"slept": data["seconds"]}
