"""Handing a new task straight to the worker whose report created it (``claim_next``).

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
"""

from __future__ import annotations

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
from weave_core.storage.schema import weave_task_attempts, weave_task_events
from weave_core.storage.statements import append_row, insert_rows

_KEY: Final = "weave_claim_handoff"


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
    if (handoff is None or not under_ledger(conn) or handoff.room <= len(handoff.claimed)
            or row["namespace"] != handoff.namespace or row["queue"] != handoff.queue
            or row["handler_key"] not in handoff.handler_keys or not row["gate_open"]
            or row["available_at"] > now
            or (row["deadline_at"] is not None and row["deadline_at"] <= now)):
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


__all__ = ["Handoff", "handing_off", "start_if_handed_off"]
