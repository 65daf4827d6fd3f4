"""The typed answers about workflow instances: executions, descriptions, history pages.

They mirror the server's JSON field by field; ``weave_sdk.workflows`` exports them.
Unknown members are ignored, so a newer server may add fields.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from weave_sdk.views import (
    AttemptInfo,
    HistoryTaskEvent,
    OperationInfo,
    PollRoundInfo,
    SignalInfo,
    WaitInfo,
    WaitReasonInfo,
    WorkflowStatus,
)


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class WorkflowExecution(_Model):
    """One instance, as ``start`` and the list return it.

    :param workflow_id: the instance id (``wf_…``).
    :param namespace: its namespace.
    :param definition_id: the definition it runs.
    :param version: the pinned version (``latest`` resolved once, at start).
    :param status: see :class:`WorkflowStatus`.
    :param paused: the separate paused flag.
    :param control_version: pass back as ``expected_control_version`` to pause/resume/cancel.
    :param revision: rises by one with every history change.
    :param input: the start input, numbers exact.
    :param output: the output once ``SUCCEEDED`` (else ``None``).
    :param review_reason: why it is in review (``task_failed``, ``deadline_exceeded``...).
    :param failure_policy: ``REVIEW`` or ``FAIL_AFTER_SETTLED``, from the pinned version.
    :param deadline_at: the absolute instance deadline (database time, UTC).
    :param operation_type: with ``idempotency_key``, the idempotency identity of the start.
    :param idempotency_key: the key the instance was started with.
    :param created_by: the actor that started it (``token:…``).
    :param created_at: database time of the start.
    :param updated_at: database time of the last change.
    :param settled_at: when it reached a terminal status (else ``None``).
    """

    workflow_id: str
    namespace: str
    definition_id: str
    version: str
    status: WorkflowStatus
    paused: bool
    control_version: int
    revision: int
    input: Any = None
    output: Any = None
    review_reason: str | None = None
    failure_policy: str
    deadline_at: datetime
    operation_type: str
    idempotency_key: str
    created_by: str
    created_at: datetime
    updated_at: datetime
    settled_at: datetime | None = None


class StepInfo(_Model):
    """One step of an instance: its phase, state version and saved output."""

    step_id: str
    phase: str
    version: int
    output: Any = None
    decision: Any = None
    """What a composite chose when entered (e.g. a branch's case index)."""
    activation_id: str | None = None
    reason: str | None = None
    created_at: datetime
    updated_at: datetime


class ActivationInfo(_Model):
    """One activation of a step (recovery makes new ones and keeps the old)."""

    activation_id: str
    step_id: str
    kind: str
    state: str
    state_version: int
    task_id: str | None = None
    poll_round: int | None = None
    command: Any = None
    result_revision: int | None = None
    reason: str | None = None
    created_at: datetime
    settled_at: datetime | None = None


class TaskInfo(_Model):
    """A dispatch task created for one of the instance's activations (every poll round's
    task included, with its ``poll_round``), with every attempt it had."""

    task_id: str
    step_id: str
    activation_id: str | None = None
    queue: str
    handler: str
    handler_version: str
    status: str
    revision: int
    attempts_used: int
    max_attempts: int
    effect_unknown: bool
    result: Any = None
    error: Any = None
    deadline_at: datetime | None = None
    created_at: datetime
    updated_at: datetime
    poll_round: int | None = None
    attempts: list[AttemptInfo] = []
    wait_reason: str | None = None
    """``handler_unavailable`` while PENDING for a handler version no worker asks for."""
    handler_last_seen_at: datetime | None = None


class PendingAdvance(_Model):
    """Deferred work of the instance in the due index (checkpoint, timer, deadline...)."""

    id: int
    kind: str
    ref: str | None = None
    reason: str | None = None
    due_at: datetime


class WorkflowDescription(WorkflowExecution):
    """One instance with its steps, activations, tasks and pending work (``describe()``)."""

    steps: list[StepInfo] = []
    activations: list[ActivationInfo] = []
    tasks: list[TaskInfo] = []
    pending: list[PendingAdvance] = []
    operations: list[OperationInfo] = []
    """Control and review operations, oldest first: ``operation_id``, ``kind`` (``pause``,
    ``resume``, ``cancel``, ``review.conclude``, ...), ``actor`` (the operator), ``reason``,
    ``step_id``, ``activation_id``, ``new_activation_id``, ``conclusion``, ``evidence``."""
    signals: list[SignalInfo] = []
    """Accepted signals in acceptance order, with their state and the wait they matched."""
    waits: list[WaitInfo] = []
    """Wait records of signal, timer and poll activations (open and ended)."""
    poll_rounds: list[PollRoundInfo] = []
    """Every poll round: its task, the status read and its classification."""
    wait_reasons: list[WaitReasonInfo] = []
    """Why pending tasks wait (``handler_unavailable``: no worker serves the handler)."""
    cancel_requested: bool = False
    """A cancel was accepted (the instance may only end ``CANCELLED``)."""
    review: dict[str, Any] | None = None
    """``reason``, ``blocking_steps`` and ``unknown_effects`` (each with its
    ``conclusion``, or ``None``)."""
    config: dict[str, Any] | None = None
    """The effective configuration frozen when the instance was accepted: ``limits`` (every
    engine limit as it was), ``steps`` (per step, the values it took from defaults: retry
    policy, timeouts, parameter versions ...) and ``defaults`` (``failure_policy``,
    ``deadline_seconds``, ``lease_seconds``); ``None`` for an instance started before it
    was recorded."""

    def step(self, step_id: str) -> StepInfo:
        """The step ``step_id`` (``KeyError`` when it has no row yet)."""
        for step in self.steps:
            if step.step_id == step_id:
                return step
        raise KeyError(step_id)


class AuditInfo(_Model):
    """The audit entry written in the same transaction as a history event."""

    id: int
    namespace: str
    occurred_at: datetime
    actor: str
    action: str
    object_type: str
    object_id: str
    operation_id: str | None = None
    metadata: Any = None


class HistoryEvent(_Model):
    """One transition of an instance; ``revision`` orders the history."""

    revision: int
    occurred_at: datetime
    kind: str
    step_id: str | None = None
    activation_id: str | None = None
    from_state: str | None = None
    to_state: str | None = None
    reason: str | None = None
    details: Any = None
    operation_id: str | None = None
    audit_id: int | None = None
    audit: AuditInfo | None = None


class WorkflowPage(_Model):
    """One page of ``list_workflows_page``: newest first; ``next_cursor`` is ``None`` at the end."""

    items: list[WorkflowExecution]
    next_cursor: str | None = None


class HistoryPage(_Model):
    """One page of ``history_page``; pass ``next_cursor`` back as ``after``."""

    items: list[HistoryEvent]
    next_cursor: int | None = None
    task_events: list[HistoryTaskEvent] = []
    """The page's lease expiries, scheduled retries and refused reports of its tasks."""
