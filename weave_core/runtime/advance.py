"""Advance: ask the decision core what follows the locked snapshot and apply it (R-6.3 to R-6.5).

Runs inside the caller's transaction, after :func:`~weave_core.runtime.snapshot.lock_chain`.
One advance applies at most ``limits.max_plan_changes`` (≤ 32) decisions; when the core says
there is more, a ROOT checkpoint due now is saved and any node continues from it.

Successors are created inside a SAVEPOINT: when any queue or the namespace quota is full,
every successor of this advance and its reservations roll back together, while what the
caller saved before (the consumed result, the step completion) commits with a ROOT pending
record whose due time backs off. No audit is written for a retry that changed nothing.
"""

from __future__ import annotations

import copy
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.engine import Connection

from weave_core.dispatch.errors import QueueFullError, QuotaExceededError
from weave_core.dispatch.gates import set_gate_txn
from weave_core.dispatch.model import TaskSpec
from weave_core.dispatch.queues import under_ledger
from weave_core.dispatch.tasks import create_task_txn
from weave_core.engine import Engine
from weave_core.foundation import exactjson
from weave_core.foundation.faults import fault_point
from weave_core.observability.observe import engine_gap_txn
from weave_core.planning.plan import (
    MAX_PLAN_LIMIT,
    Decision,
    DecisionKind,
    PlanRejectedError,
    command_to_json,
)
from weave_core.planning.program import Program
from weave_core.planning.snapshot import ROOT, Entered, Phase
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
from weave_core.runtime.instances import (
    MOVING,
    TERMINAL,
    ActivationState,
    InstanceStatus,
    ReviewReason,
    new_activation_id,
)
from weave_core.runtime.pending import (
    ROOT_REF,
    PendingKind,
    PendingReason,
    close_all_txn,
    full_attempts,
    full_backoff,
    schedule_txn,
)
from weave_core.runtime.snapshot import LockedInstance, StepRecord
from weave_core.runtime.wait_opening import open_wait_txn
from weave_core.storage.db import savepoint
from weave_core.storage.schema import weave_activations
from weave_core.storage.statements import insert_rows

TASK_KINDS = frozenset({"task", "poll"})
"""Leaf kinds whose active steps hold a worker task (the instance is RUNNING)."""


@dataclass
class AdvanceOutcome:
    """What one advance did."""

    applied: int = 0
    """Decisions applied (structural changes)."""
    more: bool = False
    """The budget ran out: a ROOT checkpoint due now was saved."""
    deferred: str | None = None
    """``queue_full`` / ``quota_exceeded``: successors rolled back, ROOT retry saved."""
    rejected: str | None = None
    """The core refused the snapshot (a ``RejectReason`` value): the instance is in review."""
    completed: bool = False


# --- status changes ------------------------------------------------------------------


def set_status(
    li: LockedInstance,
    history: History,
    status: InstanceStatus,
    *,
    now: datetime,
    reason: str | None = None,
    details: exactjson.JSON = None,
) -> None:
    """Move the instance to ``status`` (never out of a terminal status), as a transition."""
    if li.status in TERMINAL or li.status == status:
        return
    history.record(
        "instance.status", from_state=li.status.value, to_state=status.value,
        reason=reason, details=details,
    )
    values: dict[str, object] = {"status": status}
    if status == InstanceStatus.NEEDS_REVIEW or reason is not None:
        values["review_reason"] = reason
    if status in TERMINAL:
        values["settled_at"] = now
    li.set(**values)


def to_review(
    conn: Connection,
    li: LockedInstance,
    history: History,
    reason: str,
    *,
    now: datetime,
    close_gate: bool = False,
    details: exactjson.JSON = None,
) -> None:
    """Send a non-terminal instance to NEEDS_REVIEW (and close its gate when asked)."""
    if li.terminal:
        return
    if li.status != InstanceStatus.NEEDS_REVIEW:
        set_status(li, history, InstanceStatus.NEEDS_REVIEW, now=now, reason=reason,
                   details=details)
    if close_gate and li.gate_open:
        set_gate_txn(conn, li.gate_id, False, now=now)
        li.gate_open = False
        history.record("gate.closed", reason=reason)


def open_gate_txn(conn: Connection, li: LockedInstance, history: History, reason: str,
                  now: datetime) -> None:
    """Open the instance's execution gate, as a transition (resume, accept, recover)."""
    if not li.gate_open:
        set_gate_txn(conn, li.gate_id, True, now=now)
        li.gate_open = True
        history.record("gate.opened", reason=reason)


def close_gate_txn(conn: Connection, li: LockedInstance, history: History, reason: str,
                   now: datetime) -> None:
    """Close the instance's execution gate, as a transition (pause, stop)."""
    if li.gate_open:
        set_gate_txn(conn, li.gate_id, False, now=now)
        li.gate_open = False
        history.record("gate.closed", reason=reason)


# --- applying decisions --------------------------------------------------------------


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


def _mark_step(
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


def _activate(
    conn: Connection, engine: Engine, li: LockedInstance, history: History, program: Program,
    decision: Decision, now: datetime,
) -> None:
    command = decision.command
    step_id = decision.step_id
    assert command is not None
    if isinstance(command, EnterBlocks):
        previous = _mark_step(li, step_id, Phase.ACTIVE,
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
    previous = _mark_step(li, step_id, Phase.ACTIVE, activation_id=activation_id)
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
    _activate(conn, engine, li, history, program,
              Decision(DecisionKind.ACTIVATE, step_id, command), now)
    rec = li.step(step_id)
    if isinstance(command, EnterBlocks) or rec is None:
        return None
    return rec.activation_id


def _apply(
    conn: Connection, engine: Engine, li: LockedInstance, history: History, program: Program,
    decision: Decision, now: datetime,
) -> bool:
    """Apply one decision; True when it completed the root."""
    if decision.kind is DecisionKind.ACTIVATE:
        _activate(conn, engine, li, history, program, decision, now)
    elif decision.kind is DecisionKind.SKIP:
        previous = _mark_step(li, decision.step_id, Phase.SKIPPED)
        history.record("step.skipped", step_id=decision.step_id, from_state=previous,
                       to_state=Phase.SKIPPED.value)
    elif decision.step_id == ROOT:
        return True
    else:
        previous = _mark_step(li, decision.step_id, Phase.SUCCEEDED, output=decision.output)
        history.record("step.succeeded", step_id=decision.step_id, from_state=previous,
                       to_state=Phase.SUCCEEDED.value)
    return False


def _complete_root(
    conn: Connection, li: LockedInstance, history: History, output: exactjson.JSON,
    now: datetime,
) -> None:
    history.record("instance.status", from_state=li.status.value,
                   to_state=InstanceStatus.SUCCEEDED.value)
    li.set(status=InstanceStatus.SUCCEEDED, output=exactjson.dumps(output), settled_at=now,
           review_reason=None)
    close_all_txn(conn, li.instance_id, now)


# --- the advance ---------------------------------------------------------------------


def _active_leaves(li: LockedInstance, program: Program) -> list[str]:
    return [
        sid for sid, rec in li.steps.items()
        if rec.phase is Phase.ACTIVE and not program.is_composite(sid)
    ]


def _blocked_reason(li: LockedInstance) -> str | None:
    if li.paused:
        return PendingReason.PAUSED.value
    if not li.gate_open:
        return PendingReason.GATE_CLOSED.value
    if li.namespace_disabled:
        return PendingReason.NAMESPACE_DISABLED.value
    return None


def _save_blocked_successors(conn: Connection, li: LockedInstance, program: Program,
                             now: datetime) -> bool:
    """R-6.6: while paused, gated or disabled, successors that would start are saved as a
    ROOT pending row (re-checked with back-off), so that lifting the block continues from
    the records even if nothing else wakes the instance."""
    reason = _blocked_reason(li)
    if reason is None or li.status not in MOVING or now > li.deadline_at:
        return False
    try:
        probe = program.plan(li.snapshot(), 1, True)
    except PlanRejectedError:
        return False
    if not any(d.kind is DecisionKind.ACTIVATE for d in probe.decisions):
        return False
    attempts = full_attempts(conn, li.instance_id, reason)
    schedule_txn(conn, namespace=li.namespace, instance_id=li.instance_id,
                 kind=PendingKind.ROOT, ref=ROOT_REF, due_at=now + full_backoff(attempts),
                 reason=reason, root_version=li.root_version,
                 root_identity=li.root_identity, now=now)
    return True


def _settle_status(li: LockedInstance, history: History, program: Program, now: datetime,
                   *, deferred: bool) -> None:
    """RUNNING while a task is in flight; WAITING on durable waits or a deferred retry."""
    if li.status not in MOVING:
        return
    leaves = _active_leaves(li, program)
    if any(program.kind_of(sid) in TASK_KINDS for sid in leaves):
        set_status(li, history, InstanceStatus.RUNNING, now=now)
    elif leaves or deferred or li.paused or not li.gate_open or li.namespace_disabled:
        set_status(li, history, InstanceStatus.WAITING, now=now)


@dataclass
class _Saved:
    """What applying a plan may change in the working copy (restored on a rollback)."""

    steps: dict[str, StepRecord]
    updates: dict[str, object]
    status: InstanceStatus
    review_reason: str | None


def _save(li: LockedInstance) -> _Saved:
    return _Saved(copy.deepcopy(li.steps), dict(li.updates), li.status, li.review_reason)


def _restore(li: LockedInstance, saved: _Saved, history: History,
             mark: tuple[int, int]) -> None:
    li.steps = saved.steps
    li.updates = saved.updates
    li.status = saved.status
    li.review_reason = saved.review_reason
    history.rollback(mark)


def advance_txn(
    conn: Connection,
    engine: Engine,
    li: LockedInstance,
    history: History,
    program: Program,
    *,
    now: datetime,
    fact_at: datetime | None = None,
) -> AdvanceOutcome:
    """Plan from the locked snapshot and apply the plan, within the change budget.

    ``fact_at`` is the database acceptance time of the fact that triggered this advance
    (R-6.7: a last result accepted before the deadline may still complete the instance).
    """
    outcome = AdvanceOutcome()
    if li.terminal or li.status == InstanceStatus.CANCELLING:
        return outcome
    allow_new = li.allow_new(now)
    on_time = (fact_at or now) <= li.deadline_at
    limits = instance_limits(conn, engine.limits, li.config_hash)
    budget = max(1, min(limits.max_plan_changes, MAX_PLAN_LIMIT))
    try:
        plan = program.plan(li.snapshot(), budget, allow_new)
    except PlanRejectedError as exc:
        outcome.rejected = exc.reason.value
        to_review(conn, li, history, f"{ReviewReason.PLAN_REJECTED.value}:{exc.reason.value}",
                  now=now, close_gate=True, details=exc.details)
        return outcome

    root_output: exactjson.JSON = None
    completes_root = False
    if plan.decisions:
        # Step changes live in the working copy until the caller's final flush: a rolled
        # back savepoint restores the copy as it was before it (what this transaction
        # changed earlier stays, to be written), so nothing of the steps is written twice.
        # Only an activation can meet a full queue or quota: a plan that only completes or
        # skips needs no savepoint (two round trips fewer) and nothing to restore.
        # Under a capacity ledger (a step transaction) a reservation never meets a full
        # queue: it nets against the settled task's unit or re-runs the transaction.
        creates = any(d.kind is DecisionKind.ACTIVATE for d in plan.decisions) \
            and not under_ledger(conn)
        saved = _save(li) if creates else None
        mark = history.mark()
        try:
            with savepoint(conn) if creates else nullcontext():
                for decision in plan.decisions:
                    if _apply(conn, engine, li, history, program, decision, now):
                        completes_root, root_output = True, decision.output
                if creates:
                    fault_point("advance.in_savepoint")  # successors made, not released
        except (QueueFullError, QuotaExceededError) as exc:
            assert saved is not None  # only an activation raises these
            _restore(li, saved, history, mark)
            outcome.deferred = exc.code
            attempts = full_attempts(conn, li.instance_id, exc.code)
            schedule_txn(conn, namespace=li.namespace, instance_id=li.instance_id,
                         kind=PendingKind.ROOT, ref=ROOT_REF,
                         due_at=now + full_backoff(attempts), reason=exc.code,
                         root_version=li.root_version, root_identity=li.root_identity,
                         now=now)
            _settle_status(li, history, program, now, deferred=True)
            return outcome
        outcome.applied = len(plan.decisions)
        if fact_at is not None and any(isinstance(d.command, TaskCommand)
                                       for d in plan.decisions):
            engine_gap_txn(conn, now - fact_at)  # a result's successor task: the engine gap
        li.set(root_version=li.root_version + 1)

    if completes_root:
        may_settle = li.status in MOVING or (
            li.status == InstanceStatus.NEEDS_REVIEW
            and li.review_reason == ReviewReason.DEADLINE_EXCEEDED.value
        )
        if on_time and may_settle:
            _complete_root(conn, li, history, root_output, now)
            outcome.completed = True
        elif li.status in MOVING:
            to_review(conn, li, history, ReviewReason.DEADLINE_EXCEEDED.value, now=now)
        return outcome

    if plan.more:
        outcome.more = True
        schedule_txn(conn, namespace=li.namespace, instance_id=li.instance_id,
                     kind=PendingKind.ROOT, ref=ROOT_REF, due_at=now,
                     reason=PendingReason.BUDGET.value, root_version=li.root_version,
                     root_identity=li.root_identity, now=now)
    if now > li.deadline_at and li.status in MOVING:
        to_review(conn, li, history, ReviewReason.DEADLINE_EXCEEDED.value, now=now)
        return outcome
    if (li.status in MOVING and allow_new and not plan.more
            and not any(r.phase is Phase.ACTIVE for r in li.steps.values())):
        # Nothing runs, nothing can start, and the root did not complete: say so.
        to_review(conn, li, history, ReviewReason.STALLED.value, now=now)
        return outcome
    blocked = not allow_new and not plan.more and _save_blocked_successors(
        conn, li, program, now)
    _settle_status(li, history, program, now, deferred=blocked)
    return outcome


__all__ = [
    "TASK_KINDS", "AdvanceOutcome", "activate_txn", "advance_txn", "set_status", "to_review",
]
