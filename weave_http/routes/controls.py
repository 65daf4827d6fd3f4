"""Control and review routes (DESIGN.md §10): pause, resume, cancel (permission
``control``) and review (permission ``review``). See docs/operators-guide.md.

Every operation carries a stable ``operation_id``: a repeat returns the first outcome (200,
the same body). Refusals are 409 with a stable code (``control_version_conflict``,
``state_version_conflict``, ``evidence_required``, ...), 404 for an unknown instance or
step, 422 for a malformed request.
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from weave_core.access.identity import Permission
from weave_core.engine import Engine
from weave_core.foundation.errors import Problem, ValidationError
from weave_core.runtime.controls import (
    AcceptRequest,
    ConcludeRequest,
    ControlRequest,
    OperationOutcome,
    RecoverRequest,
    ResolveRequest,
    accept,
    cancel,
    conclude,
    pause,
    recover,
    resolve,
    resume,
)
from weave_http.body import read_json, validate_model
from weave_http.models import (
    ControlRequestModel,
    ReviewRequestModel,
    ReviewResponse,
    WorkflowModel,
    json_response,
)
from weave_http.routes import ApiRoute, Context, Endpoint

WORKFLOW = "/v1/namespaces/{ns}/workflows/{workflow_id}"

Control = Callable[..., OperationOutcome]


def _control(fn: Control) -> Endpoint:
    async def endpoint(request: Request, ctx: Context) -> Response:
        principal, namespace = ctx.require_principal()
        engine: Engine = ctx.engine
        body = validate_model(ControlRequestModel, await read_json(request, engine.limits))
        outcome = await run_in_threadpool(
            fn, engine, namespace, str(request.path_params["workflow_id"]),
            ControlRequest(body.expected_control_version, body.operation_id, body.reason),
            actor=principal.actor,
        )
        return json_response(WorkflowModel(**outcome.body))

    return endpoint


def _missing(body: ReviewRequestModel, *names: str) -> None:
    problems = [Problem(f"$.{n}", "required", f"{body.action} needs {n}")
                for n in names if getattr(body, n) is None]
    if problems:
        raise ValidationError(f"invalid {body.action} request", problems)


async def review(request: Request, ctx: Context) -> Response:
    principal, namespace = ctx.require_principal()
    engine = ctx.engine
    body = validate_model(ReviewRequestModel, await read_json(request, engine.limits))
    workflow_id = str(request.path_params["workflow_id"])
    actor = principal.actor

    def _run() -> OperationOutcome:
        if body.action == "conclude":
            _missing(body, "step_id", "conclusion")
            assert body.step_id is not None and body.conclusion is not None
            return conclude(engine, namespace, workflow_id, ConcludeRequest(
                body.operation_id, body.reason, body.step_id, body.conclusion,
                body.evidence, body.expected_state_version), actor=actor)
        if body.action == "recover":
            _missing(body, "step_id", "expected_state_version")
            assert body.step_id is not None and body.expected_state_version is not None
            return recover(engine, namespace, workflow_id, RecoverRequest(
                body.operation_id, body.reason, body.step_id, body.expected_state_version,
                body.conclusion, body.evidence), actor=actor)
        if body.action == "accept":
            _missing(body, "step_id", "expected_state_version")
            if "output" not in body.model_fields_set:
                raise ValidationError("invalid accept request", [
                    Problem("$.output", "required", "accept needs output")])
            assert body.step_id is not None and body.expected_state_version is not None
            return accept(engine, namespace, workflow_id, AcceptRequest(
                body.operation_id, body.reason, body.step_id, body.expected_state_version,
                body.output, body.evidence), actor=actor)
        return resolve(engine, namespace, workflow_id,
                       ResolveRequest(body.operation_id, body.reason, body.outcome),
                       actor=actor)

    outcome = await run_in_threadpool(_run)
    return json_response(ReviewResponse(**outcome.body))


_TAGS = ("controls",)
_ERRORS = (400, 409, 413, 415, 422)

def _control_route(name: str, fn: Control, summary: str) -> ApiRoute:
    return ApiRoute(
        method="POST", path=f"{WORKFLOW}/{name}", endpoint=_control(fn),
        operation_id=f"{name}Workflow", summary=summary, permission=Permission.CONTROL,
        request_model=ControlRequestModel,
        responses={200: (WorkflowModel, "the instance after the operation (or the first "
                                        "outcome of this operation_id)")},
        errors=_ERRORS, tags=_TAGS,
    )


API_ROUTES: tuple[ApiRoute, ...] = (
    _control_route("pause", pause,
                   "Pause: close the execution gate; results keep being saved"),
    _control_route("resume", resume, "Resume: lift the pause only (review and cancel stay)"),
    _control_route("cancel", cancel,
                   "Cancel: stop new steps, ask active tasks to cancel, collect results"),
    ApiRoute(
        method="POST", path=f"{WORKFLOW}/review", endpoint=review,
        operation_id="reviewWorkflow",
        summary="Review: conclude on a step, resolve the review, recover a step, or "
        "accept a reviewed result",
        permission=Permission.REVIEW, request_model=ReviewRequestModel,
        responses={200: (ReviewResponse, "the instance and the operation as recorded")},
        errors=_ERRORS, tags=_TAGS,
    ),
)

__all__ = ["API_ROUTES"]
