"""Several reports of one instance in one step transaction (the lanes of ``lanes``).

The transaction takes the chain once — identity (shared), instance, gate, steps — then
every owning activation in id order and every task in id order, all in one round trip
(``locks.lock_chain_of_tasks_at_once``), under a capacity ledger; then, report by report
in arrival order, exactly what a step does once its locks are held
(``step_settle.settle_and_consume``): settle, write the inbox row, consume it against the
one working copy of the instance (so the last branch of a join sees the others' results
and starts what follows), and hand the reporting worker the successors it serves. The
room a worker's ``claim_next`` leaves is not filled by a claim here (its next claim fills
it). One COMMIT for all. Anything a single step would leave to the classic path makes the
whole batch roll back, and its reports then run one by one (``step``); so do reports
that name one task (a report sent twice) or one activation twice.
"""

from __future__ import annotations

import logging

from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from weave_core.dispatch.ledger import CapacityLocksNeeded, capacity_ledger
from weave_core.engine import Engine
from weave_core.foundation.faults import fault_point
from weave_core.runtime.lanes import Turn
from weave_core.runtime.snapshot import lock_step_chain_of_tasks
from weave_core.runtime.step_settle import NotHere, StepDone, settle_and_consume
from weave_core.storage.deferred import DeferredWriteMismatch, deferring
from weave_core.storage.statements import appending

logger = logging.getLogger(__name__)


def run_batch(engine: Engine, turns: list[Turn]) -> bool:
    """Settle and consume ``turns`` (one instance, their routes known) in one transaction;
    True when it committed (each turn's answer set), False when they must run one by one."""
    namespace = turns[0].reported.namespace
    if len({t.reported.task_id for t in turns}) < len(turns) or \
            len({t.peek.owner_id for t in turns}) < len(turns):
        return False  # one task (a report sent twice) or one activation twice: one by one

    def _txn(conn: Connection) -> list[StepDone]:
        with deferring(conn), appending(conn), capacity_ledger(conn, namespace) as ledger:
            chain = lock_step_chain_of_tasks(
                conn, namespace, turns[0].peek,
                [(t.peek.owner_id, t.reported.task_id, t.reported.attempt_id) for t in turns],
                now_columns=engine.db.now_columns)
            if chain is None or None in chain[2]:
                raise NotHere
            li, acts, tasks = chain
            now = max(engine.db.now_of(task) for task in tasks)
            answers = [settle_and_consume(conn, engine, li, act, task, now, turn.reported,
                                          turn.peek.owner_id, fill=False)[0]
                       for turn, act, task in zip(turns, acts, tasks, strict=True)]
            ledger.apply(conn, now)
        fault_point("step.before_commit")  # no COMMIT; the last queued writes go with it
        return answers

    try:
        answers = engine.db.transaction(_txn, name="step_batch")
    except (NotHere, CapacityLocksNeeded, DeferredWriteMismatch, DBAPIError):
        return False
    except Exception as exc:  # a report's own refusal (e.g. no such attempt): each alone
        logger.info("%d reports of instance %s in one transaction: %s; one by one",
                    len(turns), turns[0].peek.instance_id, exc)
        return False
    fault_point("step.after_commit")
    for turn, done in zip(turns, answers, strict=True):
        turn.done = done
    return True


__all__ = ["run_batch"]
