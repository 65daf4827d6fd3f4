"""Values as the ``weave`` commands read and print them: exact JSON through the SDK (loaded
on first use), times, table cells and tables, and the options' value types."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from decimal import Decimal
from enum import Enum
from pathlib import Path
from typing import Any, TextIO

_MAX_CELL = 60


class UsageError(Exception):
    """An option's value cannot be used; the message says why (``error[bad_argument]``)."""


def dumps(value: Any) -> str:
    """The SDK's exact JSON (imported on first use)."""
    from weave_sdk import dumps as sdk_dumps

    return sdk_dumps(value)


def _plain(value: Any) -> Any:
    """A model dump as exact JSON values: times as RFC 3339 with ``Z``, enums as values."""
    import pydantic

    if isinstance(value, pydantic.BaseModel):
        return _plain(value.model_dump(mode="python"))
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(UTC).replace(tzinfo=None)
        return value.isoformat() + "Z"
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def read_input(raw: str) -> Any:
    """``--input``: a JSON document, or ``@FILE`` (``@-`` for stdin), parsed exactly."""
    if raw.startswith("@"):
        name = raw[1:]
        try:
            text = sys.stdin.read() if name == "-" else Path(name).read_text("utf-8")
        except OSError as exc:
            raise UsageError(f"cannot read {name}: {exc.strerror or exc}") from exc
    else:
        text = raw
    from weave_sdk import JSONDecodeError, loads

    try:
        return loads(text)
    except JSONDecodeError as exc:
        raise UsageError(f"--input is not JSON: {exc}") from exc


def _time_arg(raw: str) -> datetime:
    try:
        value = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{raw!r} is not an ISO 8601 time (e.g. 2025-01-31T12:00:00Z)"
        ) from None
    return value


def _bool_arg(raw: str) -> bool:
    if raw not in ("true", "false"):
        raise argparse.ArgumentTypeError("true or false")
    return raw == "true"


def _when(value: datetime | None) -> str:
    if value is None:
        return "-"
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value.isoformat(sep=" ", timespec="milliseconds")


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        text = value
    elif isinstance(value, bool | int | Decimal):
        text = dumps(value)
    else:
        text = dumps(_plain(value))
    return text if len(text) <= _MAX_CELL else text[: _MAX_CELL - 1] + "…"


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], out: TextIO) -> None:
    """Columns padded to their widest cell; the last column is not padded."""
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))

    def line(cells: Sequence[str]) -> str:
        padded = [c.ljust(widths[i]) for i, c in enumerate(cells[:-1])]
        return "  ".join([*padded, cells[-1]]).rstrip()

    print(line(headers), file=out)
    for row in rows:
        print(line(row), file=out)



__all__ = ["UsageError", "dumps", "read_input", "table"]
