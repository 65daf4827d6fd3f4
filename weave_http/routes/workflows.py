"""Workflow routes (DESIGN.md §10): start, list, one instance, its history.

Every database call runs in the thread pool, so the event loop never waits on the database.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from weave_core.errors import Problem, ValidationError
from weave_core.identity import Permission
from weave_core.runtime import InstanceStatus, StartRequest, start_workflow
from weave_core.runtime.admission import DEFAULT_OPERATION_TYPE
from weave_core.runtime.outcomes import MAX_WAIT_S, wait_outcome
from weave_core.runtime.reads import (
    DEFAULT_LIST_LIMIT,
    ListFilter,
    describe_instance,
    list_instances,
    read_history,
)
from weave_http.body import read_json, validate_model
from weave_http.models import (
    StartWorkflowRequest,
    WorkflowDetail,
    WorkflowHistory,
    WorkflowList,
    WorkflowModel,
    WorkflowResult,
    json_response,
)
from weave_http.routes import ApiRoute, Context, QueryParam

WORKFLOWS = "/v1/namespaces/{ns}/workflows"
WORKFLOW = WORKFLOWS + "/{workflow_id}"
HISTORY = WORKFLOW + "/history"
RESULT = WORKFLOW + "/result"


def _bad_query(name: str, message: str) -> ValidationError:
    return ValidationError(f"invalid query parameter {name!r}",
                           [Problem(f"$.{name}", "invalid_query", message)])


def utc_time(raw: str) -> datetime:
    """An ISO 8601 / RFC 3339 time as naive UTC (an offset is converted, none means UTC);
    ``ValueError`` when it is not one. The API's and the console's list filters."""
    value = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value


def _time(request: Request, name: str) -> datetime | None:
    raw = request.query_params.get(name)
    if raw is None:
        return None
    try:
        return utc_time(raw)
    except ValueError:
        raise _bad_query(name, "an RFC 3339 time, e.g. 2025-01-31T12:00:00Z") from None


def _int(request: Request, name: str, default: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    if not raw.isdigit() or len(raw) > 9:
        raise _bad_query(name, "a non-negative integer")
    return int(raw)


async def start(request: Request, ctx: Context) -> Response:
    principal, namespace = ctx.require_principal()
    engine = ctx.engine
    body = validate_model(StartWorkflowRequest, await read_json(request, engine.limits))
    start_request = StartRequest(body.definition_id, body.version, body.input,
                                 body.idempotency_key, body.operation_type)
    result = await run_in_threadpool(start_workflow, engine, namespace, start_request,
                                     actor=principal.actor)
    return json_response(WorkflowModel(**result.instance.to_json()),
                         201 if result.created else 200)


def _key_filter(request: Request) -> dict[str, str]:
    """``idempotency_key`` (with ``operation_type``, default ``start``): find by business key."""
    q = request.query_params
    key, operation_type = q.get("idempotency_key"), q.get("operation_type")
    if key is None:
        if operation_type is not None:
            raise _bad_query("operation_type", "only with idempotency_key")
        return {}
    if not 1 <= len(key) <= 255:
        raise _bad_query("idempotency_key", "1 to 255 characters")
    if operation_type is not None and not 1 <= len(operation_type) <= 64:
        raise _bad_query("operation_type", "1 to 64 characters")
    return {"idempotency_key": key, "operation_type": operation_type or DEFAULT_OPERATION_TYPE}


async def list_all(request: Request, ctx: Context) -> Response:
    _, namespace = ctx.require_principal()
    q = request.query_params
    status = q.get("status")
    if status is not None and status not in {s.value for s in InstanceStatus}:
        raise _bad_query("status", "one of " + ", ".join(s.value for s in InstanceStatus))
    paused = q.get("paused")
    if paused is not None and paused not in ("true", "false"):
        raise _bad_query("paused", "true or false")
    filters = ListFilter(
        status=None if status is None else InstanceStatus(status),
        definition_id=q.get("definition_id"),
        version=q.get("version"),
        paused=None if paused is None else paused == "true",
        created_after=_time(request, "created_after"),
        created_before=_time(request, "created_before"),
        **_key_filter(request),
    )
    views, cursor = await run_in_threadpool(
        list_instances, ctx.engine.db, namespace, filters, cursor=q.get("cursor"),
        limit=_int(request, "limit", DEFAULT_LIST_LIMIT),
    )
    return json_response(WorkflowList(items=[WorkflowModel(**v.to_json()) for v in views],
                                      next_cursor=cursor))


def _wait_seconds(request: Request) -> float:
    raw = request.query_params.get("wait_seconds")
    if raw is None:
        return 0.0
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not math.isfinite(value) or not 0 <= value <= MAX_WAIT_S:
        raise _bad_query("wait_seconds", f"a number of seconds from 0 to {MAX_WAIT_S}")
    return value


def _stamp(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat() + "Z"


async def result(request: Request, ctx: Context) -> Response:
    _, namespace = ctx.require_principal()
    wait = _wait_seconds(request)
    outcome = await wait_outcome(ctx.engine.db, namespace,
                                 str(request.path_params["workflow_id"]), wait)
    return json_response(WorkflowResult(
        workflow_id=outcome.workflow_id, status=outcome.status.value, done=outcome.done,
        paused=outcome.paused, revision=outcome.revision, output=outcome.output,
        review_reason=outcome.review_reason, settled_at=_stamp(outcome.settled_at),
        updated_at=_stamp(outcome.updated_at) or "",
    ))


async def one(request: Request, ctx: Context) -> Response:
    _, namespace = ctx.require_principal()
    detail: dict[str, Any] = await run_in_threadpool(
        describe_instance, ctx.engine.db, namespace, str(request.path_params["workflow_id"])
    )
    return json_response(WorkflowDetail(**detail))


async def history(request: Request, ctx: Context) -> Response:
    _, namespace = ctx.require_principal()
    items, cursor = await run_in_threadpool(
        read_history, ctx.engine.db, namespace, str(request.path_params["workflow_id"]),
        after_revision=_int(request, "after", 0), limit=_int(request, "limit", 100),
    )
    return json_response(WorkflowHistory(items=items, next_cursor=cursor))


API_ROUTES: tuple[ApiRoute, ...] = (
    ApiRoute(
        method="POST", path=WORKFLOWS, endpoint=start, operation_id="startWorkflow",
        summary="Start an instance (idempotent on operation_type and idempotency_key)",
        permission=Permission.START, request_model=StartWorkflowRequest,
        responses={201: (WorkflowModel, "a new instance was started"),
                   200: (WorkflowModel, "the original instance of this idempotency key")},
        errors=(400, 409, 413, 415, 422), tags=("workflows",),
    ),
    ApiRoute(
        method="GET", path=WORKFLOWS, endpoint=list_all, operation_id="listWorkflows",
        summary="List instances (filters: status, definition_id, version, paused, "
        "created_after, created_before, idempotency_key with operation_type; cursor, limit)",
        permission=Permission.READ,
        responses={200: (WorkflowList, "instances, newest first")},
        errors=(422,), tags=("workflows",),
    ),
    ApiRoute(
        method="GET", path=WORKFLOW, endpoint=one, operation_id="getWorkflow",
        summary="One instance with its steps, activations, tasks and pending work",
        permission=Permission.READ,
        responses={200: (WorkflowDetail, "the instance")}, tags=("workflows",),
    ),
    ApiRoute(
        method="GET", path=RESULT, endpoint=result, operation_id="getWorkflowResult",
        summary="The instance's outcome; with wait_seconds (0-60) a long poll answered as "
        "soon as it is done (SUCCEEDED, FAILED, CANCELLED, NEEDS_REVIEW)",
        permission=Permission.READ,
        responses={200: (WorkflowResult, "the outcome: done, or still running after the wait")},
        errors=(422,), tags=("workflows",),
        query=(QueryParam("wait_seconds", {"type": "number", "minimum": 0,
                                           "maximum": MAX_WAIT_S, "default": 0},
                          "seconds to wait for the instance to be done (a long poll)"),),
    ),
    ApiRoute(
        method="GET", path=HISTORY, endpoint=history, operation_id="getWorkflowHistory",
        summary="The ordered history: transitions with their audit entries (after, limit)",
        permission=Permission.READ,
        responses={200: (WorkflowHistory, "transitions in revision order")},
        errors=(422,), tags=("workflows",),
    ),
)

__all__ = ["API_ROUTES", "utc_time"]
