"""One step in one transaction: a worker's result settled, consumed, and the next task
claimed (DESIGN.md §0, the hot path).

:func:`complete_step` is what the ``complete`` route runs. For a workflow task it does, in
one transaction and in the R-6.2 order:

1. an unlocked read of the task's queue, owner and instance;
2. the chain: identity (shared), instance, gate, steps — the quota and queue rows only
   when the transaction is re-run in order (below); then database time, read after the
   instance lock so that this step's times never precede the instance's last change;
3. the owning activation, then the task and its attempt (fencing, as ``reports``);
4. the settle (``delivery.settle_txn``): task, attempt, event, the inbox row with its
   frozen snapshot (R-5.1, R-5.3: the row and its unique keys are the record and the
   dedup key), audit;
5. the consumption of that row at once (``consumer.consume_held_txn``:
   R-5.4 verification, step result, decision core, successors, history);
6. ``claim_next``: a successor on the same queue whose handler the worker serves is
   created already started for it (``dispatch.handoff``); room left is filled by a claim
   of the queue's due tasks (``claim.claim_txn``);
7. the capacity ledger's net change (``dispatch.queues.CapacityLedger``): a release and
   a reservation on one queue net to nothing and touch no row.

What it does not take on runs the classic path, with the same outcomes as before: a
report that is not the current attempt's first (replay, conflict, superseded, expired
lease), a retryable failure, a standalone task. A consumption that fails (not a
deadlock, which re-runs everything) rolls the transaction back and takes the classic path
too: the settled task commits alone and the inbox row is consumed, or left PENDING for the
tick, exactly as when the report and the consumption were two transactions. A reservation
the ledger cannot net, or a capacity row another transaction holds, re-runs the whole
transaction with the capacity locks taken in order.

Reports of one instance that reach this process while a step of that instance runs (a
fan-out's branches) wait in the instance's lane (``lanes``) instead of on its row lock,
and are then taken together in one transaction (``step_batch``), or one by one when they
cannot be.
"""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row
from sqlalchemy.exc import DBAPIError

from weave_core.dispatch.claim import check_claim, claim, settle_expired
from weave_core.dispatch.errors import TaskNotFoundError
from weave_core.dispatch.ledger import CapacityLedger, CapacityLocksNeeded, capacity_ledger
from weave_core.dispatch.model import ClaimedTask, OwnerKind, ReportOutcome
from weave_core.dispatch.reports import Report, complete
from weave_core.engine import Engine
from weave_core.foundation.faults import fault_point
from weave_core.observability.metrics import CAPACITY_RERUNS, child
from weave_core.runtime.consumer import ConsumeResult, consume_task_results
from weave_core.runtime.lanes import Queued, Turn, lanes_of
from weave_core.runtime.snapshot import lock_chain, lock_step_chain
from weave_core.runtime.step_batch import run_batch
from weave_core.runtime.step_settle import (
    ClaimNext,
    NotHere,
    Reported,
    StepDone,
    settle_and_consume,
)
from weave_core.runtime.task_routes import take_route
from weave_core.storage.deferred import DeferredWriteMismatch, deferring, deferring_now
from weave_core.storage.locks import lock_activation, lock_task_fenced
from weave_core.storage.schema import weave_activations, weave_instances, weave_tasks
from weave_core.storage.statements import appending

logger = logging.getLogger(__name__)


def complete_step(
    engine: Engine,
    *,
    namespace: str,
    task_id: str,
    attempt_id: str,
    report: Report,
    actor: str,
    claim_next: ClaimNext | None = None,
) -> StepDone:
    """Take a worker's result, consume it and claim the next tasks (module docstring)."""
    report.check(engine.limits)
    if claim_next is not None:  # refused before anything is recorded
        check_claim("q", claim_next.worker_id, claim_next.handlers, claim_next.max_tasks)
    reported = Reported(namespace, task_id, attempt_id, report, actor, claim_next)
    if report.outcome == ReportOutcome.FAILED and report.error is not None \
            and report.error.retryable:
        return _classic(engine, reported)
    turn = Turn(reported)
    try:
        return _one(engine, turn)
    except Queued:  # another report of the instance is being taken: wait for the next batch
        pass
    finally:
        if turn.held is not None and turn.batch is None:
            lanes_of(engine).leave(turn.held)
    turn.ready.wait()
    if turn.batch is not None:  # this report leads the batch of those that waited
        try:
            _run_batch(engine, turn.batch)
        finally:
            assert turn.held is not None
            lanes_of(engine).leave(turn.held)
    return turn.answer()


def _run_batch(engine: Engine, batch: list[Turn]) -> None:
    """Take the waiting reports in one transaction, else one by one; answer each (every
    waiting thread is released, whatever happens here)."""
    try:
        if len(batch) == 1 or not run_batch(engine, batch):
            for turn in batch:
                try:
                    turn.done = _one(engine, turn)
                except Exception as exc:  # its own answer (an error response), in its thread
                    turn.error = exc
    except BaseException as exc:
        for turn in batch:
            if turn.done is None and turn.error is None:
                turn.error = exc
        raise
    finally:  # a worker handed its next task is answered first: it is the critical path
        for turn in sorted(batch[1:], key=lambda t: not (t.done and t.done.next_tasks)):
            turn.ready.set()


def _one(engine: Engine, turn: Turn) -> StepDone:
    """One report: the one transaction (through its instance's lane), else the classic
    path."""
    reported = turn.reported
    for in_order in (False, True):
        try:
            done, queue, expired = engine.db.transaction(
                lambda conn, o=in_order: _step_txn(  # type: ignore[misc]
                    conn, engine, turn, in_order=o),
                name="step")
        except CapacityLocksNeeded:
            child(CAPACITY_RERUNS, "step").inc()
            continue
        except NotHere:
            break
        except DeferredWriteMismatch as exc:  # a queued write's row count refused
            logger.info("step of task %s: %s; taking the classic path", reported.task_id, exc)
            break
        except DBAPIError:  # a queued write's error, not one to re-run (Database re-ran
            break  # those): the classic path sends each statement alone, as before
        fault_point("step.after_commit")  # committed, the worker not yet answered
        if expired:
            settle_expired(engine.db, reported.namespace, queue, expired,
                           actor=reported.actor, limits=engine.limits)
        return done
    return _classic(engine, reported)


def _classic(engine: Engine, reported: Reported) -> StepDone:
    """The report, the consumption and the claim as three transactions (every case)."""
    namespace, task_id, claim_next = reported.namespace, reported.task_id, reported.claim_next
    done = complete(engine.db, namespace=namespace, task_id=task_id,
                    attempt_id=reported.attempt_id, report=reported.report,
                    actor=reported.actor, limits=engine.limits)
    consumed = None
    if not done.replay and done.task.owner_kind == OwnerKind.WORKFLOW_ACTIVATION:
        consumed = _consume_at_once(engine, namespace, task_id)
    following: list[ClaimedTask] = []
    if claim_next is not None:
        following = claim(engine.db, namespace=namespace, queue=done.task.queue,
                          worker_id=claim_next.worker_id, handlers=claim_next.handlers,
                          max_tasks=claim_next.max_tasks, actor=reported.actor,
                          limits=engine.limits)
    return StepDone(done, following, consumed)


def _consume_at_once(engine: Engine, namespace: str, task_id: str) -> ConsumeResult | None:
    """Consume the result this process just accepted (DESIGN.md §0 step 4).

    The report has committed whatever happens here; if consuming fails, the inbox row stays
    PENDING and the tick consumes it within a scan period, so the worker still gets its 200.
    The failure is logged with its traceback, never dropped.
    """
    try:
        results = consume_task_results(engine, namespace, task_id)
    except Exception:  # the safety net (the tick) owns the retry; the report stands
        logger.exception(
            "consuming the result of task %s at once failed; the tick will retry it", task_id
        )
        return None
    return results[0] if results else None


_T, _A, _I = weave_tasks, weave_activations, weave_instances
_PEEK = (
    sa.select(_T.c.queue, _T.c.owner_kind, _T.c.owner_id, _A.c.instance_id,
              _A.c.namespace.label("act_namespace"), _I.c.namespace.label("inst_namespace"),
              _I.c.queues, _I.c.status)
    .select_from(_T.outerjoin(_A, _A.c.activation_id == _T.c.owner_id)
                 .outerjoin(_I, _I.c.instance_id == _A.c.instance_id))
    .where(_T.c.task_id == sa.bindparam("task_id"), _T.c.namespace == sa.bindparam("ns"))
)


def _step_txn(
    conn: Connection, engine: Engine, turn: Turn, *, in_order: bool,
) -> tuple[StepDone, str, list[Row[Any]]]:
    reported = turn.reported
    namespace, task_id = reported.namespace, reported.task_id
    peek: Any = turn.peek  # known when it waited in its instance's lane
    if peek is None:
        peek = take_route(engine, task_id)
        if peek is None or peek.namespace != namespace:
            peek = conn.execute(_PEEK, {"task_id": task_id, "ns": namespace}).one_or_none()
    if peek is None:
        raise TaskNotFoundError(f"task {task_id!r} not found", details={"task_id": task_id})
    if (peek.owner_kind != OwnerKind.WORKFLOW_ACTIVATION.value or peek.instance_id is None
            or peek.act_namespace != namespace or peek.inst_namespace != namespace):
        raise NotHere
    if engine.db.dialect == "mysql":  # reports of one instance meet here, not at its lock
        lanes_of(engine).enter(peek.instance_id, turn, peek)
    # The closing writes are queued and sent as few round trips (weave_core.storage.deferred);
    # the status events go with them (appending ends inside deferring). A queued write
    # refused or failing, here or with the COMMIT, takes the classic path (complete_step).
    with deferring(conn), appending(conn):
        if in_order:
            done = _locked_step(conn, engine, peek, None, reported)
        else:
            with capacity_ledger(conn, namespace) as ledger:
                done = _locked_step(conn, engine, peek, ledger, reported)
    fault_point("step.before_commit")  # no COMMIT; the last queued writes go with it
    return done


def _locked_step(
    conn: Connection, engine: Engine, peek: Any, ledger: CapacityLedger | None,
    reported: Reported,
) -> tuple[StepDone, str, list[Row[Any]]]:
    # Database time comes with the task lock, computed after the instance lock (SYSDATE,
    # also in the one-statement chain, where it is the last part): every earlier change of
    # this instance has committed, so the times of its history, tasks and steps keep
    # their order (no clamp to read).
    namespace, task_id, attempt_id = reported.namespace, reported.task_id, reported.attempt_id
    if ledger is not None and deferring_now(conn):  # MariaDB: one round trip for all
        chain = lock_step_chain(conn, namespace, peek, task_id=task_id, attempt_id=attempt_id,
                                now_columns=engine.db.now_columns)
        if chain is None:
            raise NotHere
        li, act, task = chain
    else:
        instance = SimpleNamespace(namespace=peek.inst_namespace, queues=peek.queues,
                                   status=peek.status)
        found = lock_chain(conn, namespace, peek.instance_id, peeked=instance,
                           capacity=ledger is None, task_queue=peek.queue)
        if found is None:
            raise NotHere
        li = found
        act = lock_activation(conn, peek.owner_id)
        task = lock_task_fenced(conn, task_id, attempt_id, engine.db.now_columns)
    if task is None:
        raise NotHere  # no such task (or attempt): the classic path answers
    now = engine.db.now_of(task)
    done, expired = settle_and_consume(conn, engine, li, act, task, now, reported,
                                       peek.owner_id)
    if ledger is not None:
        ledger.apply(conn, now)
    return done, str(task.queue), expired


__all__ = ["ClaimNext", "StepDone", "complete_step"]
