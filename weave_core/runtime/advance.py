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
from weave_core.dispatch.ledger import under_ledger
from weave_core.engine import Engine
from weave_core.foundation import exactjson
from weave_core.foundation.faults import fault_point
from weave_core.observability.observe import engine_gap_txn
from weave_core.planning.plan import (
    MAX_PLAN_LIMIT,
    Decision,
    DecisionKind,
    PlanRejectedError,
)
from weave_core.planning.program import Program
from weave_core.planning.snapshot import ROOT, Phase
from weave_core.plugins.nodespec import (
    TaskCommand,
)
from weave_core.runtime.activation import activate_decision_txn, mark_step
from weave_core.runtime.frozen import instance_limits
from weave_core.runtime.history import History
from weave_core.runtime.instances import (
    MOVING,
    InstanceStatus,
    ReviewReason,
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
from weave_core.runtime.status import set_status, to_review
from weave_core.storage.db import savepoint

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


# --- applying decisions --------------------------------------------------------------


def _apply(
    conn: Connection, engine: Engine, li: LockedInstance, history: History, program: Program,
    decision: Decision, now: datetime,
) -> bool:
    """Apply one decision; True when it completed the root."""
    if decision.kind is DecisionKind.ACTIVATE:
        activate_decision_txn(conn, engine, li, history, program, decision, now)
    elif decision.kind is DecisionKind.SKIP:
        previous = mark_step(li, decision.step_id, Phase.SKIPPED)
        history.record("step.skipped", step_id=decision.step_id, from_state=previous,
                       to_state=Phase.SKIPPED.value)
    elif decision.step_id == ROOT:
        return True
    else:
        previous = mark_step(li, decision.step_id, Phase.SUCCEEDED, output=decision.output)
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


__all__ = ["TASK_KINDS", "AdvanceOutcome", "advance_txn"]
