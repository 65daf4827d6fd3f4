"""The two log formats of ``weave serve`` and the worker: ``text`` and ``json``.

It lives in the SDK because both sides use it and the SDK imports nothing of the server.
A line's ids and other context are the ``extra`` fields of the log call (``namespace``,
``workflow_id``, ``step``, ``activation``, ``task``, ``attempt``, or any other): ``text``
appends them as ``key=value``, ``json`` writes one object per line with ``ts``, ``level``,
``logger``, ``message``, the fields, and ``exc_info`` (the traceback) when there is one.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, Final, TextIO

FORMATS: Final = ("text", "json")
LEVELS: Final = ("critical", "error", "warning", "info", "debug")
IDS: Final = ("namespace", "workflow_id", "step", "activation", "task", "attempt")
"""The ids of a line about a workflow, in the order ``text`` prints them."""

_STANDARD: Final = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {
    "message", "asctime", "taskName", "color_message"}


def fields(record: logging.LogRecord) -> dict[str, Any]:
    """The ``extra`` fields of ``record``: the ids first, then the others by name."""
    found = {k: v for k, v in record.__dict__.items()
             if k not in _STANDARD and not k.startswith("_") and v is not None}
    ordered: dict[str, Any] = {k: found.pop(k) for k in IDS if k in found}
    ordered.update(sorted(found.items()))
    return ordered


def _time(record: logging.LogRecord) -> str:
    moment = datetime.fromtimestamp(record.created, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class TextFormatter(logging.Formatter):
    """``2026-01-02T03:04:05.678Z INFO logger: message key=value …``."""

    def format(self, record: logging.LogRecord) -> str:
        line = f"{_time(record)} {record.levelname} {record.name}: {record.getMessage()}"
        extra = " ".join(f"{k}={_text(v)}" for k, v in fields(record).items())
        if extra:
            line = f"{line} {extra}"
        if record.exc_info:
            line = f"{line}\n{self.formatException(record.exc_info)}"
        return line


def _text(value: Any) -> str:
    text = str(value)
    return json.dumps(text) if not text or any(c in text for c in ' "=\n') else text


class JsonFormatter(logging.Formatter):
    """One JSON object per line (values that are not JSON are written as text)."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {"ts": _time(record), "level": record.levelname,
                                 "logger": record.name, "message": record.getMessage()}
        entry.update(fields(record))
        if record.exc_info:
            entry["exc_info"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


def formatter(name: str) -> logging.Formatter:
    """The formatter of format ``name`` (``text`` or ``json``)."""
    if name not in FORMATS:
        raise ValueError(f"unknown log format {name!r}: use text or json")
    return JsonFormatter() if name == "json" else TextFormatter()


def configure(fmt: str = "text", level: str = "info", *, stream: TextIO | None = None,
              filters: tuple[logging.Filter, ...] = ()) -> logging.Handler:
    """Send the root logger's lines at ``level`` and above to ``stream`` (stderr) in
    ``fmt``, replacing the handlers installed before; returns the handler."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(formatter(fmt))
    for item in filters:
        handler.addFilter(item)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    return handler


__all__ = ["FORMATS", "IDS", "LEVELS", "JsonFormatter", "TextFormatter", "configure",
           "fields", "formatter"]
