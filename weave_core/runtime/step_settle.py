"""What a step transaction does once its locks are held: one task's report settled, its
inbox row consumed at once, successors handed to the reporting worker (``step``; several
tasks of one instance in one transaction: ``step_batch``)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from sqlalchemy.engine import Connection, Row

from weave_core.dispatch.claim import HandlerRef, claim_txn
from weave_core.dispatch.delivery import settle_txn
from weave_core.dispatch.handoff import Handoff, handing_off
from weave_core.dispatch.ledger import CapacityLocksNeeded
from weave_core.dispatch.model import AttemptEnd, ClaimedTask, ReportOutcome, TaskStatus
from weave_core.dispatch.reports import Completion, Report, fence_attempt_txn, settled_view
from weave_core.engine import Engine
from weave_core.foundation.exactjson import JSON
from weave_core.foundation.faults import fault_point
from weave_core.runtime.consumer import ConsumeResult, consume_held_txn
from weave_core.runtime.task_routes import remember_routes
from weave_core.storage.retries import reruns_transaction

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClaimNext:
    """The worker's request to be handed its next tasks in the same answer."""

    worker_id: str
    handlers: Sequence[HandlerRef]
    max_tasks: int = 1


@dataclass(frozen=True)
class StepDone:
    """What a complete did: the task afterwards, replay, the tasks handed out next, and
    how the result was consumed (None: left PENDING for the tick, or not a workflow's)."""

    completion: Completion
    next_tasks: list[ClaimedTask] = field(default_factory=list)
    consumed: ConsumeResult | None = None
    one_transaction: bool = False


class NotHere(Exception):
    """Not the one transaction's case: roll back and take the classic path."""


@dataclass(frozen=True)
class Reported:
    """One worker's report, as the ``complete`` route received it."""

    namespace: str
    task_id: str
    attempt_id: str
    report: Report
    actor: str
    claim_next: ClaimNext | None


def settle_and_consume(
    conn: Connection, engine: Engine, li: Any, act: Any, task: Any, now: Any,
    reported: Reported, owner_id: str, *, fill: bool = True,
) -> tuple[StepDone, list[Row[Any]]]:
    """With the chain, the owning activation ``act`` (``owner_id``, as the task's route
    names it) and the task (fenced) locked: settle the report,
    consume its inbox row, hand the worker the successors it serves and — with ``fill`` —
    claim due tasks for the room left. Returns what the route answers and the expired tasks
    the claim passed over (settled after the commit)."""
    if task.namespace != reported.namespace or task.owner_id != owner_id:
        raise NotHere  # not the task the route named: the classic path answers
    if task.attempt_found is None:
        fence_attempt_txn(conn, reported.task_id, reported.attempt_id)  # attempt_not_found
    if (task.attempt_report_hash is not None or task.status != TaskStatus.RUNNING
            or task.current_attempt_id != reported.attempt_id
            or task.attempt_finished_at is not None
            or (task.timeout_at is not None and task.timeout_at <= now)):
        raise NotHere  # replay, conflict, superseded, expired: reports' own answers
    fault_point("report.before_settle")
    report, claim_next = reported.report, reported.claim_next
    status, end, result, error = _outcome(report)
    delivered: list[dict[str, Any]] = []
    revision = settle_txn(conn, task, now=now, status=status, actor=reported.actor,
                          attempt_end=end, report_hash=report.content_hash(), result=result,
                          error=error, limits=engine.limits, owner=act, delivered=delivered)
    keys = [] if claim_next is None else [h.key for h in claim_next.handlers]
    handoff = Handoff(reported.namespace, str(task.queue), "" if claim_next is None
                      else claim_next.worker_id, frozenset(keys),
                      0 if claim_next is None else claim_next.max_tasks)
    with handing_off(conn, handoff):  # a successor the worker serves starts at once
        consumed = _consume(conn, engine, li, act, task, revision, delivered[0], now)
    following = list(handoff.claimed)  # their reports find their chains without a read:
    remember_routes(engine, handoff, li.instance_id, li.queues, li.status.value)
    expired: list[Row[Any]] = []
    if fill and claim_next is not None and len(following) < claim_next.max_tasks:
        more, expired = claim_txn(
            conn, namespace=reported.namespace, queue=task.queue,
            worker_id=claim_next.worker_id, handler_keys=keys,
            max_tasks=claim_next.max_tasks - len(following), now=now)
        following += more
    completion = Completion(settled_view(task, status, revision, result, error, now))
    return StepDone(completion, following, consumed, True), expired


def _outcome(report: Report) -> tuple[TaskStatus, AttemptEnd, JSON, JSON]:
    if report.outcome == ReportOutcome.SUCCEEDED:
        return TaskStatus.SUCCEEDED, AttemptEnd.SUCCEEDED, report.output, None
    error = None if report.error is None else report.error.to_json()
    if report.outcome == ReportOutcome.CANCELLED:
        return TaskStatus.CANCELLED, AttemptEnd.CANCELLED, None, error
    return TaskStatus.FAILED, AttemptEnd.FAILED, None, error


def _consume(conn: Connection, engine: Engine, li: Any, act: Any, task: Row[Any],
             revision: int, inbox: dict[str, Any], now: Any) -> ConsumeResult:
    """Consume the row just written. A failure (not a re-run) takes the classic path: the
    report commits alone and the row is consumed, or deferred, as it always was."""
    row = SimpleNamespace(**inbox)
    held = SimpleNamespace(namespace=task.namespace, queue=task.queue, owner_id=task.owner_id,
                           gate_id=task.gate_id, revision=revision, attempt_task_id=task.task_id)
    try:
        return consume_held_txn(conn, engine, li, act, row, now, held_task=held,
                                after_lock=True)
    except (CapacityLocksNeeded, NotHere):
        raise
    except Exception as exc:
        if reruns_transaction(exc):
            raise
        logger.info("consuming inbox row %s in the step transaction failed (%s); taking "
                    "the classic path", row.id, exc)
        raise NotHere from exc


__all__ = ["ClaimNext", "NotHere", "Reported", "StepDone", "settle_and_consume"]
