"""Activating a step: its activation row, and its task or its durable wait, as a transition.

The advance activates the steps a plan names; recovery activates one step outside a plan
(:func:`activate_txn`). Both run in the caller's transaction under the instance's lock
chain.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.engine import Connection

from weave_core.dispatch.model import TaskSpec
from weave_core.dispatch.tasks import create_task_txn
from weave_core.engine import Engine
from weave_core.foundation import exactjson
from weave_core.planning.plan import Decision, DecisionKind, command_to_json
from weave_core.planning.program import Program
from weave_core.planning.snapshot import Entered, Phase
from weave_core.plugins.nodespec import (
    Command,
    EnterBlocks,
    PollCommand,
    TaskCommand,
    TimerCommand,
    WaitSignalCommand,
)
from weave_core.runtime.frozen import instance_limits, task_spec
from weave_core.runtime.history import History
from weave_core.runtime.instances import ActivationState, new_activation_id
from weave_core.runtime.snapshot import LockedInstance, StepRecord
from weave_core.runtime.wait_opening import open_wait_txn
from weave_core.storage.schema import weave_activations
from weave_core.storage.statements import insert_rows


def _activation_row(
    li: LockedInstance, step_id: str, kind: str, command: Command, now: datetime,
    activation_id: str, task_id: str | None,
) -> dict[str, object]:
    return {
        "activation_id": activation_id,
        "namespace": li.namespace,
        "instance_id": li.instance_id,
        "step_id": step_id,
        "state": ActivationState.ACTIVE.value,
        "state_version": 1,
        "task_id": task_id,
        "poll_round": None,
        "gate_id": li.gate_id,
        "created_at": now,
        "kind": kind,
        "command": exactjson.dumps(command_to_json(command)),
        "result_revision": None,
        "reason": None,
        "updated_at": now,
        "settled_at": None,
    }

def mark_step(
    li: LockedInstance, step_id: str, phase: Phase, *, output: exactjson.JSON = None,
    entered: Entered | None = None, activation_id: str | None = None,
    reason: str | None = None,
) -> str | None:
    """Set a step's phase (a new record or the next version); return the old phase."""
    old = li.step(step_id)
    if old is None:
        li.put_step(StepRecord(step_id, phase, 1, output, entered, activation_id, reason,
                               stored=False))
        return None
    previous = old.phase.value
    old.phase = phase
    old.version += 1
    old.output = output if phase is Phase.SUCCEEDED else None
    if entered is not None:
        old.entered = entered
    if activation_id is not None:
        old.activation_id = activation_id
    old.reason = reason
    li.put_step(old)
    return previous

def activate_decision_txn(
    conn: Connection, engine: Engine, li: LockedInstance, history: History, program: Program,
    decision: Decision, now: datetime,
) -> None:
    """Activate a step as the decision says: a composite enters its blocks, a leaf gets its
    activation row with its task or its durable wait."""
    command = decision.command
    step_id = decision.step_id
    assert command is not None
    if isinstance(command, EnterBlocks):
        previous = mark_step(li, step_id, Phase.ACTIVE,
                              entered=Entered(command.decision, command.blocks))
        history.record("step.activated", step_id=step_id, from_state=previous,
                       to_state=Phase.ACTIVE.value,
                       details={"blocks": list(command.blocks), "decision": command.decision})
        return
    kind = program.kind_of(step_id)
    activation_id = new_activation_id()
    task_id: str | None = None
    details: dict[str, exactjson.JSON] = {"kind": kind}
    if isinstance(command, TaskCommand):
        spec = task_spec(conn, engine.limits, li.config_hash, TaskSpec.from_command(
            command, owner_id=activation_id, gate_id=li.gate_id, deadline_at=li.deadline_at
        ))
        task_id = create_task_txn(conn, namespace=li.namespace, spec=spec, now=now,
                                  limits=instance_limits(conn, engine.limits, li.config_hash),
                                  gate_open=li.gate_open)
        details.update(task_id=task_id, queue=command.queue)
    insert_rows(conn, weave_activations,
                _activation_row(li, step_id, kind, command, now, activation_id, task_id))
    if isinstance(command, TimerCommand | WaitSignalCommand | PollCommand):
        # The wait record, its due rows and a poll's first round (issue 6, docs/waits.md).
        details.update(open_wait_txn(conn, engine, li, step_id=step_id,
                                     activation_id=activation_id, command=command, now=now))
    previous = mark_step(li, step_id, Phase.ACTIVE, activation_id=activation_id)
    history.record("step.activated", step_id=step_id, activation_id=activation_id,
                   from_state=previous, to_state=Phase.ACTIVE.value, details=details)

def activate_txn(
    conn: Connection, engine: Engine, li: LockedInstance, history: History, program: Program,
    step_id: str, command: Command, now: datetime,
) -> str | None:
    """Activate ``step_id`` with ``command`` outside a plan, in the caller's transaction
    (under the instance's lock chain); return the new activation id (``None`` for a
    composite's ``EnterBlocks``).

    Recovery (controls, R-8.5) calls this: a new activation with its task or durable wait
    (a wait keeps the absolute times of the step's earlier wait), the step pointing at it
    with its state version raised, and a ``step.activated`` transition. Old activations and
    tasks are left as they are. The caller checks the gate, quota and deadline rules.
    """
    activate_decision_txn(conn, engine, li, history, program,
              Decision(DecisionKind.ACTIVATE, step_id, command), now)
    rec = li.step(step_id)
    if isinstance(command, EnterBlocks) or rec is None:
        return None
    return rec.activation_id


__all__ = ["activate_decision_txn", "activate_txn", "mark_step"]
