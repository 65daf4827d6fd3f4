"""``weave signal``: deliver a signal to an instance through the SDK client.

``weave signal WORKFLOW_ID NAME --correlation-key K [--payload JSON] [--signal-id ID]
[--param-version V] [--evidence REF ...]``. Connection from ``--url``/``--token``/
``--namespace``, else ``WEAVE_URL``/``WEAVE_TOKEN``/``WEAVE_NAMESPACE``. Prints the
acceptance (``accepted`` for a new one, ``replayed`` for the same id and content) and the
signal's state, then whether it was consumed at once, matched an open wait, or was stored
unmatched; ``--json`` prints the server's view as exact JSON. ``weave signals WORKFLOW_ID``
lists an instance's signals. Refusals print ``error[<code>]: <detail>`` and exit 1.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import TYPE_CHECKING, Any, TextIO

from weave_http.cli.values import _plain, dumps
from weave_http.cli.views import render_signals, signal_match
from weave_http.cli.workflows import _connection_options, run_command

if TYPE_CHECKING:
    from weave_sdk import Client


class _BadPayload(ValueError):
    pass


def _signal(client: Client, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from weave_sdk import loads
    from weave_sdk.signals import send_signal
    from weave_sdk.views import SignalInfo

    try:
        payload: Any = None if args.payload is None else loads(args.payload)
    except ValueError as exc:
        raise _BadPayload(f"--payload is not JSON: {exc}") from None
    acceptance = send_signal(client, args.workflow_id, args.name,
                             correlation_key=args.correlation_key, payload=payload,
                             signal_id=args.signal_id, param_version=args.param_version,
                             evidence=args.evidence or ())
    if args.json:
        view = dataclasses.asdict(acceptance)
        view.pop("created")
        print(dumps(view), file=out)
        return 0
    verb = "accepted" if acceptance.created else "replayed"
    print(f"signal {acceptance.signal_id} {verb}: state {acceptance.state}, "
          f"accepted_at {acceptance.accepted_at}", file=out)
    print(signal_match(SignalInfo.model_validate(dataclasses.asdict(acceptance))), file=out)
    return 0


def _signals(client: Client, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from weave_sdk.signals import list_signals
    from weave_sdk.views import SignalInfo

    items = [SignalInfo.model_validate(dataclasses.asdict(s))
             for s in list_signals(client, args.workflow_id)]
    if args.json:
        print(dumps(_plain(items)), file=out)
    elif items:
        render_signals(items, out)
    else:
        print(f"no signals for {args.workflow_id}", file=out)
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``signal`` to the ``weave`` command."""
    parser = subparsers.add_parser(
        "signal", help="deliver a signal to a workflow instance",
        description="Deliver a signal (idempotent on --signal-id: reuse it when retrying).")
    parser.add_argument("workflow_id", metavar="WORKFLOW_ID")
    parser.add_argument("name", metavar="NAME")
    parser.add_argument("--correlation-key", required=True, metavar="K",
                        help="the business operation the signal is about")
    parser.add_argument("--payload", default=None, metavar="JSON",
                        help="the payload as JSON (numbers stay exact)")
    parser.add_argument("--signal-id", default=None, metavar="ID",
                        help="stable id of this signal (default: a new random id)")
    parser.add_argument("--param-version", default="1", metavar="V")
    parser.add_argument("--evidence", action="append", metavar="REF",
                        help="an evidence reference (repeatable)")
    _connection_options(parser)
    parser.set_defaults(func=lambda args: run_command(_signal, args))

    listing = subparsers.add_parser(
        "signals", help="list a workflow instance's signals",
        description="List an instance's signals in acceptance order: state, and whether "
        "each was consumed, matched an open wait, or is stored unmatched.")
    listing.add_argument("workflow_id", metavar="WORKFLOW_ID")
    _connection_options(listing)
    listing.set_defaults(func=lambda args: run_command(_signals, args))


__all__ = ["register"]
