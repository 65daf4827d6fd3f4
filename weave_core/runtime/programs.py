"""Compiled programs, cached per engine by (namespace, definition id, version).

Published versions are immutable (R-2.3), so a compiled
:class:`~weave_core.planning.program.Program`
never goes stale; the cache is small and bounded (least recently used out first). An
instance runs the program of its pinned version *as it was accepted*
(:meth:`ProgramCache.for_instance`): compiled under the limits and with the step defaults
frozen at its start (``runtime.frozen``), cached under that configuration's hash too.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from typing import Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from weave_core.engine import Engine
from weave_core.foundation import exactjson
from weave_core.foundation.errors import NotFoundError
from weave_core.planning.program import Program, compile
from weave_core.runtime.frozen import effective_document, frozen_of
from weave_core.runtime.snapshot import LockedInstance
from weave_core.storage.schema import weave_definitions

CACHE_SIZE: Final = 256

Key = tuple[str, ...]


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

    def for_instance(self, conn: Connection, li: LockedInstance) -> Program:
        """The program ``li`` runs: its pinned version under its frozen configuration (the
        engine's current one for an instance started before it was recorded)."""
        if li.config_hash is None:
            return self.get(conn, li.namespace, li.definition_id, li.version)
        key = (li.namespace, li.definition_id, li.version, li.config_hash)
        program = self.cached(key)
        if program is not None:
            return program
        engine = self._engine()
        assert engine is not None, "engine closed"
        frozen = frozen_of(conn, engine.limits, li.config_hash)
        assert frozen is not None
        document = effective_document(
            self._document(conn, li.namespace, li.definition_id, li.version), frozen.steps)
        return self.put(key, compile(document, engine.plugins, frozen.limits))

    def get(self, conn: Connection, namespace: str, definition_id: str, version: str) -> Program:
        """The program of one pinned version, reading the document in ``conn`` on a miss."""
        key = (namespace, definition_id, version)
        program = self.cached(key)
        if program is not None:
            return program
        return self.compile_document(key, self._document(conn, namespace, definition_id,
                                                         version))

    def _document(self, conn: Connection, namespace: str, definition_id: str,
                  version: str) -> exactjson.JSON:
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
        return exactjson.loads_stored(text)


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
