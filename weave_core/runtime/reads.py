"""Reads of instances (R-10.2): one instance with its steps, activations, tasks and open
deferred work; a filtered list with a stable cursor; the ordered history.

Plain reads (no locks) in a read transaction; another namespace's instance is not found.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from weave_core.access.audit import AuditEntry, list_audit
from weave_core.dispatch.sightings import (
    HANDLER_SEEN_WINDOW_S,
    HANDLER_UNAVAILABLE,
    handler_unavailable,
    last_seen,
)
from weave_core.foundation.errors import Problem, ValidationError
from weave_core.runtime.admission import DEFAULT_OPERATION_TYPE, read_instance
from weave_core.runtime.controls.views import control_view
from weave_core.runtime.frozen import read_config
from weave_core.runtime.history import MAX_HISTORY_PAGE, read_transitions
from weave_core.runtime.instances import InstanceStatus, InstanceView, iso, load_json
from weave_core.runtime.task_records import attempts_of, instance_task_events
from weave_core.runtime.waits.views import describe_waits
from weave_core.storage.db import Database
from weave_core.storage.schema import (
    weave_activations,
    weave_idempotency,
    weave_instances,
    weave_pending_advances,
    weave_poll_rounds,
    weave_steps,
    weave_tasks,
    weave_transitions,
)

MAX_LIST_LIMIT: Final = 500
DEFAULT_LIST_LIMIT: Final = 50


def _steps(conn: Connection, instance_id: str) -> list[dict[str, Any]]:
    s = weave_steps
    rows = conn.execute(
        sa.select(s).where(s.c.instance_id == instance_id).order_by(s.c.created_at, s.c.step_id)
    ).mappings()
    return [
        {
            "step_id": r["step_id"], "phase": r["phase"], "version": int(r["version"]),
            "output": load_json(r["output"]), "decision": load_json(r["decision"]),
            "activation_id": r["activation_id"], "reason": r["reason"],
            "created_at": iso(r["created_at"]), "updated_at": iso(r["updated_at"]),
        }
        for r in rows
    ]


def _activations(conn: Connection, namespace: str, instance_id: str) -> list[dict[str, Any]]:
    a = weave_activations
    rows = conn.execute(
        sa.select(a).where(a.c.namespace == namespace, a.c.instance_id == instance_id)
        .order_by(a.c.created_at, a.c.activation_id)
    ).mappings()
    return [
        {
            "activation_id": r["activation_id"], "step_id": r["step_id"], "kind": r["kind"],
            "state": r["state"], "state_version": int(r["state_version"]),
            "task_id": r["task_id"], "poll_round": r["poll_round"],
            "command": load_json(r["command"]), "result_revision": r["result_revision"],
            "reason": r["reason"], "created_at": iso(r["created_at"]),
            "settled_at": iso(r["settled_at"]),
        }
        for r in rows
    ]


def _tasks(conn: Connection, namespace: str, instance_id: str,
           db_now: Callable[[Connection], datetime]) -> list[dict[str, Any]]:
    """Every task any activation of the instance owned (every poll round's, not only the
    current one), each with its attempts (``runtime.task_records``)."""
    a, t, pr = weave_activations, weave_tasks, weave_poll_rounds
    rows = list(conn.execute(
        sa.select(t, a.c.step_id, pr.c.round.label("poll_round"))
        .join(a, a.c.activation_id == t.c.owner_id)
        .outerjoin(pr, pr.c.task_id == t.c.task_id)
        .where(a.c.namespace == namespace, a.c.instance_id == instance_id,
               t.c.namespace == namespace)
        .order_by(t.c.created_at, t.c.task_id)
    ).mappings())
    attempts = attempts_of(conn, [r["task_id"] for r in rows])
    waiting = [r for r in rows if r["status"] == "PENDING" and r["gate_open"]]
    seen = last_seen(conn, namespace,
                     [(r["queue"], r["handler"], r["handler_version"]) for r in waiting])
    now = db_now(conn) if waiting else None
    unavailable = {r["task_id"]: seen.get((r["queue"], r["handler"], r["handler_version"]))
                   for r in waiting if now is not None and handler_unavailable(
                       seen.get((r["queue"], r["handler"], r["handler_version"])), now)}
    return [
        {
            "task_id": r["task_id"], "step_id": r["step_id"], "activation_id": r["owner_id"],
            "queue": r["queue"], "handler": r["handler"],
            "handler_version": r["handler_version"], "status": r["status"],
            "revision": int(r["revision"]), "attempts_used": int(r["attempts_used"]),
            "max_attempts": int(r["max_attempts"]), "effect_unknown": bool(r["effect_unknown"]),
            "result": load_json(r["result"]), "error": load_json(r["error"]),
            "deadline_at": iso(r["deadline_at"]), "created_at": iso(r["created_at"]),
            "updated_at": iso(r["updated_at"]),
            "poll_round": None if r["poll_round"] is None else int(r["poll_round"]),
            "attempts": attempts[r["task_id"]],
            "wait_reason": HANDLER_UNAVAILABLE if r["task_id"] in unavailable else None,
            "handler_last_seen_at": iso(unavailable.get(r["task_id"])),
        }
        for r in rows
    ]


def wait_reasons(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Why the instance waits beyond its steps: a pending task whose handler version no
    worker asked for within ``HANDLER_SEEN_WINDOW_S`` (``dispatch.sightings``)."""
    return [{"reason": t["wait_reason"], "task_id": t["task_id"], "step_id": t["step_id"],
             "queue": t["queue"], "handler": t["handler"],
             "handler_version": t["handler_version"],
             "last_seen_at": t["handler_last_seen_at"],
             "window_seconds": HANDLER_SEEN_WINDOW_S}
            for t in tasks if t["wait_reason"] is not None]


def _pending(conn: Connection, instance_id: str) -> list[dict[str, Any]]:
    p = weave_pending_advances
    rows = conn.execute(
        sa.select(p).where(p.c.instance_id == instance_id, p.c.state == "PENDING")
        .order_by(p.c.due_at, p.c.id)
    ).mappings()
    return [
        {"id": int(r["id"]), "kind": r["kind"], "ref": r["ref"], "reason": r["reason"],
         "due_at": iso(r["due_at"])}
        for r in rows
    ]


def _waits(conn: Connection, namespace: str, instance_id: str) -> dict[str, Any]:
    return describe_waits(conn, namespace, instance_id)


def _controls(conn: Connection, namespace: str, instance_id: str,
              review_reason: str | None) -> dict[str, Any]:
    return control_view(conn, namespace, instance_id, review_reason)


def describe_instance(db: Database, namespace: str, instance_id: str) -> dict[str, Any]:
    """One instance with its steps, activations, tasks and pending (due) work, its waits,
    and its operations, cancel intent and review (reason, blocking steps, unknown effects),
    and the effective configuration frozen at its start.
    """

    def _read(conn: Connection) -> dict[str, Any]:
        view = read_instance(conn, namespace, instance_id)
        tasks = _tasks(conn, namespace, instance_id, db.now)
        return {
            **view.to_json(),
            "steps": _steps(conn, instance_id),
            "activations": _activations(conn, namespace, instance_id),
            "tasks": tasks,
            "wait_reasons": wait_reasons(tasks),
            "pending": _pending(conn, instance_id),
            **_waits(conn, namespace, instance_id),
            **_controls(conn, namespace, instance_id, view.review_reason),
            "config": _config(conn, view.config_hash),
        }

    return db.read(_read, name="describe_instance")


def _config(conn: Connection, config_hash: str | None) -> Any:
    """The effective configuration the instance was accepted with (issue 12)."""
    return read_config(conn, config_hash)


# --- the list ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ListFilter:
    status: InstanceStatus | None = None
    definition_id: str | None = None
    version: str | None = None
    paused: bool | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    idempotency_key: str | None = None
    """The business key of the start: the instance is found through the primary key of
    ``weave_idempotency`` (namespace, operation type, key), never by a scan."""
    operation_type: str = DEFAULT_OPERATION_TYPE


def encode_cursor(created_at: datetime, instance_id: str) -> str:
    raw = f"{created_at.isoformat()}|{instance_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        stamp, instance_id = raw.split("|", 1)
        return datetime.fromisoformat(stamp), instance_id
    except (ValueError, UnicodeDecodeError, binascii.Error):
        raise ValidationError("invalid cursor", [
            Problem("$.cursor", "invalid_cursor", "pass back a next_cursor unchanged")
        ]) from None


def by_idempotency_key(namespace: str, operation_type: str,
                       key: str) -> sa.ScalarSelect[Any]:
    """The instance id started under (namespace, operation type, key): a primary-key read."""
    d = weave_idempotency
    return (sa.select(d.c.instance_id)
            .where(d.c.namespace == namespace, d.c.operation_type == operation_type,
                   d.c.idempotency_key == key)
            .scalar_subquery())


def list_instances(
    db: Database, namespace: str, filters: ListFilter, *, cursor: str | None = None,
    limit: int = DEFAULT_LIST_LIMIT,
) -> tuple[list[InstanceView], str | None]:
    """Instances newest first (created_at, then id, descending); ``next_cursor`` or None."""
    if not 1 <= limit <= MAX_LIST_LIMIT:
        raise ValidationError("invalid limit", [
            Problem("$.limit", "invalid_field", f"limit is 1 to {MAX_LIST_LIMIT}")])
    stmt = list_statement(namespace, filters, cursor, limit)
    rows = db.read(lambda conn: list(conn.execute(stmt).mappings()), name="list_instances")
    views = [InstanceView.from_row(r) for r in rows[:limit]]
    next_cursor = None
    if len(rows) > limit:
        last = views[-1]
        next_cursor = encode_cursor(last.created_at, last.instance_id)
    return views, next_cursor


def list_statement(namespace: str, filters: ListFilter, cursor: str | None,
                   limit: int) -> sa.Select[Any]:
    """The list's one SELECT (``limit + 1`` rows: the extra one says a page follows)."""
    i = weave_instances
    stmt = sa.select(i).where(i.c.namespace == namespace)
    if filters.status is not None:
        stmt = stmt.where(i.c.status == filters.status.value)
    if filters.definition_id is not None:
        stmt = stmt.where(i.c.definition_id == filters.definition_id)
    if filters.version is not None:
        stmt = stmt.where(i.c.version == filters.version)
    if filters.paused is not None:
        stmt = stmt.where(i.c.paused == filters.paused)
    if filters.created_after is not None:
        stmt = stmt.where(i.c.created_at >= filters.created_after)
    if filters.created_before is not None:
        stmt = stmt.where(i.c.created_at < filters.created_before)
    if filters.idempotency_key is not None:
        stmt = stmt.where(i.c.instance_id == by_idempotency_key(
            namespace, filters.operation_type, filters.idempotency_key))
    if cursor is not None:
        at, last_id = decode_cursor(cursor)
        stmt = stmt.where(sa.or_(i.c.created_at < at,
                                 sa.and_(i.c.created_at == at, i.c.instance_id < last_id)))
    return stmt.order_by(i.c.created_at.desc(), i.c.instance_id.desc()).limit(limit + 1)


# --- history ----------------------------------------------------------------------------


def _transitions_after(conn: Connection, instance_id: str, revision: int) -> bool:
    t = weave_transitions
    return conn.execute(sa.select(t.c.revision).where(
        t.c.instance_id == instance_id, t.c.revision > revision).limit(1)).first() is not None


def read_history(
    db: Database, namespace: str, instance_id: str, *, after_revision: int = 0,
    limit: int = 100, task_events: list[dict[str, Any]] | None = None,
) -> tuple[list[dict[str, Any]], int | None]:
    """Transitions in revision order, each with the audit entry of its transaction.

    Returns ``(items, next_cursor)``; the cursor is the last revision returned. A list
    passed as ``task_events`` receives the page's notable task events (lease expiries,
    retries, refused reports: ``runtime.task_records.instance_task_events``).
    """
    if not 1 <= limit <= MAX_HISTORY_PAGE:
        raise ValidationError("invalid limit", [
            Problem("$.limit", "invalid_field", f"limit is 1 to {MAX_HISTORY_PAGE}")])

    def _read(conn: Connection) -> tuple[list[dict[str, Any]], int | None]:
        read_instance(conn, namespace, instance_id)  # NotFoundError for another namespace
        items = read_transitions(conn, instance_id, after_revision=after_revision,
                                 limit=limit)
        more = bool(items) and _transitions_after(conn, instance_id, items[-1]["revision"])
        audit_ids = {x["audit_id"] for x in items if x["audit_id"] is not None}
        audits: dict[int, AuditEntry] = {}
        if audit_ids:
            first = min(audit_ids) - 1
            for entry in list_audit(conn, namespace, "workflow", instance_id, after_id=first,
                                    limit=1000):
                if entry.id in audit_ids:
                    audits[entry.id] = entry
        for item in items:
            found = audits.get(item["audit_id"]) if item["audit_id"] is not None else None
            item["audit"] = None if found is None else found.to_json()
        if task_events is not None:
            task_events[:] = instance_task_events(
                conn, namespace, instance_id, after_revision=after_revision,
                until_revision=items[-1]["revision"] if more and items else None)
        return items, (items[-1]["revision"] if more and items else None)

    return db.read(_read, name="read_history")


__all__ = [
    "DEFAULT_LIST_LIMIT",
    "MAX_LIST_LIMIT",
    "ListFilter",
    "by_idempotency_key",
    "decode_cursor",
    "describe_instance",
    "encode_cursor",
    "list_instances",
    "list_statement",
    "read_history",
]
