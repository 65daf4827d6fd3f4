"""Handing a new task straight to a worker: the one whose report created it (``claim_next``),
or one parked in this process's long poll (``parked_claimer``).

A step transaction settles a worker's task and, in the same transaction, usually creates
the successor on the same queue. When the worker asked for more (``claim_next``) and serves
the successor's handler, the task is created already started: RUNNING, with its attempt
and lease, for that worker — one INSERT each instead of an INSERT, a claim's locking read
and an UPDATE — and handed back in the answer. Nothing else differs from a claim: the
attempt, the ``task.created`` and ``task.started`` events, the lease rules of ``timing``.

Only under a capacity ledger (``queues.CapacityLedger``), where no savepoint can roll a
created task back while its hand-off stays in memory; a step re-run in lock order leaves
its successors to the claim that follows. Only a task that could be claimed this instant
qualifies: its gate open, no deadline or
schedule-to-start limit already passed. A claim of the same worker for the room left then
runs as usual (older tasks of the queue are not starved: they are next in the claim order
for every other claimer).

A start (or any transaction that creates tasks) may take a claimer that waits in this
process's long poll (``wakeup``) the same way: under :func:`parked_claimer`, the first
task the transaction creates that a parked claimer serves reserves that claimer — a
reserved claimer does not claim — the tasks that fit start for it, and after the COMMIT
they are its answer; a transaction that rolls back, or hands nothing, releases it to
claim as usual. A claimer that went away meanwhile (its client
disconnected) leaves its tasks to their lease, like an answer lost on the way.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from types import SimpleNamespace
from typing import Any, Final

from sqlalchemy.engine import Connection

from weave_core.dispatch.ledger import under_ledger
from weave_core.dispatch.model import ClaimedTask, TaskStatus, new_id, parse_document
from weave_core.dispatch.timing import lease_seconds, lease_until
from weave_core.dispatch.wakeup import WakeupHub, hub_for
from weave_core.foundation.aftercommit import later
from weave_core.storage.db import Database
from weave_core.storage.schema import weave_task_attempts, weave_task_events
from weave_core.storage.statements import append_row, insert_rows

_KEY: Final = "weave_claim_handoff"
logger = logging.getLogger(__name__)


@dataclass
class Handoff:
    """The ``claim_next`` of a report: who may take tasks created now, and how many."""

    namespace: str
    queue: str
    worker_id: str
    handler_keys: frozenset[str]
    room: int
    claimed: list[ClaimedTask] = field(default_factory=list)
    owners: dict[str, str] = field(default_factory=dict)
    """task id → the activation that owns it, for each task handed off."""
    parked: ParkedClaimer | None = None
    """Whom to reserve when the first task that fits is created (``worker_id`` empty)."""


@contextmanager
def handing_off(conn: Connection, handoff: Handoff) -> Iterator[Handoff]:
    """Inside the block, tasks created on ``conn`` that fit start for the worker."""
    conn.info[_KEY] = handoff
    try:
        yield handoff
    finally:
        conn.info.pop(_KEY, None)


def start_if_handed_off(conn: Connection, row: dict[str, Any], now: datetime) -> bool:
    """Called by ``create_task_txn`` with the new task's row before it is inserted: when a
    hand-off takes it, the row becomes RUNNING with an attempt (inserted here, with the
    ``task.started`` event) and True is returned."""
    handoff: Handoff | None = conn.info.get(_KEY)
    if (handoff is None or not under_ledger(conn) or row["namespace"] != handoff.namespace
            or not row["gate_open"] or row["available_at"] > now
            or (row["deadline_at"] is not None and row["deadline_at"] <= now)):
        return False
    if not handoff.worker_id and handoff.parked is not None:  # reserve one now
        handoff.parked.bind(handoff, row["queue"], row["handler_key"])
    if (not handoff.worker_id or handoff.room <= len(handoff.claimed)
            or row["queue"] != handoff.queue or row["handler_key"] not in handoff.handler_keys):
        return False
    task = SimpleNamespace(**row)
    attempt_id = new_id("att")
    close_by = None
    if task.start_to_close_s:
        close_by = now + timedelta(seconds=int(task.start_to_close_s))
    seconds = lease_seconds(task)  # type: ignore[arg-type]  # the row's columns, by name
    lease = lease_until(now, seconds, close_by, task.deadline_at)
    row.update(status=TaskStatus.RUNNING.value, revision=2, attempts_used=1,
               current_attempt_id=attempt_id, start_by=None, timeout_at=lease)
    insert_rows(conn, weave_task_attempts, dict(
        attempt_id=attempt_id, task_id=task.task_id, namespace=task.namespace, attempt_no=1,
        worker_id=handoff.worker_id, started_at=now, lease_expires_at=lease,
        close_by=close_by, heartbeat_at=None, finished_at=None, outcome=None,
        report_hash=None,
    ))
    append_row(conn, weave_task_events, dict(
        namespace=task.namespace, task_id=task.task_id, revision=2,
        event_type="task.started", attempt_id=attempt_id, occurred_at=now, payload=None,
    ))
    handoff.owners[task.task_id] = task.owner_id
    handoff.claimed.append(ClaimedTask(
        task_id=task.task_id, attempt_id=attempt_id, attempt_no=1, handler=task.handler,
        handler_version=task.handler_version, input=parse_document(task.input),
        lease_expires_at=lease, heartbeat_timeout=seconds, deadline_at=task.deadline_at,
        cancel_requested=False,
    ))
    return True


class ParkedClaimer:
    """A parked long-poll claimer, reserved for one transaction when it creates the first
    task that claimer serves (see the module docstring); kept over re-runs."""

    def __init__(self, hub: WakeupHub, namespace: str) -> None:
        self.hub = hub
        self.namespace = namespace
        self.waiter: Any = None
        self.committed: Handoff | None = None
        """The hand-off of the run of the transaction that committed."""

    def bind(self, handoff: Handoff, queue: str, handler_key: str) -> None:
        """Point ``handoff`` at the reserved claimer (reserving one for this task's queue
        and handler if none is yet)."""
        if self.waiter is None:
            self.waiter = self.hub.reserve(self.namespace, queue, handler_key)
        if self.waiter is not None:
            handoff.queue, handoff.worker_id = self.waiter.key[1], self.waiter.worker_id
            handoff.handler_keys, handoff.room = self.waiter.handler_keys, self.waiter.max_tasks

    @contextmanager
    def offering(self, conn: Connection) -> Iterator[Handoff]:
        """Inside one run of the transaction: new tasks that fit start for the claimer."""
        handoff = Handoff(self.namespace, "", "", frozenset(), 0, parked=self)
        with handing_off(conn, handoff):
            yield handoff
        later(conn, lambda: setattr(self, "committed", handoff))


@contextmanager
def parked_claimer(db: Database, namespace: str) -> Iterator[ParkedClaimer]:
    """Around a transaction (all its runs): hand the tasks its committed run started to
    the claimer it reserved at the end, or release that claimer to claim as usual."""
    parked = ParkedClaimer(hub_for(db), namespace)
    handed: list[ClaimedTask] = []
    try:
        yield parked
        handed = [] if parked.committed is None else list(parked.committed.claimed)
    finally:
        waiter = parked.waiter
        if waiter is not None and not parked.hub.hand(waiter, handed) and handed:
            logger.warning("claimer %s left before its %d handed-off task(s) reached it; "
                           "they run again once their lease expires", waiter.worker_id,
                           len(handed))


__all__ = ["Handoff", "ParkedClaimer", "handing_off", "parked_claimer", "start_if_handed_off"]
