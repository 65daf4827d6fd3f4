"""The transaction every control and review operation runs in.

Lock chain of the instance (R-6.2) → replay of a known operation id → the operation's own
checks and changes → an instance taken out of review must have a way forward
(``liveness.require_way_forward``) → transitions and one audit row (actor: the operator;
operation id: the client's) → the instance row → the operation row with its response body.
One commit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from weave_core.engine import Engine
from weave_core.foundation.errors import NotFoundError
from weave_core.foundation.exactjson import JSON
from weave_core.foundation.faults import fault_point
from weave_core.planning.program import Program
from weave_core.runtime.admission import read_instance
from weave_core.runtime.consumer import consume_task_results
from weave_core.runtime.controls.errors import (
    CancelRequestedError,
    ControlVersionConflictError,
    DeadlinePassedError,
    NotInReviewError,
    WorkflowSettledError,
)
from weave_core.runtime.controls.liveness import require_way_forward
from weave_core.runtime.controls.operations import (
    Operation,
    OperationKind,
    cancel_requested_txn,
    record_txn,
    replay_txn,
)
from weave_core.runtime.history import History
from weave_core.runtime.instances import InstanceStatus
from weave_core.runtime.pending import ROOT_REF, PendingKind, schedule_txn
from weave_core.runtime.programs import programs
from weave_core.runtime.snapshot import LockedInstance, lock_chain


@dataclass
class Applied:
    """What an operation did, for its row, its audit and the work after the commit."""

    step_id: str | None = None
    activation_id: str | None = None
    new_activation_id: str | None = None
    conclusion: str | None = None
    evidence: JSON = None
    expected_version: int | None = None
    metadata: dict[str, JSON] = field(default_factory=dict)
    consume_tasks: list[str] = field(default_factory=list)
    """Tasks settled by this operation whose results the fast path consumes at once."""


@dataclass(frozen=True)
class OperationOutcome:
    body: dict[str, Any]
    """The response body (the same for every repeat of the operation id)."""
    replayed: bool


Body = Callable[[Connection, LockedInstance, History, Program, datetime], Applied]


def not_found(workflow_id: str) -> NotFoundError:
    return NotFoundError(f"workflow {workflow_id!r} not found",
                         details={"workflow_id": workflow_id})


def refuse_terminal(li: LockedInstance) -> None:
    if li.terminal:
        raise WorkflowSettledError(
            f"workflow {li.instance_id!r} is {li.status.value}: terminal statuses never move",
            details={"workflow_id": li.instance_id, "status": li.status.value})


def require_open_review(conn: Connection, li: LockedInstance, now: datetime, *,
                        cancelled: str) -> None:
    """What a reviewer's step operation (recover, accept) needs first: an instance in
    review, no cancel accepted (``cancelled`` says what the cancel stops), and its
    deadline not passed (nothing new starts after it)."""
    refuse_terminal(li)
    if li.status != InstanceStatus.NEEDS_REVIEW:
        raise NotInReviewError(f"the instance is {li.status.value}, not in review",
                               details={"workflow_id": li.instance_id,
                                        "status": li.status.value})
    if cancel_requested_txn(conn, li.namespace, li.instance_id):
        raise CancelRequestedError(f"a cancel was accepted: {cancelled}",
                                   details={"workflow_id": li.instance_id})
    if now > li.deadline_at:
        raise DeadlinePassedError("the instance deadline has passed: nothing new starts",
                                  details={"deadline_at": li.deadline_at.isoformat() + "Z"})


def check_control_version(li: LockedInstance, expected: int) -> None:
    if expected != li.control_version:
        raise ControlVersionConflictError(
            "the instance's control version changed: read it again",
            details={"workflow_id": li.instance_id, "expected_control_version": expected,
                     "control_version": li.control_version})


def continue_now_txn(conn: Connection, li: LockedInstance, reason: str, now: datetime) -> None:
    """Arm the ROOT pending row due now: any node continues from the records at once."""
    schedule_txn(conn, namespace=li.namespace, instance_id=li.instance_id,
                 kind=PendingKind.ROOT, ref=ROOT_REF, due_at=now, reason=reason,
                 root_version=li.root_version, root_identity=li.root_identity, now=now)


def run_operation(
    engine: Engine, namespace: str, workflow_id: str, *, kind: OperationKind,
    operation_id: str, reason: str, actor: str, digest: str, body: Body,
    review_shape: bool = False,
) -> OperationOutcome:
    """Run one operation in one transaction (see the module docstring)."""
    db = engine.db

    def _txn(conn: Connection) -> OperationOutcome:
        _after_commit.clear()  # a deadlock re-runs the whole transaction
        now = db.now(conn)
        li = lock_chain(conn, namespace, workflow_id)
        if li is None:
            raise not_found(workflow_id)
        first = replay_txn(conn, namespace, operation_id, digest)
        if first is not None:
            return OperationOutcome(first, True)
        history = History(namespace, workflow_id, li.revision, operation_id, now)
        program = programs(engine).for_instance(conn, li)
        before = li.status
        applied = body(conn, li, history, program, now)
        if before == InstanceStatus.NEEDS_REVIEW:
            require_way_forward(conn, li, program)
        fault_point("control.mid")  # the operation applied, its history and row not yet
        history.write(conn, actor=actor, action=f"workflow.{kind.value}", metadata={
            "operation_id": operation_id, "kind": kind.value, "reason": reason,
            "expected_version": applied.expected_version, "step_id": applied.step_id,
            "node": engine.node_id, **applied.metadata,
        })
        li.flush(conn, revision=history.revision, now=now)
        view = read_instance(conn, namespace, workflow_id).to_json()
        operation = Operation(
            operation_id=operation_id, kind=kind.value, instance_id=workflow_id, actor=actor,
            reason=reason, expected_version=applied.expected_version,
            step_id=applied.step_id, activation_id=applied.activation_id,
            new_activation_id=applied.new_activation_id, conclusion=applied.conclusion,
            evidence=applied.evidence, revision=history.revision, created_at=now,
        )
        response: dict[str, Any] = (
            {"workflow": view, "operation": operation.to_json()} if review_shape else view
        )
        record_txn(conn, namespace=namespace, operation_id=operation_id,
                   instance_id=workflow_id, kind=kind, actor=actor, reason=reason,
                   digest=digest, outcome=response, revision=history.revision, now=now,
                   expected_version=applied.expected_version, step_id=applied.step_id,
                   activation_id=applied.activation_id,
                   new_activation_id=applied.new_activation_id,
                   conclusion=applied.conclusion, evidence=applied.evidence)
        _after_commit.extend(applied.consume_tasks)
        return OperationOutcome(response, False)

    _after_commit: list[str] = []
    try:
        outcome = db.transaction(_txn, name=f"workflow_{kind.value}")
    except IntegrityError:
        # The same operation id committed concurrently (this instance or another one):
        # the re-run finds its row and replays it, or refuses a different request.
        outcome = db.transaction(_txn, name=f"workflow_{kind.value}")
    for task_id in dict.fromkeys(_after_commit):
        consume_task_results(engine, namespace, task_id)
    return outcome


__all__ = [
    "Applied",
    "OperationOutcome",
    "check_control_version",
    "continue_now_txn",
    "not_found",
    "refuse_terminal",
    "require_open_review",
    "run_operation",
]
