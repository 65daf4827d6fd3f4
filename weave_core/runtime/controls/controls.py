"""Pause, resume and cancel (R-8.1 to R-8.3).

Each takes the instance's expected control version (stale → ``control_version_conflict``),
a stable operation id (a repeat returns the first outcome), the operator (the caller's
actor) and a reason, and commits state, transitions, audit and the operation row together.

- **pause** sets the ``paused`` flag and closes the execution gate in the same
  transaction: no claims, start authorisations or retries of the instance's tasks;
  attempts already started keep running, renewing and reporting. Results, signals and due
  facts are still saved; successors that would start are saved as a ROOT pending row.
- **resume** lifts only the pause (R-8.2): review and cancel stay, rounds and attempts are
  not reset, missed poll times are not replayed, the pinned version and the deadlines are
  kept. It reopens the gate unless something else keeps it closed (stopping, or a review
  whose reason closed it) and arms a ROOT advance due now, which works through the
  backlog within quota and budget.
- **cancel** persists the cancel intent (the operation row), goes ``CANCELLING`` and stops
  the instance (:mod:`~weave_core.runtime.stopping`); ``CANCELLED`` only once every
  started step settled. Cancelled never means a business effect was undone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.engine import Connection

from weave_core.engine import Engine
from weave_core.planning.program import Program
from weave_core.runtime.controls._common import (
    Applied,
    OperationOutcome,
    check_control_version,
    continue_now_txn,
    refuse_terminal,
    run_operation,
)
from weave_core.runtime.controls.errors import (
    AlreadyCancellingError,
    AlreadyPausedError,
    NotPausedError,
)
from weave_core.runtime.controls.operations import OperationKind, check_common, request_hash
from weave_core.runtime.history import History
from weave_core.runtime.instances import MOVING, InstanceStatus, ReviewReason
from weave_core.runtime.snapshot import LockedInstance
from weave_core.runtime.status import close_gate_txn, open_gate_txn, set_status
from weave_core.runtime.stopping import stop_txn
from weave_core.runtime.waits import resume_waits_txn

CANCEL_REASON = "cancel_requested"
"""The instance's ``review_reason`` while a cancel is being carried out (and after)."""

GATE_CLOSING_REVIEWS = frozenset({
    ReviewReason.QUARANTINED_RESULT.value, ReviewReason.CHECKPOINT_REFUSED.value,
})
"""Review reasons whose gate stays closed until the review is resolved (with
``plan_rejected:*``)."""


def gate_kept_closed(li: LockedInstance) -> bool:
    """Does something other than a pause keep the instance's gate closed?"""
    if li.status == InstanceStatus.CANCELLING or li.terminal:
        return True
    if li.status == InstanceStatus.NEEDS_REVIEW:
        reason = li.review_reason or ""
        return reason in GATE_CLOSING_REVIEWS or reason.startswith(
            ReviewReason.PLAN_REJECTED.value)
    return False


@dataclass(frozen=True)
class ControlRequest:
    """What pause, resume and cancel carry."""

    expected_control_version: int
    operation_id: str
    reason: str


def _digest(kind: OperationKind, workflow_id: str, request: ControlRequest) -> str:
    return request_hash(kind, workflow_id, {"reason": request.reason})


def _bump(li: LockedInstance, **values: object) -> int:
    version = li.control_version + 1
    li.control_version = version
    li.set(control_version=version, **values)
    return version


def pause(engine: Engine, namespace: str, workflow_id: str, request: ControlRequest, *,
          actor: str) -> OperationOutcome:
    """Pause the instance (module docstring)."""
    check_common(request.operation_id, request.reason)

    def _body(conn: Connection, li: LockedInstance, history: History, program: Program,
              now: datetime) -> Applied:
        refuse_terminal(li)
        check_control_version(li, request.expected_control_version)
        if li.paused:
            raise AlreadyPausedError("the instance is already paused",
                                     details={"workflow_id": workflow_id})
        version = _bump(li, paused=True)
        history.record("control.paused", reason=request.reason,
                       details={"control_version": version, "actor": actor})
        close_gate_txn(conn, li, history, "paused", now)
        return Applied(expected_version=request.expected_control_version,
                       metadata={"control_version": version})

    return run_operation(engine, namespace, workflow_id, kind=OperationKind.PAUSE,
                         operation_id=request.operation_id, reason=request.reason,
                         actor=actor, digest=_digest(OperationKind.PAUSE, workflow_id, request),
                         body=_body)


def resume(engine: Engine, namespace: str, workflow_id: str, request: ControlRequest, *,
           actor: str) -> OperationOutcome:
    """Lift the pause, and only the pause (R-8.2)."""
    check_common(request.operation_id, request.reason)

    def _body(conn: Connection, li: LockedInstance, history: History, program: Program,
              now: datetime) -> Applied:
        refuse_terminal(li)
        check_control_version(li, request.expected_control_version)
        if not li.paused:
            raise NotPausedError("the instance is not paused",
                                 details={"workflow_id": workflow_id})
        version = _bump(li, paused=False)
        history.record("control.resumed", reason=request.reason,
                       details={"control_version": version, "actor": actor})
        if not gate_kept_closed(li):
            open_gate_txn(conn, li, history, "resumed", now)
        if li.status in MOVING:
            continue_now_txn(conn, li, "resumed", now)
            if li.gate_open:  # due polls: one round now, never the missed ones
                resume_waits_txn(conn, li, now=now)
        return Applied(expected_version=request.expected_control_version,
                       metadata={"control_version": version})

    return run_operation(engine, namespace, workflow_id, kind=OperationKind.RESUME,
                         operation_id=request.operation_id, reason=request.reason,
                         actor=actor, digest=_digest(OperationKind.RESUME, workflow_id, request),
                         body=_body)


def cancel(engine: Engine, namespace: str, workflow_id: str, request: ControlRequest, *,
           actor: str) -> OperationOutcome:
    """Cancel the instance (module docstring); PENDING tasks' results are consumed at once."""
    check_common(request.operation_id, request.reason)

    def _body(conn: Connection, li: LockedInstance, history: History, program: Program,
              now: datetime) -> Applied:
        refuse_terminal(li)
        check_control_version(li, request.expected_control_version)
        if li.status == InstanceStatus.CANCELLING:
            raise AlreadyCancellingError("the instance is already stopping",
                                         details={"workflow_id": workflow_id,
                                                  "review_reason": li.review_reason})
        version = _bump(li)
        history.record("control.cancel_requested", reason=request.reason,
                       details={"control_version": version, "actor": actor})
        set_status(li, history, InstanceStatus.CANCELLING, now=now, reason=CANCEL_REASON)
        settled = stop_txn(conn, engine, li, history, program, reason=CANCEL_REASON,
                           actor=actor, operation_id=request.operation_id, now=now)
        return Applied(expected_version=request.expected_control_version,
                       metadata={"control_version": version}, consume_tasks=settled)

    return run_operation(engine, namespace, workflow_id, kind=OperationKind.CANCEL,
                         operation_id=request.operation_id, reason=request.reason,
                         actor=actor, digest=_digest(OperationKind.CANCEL, workflow_id, request),
                         body=_body)


__all__ = ["CANCEL_REASON", "ControlRequest", "cancel", "gate_kept_closed", "pause", "resume"]
