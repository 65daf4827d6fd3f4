"""Workflow instances as the SDK sees them: typed answers, handles and outcome errors.

``client.start(...)`` returns a :class:`WorkflowHandle` (``AsyncClient.start`` an
:class:`AsyncWorkflowHandle`) bound to one ``workflow_id``: ``describe()`` reads the
instance with its steps, activations, tasks and pending work; ``history()`` reads every
transition in revision order; ``result(timeout=...)`` polls ``describe()`` with a growing
interval until the instance settles and returns its output, or raises a
:class:`WorkflowError` subclass carrying the last view it read.

The models mirror the server's JSON (``GET /v1/namespaces/{ns}/workflows/{id}`` and
friends) field by field. Inputs, outputs and results are kept as parsed by
``weave_sdk.loads``: integers are ``int``, other numbers ``Decimal``, never ``float``.
Unknown members are ignored, so a newer server may add fields.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from pydantic import BaseModel, ConfigDict

from weave_sdk.outcomes import (
    WorkflowCancelledError,
    WorkflowError,
    WorkflowFailedError,
    WorkflowNeedsReviewError,
    WorkflowTimeoutError,
)
from weave_sdk.results import Clock, wait_for_result, wait_for_result_async
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

if TYPE_CHECKING:  # the clients import this module; a runtime import would be circular
    from weave_sdk.client import AsyncClient, Client
    from weave_sdk.controls import ReviewResult
    from weave_sdk.signals import SignalAcceptance

DEFAULT_POLL_INITIAL: Final = 0.01
"""Seconds ``result()`` waits after its first read before reading again."""
DEFAULT_POLL_MAX: Final = 1.0
"""The longest interval ``result()`` lets its polling grow to (it grows by half per read)."""


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


# --- handles ---------------------------------------------------------------------------


class WorkflowHandle:
    """A started (or looked-up) instance, read through a blocking :class:`Client`.

    :param client: the client to read with.
    :param workflow_id: the instance id.
    :param started: the instance as the start call returned it (``None`` for a handle made
        by ``client.get_workflow_handle``).
    :param created: ``True`` when the start call created the instance (HTTP 201),
        ``False`` when it returned the original of the idempotency key (HTTP 200).
    """

    def __init__(
        self,
        client: Client,
        workflow_id: str,
        *,
        started: WorkflowExecution | None = None,
        created: bool | None = None,
    ) -> None:
        self._client = client
        self.workflow_id = workflow_id
        self.started = started
        self.created = created

    def __repr__(self) -> str:
        return f"WorkflowHandle({self.workflow_id!r})"

    def describe(self) -> WorkflowDescription:
        """The instance now, with its steps, activations, tasks and pending work."""
        return self._client.get_workflow(self.workflow_id)

    def history(self) -> list[HistoryEvent]:
        """Every transition so far, in revision order (all pages)."""
        return self._client.history(self.workflow_id)

    def signal(self, name: str, *, correlation_key: str, payload: Any = None,
               signal_id: str | None = None, param_version: str = "1",
               evidence: Sequence[Any] = ()) -> SignalAcceptance:
        """Deliver a signal to this instance (``POST .../signals``, permission ``signal``).

        ``signal_id`` is the idempotency key: pass the same one when retrying (default: a
        fresh random id). Returns the acceptance (``created`` False for a replay);
        consumption shows later in ``describe()``. See docs/waits.md.
        """
        from weave_sdk.signals import send_signal

        return send_signal(self._client, self.workflow_id, name,
                           correlation_key=correlation_key, payload=payload,
                           signal_id=signal_id, param_version=param_version, evidence=evidence)

    # --- controls (docs/sdk.md "Controls", docs/operators-guide.md) ---------------------

    def pause(self, *, reason: str, expected_control_version: int | None = None,
              operation_id: str | None = None) -> WorkflowExecution:
        """Pause: close the execution gate (see :func:`weave_sdk.controls.pause`)."""
        from weave_sdk.controls import pause

        return pause(self._client, self.workflow_id, reason=reason,
                     expected_control_version=expected_control_version,
                     operation_id=operation_id)

    def resume(self, *, reason: str, expected_control_version: int | None = None,
               operation_id: str | None = None) -> WorkflowExecution:
        """Lift the pause only (see :func:`weave_sdk.controls.resume`)."""
        from weave_sdk.controls import resume

        return resume(self._client, self.workflow_id, reason=reason,
                      expected_control_version=expected_control_version,
                      operation_id=operation_id)

    def cancel(self, *, reason: str, expected_control_version: int | None = None,
               operation_id: str | None = None) -> WorkflowExecution:
        """Cancel: no new steps, running work collected (see :func:`weave_sdk.controls.cancel`)."""
        from weave_sdk.controls import cancel

        return cancel(self._client, self.workflow_id, reason=reason,
                      expected_control_version=expected_control_version,
                      operation_id=operation_id)

    def review(self, action: str, *, reason: str, step_id: str | None = None,
               expected_state_version: int | None = None, conclusion: str | None = None,
               evidence: dict[str, Any] | None = None, outcome: str | None = None,
               operation_id: str | None = None) -> ReviewResult:
        """One review action as given (see :func:`weave_sdk.controls.review`)."""
        from weave_sdk.controls import review

        return review(self._client, self.workflow_id, action, reason=reason, step_id=step_id,
                      expected_state_version=expected_state_version, conclusion=conclusion,
                      evidence=evidence, outcome=outcome, operation_id=operation_id)

    def conclude(self, step_id: str, conclusion: str, *, reason: str,
                 evidence: dict[str, Any] | None = None,
                 expected_state_version: int | None = None,
                 operation_id: str | None = None) -> ReviewResult:
        """Record a conclusion on a step (see :func:`weave_sdk.controls.conclude`)."""
        from weave_sdk.controls import conclude

        return conclude(self._client, self.workflow_id, step_id, conclusion, reason=reason,
                        evidence=evidence, expected_state_version=expected_state_version,
                        operation_id=operation_id)

    def resolve(self, *, reason: str, outcome: str = "continue",
                operation_id: str | None = None) -> ReviewResult:
        """End the review (see :func:`weave_sdk.controls.resolve`)."""
        from weave_sdk.controls import resolve

        return resolve(self._client, self.workflow_id, reason=reason, outcome=outcome,
                       operation_id=operation_id)

    def recover(self, step_id: str, *, reason: str, expected_state_version: int | None = None,
                conclusion: str | None = None, evidence: dict[str, Any] | None = None,
                operation_id: str | None = None) -> ReviewResult:
        """Re-run a step under a new activation (see :func:`weave_sdk.controls.recover`)."""
        from weave_sdk.controls import recover

        return recover(self._client, self.workflow_id, step_id, reason=reason,
                       expected_state_version=expected_state_version, conclusion=conclusion,
                       evidence=evidence, operation_id=operation_id)

    def accept(self, step_id: str, output: Any, *, reason: str, evidence: dict[str, Any],
               expected_state_version: int | None = None,
               operation_id: str | None = None) -> ReviewResult:
        """Submit a reviewed result for a step whose effect is confirmed present (see
        :func:`weave_sdk.controls.accept`)."""
        from weave_sdk.controls import accept

        return accept(self._client, self.workflow_id, step_id, output, reason=reason,
                      evidence=evidence, expected_state_version=expected_state_version,
                      operation_id=operation_id)

    def result(
        self,
        timeout: float | None = None,
        *,
        poll_initial: float = DEFAULT_POLL_INITIAL,
        poll_max: float = DEFAULT_POLL_MAX,
    ) -> Any:
        """Wait until the instance settles and return its output.

        Long-polls ``GET .../workflows/{id}/result`` (at most 30 s per request), which
        answers as soon as the instance is done; an unsuccessful end reads ``describe()``
        once for the error. Against a server without that route it reads ``describe()``
        at once, then after ``poll_initial`` seconds, the interval growing by half per read
        up to ``poll_max``.

        :param timeout: seconds to wait; ``None`` waits for ever.
        :raises WorkflowFailedError: the instance ended ``FAILED``.
        :raises WorkflowCancelledError: the instance ended ``CANCELLED``.
        :raises WorkflowNeedsReviewError: the instance is in ``NEEDS_REVIEW``.
        :raises WorkflowTimeoutError: still running after ``timeout`` seconds.

        Each error carries the last view read as ``.workflow`` and says why: ``step_id``,
        ``handler``, ``attempts_used``, ``error_type``, ``error_message``, ``review_reason``.
        """
        return wait_for_result(self, Clock(timeout, poll_initial, poll_max))


class AsyncWorkflowHandle:
    """:class:`WorkflowHandle` for :class:`AsyncClient`: the same methods, awaited."""

    def __init__(
        self,
        client: AsyncClient,
        workflow_id: str,
        *,
        started: WorkflowExecution | None = None,
        created: bool | None = None,
    ) -> None:
        self._client = client
        self.workflow_id = workflow_id
        self.started = started
        self.created = created

    def __repr__(self) -> str:
        return f"AsyncWorkflowHandle({self.workflow_id!r})"

    async def describe(self) -> WorkflowDescription:
        """See :meth:`WorkflowHandle.describe`."""
        return await self._client.get_workflow(self.workflow_id)

    async def history(self) -> list[HistoryEvent]:
        """See :meth:`WorkflowHandle.history`."""
        return await self._client.history(self.workflow_id)

    async def signal(self, name: str, *, correlation_key: str, payload: Any = None,
                     signal_id: str | None = None, param_version: str = "1",
                     evidence: Sequence[Any] = ()) -> SignalAcceptance:
        """See :meth:`WorkflowHandle.signal`."""
        from weave_sdk.signals import send_signal_async

        return await send_signal_async(self._client, self.workflow_id, name,
                                       correlation_key=correlation_key, payload=payload,
                                       signal_id=signal_id, param_version=param_version,
                                       evidence=evidence)

    async def pause(self, *, reason: str, expected_control_version: int | None = None,
                    operation_id: str | None = None) -> WorkflowExecution:
        """See :meth:`WorkflowHandle.pause`."""
        from weave_sdk.controls import pause_async

        return await pause_async(self._client, self.workflow_id, reason=reason,
                                 expected_control_version=expected_control_version,
                                 operation_id=operation_id)

    async def resume(self, *, reason: str, expected_control_version: int | None = None,
                     operation_id: str | None = None) -> WorkflowExecution:
        """See :meth:`WorkflowHandle.resume`."""
        from weave_sdk.controls import resume_async

        return await resume_async(self._client, self.workflow_id, reason=reason,
                                  expected_control_version=expected_control_version,
                                  operation_id=operation_id)

    async def cancel(self, *, reason: str, expected_control_version: int | None = None,
                     operation_id: str | None = None) -> WorkflowExecution:
        """See :meth:`WorkflowHandle.cancel`."""
        from weave_sdk.controls import cancel_async

        return await cancel_async(self._client, self.workflow_id, reason=reason,
                                  expected_control_version=expected_control_version,
                                  operation_id=operation_id)

    async def review(self, action: str, *, reason: str, step_id: str | None = None,
                     expected_state_version: int | None = None, conclusion: str | None = None,
                     evidence: dict[str, Any] | None = None, outcome: str | None = None,
                     operation_id: str | None = None) -> ReviewResult:
        """See :meth:`WorkflowHandle.review`."""
        from weave_sdk.controls import review_async

        return await review_async(self._client, self.workflow_id, action, reason=reason,
                                  step_id=step_id, expected_state_version=expected_state_version,
                                  conclusion=conclusion, evidence=evidence, outcome=outcome,
                                  operation_id=operation_id)

    async def conclude(self, step_id: str, conclusion: str, *, reason: str,
                       evidence: dict[str, Any] | None = None,
                       expected_state_version: int | None = None,
                       operation_id: str | None = None) -> ReviewResult:
        """See :meth:`WorkflowHandle.conclude`."""
        from weave_sdk.controls import conclude_async

        return await conclude_async(self._client, self.workflow_id, step_id, conclusion,
                                    reason=reason, evidence=evidence,
                                    expected_state_version=expected_state_version,
                                    operation_id=operation_id)

    async def resolve(self, *, reason: str, outcome: str = "continue",
                      operation_id: str | None = None) -> ReviewResult:
        """See :meth:`WorkflowHandle.resolve`."""
        from weave_sdk.controls import resolve_async

        return await resolve_async(self._client, self.workflow_id, reason=reason,
                                   outcome=outcome, operation_id=operation_id)

    async def recover(self, step_id: str, *, reason: str,
                      expected_state_version: int | None = None, conclusion: str | None = None,
                      evidence: dict[str, Any] | None = None,
                      operation_id: str | None = None) -> ReviewResult:
        """See :meth:`WorkflowHandle.recover`."""
        from weave_sdk.controls import recover_async

        return await recover_async(self._client, self.workflow_id, step_id, reason=reason,
                                   expected_state_version=expected_state_version,
                                   conclusion=conclusion, evidence=evidence,
                                   operation_id=operation_id)

    async def accept(self, step_id: str, output: Any, *, reason: str, evidence: dict[str, Any],
                     expected_state_version: int | None = None,
                     operation_id: str | None = None) -> ReviewResult:
        """See :meth:`WorkflowHandle.accept`."""
        from weave_sdk.controls import accept_async

        return await accept_async(self._client, self.workflow_id, step_id, output,
                                  reason=reason, evidence=evidence,
                                  expected_state_version=expected_state_version,
                                  operation_id=operation_id)

    async def result(
        self,
        timeout: float | None = None,
        *,
        poll_initial: float = DEFAULT_POLL_INITIAL,
        poll_max: float = DEFAULT_POLL_MAX,
    ) -> Any:
        """See :meth:`WorkflowHandle.result`."""
        return await wait_for_result_async(self, Clock(timeout, poll_initial, poll_max))


__all__ = [
    "DEFAULT_POLL_INITIAL",
    "DEFAULT_POLL_MAX",
    "ActivationInfo",
    "AsyncWorkflowHandle",
    "AuditInfo",
    "HistoryEvent",
    "HistoryPage",
    "OperationInfo",
    "PendingAdvance",
    "PollRoundInfo",
    "SignalInfo",
    "StepInfo",
    "TaskInfo",
    "WaitInfo",
    "WorkflowCancelledError",
    "WorkflowDescription",
    "WorkflowError",
    "WorkflowExecution",
    "WorkflowFailedError",
    "WorkflowHandle",
    "WorkflowNeedsReviewError",
    "WorkflowPage",
    "WorkflowStatus",
    "WorkflowTimeoutError",
]
