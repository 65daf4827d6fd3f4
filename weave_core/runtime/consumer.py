"""The inbox consumer (R-5.4): verify a frozen task result, save it, and advance.

:func:`consume` handles one inbox row in one transaction, with every outcome of the
consumption table of DESIGN.md §5:

=====================================  ====================================================
case                                    outcome
=====================================  ====================================================
row already PROCESSED / QUARANTINED     nothing changes, no audit (``already``)
stale activation, lower revision,       acknowledged (PROCESSED) with a stable
settled step, settled instance          classification in ``error_code``; history + audit;
                                        current work untouched (``ignored``)
contradictory identity or structure     QUARANTINED; a non-terminal instance goes
                                        NEEDS_REVIEW and its gate closes (``quarantined``)
SQL, connection or transaction error    full rollback; the row stays PENDING and is retried
                                        30 s later, keyed on its ``row_version``
                                        (``deferred``)
a value the database refuses            quarantined (4025, 1406), never retried forever
task succeeded                          output contract checked; SUCCEEDED; advance
task cancelled                          step CANCELLED with evidence; no normal successor
task failed / effect unknown /          step FAILED or NEEDS_REVIEW with a stable reason;
contract breach                         no dependent advance; failure policy applies
=====================================  ====================================================

Locking: the inbox row is read *unlocked* first to learn its instance; then the chain is
taken in the one order (R-6.2) and the inbox row is locked last and re-checked.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row
from sqlalchemy.exc import DBAPIError

from weave_core.access.audit import write_audit
from weave_core.dispatch.model import EVENT_BY_STATUS, InboxState, TaskStatus
from weave_core.engine import Engine
from weave_core.foundation.errors import StorageError, WeaveError
from weave_core.foundation.exactjson import JSON
from weave_core.foundation.faults import fault_point
from weave_core.observability.observe import ids, note_deferred
from weave_core.planning.plan import PlanRejectedError
from weave_core.planning.program import Program
from weave_core.planning.snapshot import Phase
from weave_core.plugins.nodespec import Fact, FactKind, StepOutcome, StepResult
from weave_core.runtime.advance import advance_txn
from weave_core.runtime.history import History
from weave_core.runtime.inbox_checks import (
    Contradiction,
    Mismatch,
    Peek,
    classify,
    peek_rows,
    verify,
)
from weave_core.runtime.instances import (
    PHASE_OF_OUTCOME,
    FailurePolicy,
    InstanceStatus,
    ReviewReason,
    new_operation_id,
)
from weave_core.runtime.programs import programs
from weave_core.runtime.quarantine import hold_step_txn
from weave_core.runtime.snapshot import LockedInstance, lock_chain
from weave_core.runtime.status import settle_cancelling, to_review
from weave_core.runtime.stopping import fail_after_settled_txn
from weave_core.runtime.waits.polls import apply_round_result_txn, note_round_evidence_txn
from weave_core.storage.deferred import amendable
from weave_core.storage.locks import lock_activation, lock_inbox_row
from weave_core.storage.retries import mysql_error_code
from weave_core.storage.schema import (
    weave_activations,
    weave_inbox,
)
from weave_core.storage.statements import update_keyed

logger = logging.getLogger(__name__)

RETRY_DELAY: Final = timedelta(seconds=30)
"""How long a row whose consumption failed on a database error waits (R-5.4)."""
VALUE_REFUSED_CODES: Final = frozenset({4025, 1406})
"""MariaDB refuses the value (JSON constraint, data too long): quarantine, never retry."""


class Outcome(StrEnum):
    CONSUMED = "consumed"
    IGNORED = "ignored"
    QUARANTINED = "quarantined"
    ALREADY = "already"
    DEFERRED = "deferred"


@dataclass(frozen=True)
class ConsumeResult:
    inbox_id: int
    outcome: Outcome
    code: str | None = None
    """The classification, contradiction or step outcome."""
    instance_id: str | None = None


# --- interpreting -------------------------------------------------------------------


def _apply_result(
    conn: Connection, engine: Engine, li: LockedInstance, history: History, program: Program,
    row: Row[Any], act: Row[Any], snap: dict[str, Any], now: datetime,
) -> str:
    if act.kind == "poll":  # a round's result: classified, rounds and races (issue 6)
        return apply_round_result_txn(conn, engine, li, history, program, row, act, snap, now)
    status = TaskStatus(snap["status"])
    fact = Fact(
        FactKind(EVENT_BY_STATUS[status]),
        payload=snap.get("result") if status == TaskStatus.SUCCEEDED else snap.get("error"),
        effect_unknown=bool(snap["effect_unknown"]),
    )
    result = program.interpret(act.step_id, fact)
    phase = PHASE_OF_OUTCOME.get(result.outcome)
    if phase is None:  # CONTINUE is a poll's; a task result can never mean "keep waiting"
        phase, result = Phase.NEEDS_REVIEW, StepResult(
            StepOutcome.NEEDS_REVIEW, reason="unexpected_outcome")
    step = li.step(act.step_id)
    assert step is not None
    step.phase = phase
    step.version += 1
    step.output = result.output if phase is Phase.SUCCEEDED else None
    step.reason = result.reason
    li.put_step(step)
    update_keyed(conn, weave_activations, {"activation_id": act.activation_id}, {
        "state": phase.value, "state_version": int(act.state_version) + 1,
        "result_revision": row.source_revision, "reason": result.reason,
        "updated_at": now, "settled_at": now,
    })
    history.record(
        f"step.{phase.value.lower()}", step_id=act.step_id, activation_id=act.activation_id,
        from_state=Phase.ACTIVE.value, to_state=phase.value, reason=result.reason,
        details={"inbox_id": int(row.id), "task_id": row.source_task_id,
                 "source_revision": int(row.source_revision),
                 "effect_unknown": bool(snap["effect_unknown"])},
    )
    if li.status == InstanceStatus.CANCELLING:
        settle_cancelling(conn, li, history, program, now)
    elif phase is Phase.SUCCEEDED:
        advance_txn(conn, engine, li, history, program, now=now, fact_at=row.created_at)
    elif phase is Phase.FAILED and li.failure_policy == FailurePolicy.FAIL_AFTER_SETTLED.value:
        fail_after_settled_txn(conn, engine, li, history, program, now)
    else:
        to_review(conn, li, history, result.reason or phase.value.lower(), now=now)
    return result.reason or phase.value


# --- writing the row ----------------------------------------------------------------


def _settle_row(conn: Connection, row: Row[Any], state: InboxState, code: str | None,
                now: datetime) -> None:
    settled = {"state": state.value, "error_code": code,
               "row_version": int(row.row_version) + 1, "processed_at": now}
    queued = amendable(conn, (weave_inbox.name, int(row.id)))
    if queued is not None:  # written in this transaction, its INSERT not yet sent
        queued.update(settled)
        return
    update_keyed(conn, weave_inbox, {"id": row.id}, settled)


def _source(row: Row[Any]) -> dict[str, JSON]:
    return {"inbox_id": int(row.id), "event_id": row.event_id, "task_id": row.source_task_id,
            "source_revision": int(row.source_revision),
            "activation_id": row.source_activation_id}


def _orphan_quarantine(conn: Connection, engine: Engine, inbox_id: int,
                       code: Contradiction, now: datetime) -> ConsumeResult:
    """A result whose activation or instance does not exist here: quarantine the row."""
    row = lock_inbox_row(conn, inbox_id)
    if row is None or row.state != InboxState.PENDING.value:
        return ConsumeResult(inbox_id, Outcome.ALREADY)
    _settle_row(conn, row, InboxState.QUARANTINED, code.value, now)
    write_audit(conn, namespace=row.namespace, actor=engine.actor,
                action="workflow.result.quarantined", object_type="inbox",
                object_id=str(inbox_id), operation_id=new_operation_id(),
                metadata={"source": _source(row), "node": engine.node_id, "reason": code.value},
                at=now)
    return ConsumeResult(inbox_id, Outcome.QUARANTINED, code.value)


def _consume_txn(conn: Connection, engine: Engine, inbox_id: int, peek: Peek,
                 forced: Contradiction | None = None) -> ConsumeResult:
    now = engine.db.now(conn)
    li = None
    if peek.instance_id is not None:
        li = lock_chain(conn, peek.namespace, peek.instance_id, peeked=peek.instance)
    if li is None:
        code = Contradiction.ACTIVATION_UNKNOWN if peek.instance_id is None \
            else Contradiction.INSTANCE_UNKNOWN
        return _orphan_quarantine(conn, engine, inbox_id, forced or code, now)
    act = lock_activation(conn, peek.activation_id)
    row = lock_inbox_row(conn, inbox_id)
    if row is None or row.state != InboxState.PENDING.value:
        return ConsumeResult(inbox_id, Outcome.ALREADY, instance_id=li.instance_id)
    return consume_held_txn(conn, engine, li, act, row, now, forced=forced)


def consume_held_txn(conn: Connection, engine: Engine, li: LockedInstance, act: Any,
                     row: Any, now: datetime, *, forced: Contradiction | None = None,
                     held_task: Any = None, after_lock: bool = False) -> ConsumeResult:
    """Consume the PENDING inbox ``row`` with the chain, the activation and the row held.

    The consumption table of the module docstring, for a caller that took the locks: the
    consumer above, or a step transaction that has just written the row (and passes the
    task it settled as ``held_task``; see ``verify``). ``after_lock``: ``now`` was read
    after the instance lock, so no earlier transition can be later (no clamp to read)."""
    inbox_id = int(row.id)
    history = History(li.namespace, li.instance_id, li.revision, new_operation_id(), now)
    if after_lock:
        history.previous_at = None
    program = programs(engine).for_instance(conn, li)
    metadata: dict[str, JSON] = {"source": _source(row), "node": engine.node_id}
    try:
        if forced is not None:
            raise Mismatch(forced, "the database refused a value of this result")
        snap, act_row = verify(conn, row, act, li, program, held_task)
    except Mismatch as mismatch:
        _settle_row(conn, row, InboxState.QUARANTINED, mismatch.code.value, now)
        history.record("result.quarantined", activation_id=row.source_activation_id,
                       reason=mismatch.code.value,
                       details={**_source(row), "message": mismatch.message})
        hold_step_txn(conn, li, history, program, act, inbox_id, mismatch.code.value, now)
        to_review(conn, li, history, ReviewReason.QUARANTINED_RESULT.value, now=now,
                  close_gate=True, details={"inbox_id": int(row.id)})
        history.write(conn, actor=engine.actor, action="workflow.result.quarantined",
                      metadata={**metadata, "reason": mismatch.code.value})
        li.flush(conn, revision=history.revision, now=now)
        return ConsumeResult(inbox_id, Outcome.QUARANTINED, mismatch.code.value,
                             li.instance_id)
    classification = classify(row, act_row, li)
    if classification is not None:
        _settle_row(conn, row, InboxState.PROCESSED, classification.value, now)
        if act_row.kind == "poll":  # a late round result stays on its round as evidence
            note_round_evidence_txn(conn, row.source_task_id, row, snap,
                                    classification.value, now)
        history.record("result.ignored", step_id=act_row.step_id,
                       activation_id=act_row.activation_id, reason=classification.value,
                       details={**_source(row), "status": snap["status"]})
        history.write(conn, actor=engine.actor, action="workflow.result.ignored",
                      metadata={**metadata, "reason": classification.value})
        li.flush(conn, revision=history.revision, now=now)
        return ConsumeResult(inbox_id, Outcome.IGNORED, classification.value, li.instance_id)
    fault_point("runtime.consume.before_apply")
    reason = _apply_result(conn, engine, li, history, program, row, act_row, snap, now)
    fault_point("runtime.consume.before_ack")
    _settle_row(conn, row, InboxState.PROCESSED, None, now)
    history.write(conn, actor=engine.actor, action="workflow.result.consumed",
                  metadata={**metadata, "reason": reason, "step_id": act_row.step_id})
    li.flush(conn, revision=history.revision, now=now)
    fault_point("runtime.consume.before_commit")
    return ConsumeResult(inbox_id, Outcome.CONSUMED, reason, li.instance_id)


# --- the public entry points --------------------------------------------------------


def defer(engine: Engine, inbox_id: int, row_version: int) -> bool:
    """Move a PENDING row 30 s later, only if nobody touched it since ``row_version``."""

    def _defer(conn: Connection) -> bool:
        now = engine.db.now(conn)
        i = weave_inbox
        updated = conn.execute(
            sa.update(i)
            .where(i.c.id == inbox_id, i.c.state == InboxState.PENDING.value,
                   i.c.row_version == row_version)
            .values(available_at=now + RETRY_DELAY, row_version=row_version + 1)
        ).rowcount
        return bool(updated)

    return engine.db.transaction(_defer, name="consume_defer")


def consume(engine: Engine, inbox_id: int) -> ConsumeResult:
    """Consume one inbox row in its own transaction (any node, any number of times)."""
    peeks = engine.db.read(lambda conn: peek_rows(conn, weave_inbox.c.id == inbox_id),
                           name="consume_peek")
    if not peeks:
        return ConsumeResult(inbox_id, Outcome.ALREADY)
    return _consume(engine, peeks[0])


def _consume(engine: Engine, peek: Peek) -> ConsumeResult:
    db, inbox_id = engine.db, peek.inbox_id
    if peek.state != InboxState.PENDING.value:
        return ConsumeResult(inbox_id, Outcome.ALREADY)
    try:
        return db.transaction(lambda conn: _consume_txn(conn, engine, inbox_id, peek),
                              name="consume")
    except DBAPIError as exc:
        code = mysql_error_code(exc)
        if code in VALUE_REFUSED_CODES:
            logger.warning("inbox %s: value refused by the database (%s): quarantined",
                           inbox_id, code)
            return db.transaction(
                lambda conn: _consume_txn(conn, engine, inbox_id, peek,
                                          forced=Contradiction.VALUE_REFUSED),
                name="consume_quarantine",
            )
        logger.warning("inbox %s: database error %s; retried in 30 s", inbox_id, code,
                       exc_info=True)
    except (StorageError, PlanRejectedError) as exc:
        logger.warning("inbox %s: %s; retried in 30 s", inbox_id, exc)
    except WeaveError as exc:
        logger.error("inbox %s: %s (%s); retried in 30 s", inbox_id, exc, exc.code)
    except Exception:
        logger.exception("inbox %s: unexpected failure; retried in 30 s", inbox_id)
    defer(engine, inbox_id, peek.row_version)
    note_deferred(inbox_id, ids(peek.namespace, peek.instance_id, activation=peek.activation_id))
    return ConsumeResult(inbox_id, Outcome.DEFERRED, instance_id=peek.instance_id)


def consume_task_results(engine: Engine, namespace: str, task_id: str) -> list[ConsumeResult]:
    """The fast path: consume the PENDING inbox rows of one task right after its report
    committed (the dispatch complete route calls this; the tick is the safety net)."""
    i = weave_inbox
    peeks = engine.db.read(
        lambda conn: peek_rows(conn, (i.c.namespace == namespace) & (i.c.source_task_id == task_id)
                            & (i.c.state == InboxState.PENDING.value)),
        name="consume_task_results",
    )
    return [_consume(engine, peek) for peek in peeks]


__all__ = [
    "RETRY_DELAY",
    "VALUE_REFUSED_CODES",
    "ConsumeResult",
    "Outcome",
    "consume",
    "consume_held_txn",
    "consume_task_results",
    "defer",
    "settle_cancelling",
]
