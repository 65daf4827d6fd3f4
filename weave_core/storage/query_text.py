"""How a batch of statements becomes query text for MariaDB/MySQL: SQL literals escaped as
PyMySQL escapes them, the queued writes as one compound block that checks each row count,
reads as one ``UNION ALL``, and on MariaDB each of them as an ``EXECUTE`` of a shape
prepared once per connection (``storage/prepared.py``). ``storage/deferred.py`` decides
what goes together and sends it; this module only writes the text."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pymysql
from pymysql.constants import SERVER_STATUS
from pymysql.converters import escape_string
from sqlalchemy.exc import DBAPIError

from weave_core.storage import prepared
from weave_core.storage.retries import mysql_error_code

_WIDENED: dict[tuple[str, int, tuple[str, ...]], tuple[str, list[str]]] = {}
"""Multi-row texts and their parameter names by (one-row text, rows, columns): a step
writes the same three or four widths every time."""


def widened(sql: str, rows: Sequence[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """A one-row prebuilt ``INSERT … VALUES (%(a)s, …)`` widened to ``len(rows)`` rows
    (``%(r0_a)s`` …), with its parameters; every row has the first row's columns."""
    columns = tuple(rows[0])
    key = (sql, len(rows), columns)
    found = _WIDENED.get(key)
    if found is None:
        head, values = sql.split(" VALUES ", 1)
        if len(_WIDENED) >= 512:
            _WIDENED.clear()
        found = _WIDENED[key] = (head + " VALUES " + ", ".join(
            values.replace("%(", f"%(r{i}_") for i in range(len(rows))),
            [f"r{i}_{k}" for i in range(len(rows)) for k in columns])
    text, names = found
    return text, dict(zip(names, [row[k] for row in rows for k in columns], strict=True))


def as_union(texts: Sequence[str]) -> str:
    """``(SELECT 0 AS weave_part, …) UNION ALL (SELECT 1, …) …``: each read tagged with
    its place (the first keyword of each is ``SELECT``)."""
    return " UNION ALL ".join(
        f"(SELECT {index} AS weave_part, {text.lstrip()[len('SELECT '):]})"
        for index, text in enumerate(texts))


MISMATCH = "weave:deferred_write_mismatch:"
_SIGNAL = 1644  # ER_SIGNAL_EXCEPTION


def as_block(texts: Sequence[str], expected: Sequence[int | None]) -> str:
    """The queued writes as **one** MariaDB compound statement (``BEGIN NOT ATOMIC …
    END``, not a transaction of its own) that checks each write's row count itself.

    Why: MariaDB answers every statement of a multi-statement query with its own packet,
    and PyMySQL spends Python time on each (about 15-20 µs: a step queues about a dozen
    writes); one compound statement is one answer. Measured on loopback, fourteen keyed
    UPDATEs and the commit: 0.23-0.32 ms of client CPU sent as statements, 0.09-0.12 ms as
    one block, and no more server CPU. ``ROW_COUNT()`` counts as the connection's own
    affected rows do (matched rows: SQLAlchemy connects with ``CLIENT.FOUND_ROWS``), and a
    count other than expected raises a ``SIGNAL`` naming the write, which the block's
    error stops at, as a multi-statement query stops at a failing statement (the count it
    saw is left in ``@weave_deferred_rows`` for the message).
    """
    parts = ["BEGIN NOT ATOMIC"]
    for index, (text, want) in enumerate(zip(texts, expected, strict=True)):
        parts.append(f" {text};")
        if want is not None:
            parts.append(f" IF ROW_COUNT() <> {int(want)} THEN SET @weave_deferred_rows = "
                         f"ROW_COUNT(); SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = "
                         f"'{MISMATCH}{index}'; END IF;")
    parts.append(" END")
    return "".join(parts)


def mismatched(exc: DBAPIError) -> int | None:
    """The index of the queued write whose row count the block refused, if that is the
    error."""
    if mysql_error_code(exc) != _SIGNAL:
        return None
    args: tuple[Any, ...] = tuple(getattr(exc.orig, "args", ()))
    message = str(args[1]) if len(args) > 1 else ""
    return int(message[len(MISMATCH):]) if message.startswith(MISMATCH) else None


def _text(value: str) -> str:
    return "'" + escape_string(value) + "'"


def _time(value: datetime) -> str:
    if value.tzinfo is not None:  # PyMySQL drops the zone: its own path says how
        return str(pymysql.converters.escape_datetime(value))
    return "'" + value.isoformat(" ") + "'"  # escape_datetime's text, built in C


_LITERALS: dict[type, Callable[[Any], str]] = {
    str: _text, int: str, bool: lambda v: "1" if v else "0", type(None): lambda _: "NULL",
    datetime: _time,
}
"""The values the engine binds most, escaped by PyMySQL's own functions without its
generic dispatch (a third of a step's client time went to escaping ~190 values)."""


def mogrify(dbapi: Any, cursor: Any, sql: str, params: dict[str, Any]) -> str:
    """``cursor.mogrify(sql, params)``, the same text (a test compares them), cheaper:
    the common types take :data:`_LITERALS`; any other value, and a server in
    ``NO_BACKSLASH_ESCAPES`` mode, take PyMySQL's own path."""
    if not params or dbapi.server_status & SERVER_STATUS.SERVER_STATUS_NO_BACKSLASH_ESCAPES:
        return str(cursor.mogrify(sql, params or None))
    escape = dbapi.escape
    return sql % {key: (_LITERALS.get(type(value)) or escape)(value)
                  for key, value in params.items()}


@dataclass(frozen=True)
class Join:
    """How a group of statements goes out: ``one`` alone, a ``union`` of reads, or a
    compound ``block`` of queued writes with their expected row counts."""

    kind: str
    counts: tuple[int | None, ...] = ()

    def __call__(self, texts: list[str]) -> str:
        if self.kind == "block":
            return as_block(texts, self.counts)
        if self.kind == "union":
            return as_union(texts)
        return texts[0]


ONE = Join("one")
UNION = Join("union")
_COMPOSED: dict[tuple[Join, tuple[str, ...]], str] = {}
"""Shapes of blocks and unions, joined once: a step's block of a dozen writes is the same
text every time (its parts are the cached shapes of ``prepared.template``)."""


def texts(dbapi: Any, cursor: Any, prepare: Callable[[str], object],
          statements: Sequence[tuple[str, dict[str, Any]]],
          groups: Sequence[tuple[range, Join]], mariadb: bool) -> list[str]:
    """The query texts of ``statements``, each group joined (a compound block, a union,
    or one statement alone): on MariaDB an ``EXECUTE`` of the group's prepared shape
    (``storage/prepared.py``), else (or for a shape that cannot be prepared) the plain
    text."""
    shapes: list[tuple[str, list[str]] | None] = [None] * len(statements)
    if mariadb and PREPARED and not (
            dbapi.server_status & SERVER_STATUS.SERVER_STATUS_NO_BACKSLASH_ESCAPES):
        shapes = [shape(dbapi, sql, params) for sql, params in statements]
    candidates: list[int] = []
    joined: list[str] = []
    values: list[list[str]] = []
    for index, (members, join) in enumerate(groups):
        parts = [shapes[i] for i in members]
        if None in parts:
            continue
        candidates.append(index)
        if join is ONE:
            part = parts[0]
            assert part is not None
            joined.append(part[0])
            values.append(part[1])
            continue
        key = (join, tuple(part[0] for part in parts if part is not None))
        text = _COMPOSED.get(key)
        if text is None:
            if len(_COMPOSED) >= 1024:
                _COMPOSED.clear()
            text = _COMPOSED[key] = join(list(key[1]))
        joined.append(text)
        values.append([v for part in parts if part is not None for v in part[1]])
    texts: list[str | None] = [None] * len(groups)
    if candidates:
        for index, text in zip(candidates, prepared.executes(dbapi, prepare, joined, values),
                               strict=True):
            texts[index] = text
    return [text if text is not None else
            join([mogrify(dbapi, cursor, *statements[i]) for i in members])
            for text, (members, join) in zip(texts, groups, strict=True)]


PREPARED = True
"""Send MariaDB's statements as prepared shapes (tests turn it off to compare)."""
_SEEN: dict[Any, str] = {}
"""Literals of short strings and of times already escaped: a step binds its namespace,
instance, task and activation ids and its database time a dozen times each."""


def shape(dbapi: Any, sql: str, params: dict[str, Any]) -> tuple[str, list[str]] | None:
    """The statement's shape and its values as SQL literals; None when a value has no
    single literal (a sequence, which PyMySQL spells as a parenthesised list)."""
    shape, names = prepared.template(sql, params)
    literals: list[str] = []
    append, renders, seen = literals.append, _LITERALS, _SEEN
    for name in names:
        value = params[name]
        kind = type(value)
        if kind is str or kind is datetime:  # ids, names, times: the same few, many times
            literal = seen.get(value)
            if literal is None:
                literal = renders[kind](value)
                if len(literal) <= 160:
                    if len(seen) >= 8192:
                        seen.clear()
                    seen[value] = literal
            append(literal)
            continue
        render = renders.get(kind)
        if render is not None:
            append(render(value))
            continue
        if isinstance(value, list | tuple | set | frozenset | dict):
            return None
        append(dbapi.escape(value))
    return shape, literals


__all__ = [
    "MISMATCH", "ONE", "PREPARED", "UNION", "Join", "as_block", "as_union", "mismatched",
    "mogrify", "shape", "texts", "widened",
]
