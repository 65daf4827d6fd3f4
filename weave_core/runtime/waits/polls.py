"""Bounded polling (R-7.4 to R-7.7): rounds, one task each, one at a time.

- Activation opens the wait (``deadline_at`` = activation + ``deadline_seconds``, never past
  the instance deadline), creates round 1 and its task at once, and arms the ``TIMER`` row
  at the deadline. Each round is a ``weave_poll_rounds`` row, unique on (namespace,
  instance, activation, round) and on its task: a round never gets a second task.
- A round's task carries the fixed query (handler, version, the input resolved at
  activation), the round's own retry budget (``attempts_per_round``) and the poll deadline
  as its task deadline, so no retry is authorised after it.
- A round's result is classified by the kind (``interpret``): PENDING → the wait saves the
  result and the next round's time = the result's acceptance time + ``interval_seconds``
  (``POLL`` pending row); a time at or past the deadline arms nothing (the deadline decides).
  SUCCEEDED / FAILED / NEEDS_REVIEW settle the step. The last round still PENDING, the
  deadline, a round out of retries → NEEDS_REVIEW with the last known result.
- A round whose result was accepted after the deadline, or after the wait ended (a
  receipt won), is kept as evidence (round row ``LATE`` with a classification, history
  ``wait.race_lost``) and never advances.
- While paused, gated or the namespace disabled, a due round is not started: the ``POLL``
  row is re-checked with back-off; resuming starts one round, never the missed ones, and
  never moves the deadline.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

from weave_core.dispatch.errors import QueueFullError, QuotaExceededError
from weave_core.dispatch.model import EVENT_BY_STATUS, TaskStatus
from weave_core.engine import Engine
from weave_core.foundation import exactjson
from weave_core.foundation.exactjson import JSON
from weave_core.planning.program import Program
from weave_core.plugins.nodespec import (
    Fact,
    FactKind,
    StepOutcome,
    StepResult,
)
from weave_core.runtime.history import History
from weave_core.runtime.instances import MOVING, InstanceStatus, iso, load_json
from weave_core.runtime.pending import (
    PendingKind,
    PendingReason,
    full_attempts,
    full_backoff,
    schedule_txn,
)
from weave_core.runtime.snapshot import LockedInstance
from weave_core.runtime.status import set_status
from weave_core.runtime.wait_cancel import lose_bound_txn
from weave_core.runtime.wait_opening import start_round_txn, task_command_from_json
from weave_core.runtime.wait_records import (
    ROUND_LATE,
    ROUND_RUNNING,
    ROUND_SETTLED,
    LoserClass,
    WaitState,
    Winner,
    bump_wait_txn,
    finish_wait_rows_txn,
    is_current,
    record_loser,
    settle_wait_txn,
)
from weave_core.runtime.waits.locking import lock_matching_signal, lock_poll_round, lock_wait
from weave_core.runtime.waits.settling import settle_step_txn
from weave_core.runtime.waits.signal_waits import consume_signal_txn
from weave_core.storage.db import savepoint
from weave_core.storage.locks import lock_activation
from weave_core.storage.schema import weave_activations, weave_inbox, weave_poll_rounds

DEADLINE_RECHECK = timedelta(seconds=1)
POLL_REASON = "poll_round"


def _blocked(li: LockedInstance) -> str | None:
    if li.paused:
        return PendingReason.PAUSED.value
    if not li.gate_open:
        return PendingReason.GATE_CLOSED.value
    if li.namespace_disabled:
        return PendingReason.NAMESPACE_DISABLED.value
    return None


def _rearm(conn: Connection, li: LockedInstance, activation_id: str, reason: str,
           now: datetime) -> None:
    attempts = full_attempts(conn, li.instance_id, reason)
    schedule_txn(conn, namespace=li.namespace, instance_id=li.instance_id,
                 kind=PendingKind.POLL, ref=activation_id, due_at=now + full_backoff(attempts),
                 reason=reason, root_version=li.root_version, root_identity=li.root_identity,
                 now=now)


def poll_due_txn(conn: Connection, engine: Engine, li: LockedInstance, history: History,
                 program: Program, activation_id: str, now: datetime) -> None:
    """A ``POLL`` pending row is due: start the next round if everything allows it."""
    act = lock_activation(conn, activation_id)
    wait = lock_wait(conn, activation_id)
    if wait is None or wait.state != WaitState.OPEN.value or not is_current(li, act, wait):
        return
    assert act is not None
    if wait.deadline_at is not None and now >= wait.deadline_at:
        return  # after the deadline nothing new is authorised; the TIMER row decides
    if li.status not in MOVING or int(wait.current_round) >= int(wait.max_rounds):
        return
    current = conn.execute(sa.select(weave_poll_rounds.c.state).where(
        weave_poll_rounds.c.activation_id == activation_id,
        weave_poll_rounds.c.round == int(wait.current_round))).scalar_one_or_none()
    if current == ROUND_RUNNING:
        return  # one round at a time
    blocked = _blocked(li)
    if blocked is not None:
        _rearm(conn, li, activation_id, blocked, now)  # no round, no replay on resume
        return
    command = load_json(act.command)
    assert isinstance(command, dict)
    round_no = int(wait.current_round) + 1
    try:
        with savepoint(conn):
            task_id = start_round_txn(conn, engine, li, activation_id=activation_id,
                                   task=task_command_from_json(command["task"]),
                                   round_no=round_no, deadline_at=wait.deadline_at, now=now)
            bump_wait_txn(conn, wait, now=now, current_round=round_no, next_round_at=None)
    except (QueueFullError, QuotaExceededError) as exc:
        _rearm(conn, li, activation_id, exc.code, now)
        return
    history.record("poll.round.started", step_id=wait.step_id, activation_id=activation_id,
                   details={"round": round_no, "task_id": task_id,
                            "deadline_at": iso(wait.deadline_at)})
    set_status(li, history, InstanceStatus.RUNNING, now=now)


def note_round_evidence_txn(conn: Connection, task_id: str, inbox_row: Row[Any],
                            snap: dict[str, Any], classification: str, now: datetime) -> None:
    """Keep a round's result that no longer counts as evidence on its round row."""
    r = weave_poll_rounds
    conn.execute(sa.update(r).where(r.c.task_id == task_id, r.c.state == ROUND_RUNNING).values(
        state=ROUND_LATE, status=snap.get("status"),
        result=exactjson.dumps(snap.get("result") if snap.get("result") is not None
                               else snap.get("error")),
        inbox_id=int(inbox_row.id), result_accepted_at=inbox_row.created_at,
        classification=classification, settled_at=now))


def _fact(snap: dict[str, Any]) -> Fact:
    status = TaskStatus(snap["status"])
    return Fact(FactKind(EVENT_BY_STATUS[status]),
                payload=snap.get("result") if status == TaskStatus.SUCCEEDED else snap.get("error"),
                effect_unknown=bool(snap["effect_unknown"]))


def apply_round_result_txn(
    conn: Connection, engine: Engine, li: LockedInstance, history: History, program: Program,
    row: Row[Any], act: Row[Any], snap: dict[str, Any], now: datetime,
) -> str:
    """Consume one round's frozen result (the consumer verified identities and the current
    activation); returns the stable reason it records."""
    wait = lock_wait(conn, act.activation_id)
    rnd = lock_poll_round(conn, row.source_task_id)
    accepted_at = row.created_at
    if wait is None or rnd is None or rnd.activation_id != act.activation_id:
        result = program.interpret(act.step_id, Fact(FactKind.TASK_NEEDS_REVIEW))
        settle_step_txn(conn, engine, li, history, program, act, result, now=now,
                        fact_at=accepted_at, details={"fact": "poll_round_unknown"},
                        result_revision=int(row.source_revision))
        return "poll_round_unknown"
    late: LoserClass | None = None
    if int(rnd.round) != int(wait.current_round) or rnd.state != ROUND_RUNNING:
        late = LoserClass.ROUND_ALREADY_HANDLED
    elif wait.state != WaitState.OPEN.value:
        late = LoserClass.ROUND_AFTER_SETTLE
    elif wait.deadline_at is not None and accepted_at > wait.deadline_at:
        late = LoserClass.ROUND_AFTER_DEADLINE
    if late is not None:
        note_round_evidence_txn(conn, row.source_task_id, row, snap, late.value, now)
        record_loser(history, wait, "poll_result", late,
                     details={"round": int(rnd.round), "task_id": row.source_task_id,
                              "inbox_id": int(row.id), "accepted_at": iso(accepted_at)})
        if wait.state == WaitState.CANCELLED.value:
            # The wait was cancelled with this round in flight: now the step can settle.
            settle_step_txn(conn, engine, li, history, program, act,
                            StepResult(StepOutcome.CANCELLED, reason="cancelled"), now=now,
                            fact_at=accepted_at,
                            details={"fact": "cancel", "round": int(rnd.round)},
                            result_revision=int(row.source_revision))
        return late.value
    fact = _fact(snap)
    result = program.interpret(act.step_id, fact)
    r = weave_poll_rounds
    status_name = "PENDING" if result.outcome is StepOutcome.CONTINUE else result.outcome.value
    conn.execute(sa.update(r).where(r.c.id == rnd.id).values(
        state=ROUND_SETTLED, status=status_name,
        result=exactjson.dumps(fact.payload), inbox_id=int(row.id),
        result_accepted_at=accepted_at, classification=result.reason, settled_at=now))
    a = weave_activations
    round_no, max_rounds = int(rnd.round), int(wait.max_rounds)
    details: dict[str, JSON] = {"round": round_no, "task_id": row.source_task_id,
                                "inbox_id": int(row.id), "status": status_name}
    if result.outcome is StepOutcome.CONTINUE and li.status == InstanceStatus.CANCELLING:
        # Stopping: no next round; the round is collected and the step ends CANCELLED.
        settle_wait_txn(conn, wait, WaitState.CANCELLED, Winner.CANCEL, now=now,
                        reason="cancelled", last_status="PENDING",
                        last_result=exactjson.dumps(fact.payload))
        finish_wait_rows_txn(conn, li.instance_id, act.activation_id, now)
        settle_step_txn(conn, engine, li, history, program, act,
                        StepResult(StepOutcome.CANCELLED, reason="cancelled"), now=now,
                        fact_at=accepted_at, details=details,
                        result_revision=int(row.source_revision))
        return "cancelled"
    if result.outcome is StepOutcome.CONTINUE:
        if round_no >= max_rounds:
            settle_wait_txn(conn, wait, WaitState.REVIEW, Winner.ROUNDS_EXHAUSTED, now=now,
                            reason="poll_exhausted", last_status="PENDING",
                            last_result=exactjson.dumps(fact.payload))
            return _exhaust(conn, engine, li, history, program, act, wait, now, accepted_at,
                            {**details, "last_result": fact.payload, "exhausted": "rounds"},
                            int(row.source_revision))
        next_at = accepted_at + timedelta(seconds=int(wait.interval_seconds))
        armed = wait.deadline_at is None or next_at < wait.deadline_at
        bump_wait_txn(conn, wait, now=now, last_status="PENDING",
                      last_result=exactjson.dumps(fact.payload),
                      next_round_at=next_at if armed else None)
        conn.execute(sa.update(a).where(a.c.activation_id == act.activation_id)
                     .values(result_revision=int(row.source_revision), updated_at=now))
        if armed:
            schedule_txn(conn, namespace=li.namespace, instance_id=li.instance_id,
                         kind=PendingKind.POLL, ref=act.activation_id, due_at=next_at,
                         reason=POLL_REASON, root_version=li.root_version,
                         root_identity=li.root_identity, now=now)
        history.record("poll.round.pending", step_id=act.step_id,
                       activation_id=act.activation_id,
                       details={**details, "next_round_at": iso(next_at) if armed else None})
        set_status(li, history, InstanceStatus.WAITING, now=now)
        return "poll_pending"
    state = {StepOutcome.SUCCEEDED: WaitState.SATISFIED,
             StepOutcome.FAILED: WaitState.FAILED}.get(result.outcome, WaitState.REVIEW)
    settle_wait_txn(conn, wait, state, Winner.POLL_RESULT, now=now, winner_ref=str(round_no),
                    reason=result.reason, last_status=status_name,
                    last_result=exactjson.dumps(fact.payload))
    finish_wait_rows_txn(conn, li.instance_id, act.activation_id, now)
    settle_step_txn(conn, engine, li, history, program, act, result, now=now,
                    fact_at=accepted_at, details=details,
                    result_revision=int(row.source_revision))
    lose_bound_txn(conn, history, wait, LoserClass.WAIT_ALREADY_SETTLED, now)
    return result.reason or result.outcome.value


def _exhaust(conn: Connection, engine: Engine, li: LockedInstance, history: History,
             program: Program, act: Row[Any], wait: Row[Any], now: datetime,
             fact_at: datetime, details: dict[str, JSON], result_revision: int | None) -> str:
    finish_wait_rows_txn(conn, li.instance_id, act.activation_id, now)
    result = program.interpret(act.step_id, Fact(FactKind.TIMEOUT))
    settle_step_txn(conn, engine, li, history, program, act, result, now=now, fact_at=fact_at,
                    details=details, result_revision=result_revision)
    lose_bound_txn(conn, history, wait, LoserClass.SIGNAL_AFTER_DEADLINE, now)
    return result.reason or result.outcome.value


def _result_waiting(conn: Connection, act: Row[Any], deadline_at: datetime) -> bool:
    """A result of the current round accepted by the deadline is not consumed yet."""
    i = weave_inbox
    return conn.execute(
        sa.select(i.c.id).where(i.c.namespace == act.namespace,
                                i.c.source_task_id == act.task_id,
                                i.c.state == "PENDING", i.c.created_at <= deadline_at)
        .limit(1)
    ).first() is not None


def poll_deadline_txn(conn: Connection, engine: Engine, li: LockedInstance, history: History,
                      program: Program, act: Row[Any], wait: Row[Any], now: datetime) -> None:
    """The poll deadline is due: an on-time receipt or round result still wins; otherwise
    review with the last known result (``poll_exhausted``)."""
    if act.task_id is not None and _result_waiting(conn, act, wait.deadline_at):
        # Accepted in time, not yet consumed: let the consumer decide first.
        schedule_txn(conn, namespace=li.namespace, instance_id=li.instance_id,
                     kind=PendingKind.TIMER, ref=act.activation_id,
                     due_at=now + DEADLINE_RECHECK, reason=PendingReason.DEADLINE.value,
                     root_version=li.root_version, root_identity=li.root_identity, now=now)
        return
    if wait.signal_name is not None:
        receipt = lock_matching_signal(
            conn, instance_id=wait.instance_id, name=wait.signal_name,
            correlation_key=wait.correlation_key, param_version=wait.param_version,
            activation_id=act.activation_id, accepted_by=wait.deadline_at)
        if receipt is not None:
            record_loser(history, wait, "deadline", LoserClass.TIMEOUT_AFTER_SIGNAL,
                         details={"signal_id": receipt.signal_id})
            consume_signal_txn(conn, engine, li, history, program, act, wait, receipt, now)
            return
    if not settle_wait_txn(conn, wait, WaitState.REVIEW, Winner.DEADLINE, now=now,
                           reason="poll_exhausted"):
        return
    history.record("wait.deadline", step_id=wait.step_id, activation_id=wait.activation_id,
                   from_state=WaitState.OPEN.value, to_state=WaitState.REVIEW.value,
                   details={"deadline_at": iso(wait.deadline_at),
                            "round": int(wait.current_round)})
    _exhaust(conn, engine, li, history, program, act, wait, now, wait.deadline_at,
             {"fact": "deadline", "exhausted": "deadline", "round": int(wait.current_round),
              "last_status": wait.last_status, "last_result": load_json(wait.last_result)},
             None)


__all__ = [
    "ROUND_LATE",
    "ROUND_RUNNING",
    "ROUND_SETTLED",
    "apply_round_result_txn",
    "note_round_evidence_txn",
    "poll_deadline_txn",
    "poll_due_txn",
]
