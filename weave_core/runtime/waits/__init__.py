"""Durable waits (issue 6): signals, timers and bounded polling, with their races.

The kernel calls in at four points; everything else lives in this package:

- :func:`open_wait_txn` — from the advance, when a ``signal``, ``timer`` or ``poll`` step is
  activated (inside the successors' savepoint): the wait record, the due rows, round 1;
- :func:`wait_pending_txn` — from the pending-advance runner for ``TIMER``, ``POLL`` and
  ``SIGNAL`` rows;
- :func:`~weave_core.runtime.waits.polls.apply_round_result_txn` — from the consumer for a
  poll activation's result;
- :func:`describe_waits` — the instance view (waits, signals, poll rounds).

See docs/waits.md for the rules, races and limits.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from weave_core.engine import Engine
from weave_core.foundation.errors import Problem
from weave_core.foundation.exactjson import JSON
from weave_core.foundation.limits import Limits
from weave_core.planning.program import Program
from weave_core.plugins.nodespec import Command, PollCommand, TimerCommand, WaitSignalCommand
from weave_core.runtime.history import History
from weave_core.runtime.instances import iso, load_json
from weave_core.runtime.pending import PendingKind, PendingReason, schedule_txn
from weave_core.runtime.snapshot import LockedInstance
from weave_core.runtime.wait_records import WaitKind, insert_wait_txn
from weave_core.runtime.waits.polls import apply_round_result_txn, open_poll_txn, poll_due_txn
from weave_core.runtime.waits.races import cancel_waits_txn, resume_waits_txn
from weave_core.runtime.waits.signals import (
    Acceptance,
    SignalRequest,
    accept_signal,
    early_signal_txn,
    expire_signals,
    list_signals,
    signal_due_txn,
)
from weave_core.runtime.waits.timers import timer_due_txn
from weave_core.storage.schema import weave_poll_rounds, weave_task_events, weave_waits

WAIT_COMMANDS = (WaitSignalCommand, TimerCommand, PollCommand)


def _prior(conn: Connection, instance_id: str, step_id: str) -> Any:
    """The latest earlier wait of this step (a recovery re-activates a step)."""
    w = weave_waits
    return conn.execute(
        sa.select(w.c.due_at, w.c.deadline_at, w.c.current_round)
        .where(w.c.instance_id == instance_id, w.c.step_id == step_id)
        .order_by(w.c.opened_at.desc(), w.c.activation_id.desc()).limit(1)
    ).one_or_none()


def open_wait_txn(conn: Connection, engine: Engine, li: LockedInstance, *, step_id: str,
                  activation_id: str, command: Command, now: datetime) -> dict[str, JSON]:
    """Open the durable wait of a just-inserted activation; returns transition details.

    A step activated again (recovery) keeps its absolute times: a timer's due time, a
    signal wait's and a poll's deadline, and a poll's round number (R-8.5).
    """
    prior = _prior(conn, li.instance_id, step_id)
    if isinstance(command, TimerCommand):
        due = now + timedelta(seconds=command.seconds)
        if prior is not None and prior.due_at is not None:
            due = prior.due_at
        insert_wait_txn(conn, li, activation_id=activation_id, step_id=step_id,
                        kind=WaitKind.TIMER, now=now, due_at=due, deadline_at=due)
        schedule_txn(conn, namespace=li.namespace, instance_id=li.instance_id,
                     kind=PendingKind.TIMER, ref=activation_id, due_at=due,
                     reason=PendingReason.TIMER.value, root_version=li.root_version,
                     root_identity=li.root_identity, now=now)
        return {"due_at": iso(due)}
    if isinstance(command, WaitSignalCommand):
        deadline = None
        if command.timeout_seconds is not None:
            deadline = now + timedelta(seconds=command.timeout_seconds)
            if prior is not None and prior.deadline_at is not None:
                deadline = prior.deadline_at
        insert_wait_txn(conn, li, activation_id=activation_id, step_id=step_id,
                        kind=WaitKind.SIGNAL, now=now, signal_name=command.name,
                        correlation_key=command.correlation_key,
                        param_version=command.param_version, deadline_at=deadline)
        if deadline is not None:
            schedule_txn(conn, namespace=li.namespace, instance_id=li.instance_id,
                         kind=PendingKind.TIMER, ref=activation_id, due_at=deadline,
                         reason="signal_timeout", root_version=li.root_version,
                         root_identity=li.root_identity, now=now)
        early = early_signal_txn(conn, li, activation_id=activation_id, name=command.name,
                                 correlation_key=command.correlation_key,
                                 param_version=command.param_version, now=now)
        return {"waiting": "signal", "name": command.name,
                "correlation_key": command.correlation_key,
                "param_version": command.param_version, "deadline_at": iso(deadline),
                "early_signal": early}
    if isinstance(command, PollCommand):
        return open_poll_txn(conn, engine, li, step_id=step_id, activation_id=activation_id,
                             command=command, now=now,
                             kept=None if prior is None else (prior.deadline_at,
                                                              int(prior.current_round)))
    raise TypeError(f"{type(command).__name__} is not a wait")


def wait_pending_txn(conn: Connection, engine: Engine, li: LockedInstance, history: History,
                     program: Program, kind: PendingKind, ref: str, now: datetime) -> bool:
    """Run a due ``TIMER`` / ``POLL`` / ``SIGNAL`` pending row (ref: the activation);
    False for a TIMER row of an activation without a wait record."""
    if kind is PendingKind.TIMER:
        return timer_due_txn(conn, engine, li, history, program, ref, now)
    if kind is PendingKind.POLL:
        poll_due_txn(conn, engine, li, history, program, ref, now)
    elif kind is PendingKind.SIGNAL:
        signal_due_txn(conn, engine, li, history, program, ref, now)
    return True


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


def start_problems(program: Program, deadline_seconds: int, limits: Limits) -> list[Problem]:
    """R-7.7 at start: waits that could never end before the instance deadline, and poll
    budgets above the engine's current limits (publish checked the limits of its day)."""
    problems: list[Problem] = []
    for step_id in program.step_ids():
        kind = program.kind_of(step_id)
        config = program.config_read_only(step_id)
        where = f"$.steps.{step_id}"
        spans: list[tuple[str, int | None]] = []
        if kind == "timer":
            spans.append(("seconds", getattr(config, "seconds", None)))
        elif kind == "signal":
            spans.append(("timeout_seconds", getattr(config, "timeout_seconds", None)))
        elif kind == "poll":
            spans.append(("deadline_seconds", getattr(config, "deadline_seconds", None)))
            rounds = int(getattr(config, "max_rounds", 0))
            attempts = int(getattr(config, "attempts_per_round", 1))
            total = rounds * attempts
            if rounds > limits.max_poll_rounds or total > limits.max_poll_attempts_total:
                problems.append(Problem(
                    where, "poll_budget_too_large",
                    f"max_rounds {rounds} x attempts_per_round {attempts} is above the "
                    f"engine's max_poll_rounds ({limits.max_poll_rounds}) or "
                    f"max_poll_attempts_total ({limits.max_poll_attempts_total})"))
            if attempts > limits.max_task_attempts:
                problems.append(Problem(where + ".attempts_per_round", "poll_budget_too_large",
                                        f"above max_task_attempts ({limits.max_task_attempts})"))
        for name, seconds in spans:
            if seconds is not None and int(seconds) > deadline_seconds:
                problems.append(Problem(
                    f"{where}.{name}", "wait_exceeds_deadline",
                    f"{name} is {seconds}; the instance deadline is {deadline_seconds} s"))
    return problems


__all__ = [
    "WAIT_COMMANDS",
    "Acceptance",
    "SignalRequest",
    "accept_signal",
    "apply_round_result_txn",
    "cancel_waits_txn",
    "describe_waits",
    "expire_signals",
    "open_wait_txn",
    "resume_waits_txn",
    "start_problems",
    "wait_pending_txn",
]
