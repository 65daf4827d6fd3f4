"""A stand-in for the runtime: a gate, an activation and its workflow task, one transaction."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from weave_core.dispatch import TaskSpec, create_gate_txn, create_task_txn, lock_capacity_txn
from weave_core.dispatch.model import OwnerKind, new_id
from weave_core.engine import Engine
from weave_core.storage.schema import weave_activations


@dataclass(frozen=True)
class WorkflowTask:
    task_id: str
    activation_id: str
    gate_id: str


def workflow_task(
    engine: Engine, ns: str, queue: str = "q", *, gate_open: bool = True,
    gate_id: str | None = None, **kw: Any
) -> WorkflowTask:
    db = engine.db

    def _start(conn: sa.Connection) -> WorkflowTask:
        now = db.now(conn)
        lock_capacity_txn(conn, ns, [queue])
        gate = gate_id or create_gate_txn(conn, namespace=ns, now=now, is_open=gate_open)
        activation_id, task_id = new_id("act"), new_id("tsk")
        conn.execute(sa.insert(weave_activations).values(
            activation_id=activation_id, namespace=ns, instance_id=new_id("wf"),
            step_id="step", state="WAITING_TASK", state_version=1, task_id=task_id,
            poll_round=None, gate_id=gate, created_at=now,
        ))
        values: dict[str, Any] = {"handler": "echo", "handler_version": "1", "input": {}}
        values.update(kw)
        create_task_txn(conn, namespace=ns, now=now, spec=TaskSpec(
            queue=queue, owner_kind=OwnerKind.WORKFLOW_ACTIVATION, owner_id=activation_id,
            gate_id=gate, task_id=task_id, **values))
        return WorkflowTask(task_id, activation_id, gate)

    return db.transaction(_start, name="test_workflow_task")
