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

from weave_core.access.identity import Permission
from weave_core.foundation.errors import Problem, ValidationError
from weave_core.runtime import InstanceStatus, StartRequest, start_workflow
from weave_core.runtime.admission import DEFAULT_OPERATION_TYPE
from weave_core.runtime.history import MAX_HISTORY_PAGE
from weave_core.runtime.outcomes import MAX_WAIT_S, wait_outcome
from weave_core.runtime.reads import (
    DEFAULT_LIST_LIMIT,
    MAX_LIST_LIMIT,
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
from weave_http.threads import in_thread

WORKFLOWS = "/v1/namespaces/{ns}/workflows"
WORKFLOW = WORKFLOWS + "/{workflow_id}"
HISTORY = WORKFLOW + "/history"
RESULT = WORKFLOW + "/result"


def _bad_query(name: str, message: str) -> ValidationError:
    return ValidationError(f"invalid query parameter {name!r}",
                           [Problem(f"$.{name}", "invalid_query", message)])


def utc_time(raw: str) -> datetime:
    """An ISO 8601 / RFC 3339 time as naive UTC (an offset is converted, none means UTC);
    ``ValueError`` when it is not one, or when it falls outside years 1-9999 once converted
    to UTC (``0001-01-01T00:00:00+14:00``). The API's and the console's list filters."""
    value = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    if value.tzinfo is not None:
        try:
            value = value.astimezone(UTC).replace(tzinfo=None)
        except OverflowError:
            raise ValueError("the time is outside years 1-9999 in UTC") from None
    return value


def ascii_int(raw: str, max_digits: int = 9) -> int | None:
    """``raw`` as a non-negative integer when it is 1 to ``max_digits`` ASCII digits, else
    None: ``str.isdigit`` also accepts "²" and "١٢", which ``int`` refuses or reads as 12."""
    if not 1 <= len(raw) <= max_digits or not raw.isascii() or not raw.isdigit():
        return None
    return int(raw)


def _time(ctx: Context, name: str) -> datetime | None:
    raw = ctx.q(name)
    if raw is None:
        return None
    try:
        return utc_time(raw)
    except ValueError:
        raise _bad_query(name, "an RFC 3339 time from year 1 to 9999, e.g. "
                         "2025-01-31T12:00:00Z") from None


def _int(ctx: Context, name: str, default: int) -> int:
    raw = ctx.q(name)
    if raw is None:
        return default
    value = ascii_int(raw)
    if value is None:
        raise _bad_query(name, "a non-negative integer of ASCII digits")
    return value


async def start(request: Request, ctx: Context) -> Response:
    principal, namespace = ctx.require_principal()
    engine = ctx.engine
    body = validate_model(StartWorkflowRequest, await read_json(request, engine.limits))
    start_request = StartRequest(body.definition_id, body.version, body.input,
                                 body.idempotency_key, body.operation_type)
    result = await in_thread(lambda: start_workflow(engine, namespace, start_request,
                                                    actor=principal.actor))
    return json_response(WorkflowModel(**result.instance.to_json()),
                         201 if result.created else 200)


def _key_filter(ctx: Context) -> dict[str, str]:
    """``idempotency_key`` (with ``operation_type``, default ``start``): find by business key."""
    key, operation_type = ctx.q("idempotency_key"), ctx.q("operation_type")
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
    q = ctx.q
    status = q("status")
    if status is not None and status not in {s.value for s in InstanceStatus}:
        raise _bad_query("status", "one of " + ", ".join(s.value for s in InstanceStatus))
    paused = q("paused")
    if paused is not None and paused not in ("true", "false"):
        raise _bad_query("paused", "true or false")
    filters = ListFilter(
        status=None if status is None else InstanceStatus(status),
        definition_id=q("definition_id"),
        version=q("version"),
        paused=None if paused is None else paused == "true",
        created_after=_time(ctx, "created_after"),
        created_before=_time(ctx, "created_before"),
        **_key_filter(ctx),
    )
    views, cursor = await run_in_threadpool(
        list_instances, ctx.engine.db, namespace, filters, cursor=q("cursor"),
        limit=_int(ctx, "limit", DEFAULT_LIST_LIMIT),
    )
    return json_response(WorkflowList(items=[WorkflowModel(**v.to_json()) for v in views],
                                      next_cursor=cursor))


def _wait_seconds(ctx: Context) -> float:
    raw = ctx.q("wait_seconds")
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
    wait = _wait_seconds(ctx)
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
    task_events: list[dict[str, Any]] = []
    items, cursor = await run_in_threadpool(
        read_history, ctx.engine.db, namespace, str(request.path_params["workflow_id"]),
        after_revision=_int(ctx, "after", 0), limit=_int(ctx, "limit", 100),
        task_events=task_events,
    )
    return json_response(WorkflowHistory(items=items, next_cursor=cursor,
                                         task_events=task_events))


_TIME = {"type": "string", "format": "date-time"}
_TEXT = {"type": "string", "minLength": 1}
LIST_QUERY: tuple[QueryParam, ...] = (
    QueryParam("status", {"type": "string", "enum": [s.value for s in InstanceStatus]},
               "only instances in this status"),
    QueryParam("definition_id", _TEXT, "only instances of this definition"),
    QueryParam("version", _TEXT, "only instances pinned to this version"),
    QueryParam("paused", {"type": "string", "enum": ["true", "false"]},
               "only paused (true) or unpaused (false) instances"),
    QueryParam("created_after", _TIME, "only instances created at or after this time"),
    QueryParam("created_before", _TIME, "only instances created before this time"),
    QueryParam("idempotency_key", {"type": "string", "minLength": 1, "maxLength": 255},
               "the instance started with this idempotency key (find by business key)"),
    QueryParam("operation_type", {"type": "string", "minLength": 1, "maxLength": 64},
               "with idempotency_key: its operation type (default start)"),
    QueryParam("cursor", _TEXT, "a next_cursor of the previous page, unchanged"),
    QueryParam("limit", {"type": "integer", "minimum": 1, "maximum": MAX_LIST_LIMIT,
                         "default": DEFAULT_LIST_LIMIT}, "instances per page"),
)
HISTORY_QUERY: tuple[QueryParam, ...] = (
    QueryParam("after", {"type": "integer", "minimum": 0, "default": 0},
               "only revisions after this one (a next_cursor of the previous page)"),
    QueryParam("limit", {"type": "integer", "minimum": 1, "maximum": MAX_HISTORY_PAGE,
                         "default": 100}, "transitions per page"),
)

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
        errors=(422,), tags=("workflows",), query=LIST_QUERY,
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
        errors=(422,), tags=("workflows",), query=HISTORY_QUERY,
    ),
)

__all__ = ["API_ROUTES", "ascii_int", "utc_time"]
