"""How ``result()`` ends when the instance does not succeed: errors that say why.

Each error carries the last description read as ``.workflow`` and, as typed attributes,
what a person needs first: the step that failed (``step_id``), the handler it ran, the
attempts it used, the task error's type and message, and the review reason. They are read
from the description (the step in ``FAILED`` or ``NEEDS_REVIEW``, and its latest task).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from weave_sdk.errors import WeaveSDKError
from weave_sdk.views import WorkflowStatus

if TYPE_CHECKING:
    from weave_sdk.workflows import TaskInfo, WorkflowDescription

_FAILING_PHASES: Final = ("FAILED", "NEEDS_REVIEW")


@dataclass(frozen=True)
class Failure:
    """Why an instance did not succeed, as far as its description tells."""

    step_id: str | None = None
    step_reason: str | None = None
    handler: str | None = None
    handler_version: str | None = None
    attempts_used: int | None = None
    max_attempts: int | None = None
    error_type: str | None = None
    error_message: str | None = None

    def describe(self) -> str:
        """One line for people: ``step 'charge' (handler charge@1, 3/3 attempts): ...``."""
        if self.step_id is None:
            return ""
        parts = [f"step {self.step_id!r}"]
        inner = []
        if self.handler is not None:
            inner.append(f"handler {self.handler}@{self.handler_version}")
        if self.attempts_used is not None:
            inner.append(f"{self.attempts_used}/{self.max_attempts} attempt(s)")
        if inner:
            parts.append(f"({', '.join(inner)})")
        if self.error_type is not None or self.error_message is not None:
            parts.append(f"failed with {self.error_type or 'error'}: {self.error_message or ''}")
        elif self.step_reason is not None:
            parts.append(f"ended with {self.step_reason}")
        return " ".join(parts).rstrip()


def _latest_task(view: WorkflowDescription, step_id: str) -> TaskInfo | None:
    tasks = [t for t in view.tasks if t.step_id == step_id]
    return max(tasks, key=lambda t: (t.created_at, t.task_id)) if tasks else None


def failure_of(view: WorkflowDescription) -> Failure:
    """The failing step of ``view`` with its task's handler, attempts and error."""
    blocking = [b.get("step_id") for b in (view.review or {}).get("blocking_steps") or []]
    failing = [s for s in view.steps if s.phase in _FAILING_PHASES]
    with_task = [s for s in failing if _latest_task(view, s.step_id) is not None]
    ranked = [s for s in failing if s.step_id in blocking] or with_task or failing
    if not ranked:
        return Failure()
    step = max(ranked, key=lambda s: s.updated_at)
    task = _latest_task(view, step.step_id)
    if task is None:
        return Failure(step.step_id, step.reason)
    error: Any = task.error if isinstance(task.error, dict) else {}
    message = error.get("message")
    return Failure(step.step_id, step.reason, task.handler, task.handler_version,
                   task.attempts_used, task.max_attempts,
                   error.get("type") if isinstance(error.get("type"), str) else None,
                   message if isinstance(message, str) else None)


class WorkflowError(WeaveSDKError):
    """``result()`` did not end in ``SUCCEEDED``; ``workflow`` is the last view read.

    :param workflow: the instance as last read (status, review reason, steps, tasks...).
    :param failure: the failing step and its task's error (read from ``workflow``).

    ``step_id``, ``handler``, ``handler_version``, ``attempts_used``, ``max_attempts``,
    ``error_type``, ``error_message`` and ``review_reason`` are ``None`` when unknown.
    """

    def __init__(self, message: str, workflow: WorkflowDescription,
                 failure: Failure | None = None) -> None:
        super().__init__(message)
        self.workflow = workflow
        self.failure = failure if failure is not None else Failure()
        f = self.failure
        self.step_id = f.step_id
        self.handler = f.handler
        self.handler_version = f.handler_version
        self.attempts_used = f.attempts_used
        self.max_attempts = f.max_attempts
        self.error_type = f.error_type
        self.error_message = f.error_message

    @property
    def workflow_id(self) -> str:
        return self.workflow.workflow_id

    @property
    def status(self) -> WorkflowStatus:
        return self.workflow.status

    @property
    def review_reason(self) -> str | None:
        """Why the instance is (or was) in review (``task_failed``...), else ``None``."""
        return self.workflow.review_reason


class WorkflowFailedError(WorkflowError):
    """The instance ended ``FAILED`` (failure policy ``FAIL_AFTER_SETTLED``)."""


class WorkflowCancelledError(WorkflowError):
    """The instance ended ``CANCELLED``."""


class WorkflowNeedsReviewError(WorkflowError):
    """The instance is in ``NEEDS_REVIEW``: it moves again only after a reviewer acts."""


class WorkflowTimeoutError(WorkflowError, TimeoutError):
    """``result(timeout=...)`` ran out of time; the instance may still finish later.

    :param timeout: the seconds waited.
    """

    def __init__(self, message: str, workflow: WorkflowDescription, timeout: float) -> None:
        super().__init__(message, workflow)
        self.timeout = timeout


_UNSUCCESSFUL: Final[dict[WorkflowStatus, type[WorkflowError]]] = {
    WorkflowStatus.FAILED: WorkflowFailedError,
    WorkflowStatus.CANCELLED: WorkflowCancelledError,
    WorkflowStatus.NEEDS_REVIEW: WorkflowNeedsReviewError,
}


def outcome_error(view: WorkflowDescription) -> WorkflowError | None:
    """The error for an unsuccessful settled ``view``; ``None`` while it may still succeed."""
    error = _UNSUCCESSFUL.get(view.status)
    if error is None:
        return None
    failure = failure_of(view) if error is not WorkflowCancelledError else Failure()
    text = f"workflow {view.workflow_id} is {view.status.value}"
    if view.review_reason:
        text += f" ({view.review_reason})"
    said = failure.describe()
    return error(f"{text}: {said}" if said else text, view, failure)


def timeout_error(view: WorkflowDescription, timeout: float) -> WorkflowTimeoutError:
    return WorkflowTimeoutError(
        f"workflow {view.workflow_id} is still {view.status.value} after {timeout:g} s",
        view, timeout)


__all__ = [
    "Failure",
    "WorkflowCancelledError",
    "WorkflowError",
    "WorkflowFailedError",
    "WorkflowNeedsReviewError",
    "WorkflowTimeoutError",
    "failure_of",
    "outcome_error",
    "timeout_error",
]
