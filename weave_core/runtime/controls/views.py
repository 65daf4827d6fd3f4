"""What the instance view shows of controls and review (R-10.2): the operations with their
operators, the review (reason, blocking steps, unknown effects and their conclusions) and
the cancel intent. Plain reads, in the caller's read transaction."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from weave_core.planning.snapshot import Phase
from weave_core.runtime.controls.operations import OperationKind, operations_of
from weave_core.runtime.controls.review import BLOCKING
from weave_core.storage.schema import weave_activations, weave_steps, weave_tasks


def control_view(conn: Connection, namespace: str, instance_id: str,
                 review_reason: str | None) -> dict[str, Any]:
    """``operations``, ``cancel_requested`` and ``review`` of one instance."""
    operations = operations_of(conn, namespace, instance_id)
    concluded: dict[str, dict[str, Any]] = {}
    for op in operations:
        if op.conclusion is not None and op.activation_id is not None:
            concluded[op.activation_id] = {"conclusion": op.conclusion, "actor": op.actor,
                                           "operation_id": op.operation_id,
                                           "evidence": op.evidence}
    s, a, t = weave_steps, weave_activations, weave_tasks
    rows = conn.execute(
        sa.select(s.c.step_id, s.c.phase, s.c.reason, s.c.version, s.c.activation_id,
                  t.c.task_id, t.c.effect_unknown)
        .select_from(s.outerjoin(a, a.c.activation_id == s.c.activation_id)
                     .outerjoin(t, t.c.task_id == a.c.task_id))
        .where(s.c.instance_id == instance_id, s.c.namespace == namespace)
        .order_by(s.c.step_id)
    ).all()
    blocking = []
    unknown = []
    for r in rows:
        phase = Phase(r.phase)
        if phase not in BLOCKING or r.activation_id is None:
            continue
        blocking.append({"step_id": r.step_id, "phase": phase.value, "reason": r.reason,
                         "state_version": int(r.version), "activation_id": r.activation_id})
        if bool(r.effect_unknown) or r.reason == "effect_unknown":
            unknown.append({"step_id": r.step_id, "activation_id": r.activation_id,
                            "task_id": r.task_id,
                            "conclusion": concluded.get(r.activation_id)})
    return {
        "operations": [op.to_json() for op in operations],
        "cancel_requested": any(op.kind == OperationKind.CANCEL.value for op in operations),
        "review": {"reason": review_reason, "blocking_steps": blocking,
                   "unknown_effects": unknown},
    }


__all__ = ["control_view"]
