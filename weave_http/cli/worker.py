"""``weave worker module:attribute``: run an SDK ``Worker`` from the command line.

The attribute is a ``weave_sdk.worker.Worker`` or a callable returning one. The worker
reads ``WEAVE_URL``, ``WEAVE_TOKEN`` and ``WEAVE_NAMESPACE`` unless its client says
otherwise. SIGTERM or SIGINT stops claiming, drains in-flight tasks and exits 0.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from typing import Any

from weave_core.errors import BadRequestError
from weave_sdk.worker import Worker


def load_worker(target: str) -> Worker:
    """Import ``module:attribute`` (dotted attributes allowed) and return the Worker."""
    module_name, sep, attribute = target.partition(":")
    if not sep or not module_name or not attribute:
        raise BadRequestError(f"expected module:attribute, got {target!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # like python -m: modules of the working directory
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise BadRequestError(f"cannot import {module_name!r}: {exc}") from exc
    for part in attribute.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as exc:
            raise BadRequestError(f"{module_name!r} has no attribute {attribute!r}") from exc
    if not isinstance(obj, Worker) and callable(obj):
        obj = obj()
    if not isinstance(obj, Worker):
        raise BadRequestError(f"{target!r} is not a weave_sdk.worker.Worker")
    return obj


def _run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=getattr(logging, str(args.log_level).upper()),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    worker = load_worker(args.target)
    if args.concurrency is not None:
        worker.concurrency = args.concurrency
    handlers = ", ".join(f"{h.name}@{h.version}" for h in worker.handlers)
    print(f"weave worker: {worker.worker_id} on queue {worker.queue!r} ({handlers})",
          flush=True)
    worker.run()
    print(f"weave worker: stopped after {worker.completed} task(s)", flush=True)
    return 0


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Add ``worker`` to the ``weave`` command."""
    parser = subparsers.add_parser(
        "worker", help="run an SDK worker (module:attribute)",
        description="Run a weave_sdk Worker until SIGTERM/SIGINT, then drain and exit 0.",
    )
    parser.add_argument("target", metavar="MODULE:ATTRIBUTE")
    parser.add_argument("--concurrency", type=int, default=None, metavar="N",
                        help="override the worker's concurrency")
    parser.add_argument("--log-level", default="info",
                        choices=["debug", "info", "warning", "error"])
    parser.set_defaults(func=_run)
