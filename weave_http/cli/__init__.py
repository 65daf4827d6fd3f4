"""The ``weave`` command line: one module per command group, each adding its subcommands.

A command module exposes ``register(subparsers)``; each subcommand sets ``func`` to a
callable taking the parsed arguments and returning the process exit code. A ``WeaveError``
escaping a command prints ``error[<code>]: <message>`` on stderr and exits 1; bad usage
exits 2 (argparse's convention).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

from weave_core.errors import WeaveError

# Command groups, in the order ``weave --help`` lists them. Each is a module of this package.
COMMAND_MODULES: tuple[str, ...] = (
    "serve", "admin", "queues", "publish", "workflows", "signals", "controls", "worker",
    "demo", "bench", "export",
)

Handler = Callable[[argparse.Namespace], int]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="weave",
        description="Weave: a durable workflow engine. Run 'weave COMMAND --help' for details.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        module = importlib.import_module(f"{__name__}.{name}")
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler = args.func
    try:
        return handler(args)
    except WeaveError as exc:
        print(f"error[{exc.code}]: {exc.message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover - exercised through the console script
    sys.exit(main())
