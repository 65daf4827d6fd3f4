"""In-process wake-up of waiting claimers, and the one-probe-per-second idle watcher.

Claimers of one ``(namespace, queue)`` waiting in a long poll share one :class:`WakeupHub`
per database per process. They wake when:

- a transaction of this process that made a task claimable commits (the dispatch code
  calls :func:`note_available_txn` inside the transaction; ``weave_core.foundation.aftercommit``
  fires the wake-up after the commit, never before, and a rollback discards it);
- the queue's watcher sees claimable work: while anyone waits on a queue, one watcher per
  queue and process runs one cheap indexed probe (``ix_weave_tasks_claim``) at most once a
  second, and sleeps exactly until a known future ``available_at`` if that is sooner.
  This catches work made claimable by other processes, retries whose backoff ended and
  gates opened elsewhere. Idle cost: one probe transaction per second per watched queue per
  process, however many workers wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import weakref
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from weave_core.foundation.aftercommit import note, subscribe
from weave_core.foundation.per_process import LoopWaiter
from weave_core.storage.db import Database
from weave_core.storage.schema import weave_tasks

logger = logging.getLogger(__name__)

Key = tuple[str, str]  # (namespace, queue)

PROBE_INTERVAL_S: Final = 1.0

_hubs: weakref.WeakKeyDictionary[Engine, WakeupHub] = weakref.WeakKeyDictionary()
_hubs_lock = threading.Lock()


class _Waiter(LoopWaiter):
    """One long-polling claimer. ``parked``: it waits, it does not claim, so a transaction
    of this process may *reserve* it (``reserve``) and, after its commit, hand it the
    tasks it started for it (``hand``; with none, the claimer claims as usual)."""

    __slots__ = ("handed", "handler_keys", "key", "max_tasks", "parked", "reserved",
                 "worker_id")

    def __init__(self, key: Key, handler_keys: frozenset[str], worker_id: str,
                 max_tasks: int) -> None:
        super().__init__()
        self.key = key
        self.handler_keys = handler_keys
        self.worker_id = worker_id
        self.max_tasks = max_tasks
        self.parked = False
        self.reserved = False
        self.handed: list[Any] | None = None
        """The tasks a committed transaction started for this claimer."""


class WakeupHub:
    """Waiting claimers of one database in this process, by queue."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._lock = threading.Lock()
        self._waiters: dict[Key, set[_Waiter]] = {}
        self._watchers: dict[Key, asyncio.Task[None]] = {}
        self.probes = 0  # probe transactions run (tests and the idle benchmark read it)
        self.draining = False
        """The server is stopping: long polls answer at once (``drain``)."""

    def drain(self) -> None:
        """End every long poll of this process now (graceful shutdown) and from now on."""
        self.draining = True
        with self._lock:
            keys = list(self._waiters)
        self.notify(keys)

    def notify(self, keys: Iterable[Key]) -> None:
        """Wake everyone waiting on these queues (thread-safe; any thread)."""
        with self._lock:
            targets = [w for key in keys for w in self._waiters.get(key, ())]
        for waiter in targets:
            waiter.wake()

    def waiting(self, key: Key) -> int:
        with self._lock:
            return len(self._waiters.get(key, ()))

    def parked(self, key: Key) -> int:
        """How many of ``key``'s claimers wait with nothing to claim (a hand-off may take
        them)."""
        with self._lock:
            return sum(1 for waiter in self._waiters.get(key, ()) if waiter.parked)

    @contextlib.contextmanager
    def listening(self, key: Key, handler_keys: Iterable[str], worker_id: str = "",
                  max_tasks: int = 0) -> Iterator[_Waiter]:
        """A waiter woken whenever ``key`` is woken, for the whole block: a claimer that
        listens *before* it claims never misses a commit between its claim and its wait
        (which would otherwise cost it the watcher's next probe, up to a second). With
        ``max_tasks``, a transaction may hand it up to that many tasks while it is parked."""
        loop = asyncio.get_running_loop()
        waiter = _Waiter(key, frozenset(handler_keys), worker_id, max_tasks)
        with self._lock:
            self._waiters.setdefault(key, set()).add(waiter)
            watcher = self._watchers.get(key)
            if watcher is None or watcher.done() or watcher.get_loop() is not loop:
                self._watchers[key] = loop.create_task(self._watch(key))
        try:
            yield waiter
        finally:
            with self._lock:
                waiters = self._waiters.get(key)
                if waiters is not None:
                    waiters.discard(waiter)
                    if not waiters:
                        del self._waiters[key]

    # --- hand-offs to parked claimers (dispatch.handoff) ------------------------------

    def park(self, waiter: _Waiter) -> None:
        """The claimer found nothing and waits: a transaction may reserve it now."""
        with self._lock:
            waiter.parked = True

    def unpark(self, waiter: _Waiter) -> bool:
        """The claimer is about to claim: False (it must not) while a transaction holds it
        reserved or has handed it tasks."""
        with self._lock:
            if waiter.reserved or waiter.handed is not None:
                return False
            waiter.parked = False
            return True

    def reserve(self, namespace: str, queue: str, handler_key: str) -> _Waiter | None:
        """Take a parked claimer of the queue that runs the handler, for one transaction
        (None: none waits)."""
        with self._lock:
            for waiter in self._waiters.get((namespace, queue), ()):
                if waiter.parked and waiter.max_tasks > 0 and handler_key in waiter.handler_keys:
                    waiter.parked, waiter.reserved = False, True
                    return waiter
        return None

    def hand(self, waiter: _Waiter, tasks: list[Any]) -> bool:
        """The reserving transaction committed: give the claimer what it started for it
        (nothing: it claims as usual). False when the claimer left meanwhile."""
        with self._lock:
            waiter.reserved = False
            if tasks:
                waiter.handed = tasks
            present = waiter in self._waiters.get(waiter.key, ())
        waiter.wake()
        return present

    def _handler_keys(self, key: Key) -> frozenset[str]:
        with self._lock:
            return frozenset().union(*(w.handler_keys for w in self._waiters.get(key, ())))

    async def _watch(self, key: Key) -> None:
        """Probe the queue at most once a second while anyone waits on it."""
        try:
            while True:
                handler_keys = self._handler_keys(key)
                if not handler_keys:
                    return
                try:
                    due_in = await asyncio.to_thread(self._probe, key, handler_keys)
                except Exception:  # the database is down: waiters time out and retry
                    logger.warning("wake-up probe of %s failed", key, exc_info=True)
                    due_in = None
                if due_in is not None and due_in <= 0:
                    self.notify([key])
                    due_in = None
                delay = PROBE_INTERVAL_S if due_in is None else min(PROBE_INTERVAL_S, due_in)
                await asyncio.sleep(max(delay, 0.01))
        finally:
            with self._lock:
                current = self._watchers.get(key)
                if current is not None and current is asyncio.current_task():
                    del self._watchers[key]

    def pending(self, key: Key, handler_keys: Iterable[str]) -> bool:
        """Whether ``key`` has any task a claim of these handlers could take, due or not:
        one indexed read, cheaper than a claim transaction that finds nothing."""
        stmt = sa.select(sa.literal(1)).where(*_claimable(key, handler_keys)).limit(1)
        return self._db.read(lambda conn: conn.execute(stmt).first() is not None,
                             name="dispatch_claim_look")

    def _probe(self, key: Key, handler_keys: frozenset[str]) -> float | None:
        """Seconds until the oldest claimable task is due (<= 0: due now), None: none."""
        t = weave_tasks
        stmt = (sa.select(t.c.available_at).where(*_claimable(key, handler_keys))
                .order_by(t.c.available_at, t.c.task_id).limit(1))

        def _read(conn: Connection) -> tuple[datetime, datetime | None]:
            return self._db.now(conn), conn.execute(stmt).scalar_one_or_none()

        self.probes += 1
        now, first = self._db.read(_read, name="dispatch_wakeup_probe")
        return None if first is None else (first - now).total_seconds()


def _claimable(key: Key, handler_keys: Iterable[str]) -> list[sa.ColumnElement[bool]]:
    """PENDING tasks of ``key`` with an open gate for these handlers, due or not
    (``ix_weave_tasks_claim``)."""
    t = weave_tasks
    return [t.c.namespace == key[0], t.c.queue == key[1], t.c.status == "PENDING",
            t.c.gate_open == True,  # noqa: E712 - SQL comparison
            t.c.handler_key.in_(sorted(handler_keys))]


_CHANNEL: Final = "dispatch"


def hub_for(db: Database) -> WakeupHub:
    """This process's hub for ``db`` (created, with its commit subscription, on first use)."""
    with _hubs_lock:
        hub = _hubs.get(db.engine)
        if hub is None:
            hub = WakeupHub(db)
            _hubs[db.engine] = hub
            subscribe(db.engine, _CHANNEL, hub.notify)
        return hub


def note_available_txn(conn: Connection, namespace: str, queue: str) -> None:
    """Inside a transaction: wake this queue's claimers once the transaction commits."""
    note(conn, _CHANNEL, (namespace, queue))


async def cancel_watchers(db: Database) -> None:
    """Stop the watchers of ``db`` (server shutdown)."""
    hub = _hubs.get(db.engine)
    if hub is None:
        return
    with hub._lock:
        tasks = list(hub._watchers.values())
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError, RuntimeError):
            await task


__all__ = ["PROBE_INTERVAL_S", "WakeupHub", "cancel_watchers", "hub_for", "note_available_txn"]
