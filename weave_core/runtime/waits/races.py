"""Resuming waits after a pause, the controls' other side of the races (R-8.2); cancelling
them is :mod:`weave_core.runtime.wait_cancel`.

:func:`resume_waits_txn` re-arms due polls after a pause: one round at once when its time
passed during the pause (missed times are never replayed), deadlines unchanged.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.engine import Connection

from weave_core.plugins.nodespec import StepOutcome, StepResult
from weave_core.runtime.pending import PendingKind, schedule_txn
from weave_core.runtime.snapshot import LockedInstance
from weave_core.runtime.wait_cancel import CANCELLED_REASON
from weave_core.runtime.wait_records import (
    WaitKind,
)
from weave_core.runtime.waits.locking import lock_open_waits
from weave_core.runtime.waits.polls import POLL_REASON

CANCELLED_RESULT = StepResult(StepOutcome.CANCELLED, reason=CANCELLED_REASON)


def resume_waits_txn(conn: Connection, li: LockedInstance, *, now: datetime) -> int:
    """After a resume: re-arm each OPEN poll whose next round is due (once, not per missed
    interval) or later; return how many POLL rows were armed."""
    armed = 0
    for wait in lock_open_waits(conn, li.instance_id):
        if wait.kind != WaitKind.POLL.value or wait.next_round_at is None:
            continue
        if wait.deadline_at is not None and now >= wait.deadline_at:
            continue
        schedule_txn(conn, namespace=li.namespace, instance_id=li.instance_id,
                     kind=PendingKind.POLL, ref=wait.activation_id,
                     due_at=max(now, wait.next_round_at), reason=POLL_REASON,
                     root_version=li.root_version, root_identity=li.root_identity, now=now)
        armed += 1
    return armed


__all__ = ["CANCELLED_RESULT", "resume_waits_txn"]
