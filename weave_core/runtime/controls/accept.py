"""Accepting a reviewed result: a confirmed effect continues the workflow (seed 003 §5).

A task step in review whose effect a reviewer confirmed present — a non-idempotent task
whose lease was lost while the external system took the job, a result that was
quarantined — would otherwise only end the instance. ``accept`` lets a reviewer with the
``review`` permission submit the output they observed, with the evidence that shows it:

1. the instance is in review (``workflow_settled``, ``not_in_review``), no cancel was
   accepted (``cancel_requested``), its deadline has not passed (``deadline_passed``);
2. the step exists (``step_not_found``), its state version is the one the reviewer saw
   (``state_version_conflict``), it is a task step in ``NEEDS_REVIEW``
   (``step_succeeded``, ``step_not_acceptable``) whose current activation is its own
   (``step_ownership_mismatch``);
3. the evidence is a non-empty object (422, problem ``evidence_required``); a conclusion
   ``effect_confirmed_absent`` still standing on the activation contradicts the request
   (409 ``evidence_required``: conclude ``effect_confirmed_present`` first, or recover);
4. the output is checked against the step's output contract exactly as a handler's result
   is (422 ``output_contract_violated``).

Then, in one transaction: the conclusion ``effect_confirmed_present`` with the evidence
(``review.concluded``), the step ``SUCCEEDED`` with the output as a *reviewed result*
(transition ``step.succeeded`` with ``reviewed: true``, the operation id, the evidence and
the output; the activation ``SUCCEEDED``, reason ``result_accepted``); the task, its
attempts and the inbox snapshots are left exactly as they were. When nothing else blocks,
the instance leaves review (the gate reopens unless paused) and advances from the step
exactly as from a task success, in the same transaction; otherwise it stays in review and
the step's output is used once the rest is resolved.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from weave_core.engine import Engine
from weave_core.foundation import exactjson
from weave_core.foundation.errors import Problem
from weave_core.foundation.exactjson import JSON
from weave_core.foundation.exactschema import violations
from weave_core.planning.program import Program
from weave_core.planning.snapshot import Phase
from weave_core.plugins.nodespec import Fact, FactKind, StepOutcome
from weave_core.runtime.advance import advance_txn
from weave_core.runtime.controls._common import (
    Applied,
    OperationOutcome,
    require_open_review,
    run_operation,
)
from weave_core.runtime.controls.errors import (
    EvidenceRequiredError,
    OutputContractError,
    StepNotAcceptableError,
    StepOwnershipError,
    StepSucceededError,
)
from weave_core.runtime.controls.liveness import review_clears
from weave_core.runtime.controls.operations import (
    OperationKind,
    check_common,
    request_hash,
)
from weave_core.runtime.controls.review import (
    Conclusion,
    blocking_steps,
    check_conclusion,
    check_state_version,
    latest_conclusion,
    step_record,
)
from weave_core.runtime.history import History
from weave_core.runtime.instances import ActivationState, InstanceStatus
from weave_core.runtime.snapshot import LockedInstance
from weave_core.runtime.status import open_gate_txn, set_status
from weave_core.storage.locks import lock_activation
from weave_core.storage.schema import weave_activations

ACCEPTED_REASON: Final = "result_accepted"
"""The reason a step and its activation carry when their result is a reviewed one."""


@dataclass(frozen=True)
class AcceptRequest:
    operation_id: str
    reason: str
    step_id: str
    expected_state_version: int
    output: JSON
    """The output the reviewer observed (what the handler would have returned)."""
    evidence: JSON = None


def _check_output(program: Program, step_id: str, output: JSON) -> JSON:
    result = program.interpret(step_id, Fact(FactKind.TASK_SUCCEEDED, payload=output))
    if result.outcome is StepOutcome.SUCCEEDED:
        return result.output
    schema = getattr(program.config(step_id), "output_schema", None)
    found = violations(schema, output) if isinstance(schema, dict) else []
    problems = [Problem("$.output" + m.split(":", 1)[0], "output_contract_violated",
                        m.split(": ", 1)[-1]) for m in found] or [
        Problem("$.output", "output_contract_violated",
                f"the step does not take this output ({result.reason})")]
    raise OutputContractError("the output breaks the step's output contract", problems)


def accept(engine: Engine, namespace: str, workflow_id: str, request: AcceptRequest, *,
           actor: str) -> OperationOutcome:
    """Record a reviewed result and advance from it (module docstring)."""
    check_common(request.operation_id, request.reason)
    check_conclusion(Conclusion.EFFECT_CONFIRMED_PRESENT.value, request.evidence)
    digest = request_hash(OperationKind.ACCEPT, workflow_id, {
        "reason": request.reason, "step_id": request.step_id, "output": request.output,
        "evidence": request.evidence})

    def _body(conn: Connection, li: LockedInstance, history: History, program: Program,
              now: datetime) -> Applied:
        require_open_review(conn, li, now, cancelled="the workflow does not advance")
        rec = step_record(li, program, request.step_id)
        check_state_version(li, rec, request.expected_state_version)
        if rec.phase is Phase.SUCCEEDED:
            raise StepSucceededError(f"step {rec.step_id!r} already succeeded",
                                     details={"step_id": rec.step_id})
        if rec.phase is not Phase.NEEDS_REVIEW or program.is_composite(rec.step_id) \
                or program.kind_of(rec.step_id) != "task" or rec.activation_id is None:
            raise StepNotAcceptableError(
                f"step {rec.step_id!r} is a {program.kind_of(rec.step_id)} step in "
                f"{rec.phase.value}: a result is accepted for a task step in review only",
                details={"step_id": rec.step_id, "phase": rec.phase.value})
        act = lock_activation(conn, rec.activation_id)
        if act is None or act.namespace != namespace or act.instance_id != workflow_id \
                or act.step_id != rec.step_id or act.state == ActivationState.ACTIVE.value:
            raise StepOwnershipError("the step's activation is not this step's",
                                     details={"step_id": rec.step_id,
                                              "activation_id": rec.activation_id})
        found = latest_conclusion(conn, namespace, workflow_id, act.activation_id)
        if found is not None and found[0] is Conclusion.EFFECT_CONFIRMED_ABSENT:
            raise EvidenceRequiredError(
                "a conclusion says the effect did not happen: conclude "
                "'effect_confirmed_present' with evidence, or recover the step",
                details={"step_id": rec.step_id, "conclusion": found[0].value})
        output = _check_output(program, rec.step_id, request.output)
        history.record("review.concluded", step_id=rec.step_id,
                       activation_id=act.activation_id, reason=request.reason,
                       details={"conclusion": Conclusion.EFFECT_CONFIRMED_PRESENT.value,
                                "evidence": request.evidence, "actor": actor,
                                "state_version": rec.version})
        a = weave_activations
        conn.execute(sa.update(a).where(a.c.activation_id == act.activation_id).values(
            state=ActivationState.SUCCEEDED.value, state_version=int(act.state_version) + 1,
            reason=ACCEPTED_REASON, updated_at=now, settled_at=now))
        previous = rec.reason
        rec.phase, rec.version, rec.reason = Phase.SUCCEEDED, rec.version + 1, ACCEPTED_REASON
        rec.output = exactjson.loads_stored(exactjson.dumps(output))
        li.put_step(rec)
        history.record("step.succeeded", step_id=rec.step_id, activation_id=act.activation_id,
                       from_state=Phase.NEEDS_REVIEW.value, to_state=Phase.SUCCEEDED.value,
                       reason=ACCEPTED_REASON, details={
                           "reviewed": True, "operation_id": request.operation_id,
                           "actor": actor, "previous_reason": previous,
                           "task_id": act.task_id, "evidence": request.evidence,
                           "output": output})
        if not blocking_steps(li, program) and review_clears(li):
            set_status(li, history, InstanceStatus.RUNNING, now=now)
            li.set(review_reason=None)
            if not li.paused:
                open_gate_txn(conn, li, history, "result_accepted", now)
            advance_txn(conn, engine, li, history, program, now=now, fact_at=now)
        return Applied(step_id=rec.step_id, activation_id=act.activation_id,
                       conclusion=Conclusion.EFFECT_CONFIRMED_PRESENT.value,
                       evidence=request.evidence,
                       expected_version=request.expected_state_version,
                       metadata={"task_id": act.task_id, "output": output,
                                 "previous_reason": previous})

    return run_operation(engine, namespace, workflow_id, kind=OperationKind.ACCEPT,
                         operation_id=request.operation_id, reason=request.reason,
                         actor=actor, digest=digest, body=_body, review_shape=True)


__all__ = ["ACCEPTED_REASON", "AcceptRequest", "accept"]
