"""An instance's status and its execution gate changed, each as a transition of its history."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.engine import Connection

from weave_core.dispatch.gates import set_gate_txn
from weave_core.foundation import exactjson
from weave_core.planning.program import Program
from weave_core.planning.snapshot import Phase
from weave_core.runtime.history import History
from weave_core.runtime.instances import TERMINAL, InstanceStatus, ReviewReason
from weave_core.runtime.snapshot import LockedInstance


def set_status(
    li: LockedInstance,
    history: History,
    status: InstanceStatus,
    *,
    now: datetime,
    reason: str | None = None,
    details: exactjson.JSON = None,
) -> None:
    """Move the instance to ``status`` (never out of a terminal status), as a transition."""
    if li.status in TERMINAL or li.status == status:
        return
    history.record(
        "instance.status", from_state=li.status.value, to_state=status.value,
        reason=reason, details=details,
    )
    values: dict[str, object] = {"status": status}
    if status == InstanceStatus.NEEDS_REVIEW or reason is not None:
        values["review_reason"] = reason
    if status in TERMINAL:
        values["settled_at"] = now
    li.set(**values)


def to_review(
    conn: Connection,
    li: LockedInstance,
    history: History,
    reason: str,
    *,
    now: datetime,
    close_gate: bool = False,
    details: exactjson.JSON = None,
) -> None:
    """Send a non-terminal instance to NEEDS_REVIEW (and close its gate when asked)."""
    if li.terminal:
        return
    if li.status != InstanceStatus.NEEDS_REVIEW:
        set_status(li, history, InstanceStatus.NEEDS_REVIEW, now=now, reason=reason,
                   details=details)
    if close_gate and li.gate_open:
        set_gate_txn(conn, li.gate_id, False, now=now)
        li.gate_open = False
        history.record("gate.closed", reason=reason)


def open_gate_txn(conn: Connection, li: LockedInstance, history: History, reason: str,
                  now: datetime) -> None:
    """Open the instance's execution gate, as a transition (resume, accept, recover)."""
    if not li.gate_open:
        set_gate_txn(conn, li.gate_id, True, now=now)
        li.gate_open = True
        history.record("gate.opened", reason=reason)


def close_gate_txn(conn: Connection, li: LockedInstance, history: History, reason: str,
                   now: datetime) -> None:
    """Close the instance's execution gate, as a transition (pause, stop)."""
    if li.gate_open:
        set_gate_txn(conn, li.gate_id, False, now=now)
        li.gate_open = False
        history.record("gate.closed", reason=reason)


def settle_cancelling(conn: Connection, li: LockedInstance, history: History,
                      program: Program, now: datetime) -> None:
    """CANCELLING ends only when every started step settled (R-8.3, R-8.4)."""
    if li.status != InstanceStatus.CANCELLING:
        return
    if any(r.phase is Phase.ACTIVE and not program.is_composite(sid)
           for sid, r in li.steps.items()):
        return
    if any(r.phase is Phase.NEEDS_REVIEW for r in li.steps.values()):
        # Unknown effects never end in a status that claims everything settled.
        set_status(li, history, InstanceStatus.NEEDS_REVIEW, now=now,
                   reason=ReviewReason.EFFECT_UNKNOWN.value)
    elif li.review_reason == ReviewReason.TASK_FAILED.value:
        set_status(li, history, InstanceStatus.FAILED, now=now,
                   reason=ReviewReason.TASK_FAILED.value)
    else:
        set_status(li, history, InstanceStatus.CANCELLED, now=now, reason=li.review_reason)


__all__ = ["close_gate_txn", "open_gate_txn", "set_status", "settle_cancelling", "to_review"]
