"""Reading an inbox row and checking it against the locked chain before it is consumed
(R-5.4): the row's frozen snapshot verified field by field, and acknowledged results that
move no current work classified. A contradiction quarantines the row (``Mismatch``)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from types import SimpleNamespace
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

from weave_core.dispatch.model import EVENT_BY_STATUS, TaskStatus
from weave_core.foundation import exactjson
from weave_core.foundation.errors import InvalidJsonError
from weave_core.planning.program import Program
from weave_core.planning.snapshot import Phase
from weave_core.runtime.instances import (
    ActivationState,
)
from weave_core.runtime.snapshot import LockedInstance
from weave_core.storage.schema import (
    weave_activations,
    weave_inbox,
    weave_instances,
    weave_task_attempts,
    weave_tasks,
)

SNAPSHOT_MAX_DEPTH: Final = 512


class Classification(StrEnum):
    """Stable codes of acknowledged results that do not move current work."""

    STALE_ACTIVATION = "stale_activation"
    LOWER_REVISION = "lower_revision"
    SETTLED_STEP = "settled_step_history"
    SETTLED_INSTANCE = "settled_instance_history"


class Contradiction(StrEnum):
    """Stable codes of quarantined results (contradictory identity or structure)."""

    SNAPSHOT_INVALID = "snapshot_invalid"
    TASK_MISMATCH = "task_mismatch"
    REVISION_MISMATCH = "revision_mismatch"
    EVENT_MISMATCH = "event_mismatch"
    ACTIVATION_UNKNOWN = "activation_unknown"
    ACTIVATION_TASK_MISMATCH = "activation_task_mismatch"
    INSTANCE_UNKNOWN = "instance_unknown"
    STEP_MISMATCH = "step_mismatch"
    QUEUE_MISMATCH = "queue_mismatch"
    OWNER_MISMATCH = "owner_mismatch"
    GATE_MISMATCH = "gate_mismatch"
    ATTEMPT_MISMATCH = "attempt_mismatch"
    VALUE_REFUSED = "value_refused"


@dataclass(frozen=True)
class Peek:
    inbox_id: int
    namespace: str
    state: str
    row_version: int
    activation_id: str
    instance_id: str | None
    instance: Any
    """The instance's namespace, queues and status (unlocked), or None."""


class Mismatch(Exception):
    def __init__(self, code: Contradiction, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


# --- reading ---------------------------------------------------------------------------


def peek_rows(conn: Connection, where: sa.ColumnElement[bool]) -> list[Peek]:
    """Unlocked reads of inbox rows with their activation's instance (one query)."""
    i, a, n = weave_inbox, weave_activations, weave_instances
    rows = conn.execute(
        sa.select(i.c.id, i.c.namespace, i.c.state, i.c.row_version, i.c.source_activation_id,
                  a.c.instance_id, a.c.namespace.label("act_namespace"),
                  n.c.namespace.label("inst_namespace"), n.c.queues, n.c.status)
        .select_from(i.outerjoin(a, a.c.activation_id == i.c.source_activation_id)
                     .outerjoin(n, n.c.instance_id == a.c.instance_id))
        .where(where)
        .order_by(i.c.id)
    ).all()
    peeks = []
    for row in rows:
        ours = row.act_namespace == row.namespace and row.inst_namespace == row.namespace
        instance = None
        if ours:
            instance = SimpleNamespace(namespace=row.inst_namespace, queues=row.queues,
                                       status=row.status)
        peeks.append(Peek(int(row.id), row.namespace, row.state, int(row.row_version),
                           row.source_activation_id,
                           row.instance_id if row.act_namespace == row.namespace else None,
                           instance))
    return peeks


def snapshot_of(row: Row[Any]) -> dict[str, Any]:
    try:
        snap = exactjson.loads(row.snapshot, max_depth=SNAPSHOT_MAX_DEPTH)
    except InvalidJsonError as exc:
        raise Mismatch(Contradiction.SNAPSHOT_INVALID, f"snapshot is not JSON: {exc}") from exc
    if not isinstance(snap, dict) or snap.get("schema_version") != 1:
        raise Mismatch(Contradiction.SNAPSHOT_INVALID, "snapshot schema_version is not 1")
    for key in ("task_id", "queue", "status", "revision", "effect_unknown"):
        if key not in snap:
            raise Mismatch(Contradiction.SNAPSHOT_INVALID, f"snapshot lacks {key!r}")
    return snap


def verify(
    conn: Connection, row: Row[Any], act: Row[Any] | None, li: LockedInstance,
    program: Program, held_task: Any = None,
) -> tuple[dict[str, Any], Row[Any]]:
    """Every identity check of R-5.4; raise ``Mismatch`` on the first contradiction.

    ``held_task``: the task's ``namespace``, ``queue``, ``owner_id``, ``gate_id``,
    ``revision`` and ``attempt_task_id`` as the caller's transaction holds them (a step
    transaction settled the task itself); read here otherwise."""
    snap = snapshot_of(row)
    if snap["task_id"] != row.source_task_id:
        raise Mismatch(Contradiction.TASK_MISMATCH, "snapshot names another task")
    if snap["revision"] != row.source_revision:
        raise Mismatch(Contradiction.REVISION_MISMATCH, "snapshot revision differs")
    try:
        status = TaskStatus(snap["status"])
        expected_event = EVENT_BY_STATUS[status]
    except (ValueError, KeyError):
        raise Mismatch(Contradiction.SNAPSHOT_INVALID, "snapshot status is not settled") from None
    event_id = f"{row.source_task_id}:{row.source_revision}"
    if row.event_type != expected_event or row.event_id != event_id:
        raise Mismatch(Contradiction.EVENT_MISMATCH, "event identity contradicts the snapshot")
    if act is None or act.namespace != row.namespace:
        raise Mismatch(Contradiction.ACTIVATION_UNKNOWN, "no such activation here")
    if act.task_id != row.source_task_id:
        raise Mismatch(Contradiction.ACTIVATION_TASK_MISMATCH, "activation has another task")
    if act.instance_id != li.instance_id or act.step_id not in program.step_ids():
        raise Mismatch(Contradiction.STEP_MISMATCH, "activation is not of this instance")
    if program.is_composite(act.step_id) or li.step(act.step_id) is None:
        raise Mismatch(Contradiction.STEP_MISMATCH, "the step was never activated as a leaf")
    t, a = weave_tasks, weave_task_attempts
    attempt_id = snap.get("current_attempt_id")
    task = held_task if held_task is not None else conn.execute(
        sa.select(t.c.namespace, t.c.queue, t.c.owner_id, t.c.gate_id, t.c.revision,
                  a.c.task_id.label("attempt_task_id"))
        .select_from(t.outerjoin(a, a.c.attempt_id == attempt_id))
        .where(t.c.task_id == row.source_task_id)
    ).one_or_none()
    if task is None or task.namespace != row.namespace or task.owner_id != act.activation_id:
        raise Mismatch(Contradiction.OWNER_MISMATCH, "the task is not owned by the activation")
    if task.queue != snap["queue"]:
        raise Mismatch(Contradiction.QUEUE_MISMATCH, "snapshot queue differs from the task's")
    if int(task.revision) < row.source_revision:
        raise Mismatch(Contradiction.REVISION_MISMATCH, "source revision is ahead of the task")
    if act.gate_id != li.gate_id or task.gate_id != li.gate_id:
        raise Mismatch(Contradiction.GATE_MISMATCH, "gate differs from the instance's")
    if attempt_id is not None:
        if task.attempt_task_id != row.source_task_id:
            raise Mismatch(Contradiction.ATTEMPT_MISMATCH, "attempt is not of this task")
    elif status == TaskStatus.SUCCEEDED:
        raise Mismatch(Contradiction.ATTEMPT_MISMATCH, "a success without an attempt")
    return snap, act


def classify(row: Row[Any], act: Row[Any], li: LockedInstance) -> Classification | None:
    """Acknowledge-only cases: the result is history, not current work."""
    step = li.step(act.step_id)
    assert step is not None
    if step.activation_id != act.activation_id:
        return Classification.STALE_ACTIVATION
    if act.result_revision is not None and row.source_revision <= int(act.result_revision):
        return Classification.LOWER_REVISION
    if li.terminal:
        return Classification.SETTLED_INSTANCE
    if step.phase is not Phase.ACTIVE or act.state != ActivationState.ACTIVE.value:
        return Classification.SETTLED_STEP
    return None


__all__ = [
    "SNAPSHOT_MAX_DEPTH", "Classification", "Contradiction", "Mismatch", "Peek", "classify",
    "peek_rows", "snapshot_of", "verify",
]
