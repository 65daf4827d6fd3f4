"""Reading back what dispatch recorded (R-10.2): every attempt of a task and its events.

Attempts come from ``weave_task_attempts``; an attempt's error is the ``error`` of the
event that ended it (a scheduled retry or the task's settlement), since the attempt row
keeps only its outcome. Plain reads, no locks; another namespace's task is not found.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from weave_core.dispatch.model import AttemptEnd
from weave_core.dispatch.tasks import read_task_row
from weave_core.runtime.instances import iso, load_json
from weave_core.storage.db import Database
from weave_core.storage.schema import (
    weave_activations,
    weave_task_attempts,
    weave_task_events,
    weave_tasks,
    weave_transitions,
)

REPORTED_ENDS: Final = frozenset({AttemptEnd.SUCCEEDED.value, AttemptEnd.FAILED.value,
                                  AttemptEnd.CANCELLED.value})
"""Outcomes that come from a worker's report; the others are the engine's (lease, deadline)."""

NOTABLE_EVENTS: Final = frozenset({"task.retry_scheduled", "task.report_refused",
                                   "task.needs_review", "task.failed"})
"""Task events an instance's history shows beside its transitions."""


def _event(r: Any) -> dict[str, Any]:
    return {"id": int(r["id"]), "task_id": r["task_id"], "revision": int(r["revision"]),
            "event_type": r["event_type"], "attempt_id": r["attempt_id"],
            "occurred_at": iso(r["occurred_at"]), "payload": load_json(r["payload"])}


def events_of(conn: Connection, task_ids: Iterable[str]) -> list[dict[str, Any]]:
    """Every event of ``task_ids``, oldest first (``ix_weave_task_events_task``)."""
    ids = sorted(set(task_ids))
    if not ids:
        return []
    e = weave_task_events
    rows = conn.execute(sa.select(e).where(e.c.task_id.in_(ids)).order_by(e.c.id)).mappings()
    return [_event(r) for r in rows]


def _errors_by_attempt(events: list[dict[str, Any]]) -> dict[str, Any]:
    errors: dict[str, Any] = {}
    for event in events:
        payload = event["payload"]
        if (event["attempt_id"] is not None and event["event_type"] != "task.report_refused"
                and isinstance(payload, dict) and payload.get("error") is not None):
            errors[event["attempt_id"]] = payload["error"]
    return errors


def attempts_of(conn: Connection, task_ids: Iterable[str],
                events: list[dict[str, Any]] | None = None) -> dict[str, list[dict[str, Any]]]:
    """The attempts of each of ``task_ids`` in attempt order, each with its error."""
    ids = sorted(set(task_ids))
    found: dict[str, list[dict[str, Any]]] = {task_id: [] for task_id in ids}
    if not ids:
        return found
    errors = _errors_by_attempt(events if events is not None else events_of(conn, ids))
    a = weave_task_attempts
    rows = conn.execute(sa.select(a).where(a.c.task_id.in_(ids))
                        .order_by(a.c.task_id, a.c.attempt_no)).mappings()
    for r in rows:
        outcome = r["outcome"]
        found[r["task_id"]].append({
            "attempt_id": r["attempt_id"], "attempt_no": int(r["attempt_no"]),
            "worker_id": r["worker_id"],
            # A claim starts its attempt: the claimed and started times are one instant.
            "claimed_at": iso(r["started_at"]), "started_at": iso(r["started_at"]),
            "lease_expires_at": iso(r["lease_expires_at"]), "close_by": iso(r["close_by"]),
            "last_heartbeat_at": iso(r["heartbeat_at"]), "ended_at": iso(r["finished_at"]),
            "reported_at": iso(r["finished_at"]) if outcome in REPORTED_ENDS else None,
            "outcome": outcome, "error": errors.get(r["attempt_id"]),
        })
    return found


def task_attempts(db: Database, namespace: str, task_id: str) -> list[dict[str, Any]]:
    """Every attempt of one task of ``namespace`` (``TaskNotFoundError`` otherwise)."""

    def _read(conn: Connection) -> list[dict[str, Any]]:
        read_task_row(conn, namespace, task_id)
        return attempts_of(conn, [task_id])[task_id]

    return db.read(_read, name="task_attempts")


def task_events(db: Database, namespace: str, task_id: str) -> list[dict[str, Any]]:
    """Every event of one task of ``namespace``: created, started, retry scheduled, report
    refused, cancel requested, settled (``TaskNotFoundError`` otherwise)."""

    def _read(conn: Connection) -> list[dict[str, Any]]:
        read_task_row(conn, namespace, task_id)
        return events_of(conn, [task_id])

    return db.read(_read, name="task_events")


def _transition_time(conn: Connection, instance_id: str, revision: int) -> datetime | None:
    t = weave_transitions
    value = conn.execute(sa.select(t.c.occurred_at).where(
        t.c.instance_id == instance_id, t.c.revision == revision)).scalar_one_or_none()
    return value if isinstance(value, datetime) else None


def instance_task_events(conn: Connection, namespace: str, instance_id: str, *,
                         after_revision: int, until_revision: int | None
                         ) -> list[dict[str, Any]]:
    """The notable events (:func:`notable`) of the instance's tasks that happened after
    the transition ``after_revision`` and up to ``until_revision`` (no bound when None):
    a history page shows the task events of its own stretch of time, so each appears on
    exactly one page. Each carries ``kind`` and the task's ``step_id``."""
    a, t, e = weave_activations, weave_tasks, weave_task_events
    owners = {str(task_id): str(step_id) for task_id, step_id in conn.execute(
        sa.select(t.c.task_id, a.c.step_id).join(a, a.c.activation_id == t.c.owner_id)
        .where(a.c.namespace == namespace, a.c.instance_id == instance_id,
               t.c.namespace == namespace))}
    if not owners:
        return []
    stmt = sa.select(e).where(e.c.task_id.in_(sorted(owners)),
                              e.c.event_type.in_(sorted(NOTABLE_EVENTS)))
    lower = _transition_time(conn, instance_id, after_revision) if after_revision else None
    upper = None if until_revision is None else _transition_time(conn, instance_id,
                                                                  until_revision)
    if lower is not None:
        stmt = stmt.where(e.c.occurred_at > lower)
    if upper is not None:
        stmt = stmt.where(e.c.occurred_at <= upper)
    found: list[dict[str, Any]] = []
    for r in conn.execute(stmt.order_by(e.c.occurred_at, e.c.id)).mappings():
        event = _event(r)
        kind = notable(event)
        if kind is not None:
            found.append({**event, "kind": kind, "step_id": owners[event["task_id"]]})
    return found


def notable(event: dict[str, Any]) -> str | None:
    """What an instance's history calls this task event: ``lease_expired`` (or
    ``deadline_exceeded``) when an attempt ran out, ``retry_scheduled``,
    ``report_refused``; None for the routine ones (created, started, succeeded)."""
    if event["event_type"] not in NOTABLE_EVENTS:
        return None
    payload = event["payload"]
    error = payload.get("error") if isinstance(payload, dict) else None
    kind = error.get("type") if isinstance(error, dict) else None
    if kind in (AttemptEnd.LEASE_EXPIRED.value, AttemptEnd.DEADLINE_EXCEEDED.value):
        return str(kind)
    name = str(event["event_type"]).removeprefix("task.")
    return name if name in ("retry_scheduled", "report_refused") else None


__all__ = ["NOTABLE_EVENTS", "attempts_of", "events_of", "instance_task_events", "notable",
           "task_attempts", "task_events"]
