"""``weave publish TARGET``: publish one definition version through the SDK client.

TARGET is a ``.json`` file (read with exact numbers) or ``module:attribute`` naming a
``weave_sdk.Workflow`` or a definition dict (the current directory is importable, as with
uvicorn). Prints ``created`` or ``unchanged``; a conflict, a refused definition or any
other SDK error prints ``error[<code>]: <detail>`` on stderr and exits 1.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from weave_http.cli.failures import one_line, report
from weave_http.cli.values import dumps

if TYPE_CHECKING:  # the SDK (and httpx) are imported when the command runs
    import httpx

    from weave_sdk import Client, Workflow


class TargetError(Exception):
    """TARGET cannot be loaded; the message says why."""


def load_target(target: str) -> Workflow | dict[str, Any]:
    """Read TARGET: a JSON file path, or ``module:attribute`` (dotted attribute allowed)."""
    from weave_sdk import JSONDecodeError, Workflow, loads

    path = Path(target)
    if target.endswith(".json") or path.is_file():
        try:
            document = loads(path.read_bytes())
        except OSError as exc:
            raise TargetError(f"cannot read {target}: {exc.strerror or exc}") from exc
        except JSONDecodeError as exc:
            raise TargetError(f"{target}: {exc}") from exc
        if not isinstance(document, dict):
            raise TargetError(f"{target}: a definition is a JSON object")
        return document
    module_name, sep, attribute = target.partition(":")
    if not sep or not module_name or not attribute:
        raise TargetError(f"{target!r} is neither a .json file nor module:attribute")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        value: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise TargetError(f"cannot import {module_name!r}: {exc}") from exc
    except Exception as exc:  # the module itself failed: say where, not "a bug in weave"
        raise TargetError(f"importing {module_name!r} failed: "
                          f"{type(exc).__name__}: {exc}") from exc
    for name in attribute.split("."):
        try:
            value = getattr(value, name)
        except AttributeError as exc:
            raise TargetError(f"{module_name!r} has no attribute {attribute!r}") from exc
    if isinstance(value, Workflow):
        return value
    if isinstance(value, Mapping):
        return dict(value)
    raise TargetError(f"{target} is a {type(value).__name__}, not a Workflow or a dict")


def publish_target(
    target: str, client: Client, *, out: TextIO | None = None, err: TextIO | None = None,
    as_json: bool = False,
) -> int:
    """Publish TARGET with ``client``, print the outcome (one JSON document with
    ``as_json``); return the exit code."""
    from weave_sdk import DefinitionFormatError, ValidationError, WeaveSDKError

    out = out or sys.stdout
    err = err or sys.stderr
    try:
        definition = load_target(target)
        result = client.publish(definition)
    except TargetError as exc:
        print(f"error[bad_target]: {exc}", file=err)
        return 1
    except ValidationError as exc:
        print(f"error[{exc.code}]: {exc.detail}", file=err)
        for problem in exc.problems:
            print(f"  {problem.path}: {problem.code}: {problem.message}", file=err)
        return 1
    except (DefinitionFormatError, TypeError, ValueError) as exc:
        print(f"error[bad_definition]: {one_line(str(exc))}", file=err)
        return 1
    except WeaveSDKError as exc:  # refused, unreachable, a nonsense answer
        return report(exc, err)
    outcome = "created" if result.created else "unchanged"
    unseen = unseen_handlers(client, result.document)
    if as_json:
        print(dumps({"outcome": outcome, "definition_id": result.definition_id,
                     "version": result.version, "content_hash": result.content_hash,
                     "unseen_handlers": [{"queue": q, "handler": n, "handler_version": v}
                                         for q, n, v in unseen]}), file=out)
    else:
        print(f"{outcome}: {result.definition_id} version {result.version} "
              f"(content {result.content_hash[:12]})", file=out)
    for queue, name, version in unseen:
        print(f"warning: no worker has been seen for handler {name!r} version {version!r} "
              f"on queue {queue!r}; its tasks will wait until one runs "
              "(weave worker module:attribute)", file=err)
    return 0


def _used(steps: Any) -> Iterator[tuple[str, str, str]]:
    for step in steps if isinstance(steps, list) else []:
        if not isinstance(step, dict):
            continue
        handler = step.get("handler")
        if step.get("kind") in ("task", "poll") and isinstance(handler, dict):
            yield str(step.get("queue")), str(handler.get("name")), str(handler.get("version"))
        for case in step.get("cases") or []:
            yield from _used(case.get("steps"))
        for branch in (step.get("branches") or {}).values():
            yield from _used(branch)


def unseen_handlers(client: Client, document: Any) -> list[tuple[str, str, str]]:
    """(queue, handler, version) of the document's tasks and polls that no worker has
    claimed with on the server (``GET .../handlers``); empty when the server cannot say."""
    from weave_sdk import WeaveSDKError, loads
    from weave_sdk.client import _Call

    def read(response: httpx.Response) -> set[tuple[str, str, str]] | None:
        if response.status_code != 200:
            return None  # an older server, or a token without read: no warning
        items = loads(response.content).get("items", [])
        return {(i["queue"], i["handler"], i["handler_version"]) for i in items}

    try:
        seen = client._run(_Call("GET", client._settings.ns_path("/handlers"), read))
    except WeaveSDKError:
        return []
    if seen is None:
        return []
    used = dict.fromkeys(_used(document.get("steps") if isinstance(document, dict) else None))
    return [u for u in used if u not in seen]


def _run(args: argparse.Namespace) -> int:
    from weave_sdk import Client, WeaveSDKError

    try:
        client = Client(args.url, args.token, args.namespace)
    except WeaveSDKError as exc:
        print(f"error[bad_configuration]: {exc}", file=sys.stderr)
        return 1
    with client:
        return publish_target(args.target, client, as_json=args.json)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``weave publish``."""
    parser = subparsers.add_parser(
        "publish",
        help="publish a definition version",
        description=(
            "Publish a definition: TARGET is a .json file or module:attribute naming a "
            "weave_sdk.Workflow or a dict. Exit 0 when created or unchanged, 1 on error."
        ),
    )
    parser.add_argument("target", metavar="TARGET", help="FILE.json or module:attribute")
    parser.add_argument("--url", default=None, help="server URL (default $WEAVE_URL)")
    parser.add_argument("--token", default=None, help="API token (default $WEAVE_TOKEN)")
    parser.add_argument(
        "--namespace", default=None, help="namespace (default $WEAVE_NAMESPACE)"
    )
    parser.add_argument("--json", action="store_true",
                        help="print the outcome as one JSON document")
    parser.set_defaults(func=_run)


__all__ = ["TargetError", "load_target", "publish_target", "register"]
