"""Waiting for an instance's outcome: the long poll behind ``GET …/workflows/{id}/result``.

A client that wants an instance's result asks once and is answered when the instance is
*done* — SUCCEEDED, FAILED, CANCELLED or NEEDS_REVIEW — or when its wait runs out, instead
of reading the whole description again and again. The answer is one narrow read of the
instance row.

Waiters of one process share one :class:`OutcomeHub` per database. They wake when:

- a transaction of this process that moved an instance to a done status commits
  (:meth:`LockedInstance.flush <weave_core.runtime.snapshot.LockedInstance.flush>` calls
  :func:`note_done_txn`; ``weave_core.foundation.aftercommit`` wakes the waiters after the commit,
  never before, and a rollback discards it). When that transaction knew every column of the
  answer (an instance that succeeded), the waiters get the committed outcome with the wake-up
  and answer without reading the row again: the step that finished the instance is the last
  thing between the worker's report and the client's answer;
- their re-read comes round: every :data:`RECHECK_S` seconds while they wait, which catches
  instances another engine process settled.

No connection is held while waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from weave_core.foundation.aftercommit import later, note, subscribe
from weave_core.foundation.errors import NotFoundError
from weave_core.foundation.exactjson import JSON
from weave_core.foundation.per_process import LoopWaiter
from weave_core.observability.metrics import LONG_POLL_WAITERS
from weave_core.runtime.instances import InstanceStatus, load_json
from weave_core.storage.db import Database
from weave_core.storage.schema import weave_instances

DONE: Final = frozenset({InstanceStatus.SUCCEEDED, InstanceStatus.FAILED,
                         InstanceStatus.CANCELLED, InstanceStatus.NEEDS_REVIEW})
"""Statuses a result waiter is answered in (NEEDS_REVIEW waits for a person)."""
RECHECK_S: Final = 1.0
"""How often a waiter re-reads the instance (changes made by other engine processes)."""
MAX_WAIT_S: Final = 60
"""The longest ``wait_seconds`` a result request may ask for."""

Key = tuple[str, str]  # (namespace, instance id)


@dataclass(frozen=True)
class Outcome:
    """An instance's status and result, as one narrow read returns them."""

    workflow_id: str
    status: InstanceStatus
    paused: bool
    revision: int
    output: JSON
    review_reason: str | None
    settled_at: datetime | None
    updated_at: datetime

    @property
    def done(self) -> bool:
        return self.status in DONE


_I = weave_instances
_READ = (
    sa.select(_I.c.instance_id, _I.c.status, _I.c.paused, _I.c.revision, _I.c.output,
              _I.c.review_reason, _I.c.settled_at, _I.c.updated_at)
    .where(_I.c.instance_id == sa.bindparam("id"), _I.c.namespace == sa.bindparam("ns"))
)


def read_outcome(db: Database, namespace: str, instance_id: str) -> Outcome:
    """The instance's outcome now (``NotFoundError`` if it is not in ``namespace``)."""
    row: Any = db.read(lambda conn: conn.execute(_READ, {"id": instance_id, "ns": namespace})
                       .one_or_none(), name="read_outcome")
    if row is None:
        raise NotFoundError(f"workflow {instance_id!r} not found",
                            details={"workflow_id": instance_id})
    return Outcome(row.instance_id, InstanceStatus(row.status), bool(row.paused),
                   int(row.revision), load_json(row.output), row.review_reason,
                   row.settled_at, row.updated_at)


class Waiter(LoopWaiter):
    """One waiting request; ``committed`` is the outcome a commit handed over with the
    wake-up (None: read the row)."""

    __slots__ = ("committed",)

    def __init__(self) -> None:
        super().__init__()
        self.committed: Outcome | None = None


class OutcomeHub:
    """This process's waiters on instances of one database."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiters: dict[Key, set[Waiter]] = {}
        self.draining = False
        """The server is stopping: result waits answer at once (``drain``)."""

    def drain(self) -> None:
        """End every result wait of this process now (graceful shutdown) and from now on."""
        self.draining = True
        with self._lock:
            keys = list(self._waiters)
        self.notify(keys)

    def notify(self, keys: Iterable[Key]) -> None:
        """Wake the waiters of these instances (thread-safe; any thread)."""
        with self._lock:
            targets = [w for key in keys for w in self._waiters.get(key, ())]
        for waiter in targets:
            waiter.wake()

    def settled(self, key: Key, outcome: Callable[[], Outcome]) -> None:
        """A commit made ``key`` done with this outcome: hand it to its waiters and wake
        them (``outcome`` is built only when someone waits)."""
        with self._lock:
            targets = list(self._waiters.get(key, ()))
        if targets:
            answer = outcome()
            for waiter in targets:
                waiter.committed = answer
                waiter.wake()

    @contextmanager
    def watching(self, key: Key) -> Iterator[Waiter]:
        """A waiter woken whenever ``key`` is notified, for the block (register first, then
        read: a commit between the read and the wait is never missed)."""
        waiter = Waiter()
        with self._lock:
            self._waiters.setdefault(key, set()).add(waiter)
        try:
            yield waiter
        finally:
            with self._lock:
                waiters = self._waiters.get(key)
                if waiters is not None:
                    waiters.discard(waiter)
                    if not waiters:
                        del self._waiters[key]


_hubs: weakref.WeakKeyDictionary[Engine, OutcomeHub] = weakref.WeakKeyDictionary()
_hubs_lock = threading.Lock()
_CHANNEL: Final = "outcomes"


def outcome_hub(db: Database) -> OutcomeHub:
    """This process's hub for ``db`` (created, with its commit subscription, on first use)."""
    with _hubs_lock:
        hub = _hubs.get(db.engine)
        if hub is None:
            hub = OutcomeHub()
            _hubs[db.engine] = hub
            subscribe(db.engine, _CHANNEL, hub.notify)
        return hub


def note_done_txn(conn: Connection, namespace: str, instance_id: str,
                  outcome: Callable[[], Outcome] | None = None) -> None:
    """Inside a transaction: wake this instance's result waiters once it commits; with
    ``outcome`` (every column of the answer, as this transaction leaves them) they answer
    with it instead of reading the row again."""
    hub = _hubs.get(conn.engine)
    if outcome is None or hub is None:  # no hub: nobody has waited in this process yet
        note(conn, _CHANNEL, (namespace, instance_id))
        return
    # whoever waits at the commit (a waiter may come during the transaction) gets it
    later(conn, partial(hub.settled, (namespace, instance_id), outcome))


async def wait_outcome(db: Database, namespace: str, instance_id: str,
                       wait_seconds: float) -> Outcome:
    """The instance's outcome as soon as it is done, or after ``wait_seconds`` (0: now)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + wait_seconds
    hub = outcome_hub(db)
    with hub.watching((namespace, instance_id)) as waiter, \
            LONG_POLL_WAITERS.labels("result").track_inprogress():
        while True:
            waiter.event.clear()
            outcome = waiter.committed
            if outcome is None:
                outcome = await asyncio.to_thread(read_outcome, db, namespace, instance_id)
            remaining = end - loop.time()
            if outcome.done or remaining <= 0 or hub.draining:
                return outcome
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(min(remaining, RECHECK_S)):
                    await waiter.event.wait()


__all__ = [
    "DONE", "MAX_WAIT_S", "RECHECK_S", "Outcome", "OutcomeHub", "Waiter", "note_done_txn",
    "outcome_hub", "read_outcome", "wait_outcome",
]
