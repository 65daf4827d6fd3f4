"""``weave export WORKFLOW_ID``: an instance's complete record as one JSON document.

Written before the retention purge removes a settled instance (docs/operators-guide.md):
the description (steps, activations, every task with its attempts, pending work, signals,
waits, poll rounds, operations, review), every transition with its audit entry, the
history's task events, and every event of every task — all read through the SDK, numbers
exact.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Final, TextIO

from weave_http.cli.values import _plain
from weave_http.cli.workflows import _connection_options, run_command
from weave_sdk import Client
from weave_sdk.exactjson import dumps

EXPORT_FORMAT: Final = 1


def export_record(client: Client, workflow_id: str) -> dict[str, Any]:
    """The complete record of one instance, as exact JSON values."""
    view = client.get_workflow(workflow_id)
    history: list[Any] = []
    task_events: list[Any] = []
    after = 0
    while True:
        page = client.history_page(workflow_id, after=after)
        history.extend(page.items)
        task_events.extend(page.task_events)
        if page.next_cursor is None:
            break
        after = page.next_cursor
    return {
        "export_format": EXPORT_FORMAT,
        "workflow": _plain(view),
        "history": _plain(history),
        "task_events": _plain(task_events),
        "task_event_log": {t.task_id: _plain(client.task_events(t.task_id)) for t in view.tasks},
    }


def _export(client: Client, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    record = export_record(client, args.workflow_id)
    text = dumps(record)
    if args.output is None:
        print(text, file=out)
        return 0
    Path(args.output).write_text(text + "\n", encoding="utf-8")
    print(f"exported {args.workflow_id} to {args.output}: {len(record['history'])} "
          f"transitions, {len(record['workflow']['tasks'])} tasks", file=out)
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``export`` to the ``weave`` command."""
    parser = subparsers.add_parser(
        "export", help="write one instance's complete record as JSON",
        description="Write an instance's complete record (view, history, attempts, events) "
        "as one JSON document, e.g. before the retention purge removes it.")
    parser.add_argument("workflow_id", metavar="WORKFLOW_ID")
    parser.add_argument("--output", default=None, metavar="FILE",
                        help="write to FILE instead of stdout")
    _connection_options(parser)
    parser.set_defaults(func=lambda a: run_command(_export, a))


__all__ = ["EXPORT_FORMAT", "export_record", "register"]
