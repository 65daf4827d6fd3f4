"""No operation leaves an instance non-terminal and unexplained (RELIABILITY I1).

An instance that is RUNNING or WAITING must have something that will move it: an active
step with live work (a task not yet settled, a result waiting to be consumed, an open wait
record), or successors the next advance starts — or that advance finds nothing to do and
sends the instance to review (``stalled``). What breaks that promise is an ACTIVE step
whose work is gone: its task settled and its result will never be consumed. An operation
that would move an instance out of review while such a step exists is refused
(``no_active_work``, 409) and commits nothing.

:func:`review_clears` says whether ending the review of the steps ends the instance's
review: not while it is stopping, nor for a review about the plan or a checkpoint (those
are resolved explicitly).
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from weave_core.dispatch.model import UNSETTLED, InboxState, TaskStatus
from weave_core.planning.program import Program
from weave_core.planning.snapshot import Phase
from weave_core.runtime.controls.errors import NoActiveWorkError
from weave_core.runtime.instances import MOVING, InstanceStatus, ReviewReason
from weave_core.runtime.snapshot import LockedInstance
from weave_core.storage.schema import weave_activations, weave_inbox, weave_tasks, weave_waits


def _live(conn: Connection, namespace: str, activation_id: str) -> bool:
    a, t, i, w = weave_activations, weave_tasks, weave_inbox, weave_waits
    if conn.execute(sa.select(w.c.activation_id).where(
            w.c.activation_id == activation_id, w.c.state == "OPEN")).first() is not None:
        return True
    task_id = conn.execute(sa.select(a.c.task_id).where(a.c.activation_id == activation_id)
                           ).scalar_one_or_none()
    if task_id is None:
        return False
    status = conn.execute(sa.select(t.c.status).where(t.c.task_id == task_id)
                          ).scalar_one_or_none()
    if status is not None and TaskStatus(status) in UNSETTLED:
        return True
    return conn.execute(sa.select(i.c.id).where(
        i.c.namespace == namespace, i.c.source_task_id == task_id,
        i.c.state == InboxState.PENDING.value).limit(1)).first() is not None


def dead_steps(conn: Connection, li: LockedInstance, program: Program) -> list[str]:
    """ACTIVE leaf steps whose work is gone (plain reads under the instance lock)."""
    return [sid for sid, rec in sorted(li.steps.items())
            if rec.phase is Phase.ACTIVE and not program.is_composite(sid)
            and (rec.activation_id is None or not _live(conn, li.namespace, rec.activation_id))]


def require_way_forward(conn: Connection, li: LockedInstance, program: Program) -> None:
    """Refuse an operation that would leave the instance moving with dead steps."""
    if li.status not in MOVING:
        return
    dead = dead_steps(conn, li, program)
    if dead:
        raise NoActiveWorkError(
            "the instance would be left running with nothing to run, wait for or review: "
            "these steps are active but their work has ended; end the instance (resolve "
            "failed or cancelled, or cancel) instead",
            details={"workflow_id": li.instance_id, "steps": dead})


def review_clears(li: LockedInstance) -> bool:
    """Does the instance leave review once no step blocks (module docstring)?"""
    if li.status == InstanceStatus.CANCELLING or li.terminal:
        return False
    reason = li.review_reason or ""
    return reason != ReviewReason.CHECKPOINT_REFUSED.value and not reason.startswith(
        ReviewReason.PLAN_REJECTED.value)


__all__ = ["dead_steps", "require_way_forward", "review_clears"]
