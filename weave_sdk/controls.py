"""Operator controls for the SDK: pause, resume, cancel and review of one instance.

Each function takes a :class:`~weave_sdk.client.Client`; the ``*_async`` twins take an
:class:`~weave_sdk.client.AsyncClient`. :class:`~weave_sdk.WorkflowHandle` and
:class:`~weave_sdk.AsyncWorkflowHandle` methods of the same names call them.

``expected_control_version=None`` reads the instance first and uses its current
``control_version`` (``expected_state_version=None`` the step's current ``version``);
pass the version you decided on to make a stale decision fail with 409
``control_version_conflict`` / ``state_version_conflict``. ``operation_id=None`` makes a
fresh uuid4; pass your own to retry safely: a repeat returns the first outcome. Refusals
raise :class:`~weave_sdk.errors.WeaveAPIError` with the server's stable ``code``
(``evidence_required``, ``review_blocked``, ...; see docs/operators-guide.md).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from weave_sdk._answers import _expect
from weave_sdk._calls import _Call, _segment
from weave_sdk.workflows import WorkflowExecution, _Model

if TYPE_CHECKING:
    from weave_sdk.client import AsyncClient, Client


class ReviewResult(_Model):
    """What a review action returns: the instance after it, and the recorded operation
    (``operation_id``, ``kind``, ``actor``, ``reason``, ``step_id``, ``activation_id``,
    ``new_activation_id``, ``conclusion``, ``evidence``, ...)."""

    workflow: WorkflowExecution
    operation: dict[str, Any]


def _body(payload: dict[str, Any]) -> bytes:
    from weave_sdk import dumps

    return dumps({k: v for k, v in payload.items() if v is not None}).encode()


def _path(namespace_path: str, workflow_id: str, action: str) -> str:
    return f"{namespace_path}/workflows/{_segment(workflow_id, 'workflow_id')}/{action}"


def _control_call(namespace_path: str, action: str, workflow_id: str, *, reason: str,
                  expected_control_version: int,
                  operation_id: str | None) -> _Call[WorkflowExecution]:
    content = _body({"expected_control_version": expected_control_version,
                     "operation_id": operation_id or str(uuid.uuid4()), "reason": reason})
    return _Call("POST", _path(namespace_path, workflow_id, action),
                 lambda r: WorkflowExecution.model_validate(_expect(r, 200)), content)


_NO_OUTPUT: Any = object()
"""No ``output`` member at all (``None`` is the JSON ``null`` output)."""


def _review_call(namespace_path: str, workflow_id: str, action: str, *, reason: str,
                 step_id: str | None, expected_state_version: int | None,
                 conclusion: str | None, evidence: dict[str, Any] | None,
                 outcome: str | None, operation_id: str | None,
                 output: Any = _NO_OUTPUT) -> _Call[ReviewResult]:
    from weave_sdk import dumps

    payload = {k: v for k, v in {
        "action": action, "operation_id": operation_id or str(uuid.uuid4()),
        "reason": reason, "step_id": step_id, "expected_state_version": expected_state_version,
        "conclusion": conclusion, "evidence": evidence, "outcome": outcome}.items()
        if v is not None}
    if output is not _NO_OUTPUT:
        payload["output"] = output
    content = dumps(payload).encode()
    return _Call("POST", _path(namespace_path, workflow_id, "review"),
                 lambda r: ReviewResult.model_validate(_expect(r, 200)), content)


# --- blocking -------------------------------------------------------------------------


def _control(client: Client, action: str, workflow_id: str, *, reason: str,
             expected_control_version: int | None, operation_id: str | None) -> WorkflowExecution:
    if expected_control_version is None:
        expected_control_version = client.get_workflow(workflow_id).control_version
    return client._run(_control_call(
        client._settings.ns_path(""), action, workflow_id, reason=reason,
        expected_control_version=expected_control_version, operation_id=operation_id))


def pause(client: Client, workflow_id: str, *, reason: str,
          expected_control_version: int | None = None,
          operation_id: str | None = None) -> WorkflowExecution:
    """Close the instance's execution gate (``POST …/pause``, permission ``control``)."""
    return _control(client, "pause", workflow_id, reason=reason,
                    expected_control_version=expected_control_version,
                    operation_id=operation_id)


def resume(client: Client, workflow_id: str, *, reason: str,
           expected_control_version: int | None = None,
           operation_id: str | None = None) -> WorkflowExecution:
    """Lift the pause only (``POST …/resume``): review and cancel stay."""
    return _control(client, "resume", workflow_id, reason=reason,
                    expected_control_version=expected_control_version,
                    operation_id=operation_id)


def cancel(client: Client, workflow_id: str, *, reason: str,
           expected_control_version: int | None = None,
           operation_id: str | None = None) -> WorkflowExecution:
    """Stop new steps, ask active tasks to cancel, collect (``POST …/cancel``);
    ``CANCELLING`` until everything started has settled."""
    return _control(client, "cancel", workflow_id, reason=reason,
                    expected_control_version=expected_control_version,
                    operation_id=operation_id)


def review(client: Client, workflow_id: str, action: str, *, reason: str,
           step_id: str | None = None, expected_state_version: int | None = None,
           conclusion: str | None = None, evidence: dict[str, Any] | None = None,
           outcome: str | None = None, operation_id: str | None = None) -> ReviewResult:
    """One review action (``POST …/review``, permission ``review``): ``conclude``,
    ``resolve`` or ``recover``, sent as given."""
    return client._run(_review_call(
        client._settings.ns_path(""), workflow_id, action, reason=reason, step_id=step_id,
        expected_state_version=expected_state_version, conclusion=conclusion,
        evidence=evidence, outcome=outcome, operation_id=operation_id))


def conclude(client: Client, workflow_id: str, step_id: str, conclusion: str, *, reason: str,
             evidence: dict[str, Any] | None = None, expected_state_version: int | None = None,
             operation_id: str | None = None) -> ReviewResult:
    """Record a conclusion on a step's side effect: ``effect_confirmed_absent``,
    ``retry_safe``, ``effect_confirmed_present`` (each with ``evidence``) or
    ``effect_unknown``."""
    return review(client, workflow_id, "conclude", reason=reason, step_id=step_id,
                  expected_state_version=expected_state_version, conclusion=conclusion,
                  evidence=evidence, operation_id=operation_id)


def resolve(client: Client, workflow_id: str, *, reason: str, outcome: str = "continue",
            operation_id: str | None = None) -> ReviewResult:
    """End the review: ``continue`` (nothing may block), ``failed`` or ``cancelled``
    (everything settled, every unknown effect concluded)."""
    return review(client, workflow_id, "resolve", reason=reason, outcome=outcome,
                  operation_id=operation_id)


def recover(client: Client, workflow_id: str, step_id: str, *, reason: str,
            expected_state_version: int | None = None, conclusion: str | None = None,
            evidence: dict[str, Any] | None = None,
            operation_id: str | None = None) -> ReviewResult:
    """Re-run a step under a new activation; ``expected_state_version=None`` reads the
    step's current version first."""
    if expected_state_version is None:
        expected_state_version = client.get_workflow(workflow_id).step(step_id).version
    return review(client, workflow_id, "recover", reason=reason, step_id=step_id,
                  expected_state_version=expected_state_version, conclusion=conclusion,
                  evidence=evidence, operation_id=operation_id)


def accept(client: Client, workflow_id: str, step_id: str, output: Any, *, reason: str,
           evidence: dict[str, Any], expected_state_version: int | None = None,
           operation_id: str | None = None) -> ReviewResult:
    """Submit the output a reviewer observed for a task step in review whose effect is
    confirmed present (``action`` ``accept``, permission ``review``): checked against the
    step's output contract, recorded as a reviewed result with ``evidence``, and the
    workflow advances from it as from a task success. ``expected_state_version=None``
    reads the step's current version first."""
    if expected_state_version is None:
        expected_state_version = client.get_workflow(workflow_id).step(step_id).version
    return client._run(_review_call(
        client._settings.ns_path(""), workflow_id, "accept", reason=reason, step_id=step_id,
        expected_state_version=expected_state_version, conclusion=None, evidence=evidence,
        outcome=None, operation_id=operation_id, output=output))


# --- async ----------------------------------------------------------------------------


async def _control_async(client: AsyncClient, action: str, workflow_id: str, *, reason: str,
                         expected_control_version: int | None,
                         operation_id: str | None) -> WorkflowExecution:
    if expected_control_version is None:
        expected_control_version = (await client.get_workflow(workflow_id)).control_version
    return await client._run(_control_call(
        client._settings.ns_path(""), action, workflow_id, reason=reason,
        expected_control_version=expected_control_version, operation_id=operation_id))


async def pause_async(client: AsyncClient, workflow_id: str, *, reason: str,
                      expected_control_version: int | None = None,
                      operation_id: str | None = None) -> WorkflowExecution:
    """:func:`pause` for the ``AsyncClient``."""
    return await _control_async(client, "pause", workflow_id, reason=reason,
                                expected_control_version=expected_control_version,
                                operation_id=operation_id)


async def resume_async(client: AsyncClient, workflow_id: str, *, reason: str,
                       expected_control_version: int | None = None,
                       operation_id: str | None = None) -> WorkflowExecution:
    """:func:`resume` for the ``AsyncClient``."""
    return await _control_async(client, "resume", workflow_id, reason=reason,
                                expected_control_version=expected_control_version,
                                operation_id=operation_id)


async def cancel_async(client: AsyncClient, workflow_id: str, *, reason: str,
                       expected_control_version: int | None = None,
                       operation_id: str | None = None) -> WorkflowExecution:
    """:func:`cancel` for the ``AsyncClient``."""
    return await _control_async(client, "cancel", workflow_id, reason=reason,
                                expected_control_version=expected_control_version,
                                operation_id=operation_id)


async def review_async(client: AsyncClient, workflow_id: str, action: str, *, reason: str,
                       step_id: str | None = None, expected_state_version: int | None = None,
                       conclusion: str | None = None, evidence: dict[str, Any] | None = None,
                       outcome: str | None = None,
                       operation_id: str | None = None) -> ReviewResult:
    """:func:`review` for the ``AsyncClient``."""
    return await client._run(_review_call(
        client._settings.ns_path(""), workflow_id, action, reason=reason, step_id=step_id,
        expected_state_version=expected_state_version, conclusion=conclusion,
        evidence=evidence, outcome=outcome, operation_id=operation_id))


async def conclude_async(client: AsyncClient, workflow_id: str, step_id: str, conclusion: str,
                         *, reason: str, evidence: dict[str, Any] | None = None,
                         expected_state_version: int | None = None,
                         operation_id: str | None = None) -> ReviewResult:
    """:func:`conclude` for the ``AsyncClient``."""
    return await review_async(client, workflow_id, "conclude", reason=reason, step_id=step_id,
                              expected_state_version=expected_state_version,
                              conclusion=conclusion, evidence=evidence,
                              operation_id=operation_id)


async def resolve_async(client: AsyncClient, workflow_id: str, *, reason: str,
                        outcome: str = "continue",
                        operation_id: str | None = None) -> ReviewResult:
    """:func:`resolve` for the ``AsyncClient``."""
    return await review_async(client, workflow_id, "resolve", reason=reason, outcome=outcome,
                              operation_id=operation_id)


async def recover_async(client: AsyncClient, workflow_id: str, step_id: str, *, reason: str,
                        expected_state_version: int | None = None,
                        conclusion: str | None = None, evidence: dict[str, Any] | None = None,
                        operation_id: str | None = None) -> ReviewResult:
    """:func:`recover` for the ``AsyncClient``."""
    if expected_state_version is None:
        view = await client.get_workflow(workflow_id)
        expected_state_version = view.step(step_id).version
    return await review_async(client, workflow_id, "recover", reason=reason, step_id=step_id,
                              expected_state_version=expected_state_version,
                              conclusion=conclusion, evidence=evidence,
                              operation_id=operation_id)


async def accept_async(client: AsyncClient, workflow_id: str, step_id: str, output: Any, *,
                       reason: str, evidence: dict[str, Any],
                       expected_state_version: int | None = None,
                       operation_id: str | None = None) -> ReviewResult:
    """:func:`accept` for the ``AsyncClient``."""
    if expected_state_version is None:
        view = await client.get_workflow(workflow_id)
        expected_state_version = view.step(step_id).version
    return await client._run(_review_call(
        client._settings.ns_path(""), workflow_id, "accept", reason=reason, step_id=step_id,
        expected_state_version=expected_state_version, conclusion=None, evidence=evidence,
        outcome=None, operation_id=operation_id, output=output))


__all__ = [
    "ReviewResult",
    "accept",
    "accept_async",
    "cancel",
    "cancel_async",
    "conclude",
    "conclude_async",
    "pause",
    "pause_async",
    "recover",
    "recover_async",
    "resolve",
    "resolve_async",
    "resume",
    "resume_async",
    "review",
    "review_async",
]
