"""What an instance's view shows of its waits: wait records, signals and poll rounds."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from weave_core.foundation.exactjson import JSON
from weave_core.runtime.instances import iso, load_json
from weave_core.runtime.waits.signals import list_signals
from weave_core.storage.schema import weave_poll_rounds, weave_task_events, weave_waits


def _waits(conn: Connection, instance_id: str) -> list[dict[str, JSON]]:
    w = weave_waits
    rows = conn.execute(sa.select(w).where(w.c.instance_id == instance_id)
                        .order_by(w.c.opened_at, w.c.activation_id)).all()
    return [{
        "activation_id": r.activation_id, "step_id": r.step_id, "kind": r.kind,
        "state": r.state, "version": int(r.version), "signal_name": r.signal_name,
        "correlation_key": r.correlation_key, "param_version": r.param_version,
        "opened_at": iso(r.opened_at), "due_at": iso(r.due_at),
        "deadline_at": iso(r.deadline_at), "max_rounds": r.max_rounds,
        "interval_seconds": r.interval_seconds, "current_round": int(r.current_round),
        "next_round_at": iso(r.next_round_at), "last_status": r.last_status,
        "last_result": load_json(r.last_result), "winner": r.winner,
        "winner_ref": r.winner_ref, "reason": r.reason, "settled_at": iso(r.settled_at),
    } for r in rows]

def _late_reports(conn: Connection, task_ids: list[str]) -> dict[str, list[dict[str, JSON]]]:
    """Reports the dispatch layer refused for these round tasks (an attempt authorised
    before the poll deadline that answered after it, a superseded attempt), with their
    content: evidence only, they never move the step."""
    e = weave_task_events
    out: dict[str, list[dict[str, JSON]]] = {}
    if not task_ids:
        return out
    rows = conn.execute(sa.select(e.c.task_id, e.c.attempt_id, e.c.occurred_at, e.c.payload)
                        .where(e.c.task_id.in_(task_ids),
                               e.c.event_type == "task.report_refused")
                        .order_by(e.c.task_id, e.c.id)).all()
    for x in rows:
        payload = load_json(x.payload) or {}
        report = payload.get("report") or {}
        out.setdefault(x.task_id, []).append({
            "attempt_id": x.attempt_id, "reason": payload.get("reason"),
            "outcome": payload.get("outcome"), "output": report.get("output"),
            "error": report.get("error"), "report_hash": payload.get("report_hash"),
            "reported_at": iso(x.occurred_at)})
    return out

def _rounds(conn: Connection, instance_id: str) -> list[dict[str, JSON]]:
    r = weave_poll_rounds
    rows = conn.execute(sa.select(r).where(r.c.instance_id == instance_id)
                        .order_by(r.c.activation_id, r.c.round)).all()
    late = _late_reports(conn, [x.task_id for x in rows])
    return [{
        "activation_id": x.activation_id, "round": int(x.round), "task_id": x.task_id,
        "state": x.state, "status": x.status, "result": load_json(x.result),
        "result_accepted_at": iso(x.result_accepted_at), "classification": x.classification,
        "created_at": iso(x.created_at), "settled_at": iso(x.settled_at),
        "late_reports": late.get(x.task_id, []),
    } for x in rows]

def describe_waits(conn: Connection, namespace: str, instance_id: str) -> dict[str, Any]:
    """The instance view's ``waits``, ``signals`` and ``poll_rounds`` (plain reads)."""
    return {"waits": _waits(conn, instance_id),
            "signals": list_signals(conn, namespace, instance_id),
            "poll_rounds": _rounds(conn, instance_id)}


__all__ = ["describe_waits"]
