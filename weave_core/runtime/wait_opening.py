"""Opening a step's durable wait when the advance activates it (docs/waits.md).

The advance calls :func:`open_wait_txn` inside the successors' savepoint for a ``timer``,
``signal`` or ``poll`` step: the wait record, its due rows, a poll's first round and task,
and a signal already stored for it made due at once. Nothing here settles a step: what
ends a wait lives in :mod:`weave_core.runtime.waits`, above the advance.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from weave_core.dispatch.model import TaskSpec
from weave_core.dispatch.tasks import create_task_txn
from weave_core.engine import Engine
from weave_core.foundation.exactjson import JSON
from weave_core.plugins.nodespec import (
    Command,
    PollCommand,
    RetryPolicy,
    TaskCommand,
    Timeouts,
    TimerCommand,
    WaitSignalCommand,
)
from weave_core.runtime.frozen import instance_limits, task_spec
from weave_core.runtime.instances import iso
from weave_core.runtime.pending import PendingKind, PendingReason, schedule_txn
from weave_core.runtime.snapshot import LockedInstance
from weave_core.runtime.wait_records import (
    ROUND_RUNNING,
    SIGNAL_REASON,
    SignalState,
    WaitKind,
    insert_wait_txn,
)
from weave_core.storage.schema import (
    weave_activations,
    weave_poll_rounds,
    weave_signals,
    weave_waits,
)

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

def task_command_from_json(body: Any) -> TaskCommand:
    """The round's query task from the activation's frozen ``PollCommand`` JSON."""
    retry = body.get("retry") or {}
    timeouts = body.get("timeouts") or {}
    return TaskCommand(
        queue=body["queue"], handler=body["handler"], handler_version=body["handler_version"],
        idempotent=bool(body["idempotent"]), input=body["input"],
        retry=RetryPolicy(
            max_attempts=int(retry.get("max_attempts", 1)),
            backoff_seconds=Decimal(retry.get("backoff_seconds", 1)),
            backoff_multiplier=Decimal(retry.get("backoff_multiplier", 2)),
            max_backoff_seconds=Decimal(retry.get("max_backoff_seconds", 300)),
        ),
        timeouts=Timeouts(timeouts.get("schedule_to_start"), timeouts.get("start_to_close"),
                          timeouts.get("heartbeat")),
        trace_key=body.get("trace_key"), resource_key=body.get("resource_key"),
    )

def start_round_txn(conn: Connection, engine: Engine, li: LockedInstance, *, activation_id: str,
                    task: TaskCommand, round_no: int, deadline_at: datetime, now: datetime
                    ) -> str:
    """Create round ``round_no`` and its one task (the caller holds the chain)."""
    spec = task_spec(conn, engine.limits, li.config_hash, TaskSpec.from_command(
        task, owner_id=activation_id, gate_id=li.gate_id, deadline_at=deadline_at))
    task_id = create_task_txn(conn, namespace=li.namespace, spec=spec, now=now,
                              limits=instance_limits(conn, engine.limits, li.config_hash),
                              gate_open=li.gate_open)
    conn.execute(sa.insert(weave_poll_rounds), dict(
        namespace=li.namespace, instance_id=li.instance_id, activation_id=activation_id,
        round=round_no, task_id=task_id, state=ROUND_RUNNING, status=None, result=None,
        inbox_id=None, result_accepted_at=None, classification=None, created_at=now,
        settled_at=None,
    ))
    a = weave_activations
    conn.execute(sa.update(a).where(a.c.activation_id == activation_id)
                 .values(task_id=task_id, poll_round=round_no, result_revision=None,
                         updated_at=now))  # a revision counts within its own round's task
    return task_id

def open_poll_txn(conn: Connection, engine: Engine, li: LockedInstance, *, step_id: str,
                  activation_id: str, command: PollCommand, now: datetime,
                  kept: tuple[datetime | None, int] | None = None) -> dict[str, JSON]:
    """Open the poll's wait, its first round and task, and arm the deadline (in the
    caller's savepoint: a full queue rolls all of it back).

    ``kept``: the deadline and round number of the step's previous activation (a recovery):
    the deadline is never extended and the round number is kept; past the deadline no
    round is created and the deadline row, due now, sends the step back to review.
    """
    deadline = min(now + timedelta(seconds=command.deadline_seconds), li.deadline_at)
    round_no = 1
    if kept is not None:
        if kept[0] is not None:
            deadline = min(deadline, kept[0])
        round_no = max(1, kept[1])
    receipt = command.receipt
    insert_wait_txn(
        conn, li, activation_id=activation_id, step_id=step_id, kind=WaitKind.POLL, now=now,
        signal_name=None if receipt is None else receipt.name,
        correlation_key=None if receipt is None else receipt.correlation_key,
        param_version=None if receipt is None else receipt.param_version,
        deadline_at=deadline, max_rounds=command.max_rounds,
        interval_seconds=command.interval_seconds, current_round=round_no,
    )
    task_id = None
    if deadline > now:
        task_id = start_round_txn(conn, engine, li, activation_id=activation_id,
                               task=command.task, round_no=round_no, deadline_at=deadline,
                               now=now)
    schedule_txn(conn, namespace=li.namespace, instance_id=li.instance_id,
                 kind=PendingKind.TIMER, ref=activation_id, due_at=deadline,
                 reason=PendingReason.DEADLINE.value, root_version=li.root_version,
                 root_identity=li.root_identity, now=now)
    if receipt is not None:
        early_signal_txn(conn, li, activation_id=activation_id, name=receipt.name,
                         correlation_key=receipt.correlation_key,
                         param_version=receipt.param_version, now=now)
    return {"task_id": task_id, "queue": command.task.queue, "poll_round": round_no,
            "deadline_at": iso(deadline)}

def early_signal_txn(conn: Connection, li: LockedInstance, *, activation_id: str,
                     name: str, correlation_key: str, param_version: str,
                     now: datetime) -> bool:
    """A wait just opened: if a matching signal is already stored, make it due now."""
    s = weave_signals
    found = conn.execute(
        sa.select(s.c.id)
        .where(s.c.instance_id == li.instance_id, s.c.state == SignalState.ACCEPTED,
               s.c.name == name, s.c.correlation_key == correlation_key,
               s.c.param_version == param_version, s.c.target_activation_id.is_(None))
        .limit(1)
    ).first()
    if found is None:
        return False
    schedule_txn(conn, namespace=li.namespace, instance_id=li.instance_id,
                 kind=PendingKind.SIGNAL, ref=activation_id, due_at=now,
                 reason=SIGNAL_REASON, root_version=li.root_version,
                 root_identity=li.root_identity, now=now)
    return True


__all__ = [
    "WAIT_COMMANDS",
    "early_signal_txn",
    "open_poll_txn",
    "open_wait_txn",
    "start_round_txn",
    "task_command_from_json",
]
