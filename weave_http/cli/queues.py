"""``weave queue`` and ``weave quota``: queue capacity and the namespace task quota.

Both talk to the database directly (``--database-url``, default ``WEAVE_DATABASE_URL``),
like ``weave namespace``; the same settings exist over HTTP (``PUT .../queues/{queue}``,
``PUT .../quota``, permission ``admin``).
"""

from __future__ import annotations

import argparse
from typing import Any

from weave_core.access.identity import CLI_ACTOR
from weave_core.dispatch import set_namespace_quota, set_queue_capacity
from weave_http.cli.admin import _add_database_url, _open, add_json, print_outcome


def _set_capacity(args: argparse.Namespace) -> int:
    db = _open(args)
    try:
        state = set_queue_capacity(db, args.namespace, args.queue, args.capacity,
                                   actor=CLI_ACTOR)
    finally:
        db.dispose()
    print_outcome(args, f"queue {state.name}: capacity {state.capacity}, outstanding "
                  f"{state.outstanding}", {"namespace": args.namespace, "queue": state.name,
                                           "capacity": state.capacity,
                                           "outstanding": state.outstanding})
    return 0


def _set_quota(args: argparse.Namespace) -> int:
    db = _open(args)
    try:
        state = set_namespace_quota(db, args.namespace, args.quota, actor=CLI_ACTOR)
    finally:
        db.dispose()
    print_outcome(args, f"namespace {state.namespace}: task quota {state.task_quota}, "
                  f"outstanding {state.outstanding}",
                  {"namespace": state.namespace, "task_quota": state.task_quota,
                   "outstanding": state.outstanding})
    return 0


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Add ``queue set-capacity`` and ``quota set`` to the ``weave`` command."""
    queue = subparsers.add_parser("queue", help="manage dispatch queues")
    q_commands = queue.add_subparsers(dest="queue_command", metavar="COMMAND")
    q_commands.required = True
    cap = q_commands.add_parser("set-capacity", help="set a queue's capacity")
    cap.add_argument("--namespace", required=True, metavar="NS")
    cap.add_argument("queue", metavar="QUEUE")
    cap.add_argument("capacity", type=int, metavar="N")
    _add_database_url(cap)
    add_json(cap)
    cap.set_defaults(func=_set_capacity)

    quota = subparsers.add_parser("quota", help="manage namespace task quotas")
    n_commands = quota.add_subparsers(dest="quota_command", metavar="COMMAND")
    n_commands.required = True
    qset = n_commands.add_parser("set", help="set the namespace's outstanding-task quota")
    qset.add_argument("--namespace", required=True, metavar="NS")
    qset.add_argument("quota", type=int, metavar="N")
    _add_database_url(qset)
    add_json(qset)
    qset.set_defaults(func=_set_quota)
