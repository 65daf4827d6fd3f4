"""Which version a start of a definition name resolved to last in this process: a start
whose program is compiled already skips its look-up transaction and checks the guess in
its own opening reads instead (one round trip of reads and a commit less per start).

A named version never changes (versions are immutable), so a guess for it is always right.
``latest`` moves when a newer version is published: the start reads the name's head in
the same round trip as its locks, and a head that is not the guessed one rolls the start
back (:class:`StaleHead`) to be run again the long way, which looks the name up first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Final

import sqlalchemy as sa

from weave_core.definitions.store import LATEST, DefinitionHead
from weave_core.engine import Engine
from weave_core.storage.schema import weave_definitions

SIZE: Final = 4096
_heads: OrderedDict[tuple[int, str, str, str], DefinitionHead] = OrderedDict()
_lock = threading.Lock()


class StaleHead(Exception):
    """The name's head moved since the guess: start again, looking the name up first."""


def _key(engine: Engine, namespace: str, definition_id: str, version: str
         ) -> tuple[int, str, str, str]:
    return (id(engine), namespace, definition_id, version or LATEST)


def guess(engine: Engine, namespace: str, definition_id: str, version: str
          ) -> DefinitionHead | None:
    """The head a start of this name resolved to last, if any."""
    with _lock:
        return _heads.get(_key(engine, namespace, definition_id, version))


def remember(engine: Engine, namespace: str, definition_id: str, version: str,
             head: DefinitionHead) -> None:
    with _lock:
        key = _key(engine, namespace, definition_id, version)
        _heads[key] = head
        _heads.move_to_end(key)
        while len(_heads) > SIZE:
            _heads.popitem(last=False)


def forget(engine: Engine, namespace: str, definition_id: str, version: str) -> None:
    with _lock:
        _heads.pop(_key(engine, namespace, definition_id, version), None)


def head_read(namespace: str, definition_id: str, version: str
              ) -> tuple[str, Callable[[], sa.Select[Any]], dict[str, Any]]:
    """The read of the name's current head, as a start's opening round trip takes its
    reads: ``(name, build, params)``."""
    latest = (version or LATEST) == LATEST
    params = {"w_ns": namespace, "w_def": definition_id}

    def build() -> sa.Select[Any]:
        t = weave_definitions
        stmt = sa.select(t.c.version, t.c.content_hash).where(
            t.c.namespace == sa.bindparam("w_ns"), t.c.definition_id == sa.bindparam("w_def"))
        if latest:
            return stmt.order_by(t.c.seq.desc()).limit(1)
        return stmt.where(t.c.version == sa.bindparam("w_ver"))

    if latest:
        return "head.latest", build, params
    return "head.version", build, {**params, "w_ver": version}


def check(rows: list[Any], head: DefinitionHead) -> None:
    """Raise :class:`StaleHead` unless ``rows`` (the head read) name ``head``."""
    if not rows or rows[0][0] != head.version or rows[0][1] != head.content_hash:
        raise StaleHead


__all__ = ["StaleHead", "check", "forget", "guess", "head_read", "remember"]
