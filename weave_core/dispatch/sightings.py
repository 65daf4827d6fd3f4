"""Which workers serve which (queue, handler, version): sightings from claim requests.

Every claim request declares its worker and handlers. Writing that per claim would put a
statement on the claim path, so each process keeps what it saw in memory (:class:`Sightings`,
a dict write per declared handler) and upserts it into ``weave_worker_sightings`` at most
once every ``FLUSH_INTERVAL_S`` seconds, in a transaction of its own, never inside a claim
or step transaction. ``last_seen_at`` is the database time of the upsert, so a sighting is
late by at most the flush interval.

A task PENDING for a (queue, handler, version) that no worker has asked for within
``HANDLER_SEEN_WINDOW_S`` waits for a handler nobody serves: the instance view shows the
wait reason ``handler_unavailable`` (:func:`handler_unavailable`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.dialects import mysql, sqlite
from sqlalchemy.engine import Connection

from weave_core.storage.db import Database
from weave_core.storage.schema import weave_worker_sightings

logger = logging.getLogger(__name__)

FLUSH_INTERVAL_S: Final = 5.0
"""A process writes what it saw at most this often."""
HANDLER_SEEN_WINDOW_S: Final = 60
"""A handler version no worker asked for within this window is ``handler_unavailable``."""
HANDLER_UNAVAILABLE: Final = "handler_unavailable"

Key = tuple[str, str, str, str, str]  # namespace, queue, handler, version, worker


class Sightings:
    """What one process saw in claim requests since its last flush (thread-safe)."""

    def __init__(self, interval_s: float = FLUSH_INTERVAL_S) -> None:
        self._lock = threading.Lock()
        self._seen: set[Key] = set()
        self._interval = interval_s
        self._last_flush = float("-inf")
        self._flushing = False

    def note(self, namespace: str, queue: str, worker_id: str,
             handlers: Iterable[tuple[str, str]]) -> bool:
        """Record one claim request; True when a flush is due (the caller starts one
        off the request path)."""
        with self._lock:
            for name, version in handlers:
                self._seen.add((namespace, queue, name, version, worker_id))
            due = (not self._flushing and bool(self._seen)
                   and time.monotonic() - self._last_flush >= self._interval)
            if due:
                self._flushing = True
            return due

    def flush(self, db: Database) -> int:
        """Upsert what was seen (one statement, its own transaction); returns the rows
        written. A failed flush keeps the sightings for the next one."""
        with self._lock:
            batch, self._seen = self._seen, set()
        try:
            if batch:
                db.transaction(lambda conn: _upsert(conn, db, sorted(batch)),
                               name="flush_sightings")
        except Exception:
            logger.exception("could not write %d worker sightings; kept for later", len(batch))
            with self._lock:
                self._seen |= batch
            return 0
        finally:
            with self._lock:
                self._flushing = False
                self._last_flush = time.monotonic()
        return len(batch)


def _upsert(conn: Connection, db: Database, keys: list[Key]) -> None:
    now = db.now(conn)
    rows = [dict(namespace=n, queue=q, handler=h, handler_version=v, worker_id=w,
                 last_seen_at=now) for n, q, h, v, w in keys]
    t = weave_worker_sightings
    if conn.dialect.name == "sqlite":
        stmt: Any = sqlite.insert(t)
        stmt = stmt.on_conflict_do_update(
            index_elements=["namespace", "queue", "handler", "handler_version", "worker_id"],
            set_={"last_seen_at": stmt.excluded.last_seen_at})
    else:
        stmt = mysql.insert(t)
        stmt = stmt.on_duplicate_key_update(last_seen_at=stmt.inserted.last_seen_at)
    conn.execute(stmt, rows)


def seen_in_queue(conn: Connection, namespace: str, queue: str) -> list[dict[str, Any]]:
    """Every (handler, version, worker) seen on ``queue``, most recently seen first."""
    t = weave_worker_sightings
    rows = conn.execute(sa.select(t).where(t.c.namespace == namespace, t.c.queue == queue)
                        .order_by(t.c.last_seen_at.desc(), t.c.handler, t.c.worker_id))
    return [{"handler": r.handler, "handler_version": r.handler_version,
             "worker_id": r.worker_id, "last_seen_at": r.last_seen_at} for r in rows]


def last_seen(conn: Connection, namespace: str,
              wanted: Iterable[tuple[str, str, str]]) -> dict[tuple[str, str, str], datetime]:
    """The latest sighting of each (queue, handler, version) (absent: never seen)."""
    keys = sorted(set(wanted))
    if not keys:
        return {}
    t = weave_worker_sightings
    rows = conn.execute(
        sa.select(t.c.queue, t.c.handler, t.c.handler_version,
                  sa.func.max(t.c.last_seen_at).label("seen"))
        .where(t.c.namespace == namespace,
               sa.tuple_(t.c.queue, t.c.handler, t.c.handler_version).in_(keys))
        .group_by(t.c.queue, t.c.handler, t.c.handler_version))
    return {(r.queue, r.handler, r.handler_version): r.seen for r in rows}


def handler_unavailable(last: datetime | None, now: datetime) -> bool:
    """No worker asked for the handler within the window."""
    return last is None or last < now - timedelta(seconds=HANDLER_SEEN_WINDOW_S)


__all__ = ["FLUSH_INTERVAL_S", "HANDLER_SEEN_WINDOW_S", "HANDLER_UNAVAILABLE", "Sightings",
           "handler_unavailable", "last_seen", "seen_in_queue"]
