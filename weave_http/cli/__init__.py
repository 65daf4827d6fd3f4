"""The ``weave`` command line: one module per command group, each adding its subcommands.

A command module exposes ``register(subparsers)``; each subcommand sets ``func`` to a
callable taking the parsed arguments and returning the process exit code. Whatever
escapes a command is one line ``error[<code>]: <message>`` on stderr and exit 1
(``failures.py``); bad usage exits 2 (argparse's convention).

Start-up is lazy: ``COMMANDS`` names each command's module and help line, and only the
module of the command being run is imported, so a client command (``weave list``) loads
the SDK, never the engine, the database layer or the web framework.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import Any

# Command groups, in the order ``weave --help`` lists them. Each is a module of this package.
COMMAND_MODULES: tuple[str, ...] = (
    "serve", "admin", "queues", "publish", "workflows", "signals", "controls", "worker",
    "demo", "bench", "export", "check",
)

# Every command: (its module, its help line). Only the module of the command run is imported.
COMMANDS: dict[str, tuple[str, str]] = {
    "serve": ("serve", "run the HTTP API server"),
    "migrate": ("admin", "apply database migrations"),
    "namespace": ("admin", "manage namespaces"),
    "token": ("admin", "manage API tokens"),
    "queue": ("queues", "manage dispatch queues"),
    "quota": ("queues", "manage namespace task quotas"),
    "publish": ("publish", "publish a definition version"),
    "start": ("workflows", "start a workflow instance"),
    "show": ("workflows", "show one workflow instance"),
    "list": ("workflows", "list workflow instances"),
    "signal": ("signals", "deliver a signal to a workflow instance"),
    "signals": ("signals", "list a workflow instance's signals"),
    "pause": ("controls", "pause an instance: close its execution gate"),
    "resume": ("controls", "resume a paused instance (lifts the pause only)"),
    "cancel": ("controls", "cancel an instance: stop new steps, collect running work"),
    "review": ("controls", "conclude on a step, resolve a review, or recover a step"),
    "worker": ("worker", "run an SDK worker (module:attribute)"),
    "demo": ("demo", "run the end-to-end demo on a throw-away SQLite database"),
    "bench": ("bench", "measure performance as ratios to this machine's calibration"),
    "export": ("export", "write one instance's complete record as JSON"),
    "check": ("check", "report every violation of the invariants I1-I7 in a database"),
}

# Commands that talk to a server through the SDK: they must not import the engine.
CLIENT_COMMANDS: frozenset[str] = frozenset({
    "publish", "start", "show", "list", "signal", "signals", "pause", "resume", "cancel",
    "review", "worker", "export",
})

Handler = Callable[[argparse.Namespace], int]


class _Version(argparse.Action):
    """``--version``: read from the installed distributions only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 default: Any = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        print(version_line())
        parser.exit()


def version_line() -> str:
    """``weave 0.1.0 (weave-sdk 0.1.0, Python 3.11.2)``."""
    from importlib import metadata

    def of(dist: str) -> str:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return "not installed"

    python = ".".join(str(n) for n in sys.version_info[:3])
    return f"weave {of('weave-engine')} (weave-sdk {of('weave-sdk')}, Python {python})"


def _modules_for(command: str | None) -> list[str]:
    """The modules to import: the command's own (none for ``weave --help``), and any
    module the table does not describe (so an unlisted group is never lost)."""
    described = {module for module, _ in COMMANDS.values()}
    extra = [m for m in COMMAND_MODULES if m not in described]
    if command in COMMANDS:
        return [COMMANDS[command][0], *extra]
    return extra


def build_parser(command: str | None = None, *, lazy: bool = False) -> argparse.ArgumentParser:
    """The ``weave`` parser. With ``lazy``, only ``command``'s module is imported and the
    other commands are placeholders carrying their help line (``weave --help`` lists them
    all); otherwise every module is imported (tests, documentation checks)."""
    parser = argparse.ArgumentParser(
        prog="weave",
        description="Weave: a durable workflow engine. Run 'weave COMMAND --help' for details.",
    )
    parser.add_argument("--version", action=_Version, help="print the version and exit")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    modules = _modules_for(command) if lazy else list(COMMAND_MODULES)
    for name in modules:
        importlib.import_module(f"{__name__}.{name}").register(subparsers)
    if lazy:
        known = set(subparsers.choices)
        for name, (_, help_line) in COMMANDS.items():
            if name not in known:
                subparsers.add_parser(name, help=help_line, add_help=False)
    return parser


def _command_of(argv: Sequence[str]) -> str | None:
    """The command word: the first argument that is not an option."""
    return next((a for a in argv if not a.startswith("-")), None)


def main(argv: Sequence[str] | None = None) -> int:
    from weave_http.cli.failures import close_stdout_quietly, report

    args_list = list(sys.argv[1:] if argv is None else argv)
    try:
        parser = build_parser(_command_of(args_list), lazy=True)
        args = parser.parse_args(args_list)
        handler: Handler = args.func
        code = handler(args)
        sys.stdout.flush()  # a closed pipe shows here, inside the handler below
        return code
    except SystemExit:  # argparse: usage errors exit 2, --help and --version exit 0
        try:
            sys.stdout.flush()
        except BrokenPipeError as exc:
            close_stdout_quietly()
            return report(exc)
        raise
    except BrokenPipeError as exc:
        close_stdout_quietly()
        return report(exc)
    except BaseException as exc:
        return report(exc)


if __name__ == "__main__":  # pragma: no cover - exercised through the console script
    sys.exit(main())
