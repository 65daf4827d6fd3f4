"""Execution gates: a closed gate stops claims, start authorisations and retries of its
tasks; attempts already started keep renewing and reporting (R-8.1, R-9.2).

The gate row is the truth; its ``is_open`` is copied onto the gate's unsettled tasks
(``gate_open``) in the transaction that changes it, so the claim query filters on it inside
its index and a claim can never slip past a close: a task locked by a claim is waited for,
and a task already closed is invisible to the claim.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from weave_core.dispatch.errors import GateNotFoundError
from weave_core.dispatch.model import TaskStatus, new_id
from weave_core.dispatch.timing import earliest
from weave_core.dispatch.wakeup import note_available_txn
from weave_core.storage.locks import lock_gate, lock_gate_tasks
from weave_core.storage.schema import weave_execution_gates, weave_tasks
from weave_core.storage.statements import insert_rows


@dataclass(frozen=True)
class GateState:
    gate_id: str
    namespace: str
    is_open: bool
    version: int


def create_gate_txn(
    conn: Connection,
    *,
    namespace: str,
    now: datetime,
    gate_id: str | None = None,
    is_open: bool = True,
) -> str:
    """Create an execution gate (version 1) and return its id."""
    gate_id = gate_id or new_id("gate")
    insert_rows(conn, weave_execution_gates, dict(  # queued in a start's deferring block
        gate_id=gate_id, namespace=namespace, is_open=is_open, version=1,
        created_at=now, updated_at=now,
    ))
    return gate_id


def set_gate_txn(conn: Connection, gate_id: str, is_open: bool, *, now: datetime) -> GateState:
    """Open or close a gate in the caller's transaction (gate lock, then its tasks).

    Closing: PENDING tasks stop being claimable and their schedule-to-start clock stops
    (the deadline still runs: pausing never extends a deadline). Opening: PENDING tasks
    become claimable and their schedule-to-start clock restarts. RUNNING attempts are not
    touched either way; a retry under a closed gate waits for the gate. No-op if unchanged.
    """
    gate = lock_gate(conn, gate_id)
    if gate is None:
        raise GateNotFoundError(f"gate {gate_id!r} not found", details={"gate_id": gate_id})
    if bool(gate.is_open) == is_open:
        return GateState(gate_id, gate.namespace, is_open, int(gate.version))
    version = int(gate.version) + 1
    g = weave_execution_gates
    conn.execute(
        sa.update(g).where(g.c.gate_id == gate_id)
        .values(is_open=is_open, version=version, updated_at=now)
    )
    t = weave_tasks
    queues: set[str] = set()
    for task in lock_gate_tasks(conn, gate_id):
        values: dict[str, object] = {"gate_open": is_open, "updated_at": now}
        if task.status == TaskStatus.PENDING:
            start_by = None
            if is_open and task.schedule_to_start_s is not None:
                start_by = max(now, task.available_at) + timedelta(
                    seconds=int(task.schedule_to_start_s)
                )
                queues.add(task.queue)
            elif is_open:
                queues.add(task.queue)
            values["start_by"] = start_by
            values["timeout_at"] = earliest(start_by, task.deadline_at)
        conn.execute(sa.update(t).where(t.c.task_id == task.task_id).values(**values))
    for queue in queues:
        note_available_txn(conn, gate.namespace, queue)
    return GateState(gate_id, gate.namespace, is_open, version)


def get_gate(conn: Connection, gate_id: str) -> GateState:
    g = weave_execution_gates
    row = conn.execute(sa.select(g).where(g.c.gate_id == gate_id)).one_or_none()
    if row is None:
        raise GateNotFoundError(f"gate {gate_id!r} not found", details={"gate_id": gate_id})
    return GateState(row.gate_id, row.namespace, bool(row.is_open), int(row.version))


__all__ = ["GateState", "create_gate_txn", "get_gate", "set_gate_txn"]
