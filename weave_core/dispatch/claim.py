"""Claiming: one transaction hands out up to ``max_tasks`` due tasks, each with an attempt
and a lease; :func:`claim_wait` is the long poll around it.

The claim transaction: database time → ``SELECT … FOR UPDATE SKIP LOCKED`` on
``ix_weave_tasks_claim`` (only PENDING tasks of an open gate, due, for the declared
handlers; only the columns a claim reads, ``locks.CLAIM_COLUMNS``) → per task: an
expired one (deadline or schedule-to-start passed) is not handed out; the others get an
attempt row, RUNNING, a lease and a ``task.started`` event. Expired tasks are settled
right after, each in its own transaction that locks in the R-6.2 order (the claim holds
task locks only, and never locks back up to quota and queue).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from sqlalchemy.engine import Connection, Row

from weave_core.dispatch.leases import expire_one
from weave_core.dispatch.model import (
    MAX_CLAIM_BATCH,
    MAX_WAIT_SECONDS,
    ClaimedTask,
    TaskStatus,
    check_name,
    handler_key,
    new_id,
    parse_document,
)
from weave_core.dispatch.timing import lease_seconds, lease_until
from weave_core.dispatch.wakeup import hub_for
from weave_core.foundation.errors import Problem, ValidationError
from weave_core.foundation.faults import fault_point
from weave_core.foundation.limits import DEFAULT_LIMITS, Limits
from weave_core.observability.metrics import LONG_POLL_WAITERS
from weave_core.observability.observe import queue_wait_txn
from weave_core.storage.db import Database
from weave_core.storage.deferred import deferring
from weave_core.storage.locks import lock_claimable_tasks
from weave_core.storage.schema import weave_task_attempts, weave_task_events, weave_tasks
from weave_core.storage.statements import append_row, insert_rows, update_keyed

_HANDOFF_POLL_S: Final = 0.01
"""How often a claimer whose wait ran out looks again while a transaction still holds it
reserved for a hand-off (a few milliseconds at most)."""


@dataclass(frozen=True)
class HandlerRef:
    """A handler a worker declares it runs."""

    name: str
    version: str

    @property
    def key(self) -> str:
        return handler_key(self.name, self.version)


def check_claim(queue: str, worker_id: str, handlers: Sequence[HandlerRef],
                max_tasks: int) -> None:
    """Validate a claim request (raises ``ValidationError`` with every problem)."""
    check_name(queue, "queue")
    problems: list[Problem] = []
    if not worker_id or len(worker_id) > 255:
        problems.append(Problem("$.worker_id", "invalid", "worker_id must be 1..255 characters"))
    if not handlers or len(handlers) > 256:
        problems.append(Problem("$.handlers", "invalid", "declare 1..256 handlers"))
    for i, h in enumerate(handlers):
        for value, what in ((h.name, "name"), (h.version, "version")):
            try:
                check_name(value, f"handlers[{i}].{what}")
            except ValidationError as exc:
                problems.extend(exc.problems)
    if not 1 <= max_tasks <= MAX_CLAIM_BATCH:
        problems.append(Problem("$.max_tasks", "out_of_range", f"1..{MAX_CLAIM_BATCH}"))
    if problems:
        raise ValidationError("invalid claim", problems)


def _start_txn(conn: Connection, task: Row[Any], *, worker_id: str, now: Any) -> ClaimedTask:
    attempt_no = int(task.attempts_used) + 1
    attempt_id = new_id("att")
    close_by = None
    if task.start_to_close_s:
        close_by = now + timedelta(seconds=int(task.start_to_close_s))
    seconds = lease_seconds(task)
    lease = lease_until(now, seconds, close_by, task.deadline_at)
    revision = int(task.revision) + 1
    insert_rows(conn, weave_task_attempts, dict(
        attempt_id=attempt_id, task_id=task.task_id, namespace=task.namespace,
        attempt_no=attempt_no, worker_id=worker_id, started_at=now, lease_expires_at=lease,
        close_by=close_by, heartbeat_at=None, finished_at=None, outcome=None, report_hash=None,
    ))
    update_keyed(conn, weave_tasks, {"task_id": task.task_id}, {
        "status": TaskStatus.RUNNING.value, "revision": revision, "attempts_used": attempt_no,
        "current_attempt_id": attempt_id, "start_by": None, "timeout_at": lease,
        "updated_at": now,
    })
    append_row(conn, weave_task_events, dict(
        namespace=task.namespace, task_id=task.task_id, revision=revision,
        event_type="task.started", attempt_id=attempt_id, occurred_at=now,
        payload=None,
    ))
    return ClaimedTask(
        task_id=task.task_id, attempt_id=attempt_id, attempt_no=attempt_no,
        handler=task.handler, handler_version=task.handler_version,
        input=parse_document(task.input), lease_expires_at=lease, heartbeat_timeout=seconds,
        deadline_at=task.deadline_at, cancel_requested=bool(task.cancel_requested),
    )


def claim_txn(
    conn: Connection, *, namespace: str, queue: str, worker_id: str,
    handler_keys: Sequence[str], max_tasks: int, now: datetime,
) -> tuple[list[ClaimedTask], list[Row[Any]]]:
    """In the caller's transaction: start up to ``max_tasks`` due tasks (checked request).

    Returns the claimed tasks and the expired ones it passed over, which the caller
    settles after its commit with :func:`settle_expired` (each in its own transaction,
    in lock order). Task locks come last in any chain and are taken ``SKIP LOCKED``.
    """
    claimed: list[ClaimedTask] = []
    expired: list[Row[Any]] = []
    for task in lock_claimable_tasks(conn, namespace, queue, handler_keys, now, max_tasks):
        if (task.deadline_at is not None and task.deadline_at <= now) or (
            task.start_by is not None and task.start_by <= now
        ):
            expired.append(task)
            continue
        claimed.append(_start_txn(conn, task, worker_id=worker_id, now=now))
        queue_wait_txn(conn, queue, now - task.available_at)
    return claimed, expired


def settle_expired(db: Database, namespace: str, queue: str, expired: Sequence[Row[Any]], *,
                   actor: str, limits: Limits) -> None:
    """Settle the expired tasks a claim passed over, one transaction each."""
    for task in expired:
        expire_one(db, namespace, task.task_id, queue, actor=actor, limits=limits)


def claim(
    db: Database,
    *,
    namespace: str,
    queue: str,
    worker_id: str,
    handlers: Sequence[HandlerRef],
    max_tasks: int = 1,
    actor: str = "system:weave",
    limits: Limits = DEFAULT_LIMITS,
) -> list[ClaimedTask]:
    """Claim up to ``max_tasks`` due tasks now (no waiting)."""
    check_claim(queue, worker_id, handlers, max_tasks)
    keys = [h.key for h in handlers]

    def _claim(conn: Connection) -> tuple[list[ClaimedTask], list[Row[Any]]]:
        # The attempts, the tasks' UPDATEs and their events are queued and go with the
        # COMMIT (weave_core.storage.deferred): three round trips however many are claimed.
        with deferring(conn):
            return claim_txn(conn, namespace=namespace, queue=queue, worker_id=worker_id,
                             handler_keys=keys, max_tasks=max_tasks, now=db.now(conn))

    claimed, expired = db.transaction(_claim, name="dispatch_claim")
    if claimed:
        fault_point("claim.after_commit")  # claimed, the worker not yet answered
    settle_expired(db, namespace, queue, expired, actor=actor, limits=limits)
    if expired and len(claimed) < max_tasks:
        claimed += claim(db, namespace=namespace, queue=queue, worker_id=worker_id,
                         handlers=handlers, max_tasks=max_tasks - len(claimed), actor=actor,
                         limits=limits)
    return claimed


async def claim_wait(
    db: Database,
    *,
    namespace: str,
    queue: str,
    worker_id: str,
    handlers: Sequence[HandlerRef],
    max_tasks: int = 1,
    wait_seconds: float = 0,
    actor: str = "system:weave",
    limits: Limits = DEFAULT_LIMITS,
) -> list[ClaimedTask]:
    """The long poll: claim now; if nothing, wait (woken in-process or by the queue's
    watcher, see ``wakeup``) and claim again, until ``wait_seconds`` have passed."""
    check_claim(queue, worker_id, handlers, max_tasks)
    if not 0 <= wait_seconds <= MAX_WAIT_SECONDS:
        raise ValidationError("invalid claim", [
            Problem("$.wait_seconds", "out_of_range", f"0..{MAX_WAIT_SECONDS}")])
    loop = asyncio.get_running_loop()
    end = loop.time() + wait_seconds
    hub = hub_for(db)
    keys = [h.key for h in handlers]
    expired = False
    probe = wait_seconds > 0 and not hub.draining
    with hub.listening((namespace, queue), keys, worker_id, max_tasks) as waiter, \
            LONG_POLL_WAITERS.labels("claim").track_inprogress():  # listen before claiming
        while True:
            waiter.event.clear()
            if waiter.handed is not None:  # a transaction of this process started them
                return waiter.handed
            look = True
            if probe:
                # The first look is one cheap read, parked meanwhile: a start committing
                # now hands its task over instead of racing a claim transaction that finds
                # nothing (S1: the worker's next poll comes with the client's next start).
                probe = False
                hub.park(waiter)
                look = await asyncio.to_thread(hub.pending, (namespace, queue), keys)
            # Not looking: wait parked. Else claim, unless a transaction holds the claimer
            # reserved: then wait for its hand-off.
            if look and hub.unpark(waiter):
                if expired:
                    return []
                tasks = await asyncio.to_thread(
                    claim, db, namespace=namespace, queue=queue, worker_id=worker_id,
                    handlers=handlers, max_tasks=max_tasks, actor=actor, limits=limits,
                )
                if tasks or loop.time() >= end or hub.draining:  # draining: the server stops
                    return tasks
                hub.park(waiter)
            try:
                async with asyncio.timeout(max(end - loop.time(), _HANDOFF_POLL_S)):
                    await waiter.event.wait()
            except TimeoutError:
                expired = True


__all__ = ["HandlerRef", "check_claim", "claim", "claim_txn", "claim_wait", "settle_expired"]
