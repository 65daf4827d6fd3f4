"""The errors of the dispatch layer, each with a stable code (part of the one error tree).

HTTP statuses come from their base classes in ``weave_http.problems``: conflicts are 409,
capacity limits 429, missing objects 404.
"""

from __future__ import annotations

from weave_core.foundation.errors import ConflictError, LimitExceededError, NotFoundError


class QueueFullError(LimitExceededError):
    """The queue already holds as many outstanding tasks as its capacity allows."""

    code = "queue_full"


class QuotaExceededError(LimitExceededError):
    """The namespace already holds as many outstanding tasks as its quota allows."""

    code = "quota_exceeded"


class TaskNotFoundError(NotFoundError):
    """No such task in this namespace."""

    code = "task_not_found"


class GateNotFoundError(NotFoundError):
    """No such execution gate."""

    code = "gate_not_found"


class AttemptNotFoundError(NotFoundError):
    """The attempt id does not belong to this task."""

    code = "attempt_not_found"


class AttemptSupersededError(ConflictError):
    """The attempt no longer holds the task (its lease expired and the task moved on, or
    the task settled through another attempt). The report was recorded and changed nothing.
    """

    code = "attempt_superseded"


class LeaseExpiredError(ConflictError):
    """The attempt's lease expired before this call; the expiry has been applied."""

    code = "lease_expired"


class ReportConflictError(ConflictError):
    """This attempt already reported a different result; the first report stands."""

    code = "report_conflict"


class TaskOwnerUnverifiedError(ConflictError):
    """The activation that owns a workflow task cannot be verified; the result is refused
    and nothing is written (R-5.1). Needs the storage relation repaired, not a retry."""

    code = "task_owner_unverified"


class TaskNotCancellableError(ConflictError):
    """The task is already settled."""

    code = "task_not_cancellable"


__all__ = [
    "AttemptNotFoundError",
    "AttemptSupersededError",
    "GateNotFoundError",
    "LeaseExpiredError",
    "QueueFullError",
    "QuotaExceededError",
    "ReportConflictError",
    "TaskNotCancellableError",
    "TaskNotFoundError",
    "TaskOwnerUnverifiedError",
]
