"""A quarantined result puts its step in review, so the review has a way out (RELIABILITY I1).

A contradictory result (the consumption table's quarantine rows) is never applied. When it
names the current, still ACTIVE activation of a task step of its instance and that
activation's task has settled with no other result waiting, nothing will ever move the
step again: left ACTIVE it would hold the instance "running" with nothing running. So the
step goes to ``NEEDS_REVIEW`` with reason ``quarantined_result`` in the quarantine's own
transaction, and is then reviewed like any other step in review: concluded with evidence,
recovered, accepted with an observed output (``controls.accept``), or the instance ended
failed or cancelled. The quarantined inbox row and its snapshot are kept as they were.

A result that names a stale activation, an activation whose own task is still in flight
(or has another result waiting), or a wait (a poll round: its deadline still decides)
leaves the step alone: the instance then still has live work.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from weave_core.dispatch.model import UNSETTLED, InboxState, TaskStatus
from weave_core.planning.program import Program
from weave_core.planning.snapshot import Phase
from weave_core.runtime.history import History
from weave_core.runtime.instances import ActivationState, ReviewReason
from weave_core.runtime.snapshot import LockedInstance
from weave_core.storage.schema import weave_activations, weave_inbox, weave_tasks


def _task_done(conn: Connection, namespace: str, task_id: str, inbox_id: int) -> bool:
    """The activation's task settled and no other result of it waits to be consumed."""
    t, i = weave_tasks, weave_inbox
    status = conn.execute(sa.select(t.c.status).where(t.c.task_id == task_id)
                          ).scalar_one_or_none()
    if status is None or TaskStatus(status) in UNSETTLED:
        return False
    waiting = conn.execute(sa.select(i.c.id).where(
        i.c.namespace == namespace, i.c.source_task_id == task_id,
        i.c.state == InboxState.PENDING.value, i.c.id != inbox_id).limit(1)).first()
    return waiting is None


def hold_step_txn(conn: Connection, li: LockedInstance, history: History, program: Program,
                  act: Any, inbox_id: int, code: str, now: datetime) -> str | None:
    """Send the step a quarantined result leaves without work to review (module
    docstring); returns its step id, or None when the step keeps its live work."""
    if act is None or li.terminal or act.namespace != li.namespace \
            or act.instance_id != li.instance_id or act.kind != "task":
        return None
    if act.step_id not in program.step_ids() or program.is_composite(act.step_id):
        return None
    rec = li.step(act.step_id)
    if rec is None or rec.activation_id != act.activation_id or rec.phase is not Phase.ACTIVE \
            or act.state != ActivationState.ACTIVE.value or act.task_id is None:
        return None
    if not _task_done(conn, li.namespace, act.task_id, inbox_id):
        return None
    reason = ReviewReason.QUARANTINED_RESULT.value
    a = weave_activations
    conn.execute(sa.update(a).where(a.c.activation_id == act.activation_id).values(
        state=ActivationState.NEEDS_REVIEW.value, state_version=int(act.state_version) + 1,
        reason=reason, updated_at=now, settled_at=now))
    rec.phase, rec.version, rec.output, rec.reason = (Phase.NEEDS_REVIEW, rec.version + 1,
                                                      None, reason)
    li.put_step(rec)
    history.record("step.needs_review", step_id=rec.step_id, activation_id=act.activation_id,
                   from_state=Phase.ACTIVE.value, to_state=Phase.NEEDS_REVIEW.value,
                   reason=reason, details={"inbox_id": inbox_id, "task_id": act.task_id,
                                           "contradiction": code})
    return rec.step_id


__all__ = ["hold_step_txn"]
