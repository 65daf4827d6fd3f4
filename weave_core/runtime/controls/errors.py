"""The refusals of controls, review and recovery, each with a stable code (409 unless noted).

Every class is a leaf of the one error tree (``weave_core.foundation.errors``); the HTTP
status comes
from its base class in ``weave_http.problems``. Codes are a public contract
(docs/operators-guide.md lists every one).
"""

from __future__ import annotations

from weave_core.foundation.errors import ConflictError, NotFoundError, ValidationError


class ControlVersionConflictError(ConflictError):
    """``expected_control_version`` is not the instance's control version (read it again)."""

    code = "control_version_conflict"


class StateVersionConflictError(ConflictError):
    """``expected_state_version`` is not the step's state version (read it again)."""

    code = "state_version_conflict"


class OperationConflictError(ConflictError):
    """This ``operation_id`` was used before for a different request."""

    code = "operation_conflict"


class WorkflowSettledError(ConflictError):
    """The instance is terminal (SUCCEEDED, FAILED, CANCELLED): it never moves again."""

    code = "workflow_settled"


class AlreadyPausedError(ConflictError):
    code = "already_paused"


class NotPausedError(ConflictError):
    code = "not_paused"


class AlreadyCancellingError(ConflictError):
    """The instance is already stopping (a cancel, or the FAIL_AFTER_SETTLED policy)."""

    code = "already_cancelling"


class CancelRequestedError(ConflictError):
    """A cancel was accepted for this instance: it may only end CANCELLED."""

    code = "cancel_requested"


class NotInReviewError(ConflictError):
    """The action needs the instance in NEEDS_REVIEW."""

    code = "not_in_review"


class ReviewBlockedError(ConflictError):
    """Steps still block progress (failed, in review, cancelled): recover them first."""

    code = "review_blocked"


class WorkUnsettledError(ConflictError):
    """Work that started has not settled yet: the instance cannot claim everything settled."""

    code = "work_unsettled"


class EffectUnknownError(ConflictError):
    """A step's side effect is unknown and no conclusion settles it (R-3.4)."""

    code = "effect_unknown"


class EvidenceRequiredError(ConflictError):
    """Re-running this step is not known to be safe: record a conclusion with evidence
    (``effect_confirmed_absent`` or ``retry_safe``) first. "No response" is not one."""

    code = "evidence_required"


class EffectPresentError(ConflictError):
    """A conclusion says the step's side effect happened: re-running would repeat it."""

    code = "effect_present"


class StepSucceededError(ConflictError):
    """A succeeded step can never be re-run."""

    code = "step_succeeded"


class StepNotRecoverableError(ConflictError):
    """The step is not in a state recovery applies to (active, skipped, or a composite)."""

    code = "step_not_recoverable"


class StepNotInReviewError(ConflictError):
    """Conclusions are recorded on failed, cancelled or in-review steps only."""

    code = "step_not_in_review"


class StepOwnershipError(ConflictError):
    """The step's activation does not belong to this instance and step."""

    code = "step_ownership_mismatch"


class DeadlinePassedError(ConflictError):
    """The instance deadline has passed: no new work may start (R-6.7)."""

    code = "deadline_passed"


class StepNotFoundError(NotFoundError):
    """No such step in this instance (never activated, or not in its definition)."""

    code = "step_not_found"


class NoActiveWorkError(ConflictError):
    """The operation would leave the instance running or waiting with nothing to run,
    wait for or review (RELIABILITY I1): a step is ACTIVE but its work is gone."""

    code = "no_active_work"


class StepNotAcceptableError(ConflictError):
    """A result is accepted only for a task step in review (not a poll, timer, signal or
    composite, nor a step that is not in review)."""

    code = "step_not_acceptable"


class OutputContractError(ValidationError):
    """A reviewed output breaks the step's output contract (422, like a handler's would)."""

    code = "output_contract_violated"


__all__ = [
    "AlreadyCancellingError",
    "AlreadyPausedError",
    "CancelRequestedError",
    "ControlVersionConflictError",
    "DeadlinePassedError",
    "EffectPresentError",
    "EffectUnknownError",
    "EvidenceRequiredError",
    "NoActiveWorkError",
    "NotInReviewError",
    "NotPausedError",
    "OperationConflictError",
    "OutputContractError",
    "ReviewBlockedError",
    "StateVersionConflictError",
    "StepNotAcceptableError",
    "StepNotFoundError",
    "StepNotInReviewError",
    "StepNotRecoverableError",
    "StepOwnershipError",
    "StepSucceededError",
    "WorkUnsettledError",
    "WorkflowSettledError",
]
