"""``weave worker module:attribute``: run an SDK ``Worker`` from the command line.

The attribute is a ``weave_sdk.worker.Worker`` or a callable returning one. The worker
reads ``WEAVE_URL``, ``WEAVE_TOKEN`` and ``WEAVE_NAMESPACE`` unless its client says
otherwise. It logs on stderr (``--log-format text|json``, ``--log-level``): a start-up
line, one line per attempt, and why claims fail while the server is unreachable. SIGTERM
or SIGINT stops claiming, drains in-flight tasks and exits 0.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import TYPE_CHECKING, Any

from weave_http.cli.failures import CliError

if TYPE_CHECKING:  # the SDK is imported when the worker runs, not for --help
    from weave_sdk.worker import Worker

LOG_FORMATS = ("text", "json")
LOG_LEVELS = ("debug", "info", "warning", "error", "critical")
"""``weave_sdk.logs``' formats and levels (a test keeps them equal)."""


def load_worker(target: str) -> Worker:
    """Import ``module:attribute`` (dotted attributes allowed) and return the Worker."""
    from weave_sdk.worker import Worker

    module_name, sep, attribute = target.partition(":")
    if not sep or not module_name or not attribute:
        raise CliError("bad_target", f"expected module:attribute, got {target!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # like python -m: modules of the working directory
    from weave_sdk.errors import WeaveSDKError

    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise CliError("bad_target", f"cannot import {module_name!r}: {exc}") from exc
    except WeaveSDKError:
        raise  # e.g. Client() without WEAVE_URL: error[bad_configuration]
    except Exception as exc:  # the module itself failed: say where, not "a bug in weave"
        raise CliError("bad_target", f"importing {module_name!r} failed: "
                       f"{type(exc).__name__}: {exc}") from exc
    for part in attribute.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as exc:
            raise CliError("bad_target",
                           f"{module_name!r} has no attribute {attribute!r}") from exc
    if not isinstance(obj, Worker) and callable(obj):
        obj = obj()
    if not isinstance(obj, Worker):
        raise CliError("bad_target", f"{target!r} is not a weave_sdk.worker.Worker")
    if not obj.handlers:
        raise CliError("bad_target", f"the worker {target!r} has no handlers")
    return obj


def _run(args: argparse.Namespace) -> int:
    from weave_sdk.logs import configure_logging

    configure_logging("json" if args.json else args.log_format, args.log_level)
    worker = load_worker(args.target)
    if args.concurrency is not None:
        if not 1 <= args.concurrency <= 256:
            raise CliError("bad_argument", "--concurrency must be 1..256")
        worker.concurrency = args.concurrency
    worker.run()
    return 0


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Add ``worker`` to the ``weave`` command."""
    parser = subparsers.add_parser(
        "worker", help="run an SDK worker (module:attribute)",
        description="Run a weave_sdk Worker until SIGTERM/SIGINT, then drain and exit 0. "
        "Logs go to stderr: a start-up line, then one line per attempt.",
    )
    parser.add_argument("target", metavar="MODULE:ATTRIBUTE")
    parser.add_argument("--concurrency", type=int, default=None, metavar="N",
                        help="override the worker's concurrency")
    parser.add_argument("--log-level", default="info", choices=LOG_LEVELS,
                        help="default info; debug also shows every HTTP request of httpx")
    parser.add_argument("--log-format", default="text", choices=LOG_FORMATS,
                        help="text (default) or json: one JSON object per line")
    parser.add_argument("--json", action="store_true", help="the same as --log-format json")
    parser.set_defaults(func=_run)
