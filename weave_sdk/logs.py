"""Log lines for operators: one formatter for text and one for JSON, shared by worker and server.

Both formats carry the same fields. A record's extra fields (``logger.info(..., extra=
{"task": ...})``) become JSON members, and in text they follow the message as
``key=value``. :func:`configure_logging` installs one handler on the root logger and keeps
httpx's and httpcore's per-request lines quiet unless the level is ``debug``. The stdlib
only, so that the SDK keeps its two dependencies and the server can reuse it as is.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, Final, Literal, TextIO

LogFormat = Literal["text", "json"]
LOG_FORMATS: Final = ("text", "json")
LOG_LEVELS: Final = ("debug", "info", "warning", "error", "critical")

_STANDARD: Final = frozenset(vars(logging.makeLogRecord({}))) | {
    "message", "asctime", "taskName", "color_message"}  # uvicorn's ANSI copy of message
_CHATTY: Final = ("httpx", "httpcore")
"""Libraries that log every request at INFO/DEBUG: quiet below ``debug``."""


def extra_fields(record: logging.LogRecord) -> dict[str, Any]:
    """The fields a caller passed with ``extra=``, in the order given (``None`` left out)."""
    return {k: v for k, v in vars(record).items()
            if k not in _STANDARD and not k.startswith("_") and v is not None}


def _timestamp(record: logging.LogRecord) -> str:
    when = datetime.fromtimestamp(record.created, UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ``time``, ``level``, ``logger``, ``message``, the extra
    fields, and ``exc_type``/``exc_message``/``traceback`` when an exception is attached."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": _timestamp(record),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        line.update(extra_fields(record))
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            line["exc_type"] = type(exc).__name__
            line["exc_message"] = str(exc)
            line["traceback"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    """``2025-01-31T12:00:00.123Z INFO weave_sdk.worker: message key=value ...``."""

    def format(self, record: logging.LogRecord) -> str:
        fields = " ".join(f"{k}={_text(v)}" for k, v in extra_fields(record).items())
        line = (f"{_timestamp(record)} {record.levelname} {record.name}: "
                f"{record.getMessage()}" + (f" {fields}" if fields else ""))
        if record.exc_info and record.exc_info[1] is not None:
            line += "\n" + self.formatException(record.exc_info)
        return line


def _text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return json.dumps(text) if not text or any(c in text for c in ' "=\n') else text


def formatter(fmt: LogFormat) -> logging.Formatter:
    """The formatter of ``--log-format``."""
    if fmt not in LOG_FORMATS:
        raise ValueError(f"log format must be one of {', '.join(LOG_FORMATS)}")
    return JsonFormatter() if fmt == "json" else TextFormatter()


def configure_logging(fmt: LogFormat = "text", level: str = "info",
                      stream: TextIO | None = None) -> logging.Handler:
    """Log to ``stream`` (default stderr) in ``fmt`` at ``level``, replacing the root
    logger's handlers; httpx and httpcore stay at WARNING unless ``level`` is ``debug``."""
    if level.lower() not in LOG_LEVELS:
        raise ValueError(f"log level must be one of {', '.join(LOG_LEVELS)}")
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(formatter(fmt))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    numeric = getattr(logging, level.upper())
    root.setLevel(numeric)
    for name in _CHATTY:
        logging.getLogger(name).setLevel(logging.DEBUG if numeric <= logging.DEBUG
                                         else logging.WARNING)
    return handler


__all__ = [
    "LOG_FORMATS",
    "LOG_LEVELS",
    "JsonFormatter",
    "LogFormat",
    "TextFormatter",
    "configure_logging",
    "extra_fields",
    "formatter",
]
