"""A transaction's capacity changes kept in memory and written once at its end.

A step transaction (``weave_core.runtime.step``) settles one task and usually creates its
successor on the same queue: one unit given back, one taken, a net change of nothing. It
runs under a :class:`CapacityLedger` and takes neither row lock up front: releases and
reservations go to the ledger, a reservation is only allowed against a unit released in
the same transaction (so the count never rises: I5 holds without reading the row), and
only a net release is written, at the end, into a release shard of each counter
(``dispatch.releases``) taken with ``SKIP LOCKED``. Anything else — a reservation with
nothing released, no shard free — raises :class:`CapacityLocksNeeded` and the caller
re-runs the whole transaction with the locks taken in order.

A start holds the quota and queue locks and reads, under them, how many units are free:
its ledger carries that :class:`Budget`, its reservations take from it in memory, and the
end writes one UPDATE per counter instead of a conditional UPDATE per task (a fan-out of
ten: twenty statements, each its own round trip, fewer); a reservation past the budget
asks for the classic start, which meets the full queue as before.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from weave_core.dispatch.releases import QUOTA, give_back, released
from weave_core.storage.schema import weave_namespace_quotas, weave_queues
from weave_core.storage.statements import run_prebuilt

_Q, _U = weave_namespace_quotas, weave_queues

_ADD_QUOTA = (  # a budget's takes: the row is locked and the units were free
    sa.update(_Q).where(_Q.c.namespace == sa.bindparam("ns"))
    .values(outstanding=_Q.c.outstanding + sa.bindparam("units"), updated_at=sa.bindparam("now"))
)
_ADD_PERMITS = (
    sa.update(_U).where(_U.c.namespace == sa.bindparam("ns"), _U.c.name == sa.bindparam("queue"))
    .values(outstanding=_U.c.outstanding + sa.bindparam("units"), updated_at=sa.bindparam("now"))
)

_LEDGER_KEY: Final = "weave_capacity_ledger"


class CapacityLocksNeeded(Exception):
    """A ledger transaction needs the quota and queue locks: roll it back and re-run it
    with them taken in the R-6.2 order (never seen outside ``weave_core``)."""


@dataclass
class CapacityLedger:
    """The net counter changes of one transaction: a step's, which holds no capacity
    lock, or a start's, which holds them and knows the units free (its ``budget``)."""

    namespace: str
    quota: int = 0
    queues: dict[str, int] = field(default_factory=dict)
    budget: Budget | None = None

    def release(self, queue: str) -> None:
        self.quota -= 1
        self.queues[queue] = self.queues.get(queue, 0) - 1

    def reserve(self, queue: str) -> None:
        """Take back a unit released earlier in this transaction, or one of the budget's
        free units, or ask for the locks."""
        if self.quota >= 0 or self.queues.get(queue, 0) >= 0:
            if self.budget is None or not self.budget.take(queue):
                raise CapacityLocksNeeded(queue)
        self.quota += 1
        self.queues[queue] = self.queues.get(queue, 0) + 1

    def apply(self, conn: Connection, now: datetime) -> None:
        """Write the net releases (the only change a ledger can net to) into release
        shards taken without waiting; raise :class:`CapacityLocksNeeded` when a counter
        has no shard free."""
        taken = {queue: n for queue, n in sorted(self.queues.items()) if n > 0}
        if self.quota > 0 or taken:  # only a budget takes: its rows are locked, in order
            assert self.budget is not None, "a ledger without a budget never nets above 0"
            params = {"ns": self.namespace, "now": now}
            if self.quota > 0:
                run_prebuilt(conn, "add_quota", lambda: _ADD_QUOTA,
                             {**params, "units": self.quota}, queue=True, rows=1)
            for queue, n in taken.items():
                run_prebuilt(conn, "add_permits", lambda: _ADD_PERMITS,
                             {**params, "queue": queue, "units": n}, queue=True, rows=1)
        units = {queue: -n for queue, n in self.queues.items() if n < 0}
        if self.quota < 0:
            units[QUOTA] = -self.quota
        if units and not give_back(conn, self.namespace, units):
            raise CapacityLocksNeeded("release shards")


@dataclass
class Budget:
    """The units a transaction that holds the quota and queue locks knows to be free (read
    under those locks, release shards subtracted): its reservations take them in memory
    and :meth:`CapacityLedger.apply` writes one UPDATE per counter, instead of a
    conditional UPDATE (and a round trip) per task, and the advance needs no savepoint to
    undo a reservation that meets a full queue: a reservation past the budget asks for
    the locks (the caller re-runs the start the classic way)."""

    quota: int
    queues: dict[str, int]

    def take(self, queue: str) -> bool:
        if self.quota <= 0 or self.queues.get(queue, 0) <= 0:
            return False
        self.quota -= 1
        self.queues[queue] -= 1
        return True


def budget_of(conn: Connection, namespace: str, quota: Any, queues: Sequence[Any]) -> Budget:
    """The units free under the locks a start holds: the quota row (``task_quota``,
    ``outstanding``; None: never used) and the queue rows found (``name``, ``capacity``,
    ``outstanding``), less what their release shards hold (a queue without a row has no
    free unit here: its first start takes the classic way, which creates the row)."""
    free = 0 if quota is None else \
        int(quota.task_quota) - (int(quota.outstanding) - released(conn, namespace, QUOTA))
    return Budget(free, {str(q.name): int(q.capacity) - (
        int(q.outstanding) - released(conn, namespace, str(q.name))) for q in queues})


@contextmanager
def capacity_ledger(conn: Connection, namespace: str, budget: Budget | None = None
                    ) -> Iterator[CapacityLedger]:
    """Route :func:`reserve_txn` and :func:`release_txn` of ``namespace`` on ``conn`` to
    a ledger for the block; the caller calls :meth:`CapacityLedger.apply` before commit.
    ``budget``: the caller holds the capacity locks and these units are free."""
    ledger = CapacityLedger(namespace, budget=budget)
    conn.info[_LEDGER_KEY] = ledger
    try:
        yield ledger
    finally:
        conn.info.pop(_LEDGER_KEY, None)


def under_ledger(conn: Connection) -> bool:
    """Does ``conn`` run under a :class:`CapacityLedger`? Then a reservation never meets a
    full queue or quota (it nets against a release or re-runs the transaction in order),
    so a caller needs no savepoint to undo one."""
    return _LEDGER_KEY in conn.info


def ledger_of(conn: Connection, namespace: str) -> CapacityLedger | None:
    ledger: CapacityLedger | None = conn.info.get(_LEDGER_KEY)
    return ledger if ledger is not None and ledger.namespace == namespace else None


__all__ = ["Budget", "CapacityLedger", "CapacityLocksNeeded", "budget_of", "capacity_ledger",
           "ledger_of", "under_ledger"]
