"""``weave pause|resume|cancel`` and ``weave review``: operator controls through the SDK.

``weave pause WORKFLOW_ID --reason R [--expected-version N] [--operation-id ID]`` (also
``resume`` and ``cancel``): without ``--expected-version`` the instance's current control
version is read first; without ``--operation-id`` a fresh one is made (pass your own to
retry safely: a repeat returns the first outcome). ``weave review WORKFLOW_ID ACTION``
with ``conclude``, ``resolve``, ``recover`` or ``accept`` (``--output``). Prints the
instance (``--json``: exact JSON); a refusal prints ``error[<code>]: <detail>`` on stderr
and exits 1.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from weave_http.cli.values import UsageError, _plain, dumps, read_input
from weave_http.cli.workflows import _connection_options, _summary, run_command

if TYPE_CHECKING:
    from weave_sdk import Client


def _print(value: Any, args: argparse.Namespace, out: TextIO) -> None:
    from weave_sdk import controls as sdk

    if args.json:
        print(dumps(_plain(value)), file=out)
    elif isinstance(value, sdk.ReviewResult):
        _summary(value.workflow, out)
        op = value.operation
        print(f"operation  {op['operation_id']} {op['kind']} by {op['actor']}", file=out)
    else:
        _summary(value, out)


def _control(name: str) -> Callable[[Client, argparse.Namespace, TextIO, TextIO], int]:
    """The command running ``weave_sdk.controls.<name>`` (imported when it runs)."""
    def command(client: Client, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
        from weave_sdk import controls as sdk

        action: Callable[..., Any] = getattr(sdk, name)
        result = action(client, args.workflow_id, reason=args.reason,
                        expected_control_version=args.expected_version,
                        operation_id=args.operation_id)
        _print(result, args, out)
        return 0

    return command


def _review(client: Client, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from weave_sdk import controls as sdk

    evidence = None if args.evidence is None else read_input(args.evidence)
    if evidence is not None and not isinstance(evidence, dict):
        raise UsageError("--evidence must be a JSON object")
    if args.action == "recover":
        if args.step is None:
            raise UsageError("recover needs --step")
        result = sdk.recover(client, args.workflow_id, args.step, reason=args.reason,
                             expected_state_version=args.expected_state_version,
                             conclusion=args.conclusion, evidence=evidence,
                             operation_id=args.operation_id)
    elif args.action == "accept":
        if args.step is None or args.output is None or evidence is None:
            raise UsageError("accept needs --step, --output and --evidence")
        result = sdk.accept(client, args.workflow_id, args.step, read_input(args.output),
                            reason=args.reason, evidence=evidence,
                            expected_state_version=args.expected_state_version,
                            operation_id=args.operation_id)
    else:
        result = sdk.review(client, args.workflow_id, args.action, reason=args.reason,
                            step_id=args.step, expected_state_version=args.expected_state_version,
                            conclusion=args.conclusion, evidence=evidence,
                            outcome=args.outcome, operation_id=args.operation_id)
    _print(result, args, out)
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``weave pause``, ``weave resume``, ``weave cancel`` and ``weave review``."""
    for name, text in (
        ("pause", "pause an instance: close its execution gate"),
        ("resume", "resume a paused instance (lifts the pause only)"),
        ("cancel", "cancel an instance: stop new steps, collect running work"),
    ):
        parser = subparsers.add_parser(name, help=text, description=text[0].upper() + text[1:]
                                       + ". Exit 0 when accepted (or replayed), 1 when refused.")
        parser.add_argument("workflow_id", metavar="WORKFLOW_ID")
        parser.add_argument("--reason", required=True, help="why (recorded with the audit)")
        parser.add_argument("--expected-version", type=int, default=None, metavar="N",
                            help="the control_version you saw (default: read it now)")
        parser.add_argument("--operation-id", default=None, metavar="ID",
                            help="stable id of this operation (default: a new uuid)")
        _connection_options(parser)
        command = _control(name)
        parser.set_defaults(func=lambda args, command=command: run_command(command, args))
    review = subparsers.add_parser(
        "review", help="conclude on a step, resolve a review, or recover a step",
        description="Review an instance in NEEDS_REVIEW: 'conclude' records a conclusion "
        "with evidence on a step, 'resolve' ends the review (--outcome), 'recover' re-runs "
        "a failed step under a new activation, 'accept' records the output observed for a "
        "step whose effect is confirmed present (--output, --evidence) and continues. "
        "Exit 0 when accepted, 1 when refused.")
    review.add_argument("workflow_id", metavar="WORKFLOW_ID")
    review.add_argument("action", choices=["conclude", "resolve", "recover", "accept"])
    review.add_argument("--reason", required=True, help="why (recorded with the audit)")
    review.add_argument("--step", default=None, metavar="STEP_ID")
    review.add_argument("--expected-state-version", type=int, default=None, metavar="N",
                        help="the step's version you saw (recover default: read it now)")
    review.add_argument("--conclusion", default=None,
                        choices=["effect_confirmed_absent", "retry_safe",
                                 "effect_confirmed_present", "effect_unknown"])
    review.add_argument("--evidence", default=None, metavar="JSON|@FILE",
                        help="a JSON object: what shows the effect's state")
    review.add_argument("--output", default=None, metavar="JSON|@FILE",
                        help="accept only: the output observed (checked against the "
                        "step's output contract)")
    review.add_argument("--outcome", default=None, choices=["continue", "failed", "cancelled"],
                        help="resolve only (default continue)")
    review.add_argument("--operation-id", default=None, metavar="ID")
    _connection_options(review)
    review.set_defaults(func=lambda args: run_command(_review, args))


__all__ = ["register"]
