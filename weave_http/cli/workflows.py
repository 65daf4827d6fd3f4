"""``weave start``, ``weave show`` and ``weave list``: instances through the SDK client.

Human-readable tables by default; ``--json`` prints the server's view as exact JSON (one
document on stdout) for scripts. Connection settings come from ``--url``/``--token``/
``--namespace``, else ``WEAVE_URL``/``WEAVE_TOKEN``/``WEAVE_NAMESPACE``. Any refusal prints
``error[<code>]: <detail>`` on stderr and exits 1; ``weave start --wait`` also exits 1 when
the instance ends other than ``SUCCEEDED`` (``error[workflow_failed]``,
``error[workflow_cancelled]``, ``error[workflow_needs_review]``, ``error[workflow_timeout]``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from weave_http.cli.failures import one_line, report
from weave_http.cli.values import (
    UsageError,
    _bool_arg,
    _cell,
    _plain,
    _time_arg,
    _when,
    dumps,
    read_input,
    table,
)

if TYPE_CHECKING:  # the SDK is imported when a command runs, not for --help
    from weave_sdk import Client
    from weave_sdk.workflows import HistoryEvent, WorkflowDescription, WorkflowExecution

STATUSES: tuple[str, ...] = ("RUNNING", "WAITING", "CANCELLING", "NEEDS_REVIEW", "SUCCEEDED",
                             "FAILED", "CANCELLED")
"""``weave_sdk.workflows.WorkflowStatus``'s values (a test keeps them equal)."""

# --- rendering -----------------------------------------------------------------------


def _summary(execution: WorkflowExecution, out: TextIO) -> None:
    status = execution.status.value + (" (paused)" if execution.paused else "")
    rows = [
        ("workflow", execution.workflow_id),
        ("definition", f"{execution.definition_id} version {execution.version}"),
        ("status", status),
        ("review reason", execution.review_reason or "-"),
        ("revision", str(execution.revision)),
        ("control version", str(execution.control_version)),
        ("failure policy", execution.failure_policy),
        ("idempotency", f"{execution.operation_type} / {execution.idempotency_key}"),
        ("created", f"{_when(execution.created_at)} by {execution.created_by}"),
        ("updated", _when(execution.updated_at)),
        ("deadline", _when(execution.deadline_at)),
        ("settled", _when(execution.settled_at)),
        ("input", dumps(_plain(execution.input))),
        ("output", dumps(_plain(execution.output))),
    ]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key.ljust(width)}  {value}", file=out)


def render_description(view: WorkflowDescription, out: TextIO) -> None:
    _summary(view, out)
    print(file=out)
    print("steps", file=out)
    table(["STEP", "PHASE", "VERSION", "ACTIVATION", "REASON", "OUTPUT"], [
        [s.step_id, s.phase, str(s.version), s.activation_id or "-", s.reason or "-",
         _cell(s.output)]
        for s in view.steps
    ], out)
    print(file=out)
    print("tasks", file=out)
    table(["TASK", "STEP", "HANDLER", "QUEUE", "STATUS", "ATTEMPTS", "ERROR"], [
        [t.task_id, t.step_id, f"{t.handler}@{t.handler_version}", t.queue, t.status,
         f"{t.attempts_used}/{t.max_attempts}", _cell(t.error)]
        for t in view.tasks
    ], out)
    if view.pending:
        print(file=out)
        print("pending", file=out)
        table(["ID", "KIND", "REASON", "DUE"], [
            [str(p.id), p.kind, p.reason or "-", _when(p.due_at)] for p in view.pending
        ], out)


def render_history(events: Sequence[HistoryEvent], out: TextIO) -> None:
    def change(e: HistoryEvent) -> str:
        if e.from_state is None and e.to_state is None:
            return "-"
        return f"{e.from_state or '-'} -> {e.to_state or '-'}"

    table(["REV", "TIME", "KIND", "STEP", "CHANGE", "REASON", "ACTOR"], [
        [str(e.revision), _when(e.occurred_at), e.kind, e.step_id or "-", change(e),
         e.reason or "-", e.audit.actor if e.audit is not None else "-"]
        for e in events
    ], out)


def render_list(items: Sequence[WorkflowExecution], out: TextIO) -> None:
    table(["WORKFLOW", "DEFINITION", "VERSION", "STATUS", "PAUSED", "CREATED"], [
        [w.workflow_id, w.definition_id, w.version, w.status.value,
         "yes" if w.paused else "no", _when(w.created_at)]
        for w in items
    ], out)


# --- commands ------------------------------------------------------------------------


def _start(client: Client, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    handle = client.start(
        args.definition_id, read_input(args.input), version=args.version,
        idempotency_key=args.idempotency_key, operation_type=args.operation_type,
    )
    started = handle.started
    assert started is not None
    if args.json and not args.wait:
        print(dumps({"created": handle.created, "workflow": _plain(started)}), file=out)
        return 0
    if not args.json:  # the id first: an interrupted --wait still says which instance
        what = "started" if handle.created else "existing"
        print(f"{what}: {started.workflow_id} ({started.definition_id} version "
              f"{started.version}, {started.status.value})", file=out, flush=True)
    if not args.wait:
        return 0
    from weave_sdk.workflows import WorkflowError, WorkflowTimeoutError

    try:
        handle.result(timeout=args.timeout)
    except KeyboardInterrupt:
        print(f"error[interrupted]: stopped waiting; {started.workflow_id} goes on "
              f"(weave show {started.workflow_id})", file=err)
        return 130
    except WorkflowError as exc:
        if args.json:
            print(dumps({"created": handle.created, "workflow": _plain(exc.workflow)}), file=out)
        code = "workflow_timeout" if isinstance(exc, WorkflowTimeoutError) else (
            f"workflow_{exc.status.value.lower()}")
        print(f"error[{code}]: {exc}", file=err)
        from weave_http.cli.views import render_failure

        render_failure(exc, err)
        return 1
    final = handle.describe()
    if args.json:
        print(dumps({"created": handle.created, "workflow": _plain(final)}), file=out)
    else:
        print(f"{final.status.value}: {final.workflow_id} ({final.definition_id} version "
              f"{final.version})", file=out)
        print(f"output: {dumps(_plain(final.output))}", file=out)
    return 0


def _show(client: Client, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    workflow_id = args.workflow_id
    if (workflow_id is None) == (args.key is None):
        raise UsageError("give a WORKFLOW_ID or --key KEY (not both)")
    if args.key is not None:
        found = client.find_workflow(args.key, operation_type=args.operation_type)
        if found is None:
            print(f"error[not_found]: no instance was started with idempotency key "
                  f"{args.key!r} (operation type {args.operation_type or 'start'})", file=err)
            return 1
        workflow_id = found.workflow_id
    view = client.get_workflow(workflow_id)
    events = client.history(workflow_id) if args.history else None
    task_events = client.history_task_events(workflow_id) if args.history else None
    if args.json:
        document: dict[str, Any] = {"workflow": _plain(view)}
        if events is not None:
            document["history"] = _plain(events)
            document["task_events"] = _plain(task_events)
        print(dumps(document), file=out)
        return 0
    render_description(view, out)
    from weave_http.cli.views import (
        render_attempts,
        render_task_errors,
        render_task_events,
        render_waits,
    )

    if args.attempts:
        render_attempts(view, out)
    render_waits(view, out)
    render_task_errors(view, out)
    if events is not None:
        print(file=out)
        print("history", file=out)
        render_history(events, out)
        render_task_events(task_events or [], out)
    return 0


def _list(client: Client, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    page = client.list_workflows_page(
        status=args.status, definition_id=args.definition, version=args.version,
        paused=args.paused, created_after=args.created_after,
        created_before=args.created_before, cursor=args.cursor, limit=args.limit,
    )
    if args.json:
        print(dumps(_plain(page)), file=out)
        return 0
    render_list(page.items, out)
    if page.next_cursor is not None:
        print(f"next page: --cursor {page.next_cursor}", file=out)
    return 0


Command = Callable[["Client", argparse.Namespace, TextIO, TextIO], int]


def run_command(
    command: Command, args: argparse.Namespace, *, client: Client | None = None,
    out: TextIO | None = None, err: TextIO | None = None,
) -> int:
    """Run one of the commands with the error convention of ``weave``; return the exit code."""
    from weave_sdk import Client, ValidationError, WeaveSDKError

    out = out or sys.stdout
    err = err or sys.stderr
    own = client is None
    try:
        active = client if client is not None else Client(args.url, args.token, args.namespace)
    except WeaveSDKError as exc:
        print(f"error[bad_configuration]: {exc}", file=err)
        return 1
    try:
        return command(active, args, out, err)
    except UsageError as exc:
        print(f"error[bad_argument]: {exc}", file=err)
        return 1
    except ValidationError as exc:
        print(f"error[{exc.code}]: {exc.detail}", file=err)
        for problem in exc.problems:
            print(f"  {problem.path}: {problem.code}: {problem.message}", file=err)
        return 1
    except WeaveSDKError as exc:  # the server refused, is unreachable, answered nonsense
        return report(exc, err)
    except (TypeError, ValueError) as exc:
        print(f"error[bad_argument]: {one_line(str(exc))}", file=err)
        return 1
    finally:
        if own:
            active.close()


def _connection_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", default=None, help="server URL (default $WEAVE_URL)")
    parser.add_argument("--token", default=None, help="API token (default $WEAVE_TOKEN)")
    parser.add_argument("--namespace", default=None,
                        help="namespace (default $WEAVE_NAMESPACE)")
    parser.add_argument("--json", action="store_true",
                        help="print the server's view as exact JSON instead of tables")


def _bind(command: Command) -> Callable[[argparse.Namespace], int]:
    return lambda args: run_command(command, args)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``weave start``, ``weave show`` and ``weave list``."""
    start = subparsers.add_parser(
        "start", help="start a workflow instance",
        description="Start an instance of a published definition. Exit 0 when started (or "
        "when the idempotency key returns the original instance); with --wait, exit 0 only "
        "when it SUCCEEDED.",
    )
    start.add_argument("definition_id", metavar="DEFINITION_ID")
    start.add_argument("--input", default="{}", metavar="JSON|@FILE",
                       help="the input: a JSON document, @file.json or @- for stdin "
                       "(default {})")
    start.add_argument("--version", default="latest",
                       help="an explicit version, or latest (default; pinned at start)")
    start.add_argument("--idempotency-key", default=None, metavar="KEY",
                       help="makes retrying the start safe (default: a fresh uuid4)")
    start.add_argument("--operation-type", default=None, metavar="TYPE",
                       help="idempotency scope (server default: start)")
    start.add_argument("--wait", action="store_true",
                       help="wait until the instance settles and print its output")
    start.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                       help="with --wait: give up after SECONDS (default: wait for ever)")
    _connection_options(start)
    start.set_defaults(func=_bind(_start))

    show = subparsers.add_parser(
        "show", help="show one workflow instance",
        description="Show an instance (by id, or by --key) with its steps, tasks, pending "
        "work, signals, waits, poll rounds and operations; --history adds every transition "
        "in revision order.",
    )
    show.add_argument("workflow_id", metavar="WORKFLOW_ID", nargs="?", default=None)
    show.add_argument("--key", default=None, metavar="KEY",
                      help="find the instance by the idempotency key it was started with")
    show.add_argument("--operation-type", default=None, metavar="TYPE",
                      help="with --key: the idempotency scope (default start)")
    show.add_argument("--history", action="store_true", help="also print the history "
                      "(with lease expiries, retries and refused reports of its tasks)")
    show.add_argument("--attempts", action="store_true",
                      help="also print every attempt of every task")
    _connection_options(show)
    show.set_defaults(func=_bind(_show))

    listing = subparsers.add_parser(
        "list", help="list workflow instances",
        description="List instances, newest first, one page at a time (filters combine with "
        "AND; pass the printed cursor back with --cursor).",
    )
    listing.add_argument("--status", choices=STATUSES, default=None)
    listing.add_argument("--definition", default=None, metavar="DEFINITION_ID")
    listing.add_argument("--version", default=None)
    listing.add_argument("--paused", type=_bool_arg, default=None, metavar="true|false")
    listing.add_argument("--created-after", type=_time_arg, default=None, metavar="TIME",
                         help="inclusive, ISO 8601 (naive = UTC)")
    listing.add_argument("--created-before", type=_time_arg, default=None, metavar="TIME",
                         help="exclusive, ISO 8601 (naive = UTC)")
    listing.add_argument("--limit", type=int, default=None, metavar="N",
                         help="page size, 1-500 (server default 50)")
    listing.add_argument("--cursor", default=None, help="next_cursor of the previous page")
    _connection_options(listing)
    listing.set_defaults(func=_bind(_list))


__all__ = [
    "UsageError",
    "read_input",
    "register",
    "render_description",
    "render_history",
    "render_list",
    "run_command",
    "table",
]
