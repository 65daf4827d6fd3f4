"""Compiled programs, cached per engine by (namespace, definition id, version).

Published versions are immutable (R-2.3), so a compiled :class:`~weave_core.program.Program`
never goes stale; the cache is small and bounded (least recently used out first).
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from typing import Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from weave_core import exactjson
from weave_core.engine import Engine
from weave_core.errors import NotFoundError
from weave_core.program import Program, compile
from weave_core.schema import weave_definitions

CACHE_SIZE: Final = 256
_READ_MAX_DEPTH: Final = 512

Key = tuple[str, str, str]


class ProgramCache:
    """A thread-safe LRU of compiled programs for one engine (one plugin host and limits)."""

    def __init__(self, engine: Engine, size: int = CACHE_SIZE) -> None:
        self._engine = weakref.ref(engine)
        self._size = size
        self._lock = threading.Lock()
        self._items: OrderedDict[Key, Program] = OrderedDict()

    def cached(self, key: Key) -> Program | None:
        with self._lock:
            program = self._items.get(key)
            if program is not None:
                self._items.move_to_end(key)
            return program

    def put(self, key: Key, program: Program) -> Program:
        with self._lock:
            self._items[key] = program
            self._items.move_to_end(key)
            while len(self._items) > self._size:
                self._items.popitem(last=False)
        return program

    def compile_document(self, key: Key, document: exactjson.JSON) -> Program:
        engine = self._engine()
        assert engine is not None, "engine closed"
        return self.put(key, compile(document, engine.plugins, engine.limits))

    def get(self, conn: Connection, namespace: str, definition_id: str, version: str) -> Program:
        """The program of one pinned version, reading the document in ``conn`` on a miss."""
        key = (namespace, definition_id, version)
        program = self.cached(key)
        if program is not None:
            return program
        t = weave_definitions
        text = conn.execute(
            sa.select(t.c.document).where(
                t.c.namespace == namespace,
                t.c.definition_id == definition_id,
                t.c.version == version,
            )
        ).scalar_one_or_none()
        if text is None:
            raise NotFoundError(
                f"definition {definition_id!r} version {version!r} not found",
                details={"definition_id": definition_id, "version": version},
            )
        return self.compile_document(key, exactjson.loads(text, max_depth=_READ_MAX_DEPTH))


_caches: dict[int, ProgramCache] = {}
_caches_lock = threading.Lock()


def programs(engine: Engine) -> ProgramCache:
    """The program cache of ``engine`` (created on first use, dropped with the engine)."""
    key = id(engine)
    with _caches_lock:
        cache = _caches.get(key)
        if cache is None:
            cache = _caches[key] = ProgramCache(engine)
            weakref.finalize(engine, _caches.pop, key, None)
        return cache


__all__ = ["CACHE_SIZE", "ProgramCache", "programs"]
