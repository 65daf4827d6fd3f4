"""``weave demo``: the main job on the embedded default, end to end through the SDK."""

from __future__ import annotations

import argparse
import json
from typing import Any


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="run the end-to-end demo on a throw-away SQLite database",
        description=(
            "Start a server on a fresh SQLite file, then publish, re-publish, read back and "
            "break a workflow definition through the SDK, and run two orders through an SDK "
            "worker to SUCCEEDED, printing each step."
        ),
    )
    parser.add_argument(
        "--database-url",
        default=None,
        help="use this database instead of a throw-away SQLite file",
    )
    parser.add_argument("--json", action="store_true",
                        help="print the steps and the outcome as one JSON document at the end")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from weave_http.demo import run_demo

    if not args.json:
        return run_demo(args.database_url)
    lines: list[str] = []
    code = run_demo(args.database_url, say=lines.append)
    print(json.dumps({"ok": code == 0, "steps": lines}))
    return code
