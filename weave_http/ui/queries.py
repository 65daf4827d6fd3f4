"""The console's own reads, for what the API's reads do not answer: why each listed
instance waits, the attempts of an instance's tasks, the namespace's queues.

Each is one plain query over a page's ids, served by an index (``tests/ui`` EXPLAINs
every statement a page sends), so a page costs the same on ten rows or ten million.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from weave_core.dispatch.queues import QueueState, QuotaState, get_quota, list_queues
from weave_core.dispatch.wakeup import hub_for
from weave_core.runtime.instances import InstanceView, iso
from weave_core.storage.db import Database
from weave_core.storage.schema import weave_steps, weave_task_attempts, weave_waits

_CHUNK: Final = 500
_TERMINAL: Final = frozenset({"SUCCEEDED", "FAILED", "CANCELLED"})


def _chunks(ids: Sequence[str]) -> Iterable[Sequence[str]]:
    for start in range(0, len(ids), _CHUNK):
        yield ids[start:start + _CHUNK]


def _wait_text(row: Any) -> str:
    if row.kind == "signal":
        return f"signal “{row.signal_name}” (key {row.correlation_key})"
    if row.kind == "timer":
        return f"timer until {iso(row.due_at or row.deadline_at)}"
    if row.kind == "poll":
        return f"poll round {row.current_round} of {row.max_rounds}"
    return str(row.kind)


def wait_reasons(db: Database, views: Sequence[InstanceView]) -> dict[str, str]:
    """For each listed instance, what it waits for now (two indexed queries per page)."""
    live = [v.instance_id for v in views if v.status.value not in _TERMINAL]
    reasons: dict[str, list[str]] = {i: [] for i in live}
    if not live:
        return {}
    w, s = weave_waits, weave_steps

    def _read(conn: Connection) -> None:
        for ids in _chunks(live):
            for row in conn.execute(
                sa.select(w.c.instance_id, w.c.kind, w.c.signal_name, w.c.correlation_key,
                          w.c.due_at, w.c.deadline_at, w.c.current_round, w.c.max_rounds)
                .where(w.c.instance_id.in_(ids), w.c.state == "OPEN")
            ):
                reasons[row.instance_id].append(_wait_text(row))
            for active in conn.execute(
                sa.select(s.c.instance_id, s.c.step_id)
                .where(s.c.instance_id.in_(ids), s.c.phase == "ACTIVE")
            ):
                if not reasons[active.instance_id]:
                    reasons[active.instance_id].append(f"step {active.step_id} active")

    db.read(_read, name="ui_wait_reasons")
    out: dict[str, str] = {}
    for v in views:
        parts = []
        if v.status.value == "NEEDS_REVIEW":
            parts.append(f"review: {v.review_reason}")
        elif v.status.value == "CANCELLING":
            parts.append(f"stopping: {v.review_reason}")
        parts.extend(reasons.get(v.instance_id, [])[:3])
        out[v.instance_id] = "; ".join(parts)
    return out


def attempts_of(db: Database, namespace: str, task_ids: Sequence[str]
                ) -> dict[str, list[dict[str, Any]]]:
    """Every attempt of these tasks, by task, in attempt order (one indexed query)."""
    found: dict[str, list[dict[str, Any]]] = {t: [] for t in task_ids}
    if not task_ids:
        return found
    a = weave_task_attempts

    def _read(conn: Connection) -> None:
        for ids in _chunks(list(task_ids)):
            for r in conn.execute(
                sa.select(a.c.task_id, a.c.attempt_id, a.c.attempt_no, a.c.worker_id,
                          a.c.started_at, a.c.lease_expires_at, a.c.heartbeat_at,
                          a.c.finished_at, a.c.outcome)
                .where(a.c.task_id.in_(ids), a.c.namespace == namespace)
                .order_by(a.c.task_id, a.c.attempt_no)
            ):
                found[r.task_id].append({
                    "attempt_id": r.attempt_id, "attempt_no": int(r.attempt_no),
                    "worker_id": r.worker_id, "started_at": iso(r.started_at),
                    "lease_expires_at": iso(r.lease_expires_at),
                    "heartbeat_at": iso(r.heartbeat_at), "finished_at": iso(r.finished_at),
                    "outcome": r.outcome,
                })

    db.read(_read, name="ui_attempts")
    return found


def queues_of(db: Database, namespace: str) -> tuple[list[tuple[QueueState, int]], QuotaState]:
    """The namespace's queues (capacity, outstanding) with the workers waiting on each in
    this process, and the namespace quota."""

    def _read(conn: Connection) -> tuple[list[QueueState], QuotaState]:
        return list_queues(conn, namespace), get_quota(conn, namespace)

    queues, quota = db.read(_read, name="ui_queues")
    hub = hub_for(db)
    return [(q, hub.waiting((namespace, q.name))) for q in queues], quota


__all__ = ["attempts_of", "queues_of", "wait_reasons"]
