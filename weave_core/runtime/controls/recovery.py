"""Recovery (R-8.5): re-run one failed, cancelled or in-review step under a new activation.

Checks, in order (each refusal has its code):

1. the instance is in review (``workflow_settled``, ``not_in_review``), no cancel was
   accepted (``cancel_requested``), its deadline has not passed (``deadline_passed``);
2. the step exists (``step_not_found``), is a leaf, and its state version is the one the
   reviewer saw (``state_version_conflict``);
3. its phase: a SUCCEEDED step can never be re-run (``step_succeeded``); an active or
   skipped one is not recoverable (``step_not_recoverable``);
4. ownership: the current activation belongs to this instance and step
   (``step_ownership_mismatch``);
5. the failure category and the side-effect evidence: when the effect is unknown (a lost
   lease on a non-idempotent handler), the handler is not idempotent, the handler ran but
   broke its output contract, or its result was quarantined, re-running is only allowed with
   a conclusion ``effect_confirmed_absent`` or ``retry_safe`` and its evidence — recorded
   before with ``conclude`` or given with the recovery (``evidence_required``); a conclusion
   ``effect_confirmed_present`` forbids it (``effect_present``). "No response" alone is
   never a reason.

Then, in one transaction: the operation row, a new activation of the step with the frozen
command of the old one (same input, handler and business idempotency identity) and its
task, the step pointing at the new activation (its state version rises); the old
activations, tasks and results stay as history, and a late result of an old activation is
acknowledged as ``stale_activation``. Budgets and absolute deadlines carry over: the task
keeps the instance deadline and gets the attempts its step has left (at least one: the
recovery itself is the operator's decision to try once more). Waits reopen for the new
activation through :func:`~weave_core.runtime.waits.open_wait_txn`, keeping the absolute
times of the step's earlier wait: a timer its original due time, a signal wait its
deadline (a signal bound to the old activation never satisfies the new wait; a signal
accepted while no wait was open does), a poll its deadline and its round number — the
recovered round's task gets the attempts that round has left, later rounds the full
``attempts_per_round``. When nothing else blocks, the instance returns to RUNNING (its gate
reopens unless paused; a quarantine's review ends with its step's) and a ROOT advance due
now continues what was held back.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from weave_core.engine import Engine
from weave_core.foundation import exactjson
from weave_core.foundation.exactjson import JSON
from weave_core.planning.plan import command_to_json
from weave_core.planning.program import Program
from weave_core.planning.snapshot import Phase
from weave_core.plugins.nodespec import (
    Command,
    PollCommand,
    RetryPolicy,
    TaskCommand,
    Timeouts,
    TimerCommand,
    WaitSignalCommand,
)
from weave_core.runtime.activation import activate_txn
from weave_core.runtime.controls._common import (
    Applied,
    OperationOutcome,
    continue_now_txn,
    require_open_review,
    run_operation,
)
from weave_core.runtime.controls.errors import (
    EffectPresentError,
    EvidenceRequiredError,
    StepNotRecoverableError,
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
    SAFE_TO_RERUN,
    Conclusion,
    blocking_steps,
    check_conclusion,
    check_state_version,
    latest_conclusion,
    step_record,
)
from weave_core.runtime.history import History
from weave_core.runtime.instances import InstanceStatus, ReviewReason, load_json
from weave_core.runtime.snapshot import LockedInstance
from weave_core.runtime.status import open_gate_txn, set_status
from weave_core.storage.locks import lock_activation
from weave_core.storage.schema import weave_activations, weave_tasks

CONTRACT_REASON = "output_contract_violated"


@dataclass(frozen=True)
class RecoverRequest:
    operation_id: str
    reason: str
    step_id: str
    expected_state_version: int
    conclusion: str | None = None
    """A conclusion given with the recovery (recorded on the old activation)."""
    evidence: JSON = None


# --- the frozen command, read back ------------------------------------------------------


def _retry(raw: Any) -> RetryPolicy:
    raw = raw or {}
    return RetryPolicy(
        max_attempts=int(raw.get("max_attempts", 3)),
        backoff_seconds=Decimal(raw.get("backoff_seconds", 1)),
        backoff_multiplier=Decimal(raw.get("backoff_multiplier", 2)),
        max_backoff_seconds=Decimal(raw.get("max_backoff_seconds", 300)),
    )


def _task(raw: dict[str, Any]) -> TaskCommand:
    timeouts = raw.get("timeouts") or {}
    return TaskCommand(
        queue=raw["queue"], handler=raw["handler"], handler_version=raw["handler_version"],
        idempotent=bool(raw["idempotent"]), input=raw.get("input"), retry=_retry(raw.get("retry")),
        timeouts=Timeouts(timeouts.get("schedule_to_start"), timeouts.get("start_to_close"),
                          timeouts.get("heartbeat")),
        trace_key=raw.get("trace_key"), resource_key=raw.get("resource_key"),
    )


def _signal(raw: dict[str, Any]) -> WaitSignalCommand:
    return WaitSignalCommand(raw["name"], raw["correlation_key"],
                             raw.get("param_version", "1"), raw.get("timeout_seconds"))


def command_from_json(raw: JSON) -> Command:
    """The command an activation froze (``plan.command_to_json``), read back exactly."""
    if not isinstance(raw, dict) or "type" not in raw:
        raise ValueError("not a frozen command")
    kind = raw["type"]
    if kind == "TaskCommand":
        return _task(raw)
    if kind == "TimerCommand":
        return TimerCommand(int(raw["seconds"]))
    if kind == "WaitSignalCommand":
        return _signal(raw)
    if kind == "PollCommand":
        receipt = raw.get("receipt")
        return PollCommand(task=_task(raw["task"]), max_rounds=int(raw["max_rounds"]),
                           interval_seconds=int(raw["interval_seconds"]),
                           deadline_seconds=int(raw["deadline_seconds"]),
                           receipt=None if receipt is None else _signal(receipt))
    raise ValueError(f"command type {kind!r} cannot be recovered")


def _with_budget(command: Command, spent: int) -> tuple[Command, int | None]:
    """The command with the attempts its step has left (never fewer than one)."""
    if isinstance(command, TaskCommand):
        left = max(1, command.retry.max_attempts - spent)
        retry = dataclasses.replace(command.retry, max_attempts=left)
        return dataclasses.replace(command, retry=retry), left
    if isinstance(command, PollCommand):
        left = max(1, command.task.retry.max_attempts - spent)
        task = dataclasses.replace(command.task,
                                   retry=dataclasses.replace(command.task.retry, max_attempts=left))
        return dataclasses.replace(command, task=task), left
    return command, None


# --- the recovery -----------------------------------------------------------------------


def _needs_evidence(command: Command, rec_reason: str | None, act_reason: str | None,
                    task: Any) -> str | None:
    """Why re-running is not known to be safe without evidence, or None."""
    if task is not None and bool(task.effect_unknown):
        return ReviewReason.EFFECT_UNKNOWN.value
    if ReviewReason.EFFECT_UNKNOWN.value in (rec_reason, act_reason):
        return ReviewReason.EFFECT_UNKNOWN.value
    if CONTRACT_REASON in (rec_reason, act_reason):
        return CONTRACT_REASON
    if ReviewReason.QUARANTINED_RESULT.value in (rec_reason, act_reason):
        return ReviewReason.QUARANTINED_RESULT.value  # the task settled: its effect may be done
    inner = command.task if isinstance(command, PollCommand) else command
    if isinstance(inner, TaskCommand) and not inner.idempotent and task is not None \
            and int(task.attempts_used) > 0:
        return "handler_not_idempotent"
    return None


def recover(engine: Engine, namespace: str, workflow_id: str, request: RecoverRequest, *,
            actor: str) -> OperationOutcome:
    """Re-run one step under a new activation (module docstring)."""
    check_common(request.operation_id, request.reason)
    inline: Conclusion | None = None
    if request.conclusion is not None:
        inline = check_conclusion(request.conclusion, request.evidence)
    digest = request_hash(OperationKind.RECOVER, workflow_id, {
        "reason": request.reason, "step_id": request.step_id,
        "conclusion": request.conclusion, "evidence": request.evidence})

    def _body(conn: Connection, li: LockedInstance, history: History, program: Program,
              now: datetime) -> Applied:
        require_open_review(conn, li, now, cancelled="steps are not re-run")
        rec = step_record(li, program, request.step_id)
        check_state_version(li, rec, request.expected_state_version)
        if rec.phase is Phase.SUCCEEDED:
            raise StepSucceededError(f"step {rec.step_id!r} succeeded: it is never re-run",
                                     details={"step_id": rec.step_id})
        if rec.phase not in (Phase.FAILED, Phase.NEEDS_REVIEW, Phase.CANCELLED) \
                or program.is_composite(rec.step_id) or rec.activation_id is None:
            raise StepNotRecoverableError(
                f"step {rec.step_id!r} is {rec.phase.value}: only failed, cancelled or "
                "in-review leaf steps are recovered",
                details={"step_id": rec.step_id, "phase": rec.phase.value})
        old = lock_activation(conn, rec.activation_id)
        if old is None or old.namespace != namespace or old.instance_id != workflow_id \
                or old.step_id != rec.step_id or old.state == "ACTIVE":
            raise StepOwnershipError("the step's activation is not this step's",
                                     details={"step_id": rec.step_id,
                                              "activation_id": rec.activation_id})
        command = command_from_json(load_json(old.command))
        t = weave_tasks
        task = None if old.task_id is None else conn.execute(
            sa.select(t.c.task_id, t.c.effect_unknown, t.c.attempts_used, t.c.status)
            .where(t.c.task_id == old.task_id)).one_or_none()
        found = latest_conclusion(conn, namespace, workflow_id, old.activation_id)
        conclusion, evidence = (inline, request.evidence) if inline is not None \
            else (found if found is not None else (None, None))
        if conclusion is Conclusion.EFFECT_CONFIRMED_PRESENT:
            raise EffectPresentError("a conclusion says the effect happened: re-running "
                                     "would repeat it", details={"step_id": rec.step_id})
        why = _needs_evidence(command, rec.reason, old.reason, task)
        if why is not None and conclusion not in SAFE_TO_RERUN:
            raise EvidenceRequiredError(
                "re-running this step is not known to be safe: conclude "
                "'effect_confirmed_absent' or 'retry_safe' with evidence first",
                details={"step_id": rec.step_id, "category": why,
                         "conclusion": None if conclusion is None else conclusion.value})
        spent = 0 if task is None else int(task.attempts_used)
        frozen = command
        command, attempts = _with_budget(command, spent)
        if inline is not None:
            history.record("review.concluded", step_id=rec.step_id,
                           activation_id=old.activation_id, reason=request.reason,
                           details={"conclusion": inline.value, "evidence": request.evidence,
                                    "actor": actor, "state_version": rec.version})
        if review_clears(li) and not li.paused:
            open_gate_txn(conn, li, history, "recovered", now)
        new_id = activate_txn(conn, engine, li, history, program, rec.step_id, command, now)
        assert new_id is not None and new_id != old.activation_id
        a = weave_activations
        if isinstance(command, PollCommand):
            # The deduction is the recovered round's (its task has it): the rounds after it
            # read the frozen command and get the full attempts_per_round again.
            conn.execute(sa.update(a).where(a.c.activation_id == new_id)
                         .values(command=exactjson.dumps(command_to_json(frozen))))
        new_task = conn.execute(sa.select(a.c.task_id).where(a.c.activation_id == new_id)
                                ).scalar_one_or_none()
        history.record("step.recovered", step_id=rec.step_id, activation_id=new_id,
                       reason=request.reason, details={
                           "previous_activation_id": old.activation_id,
                           "previous_task_id": old.task_id, "task_id": new_task,
                           "attempts": attempts, "attempts_spent": spent,
                           "conclusion": None if conclusion is None else conclusion.value,
                           "category": why, "actor": actor})
        if not blocking_steps(li, program) and review_clears(li):
            set_status(li, history, InstanceStatus.RUNNING, now=now)
            li.set(review_reason=None)
            continue_now_txn(conn, li, "recovered", now)
        return Applied(step_id=rec.step_id, activation_id=old.activation_id,
                       new_activation_id=new_id,
                       conclusion=None if inline is None else inline.value,
                       evidence=request.evidence if inline is not None else None,
                       expected_version=request.expected_state_version,
                       metadata={"new_activation_id": new_id, "task_id": new_task,
                                 "previous_activation_id": old.activation_id,
                                 "attempts": attempts,
                                 "evidence": evidence if why is not None else None})

    return run_operation(engine, namespace, workflow_id, kind=OperationKind.RECOVER,
                         operation_id=request.operation_id, reason=request.reason,
                         actor=actor, digest=digest, body=_body, review_shape=True)


__all__ = ["RecoverRequest", "command_from_json", "recover"]
