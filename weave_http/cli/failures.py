"""Every way a ``weave`` command can fail, as the one line ``error[code]: message``.

``main`` sends whatever escapes a command here, so that no path prints a traceback. It
looks at the engine's, the database driver's and the SDK's error classes only when their
modules are already loaded (a client command never imports the engine to say why it
failed). ``WEAVE_TRACEBACK=1`` re-raises an unexpected error instead, for debugging.
"""

from __future__ import annotations

import os
import sys
from typing import Final, TextIO

EXIT_FAILED: Final = 1
EXIT_INTERRUPTED: Final = 130


class CliError(Exception):
    """A failure a command reports on purpose: ``error[code]: message``, exit 1."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def one_line(text: str) -> str:
    """``text`` on one line (drivers put newlines and background links in messages)."""
    return " ".join(text.split())


def database_message(exc: BaseException) -> str:
    """The driver's own words for a database error, without SQLAlchemy's links."""
    orig = getattr(exc, "orig", None)
    if orig is not None and getattr(orig, "args", None):
        args = orig.args
        if len(args) >= 2 and isinstance(args[0], int):  # PyMySQL: (errno, message)
            return f"{args[1]} (MySQL error {args[0]})"
        return str(args[0])
    return str(exc).split("\n(Background on this error", 1)[0]


def describe(exc: BaseException) -> tuple[str, str] | None:
    """``(code, message)`` for a failure we can name; ``None`` for a bug."""
    if isinstance(exc, CliError):
        return exc.code, exc.message
    if isinstance(exc, BrokenPipeError):
        return "stdout_closed", "the output was closed before everything was written"
    core = sys.modules.get("weave_core.foundation.errors")
    if core is not None and isinstance(exc, core.WeaveError):
        return exc.code, exc.message
    sdk = sys.modules.get("weave_sdk.errors")
    if sdk is not None and isinstance(exc, sdk.WeaveSDKError):
        if isinstance(exc, sdk.WeaveAPIError):
            return exc.code, exc.detail
        if isinstance(exc, sdk.WeaveConnectionError):
            return "server_unreachable", str(exc)
        if isinstance(exc, sdk.ConfigurationError):
            return "bad_configuration", str(exc)
        return "sdk_error", str(exc)
    sa_exc = sys.modules.get("sqlalchemy.exc")
    if sa_exc is not None:
        if isinstance(exc, sa_exc.ArgumentError | sa_exc.NoSuchModuleError):
            return "malformed_database_url", f"cannot read the database URL: {exc}"
        if isinstance(exc, sa_exc.OperationalError | sa_exc.InterfaceError):
            return "database_unreachable", f"cannot use the database: {database_message(exc)}"
        if isinstance(exc, sa_exc.DBAPIError):
            return "database_error", database_message(exc)
    if isinstance(exc, ConnectionError | TimeoutError):
        return "connection_failed", str(exc) or type(exc).__name__
    if isinstance(exc, OSError):
        return "os_error", exc.strerror or str(exc)
    return None


def report(exc: BaseException, err: TextIO | None = None) -> int:
    """Print the one line for ``exc`` on ``err`` (stderr); the exit code."""
    err = err if err is not None else sys.stderr
    if isinstance(exc, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    named = describe(exc)
    if named is None:
        if os.environ.get("WEAVE_TRACEBACK") == "1":
            raise exc
        named = ("internal_error", f"{type(exc).__name__}: {exc} (this is a bug in weave; "
                 "WEAVE_TRACEBACK=1 shows the traceback)")
    code, message = named
    print(f"error[{code}]: {one_line(message)}", file=err, flush=True)
    return EXIT_FAILED


def close_stdout_quietly() -> None:
    """After a ``BrokenPipeError``: point stdout at devnull so that the flush at exit
    does not fail again (the way the Python docs recommend, ``signal`` module)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


__all__ = ["CliError", "close_stdout_quietly", "database_message", "describe", "one_line",
           "report"]
