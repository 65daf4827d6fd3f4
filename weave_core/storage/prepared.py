"""The hot path's statements parsed once per connection: SQL-level ``PREPARE`` and
``EXECUTE … USING`` (MariaDB only).

Why: MariaDB parses every query text it receives. A step sends about 12 KB of SQL (the
six locking reads as one union, three compound blocks of writes), and parsing it was about
a quarter of MariaDB's CPU per step (``perf`` on ``mariadbd``: ``MYSQLparse`` and the
lexer). PyMySQL speaks only the text protocol, but MariaDB accepts ``PREPARE name FROM
'text'`` and ``EXECUTE name USING literal, …`` as text: a shape (the SQL with ``?`` where
its values go) is prepared once per connection, and each later use sends only its
values. Measured on an in-process step loop: MariaDB CPU per step 1.8 ms → 1.5 ms.

What stays as it was:

- **values** are the same literals PyMySQL's escaping makes (``deferred._LITERALS``,
  tested against ``mogrify``); a server in ``NO_BACKSLASH_ESCAPES`` mode, or a value of
  another kind than the common ones, takes the plain text path, as does MySQL (whose
  ``EXECUTE`` takes only user variables);
- **errors** are the statement's own: an ``EXECUTE`` fails exactly as its text would;
- **a shape that cannot be prepared** (a ``?`` where MariaDB wants a literal) is
  remembered and sent as plain text from then on; a server out of prepared statements
  (``max_prepared_stmt_count``, error 1461) makes that connection send plain text;
- **the prepare itself** is its own round trip, the first time a connection meets a shape,
  before anything of the batch runs, so a failing ``PREPARE`` leaves nothing half sent
  and is known to be that shape's.

Each connection keeps at most :data:`PER_CONNECTION` shapes, least recently used dropped
with ``DEALLOCATE PREPARE``; the set belongs to the server session (the server's thread
id), so a reconnected driver object starts empty.
"""

from __future__ import annotations

import logging
import re
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import pymysql

from weave_core.storage.retries import LOST_CONNECTION_CODES, mysql_error_code

logger = logging.getLogger(__name__)

PER_CONNECTION: Final = 64
"""Shapes kept prepared per connection. A step uses about five; the server's default
``max_prepared_stmt_count`` of 16,382 is then shared by ~250 pooled connections."""

_TOO_MANY: Final = 1461  # ER_MAX_PREPARED_STMT_COUNT_REACHED
_UNKNOWN: Final = 1243  # ER_UNKNOWN_STMT_HANDLER
_PLACEHOLDER: Final = re.compile(r"(utc_timestamp\()?%\((\w+)\)s|%%")
"""A pyformat placeholder (``%(name)s``) or an escaped ``%``. The precision argument of
``utc_timestamp(…)`` must be a literal, so it stays one."""
_TEMPLATES: dict[str, tuple[str, tuple[str, ...], dict[str, int]]] = {}
_TEMPLATES_MAX: Final = 4096
_UNPREPARABLE: set[str] = set()


def template(sql: str, params: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
    """``sql`` (pyformat, as SQLAlchemy compiles it) as a shape with ``?`` for each
    value, and the names of the values in the order the ``?`` take them."""
    found = _TEMPLATES.get(sql)
    if found is not None and (not found[2] or all(
            params.get(k) == v for k, v in found[2].items())):
        return found[0], found[1]
    names: list[str] = []
    inlined: dict[str, int] = {}

    def sub(match: re.Match[str]) -> str:
        name = match.group(2)
        if name is None:
            return "%"
        if match.group(1):
            inlined[name] = int(params[name])
            return f"{match.group(1)}{inlined[name]}"
        names.append(name)
        return "?"

    text = _PLACEHOLDER.sub(sub, sql)
    if len(_TEMPLATES) >= _TEMPLATES_MAX:
        _TEMPLATES.clear()
    _TEMPLATES[sql] = (text, tuple(names), inlined)
    return text, tuple(names)


@dataclass
class _Session:
    """The shapes prepared on one server session, most recently used last."""

    thread_id: Any
    names: OrderedDict[str, str] = field(default_factory=OrderedDict)
    counter: int = 0
    full: bool = False
    """The server refused a PREPARE for want of room: plain text from now on."""


def _session(dbapi: Any) -> _Session:
    thread_id = getattr(dbapi, "server_thread_id", None)
    session: _Session | None = getattr(dbapi, "_weave_prepared", None)
    if session is None or session.thread_id != thread_id:
        session = _Session(thread_id)
        dbapi._weave_prepared = session
    return session


def executes(dbapi: Any, prepare: Callable[[str], object], shapes: Sequence[str],
             values: Sequence[Sequence[str]]) -> list[str | None]:
    """``EXECUTE name USING …`` for each shape with its values (SQL literals), first
    preparing, one round trip each, the shapes this connection has not met (``prepare``
    sends a query and raises SQLAlchemy's ``DBAPIError``). None: send that one as plain
    text."""
    session = _session(dbapi)
    out: list[str | None] = []
    for shape, args in zip(shapes, values, strict=True):
        name = session.names.get(shape)
        if name is None and not session.full and shape not in _UNPREPARABLE:
            name = _prepare(session, prepare, shape)
        if name is None:
            out.append(None)
            continue
        session.names.move_to_end(shape)
        out.append(f"EXECUTE {name} USING {', '.join(args)}" if args else f"EXECUTE {name}")
    return out


def _prepare(session: _Session, prepare: Callable[[str], object], shape: str) -> str | None:
    session.counter += 1
    name = f"weave_ps_{session.counter}"
    texts = [f"PREPARE {name} FROM {_quoted(shape)}"]
    while len(session.names) >= PER_CONNECTION:  # after the PREPARE: it must not depend
        texts.append(f"DEALLOCATE PREPARE {session.names.popitem(last=False)[1]}")
    try:
        prepare(";\n".join(texts))
    except Exception as exc:
        code = _code(exc)
        if code is None:
            raise
        if code == _UNKNOWN:  # a DEALLOCATE of one already gone: the PREPARE went through
            session.names[shape] = name
            return name
        if code == _TOO_MANY:
            logger.warning("MariaDB refused a prepared statement (max_prepared_stmt_count "
                           "reached): this connection sends plain SQL from now on")
            session.full = True
            return None
        logger.info("a statement shape cannot be prepared (error %s); it is sent as plain "
                    "SQL", code)
        _UNPREPARABLE.add(shape)
        return None
    session.names[shape] = name
    return name


def _code(exc: BaseException) -> int | None:
    """The MariaDB error number of the server's refusal; None for anything else (a lost
    connection, not a database error)."""
    orig = getattr(exc, "orig", exc)
    code = mysql_error_code(exc)
    if isinstance(orig, pymysql.err.InterfaceError) or code in LOST_CONNECTION_CODES:
        return None
    return code


def _quoted(text: str) -> str:
    return "'" + pymysql.converters.escape_string(text) + "'"


__all__ = ["PER_CONNECTION", "executes", "template"]
