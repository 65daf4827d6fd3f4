"""Review (R-8.5): conclusions on steps, and resolving the review.

**Conclude** records what an authorised reviewer established about one step's side effect,
with a reason and evidence, on the step's current activation:

=========================  ===========================================================
conclusion                 meaning
=========================  ===========================================================
``effect_confirmed_absent``  the effect did not happen: re-running is safe
``retry_safe``               re-running is safe anyway (e.g. the external system dedupes
                             on the business key)
``effect_confirmed_present`` the effect happened: the step must not run again
``effect_unknown``           still unknown (a note; "no response" is not evidence)
=========================  ===========================================================

Every conclusion but ``effect_unknown`` needs a non-empty ``evidence`` object.

**Resolve** ends the review, with an ``outcome``:

- ``continue``: nothing blocks (no failed, cancelled or in-review step; the deadline not
  passed; no cancel intent) → ``RUNNING``, the gate reopens unless paused, and a ROOT
  advance due now continues from the records;
- ``failed`` / ``cancelled``: every started step settled and every step in review has a
  conclusion that settles its effect (``effect_confirmed_absent``/``_present``) → the
  terminal status. An accepted cancel allows only ``cancelled``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from weave_core.engine import Engine
from weave_core.foundation.errors import Problem, ValidationError
from weave_core.foundation.exactjson import JSON
from weave_core.planning.program import Program
from weave_core.planning.snapshot import Phase
from weave_core.runtime.controls._common import (
    Applied,
    OperationOutcome,
    continue_now_txn,
    refuse_terminal,
    run_operation,
)
from weave_core.runtime.controls.errors import (
    CancelRequestedError,
    DeadlinePassedError,
    EffectUnknownError,
    NotInReviewError,
    ReviewBlockedError,
    StateVersionConflictError,
    StepNotFoundError,
    StepNotInReviewError,
    WorkUnsettledError,
)
from weave_core.runtime.controls.operations import (
    OperationKind,
    cancel_requested_txn,
    check_common,
    request_hash,
)
from weave_core.runtime.history import History
from weave_core.runtime.instances import InstanceStatus, load_json
from weave_core.runtime.pending import close_all_txn
from weave_core.runtime.snapshot import LockedInstance, StepRecord
from weave_core.runtime.status import close_gate_txn, open_gate_txn, set_status
from weave_core.storage.schema import weave_operations


class Conclusion(StrEnum):
    EFFECT_CONFIRMED_ABSENT = "effect_confirmed_absent"
    RETRY_SAFE = "retry_safe"
    EFFECT_CONFIRMED_PRESENT = "effect_confirmed_present"
    EFFECT_UNKNOWN = "effect_unknown"


SAFE_TO_RERUN: Final = frozenset({Conclusion.EFFECT_CONFIRMED_ABSENT, Conclusion.RETRY_SAFE})
SETTLES_EFFECT: Final = frozenset({Conclusion.EFFECT_CONFIRMED_ABSENT,
                                   Conclusion.EFFECT_CONFIRMED_PRESENT})
BLOCKING: Final = frozenset({Phase.FAILED, Phase.NEEDS_REVIEW, Phase.CANCELLED})
"""Step phases that block the steps after them until recovered."""


class ResolveOutcome(StrEnum):
    CONTINUE = "continue"
    FAILED = "failed"
    CANCELLED = "cancelled"


def check_conclusion(conclusion: str, evidence: JSON, path: str = "$") -> Conclusion:
    """A known conclusion with the evidence it needs (422 otherwise)."""
    try:
        value = Conclusion(conclusion)
    except ValueError:
        raise ValidationError("unknown conclusion", [Problem(
            f"{path}.conclusion", "invalid_field",
            "one of " + ", ".join(c.value for c in Conclusion))]) from None
    if value is not Conclusion.EFFECT_UNKNOWN and not (isinstance(evidence, dict) and evidence):
        raise ValidationError("a conclusion needs evidence", [Problem(
            f"{path}.evidence", "evidence_required",
            "a non-empty object: what shows the effect's state (ticket, query, log)")])
    return value


def step_record(li: LockedInstance, program: Program, step_id: str) -> StepRecord:
    rec = li.step(step_id)
    if rec is None or step_id not in program.step_ids():
        raise StepNotFoundError(f"step {step_id!r} not found in this instance",
                                details={"workflow_id": li.instance_id, "step_id": step_id})
    return rec


def check_state_version(li: LockedInstance, rec: StepRecord, expected: int | None) -> None:
    if expected is not None and expected != rec.version:
        raise StateVersionConflictError(
            "the step's state version changed: read it again",
            details={"workflow_id": li.instance_id, "step_id": rec.step_id,
                     "expected_state_version": expected, "state_version": rec.version})


def latest_conclusion(conn: Connection, namespace: str, instance_id: str,
                      activation_id: str | None) -> tuple[Conclusion, JSON] | None:
    """The last conclusion recorded on this activation (and its evidence), if any."""
    if activation_id is None:
        return None
    o = weave_operations
    row = conn.execute(
        sa.select(o.c.conclusion, o.c.evidence).where(
            o.c.namespace == namespace, o.c.instance_id == instance_id,
            o.c.kind == OperationKind.CONCLUDE.value, o.c.activation_id == activation_id)
        .order_by(o.c.revision.desc()).limit(1)
    ).one_or_none()
    if row is None or row.conclusion is None:
        return None
    return Conclusion(row.conclusion), load_json(row.evidence)


def blocking_steps(li: LockedInstance, program: Program) -> list[StepRecord]:
    return [r for sid, r in sorted(li.steps.items())
            if r.phase in BLOCKING and not program.is_composite(sid)]


def unsettled_effects(conn: Connection, li: LockedInstance) -> list[str]:
    """Steps in review whose effect no conclusion settles (R-3.4 forbids a final status)."""
    out = []
    for sid, rec in sorted(li.steps.items()):
        if rec.phase is not Phase.NEEDS_REVIEW:
            continue
        found = latest_conclusion(conn, li.namespace, li.instance_id, rec.activation_id)
        if found is None or found[0] not in SETTLES_EFFECT:
            out.append(sid)
    return out


# --- conclude --------------------------------------------------------------------------


@dataclass(frozen=True)
class ConcludeRequest:
    operation_id: str
    reason: str
    step_id: str
    conclusion: str
    evidence: JSON = None
    expected_state_version: int | None = None


def conclude(engine: Engine, namespace: str, workflow_id: str, request: ConcludeRequest, *,
             actor: str) -> OperationOutcome:
    """Record a conclusion on a failed, cancelled or in-review step (module docstring)."""
    check_common(request.operation_id, request.reason)
    conclusion = check_conclusion(request.conclusion, request.evidence)
    digest = request_hash(OperationKind.CONCLUDE, workflow_id, {
        "reason": request.reason, "step_id": request.step_id,
        "conclusion": conclusion.value, "evidence": request.evidence})

    def _body(conn: Connection, li: LockedInstance, history: History, program: Program,
              now: datetime) -> Applied:
        rec = step_record(li, program, request.step_id)
        check_state_version(li, rec, request.expected_state_version)
        if rec.phase not in BLOCKING or program.is_composite(rec.step_id):
            raise StepNotInReviewError(
                f"step {rec.step_id!r} is {rec.phase.value}: nothing to conclude",
                details={"step_id": rec.step_id, "phase": rec.phase.value})
        history.record("review.concluded", step_id=rec.step_id,
                       activation_id=rec.activation_id, reason=request.reason,
                       details={"conclusion": conclusion.value, "evidence": request.evidence,
                                "actor": actor, "state_version": rec.version})
        return Applied(step_id=rec.step_id, activation_id=rec.activation_id,
                       conclusion=conclusion.value, evidence=request.evidence,
                       expected_version=request.expected_state_version,
                       metadata={"conclusion": conclusion.value})

    return run_operation(engine, namespace, workflow_id, kind=OperationKind.CONCLUDE,
                         operation_id=request.operation_id, reason=request.reason,
                         actor=actor, digest=digest, body=_body, review_shape=True)


# --- resolve ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ResolveRequest:
    operation_id: str
    reason: str
    outcome: str = ResolveOutcome.CONTINUE.value


def resolve(engine: Engine, namespace: str, workflow_id: str, request: ResolveRequest, *,
            actor: str) -> OperationOutcome:
    """End the review (module docstring)."""
    check_common(request.operation_id, request.reason)
    try:
        outcome = ResolveOutcome(request.outcome)
    except ValueError:
        raise ValidationError("unknown outcome", [Problem(
            "$.outcome", "invalid_field",
            "one of " + ", ".join(o.value for o in ResolveOutcome))]) from None
    digest = request_hash(OperationKind.RESOLVE, workflow_id,
                          {"reason": request.reason, "outcome": outcome.value})

    def _body(conn: Connection, li: LockedInstance, history: History, program: Program,
              now: datetime) -> Applied:
        refuse_terminal(li)
        if li.status != InstanceStatus.NEEDS_REVIEW:
            raise NotInReviewError(f"the instance is {li.status.value}, not in review",
                                   details={"workflow_id": workflow_id,
                                            "status": li.status.value})
        previous = li.review_reason
        cancel_intent = cancel_requested_txn(conn, namespace, workflow_id)
        if cancel_intent and outcome is not ResolveOutcome.CANCELLED:
            raise CancelRequestedError("a cancel was accepted: resolve with outcome "
                                       "'cancelled' once everything settled",
                                       details={"workflow_id": workflow_id})
        if outcome is ResolveOutcome.CONTINUE:
            blockers = blocking_steps(li, program)
            if blockers:
                raise ReviewBlockedError(
                    "steps still block progress: recover them (or resolve as failed)",
                    details={"steps": [{"step_id": r.step_id, "phase": r.phase.value,
                                        "reason": r.reason, "state_version": r.version}
                                       for r in blockers]})
            if now > li.deadline_at:
                raise DeadlinePassedError("the instance deadline has passed",
                                          details={"deadline_at": li.deadline_at.isoformat()
                                                   + "Z"})
            set_status(li, history, InstanceStatus.RUNNING, now=now)
            li.set(review_reason=None)
            if not li.paused:
                open_gate_txn(conn, li, history, "review_resolved", now)
            continue_now_txn(conn, li, "review_resolved", now)
        else:
            active = [sid for sid, r in sorted(li.steps.items())
                      if r.phase is Phase.ACTIVE and not program.is_composite(sid)]
            if active:
                raise WorkUnsettledError("started work has not settled yet",
                                         details={"steps": active})
            unknown = unsettled_effects(conn, li)
            if unknown:
                raise EffectUnknownError(
                    "steps with an unknown effect have no conclusion that settles it",
                    details={"steps": unknown})
            close_gate_txn(conn, li, history, "review_resolved", now)
            close_all_txn(conn, li.instance_id, now)
            final = InstanceStatus.FAILED if outcome is ResolveOutcome.FAILED \
                else InstanceStatus.CANCELLED
            set_status(li, history, final, now=now, reason=previous)
        history.record("review.resolved", reason=request.reason,
                       details={"outcome": outcome.value, "previous_reason": previous,
                                "actor": actor})
        return Applied(metadata={"outcome": outcome.value, "previous_reason": previous})

    return run_operation(engine, namespace, workflow_id, kind=OperationKind.RESOLVE,
                         operation_id=request.operation_id, reason=request.reason,
                         actor=actor, digest=digest, body=_body, review_shape=True)


__all__ = [
    "BLOCKING",
    "SAFE_TO_RERUN",
    "SETTLES_EFFECT",
    "ConcludeRequest",
    "Conclusion",
    "ResolveOutcome",
    "ResolveRequest",
    "blocking_steps",
    "check_conclusion",
    "check_state_version",
    "conclude",
    "latest_conclusion",
    "resolve",
    "step_record",
    "unsettled_effects",
]
