"""The order flow's worker: ``weave worker examples.orders.worker:worker``.

It reads ``WEAVE_URL``, ``WEAVE_TOKEN`` and ``WEAVE_NAMESPACE``.
"""

from __future__ import annotations

from examples.orders.handlers import HANDLERS
from weave_sdk import Client
from weave_sdk.worker import Worker


def worker() -> Worker:
    """The worker of queue ``orders`` with every handler of the flow."""
    return Worker(Client(), queue="orders", handlers=HANDLERS, concurrency=4)
