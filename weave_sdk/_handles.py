"""Handles on workflow instances: ``WorkflowHandle`` and ``AsyncWorkflowHandle``.

A handle is bound to one ``workflow_id`` and reads and controls it through its client;
``weave_sdk.workflows`` exports both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from weave_sdk._workflow_models import HistoryEvent, WorkflowDescription, WorkflowExecution
from weave_sdk.results import Clock, wait_for_result, wait_for_result_async

if TYPE_CHECKING:  # the clients import this module; a runtime import would be circular
    from weave_sdk.client import AsyncClient, Client
    from weave_sdk.controls import ReviewResult
    from weave_sdk.signals import SignalAcceptance


DEFAULT_POLL_INITIAL: Final = 0.01
"""Seconds ``result()`` waits after its first read before reading again."""
DEFAULT_POLL_MAX: Final = 1.0
"""The longest interval ``result()`` lets its polling grow to (it grows by half per read)."""


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
