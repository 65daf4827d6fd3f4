"""Ids of inbox rows on MariaDB, numbered by the engine process in blocks of a sequence.

Why: a step writes its result's inbox row and names the row's id in the audit row and in
the instance's history, in the same transaction. An ``AUTO_INCREMENT`` id exists only
once the INSERT ran, so every step spent a round trip waiting for it. The sequence
``weave_inbox_ids`` (migration 0009) steps by a block's size; a process takes one
``NEXTVAL`` — a block — at a time on the connection at hand (a sequence is not
transactional: the value is reserved at once, holds no lock until the commit, and a
rollback leaves a gap), numbers its rows from it, and the INSERT is queued with the
other writes (``storage/deferred.py``). Every inbox row on MariaDB takes its id here, so
ids never collide with the table's ``AUTO_INCREMENT``. Ids increase within a process;
across processes they interleave by block. MySQL and SQLite number rows themselves
(:func:`next_inbox_id` answers None there).
"""

from __future__ import annotations

import threading

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from weave_core.foundation.per_process import PerEngine

SEQUENCE = "weave_inbox_ids"

_NEXT = sa.text(f"SELECT NEXTVAL({SEQUENCE}), increment FROM {SEQUENCE}")


class _Blocks:
    """The ids this process holds: ``[next, end)`` ranges, used in order."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.ranges: list[list[int]] = []


_blocks: PerEngine[_Blocks] = PerEngine(_Blocks)


def next_inbox_id(conn: Connection) -> int | None:
    """The id of the inbox row about to be written on ``conn`` (MariaDB); None where the
    table numbers its rows itself. Takes a new block, one ``NEXTVAL`` on ``conn``, when
    this process's are used up (with no lock of its own held meanwhile: two threads that
    both found none each take one, and keep both)."""
    if not getattr(conn.dialect, "is_mariadb", False):
        return None
    blocks = _blocks.of(conn.engine)
    with blocks.lock:
        if blocks.ranges:
            held = blocks.ranges[0]
            taken = held[0]
            held[0] += 1
            if held[0] >= held[1]:
                blocks.ranges.pop(0)
            return taken
    start, size = (int(v) for v in conn.execute(_NEXT).one())
    if size > 1:
        with blocks.lock:
            blocks.ranges.append([start + 1, start + size])
    return start


__all__ = ["SEQUENCE", "next_inbox_id"]
