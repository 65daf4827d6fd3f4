"""Typed parts of an instance's description: its signals, waits, poll rounds, operations.

They mirror the members of ``GET …/workflows/{id}`` one for one (unknown members are
ignored, so a newer server may add fields). Each also reads like the JSON object it came
from (``op["kind"]`` is ``op.kind``), as the description's lists were plain dicts before.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Final

from pydantic import BaseModel, ConfigDict


class WorkflowStatus(StrEnum):
    """Where an instance is (DESIGN.md R-3.4); ``paused`` is a separate flag."""

    RUNNING = "RUNNING"
    WAITING = "WAITING"
    CANCELLING = "CANCELLING"
    NEEDS_REVIEW = "NEEDS_REVIEW"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"

    @property
    def terminal(self) -> bool:
        """``True`` for ``SUCCEEDED``, ``FAILED`` and ``CANCELLED``: they never move again."""
        return self in _TERMINAL


_TERMINAL: Final = frozenset(
    {WorkflowStatus.SUCCEEDED, WorkflowStatus.FAILED, WorkflowStatus.CANCELLED}
)


class _View(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    def __getitem__(self, key: str) -> Any:
        """The member ``key``, as in the JSON object (``KeyError`` when it has none)."""
        if key not in type(self).model_fields:
            raise KeyError(key)
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default) if key in type(self).model_fields else default


class SignalInfo(_View):
    """An accepted signal: ``ACCEPTED`` until a wait consumes it (``CONSUMED``), or
    ``LOST`` / ``EXPIRED`` with a ``reason``.

    ``target_activation_id`` is the open wait it matched on arrival (``None``: it arrived
    before any wait for its name and key, and waits to be matched).
    """

    signal_id: str
    workflow_id: str | None = None
    name: str
    correlation_key: str
    param_version: str = "1"
    payload: Any = None
    evidence: Any = None
    state: str
    accepted_by: str | None = None
    accepted_at: datetime | None = None
    expires_at: datetime | None = None
    target_activation_id: str | None = None
    consumed_by_activation_id: str | None = None
    settled_at: datetime | None = None
    reason: str | None = None


class WaitInfo(_View):
    """One wait record of a waiting activation (a signal, a timer or a poll).

    ``state`` is ``OPEN`` while it waits; ``winner`` says what ended it (the signal, the
    time, a round's result, the deadline...).
    """

    activation_id: str
    step_id: str
    kind: str
    state: str
    version: int = 0
    signal_name: str | None = None
    correlation_key: str | None = None
    param_version: str | None = None
    opened_at: datetime | None = None
    due_at: datetime | None = None
    deadline_at: datetime | None = None
    max_rounds: int | None = None
    interval_seconds: int | None = None
    current_round: int = 0
    next_round_at: datetime | None = None
    last_status: str | None = None
    last_result: Any = None
    winner: str | None = None
    winner_ref: str | None = None
    reason: str | None = None
    settled_at: datetime | None = None


class LateReport(_View):
    """A report of a round's task that came too late to count (an attempt authorised
    before the poll deadline that answered after it, or a superseded attempt): refused by
    the dispatch layer, kept with its content as evidence. It never clears a review."""

    attempt_id: str | None = None
    reason: str | None = None
    """``lease_expired`` or ``attempt_superseded``."""
    outcome: str | None = None
    output: Any = None
    error: Any = None
    report_hash: str | None = None
    reported_at: datetime | None = None


class PollRoundInfo(_View):
    """One round of a poll: its task, the status it read and how it was classified;
    ``late_reports`` keeps the answers of its attempts that came too late to count."""

    activation_id: str
    round: int
    task_id: str | None = None
    state: str
    status: str | None = None
    result: Any = None
    result_accepted_at: datetime | None = None
    classification: str | None = None
    created_at: datetime | None = None
    settled_at: datetime | None = None
    late_reports: list[LateReport] = []


class OperationInfo(_View):
    """A control or review operation: ``kind`` (``pause``, ``resume``, ``cancel``,
    ``review.conclude``, ...), ``actor`` (the operator) and its ``reason``."""

    operation_id: str
    kind: str
    actor: str
    reason: str | None = None
    expected_version: int | None = None
    step_id: str | None = None
    activation_id: str | None = None
    new_activation_id: str | None = None
    conclusion: str | None = None
    evidence: Any = None
    revision: int | None = None
    created_at: datetime | None = None


class AttemptInfo(_View):
    """One attempt of a task (``GET …/tasks/{id}/attempts``, and ``TaskInfo.attempts``).

    ``claimed_at`` equals ``started_at`` (a claim starts its attempt); ``reported_at`` is
    set when the worker's report ended it, ``None`` when the engine did (``outcome``
    ``lease_expired`` or ``deadline_exceeded``); ``error`` is what ended a failed one.
    """

    attempt_id: str
    attempt_no: int
    worker_id: str
    claimed_at: datetime
    started_at: datetime
    lease_expires_at: datetime
    close_by: datetime | None = None
    last_heartbeat_at: datetime | None = None
    ended_at: datetime | None = None
    reported_at: datetime | None = None
    outcome: str | None = None
    error: Any = None


class TaskEventInfo(_View):
    """One event of a task: ``task.created``, ``task.started``, ``task.retry_scheduled``,
    ``task.report_refused``, ``task.cancel_requested``, ``task.succeeded``, ... with the
    attempt it concerns and its payload (an error, a refusal's reason)."""

    id: int
    task_id: str
    revision: int
    event_type: str
    attempt_id: str | None = None
    occurred_at: datetime
    payload: Any = None


class WaitReasonInfo(_View):
    """Why pending work waits: ``reason`` ``handler_unavailable`` when no worker asked for
    the task's ``queue``, ``handler`` and ``handler_version`` within ``window_seconds``
    (``last_seen_at``: the last worker that did, ``None`` if none ever did)."""

    reason: str
    task_id: str
    step_id: str
    queue: str
    handler: str
    handler_version: str
    last_seen_at: datetime | None = None
    window_seconds: int | None = None


class HistoryTaskEvent(TaskEventInfo):
    """A task event an instance's history shows beside its transitions: ``kind`` is
    ``lease_expired`` (or ``deadline_exceeded``), ``retry_scheduled`` or
    ``report_refused``; ``step_id`` is the step whose task it is."""

    kind: str
    step_id: str


__all__ = ["AttemptInfo", "HistoryTaskEvent", "LateReport", "OperationInfo", "PollRoundInfo",
           "SignalInfo", "TaskEventInfo", "WaitInfo", "WaitReasonInfo", "WorkflowStatus"]
