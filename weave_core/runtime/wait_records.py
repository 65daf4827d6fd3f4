"""Wait records: their vocabulary, and the version-checked race that ends a wait.

Every fact that may end a wait (a signal, a timer, a timeout, a cancel, a poll receipt, a
poll result, the poll deadline) ends it through :func:`settle_wait_txn`: one UPDATE keyed on
the record's ``version`` and ``state = 'OPEN'``. All of them run under the instance lock
(R-6.2), so they serialise; the version check makes the rule explicit and catches any path
that forgot the lock: exactly one fact wins, and the others are recorded as losers
(:func:`record_loser`) and never advance.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

from weave_core.foundation import exactjson
from weave_core.foundation.exactjson import JSON
from weave_core.planning.snapshot import Phase
from weave_core.runtime.history import History
from weave_core.runtime.pending import WAIT_KINDS, PendingState
from weave_core.runtime.snapshot import LockedInstance
from weave_core.storage.schema import weave_pending_advances, weave_waits
from weave_core.storage.statements import update_keyed

SIGNAL_REASON: Final = "signal"

# The states of a poll round (``weave_poll_rounds.state``).
ROUND_RUNNING: Final = "RUNNING"
ROUND_SETTLED: Final = "SETTLED"
ROUND_LATE: Final = "LATE"
"""Collected after its wait ended or after the deadline: evidence only."""


class SignalState:
    ACCEPTED = "ACCEPTED"
    CONSUMED = "CONSUMED"
    LOST = "LOST"
    EXPIRED = "EXPIRED"


class WaitKind(StrEnum):
    SIGNAL = "signal"
    TIMER = "timer"
    POLL = "poll"


class WaitState(StrEnum):
    OPEN = "OPEN"
    SATISFIED = "SATISFIED"
    """A signal, a receipt, the timer or a succeeding poll result ended it."""
    TIMED_OUT = "TIMED_OUT"
    """A signal wait's timeout won (no signal accepted at or before the deadline)."""
    FAILED = "FAILED"
    """A poll result classified FAILED."""
    REVIEW = "REVIEW"
    """Rounds or deadline exhausted, a round out of retries, or an unclassifiable result."""
    CANCELLED = "CANCELLED"


class Winner(StrEnum):
    """Which fact ended a wait (``weave_waits.winner``)."""

    SIGNAL = "signal"
    RECEIPT = "receipt"
    TIMER = "timer"
    TIMEOUT = "timeout"
    DEADLINE = "deadline"
    ROUNDS_EXHAUSTED = "rounds_exhausted"
    POLL_RESULT = "poll_result"
    CANCEL = "cancel"


class LoserClass(StrEnum):
    """Stable classifications of facts that lost a race (history ``wait.race_lost``)."""

    WAIT_ALREADY_SETTLED = "wait_already_settled"
    """The wait was already ended by another fact (its winner is named)."""
    SIGNAL_AFTER_DEADLINE = "signal_after_deadline"
    """Accepted after the wait's deadline: the timeout wins, the signal is kept as LOST."""
    TIMEOUT_AFTER_SIGNAL = "timeout_after_signal"
    """The deadline came, but a signal accepted at or before it was waiting to be consumed."""
    STALE_ACTIVATION = "stale_activation"
    """The fact names an activation that is no longer the step's current one."""
    ROUND_AFTER_SETTLE = "round_after_settle"
    """A poll round's result arrived after the wait ended (receipt or deadline won)."""
    ROUND_AFTER_DEADLINE = "round_after_deadline"
    """A poll round's result accepted after the poll deadline: evidence only."""
    ROUND_ALREADY_HANDLED = "round_already_handled"


def insert_wait_txn(conn: Connection, li: LockedInstance, *, activation_id: str, step_id: str,
                    kind: WaitKind, now: datetime, **values: Any) -> None:
    """Open the wait record of one activation (state OPEN, version 1)."""
    values.setdefault("current_round", 0)
    conn.execute(sa.insert(weave_waits), dict(
        activation_id=activation_id, namespace=li.namespace, instance_id=li.instance_id,
        step_id=step_id, kind=kind.value, state=WaitState.OPEN.value, version=1,
        opened_at=now, updated_at=now, **values,
    ))


def settle_wait_txn(conn: Connection, wait: Row[Any], state: WaitState, winner: Winner, *,
                    now: datetime, winner_ref: str | None = None, reason: str | None = None,
                    **values: Any) -> bool:
    """End the wait if it is still OPEN at the version read; True when this call won."""
    won = update_keyed(
        conn, weave_waits,
        {"activation_id": wait.activation_id, "version": int(wait.version),
         "state": WaitState.OPEN.value},
        {"state": state.value, "version": int(wait.version) + 1, "winner": winner.value,
         "winner_ref": winner_ref, "reason": reason, "settled_at": now, "updated_at": now,
         **values})
    return won == 1


def bump_wait_txn(conn: Connection, wait: Row[Any], *, now: datetime, **values: Any) -> bool:
    """Change an OPEN wait (next round, last result) at the version read."""
    return update_keyed(
        conn, weave_waits,
        {"activation_id": wait.activation_id, "version": int(wait.version),
         "state": WaitState.OPEN.value},
        {"version": int(wait.version) + 1, "updated_at": now, **values}) == 1


def record_loser(history: History, wait: Row[Any] | None, loser: str, classification: LoserClass,
                 *, activation_id: str | None = None, details: dict[str, JSON] | None = None
                 ) -> None:
    """Write down a fact that lost its race: it changes nothing else."""
    info: dict[str, JSON] = {"loser": loser, **(details or {})}
    if wait is not None:
        info.update(winner=wait.winner, wait_state=wait.state, wait_version=int(wait.version))
    history.record("wait.race_lost", step_id=None if wait is None else wait.step_id,
                   activation_id=activation_id or (None if wait is None else wait.activation_id),
                   reason=classification.value, details=info)


def finish_wait_rows_txn(conn: Connection, instance_id: str, activation_id: str,
                         now: datetime) -> None:
    """A settled wait needs no wake-up: mark its TIMER/POLL/SIGNAL pending rows done."""
    p = weave_pending_advances
    conn.execute(
        sa.update(p)
        .where(p.c.instance_id == instance_id, p.c.ref == activation_id,
               p.c.kind.in_(sorted(WAIT_KINDS)),
               p.c.state == PendingState.PENDING.value)
        .values(state=PendingState.DONE.value, version=p.c.version + 1, updated_at=now)
    )


def is_current(li: LockedInstance, act: Row[Any] | None, wait: Row[Any]) -> bool:
    """The wait's activation is still its step's current, ACTIVE one."""
    if act is None or act.state != "ACTIVE":
        return False
    step = li.step(wait.step_id)
    return (step is not None and step.activation_id == wait.activation_id
            and step.phase is Phase.ACTIVE)


def dumps(value: JSON) -> str:
    return exactjson.dumps(value)


__all__ = [
    "LoserClass",
    "WaitKind",
    "WaitState",
    "Winner",
    "bump_wait_txn",
    "dumps",
    "finish_wait_rows_txn",
    "insert_wait_txn",
    "is_current",
    "record_loser",
    "settle_wait_txn",
]
