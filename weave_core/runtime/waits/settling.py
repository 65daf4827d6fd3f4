"""Settling a waiting step: what the winning fact means for it, then advance, review or fail.

Every wait that ends with a fact (a signal, a timer, a timeout, a poll round or its
deadline) settles its step here, under the instance's lock chain, and calls down into the
advance.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.engine import Connection, Row

from weave_core.engine import Engine
from weave_core.foundation.exactjson import JSON
from weave_core.planning.program import Program
from weave_core.planning.snapshot import Phase
from weave_core.plugins.nodespec import StepOutcome, StepResult
from weave_core.runtime.advance import advance_txn
from weave_core.runtime.history import History
from weave_core.runtime.instances import PHASE_OF_OUTCOME, InstanceStatus
from weave_core.runtime.snapshot import LockedInstance
from weave_core.runtime.status import settle_cancelling, to_review
from weave_core.runtime.stopping import fail_after_settled_txn
from weave_core.storage.schema import weave_activations
from weave_core.storage.statements import update_keyed


def settle_step_txn(
    conn: Connection, engine: Engine, li: LockedInstance, history: History, program: Program,
    act: Row[Any], result: StepResult, *, now: datetime, fact_at: datetime,
    details: dict[str, JSON], result_revision: int | None = None,
) -> Phase:
    """Save what the fact means for the step, then advance, review or fail (policy).

    ``fact_at`` is the database acceptance time of the winning fact: it decides "on time"
    for the instance deadline (R-6.7).
    """
    phase = PHASE_OF_OUTCOME.get(result.outcome)
    if phase is None:  # CONTINUE never settles a step
        phase, result = Phase.NEEDS_REVIEW, StepResult(StepOutcome.NEEDS_REVIEW,
                                                       reason="unexpected_outcome")
    step = li.step(act.step_id)
    assert step is not None
    step.phase, step.version = phase, step.version + 1
    step.output = result.output if phase is Phase.SUCCEEDED else None
    step.reason = result.reason
    li.put_step(step)
    a = weave_activations
    values: dict[str, Any] = {"state": phase.value, "state_version": int(act.state_version) + 1,
                              "reason": result.reason, "updated_at": now, "settled_at": now}
    if result_revision is not None:
        values["result_revision"] = result_revision
    update_keyed(conn, a, {"activation_id": act.activation_id}, values)
    history.record(f"step.{phase.value.lower()}", step_id=act.step_id,
                   activation_id=act.activation_id, from_state=Phase.ACTIVE.value,
                   to_state=phase.value, reason=result.reason, details=details)
    if li.status == InstanceStatus.CANCELLING:
        settle_cancelling(conn, li, history, program, now)
    elif phase is Phase.SUCCEEDED:
        advance_txn(conn, engine, li, history, program, now=now, fact_at=fact_at)
    elif phase is Phase.FAILED and li.failure_policy == "FAIL_AFTER_SETTLED":
        fail_after_settled_txn(conn, engine, li, history, program, now)
    else:
        to_review(conn, li, history, result.reason or phase.value.lower(), now=now)
    return phase


__all__ = ["settle_step_txn"]
