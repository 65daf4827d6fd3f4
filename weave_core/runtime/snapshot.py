"""The lock chain of one instance and the locked snapshot the decision core plans from.

:func:`lock_chain` takes R-6.2 in order — identity (shared) → namespace quota → the queues
of the pinned version, sorted → instance → gate → steps — and returns a
:class:`LockedInstance`: the working copy an advance changes and then writes back with
:meth:`LockedInstance.flush`. Terminal instances, and instances whose pinned version uses no
queue, skip the quota and queue locks (they never create a task). :func:`lock_chains` takes
the chains of several instances of one namespace at once, level by level (a tick batch).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from weave_core.dispatch.queues import lock_capacity_txn
from weave_core.foundation import exactjson
from weave_core.foundation.exactjson import JSON
from weave_core.planning.snapshot import Entered, Phase, Snapshot, StepState
from weave_core.runtime.instances import (
    MOVING,
    TERMINAL,
    InstanceStatus,
    load_json,
)
from weave_core.runtime.outcomes import DONE, Outcome, note_done_txn
from weave_core.storage.locks import (
    lock_chain_of_tasks_at_once,
    lock_gate,
    lock_gates,
    lock_instance,
    lock_instances,
    lock_namespace_shared,
    lock_steps,
    lock_steps_of,
)
from weave_core.storage.schema import weave_instances, weave_steps
from weave_core.storage.statements import RowChanges

_DONE_VALUES = frozenset(status.value for status in DONE)


@dataclass
class StepRecord:
    """One saved step, as locked, and what this transaction changed of it."""

    step_id: str
    phase: Phase
    version: int
    output: JSON = None
    entered: Entered | None = None
    activation_id: str | None = None
    reason: str | None = None
    stored: bool = True
    dirty: bool = False

    def state(self) -> StepState:
        return StepState(
            self.phase,
            self.output if self.phase is Phase.SUCCEEDED else None,
            self.entered,
            self.version,
        )


@dataclass
class LockedInstance:
    """The locked working copy of one instance."""

    instance_id: str
    namespace: str
    definition_id: str
    version: str
    content_hash: str
    input: JSON
    queues: tuple[str, ...]
    failure_policy: str
    status: InstanceStatus
    paused: bool
    gate_id: str
    gate_open: bool
    namespace_disabled: bool
    deadline_at: datetime
    revision: int
    root_version: int
    control_version: int
    review_reason: str | None
    steps: dict[str, StepRecord]
    config_hash: str | None = None
    """The effective configuration frozen at start (``runtime.frozen``; None before 0007)."""
    updates: dict[str, Any] = field(default_factory=dict)

    @property
    def root_identity(self) -> str:
        return f"{self.definition_id}@{self.version}"

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    def allow_new(self, now: datetime) -> bool:
        """May new activations start now (R-6.6, R-6.7)?"""
        return (
            self.status in MOVING
            and not self.paused
            and self.gate_open
            and not self.namespace_disabled
            and now <= self.deadline_at
        )

    def snapshot(self) -> Snapshot:
        return Snapshot(self.input, {sid: rec.state() for sid, rec in self.steps.items()})

    def set(self, **values: Any) -> None:
        """Change instance columns (written by :meth:`flush`)."""
        for key, value in values.items():
            if key in {"status", "review_reason", "paused", "gate_open", "root_version"}:
                setattr(self, key, value)
        self.updates.update(
            {k: (v.value if isinstance(v, InstanceStatus) else v) for k, v in values.items()
             if k != "gate_open"}
        )

    def step(self, step_id: str) -> StepRecord | None:
        return self.steps.get(step_id)

    def put_step(self, record: StepRecord) -> None:
        record.dirty = True
        self.steps[record.step_id] = record

    def flush(self, conn: Connection, *, revision: int, now: datetime,
              into: RowChanges | None = None) -> dict[str, Any]:
        """Write changed steps and the instance row (with its new revision); with ``into``,
        hand the rows to it instead (a tick batch writes every instance's rows at its end).
        Returns the instance columns written (none when nothing changed): a start builds
        its answer from them instead of reading the row back.
        """
        changes = into if into is not None else RowChanges()
        for rec in self.steps.values():
            if not rec.dirty:
                continue
            values = {
                "phase": rec.phase.value,
                "version": rec.version,
                "output": None if rec.phase is not Phase.SUCCEEDED
                else exactjson.dumps(rec.output),
                "decision": None if rec.entered is None
                else exactjson.dumps(rec.entered.to_json()),
                "activation_id": rec.activation_id,
                "reason": rec.reason,
                "updated_at": now,
            }
            if rec.stored:
                changes.update(weave_steps,
                               {"instance_id": self.instance_id, "step_id": rec.step_id}, values)
            else:
                changes.insert(weave_steps, {"instance_id": self.instance_id,
                                             "step_id": rec.step_id, "namespace": self.namespace,
                                             "created_at": now, **values})
                rec.stored = True
            rec.dirty = False
        if self.updates.get("status") in _DONE_VALUES:
            note_done_txn(conn, self.namespace, self.instance_id,
                          self._committed_outcome(revision, now))
        written: dict[str, Any] = {}
        if revision != self.revision or self.updates:
            self.revision = revision
            written = {"revision": revision, "updated_at": now, **self.updates}
            changes.update(weave_instances, {"instance_id": self.instance_id}, written)
            self.updates = {}
        if into is None:
            changes.write(conn)
        return written

    def _committed_outcome(self, revision: int,
                           now: datetime) -> Callable[[], Outcome] | None:
        """The result waiters' answer once this flush commits, when the changes hold all of
        it (success sets status, output and settled time together); None: they read it."""
        updates = self.updates
        if updates.get("status") != InstanceStatus.SUCCEEDED.value or not {
                "output", "settled_at"} <= updates.keys():
            return None
        instance_id, paused, review_reason = self.instance_id, self.paused, self.review_reason
        output, settled_at = updates["output"], updates["settled_at"]
        return lambda: Outcome(instance_id, InstanceStatus.SUCCEEDED, paused, revision,
                               load_json(output), review_reason, settled_at, now)


def _step_record(row: Any) -> StepRecord:
    decision = load_json(row.decision)
    entered = None
    if isinstance(decision, dict):
        entered = Entered(decision.get("value"), tuple(decision.get("blocks") or ()))
    return StepRecord(
        step_id=row.step_id,
        phase=Phase(row.phase),
        version=int(row.version),
        output=load_json(row.output),
        entered=entered,
        activation_id=row.activation_id,
        reason=row.reason,
    )


def peek_instance(conn: Connection, instance_id: str) -> Any:
    """An unlocked read of the few immutable columns needed to take the chain."""
    i = weave_instances
    return conn.execute(
        sa.select(i.c.namespace, i.c.queues, i.c.status).where(i.c.instance_id == instance_id)
    ).one_or_none()


def _needs_capacity(status: str, queues: tuple[str, ...]) -> bool:
    """Does this instance take the quota and queue locks (R-6.2 levels 2 and 3)?

    Only a live instance whose pinned version uses a queue can create or settle a task: a
    terminal one never creates tasks again, and one whose steps name no queue (timers,
    signals, branches only) never has any, so its advances do not serialise on the
    namespace's quota row.
    """
    return InstanceStatus(status) not in TERMINAL and bool(queues)


def _locked(row: Any, gate: Any, ns: Any, queues: tuple[str, ...],
            step_rows: Sequence[Any]) -> LockedInstance:
    return LockedInstance(
        instance_id=row.instance_id,
        namespace=row.namespace,
        definition_id=row.definition_id,
        version=row.version,
        content_hash=row.content_hash,
        input=load_json(row.input),
        queues=queues,
        failure_policy=row.failure_policy,
        status=InstanceStatus(row.status),
        paused=bool(row.paused),
        gate_id=row.gate_id,
        gate_open=bool(gate.is_open) if gate is not None else False,
        namespace_disabled=bool(ns.disabled),
        deadline_at=row.deadline_at,
        revision=int(row.revision),
        root_version=int(row.root_version),
        control_version=int(row.control_version),
        review_reason=row.review_reason,
        steps={r.step_id: _step_record(r) for r in step_rows},
        config_hash=row.config_hash,
    )


def lock_chain(
    conn: Connection, namespace: str, instance_id: str, *, peeked: Any = None,
    capacity: bool = True, task_queue: str | None = None,
) -> LockedInstance | None:
    """Lock the chain of ``instance_id`` in the one order; None if it does not exist here.

    ``peeked``: the instance's ``namespace``, ``queues`` and ``status`` already read
    unlocked by the caller (saves a query); read here otherwise. ``capacity=False`` leaves
    out the quota and queue levels: the caller runs under a ``CapacityLedger``. ``task_queue``:
    the caller settles a task of that queue, so quota and queue are locked whatever the
    instance's status (a step transaction re-run in order).
    """
    peek = peeked if peeked is not None else peek_instance(conn, instance_id)
    if peek is None or peek.namespace != namespace:
        return None
    ns = lock_namespace_shared(conn, namespace, columns=_NAMESPACE_COLUMNS)
    if ns is None:
        return None
    queues = tuple(exactjson.loads_stored(peek.queues))
    if capacity and task_queue is not None:
        lock_capacity_txn(conn, namespace, sorted({*queues, task_queue}))
    elif capacity and _needs_capacity(peek.status, queues):
        lock_capacity_txn(conn, namespace, queues)
    row = lock_instance(conn, instance_id, columns=_INSTANCE_COLUMNS)
    if row is None or row.namespace != namespace:
        return None
    gate = lock_gate(conn, row.gate_id, columns=_GATE_COLUMNS)
    return _locked(row, gate, ns, queues, lock_steps(conn, instance_id, columns=_STEP_COLUMNS))


def lock_step_chain(
    conn: Connection, namespace: str, peek: Any, *, task_id: str, attempt_id: str,
    now_columns: Sequence[sa.ColumnElement[Any]],
) -> tuple[LockedInstance, Any, Any] | None:
    """A step transaction's chain, activation and task in one round trip (MariaDB/MySQL;
    ``locks.lock_chain_of_tasks_at_once``): the working copy of ``peek.instance_id``, the owning
    activation ``peek.owner_id`` and the task with its fencing columns and database time.
    No quota or queue level: the caller runs under a ``CapacityLedger``. None when the
    instance, its namespace or the activation is not what the route named."""
    found = lock_step_chain_of_tasks(conn, namespace, peek,
                                     [(peek.owner_id, task_id, attempt_id)],
                                     now_columns=now_columns)
    return None if found is None else (found[0], found[1][0], found[2][0])


def lock_step_chain_of_tasks(
    conn: Connection, namespace: str, peek: Any, tasks: Sequence[tuple[str, str, str]], *,
    now_columns: Sequence[sa.ColumnElement[Any]],
) -> tuple[LockedInstance, list[Any], list[Any]] | None:
    """:func:`lock_step_chain` for several tasks of ``peek.instance_id`` (``tasks``:
    owning activation, task and attempt ids; ``locks.lock_chain_of_tasks_at_once``): the
    working copy, and the activations and tasks in the order of ``tasks``."""
    ns, row, gate, steps, acts, found = lock_chain_of_tasks_at_once(
        conn, namespace=namespace, instance_id=peek.instance_id, tasks=tasks,
        now_columns=now_columns, columns=_CHAIN_COLUMNS)
    if ns is None or row is None or row.namespace != namespace or None in acts:
        return None
    return (_locked(row, gate, ns, tuple(exactjson.loads_stored(peek.queues)), steps), acts,
            found)


# What a working copy is built from (``_locked``, ``_step_record``): only these are read.
_NAMESPACE_COLUMNS = ("name", "disabled")
_INSTANCE_COLUMNS = (
    "instance_id", "namespace", "definition_id", "version", "content_hash", "input",
    "queues", "failure_policy", "status", "paused", "gate_id", "deadline_at", "revision",
    "root_version", "control_version", "review_reason", "config_hash",
)
_GATE_COLUMNS = ("gate_id", "is_open")
_STEP_COLUMNS = ("step_id", "phase", "version", "output", "decision", "activation_id",
                 "reason")
_CHAIN_COLUMNS = {"namespace": _NAMESPACE_COLUMNS, "instance": _INSTANCE_COLUMNS,
                  "gate": _GATE_COLUMNS, "steps": _STEP_COLUMNS}


@dataclass
class Chains:
    """What :func:`lock_chains` locked: each instance's working copy, and the instances it
    skipped because another transaction holds them (``busy``)."""

    locked: dict[str, LockedInstance] = field(default_factory=dict)
    busy: set[str] = field(default_factory=set)


def lock_chains(
    conn: Connection, namespace: str, peeks: Mapping[str, Any], *, skip_busy: bool = False,
) -> Chains:
    """Lock the chains of several instances of one namespace, level by level (a tick batch).

    ``peeks``: instance id → its unlocked ``namespace``, ``queues`` and ``status``. The
    order is R-6.2 taken across the batch: the namespace (shared), the quota and the union
    of the queues (sorted) when any instance needs them, every instance row (sorted by id),
    every gate (sorted by id), every instance's steps (by instance, then step). What each
    instance locks below that (activations, waits, its pending row) it locks afterwards,
    one instance at a time in id order. Missing instances (or of another namespace) are
    left out; with ``skip_busy``, instances another transaction holds locked are left out
    too and named in ``busy`` (``SKIP LOCKED``: the batch never waits at level 4, so
    engines whose ticks picked the same due rows split them instead of queueing).
    """
    live = {iid: p for iid, p in peeks.items() if p is not None and p.namespace == namespace}
    if not live:
        return Chains()
    ns = lock_namespace_shared(conn, namespace)
    if ns is None:
        return Chains()
    queues = {iid: tuple(exactjson.loads_stored(p.queues)) for iid, p in live.items()}
    capacity = {q for iid, p in live.items() if _needs_capacity(p.status, queues[iid])
                for q in queues[iid]}
    if capacity:
        lock_capacity_txn(conn, namespace, sorted(capacity))
    found = lock_instances(conn, list(live), skip_locked=skip_busy)
    # Peeked rows exist (instances are never deleted): one not returned is held elsewhere.
    busy = set(live) - {r.instance_id for r in found} if skip_busy else set()
    rows = [r for r in found if r.namespace == namespace]
    if not rows:
        return Chains(busy=busy)
    gates = {g.gate_id: g for g in lock_gates(conn, [r.gate_id for r in rows])}
    steps: dict[str, list[Any]] = {r.instance_id: [] for r in rows}
    for step in lock_steps_of(conn, list(steps)):
        steps[step.instance_id].append(step)
    return Chains({
        r.instance_id: _locked(r, gates.get(r.gate_id), ns,
                               queues[r.instance_id],
                               steps[r.instance_id])
        for r in rows
    }, busy)


__all__ = [
    "Chains", "LockedInstance", "StepRecord", "lock_chain", "lock_chains", "lock_step_chain",
    "peek_instance",
]
